"""A pool of local files scored in this machine's processes, with no JVM.

``engine.choose`` picks this for a pool whose every file is a local file the in-process
engine reads as Spark does. Each file is scored whole in a worker process of a
``ProcessPoolExecutor`` (one per core), exactly as a Spark task of the per-file plan
scores it (``per_file.task_outcome`` on the file's bytes), and its ``per_file.Outcome``
comes back to the pool job, which builds the boards as for Spark's tasks. The ground
truth is read once, here, and handed to the workers with the table of resample weights,
drawn once for the pool: the weights depend only on the seed and the queries.

Workers come from a fork server (a clean process that imported this module once), so no
state of the parent leaks into them. They ignore SIGINT (this process stops them) and
end once this process has ended: a pool killed or interrupted leaves no worker behind.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from disc21spark.core import faults
from disc21spark.core.errors import WorkersLost
from disc21spark.core.memory import BATCH_BYTES
from disc21spark.core.paths import display_path
from disc21spark.matching.inprocess import local
from disc21spark.matching.inprocess.board_rows import Board, as_submitted
from disc21spark.matching.inprocess.local_read import Pairs, iter_pairs
from disc21spark.matching.inprocess.source import Source
from disc21spark.matching.model import GroundTruth, MatchingMetrics, Settings
from disc21spark.matching.spark import per_file
from disc21spark.matching.spark.per_file import Outcome
from disc21spark.matching.stats import weighted

# a fresh process per worker, forked from a server that imported the scorer once (20
# files of 500,000 pairs, --resamples 0, 2 cores: 3.75 and 3.92 s; spawn, which imports
# numpy, Arrow and the scorer in each worker, 4.06 and 4.18 s; fork 3.52 and 4.42 s, with
# the parent's state and threads copied)
CONTEXT = "forkserver"
WATCH_SECONDS = 0.2  # how often a worker looks whether the pool's process is still there
_given: dict[str, Any] = {}  # a worker's share of the pool: what ``_start`` got


def _lost_because() -> str:
    """Why the workers may have ended. Every worker imports a script run as ``python
    script.py`` first (Python's rule for processes a fork server starts), so a script
    with no ``if __name__ == "__main__":`` starts the pool again in each: said then."""
    said = "a worker process of the pool ended before its file was scored"
    script = getattr(sys.modules.get("__main__"), "__file__", None)
    try:
        guarded = script is None or "__main__" in Path(script).read_text(errors="replace")
    except OSError:
        guarded = True
    if guarded:
        return f"{said} (killed, or out of memory?)"
    return (
        f"{said}: each worker imports {script} first, so a script that scores a pool "
        'must do so under `if __name__ == "__main__":`'
    )


def cores() -> int:
    """The cores this process may run on (its affinity, not the machine's count)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def score_files(
    inputs: Sequence[Any], gt: GroundTruth, settings: Settings, only: list[str] | None = None
) -> list[Outcome]:
    """One ``per_file.Outcome`` per local file of ``inputs`` (``resolve.ResolvedInput``,
    as the decision resolved them), in order, each file scored with ``settings``
    (``model.Settings``) in a worker process. ``only``: each file's rows of these query
    ids alone, scored on ``gt`` (a board's ground truth). Raises KeyboardInterrupt as
    the signal came, the workers stopped first."""
    state = {"only": None if only is None else pa.array(only, pa.string())}
    # the resample weights drawn once here for every worker: they depend only on the
    # seed and the queries
    return _run(inputs, gt, weighted.with_weights(gt, settings), state, _one)


def score_split(
    inputs: Sequence[Any], gt: GroundTruth, settings: Settings, boards: Sequence[Board]
) -> tuple[list[Outcome], list[list[Outcome | None]]]:
    """Each local file of ``inputs`` read once, in a worker: its ``Outcome`` as submitted
    (on ``gt``, with ``settings`` but no intervals: ``board_rows.as_submitted``), then,
    when valid, its ``Outcome`` on each board of
    ``boards`` (``board_rows.Board``: its rows of the board's queries, as ``score_files``
    with ``only`` scores them). Returns the outcomes as submitted, and per board one per
    file (None: invalid)."""
    # each board's weights drawn once here (a file as submitted is judged without them)
    state = {"boards": [(b_gt, weighted.with_weights(b_gt, s)) for b_gt, s in boards]}
    found = _run(inputs, gt, settings, state, _split_one)
    return [f[0] for f in found], [[f[1 + i] for f in found] for i in range(len(boards))]


def _run(inputs: Sequence[Any], gt: GroundTruth, settings: Settings, state: dict, task) -> list:
    """``task`` of each of ``inputs``, in order, in the worker processes; ``state``, with
    the ground truth, settings and weights, is what ``_given`` holds in each."""
    if not inputs:
        return []
    state.update(gt=gt, settings=settings, parent=os.getpid())
    context = multiprocessing.get_context(CONTEXT)
    if CONTEXT == "forkserver":
        context.set_forkserver_preload([__name__])
    workers = ProcessPoolExecutor(
        min(len(inputs), cores()), mp_context=context, initializer=_start, initargs=(state,)
    )
    try:
        return list(workers.map(task, inputs))
    except BaseException as exc:
        for process in list((workers._processes or {}).values()):
            process.terminate()  # a task under way is not waited for
        if isinstance(exc, (BrokenProcessPool, BrokenPipeError)):
            raise WorkersLost(_lost_because()) from exc
        raise
    finally:
        workers.shutdown(wait=True, cancel_futures=True)


def _start(state: dict) -> None:
    """A worker's start: the pool's share kept (its settings carry the weights); SIGINT left
    to the pool's process, which stops the workers; a thread ends the worker once the
    pool's process is gone (a SIGKILL gives it no time to stop them)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_watch, args=(state["parent"],), daemon=True).start()
    _given.update(state)


def _watch(parent: int) -> None:
    """End this process once ``parent`` has ended (a zombie not yet reaped has ended)."""
    while True:
        try:
            with open(f"/proc/{parent}/stat", "rb") as fh:
                ended = fh.read().rsplit(b")", 1)[1].split()[0] in (b"Z", b"X")
        except FileNotFoundError:
            ended = True
        except OSError:  # no /proc: asked of the kernel
            ended = not _exists(parent)
        if ended:
            os._exit(1)
        time.sleep(WATCH_SECONDS)


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    return True


def _read(resolved: Any) -> Source | Outcome:
    """The file's bytes as a ``Source``, or the Outcome of a file that cannot be read."""
    faults.at("in-process file")
    path = resolved.given
    try:
        with open(display_path(path), "rb") as fh:
            data = fh.read()
    except OSError as exc:
        return Outcome(error=(display_path(path), f"cannot be read ({exc.strerror or exc})", None))
    return Source.of_bytes(path, data, resolved)


def _one(resolved: Any) -> Outcome:
    """One file scored in a worker: what a Spark task of the per-file plan returns."""
    source = _read(resolved)
    if isinstance(source, Outcome):
        return source
    only = _given["only"]

    def score() -> MatchingMetrics:
        # a file judged valid as submitted, scored on a board: its rows of the board's
        # queries (cut here, so an error while cutting is the file's Outcome too)
        rows = source if only is None else _rows_of(source, only)
        return local.score_source(rows, _given["gt"], _given["settings"], announce=False)

    return per_file.outcome_of(score)


def _split_one(resolved: Any) -> tuple[Outcome | None, ...]:
    """One file read, parsed and labelled once in a worker: its Outcome as submitted,
    then when valid its Outcome on each board, cut from the same labelled rows (an error
    of one board's is that board's, the file still valid as submitted)."""
    boards = _given["boards"]
    source = _read(resolved)
    if isinstance(source, Outcome):
        return (source,) + (None,) * len(boards)
    on_board = None

    def judge() -> MatchingMetrics:
        nonlocal on_board
        metrics, on_board = as_submitted(source, _given["gt"], _given["settings"])
        return metrics

    judged = per_file.outcome_of(judge)
    if judged.metrics is None:
        return (judged,) + (None,) * len(boards)
    return (judged, *(per_file.outcome_of(lambda b=b: on_board(b)) for b in boards))


def _rows_of(source: Source, only: pa.Array) -> Source:
    """The file's checked pairs of the queries ``only`` (their ids) alone, as a table in
    memory."""
    kept: list[Pairs] = []
    for pairs in iter_pairs(source, BATCH_BYTES):
        mask = pc.is_in(pairs.query, value_set=only)
        keep = mask.to_numpy(zero_copy_only=False)
        kept.append(
            Pairs(pairs.query.filter(mask), pairs.reference.filter(mask), pairs.score[keep])
        )
    return _table(source, kept)


def _table(source: Source, kept: list[Pairs]) -> Source:
    query = pa.concat_arrays([p.query for p in kept]) if kept else pa.array([], pa.string())
    reference = pa.concat_arrays([p.reference for p in kept]) if kept else query
    score = np.concatenate([p.score for p in kept]) if kept else np.zeros(0)
    return Source.of_table(source.where, Pairs(query, reference, score), list(range(len(score))))
