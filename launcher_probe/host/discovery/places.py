"""The fixed places discovery searches: the standalone installer's and the usual install
places of npm, version managers, Homebrew, editors and apps.

Each place comes from a location variable when it is set (``NVM_DIR``...) or from the
default under ``HOME``. A relative value would make the result depend on the working
directory: a variable set to one is reported as skipped (``NAME=value``); a relative
``HOME`` is reported once per source (``HOME=value``) and no place under it is searched.
"""

from __future__ import annotations

import glob
import os
import platform
from collections.abc import Callable

from launcher_probe.contract import Source
from launcher_probe.host.paths.rules import home_directory, open_regular_file, user_name

#: Bytes of ``~/.npmrc`` and of each shell profile read.
_NPMRC_LIMIT = _PROFILE_LIMIT = 64 * 1024
#: Shell profiles the standalone installer writes its PATH block into.
_PROFILES = (".zshrc", ".bashrc", ".zprofile", ".bash_profile", ".profile")
_BLOCK_START = "# >>> Codex installer >>>"
_BLOCK_END = "# <<< Codex installer <<<"
#: VS Code-family home directories holding ``extensions/``.
_EDITORS = (
    ".vscode*",
    ".cursor*",
    ".windsurf*",
    ".kiro*",
    ".trae*",
    ".positron*",
    ".antigravity*",
    ".openvscode-server*",
)

#: ``skip(source, entry, reason)``: report an entry that is not looked at.
Skip = Callable[[Source, str, str], None]
#: ``(place as shown, glob pattern or None)``.
Place = tuple[str, str | None]


