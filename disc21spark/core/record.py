"""The run record: what a run was given and what ran it.

Every output folder holds ``run.json``, and ``metrics.json`` / ``leaderboard.json`` /
``rank_eval.json`` carry the same block under ``run``: the command line, start and end
(ISO 8601 with the time zone), the Spark application and master, the versions of the
package and of what computes (Python, PySpark, numpy, pyarrow, FAISS), the git commit
when run from a checkout, the job's effective settings, every input with its size and
SHA-256 (streamed), and the seconds of each phase. A scheduler audits a run from it, and
a rerun compares it to decide that an output is up to date.

The runner begins one record per command; library calls outside the runner (tests,
notebooks) get one begun at their first phase.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import os
import subprocess
import sys
import threading
from concurrent.futures import Future, ThreadPoolExecutor
from importlib import metadata
from pathlib import Path
from typing import Any

from disc21spark.core import fs
from disc21spark.core.errors import InputError
from disc21spark.core.paths import display_path
from disc21spark.core.version import __version__

RUN_FILE = "run.json"
# fields that say where and how to write, not what the result is
NOT_SETTINGS = ("output", "overwrite", "quiet", "debug", "command")
PACKAGES = {"pyspark": "pyspark", "numpy": "numpy", "pyarrow": "pyarrow", "faiss": "faiss-cpu"}


def now() -> str:
    return dt.datetime.now().astimezone().isoformat(timespec="milliseconds")


class Record:
    """One run's record, filled as the run goes."""

    def __init__(
        self, command: list[str] | None = None, job: Any = None, runner: bool = False
    ) -> None:
        self.command = list(sys.argv if command is None else command)
        self.started = now()
        self.job = job
        self.runner = runner  # begun by the runner for a command (else a library call)
        # the files of the run: the runner's (this machine's, or its session's once Spark
        # is started); a library call is described by what it hands ``document``
        self.files: fs.LocalFiles = fs.LocalFiles()
        self.phase_seconds: dict[str, float] = {}
        self._document: dict | None = None
        # output folders the runner locked and checked for this run (``claim``)
        self.claimed_outputs: set[str] = set()
        self.private_outputs: set[str] = set()  # folders never published (a private board)
        self._inputs: Future | None = None
        self._digests: dict[str, Future] = {}
        self._digests_lock = threading.Lock()

    def sha256(self, path: str, spark: Any = None) -> str:
        """``fs.sha256`` of ``path`` once per run: the job's own checks (a pool's reuse of
        previous results, its ground truth) and this record share one digest of each
        file, even when they ask at the same moment from different threads."""
        key = display_path(path)  # file:/x and /x are one file
        with self._digests_lock:
            future = self._digests.get(key)
            mine = future is None
            if mine:
                future = self._digests[key] = Future()
        if mine:
            try:
                future.set_result(fs.sha256(path, spark))
            except BaseException as exc:
                future.set_exception(exc)
        return future.result()

    def hash_inputs(self) -> None:
        """Start hashing the job's inputs in a thread (hashlib and the JVM digest run
        outside Python's lock, beside the work), on the run's files."""
        if self._inputs is None and self.job is not None:
            paths = input_paths(self.job)
            pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="disc21spark-inputs")
            self._inputs = pool.submit(describe_inputs, paths, self.files)
            pool.shutdown(wait=False)

    def inputs(self, private: bool = False) -> list[dict]:
        """Every input described (``describe_inputs``); unless ``private``, the inputs of
        ``PRIVATE_INPUTS`` by their path alone."""
        self.hash_inputs()
        found = self._inputs.result() if self._inputs is not None else []
        if private:
            return found
        hidden = set(private_paths(self.job))
        return [{"path": i["path"], "withheld": True} if i["path"] in hidden else i for i in found]

    def claim(self, output: str | os.PathLike) -> None:
        """The runner has locked and checked ``output`` for this run: what publishes it
        neither locks nor checks it again before the work (``output.staged_output``)."""
        self.claimed_outputs.add(str(output))

    def claimed(self, output: str | os.PathLike) -> bool:
        return str(output) in self.claimed_outputs

    def is_private(self, output: str | os.PathLike) -> bool:
        return display_path(str(output)).rstrip("/") in self.private_outputs

    def keep_private(self, output: str | os.PathLike) -> None:
        """``output`` is never published: its run.json describes every input in full."""
        self.private_outputs.add(display_path(str(output)).rstrip("/"))

    def settings(self) -> dict:
        fields = job_settings(self.job)
        inputs = input_names(self.job)
        return {
            name: json_value(value)
            for name, value in fields.items()
            if name not in NOT_SETTINGS and name not in inputs
        }

    def document(self, files: fs.LocalFiles | None = None, private: bool = False) -> dict:
        """The record as written: run.json, and the ``run`` block of the result files;
        built once per run (one end time, one git call), whoever asks first. ``files``:
        the engine of a library call (the runner's record knows its own; a call handed
        none is described by ``fs.serving``). ``private``: a private output's, with the
        private inputs' digests (``inputs``)."""
        if self._document is None:
            if not self.runner:
                self.files = files or fs.serving()
            self._document = {
                "command": " ".join(self.command),
                "started": self.started,
                "ended": now(),
                **self.files.describe(),
                "versions": versions(),
                "git_commit": git_commit(),
                "settings": self.settings(),
                "inputs": self.inputs(),
                "phase_seconds": dict(self.phase_seconds),
            }
        return {**self._document, "inputs": self.inputs(private)}


