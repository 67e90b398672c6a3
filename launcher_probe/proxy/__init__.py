"""The stdio MCP proxy (``launcher-probe proxy``) and the sandboxed exec (``wrap``).

``framing`` splits a byte stream into JSON-RPC lines, ``members`` finds where the parts of
one message stand, ``long_messages`` reads what the ends of one too long to hold tell,
``rewrite`` sets ``_meta`` of ``tools/call`` and ``resources/read`` with the injector,
``policy`` turns the operator's options into a sandbox state, ``launcher`` keeps the
Decision made before the server started, ``child`` runs the server and leaves nothing
running, ``relay`` joins them (docs/hosts.md).
"""
