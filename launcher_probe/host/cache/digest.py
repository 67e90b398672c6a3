"""SHA-256 of the cache's names, without loading OpenSSL.

``hashlib`` loads OpenSSL's ``libcrypto`` at import, which costs a warm CLI ``resolve``
about a quarter of Python's own start-up; CPython's built-in SHA-256 (the module hashlib
itself falls back to) gives the same digest without it. The tests check they agree.
"""

from __future__ import annotations

try:
    from _sha2 import sha256  # type: ignore[import-not-found,unused-ignore]  # CPython 3.12+
except ImportError:
    try:
        from _sha256 import sha256  # type: ignore[import-not-found,unused-ignore]  # 3.11
    except ImportError:  # another implementation: hashlib's
        from hashlib import sha256


def sha256_hex(data: bytes) -> str:
    """The SHA-256 of ``data`` as 64 hex digits."""
    digest: str = sha256(data).hexdigest()
    return digest