_CURRENT: list[Record] = []


def begin(job: Any = None, command: list[str] | None = None) -> Record:
    """The record of a command's run: the runner calls it once per command."""
    _CURRENT[:] = [Record(command, job, runner=True)]
    return _CURRENT[0]


def end() -> None:
    _CURRENT.clear()


def for_phases() -> Record:
    """The record a new set of phases reports to: the runner's, or a fresh one for a
    library call (tests, notebooks), so that no run inherits another's phases."""
    if not (_CURRENT and _CURRENT[0].runner):
        _CURRENT[:] = [Record()]
    return _CURRENT[0]


def sha256(path: str, spark: Any = None) -> str:
    """The SHA-256 of a file, computed once per run (``Record.sha256``)."""
    return current().sha256(path, spark)


def current() -> Record:
    if not _CURRENT:
        _CURRENT.append(Record())
    return _CURRENT[0]


def job_settings(job: Any) -> dict[str, Any]:
    """What a job was given, by name: the dataclass's fields, or what a command that
    picks its job at run time (evaluate) says through its ``settings()``."""
    if dataclasses.is_dataclass(job) and not isinstance(job, type):
        return {f.name: getattr(job, f.name) for f in dataclasses.fields(job)}
    settings = getattr(job, "settings", None)
    return dict(settings()) if callable(settings) else {}


def input_names(job: Any) -> tuple[str, ...]:
    """The names of the job's fields that name inputs (files, folders, globs), whose
    content is hashed, as the job gives them (``runner.BaseJob.INPUTS``)."""
    return tuple(getattr(job, "INPUTS", ()))


def input_paths(job: Any, names: tuple[str, ...] | None = None) -> list[str]:
    """The paths of the job's fields ``names`` (None: its ``INPUTS``), in that order."""
    paths: list[str] = []
    fields = job_settings(job)
    for name in input_names(job) if names is None else names:
        value = fields.get(name)
        if isinstance(value, str | os.PathLike):
            paths.append(str(value))
        elif isinstance(value, list | tuple):
            paths += [str(v) for v in value]
    return paths


def private_paths(job: Any) -> list[str]:
    """The paths of the job's ``PRIVATE_INPUTS`` (``runner.BaseJob``)."""
    return input_paths(job, tuple(getattr(job, "PRIVATE_INPUTS", ())))


def describe_inputs(paths: list[str], files: fs.LocalFiles) -> list[dict]:
    """Each input: its path, bytes and SHA-256; a folder or glob by its files (count,
    bytes, and the SHA-256 of their names and digests in order), listed by ``files``."""
    described = []
    for path in paths:
        listed = files.listed(path)
        if listed is None:
            described.append({"path": path, "bytes": None, "sha256": None, "missing": True})
            continue
        sums = [(f, files.size(f), _sha256(f, files.spark)) for f in listed]
        if len(sums) == 1 and sums[0][0] == path:
            described.append({"path": path, "bytes": sums[0][1], "sha256": sums[0][2]})
            continue
        digest = fs.files_digest([(f, sha or "unreadable") for f, _, sha in sums])
        entry = {
            "path": path,
            "files": len(sums),
            "bytes": sum(s for _, s, _ in sums),
            "sha256": digest,
        }
        unreadable = sum(sha is None for _, _, sha in sums)
        described.append({**entry, "unreadable": unreadable} if unreadable else entry)
    return described


def _sha256(path: str, spark: Any) -> str | None:
    """None for a file that cannot be read: the job that skipped it (an image without
    read permission in a library) reports it; the record only counts it."""
    try:
        return current().sha256(path, spark)
    except InputError:
        return None


def json_value(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {k: json_value(v) for k, v in dataclasses.asdict(value).items()}
    if isinstance(value, list | tuple):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def versions() -> dict:

    found = {"disc21spark": __version__, "python": sys.version.split()[0]}
    for name, dist in PACKAGES.items():
        try:
            found[name] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            found[name] = None
    return found


def git_commit() -> str | None:
    """The checkout's commit when the package runs from one (not from a wheel): asked
    once per run, when its record is built (``Record.document``)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / ".git").exists():
        return None
    try:
        out = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def write(folder: Path, private: bool = False) -> dict:
    """run.json in an output folder (the staging folder, before it is published);
    ``private``: a folder never published (``Record.document``)."""
    return write_to(folder / RUN_FILE, private)


def write_to(path: Path, private: bool = False) -> dict:
    document = current().document(private=private)
    path.write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    return document


def up_to_date(output: str, private: bool = False) -> bool:
    """Whether ``output`` holds a complete run of the same inputs (by content), settings
    and package version as the current record's: a retried task has nothing to do.
    ``private``: a folder never published, whose run.json gives the private inputs'
    digests (the published one names them by path alone)."""
    try:
        if not fs.exists(f"{output.rstrip('/')}/{fs.SUCCESS}"):
            return False
        old = json.loads(fs.read_text(f"{output.rstrip('/')}/{RUN_FILE}"))
    except Exception:  # no record, or not one of ours: not up to date
        return False
    record = current()
    same_version = old.get("versions", {}).get("disc21spark") == versions()["disc21spark"]
    return (
        same_version
        and old.get("settings") == record.settings()
        and _comparable(old.get("inputs")) == _comparable(record.inputs(private))
    )


def _comparable(inputs: Any) -> list:
    return [(i.get("path"), i.get("sha256"), i.get("bytes")) for i in inputs or []]
