"""The native stage: from the path as found to the native binary it runs.

``follow.py`` follows symlinks, shims (``shims.py``: npm, pnpm, bun), tool-manager
dispatchers (``dispatchers.py``: Volta, mise, Vite+) and generated wrappers
(``wrappers.py``: asdf, Nix ``makeWrapper``), reading a bounded prefix of each file
(``file_kind.py``); the end must be a native executable of this host (``host_format.py``).
"""

__all__: list[str] = []
