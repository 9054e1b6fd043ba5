"""How the user started a command, so that a message names what they can type:
``disc21spark make-queries`` for the installed command, ``jobs/make_queries.py`` from a
checkout. Set once by the command line (commands.main); the library only reads it."""

from __future__ import annotations

# the installed command's subcommands → the checkout's job scripts
JOB_SCRIPTS = {
    "evaluate": "evaluate.py",
    "freeze": "freeze_board.py",
    "make-library": "make_library.py",
    "make-queries": "make_queries.py",
    "extract": "extract_descriptors.py",
    "rank-eval": "rank_eval.py",
}
_from_jobs = False


def started_from_job_script(value: bool) -> None:
    """Called by commands.main: True when jobs/<name>.py (a checkout) was run."""
    global _from_jobs
    _from_jobs = value


def command(name: str) -> str:
    """The command ``name`` (``make-queries``) as the user would type it now."""
    return f"jobs/{JOB_SCRIPTS[name]}" if _from_jobs else f"disc21spark {name}"
