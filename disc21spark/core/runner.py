"""The one job runner: checks, Spark once, the job, its summary, errors as exit codes.

Every command builds a job (a small dataclass with ``from_options``, from the command's
typed request) and hands it here:

1. the checks that need no Spark (``job.check()``), then the output folder, locked and
   checked once a run (``output.claim``; a URI's once Spark runs), so that a bad command
   fails in a second instead of after Spark's start;
2. the session, started once (not at all for a job that says it needs none: the
   in-process engine of ``evaluate``);
3. ``job.execute(spark)``, then ``job.summary(result)`` printed on stdout.

Exit codes: 0 done, 2 bad input (InputError, OutputError: one ``error:`` line), 1 a bug of
ours (one ``internal error:`` line, the trace with --debug) or a pool's worker process
killed from outside (WorkersLost: one ``error:`` line), 130 interrupted (SIGINT,
Ctrl-C), 143 terminated (SIGTERM: a scheduler stopping the task). On either signal the
staging folder is removed, the previous output is left as it was and Spark is stopped.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import logging
import os
import re
import shutil
import signal
import subprocess
import sys
import traceback
from collections.abc import Callable
from typing import Any, ClassVar, Protocol

from disc21spark.core import config, fs, gateway, lock, paths, record, signals
from disc21spark.core.errors import InputError, OutputError, WorkersLost
from disc21spark.core.output import claim
from disc21spark.core.signals import Terminated

EXIT_OK, EXIT_INTERNAL, EXIT_INPUT = 0, 1, 2
EXIT_INTERRUPTED, EXIT_TERMINATED = signals.EXIT_INTERRUPTED, signals.EXIT_TERMINATED
__all__ = ["Terminated", "run", "Job", "BaseJob"]


class Job(Protocol):
    """What the runner needs of a job."""

    overwrite: bool
    INPUTS: tuple[str, ...]  # the fields naming its inputs (BaseJob.INPUTS)
    PRIVATE_INPUTS: tuple[str, ...]

    def check(self) -> None:
        """Fail with InputError on what can be checked before Spark starts."""

    def output_folder(self) -> str | None:
        """The folder the job publishes (checked before Spark starts), if any."""

    def private_folder(self) -> str | None:
        """A second folder the job writes and never publishes (a private board), if any."""

    def execute(self, spark: Any) -> Any:
        """Do the work; the result goes to ``summary``."""

    def summary(self, result: Any) -> list[str]:
        """Lines for stdout (tables, where the results are)."""


class BaseJob:
    """The parts of the protocol most jobs share: no check before Spark (Spark reads the
    inputs), ``output`` is the folder they publish, and the fields declared
    ``config.from_defaults()`` take defaults.ini's values of section ``DEFAULTS``."""

    DEFAULTS: ClassVar[str] = ""
    # the fields that name the job's inputs (files, folders, globs), in the order run.json
    # lists them: the run record hashes their content and keeps them out of its settings
    INPUTS: ClassVar[tuple[str, ...]] = ()
    # inputs whose content a published folder must not let a reader test a guess of (the
    # private board's queries): every run.json names them; only a private output's
    # run.json (``record.Record.private_outputs``) gives their size and SHA-256
    PRIVATE_INPUTS: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        if self.DEFAULTS:
            config.fill_defaults(self, self.DEFAULTS)

    def check(self) -> None:
        return None

    def output_folder(self) -> str | None:
        return getattr(self, "output", None)

    def private_folder(self) -> str | None:
        return None


def fields_from_options(cls: type, options: Any, **given: Any) -> dict[str, Any]:
    """The keyword arguments of the job dataclass ``cls`` from a command's options (a
    typed request, or another command's parsed options): each field an option sets
    (``--max-results`` → ``max_results``), then ``given`` over them (the fields with no
    option of their name, or converted on the way)."""
    names = [f.name for f in dataclasses.fields(cls) if f.init and hasattr(options, f.name)]
    return {**{name: getattr(options, name) for name in names}, **given}


SessionFactory = Callable[..., Any]


