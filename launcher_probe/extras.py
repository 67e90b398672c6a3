"""What an optional extra's absence looks like: one error naming the extra to install."""

from __future__ import annotations


def missing_mcp_extra(module: str) -> ModuleNotFoundError:
    """The error for ``module`` imported without the MCP Python SDK (``raise ... from``)."""
    return ModuleNotFoundError(
        f"{module} needs the official MCP Python SDK: pip install 'launcher-probe[mcp]'",
        name="mcp",
    )
