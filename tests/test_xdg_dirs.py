"""The user directories a ``resolve`` computes without platformdirs (``xdg_dirs.py``) are
platformdirs' own: the cache root and the config file, in every case the rule takes and
every case it leaves to platformdirs."""

from __future__ import annotations

import os

import platformdirs
import pytest

from launcher_probe.host.cache.location import cache_root, user_cache_dir
from launcher_probe.host.discovery.config_file import config_file

APP = "launcher-probe"
#: ``(XDG_*_HOME, HOME)``, None for unset.
SETTINGS = [
    ("/x/dir", "/home/u"),
    ("/x/dir/", "/home/u"),
    ("/x/d ir", None),
    ("/x//dir", "/home/u"),
    (None, "/home/u"),
    (None, "/home/u/"),
    (None, "/"),
    ("", "/home/u"),
    ("relative/dir", "/home/u"),
    ("  ", "/home/u"),
    (" /x", "/home/u"),
    (None, "relative-home"),
    (None, ""),
    (None, None),
]


def _set(monkeypatch: pytest.MonkeyPatch, variable: str, xdg: str | None, home: str | None) -> None:
    for name, value in ((variable, xdg), ("HOME", home)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)


@pytest.mark.parametrize(("xdg", "home"), SETTINGS)
def test_the_default_cache_root_is_platformdirs_user_cache_dir(
    monkeypatch: pytest.MonkeyPatch, xdg: str | None, home: str | None
) -> None:
    monkeypatch.delenv("LAUNCHER_PROBE_CACHE_DIR", raising=False)
    _set(monkeypatch, "XDG_CACHE_HOME", xdg, home)
    expected = platformdirs.user_cache_dir(APP, appauthor=False)
    assert user_cache_dir() == expected
    assert cache_root() == expected


@pytest.mark.parametrize(("xdg", "home"), SETTINGS)
def test_the_config_file_is_in_platformdirs_user_config_dir(
    monkeypatch: pytest.MonkeyPatch, xdg: str | None, home: str | None
) -> None:
    _set(monkeypatch, "XDG_CONFIG_HOME", xdg, home)
    assert config_file() == os.path.join(platformdirs.user_config_dir(APP), "config.toml")
