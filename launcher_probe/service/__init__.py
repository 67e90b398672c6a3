"""The host helper (``launcher-probe serve``): a per-user daemon on a Unix socket."""
