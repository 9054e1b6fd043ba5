"""The disc21spark command: evaluate | freeze | make-library | make-queries | extract | rank-eval.

Each command is a module here with its parser (defaults from conf/defaults.ini), its
``REQUEST`` (the typed options the parser's are turned into and checked:
``requests.py``, ``evaluate_request.py``) and ``job_of(request)``, the job handed to the
one runner (core/runner.py). jobs/*.py call the same commands for spark-submit from a checkout.
"""

from __future__ import annotations

import argparse
import sys
from types import ModuleType

from disc21spark.commands import evaluate, extract, freeze, make_library, make_queries, rank_eval
from disc21spark.commands.common import Parser, version_text
from disc21spark.commands.requests import UsageError, checked
from disc21spark.core import invocation
from disc21spark.core.errors import OutputError

COMMANDS: dict[str, ModuleType] = {
    m.NAME: m for m in (evaluate, freeze, make_library, make_queries, extract, rank_eval)
}
PROG = "disc21spark"


def command_parser(name: str, prog: str, description: str | None = None) -> argparse.ArgumentParser:
    """One command's parser on its own (jobs/<name>.py, or a test)."""
    parser = Parser(prog=prog, **_texts(COMMANDS[name], description))
    COMMANDS[name].add_arguments(parser)
    return parser


def main_parser() -> tuple[argparse.ArgumentParser, dict[str, argparse.ArgumentParser]]:
    """``disc21spark COMMAND ...`` and each command's parser, by name."""
    parser = Parser(prog=PROG, description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--version", action="version", version=version_text())
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    by_name = {}
    for name, module in COMMANDS.items():
        sub = subparsers.add_parser(name, help=module.SUMMARY, **_texts(module, None))
        module.add_arguments(sub)
        by_name[name] = sub
    return parser, by_name


def _texts(module: ModuleType, description: str | None) -> dict:
    # the epilog is computed for --help only: make-queries' lists the tests, whose module
    # imports Pillow
    return {
        "description": description or module.DESCRIPTION,
        "epilog_source": getattr(module, "epilog", None),
    }


def parse(
    argv: list[str] | None = None, prog: str | None = None, description: str | None = None
) -> argparse.Namespace:
    """The options of ``argv`` (``[command, *options]``), checked; exits 2 (argparse's
    usage error) on a bad command line, 0 after --help; OutputError for an output over
    a path it reads or a frozen board (``requests.checked``). With ``prog``, the command's
    parser is used alone under that name (as jobs/<name>.py were)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if prog is not None:
        name = argv[0]
        parser = command_parser(name, prog, description)
        parser.tell_given = True
        args = parser.parse_args(argv[1:])
        args.command = name
    else:
        top, by_name = main_parser()
        for sub in by_name.values():
            sub.tell_given = True
        args = top.parse_args(argv)
        parser = by_name[args.command]
    args.given = parser.given(args)  # argv parsed once: what it gives, then the defaults
    try:  # the rules no single option can say, in the request the library takes
        args.request = checked(COMMANDS[args.command].REQUEST.of_namespace(args))
    except UsageError as exc:
        parser.error(str(exc))
    return args


def main(
    argv: list[str] | None = None, prog: str | None = None, description: str | None = None
) -> int:
    """The console script ``disc21spark``: parse, then the runner; the exit code."""
    invocation.started_from_job_script(prog is not None)
    try:
        args = parse(argv, prog, description)
    except OutputError as exc:  # refused before any work: one line, no usage
        print(f"error: {exc}", file=sys.stderr)
        return 2  # the runner's EXIT_INPUT
    from disc21spark.core.runner import run, setup_logging  # not needed for --help

    setup_logging(args.quiet)
    job_of = COMMANDS[args.command].job_of
    # the command line as given (in process, argv is not sys.argv)
    command = [prog or sys.argv[0], *(sys.argv[1:] if argv is None else argv)]
    return run(
        lambda: job_of(args.request),
        profile=args.profile,
        master=args.master,
        debug=args.debug,
        command=command,
    )
