"""``launcher-probe doctor``: the whole chain from the operator's settings to each MCP
server, each part with its verdict and, when something is wrong, the fix.

Collection only; ``launcher_probe.commands.doctor`` renders it. ``report.diagnose`` joins
the parts: ``settings``, ``candidates``, ``launcher``, ``helper``, ``servers`` (with
``check`` for ``--check-servers``); ``fixes`` holds the fix of every reason code.
"""
