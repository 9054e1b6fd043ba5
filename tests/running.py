"""Commands run in the suite's own process, as a user runs them: the screen they leave
(exit code, standard output and error) and the files of a folder, to compare before and
after."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Screen:
    code: int
    out: str
    err: str

    @property
    def text(self) -> str:
        return self.out + self.err


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every file (its bytes) and folder (None) under ``folder``."""
    if not folder.exists():
        return {}
    return {
        str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else None)
        for p in sorted(folder.rglob("*"))
    }


def quiet_log() -> None:
    """The runner's log handler writes to the sys.stderr of its day (an earlier test's
    capture): drop it, the next command line makes one for this test."""
    for handler in list(logging.getLogger("disc21spark").handlers):
        logging.getLogger("disc21spark").removeHandler(handler)


def in_process(argv: list[str], capsys, session) -> Screen:
    """``disc21spark ARGV`` in this process; ``session``: the SparkSession the runner gets
    (None: the case must not start Spark)."""
    from disc21spark import commands
    from disc21spark.core import runner

    def factory(*_, **__):
        assert session is not None, "this case started Spark"
        return session

    saved = runner._spark_session
    runner._spark_session = factory
    quiet_log()
    try:
        code = commands.main(argv)
    except SystemExit as exc:  # argparse: usage errors and --help
        code = exc.code
    finally:
        runner._spark_session = saved
    captured = capsys.readouterr()
    return Screen(code, captured.out, captured.err)


class NoCapture:
    """Stands for capsys where there is none (a module-scoped fixture): nothing captured."""

    def readouterr(self):
        return type("Captured", (), {"out": "", "err": ""})()


def succeed(session, argv: list[str], capsys=None) -> Screen:
    """``disc21spark ARGV`` in this process (``session`` as in ``in_process``), which must
    exit 0."""
    screen = in_process(argv, capsys or NoCapture(), session)
    assert screen.code == 0, screen.err[-3000:]
    return screen
