"""This host's identity, so a home directory shared by many hosts never mixes their verdicts."""

from __future__ import annotations

import functools
import os

from launcher_probe.host.cache.digest import sha256_hex

#: Where systemd and D-Bus keep the machine id (the first readable one wins).
MACHINE_ID_FILES = ("/etc/machine-id", "/var/lib/dbus/machine-id")


def _machine_id() -> str:
    for candidate in MACHINE_ID_FILES:
        try:
            with open(candidate, "rb") as stream:  # bytes: no codec module to import
                value = stream.read(256).decode("ascii", "replace").strip()
        except OSError:
            continue
        if value:
            return value
    return ""


@functools.cache
def host_id() -> str:
    """16 hex digits derived from the host name and the machine id.

    Without a machine id the host name alone is used (still stable for the host); without
    either, a constant, so the cache still works on a host that names itself nothing.
    """
    material = f"{os.uname().nodename}\0{_machine_id()}"
    return sha256_hex(material.encode("utf-8", "surrogateescape"))[:16]
