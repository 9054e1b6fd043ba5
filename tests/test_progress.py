"""Progress of a long phase (core/progress.py): plain lines in a log, a bar on a terminal,
nothing with --quiet or from the API, and Spark's task counts while a phase runs."""

from __future__ import annotations

import io
import logging
import time

import pytest

from disc21spark.core import progress
from disc21spark.core.phases import Phases


@pytest.fixture
def log_lines(monkeypatch):
    """The command line's logger (as setup_logging makes it) writing into a list; no
    delay before the first line, no wait between lines."""
    monkeypatch.setattr(progress, "DELAY", 0.0)
    monkeypatch.setattr(progress, "LOG_EVERY", 0.0)
    monkeypatch.setattr(progress, "POLL", 0.05)
    lines: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())
    logger = logging.getLogger("disc21spark")
    saved = (logger.level, logger.propagate)
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield lines
    logger.removeHandler(handler)
    logger.setLevel(saved[0])
    logger.propagate = saved[1]


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_log_gets_plain_lines(log_lines):
    with progress.counter("read", "rows") as read:
        read.add(1000)
        read.add(2500)
    assert log_lines == ["read:     1,000 rows so far", "read:     3,500 rows so far"]


def test_a_terminal_gets_a_bar_that_goes_away(log_lines, monkeypatch):
    screen = Terminal()
    monkeypatch.setattr("sys.stderr", screen)
    with progress.counter("read", "rows") as read:
        read.add(4000)
        assert "read: 4000 rows" in screen.getvalue()  # tqdm's own line
    assert log_lines == []  # the bar, not log lines
    assert screen.getvalue().endswith("\r") or "\x1b" in screen.getvalue()  # erased


def test_quiet_and_the_api_show_nothing(log_lines):
    logging.getLogger("disc21spark").setLevel(logging.WARNING)  # --quiet
    with progress.counter("read", "rows") as read:
        read.add(10)
    assert log_lines == []


def test_nothing_before_the_delay(log_lines, monkeypatch):
    monkeypatch.setattr(progress, "DELAY", 60.0)
    with progress.counter("read", "rows") as read:
        read.add(10)
    assert log_lines == []


def test_a_spark_phase_shows_its_tasks(spark, log_lines):
    with Phases().phase("sleepy", unit="files"):
        rdd = spark.sparkContext.parallelize(range(4), 4)
        rdd.foreach(lambda _: time.sleep(0.4))
        time.sleep(0.2)  # one more poll
    shown = [line for line in log_lines if line.startswith("sleepy:") and "so far" in line]
    assert shown, log_lines
    assert all(line.endswith("of 4 files so far") for line in shown), shown
    assert log_lines[-1].startswith("sleepy:   done in")
