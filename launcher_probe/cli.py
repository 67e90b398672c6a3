"""The command line: an argparse front over ``launcher_probe.commands``.

Only the chosen command's module is imported and only its arguments are built, so that a
warm ``resolve`` loads what it needs and nothing more; the plain ``resolve`` forms an MCP
runtime uses (see ``commands.resolve.plain_form``) need no parser at all.
"""

from __future__ import annotations

import os
import sys

from launcher_probe import __version__
from launcher_probe.errors import ExitCode, LauncherProbeError

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    import argparse
    import signal as _signal  # typeshed has no stub of _signal; signal's are its
    from collections.abc import Callable, Sequence
    from types import FrameType, ModuleType
else:
    import _signal  # signal's functions without its enums (making them costs 1 ms a resolve)

EXIT_CODES_HELP = """\
exit codes:
  0  success (published, passed, found)
  1  internal error
  2  usage error
  3  nothing usable found / launcher withheld / probe failed
  4  input rejected or refused (fail closed)
  128+N  ended by signal N (SIGTERM, SIGINT, SIGHUP), leaving nothing running
"""

#: Every command: its name (also its module in ``launcher_probe.commands``, ``-`` as ``_``)
#: and its help.
COMMANDS: dict[str, str] = {
    "doctor": "explain whether MCP servers get the launcher, part by part, with the fix",
    "discover": "list every place the Codex CLI could be, with the path-rule verdict of each",
    "exec": "run a command under the launcher named in a tools/call _meta; exit with its status",
    "meta": "build a server's tools/call or resources/read _meta: publish or omit the launcher",
    "proxy": "run a stdio MCP server behind a relay that adds the sandbox state and launcher",
    "wrap": "run a command inside the verified codex sandbox; with no launcher, run nothing",
    "probe": "verify now, without the cache, that PATH is a full Codex CLI with a working sandbox",
    "resolve": "publish the verified launcher (cached per host) or withhold it with a reason",
    "cache": "show or clear this host's cached verdicts",
    "serve": "run the per-user host helper: answer resolve/meta over a Unix socket, kept warm",
    "sample-state": "print a sample sandbox state (read-only, workspace-write) as Codex sends it",
}


def _chosen(argv: Sequence[str]) -> str | None:
    """The command named in ``argv`` (the first word that is not an option), if any."""
    for word in argv:
        if not word.startswith("-"):
            return word if word in COMMANDS else None
    return None


def _command_module(name: str) -> ModuleType:
    import importlib

    return importlib.import_module(f"launcher_probe.commands.{name.replace('-', '_')}")


