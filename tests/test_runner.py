"""The one job runner without Spark: fake jobs that fail at each step, and the exit code
and one line each failure gives; then the user mistakes the real jobs find before Spark."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass, field

import pytest

from disc21spark import commands
from disc21spark.core import runner
from disc21spark.core.errors import InputError, OutputError
from disc21spark.core.runner import Terminated
from tests.conftest import MINIMAL


def parse(command: str, *options: str):
    return commands.parse([command, *options])


# ---------------------------------------------------------------------- runner


@dataclass
class FakeJob:
    """A job that records what the runner did and fails where it is told to."""

    fail_in: str = ""
    error: BaseException | None = None
    folder: str | None = None
    overwrite: bool = False
    calls: list = field(default_factory=list)

    def _step(self, name: str) -> None:
        self.calls.append(name)
        if name == self.fail_in:
            raise self.error

    def check(self) -> None:
        self._step("check")

    def output_folder(self) -> str | None:
        return self.folder

    def execute(self, spark) -> str:
        self._step("execute")
        return "result"

    def summary(self, result) -> list[str]:
        self._step("summary")
        return [f"table of {result}", "results in o/"]


@pytest.fixture
def no_java_check(monkeypatch):
    monkeypatch.setattr(runner, "java_is_usable", lambda: None)


def run_fake(job: FakeJob, debug: bool = False, build=None) -> int:
    def session(profile, master, debug=False):
        job.calls.append(f"spark {profile} {master}")
        return object()

    return runner.run(
        build or (lambda: job), profile="local", master="local[1]", debug=debug, session=session
    )


def test_a_job_that_succeeds(no_java_check, capsys):
    job = FakeJob()
    assert run_fake(job) == 0
    assert job.calls == ["check", "spark local local[1]", "execute", "summary"]
    assert capsys.readouterr().out == "table of result\nresults in o/\n"


ERRORS = [
    (InputError("p.csv", "score 'x' is not a number", "line 2"), 2,
     "error: p.csv: line 2: score 'x' is not a number"),
    (InputError("", "unknown Spark profile 'x' (known: local)"), 2,
     "error: unknown Spark profile 'x' (known: local)"),
    (OutputError("o: folder exists and is not empty"), 2, "error: o: folder exists and is not empty"),
    (RuntimeError("boom\nsecond line"), 1,
     "internal error: RuntimeError: boom (rerun with --debug for the trace)"),
    (ValueError("a bug of ours"), 1,
     "internal error: ValueError: a bug of ours (rerun with --debug for the trace)"),
    (KeyError("k"), 1, "internal error: KeyError: 'k' (rerun with --debug for the trace)"),
    # a command run with a Python that lacks a package (here one no Python has): the fix
    (ModuleNotFoundError("No module named 'nosuchpackage'", name="nosuchpackage"), 1,
     f"error: this Python ({sys.executable}) has no nosuchpackage, which disc21spark needs: "
     "run the project's virtualenv (make venv, then .venv/bin/python, or scripts/spark-submit), "
     "or install the project into this Python (pip install -e .)"),
    # a part of an installed package, the standard library's, or ours: bugs, said as such
    (ModuleNotFoundError("No module named 'scipy.sparse._x'", name="scipy.sparse._x"), 1,
     "internal error: ModuleNotFoundError: No module named 'scipy.sparse._x' (rerun with --debug "
     "for the trace)"),
    (ModuleNotFoundError("No module named '_bz2'", name="_bz2"), 1,
     "internal error: ModuleNotFoundError: No module named '_bz2' (rerun with --debug for the "
     "trace)"),
    (ModuleNotFoundError("No module named 'disc21spark.x'", name="disc21spark.x"), 1,
     "internal error: ModuleNotFoundError: No module named 'disc21spark.x' (rerun with --debug "
     "for the trace)"),
    # a Py4JJavaError's text: the JVM's trace under "An error occurred while calling"
    (RuntimeError("An error occurred while calling o81.collectToPython.\n: org.apache.spark."
                  "SparkException: Job aborted due to stage failure: Lost task 0.0 (TID 149): "
                  "java.lang.OutOfMemoryError: Java heap space\n\tat org.apache.spark.sql"), 2,
     "error: Spark ran out of memory (Java heap space); raise spark.driver.memory (spark-submit "
     "--driver-memory; on local[*] every task runs in the driver's heap) or, on a cluster, "
     "spark.executor.memory (--executor-memory)"),
    (KeyboardInterrupt(), 130,
     "error: interrupted; nothing was written, any previous output is untouched"),
    (Terminated(), 143,
     "error: terminated (SIGTERM); nothing was written, any previous output is untouched"),
]  # fmt: skip


@pytest.mark.parametrize("step", ["check", "execute", "summary"])
@pytest.mark.parametrize("error,code,line", ERRORS)
def test_errors_become_one_line_and_an_exit_code(no_java_check, capsys, step, error, code, line):
    job = FakeJob(fail_in=step, error=error)
    assert run_fake(job) == code
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [line]
    assert captured.out == ""
    if step == "check":
        assert not any(c.startswith("spark") for c in job.calls)  # Spark never started


@pytest.mark.parametrize(
    "error,code,line", ERRORS[:5] + [e for e in ERRORS if isinstance(e[0], ModuleNotFoundError)]
)
def test_debug_adds_the_trace(no_java_check, capsys, error, code, line):
    assert run_fake(FakeJob(fail_in="execute", error=error), debug=True) == code
    err = capsys.readouterr().err
    assert err.startswith("Traceback") and err.splitlines()[-1] == line


def test_a_bad_option_found_while_building_the_job(no_java_check, capsys):
    def build():
        raise InputError("--descriptors", "give at least one method")

    assert run_fake(FakeJob(), build=build) == 2
    assert capsys.readouterr().err == "error: --descriptors: give at least one method\n"


def test_the_output_folder_is_checked_before_spark(no_java_check, capsys, tmp_path):
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "mine.txt").write_text("mine")
    job = FakeJob(folder=str(tmp_path / "o"))
    assert run_fake(job) == 2
    assert job.calls == ["check"]
    assert capsys.readouterr().err == (
        f"error: {tmp_path / 'o'}: folder exists and is not empty (pass --overwrite to replace it)\n"
    )
    job = FakeJob(folder=str(tmp_path / "o"), overwrite=True)
    assert run_fake(job) == 0 and "execute" in job.calls


def test_no_java_stops_before_spark_and_output(monkeypatch, capsys):
    monkeypatch.setattr(runner, "java_is_usable", lambda: "Java 17 is required by Spark")
    job = FakeJob()
    assert run_fake(job) == 2
    assert job.calls == ["check"]  # the checks that need no Spark decide whether Spark is used
    assert capsys.readouterr().err == "error: Java 17 is required by Spark\n"


def test_a_job_that_needs_no_spark_needs_no_java(monkeypatch):
    monkeypatch.setattr(runner, "java_is_usable", lambda: "Java 17 is required by Spark")
    job = FakeJob()
    job.needs_spark = False
    started = []
    code = runner.run(lambda: job, profile="local", session=lambda *a, **k: started.append(1))
    assert code == 0 and started == [] and "execute" in job.calls


# ------------------------------------------------- user mistakes found by the jobs


def test_bad_values_the_jobs_find_are_input_errors():
    from disc21spark.library.job import LibraryJob
    from disc21spark.queries.job import QueryJob
    from disc21spark.ranks.extract_job import ExtractJob
    from disc21spark.ranks.job import RankJob

    with pytest.raises(InputError) as info:
        QueryJob.from_options(
            parse("make-queries", *MINIMAL["make-queries"], "--tests", "blurr:2").request
        )
    assert str(info.value).startswith("unknown test 'blurr:2' (known: crop:K, jumble:RxC")
    with pytest.raises(InputError, match=r"^--queries-per-test: must be at least 1 \(got 0\)$"):
        QueryJob.from_options(
            parse("make-queries", *MINIMAL["make-queries"], "--queries-per-test", "0").request
        )
    with pytest.raises(InputError) as info:
        LibraryJob.from_options(
            parse("make-library", "--output", "o", "--size", "0").request
        ).check()
    assert str(info.value) == "size must be a positive integer, got 0"
    with pytest.raises(InputError) as info:
        args = parse("extract", "--images", "lib", "--method", "sift", "--output", "o.h5")
        ExtractJob.from_options(args.request).check()
    assert str(info.value) == (
        "unknown descriptor method 'sift' (built-in: colorhist, correlogram, tiny, pdq; "
        "or module:function)"
    )
    with pytest.raises(InputError, match="^--methods: a method is named twice"):
        RankJob.from_options(
            parse("rank-eval", *MINIMAL["rank-eval"], "--methods", "tiny,tiny").request
        )


def test_a_reader_that_stops_early_ends_the_summary_quietly(tmp_path):
    """``disc21spark evaluate ... | head -n 1``: the pipe is closed before the summary is
    printed (its read end closed at once), and the run still exits 0 with its results
    written, saying nothing of a BrokenPipeError."""
    (tmp_path / "gt.csv").write_text("query_id,reference_id\nQ1,R1\nQ2,\n")
    (tmp_path / "p.csv").write_text("Q1,R1,0.9\nQ2,R3,0.5\n")
    read, write = os.pipe()
    os.close(read)
    command = [sys.executable, "-m", "disc21spark", "evaluate", "--ground-truth", "gt.csv"]
    done = subprocess.run(
        [*command, "--predictions", "p.csv", "--output", "out", "--resamples", "0"],
        stdout=write,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    os.close(write)
    assert done.returncode == 0, done.stderr
    assert "BrokenPipe" not in done.stderr and "error" not in done.stderr
    assert (tmp_path / "out" / "metrics.json").exists()


def test_a_run_locks_and_checks_its_output_once(monkeypatch, capsys, tmp_path):
    """One in-process evaluate: its output folder locked once and checked once before the
    work (the runner's claim), then checked again only at the publish."""
    from disc21spark.core import lock, output
    from tests.evaluate_inputs import GT_LINES, write
    from tests.running import in_process

    gt = write(tmp_path / "gt.csv", GT_LINES)
    preds = write(tmp_path / "p.csv", "Q1,R1,0.9\nQ2,R9,0.5\nQ4,R4,0.4\n")
    out = tmp_path / "o"
    calls = []
    for module, name in ((lock, "acquire"), (output, "_check_local")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _n=name, _r=real: calls.append(_n) or _r(*a))
    argv = ["evaluate", "--ground-truth", gt, "--predictions", preds, "--output", str(out)]
    screen = in_process([*argv, "--engine", "local", "--resamples", "0"], capsys, None)
    assert screen.code == 0, screen.err
    # the second check is the publish's: someone may have written there meanwhile
    assert calls == ["acquire", "_check_local", "_check_local"] and (out / "_SUCCESS").exists()