def run(
    build: Callable[[], Job],
    *,
    profile: str,
    master: str | None = None,
    debug: bool = False,
    session: SessionFactory | None = None,
    command: list[str] | None = None,
) -> int:
    """Build the job, check it, start Spark, run it, print its summary: the exit code."""
    files = fs.LocalFiles()  # the run's files: its session's once Spark is started
    restore = signals.install()  # SIGTERM's default would leave staging folders behind
    try:
        job = build()
        job.check()
        run_record = record.begin(job, command)
        # the in-process engine of evaluate needs neither Java nor a session
        needs_spark = getattr(job, "needs_spark", True)
        stopped = _before_spark(job, needs_spark)
        if stopped is not None:
            return stopped
        folder = job.output_folder()
        if needs_spark:
            files = fs.SparkFiles((session or _spark_session)(profile, master, debug=debug))
            signals.quiet_accumulator_server(files.spark)
        signals.reclaim()  # PySpark's SIGINT handler records nothing
        if folder and paths.is_uri(folder):
            claim(folder, job.overwrite)  # its file system lives in the JVM: Spark runs now
        run_record.files = files
        run_record.hash_inputs()
        result = job.execute(files.spark)
        _print_summary(job.summary(result))
        if signals.received() is not None:
            return _signalled(files)
    except (InputError, OutputError) as exc:
        if debug:
            traceback.print_exc()
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt as exc:
        return _interrupted(exc, files)
    except Exception as exc:  # a bug of ours, or what _failed names: one line either way
        return _failed(exc, files, debug)
    finally:
        record.end()
        lock.release_all()
        restore()
        signals.reset()
    return EXIT_OK


def _failed(exc: Exception, files: Any, debug: bool) -> int:
    """The exit code of a run that raised ``exc`` (no input or output error), its one line
    said. It may be a py4j call a signal broke, Spark out of memory, a worker killed from
    outside or a package the running Python lacks. Else it is a bug of ours (the trace
    with ``debug``)."""
    if signals.received() is not None:  # a py4j call the signal broke, not a bug
        return _signalled(files)
    if debug:
        traceback.print_exc()
    memory = out_of_memory_line(exc)
    if memory is not None:  # a setting to raise: the same run again cannot help
        print(f"error: {memory}", file=sys.stderr)
        return EXIT_INPUT
    # a worker killed from outside, or an install step not taken: said plainly, not a bug
    plain = str(exc) if isinstance(exc, WorkersLost) else missing_package_line(exc)
    if plain is not None:
        print(f"error: {plain}", file=sys.stderr)
        return EXIT_INTERNAL
    print(internal_error_line(exc), file=sys.stderr)
    return EXIT_INTERNAL


def _print_summary(lines: list[str]) -> None:
    """The run's summary on standard output. A reader that stops early (``| head``) has
    what it wanted and the results are already written: its closed pipe ends the summary
    quietly, and later writes go nowhere (no BrokenPipeError at exit)."""
    try:
        for line in lines:
            print(line)
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def _before_spark(job: Job, needs_spark: bool) -> int | None:
    """What is checked before Spark starts: Java (when it will), a retried task's output
    already up to date, the output's lock and folder (a URI's once Spark runs). The exit
    code when the run ends here, else None."""
    problem = java_is_usable() if needs_spark else None
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return EXIT_INPUT
    folder = job.output_folder()
    if folder and not job.overwrite and _up_to_date(job, folder):
        # a retried task: the output there was made by the same inputs and settings
        print(
            f"{folder}: up to date (its run.json has the same inputs, settings and "
            "version); nothing to do"
        )
        return EXIT_OK
    if folder and not paths.is_uri(folder):
        # one writer per output, a folder the results can go to: a second run or a bad
        # output stops here at once, before paying for Spark's start
        claim(folder, job.overwrite)
    return None


def _up_to_date(job: Job, folder: str) -> bool:
    """Every output of the job whole (``_SUCCESS``) and made by the same inputs (by
    content), settings and version: the published folder and, with one, the private."""
    private = getattr(job, "private_folder", lambda: None)()
    if private:
        record.current().keep_private(private)
    return record.up_to_date(folder) and (not private or record.up_to_date(private, True))


def _interrupted(exc: KeyboardInterrupt, files: fs.LocalFiles) -> int:
    """The exit of a run a signal stopped: one line, Spark stopped, 130 or 143."""
    terminated = isinstance(exc, Terminated) or signals.received() == signal.SIGTERM
    what = "terminated (SIGTERM)" if terminated else "interrupted"
    print(f"error: {what}; nothing was written, any previous output is untouched", file=sys.stderr)
    lock.release_all()  # a lock on a Hadoop file system is removed through the JVM
    files.stop()
    return EXIT_TERMINATED if terminated else EXIT_INTERRUPTED


def _signalled(files: fs.LocalFiles) -> int:
    """The job returned although a signal came (its raise swallowed, or after publishing)."""
    if signals.is_published():
        print(
            "note: a signal arrived after the output was put in place; the run is complete",
            file=sys.stderr,
        )
        return EXIT_OK
    signum = signals.received()
    return _interrupted(Terminated() if signum == signal.SIGTERM else KeyboardInterrupt(), files)


