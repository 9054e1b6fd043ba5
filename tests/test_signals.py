"""SIGINT and SIGTERM at random moments (issue 25): a signal is never lost, never leaks a
process, never touches the previous output.

A cheap job (``python jobs/evaluate.py --engine spark`` on 300 queries) is started again
and again and sent SIGINT or SIGTERM after a seeded random delay, from 0.3 s (the command
has begun: the Java check, then the session's start with the gateway JVM being launched)
to past the end of the run. (Before, Python itself is starting, nothing is launched or
written, and Python's default applies: the process ends by the signal.) Every time: exit 130/143 and the previous output byte for byte as it was, or (the
signal came after the output was put in place, or after the run ended) exit 0 and a
complete new output; no traceback; nothing beside the output; and no process of the run
left once the driver has exited (every process started with the run's own marker in its
environment, which the JVM and the Python workers inherit, is gone).

``DISC21SPARK_SIGNAL_RUNS`` sets the number of runs (default 6, about a minute here, as
``make test`` runs it; ``make fuzz`` runs 40);
``DISC21SPARK_SIGNAL_SEED`` the seed.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import psutil
import pytest

from disc21spark.core import runner
from disc21spark.core.output import staged_output
from tests.conftest import ROOT, cli_env
from tests.pool_helpers import GT, random_submission
from tests.running import snapshot

RUNS = int(os.environ.get("DISC21SPARK_SIGNAL_RUNS", "6"))
SEED = int(os.environ.get("DISC21SPARK_SIGNAL_SEED", "25"))
MARKER = "DISC21SPARK_TEST_RUN_MARKER"
CODES = {signal.SIGINT: 130, signal.SIGTERM: 143}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    import numpy as np

    root = tmp_path_factory.mktemp("signals")
    GT.to_csv(root / "gt.csv", index=False)
    random_submission(np.random.default_rng(25), 300).to_csv(root / "team.csv", index=False)
    return root


def start(inputs: Path, out: Path, marker: str) -> subprocess.Popen:
    args = [
        "--ground-truth",
        str(inputs / "gt.csv"),
        "--predictions",
        str(inputs / "team.csv"),
        "--engine",
        "spark",
        "--output",
        str(out),
        "--overwrite",
    ]
    return subprocess.Popen(
        [sys.executable, str(ROOT / "jobs" / "evaluate.py"), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**cli_env(), MARKER: marker},
        start_new_session=True,
    )


def processes_of(marker: str) -> list[psutil.Process]:
    """Every process whose environment carries ``marker`` (the run's JVM, its launcher,
    its Python daemon and workers inherit it)."""
    found = []
    for proc in psutil.process_iter():
        try:
            if proc.environ().get(MARKER) == marker:
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def left_behind(marker: str) -> list[str]:
    """The run's processes still there after a bounded wait for them to end (the driver
    has exited: anything still running then is a leak)."""
    gone, alive = psutil.wait_procs(processes_of(marker), timeout=20)
    return [f"{p.pid} {p.name()}" for p in alive if p.is_running()]


def signalled_run(inputs: Path, out: Path, signum: int, delay: float) -> str:
    """One run sent ``signum`` after ``delay`` seconds: checks it, returns what happened."""
    before = snapshot(out)
    marker = uuid.uuid4().hex
    proc = start(inputs, out, marker)
    try:
        try:
            proc.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            proc.send_signal(signum)
        stdout, stderr = proc.communicate(timeout=180)
    finally:
        proc.kill()
    where = f"{signal.Signals(signum).name} after {delay:.2f} s"
    assert "Traceback" not in stderr, f"{where}: {stderr[-3000:]}"
    assert proc.returncode in (CODES[signum], 0), f"{where}: exit {proc.returncode}\n{stderr}"
    assert left_behind(marker) == [], f"{where}: processes of the run left behind"
    visible = sorted(p.name for p in out.parent.iterdir())
    assert visible == ["out"], f"{where}: left beside the output: {visible}"
    if proc.returncode == 0:
        assert (out / "_SUCCESS").exists() and (out / "metrics.json").exists(), where
        return "completed"
    assert snapshot(out) == before, f"{where}: the previous output changed"
    errors = [line for line in stderr.splitlines() if line.startswith("error:")]
    what = "terminated (SIGTERM)" if signum == signal.SIGTERM else "interrupted"
    assert errors == [f"error: {what}; nothing was written, any previous output is untouched"]
    return "interrupted"


def test_signals_at_random_moments_are_never_lost(inputs, tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("the previous run\n")
    rng = random.Random(SEED)
    # the first two runs hit the session's start; the others anywhere up to past the end
    delays = [0.5, 1.5] + [rng.uniform(0.3, 20.0) for _ in range(RUNS - 2)]
    outcomes = []
    for i, delay in enumerate(delays[:RUNS]):
        signum = (signal.SIGTERM, signal.SIGINT)[i % 2]
        outcomes.append(signalled_run(inputs, out, signum, delay))
        if outcomes[-1] == "completed":  # a new previous output for the next run
            (out / "keep.txt").write_text(f"run {i}\n")
    print(f"signal stress: {RUNS} runs, seed {SEED}: {outcomes}")
    assert outcomes[:2] == ["interrupted", "interrupted"], "the start-up signals were lost"


class SelfSignalling(runner.BaseJob):
    """A job of the in-process kind (no Spark) that sends itself ``signum`` while writing
    its output (swallowing the raise, as py4j's callbacks do) or after publishing it."""

    needs_spark = False
    overwrite = True

    def __init__(self, output: Path, signum: int, when: str) -> None:
        self.output, self.signum, self.when = str(output), signum, when

    def execute(self, spark) -> None:
        with staged_output(self.output, True) as stage:
            (stage / "metrics.json").write_text("{}\n")
            if self.when == "swallowed":
                try:
                    os.kill(os.getpid(), self.signum)
                    time.sleep(0.05)  # the handler runs here, and its raise is lost
                except BaseException:
                    pass
        if self.when == "published":
            os.kill(os.getpid(), self.signum)
            time.sleep(0.05)

    def summary(self, result) -> list[str]:
        return ["done"]


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_swallowed_signal_still_stops_the_publish(tmp_path, capsys, signum):
    out = tmp_path / "out"
    out.mkdir()
    (out / "keep.txt").write_text("the previous run\n")
    code = runner.run(lambda: SelfSignalling(out, signum, "swallowed"), profile="local")
    assert code == CODES[signum]
    assert [p.name for p in out.iterdir()] == ["keep.txt"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    assert "nothing was written" in capsys.readouterr().err


def test_a_signal_after_the_publish_completes_the_run(tmp_path, capsys):
    out = tmp_path / "out"
    before = signal.getsignal(signal.SIGTERM)
    code = runner.run(lambda: SelfSignalling(out, signal.SIGTERM, "published"), profile="local")
    assert code == 0 and (out / "metrics.json").exists() and (out / "_SUCCESS").exists()
    assert "the run is complete" in capsys.readouterr().err
    assert signal.getsignal(signal.SIGTERM) is before  # the run's handlers are gone


def test_the_accumulator_servers_error_is_quiet_only_once_a_signal_came(spark, capsys):
    from disc21spark.core import signals

    server = spark.sparkContext._accumulatorServer  # PySpark's own, a socketserver
    signals.quiet_accumulator_server(spark)
    signals.quiet_accumulator_server(spark)  # once: not wrapped twice
    assert server.handle_error.quiet_when_signalled
    signals.reset()
    for received in (None, signal.SIGINT):
        signals._state["received"] = received
        try:  # what the server meets when the JVM cuts a connection mid-update
            raise EOFError
        except EOFError:
            server.handle_error(None, ("127.0.0.1", 1))
        printed = capsys.readouterr().err
        assert ("Traceback" in printed) == (received is None), printed
    signals.reset()
