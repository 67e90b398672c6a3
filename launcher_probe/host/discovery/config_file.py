"""The operator's configuration file: ``codex = "/abs/path"`` in ``config.toml``."""

from __future__ import annotations

import os

from launcher_probe.errors import ConfigError
from launcher_probe.host.paths.rules import open_regular_file, unsafe_chain
from launcher_probe.xdg_dirs import xdg_user_dir

APP_NAME = "launcher-probe"
CONFIG_NAME = "config.toml"
CODEX_KEY = "codex"
#: A config file larger than this is refused rather than read (it holds one line).
MAX_CONFIG_BYTES = 1 << 16


def config_file() -> str:
    """``<user config dir>/launcher-probe/config.toml``: platformdirs' user config dir,
    computed without it where the XDG rule is the answer (:func:`xdg_config_file`)."""
    path = xdg_config_file()
    if path is None:
        import platformdirs

        path = os.path.join(platformdirs.user_config_dir(APP_NAME), CONFIG_NAME)
    return path


def xdg_config_file() -> str | None:
    """:func:`config_file` where the XDG rule alone names it, from the environment
    (``xdg_dirs.xdg_user_dir``); None where platformdirs decides."""
    directory = xdg_user_dir("XDG_CONFIG_HOME", ".config", APP_NAME)
    return None if directory is None else os.path.join(directory, CONFIG_NAME)


def configured_codex(path: str | None = None) -> str | None:
    """The ``codex`` value of the config file, or None when the file or the key is absent.

    Raises ConfigError (naming the file, and the line for TOML errors), and nothing else,
    when the file is unreadable, no regular file, over ``MAX_CONFIG_BYTES``, not UTF-8,
    malformed or beyond what the TOML parser can take (nested too deeply, a number too
    long, a dotted key of more than ``toml_bounded.MAX_KEY_PARTS`` parts), writable by
    another user, or ``codex`` is no string.
    """
    path = config_file() if path is None else path
    try:
        with open_regular_file(path) as file:
            raw = file.read(MAX_CONFIG_BYTES + 1)
    except FileNotFoundError:
        return None
    except OSError as error:
        raise ConfigError(f"{path}: cannot read: {error.strerror or error}") from error
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{path}: larger than {MAX_CONFIG_BYTES} bytes")
    unsafe = unsafe_chain(os.path.join(os.getcwd(), path))  # as given, if absolute
    if unsafe:
        raise ConfigError(f"{path}: refusing a config another user could change: {unsafe}")
    import tomllib  # only when there is a config file: keeps a resolve without one light

    from launcher_probe.host.discovery import toml_bounded

    try:
        table = toml_bounded.loads(raw.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise ConfigError(f"{path}: not UTF-8 (byte {error.start})") from error
    except tomllib.TOMLDecodeError as error:
        raise ConfigError(f"{path}: {error}") from error
    except RecursionError as error:
        raise ConfigError(f"{path}: nested too deeply") from error
    except (ValueError, MemoryError) as error:  # a key of too many parts, a huge integer
        raise ConfigError(f"{path}: cannot be parsed: {error}") from error
    value = table.get(CODEX_KEY)
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{path}: {CODEX_KEY} must be a string path, not {type(value).__name__}")
    return value
