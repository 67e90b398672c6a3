"""The import path the docs taught before the native stage existed: the executable-format
checks, now ``launcher_probe.host.native.host_format``."""

from launcher_probe.host.native.host_format import HEADER_LIMIT as HEADER_LIMIT
from launcher_probe.host.native.host_format import header_problem as header_problem
from launcher_probe.host.native.host_format import host_name as host_name
from launcher_probe.host.native.host_format import (
    is_executable_format as is_executable_format,
)
from launcher_probe.host.native.host_format import (
    native_executable_problem as native_executable_problem,
)

__all__ = [
    "HEADER_LIMIT",
    "header_problem",
    "host_name",
    "is_executable_format",
    "native_executable_problem",
]
