"""Which engine scores an input, and which plan each submission follows: decided here,
from plain values, and handed to the jobs (none of them looks at a session to tell).
Engines: ``local`` (this process: Arrow and the numpy specification, no JVM) and
``spark`` (a SparkSession: local[*], a standalone cluster, YARN...). Plans, per run:

* ``per-file``: each submission file is scored whole by the in-process engine from its
  bytes: in this process (the local engine; one local file on Spark's driver) or in a
  Spark task of its own that reads the bytes through Spark (``binaryFile``: every path
  Spark reads, hdfs://, s3a://, gs://, abfs://, viewfs://...);
* ``distributed``: the distributed plan (``matching/spark/plan.py``, ``score.py``): the rows
  spread over the cluster, for files larger than one Python worker holds comfortably.

The rule (``--engine``, ``--pool-plan``, ``--local-max-bytes``; the docs hold it as a table):

1. a Spark DataFrame, ``--engine spark``, ``--master``, a one-table pool, the descriptor
   track, a path that is no local file (or an output URI): Spark; else the local engine,
   which reads one file in batches of ``batch_bytes`` (a sixteenth of ``local_max_bytes``;
   auto: ``in_process_limit``), whatever its size, and a pool of local files (each read
   alike by Arrow and Spark, within the per-file limit) in worker processes
   (``pool/in_process.py``), but under spark-submit, where a pool goes to its cluster.
   ``--engine local`` insists, and says why it cannot;
2. on Spark, plan ``auto`` is ``per-file`` when every submission file is read alike by
   Arrow (by its name: CSV, .gz, .bz2, Parquet with string ids) and at most
   ``local_max_bytes`` (auto: ``TASK_MAX_BYTES``, a task's share), whatever its file
   system; else ``distributed``. One submission with ``--engine spark`` asked for keeps
   the distributed plan unless per-file is asked.

``choose`` takes plain values; ``settle`` finishes it once Spark lists the inputs (the
files, the plan, why: ``Choice.reasons``, which ``--explain`` prints).
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from disc21spark.core import fs
from disc21spark.core.config import parse_limit, value
from disc21spark.core.errors import InputError
from disc21spark.core.memory import (  # noqa: F401 (the docs name them engine.*)
    BATCH_BYTES,
    PEAK_PER_BYTE,
    SMALLEST_BATCH,
    TASK_MAX_BYTES,
    batch_bytes,
    in_process_limit,
)
from disc21spark.core.paths import display_path, is_glob
from disc21spark.resolve import RunInputs, inputs_of, missing_local_file, not_local_around

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


ENGINES = ("auto", "spark", "local")
KINDS = ("one submission", "pool", "descriptor track")
PLANS = ("auto", "per-file", "distributed")
# 0.1.0's name of the distributed plan (it sorted the rows then, and no longer does): it
# still works for one release, with a warning (``plan_named``)
OLD_PLANS = {"one-sort": "distributed"}
INPUT_KINDS = ("path", "pandas", "arrow", "spark-dataframe")
# None: auto (in_process_limit in this process, TASK_MAX_BYTES in a Spark task)
LOCAL_MAX_BYTES: int | None = value("evaluate", "local_max_bytes", parse_limit)
log = logging.getLogger("disc21spark")


@dataclass(frozen=True)
class Choice:
    """The engine of a run (``local`` or ``spark``), its plan (``auto``, ``per-file``,
    ``distributed``: as asked until ``settle`` lists the inputs and settles it), what the
    input is (``kind``: one submission, a pool, the descriptor track), the submission
    files listed with their sizes in bytes, and why, one reason a rule applied."""

    engine: str
    plan: str = "auto"
    asked: str = "auto"  # the engine the user asked for
    local_max_bytes: int | None = LOCAL_MAX_BYTES
    # the local engine reads a file this many bytes at a time (matching/inprocess/batched.py,
    # ``batch_bytes``); None: no file (a table in memory), or not the local engine
    batch_bytes: int | None = None
    kind: str | None = None  # KINDS; None until settled (``choose`` knows it for local)
    files: tuple[tuple[str, int], ...] = ()
    reasons: tuple[str, ...] = field(default=(), compare=False)  # why, not what
    # every input resolved once (``resolve.inputs_of``, by ``settle``): None until settled
    inputs: RunInputs | None = field(default=None, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "plan", plan_named(self.plan))

    @property
    def needs_spark(self) -> bool:
        return self.engine == "spark"

    @property
    def listed(self) -> bool:
        """Whether ``settle`` listed the submission files (``files``): a read of them
        need not list them again."""
        return bool(self.files)

    @property
    def settled(self) -> bool:
        """The plan and the kind of input decided (``settle``): nothing left to decide."""
        return self.kind is not None and self.plan != "auto"

    def because(self, *reasons: str, **changes: Any) -> Choice:
        """This choice with ``changes`` and more reasons."""
        return replace(self, reasons=(*self.reasons, *reasons), **changes)

    def lines(self) -> list[str]:
        """The decision and its reasons, as ``--explain`` prints them."""
        kind = self.kind or "not known before Spark lists the inputs"
        head = [f"engine: {self.engine}", f"input: {kind}", f"plan: {self.plan}"]
        if self.batch_bytes:
            head.append(f"batches: {self.batch_bytes:,} bytes of the file at a time")
        head += [f"file: {display_path(f)} ({size:,} bytes)" for f, size in self.files]
        head += self.inputs.lines() if self.inputs is not None else []
        return head + [f"because: {why}" for why in self.reasons]

    def record(self) -> dict[str, Any]:
        """What ran, for the run record (metrics.json's and run.json's ``run.resolved``):
        the engine and plan as asked and as decided, the kind of input, every input
        resolved (``resolve.RunInputs.record``)."""
        inputs = self.inputs.record() if self.inputs is not None else {}
        return {
            "engine": self.engine,
            "engine_asked": self.asked,
            "plan": self.plan,
            "input": self.kind,
            "batch_bytes": self.batch_bytes,
            **inputs,
        }


def plan_named(name: str, warn: Callable[[str], None] | None = None) -> str:
    """``name`` as PLANS names it: an old name (``OLD_PLANS``) becomes its new one, after
    one warning: ``warn(text)`` (the command line's warning line), else a FutureWarning
    (the API, a job object)."""
    new = OLD_PLANS.get(name)
    if new is None:
        return name
    text = f"the plan {name!r} is now called {new!r} (the old name will be removed in the next release)"
    if warn is not None:
        warn(text)
    else:
        warnings.warn(text, FutureWarning, stacklevel=3)
    return new


LOCAL = Choice("local", "per-file", "local", kind="one submission")
DISTRIBUTED = Choice("spark", "distributed", "spark", kind="one submission")


def choose(
    predictions: Sequence[str] = (),
    ground_truth: str | None = None,
    *,
    track: str = "matching",
    engine: str = "auto",
    plan: str = "auto",
    local_max_bytes: int | None = LOCAL_MAX_BYTES,
    master: str | None = None,
    output: str | None = None,
    submission_column: str | None = None,
    predictions_format: str = "auto",
    input_kind: str = "path",
    pool: bool = True,
    side: Sequence[str | None] = (),
) -> Choice:
    """The engine for these inputs, before anything starts.

    Parameters: ``predictions`` the paths as given (empty for an in-memory input),
    ``ground_truth`` its path (None: in memory), ``track`` ``matching`` or
    ``descriptor``, ``engine`` one of ENGINES, ``plan`` one of PLANS,
    ``local_max_bytes`` bytes or None (auto: ``in_process_limit``), ``master`` the
    Spark master asked for, ``output`` the output folder, ``input_kind`` one of
    INPUT_KINDS (what ``predictions`` is), ``pool`` whether they may be a pool (False:
    one submission, the API's ``evaluate``), ``side`` other files read or written.

    Raises InputError when ``engine="local"`` cannot score these inputs (the message
    names the input and says to use the Spark engine).
    """
    plan = plan_named(plan)
    if engine not in ENGINES or plan not in PLANS or input_kind not in INPUT_KINDS:
        raise InputError("", f"unknown engine {engine!r}, plan {plan!r} or input {input_kind!r}")
    spark = Choice("spark", plan, engine, local_max_bytes)
    if input_kind == "spark-dataframe":
        if engine == "local":
            raise InputError("--engine local", "a Spark DataFrame is scored on Spark")
        return spark.because(
            "a Spark DataFrame is scored in its session",
            plan="distributed" if plan == "auto" else plan,
            kind="one submission",
        )
    if engine == "spark":
        return spark.because("--engine spark")
    around = not_local_around(ground_truth, output, side)
    if pool and track == "matching" and input_kind == "path" and not submission_column:
        found = _local_pool(predictions, predictions_format, spark, around, master)
        if found is not None:
            return found
    why = _not_local(track, predictions, submission_column, predictions_format, input_kind)
    why = why or around
    if engine == "local":
        if why:
            gone = missing_local_file([*predictions, *filter(None, [ground_truth])])
            if gone:  # Spark could not read it either: say so, not "use --engine spark"
                raise InputError(gone, "no such file or directory")
            raise InputError("--engine local", f"{why}; use --engine spark")
        return _local(predictions, engine, local_max_bytes, input_kind)
    if why or master:
        return spark.because(why or f"--master {master}")
    return _local(predictions, engine, local_max_bytes, input_kind)


def _local(
    predictions: Sequence[str], engine: str, local_max_bytes: int | None, input_kind: str
) -> Choice:
    """The local engine for one local file, read in batches sized from the in-process
    limit (a file past memory is scored on this machine too, not sent to Spark)."""
    batches = batch_bytes(in_process_limit(local_max_bytes)) if input_kind == "path" else None
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # started by spark-submit
        log.info(
            "spark-submit: one local file is scored in this process, with no Spark "
            "session (--engine spark: on Spark)"
        )
    what = "one local file" if input_kind == "path" else f"a table in memory ({input_kind})"
    return Choice("local", "per-file", engine, local_max_bytes, batches, "one submission").because(
        f"{what}: scored in this process, no Spark session"
        + (", read in batches whatever its size" if batches else "")
    )


def _not_local(
    track: str,
    predictions: Sequence[str],
    submission_column: str | None,
    fmt: str,
    input_kind: str,
) -> str | None:
    """Why the in-process engine cannot score these inputs, or None."""
    # here, not above: parsing a command line and --help need neither numpy nor Arrow
    from disc21spark.core import formats

    if track == "descriptor":
        return "the descriptor track runs on Spark"
    if submission_column or (input_kind == "path" and len(predictions) != 1):
        return "a table with a submission column runs on Spark"
    return formats.unsupported(predictions[0], fmt) if input_kind == "path" else None


def _local_pool(
    predictions: Sequence[str], fmt: str, spark: Choice, around: str | None, master: str | None
) -> Choice | None:
    """None when ``predictions`` is no pool (one file, a folder of part files, a URI);
    else the in-process pool's Choice (every file local, read alike by Arrow and Spark,
    at most the per-file plan's limit), or ``spark`` and why not (its last reason;
    ``around``: why the ground truth or the output needs Spark, or None). InputError
    when ``--engine local`` is asked (``spark.asked``) for a pool it cannot score."""
    from disc21spark.core import local_files

    if len(predictions) == 1 and not (is_glob(predictions[0]) or os.path.isdir(predictions[0])):
        return None
    why = "--pool-plan distributed" if spark.plan == "distributed" else None
    if not why and not all(map(local_files.listable, predictions)):
        why = f"{', '.join(predictions)}: a pool Spark lists"
    files = [] if why else [f for p in predictions for f in local_files.sized_files(p).items()]
    if len(predictions) == 1 and local_files.one_dataset(files):
        return None
    limit = (spark.local_max_bytes or TASK_MAX_BYTES) if spark.plan == "auto" else None
    why = why or next(filter(None, (_not_per_file(f, n, fmt, limit) for f, n in files)), None)
    if spark.asked == "local" and (why or around):
        raise InputError("--engine local", f"{why or around}; use --engine spark")
    # under spark-submit a pool goes to the session's cluster, as organisers submit it
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ and "spark-submit: a pool goes to its cluster"
    master = f"--master {master}" if master else submitted
    if why or around or (master and spark.asked != "local"):
        return spark.because(why or around or master)
    workers = min(len(files), len(os.sched_getaffinity(0)))
    return replace(spark, engine="local", plan="per-file", kind="pool", files=tuple(files)).because(
        f"a pool of {len(files)} local files read alike by Arrow and Spark: scored in "
        f"{workers} worker processes of this machine, no JVM"
    )


def settle(
    spark: SparkSession | None,
    choice: Choice,
    predictions: Sequence[str],
    *,
    track: str = "matching",
    submission_column: str | None = None,
    fmt: str = "auto",
    given: Any = None,
) -> Choice:
    """``choice`` with everything decided, once the session can list the inputs: what
    they are (one submission, a pool, the descriptor track), the submission files with
    their sizes, and the plan. Called once a run, before its job; the jobs read it.

    A pool: several paths, a glob, a folder of submissions (not of one dataset's part
    files) or a submission column. The plan (``--pool-plan``, ``--local-max-bytes``):
    ``per-file`` when every file is read alike by Arrow (by its name: CSV, .gz, .bz2,
    Parquet) and at most ``local_max_bytes`` (auto: ``TASK_MAX_BYTES``), else
    ``distributed``; one submission with ``--engine spark`` asked for keeps the
    distributed plan unless per-file is asked. Raises InputError when per-file is asked
    for files it cannot read, or a path names no file. Every input is resolved here too
    (``resolve.inputs_of``; ``given``: the request or job naming the ground truth, the
    query groups, the split and the output), carried by the choice as ``inputs``."""
    decided = _settled(spark, choice, predictions, track, submission_column, fmt)
    if decided.inputs is not None:
        return decided
    files = decided.files or [(path, None) for path in predictions]
    return replace(decided, inputs=inputs_of(files, fmt, given))


def _settled(
    spark: SparkSession | None,
    choice: Choice,
    predictions: Sequence[str],
    track: str,
    submission_column: str | None,
    fmt: str,
) -> Choice:
    """``settle``'s decision, its inputs not yet resolved."""
    if choice.settled or not choice.needs_spark:
        return choice
    if track == "descriptor":
        return choice.because(kind="descriptor track", plan="distributed")
    if submission_column:
        why = "a table with a submission column: the distributed plan reads it"
        return choice.because(why, kind="pool", plan=plan_of(choice, [("table:", None)])[0])
    listed = [tuple(fs.sized_files(spark, path).items()) for path in predictions]
    files = tuple(f for one in listed for f in one)
    if _is_pool(spark, predictions, listed[0]):
        plan, why = plan_of(choice, files, fmt)
        return choice.because(why, kind="pool", plan=plan, files=files)
    if len(files) != 1:
        why = f"{len(files)} part files of one submission: the distributed plan reads them"
        return choice.because(why, kind="one submission", plan="distributed", files=files)
    plan, why = plan_of(choice, files, fmt, pool=False)
    return choice.because(why, kind="one submission", plan=plan, files=files)


def _is_pool(spark: SparkSession, predictions: Sequence[str], first: tuple) -> bool:
    """Several paths, a glob, or a folder of submissions (not of one dataset's part files,
    ``first``: the first path's files as listed)."""
    path = predictions[0]
    if len(predictions) > 1 or is_glob(path):
        return True
    if not fs.is_directory(spark, path):
        return False
    return not all(PurePosixPath(f).name.startswith("part-") for f, _ in first)


def plan_of(
    choice: Choice, files: Sequence[tuple[str, int | None]], fmt: str = "auto", pool: bool = True
) -> tuple[str, str]:
    """(``per-file`` or ``distributed``, why) for the submission files ``(path or
    "table:<name>", size in bytes or None)`` of a run on Spark; ``pool``: several
    submissions."""
    plan = choice.plan
    if not choice.needs_spark:
        return "per-file", "the local engine: in this process"
    if plan == "distributed":
        return plan, "--pool-plan distributed"
    if not files:
        return "distributed", "no file listed"
    if plan == "auto" and not pool and choice.asked == "spark":
        return "distributed", "one submission with --engine spark: the rows spread over Spark"
    limit = (choice.local_max_bytes or TASK_MAX_BYTES) if plan == "auto" else None
    why = next(filter(None, (_not_per_file(path, size, fmt, limit) for path, size in files)), None)
    if why is None:
        size = f"at most {limit:,} bytes" if limit else "any size"
        return "per-file", f"every file read alike by Arrow and Spark, {size}: one task a file"
    if plan == "per-file":
        raise InputError("--pool-plan per-file", f"{why}; use --pool-plan distributed")
    return "distributed", why


def _not_per_file(path: str, size: int | None, fmt: str, max_bytes: int | None) -> str | None:
    from disc21spark.core import formats

    if path.startswith("table:"):
        return "a table with a submission column"
    why = formats.format_problem(path, fmt, formats.local_path(path))
    if why is not None:
        return why
    if max_bytes is not None and (size is None or size > max_bytes):
        return (
            f"{path}: {size:,} bytes, more than --local-max-bytes"
            if size
            else f"{path}: size unknown"
        )
    return None