def _spark_session(profile: str, master: str | None, debug: bool = False) -> Any:
    # imported here: parsing a command and --help need no PySpark
    from disc21spark.core.session import spark_session

    return spark_session(profile, master, debug=debug)


# Spark's SparkExitCode.OOM: a task's OutOfMemoryError ends the JVM with it
SPARK_EXIT_OOM = 52
# seconds for a JVM that broke its connection to finish exiting, so its status is known
JVM_EXIT_WAIT = 5.0


def out_of_memory_line(exc: BaseException) -> str | None:
    """The sentence for a Spark job that failed because a JVM ran out of heap (its
    Py4JJavaError's text names java.lang.OutOfMemoryError), else None. Under
    spark-submit a task's out-of-memory in the driver's JVM ends the JVM itself (exit
    status 52, the error in Spark's log) before this process can say anything."""
    found = re.search(r"java\.lang\.OutOfMemoryError: ?([^\n]*)", str(exc))
    if found is not None:
        what = found.group(1).strip() or "out of memory"
    elif _jvm_gone(exc) and gateway.exit_status(wait=JVM_EXIT_WAIT) == SPARK_EXIT_OOM:
        what = "the JVM ended with Spark's out-of-memory status 52"
    else:
        return None
    return (
        f"Spark ran out of memory ({what}); raise spark.driver.memory (spark-submit "
        "--driver-memory; on local[*] every task runs in the driver's heap) or, on a "
        "cluster, spark.executor.memory (--executor-memory)"
    )


def _jvm_gone(exc: BaseException) -> bool:
    """Whether ``exc`` may be py4j's word that the JVM is gone (its connection broken, or
    a call that got no answer: a bare ``Py4JError``, as a ``collectToPython`` gets when
    the JVM exits under it); the JVM's exit status then decides."""
    names = {type(e).__name__ for e in (exc, exc.__cause__, exc.__context__) if e is not None}
    lost = {"Py4JNetworkError", "Py4JError", "ConnectionRefusedError", "ConnectionResetError"}
    return bool(names & lost) or ("Answer from Java side is empty" in str(exc))


def missing_package_line(exc: BaseException) -> str | None:
    """The sentence for a package the running Python lacks, else None. That is a
    ``ModuleNotFoundError`` of a package this Python cannot find at all: a command run
    outside the virtualenv it was installed in. Not this package's own modules, a
    missing part of an installed package, or the standard library's (a Python built
    without one): those stay internal errors."""
    name = getattr(exc, "name", None) if isinstance(exc, ModuleNotFoundError) else None
    top = (name or "").split(".")[0]
    if not top or top == "disc21spark" or top in sys.stdlib_module_names:
        return None
    if importlib.util.find_spec(top) is not None:  # installed: a part of it is missing
        return None
    return (
        f"this Python ({sys.executable}) has no {top}, which disc21spark needs: run the "
        "project's virtualenv (make venv, then .venv/bin/python, or scripts/spark-submit), "
        "or install the project into this Python (pip install -e .)"
    )


def internal_error_line(exc: BaseException) -> str:
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    return f"internal error: {type(exc).__name__}: {first} (rerun with --debug for the trace)"


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a line is logged, not the stream of the
    first command of the process (a later one may run with its stderr redirected)."""

    @property
    def stream(self) -> Any:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass


def setup_logging(quiet: bool = False) -> None:
    # a handler of our own: under spark-submit the root logger is already configured
    logger = logging.getLogger("disc21spark")
    if not logger.handlers:
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(asctime)s disc21spark %(message)s", "%H:%M:%S"))
        logger.addHandler(handler)
    logger.setLevel(logging.WARNING if quiet else logging.INFO)
    logger.propagate = False


def java_is_usable() -> str | None:
    """None when a Java 17+ runtime is found, else a sentence saying what is missing."""

    java = (
        os.path.join(os.environ["JAVA_HOME"], "bin", "java")
        if os.environ.get("JAVA_HOME")
        else shutil.which("java")
    )
    if not java or not os.path.exists(java):
        return (
            "Java 17 is required by Spark and was not found (install OpenJDK 17 or set JAVA_HOME)"
        )
    try:
        out = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=60).stderr
    except (OSError, subprocess.SubprocessError) as exc:
        return f"Java at {java} does not run ({exc})"
    found = re.search(r'version "(\d+)(?:\.(\d+))?', out)
    major = int(found.group(1)) if found else 0
    if major == 1 and found.group(2):  # "1.8" style
        major = int(found.group(2))
    if major < 17:
        return f"Java 17 or newer is required by Spark; {java} is version {major or 'unknown'}"
    return None