class Locations:
    """Location variables and HOME, resolved to absolute directories or reported skipped."""

    def __init__(self, skip: Skip) -> None:
        self._skip = skip
        self._source = Source.STANDALONE
        self.darwin = platform.system() == "Darwin"
        home = home_directory()
        self.home = home if os.path.isabs(home) else None
        self._relative_home = None if self.home else home

    def _under_home(self, rest: str) -> str | None:
        if self.home is None:
            self._skip(self._source, f"HOME={self._relative_home}", "relative")
            return None
        return f"{self.home}/{rest}"

    def variable(
        self, name: str, under_home: str | None = None, fallback: str | None = None
    ) -> str | None:
        """``$name`` when set and absolute; unset: ``HOME/under_home`` (or ``fallback``).

        A relative value is reported and yields None, except for ``XDG_*`` variables,
        whose relative values the XDG spec says to ignore: the default applies.
        """
        value = os.environ.get(name)
        if value:
            if os.path.isabs(value):
                return value
            self._skip(self._source, f"{name}={value}", "relative")
            if not name.startswith("XDG_"):
                return None
        return fallback if under_home is None else self._under_home(under_home)

    def standalone(self) -> list[str]:
        """``${CODEX_INSTALL_DIR:-~/.local/bin}/codex``, the current standalone package, and
        ``codex`` in each directory the installer's PATH blocks in the shell profiles add."""
        self._source = Source.STANDALONE
        places = []
        if install_dir := self.variable("CODEX_INSTALL_DIR", ".local/bin"):
            places.append(f"{install_dir}/codex")
        if codex_home := self.variable("CODEX_HOME", ".codex"):
            current = f"{codex_home}/packages/standalone/current"
            places += [f"{current}/bin/codex", f"{current}/codex"]
        if self.home is not None:  # an install made with a CODEX_INSTALL_DIR we lack
            places += [f"{directory}/codex" for directory in installer_path_dirs(self.home)]
        return places

    def known(self) -> list[Place]:
        """npm/nvm/fnm/volta/pnpm/bun/yarn prefixes, Homebrew, Nix profiles, VS Code-family
        extensions, macOS Python user dirs and apps."""
        self._source = Source.KNOWN
        places: list[Place] = []

        def literal(path: str | None) -> None:
            if path:
                places.append((path, None))

        def wildcard(directory: str | None, rest: str) -> None:
            if directory:
                places.append((f"{directory}/{rest}", f"{glob.escape(directory)}/{rest}"))

        data = self.variable("XDG_DATA_HOME", ".local/share")
        # npm reads its settings from npm_config_* variables in either case.
        npm = self.variable("npm_config_prefix") or self.variable("NPM_CONFIG_PREFIX")
        home_npmrc = None if self.home is None else _npmrc_prefix(self.home)
        for prefix in (npm, home_npmrc, self._under_home(".npm-global"), "/usr/local"):
            literal(prefix and f"{prefix}/bin/codex")
        wildcard(self.variable("NVM_DIR", ".nvm"), "versions/node/*/bin/codex")
        fnm = self.variable(
            "FNM_DIR",
            "Library/Application Support/fnm" if self.darwin else None,
            data and f"{data}/fnm",
        )
        for directory in dict.fromkeys((fnm, self._under_home(".fnm"))):
            wildcard(directory, "node-versions/*/installation/bin/codex")
        volta = self.variable("VOLTA_HOME", ".volta")
        literal(volta and f"{volta}/tools/image/packages/@openai/codex/bin/codex")
        pnpm = self.variable(
            "PNPM_HOME", "Library/pnpm" if self.darwin else None, data and f"{data}/pnpm"
        )
        literal(pnpm and f"{pnpm}/codex")
        asdf = self.variable("ASDF_DATA_DIR", ".asdf")
        wildcard(asdf, "installs/nodejs/*/bin/codex")
        mise = self.variable("MISE_DATA_DIR", None, data and f"{data}/mise")
        wildcard(mise, "installs/npm-openai-codex/*/bin/codex")
        wildcard(mise, "installs/node/*/bin/codex")
        vite_plus = self.variable("VP_HOME", ".vite-plus")
        literal(vite_plus and f"{vite_plus}/bin/codex")
        bun = self.variable("BUN_INSTALL", ".bun")
        literal(bun and f"{bun}/bin/codex")
        literal("/usr/local/share/npm-global/bin/codex")  # devcontainer images
        literal(self._under_home(".yarn/bin/codex"))
        literal((brew := self.variable("HOMEBREW_PREFIX")) and f"{brew}/bin/codex")
        if self.darwin:
            literal("/opt/homebrew/bin/codex")
            literal("/usr/local/bin/codex")
            wildcard(self.home, "Library/Python/3.*/bin/codex")
        else:
            literal("/home/linuxbrew/.linuxbrew/bin/codex")
            literal(self._under_home(".linuxbrew/bin/codex"))
        for profile in self._nix_profiles():
            literal(profile and f"{profile}/bin/codex")
        for editor in _EDITORS:
            wildcard(self.home, f"{editor}/extensions/openai.chatgpt-*/bin/*/codex")
        wildcard(data and f"{data}/code-server", "extensions/openai.chatgpt-*/bin/*/codex")
        if self.darwin:
            for apps in ("/Applications", self._under_home("Applications")):
                for app in ("Codex", "ChatGPT"):
                    resources = apps and f"{apps}/{app}.app/Contents/Resources"
                    literal(
                        resources and f"{resources}/codex-cli/CodexCLI.app/Contents/MacOS/codex"
                    )
                    literal(resources and f"{resources}/codex-cli/bin/codex")
                    literal(resources and f"{resources}/codex")
        return places

    def _nix_profiles(self) -> list[str | None]:
        """The user's and the system's Nix profiles."""
        state = self.variable("XDG_STATE_HOME", ".local/state")
        return [
            self._under_home(".nix-profile"),
            state and f"{state}/nix/profile",
            f"/etc/profiles/per-user/{user_name()}",
            "/run/current-system/sw",
            "/nix/var/nix/profiles/default",
        ]


def installer_path_dirs(home: str) -> list[str]:
    """The directories the standalone installer's ``# >>> Codex installer >>>`` blocks add
    to PATH in the shell profiles (``export PATH="<dir>:$PATH"``; absolute, no variables),
    read as text, each file bounded; no shell is run."""
    found: dict[str, None] = {}
    for name in _PROFILES:
        try:
            with open_regular_file(os.path.join(home, name)) as file:
                text = file.read(_PROFILE_LIMIT).decode("utf-8", "replace")
        except OSError:
            continue
        inside = False
        for line in text.splitlines():
            stripped = line.strip()
            if stripped in (_BLOCK_START, _BLOCK_END):
                inside = stripped == _BLOCK_START
                continue
            if inside and stripped.startswith('export PATH="') and stripped.endswith(':$PATH"'):
                directory = stripped[len('export PATH="') : -len(':$PATH"')]
                if os.path.isabs(directory) and not set(directory) & set('$`"\\'):
                    found.setdefault(directory.rstrip("/") or "/")
    return list(found)


def _npmrc_prefix(home: str) -> str | None:
    """An absolute ``prefix=`` from ``~/.npmrc`` (where ``npm install -g`` puts bin/)."""
    try:
        with open_regular_file(os.path.join(home, ".npmrc")) as file:
            text = file.read(_NPMRC_LIMIT).decode("utf-8", "replace")
    except OSError:
        return None
    prefix = None
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep and key.strip() == "prefix" and os.path.isabs(value.strip()):
            prefix = value.strip()
    return prefix
