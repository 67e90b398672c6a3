"""The XDG rule for a user's directories on Linux, computed without platformdirs.

Importing platformdirs (pathlib, tempfile, shutil, random...) costs a CLI ``resolve`` more
than all its work, so the paths a ``resolve`` needs take the common case here and leave
every other one to platformdirs (the tests check the two agree).
"""

from __future__ import annotations

import os
import sys

__all__ = ["xdg_user_dir"]


def xdg_user_dir(variable: str, default: str, app: str) -> str | None:
    """``$variable/app`` when ``variable`` (``XDG_CACHE_HOME``, say) is absolute, else
    ``~/default/app`` (``default`` is ``.cache``, say) when it is unset or empty and
    ``$HOME`` is absolute, on Linux; None anywhere else (another OS, Android, a relative or
    blank value, no usable ``HOME``): platformdirs' to answer."""
    android = hasattr(sys, "getandroidapilevel") or "ANDROID_ROOT" in os.environ
    if sys.platform != "linux" or android:
        return None
    given = os.environ.get(variable, "")
    if os.path.isabs(given):
        return os.path.join(given, app)
    if not given and os.path.isabs(os.environ.get("HOME", "")):
        return os.path.join(os.path.expanduser("~"), default, app)
    return None
