"""``resolve``: publish the verified launcher descriptor or withhold it with a reason."""

from __future__ import annotations

import functools

from launcher_probe.client import VIA, resolve_with_origin
from launcher_probe.commands.common import print_json
from launcher_probe.errors import ExitCode, NothingUsable
from launcher_probe.host.cache.policy import DEFAULT_LOCK_TIMEOUT
from launcher_probe.host.decision import Published
from launcher_probe.host.probe_result import DEFAULT_TIMEOUT

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import argparse


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from launcher_probe.arguments import add_seconds, add_via  # the parser's: not a plain form

    parser.add_argument("--codex", metavar="PATH", help="the operator's path (only candidate)")
    parser.add_argument("--json", action="store_true", help="print the whole decision as JSON")
    parser.add_argument("--refresh", action="store_true", help="probe again; replace the verdict")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    add_seconds(
        parser,
        "--timeout",
        f"deadline of each probe, in seconds (default {DEFAULT_TIMEOUT:g}; a shorter one "
        "that passes is this resolve's: its probe_timeout is not cached)",
    )
    add_seconds(
        parser,
        "--lock-timeout",
        "how long to wait for another process probing the same path "
        f"(default {DEFAULT_LOCK_TIMEOUT:g})",
    )
    add_via(parser)


def run(args: argparse.Namespace) -> int:
    return resolve_and_print(
        args.codex,
        as_json=args.json,
        via=args.via,
        refresh=args.refresh,
        use_cache=not args.no_cache,
        timeout=args.timeout,
        lock_timeout=args.lock_timeout,
    )


def plain_form(words: list[str]) -> functools.partial[int] | None:
    """``resolve WORDS`` ready to run when WORDS hold nothing but ``--codex PATH``,
    ``--json`` and ``--via MODE`` (also as ``--option=value``), each at most once, in any
    order: what argparse would make of them, without building it. None for anything else
    (help, errors, other options, abbreviations, a value that looks like an option): the
    parser takes those."""
    given: dict[str, str | bool] = {}
    rest = iter(words)
    for word in rest:
        option, equals, inline = word.partition("=")
        if option in given or option not in ("--codex", "--json", "--via"):
            return None
        if option == "--json":
            if equals:
                return None
            given[option] = True
            continue
        value = inline if equals else next(rest, None)
        if value is None or (not equals and value.startswith("-")):
            return None  # missing, or an option where argparse would say so
        if option == "--via" and value not in VIA:
            return None
        given[option] = value
    codex, via = given.get("--codex"), given.get("--via", "auto")
    assert (codex is None or isinstance(codex, str)) and isinstance(via, str)
    return functools.partial(resolve_and_print, codex, as_json="--json" in given, via=via)


def resolve_and_print(
    codex: str | None,
    *,
    as_json: bool = False,
    via: str = "auto",
    refresh: bool = False,
    use_cache: bool = True,
    timeout: float | None = None,
    lock_timeout: float | None = None,
) -> int:
    """Resolve (see ``client.resolve_with_origin``) and print the descriptor, or with
    ``as_json`` the whole decision and who made it; NothingUsable when the launcher is
    withheld (saying so when the helper decided)."""

    decision, origin = resolve_with_origin(
        via,
        codex,
        refresh=refresh,
        use_cache=use_cache,
        timeout=timeout,
        lock_timeout=lock_timeout,
    )
    if as_json:
        print_json({**decision.to_json(), "via": origin.via})
    elif decision.warnings:
        from launcher_probe.messages import say_warnings  # stderr's escaping: a warning only

        say_warnings(decision.warnings)
    if isinstance(decision, Published):
        if not as_json:
            print_json(decision.descriptor.to_json(), indent=None, wire=True)
        return int(ExitCode.OK)
    # One line all the same: ``say`` shows a newline (in a path, say) as \n, like every route.
    by = f" ({origin.describe()})" if origin.via == "helper" else ""
    raise NothingUsable(f"launcher withheld: {decision.reason}: {decision.detail}{by}")
