"""What an optional extra's absence looks like: one error naming what to install."""

from __future__ import annotations

#: The ``mcp`` extra's requirement when the installed metadata cannot say (pyproject.toml).
_MCP_REQUIREMENT = "mcp>=2.3,<2.4"


def mcp_requirement() -> str:
    """The ``mcp`` extra's requirement on the MCP Python SDK, as this install declares it."""
    from importlib import metadata

    try:
        requires = metadata.requires("launcher-probe") or []
    except metadata.PackageNotFoundError:  # run from a source tree that is not installed
        requires = []
    for requirement in requires:
        spec, _, marker = requirement.partition(";")
        if spec.startswith("mcp") and 'extra == "mcp"' in marker:
            return spec.strip()
    return _MCP_REQUIREMENT


def missing_mcp_extra(module: str) -> ModuleNotFoundError:
    """The error for ``module`` imported without the MCP Python SDK (``raise ... from``).

    It names the SDK itself (the official ``mcp`` package, on PyPI), never
    ``launcher-probe[mcp]``: launcher-probe is installed from a checkout or a wheel, and a
    package index could hold anyone's package under that name (README, Set-up)."""
    return ModuleNotFoundError(
        f"{module} needs the official MCP Python SDK (the mcp extra): "
        f"pip install '{mcp_requirement()}'",
        name="mcp",
    )