def build_parser(argv: Sequence[str] | None = None) -> argparse.ArgumentParser:
    """The parser; with ``argv``, only the command it names gets its arguments built."""
    import argparse

    from launcher_probe.arguments import raising_parser_class

    parser_class = raising_parser_class()
    parser = parser_class(
        prog="launcher-probe",
        description=(
            "Find the Codex CLI, verify it with a cached probe, and publish the "
            '{"codexExecutable": ...} launcher descriptor to MCP servers, or withhold it '
            "with a reason."
        ),
        epilog=EXIT_CODES_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"launcher-probe {__version__}")
    debug_help = "show a traceback on errors (the exit code stays the same)"
    parser.add_argument("--debug", action="store_true", help=debug_help)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=parser_class)
    sub.required = True
    chosen = None if argv is None else _chosen(argv)
    for name, help_text in COMMANDS.items():
        command = sub.add_parser(
            name,
            help=help_text,
            description=help_text,
            epilog=EXIT_CODES_HELP,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        # Also accepted after the command; SUPPRESS keeps a --debug given before it.
        command.add_argument(
            "--debug", action="store_true", default=argparse.SUPPRESS, help=debug_help
        )
        if argv is None or name == chosen:
            module = _command_module(name)
            module.add_arguments(command)
            command.set_defaults(run=module.run)
    return parser


#: Signals that end a command: its probe's process tree is killed and reaped, its private
#: directories removed, and it exits 128+N.
TERMINATING_SIGNALS = (_signal.SIGTERM, _signal.SIGINT, _signal.SIGHUP)


class _Signalled(BaseException):
    """A terminating signal arrived: unwinds through every cleanup (``finally``, context
    managers) to ``main``. Not an Exception, so that no ``except Exception`` stops it."""

    def __init__(self, number: int) -> None:
        super().__init__(number)
        self.number = number


def _unwind(number: int, frame: FrameType | None) -> None:
    """The first terminating signal unwinds; later ones are ignored, so that they cannot
    cut the cleanup short (it is bounded: a wedged child is killed)."""
    for each in TERMINATING_SIGNALS:
        _signal.signal(each, _signal.SIG_IGN)
    raise _Signalled(number)


class _TerminatingSignalsUnwind:
    """Within the ``with`` block the terminating signals unwind, but for one the caller
    ignores (``nohup``; a shell's background job ignores SIGINT): that stays ignored, so
    what the command starts inherits it. Afterwards their handlers are restored (main may
    run in a host's process). Only the main thread can set them; elsewhere nothing
    changes."""

    def __enter__(self) -> None:
        self.previous = {}
        try:
            for each in TERMINATING_SIGNALS:
                if _signal.getsignal(each) != _signal.SIG_IGN:
                    self.previous[each] = _signal.signal(each, _unwind)
        except ValueError:  # not the main thread
            pass

    def __exit__(self, *exception: object) -> None:
        for each, handler in self.previous.items():
            _signal.signal(each, handler)


class _ChildrenWaitedFor:
    """Within the ``with`` block SIGCHLD is at its default: a caller that ignores it (an
    exec keeps that) has the kernel reap what the command starts before it is waited for,
    and every probe would fail (``spawn_failed``), ``codex sandbox`` too. Afterwards it is
    restored; elsewhere than the main thread nothing changes."""

    def __enter__(self) -> None:
        self.ignored = _signal.getsignal(_signal.SIGCHLD) == _signal.SIG_IGN
        if self.ignored:
            try:
                _signal.signal(_signal.SIGCHLD, _signal.SIG_DFL)
            except ValueError:  # not the main thread
                self.ignored = False

    def __exit__(self, *exception: object) -> None:
        if self.ignored:
            _signal.signal(_signal.SIGCHLD, _signal.SIG_IGN)


def _plain_command(words: list[str]) -> Callable[[], int] | None:
    """The command ``words`` name when it is a plain ``resolve`` (run without building the
    parser, whose import and subparsers cost more than a warm resolve); else None."""
    if words[:1] != ["resolve"]:
        return None
    from launcher_probe.commands.resolve import plain_form

    return plain_form(words[1:])


def _standard_streams() -> None:
    """Make each of fds 0, 1 and 2 that the caller closed /dev/null (inheritable, so what
    ``exec`` or ``wrap`` runs gets it too), and give Python's stream for it (None then)
    that fd: no pipe or file this process opens takes the number of one, and a message
    meant for stderr never goes to stdout (``print`` to a None ``sys.stderr`` writes to
    ``sys.stdout``)."""
    for number, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        try:
            os.fstat(number)
        except OSError:  # the lowest free number, the lower ones being open: this one
            os.set_inheritable(os.open(os.devnull, os.O_RDWR), True)
        if getattr(sys, name) is None:
            stream = open(  # noqa: SIM115 (for the process's life)
                number, mode, buffering=1, errors="backslashreplace", closefd=False
            )
            setattr(sys, name, stream)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; errors become one line on stderr and an exit code.

    ``--debug`` adds the traceback and changes no exit code. SIGTERM, SIGINT or SIGHUP
    ends the command cleanly (nothing it started left running, no private directory left)
    with exit 128+N.
    """
    from launcher_probe.commands.common import stdout_writes

    _standard_streams()
    words = sys.argv[1:] if argv is None else list(argv)
    options = words[: words.index("--")] if "--" in words else words
    debug = "--debug" in options
    # With --json, a failure is also one JSON error report on stdout, unless the command
    # printed its own document (a withheld decision, say) before failing.
    written = stdout_writes() if "--json" in options else None
    try:
        with _TerminatingSignalsUnwind(), _ChildrenWaitedFor():
            plain = _plain_command(words)
            if plain is not None:
                return plain()
            args = build_parser(words).parse_args(words)
            result: int = args.run(args)
            return result
    except _Signalled as signalled:
        _ended(written, signalled.number)
        return 128 + signalled.number
    except LauncherProbeError as error:
        from launcher_probe.messages import say

        if debug:
            import traceback

            traceback.print_exc()
        say(str(error))
        for hint in error.hints:
            say(hint)
        _json_error(written, error.reason, str(error))
        return int(error.exit_code)
    except KeyboardInterrupt:
        _ended(written, _signal.SIGINT)
        return 130
    except BrokenPipeError:
        # The reader left (``| head``): say nothing more, and let no flush at exit fail.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return int(ExitCode.INTERNAL)
    except Exception as error:
        _json_error(written, "internal_error", repr(error))
        if debug:
            raise
        print(f"launcher-probe: internal error: {error!r} (rerun with --debug)", file=sys.stderr)
        return int(ExitCode.INTERNAL)


def console() -> int:
    """The console script and ``python -m launcher_probe``: :func:`main`, then everything
    made so far is put out of the collector's sight (``gc.freeze``), so that the
    interpreter's exit does not take every module's classes and functions apart cycle by
    cycle (about 5 ms of a warm ``resolve``, 30 to 50 ms of a cold one); the process ends
    and the OS takes the memory back. Exit still flushes the streams, runs ``atexit`` and
    waits for threads.

    A ``resolve`` runs without the cycle collector (``gc.disable``): it is one-shot, every
    wait it makes has a deadline, and the garbage it leaves is bounded (its peak RSS: the
    same warm, at most 0.3 MiB more cold); the collections its imports would set off cost
    a warm one about 0.3 ms. It also ends without the interpreter's teardown
    (:func:`exit_without_teardown`, 1 to 1.6 ms of a warm one) once it returned its exit
    code. The commands that keep running (``serve``, ``proxy``, ``wrap``, ``exec``) and
    the rest keep both."""
    import gc

    one_shot = _chosen(sys.argv[1:]) == "resolve"
    if one_shot:
        gc.disable()
    try:
        code = main()
    finally:
        gc.freeze()
    if one_shot:
        exit_without_teardown(code)
    return code


def exit_without_teardown(code: int) -> None:
    """End the process with ``code`` as the interpreter's exit would, less its teardown
    (every module and object taken apart, which frees only what the OS takes back): the
    ``atexit`` functions run, then the standard streams are flushed, then ``os._exit``.
    Returns, leaving the exit to the interpreter, while a thread of ``threading`` other
    than this one runs (the exit waits for it), or when a stream cannot be flushed (the
    exit says why, as always)."""
    threading = sys.modules.get("threading")
    if threading is not None and threading.active_count() > 1:
        return
    import atexit

    atexit._run_exitfuncs()  # what Py_FinalizeEx runs; it forgets them once run
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        return
    os._exit(code)


def _ended(written: int | None, number: int) -> None:
    """Say which signal ended the command, on stderr and (``--json``) in the error report;
    a reader of stderr that left is ignored."""
    import signal
    from contextlib import suppress

    from launcher_probe.messages import say

    detail = f"ended by {signal.Signals(number).name}"
    with suppress(OSError):
        say(detail)
    _json_error(written, "signalled", detail)


def _json_error(written: int | None, reason: str, detail: str) -> None:
    """Under ``--json`` (``written`` is the stdout count when the command began), the error
    report on stdout, unless the command already printed its document; a reader that left
    is ignored."""
    from launcher_probe.commands.common import print_error_json, stdout_writes

    if written is None or stdout_writes() != written:
        return
    try:
        print_error_json(reason, detail)
    except OSError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
