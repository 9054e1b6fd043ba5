"""A pool of local files scored in worker processes, with no JVM (issue 46): the same
boards, to the bit, as Spark's per-file plan; no Java needed; a bad file marks its
submission alone; a kill or an interrupt leaves no output and no worker behind."""

from __future__ import annotations

import gzip
import json
import os
import re
import signal
import subprocess
import sys
from collections import Counter
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import psutil
import pyarrow as pa
import pytest

from disc21spark import resolve
from disc21spark.core import faults
from disc21spark.core.errors import InputError
from disc21spark.matching.inprocess import batched, board_rows
from disc21spark.matching.inprocess.local_read import iter_pairs
from disc21spark.matching.model import Settings
from disc21spark.matching.spark import per_file
from disc21spark.matching.stats import weighted, weights
from disc21spark.matching.stats.model import Resampling
from disc21spark.pool import in_process as pool_in_process
from disc21spark.pool.split import PRIVATE, PUBLIC, Split
from tests.conftest import ROOT, cli_env, held_pid
from tests.helpers import assert_same, assert_same_uncertainty
from tests.pool_helpers import GT, ground_truth, random_submission
from tests.running import in_process, snapshot, succeed


@pytest.fixture(scope="module")
def pool(tmp_path_factory) -> Path:
    """Four teams (one gzipped, one Parquet), a file with a bad row and a damaged gzip."""
    root = tmp_path_factory.mktemp("in_process")
    GT.to_csv(root / "gt.csv", index=False)
    rng = np.random.default_rng(46)
    (root / "pool").mkdir()
    for i in range(4):
        frame = random_submission(rng, 400)
        if i == 1:
            frame.to_csv(root / "pool" / f"team{i}.csv.gz", index=False)
        elif i == 2:
            frame.to_parquet(root / "pool" / f"team{i}.parquet", index=False)
        else:
            frame.to_csv(root / "pool" / f"team{i}.csv", index=False)
    (root / "pool" / "bad_row.csv").write_text("query_id,reference_id,score\nQ1,R1,0.5\nQ2,R2\n")
    whole = gzip.compress(b"query_id,reference_id,score\n" + b"Q1,R1,0.5\n" * 2000)
    (root / "pool" / "damaged.csv.gz").write_bytes(whole[: len(whole) // 2])
    (root / "private.csv").write_text("query_id\n" + "".join(f"Q{i}\n" for i in range(0, 40, 2)))
    return root


def argv(root: Path, out: Path, *more: str) -> list[str]:
    gt = ["--ground-truth", str(root / "gt.csv"), "--predictions", str(root / "pool" / "*")]
    return ["evaluate", *gt, "--output", str(out), "--overwrite", "--resamples", "50", *more]


def board_files(folder: Path) -> dict[str, object]:
    """Every file of a board, its run record left out (the engine, the times, the command):
    leaderboard.json without its run block, leaderboard.html without its run record."""
    found = {}
    for name, data in snapshot(folder).items():
        if name == "run.json" or data is None:
            continue
        if name.endswith("leaderboard.json"):
            data = {k: v for k, v in json.loads(data).items() if k != "run"}
        elif name.endswith(".html"):
            text = re.sub(r'<pre id="run">.*?</pre>', "", data.decode(), flags=re.S)
            data = re.sub(r" · run started [^<]*", "", text)
        found[name] = data
    return found


@pytest.mark.parametrize("split", [False, True], ids=["unsplit", "private-queries"])
def test_a_local_pool_in_process_equals_the_per_file_plan_on_spark(spark, pool, tmp_path, split):
    more = ["--per-query"]
    if split:
        more += ["--private-queries", str(pool / "private.csv")]
    outs = {}
    for engine, session in (("local", None), ("spark", spark)):
        out, private = tmp_path / engine, tmp_path / f"{engine}_private"
        extra = ["--private-output", str(private)] if split else []
        succeed(session, [*argv(pool, out, *more, *extra), "--engine", engine])
        outs[engine] = (out, private)
        run = json.loads((out / "run.json").read_text())
        assert run["engine"] == engine
    for a, b in zip(outs["local"], outs["spark"]):
        if split or a == outs["local"][0]:
            found, wanted = board_files(a), board_files(b)
            assert sorted(found) == sorted(wanted)
            # the board, its curves, replicates and per-query tables, all compared
            assert {"leaderboard.csv", "leaderboard.tex", "queries.csv"} <= set(wanted)
            assert any(n.startswith("resamples/") for n in wanted)
            for name in wanted:
                assert found[name] == wanted[name], name
    rows = {
        r["submission"]: r
        for r in json.loads((outs["local"][0] / "leaderboard.json").read_text())["submissions"]
    }
    assert [n for n, r in rows.items() if r["status"] != "ok"] == ["bad_row", "damaged"]
    assert "line 3" in rows["bad_row"]["reason"] and "damaged.csv.gz" in rows["damaged"]["reason"]
    assert all(rows[f"team{i}"]["micro_ap"] is not None for i in range(4))


def test_a_split_pool_in_process_reads_each_file_once(pool, tmp_path):
    """With --private-queries, validity and both boards come from one read of each file in
    one round of workers: the run has no board phase (each board used to read every
    valid file again, in a round of workers of its own)."""
    out, private = tmp_path / "out", tmp_path / "private"
    split = ["--private-queries", str(pool / "private.csv"), "--private-output", str(private)]
    succeed(None, [*argv(pool, out, *split), "--engine", "local"])
    for folder in (out, private):
        run = json.loads((folder / "run.json").read_text())
        assert run["engine"] == "local"
        assert "score" in run["phase_seconds"] and "board" not in run["phase_seconds"]
    rows = json.loads((private / "leaderboard.json").read_text())["submissions"]
    assert sorted(r["submission"] for r in rows if r["status"] == "ok") == [
        f"team{i}" for i in range(4)
    ]


def same_outcome(found, wanted) -> None:
    """Two ``per_file.Outcome`` equal to the bit: the error, or every figure, the curve,
    the warnings, the intervals' replicates and the per-query table."""
    assert (found.error, found.needs_spark) == (wanted.error, wanted.needs_spark)
    if wanted.metrics is None:
        assert found.metrics is None
        return
    assert_same(found.metrics, wanted.metrics)
    assert found.metrics.warnings == wanted.metrics.warnings
    if wanted.metrics.uncertainty is None:
        assert found.metrics.uncertainty is None
    else:
        assert_same_uncertainty(found.metrics.uncertainty, wanted.metrics.uncertainty)
    pd.testing.assert_frame_equal(found.metrics.queries, wanted.metrics.queries, check_exact=True)


def test_a_pools_resample_weights_are_drawn_once_and_handed_to_every_file(pool, monkeypatch):
    """The weights depend only on the seed and the queries: the pool draws them once (a
    board once for its queries) and every worker's file reads them from its settings;
    none is drawn again in a worker (it was a module-level table, filled per process)."""
    files = [resolve.resolve(str(p), submission=True) for p in sorted((pool / "pool").iterdir())]
    gt = ground_truth()
    settings = Settings(0, 50, Resampling(30, 0.9, 3))
    draws = []
    real = weights.Table.draw.__func__

    def counted(cls, keys, resamples):
        draws.append(len(keys))
        return real(cls, keys, resamples)

    def here(inputs, gt, settings, state, task):  # the workers' task, in this process
        monkeypatch.setattr(pool_in_process, "_given", {**state, "gt": gt, "settings": settings})
        return [task(one) for one in inputs]

    monkeypatch.setattr(weights.Table, "draw", classmethod(counted))
    monkeypatch.setattr(pool_in_process, "_run", here)
    found = pool_in_process.score_files(files, gt, settings)
    assert draws == [gt.n_queries]
    for one, outcome in zip(files, found):  # the same bits as a file drawing its own
        alone = per_file.task_outcome(pool_in_process._read(one), gt, settings)
        assert outcome.error == alone.error
        if alone.metrics is not None:
            assert_same(outcome.metrics, alone.metrics)
            assert_same_uncertainty(outcome.metrics.uncertainty, alone.metrics.uncertainty)
    assert sum(o.metrics is not None for o in found) == 4
    split = Split("private.csv", np.arange(40) % 2 == 0, "")
    boards = [(split.board(gt, name), settings) for name in (PUBLIC, PRIVATE)]
    draws[:] = []
    pool_in_process.score_split(files, gt, settings, boards)
    assert draws == [b.n_queries for b, _ in boards]
    # weights drawn for one ground truth are refused on another (a board's)
    drawn = weighted.with_weights(gt, settings)
    with pytest.raises(ValueError, match="another ground truth"):
        per_file.task_outcome(pool_in_process._read(files[-1]), boards[0][0], drawn)


@pytest.mark.parametrize("batch_bytes", [None, 300], ids=["one batch", "many batches"])
def test_a_split_file_is_parsed_once_and_each_board_equals_its_rows_alone(
    pool, tmp_path, monkeypatch, batch_bytes
):
    """A worker's file with --private-queries is parsed as often as the file scored alone
    (``iter_pairs`` once, and once more for a file whose ids the coverage check reads
    again), and each board's Outcome is, to the bit, its rows of the board's queries alone
    scored on the board's ground truth (what a worker computed from a second parse
    before): the figures, intervals, per-query table and warnings (a board without a true
    pair looks at the ids again), and a bad file's error with no board."""
    wrong = pd.DataFrame(  # true pairs of public queries alone: none on the private board
        {
            "query_id": [f"Q{i}" for i in range(40)],
            "reference_id": [f"R{i + 1 - i % 2}" for i in range(40)],
        }
    ).assign(score=np.linspace(0, 1, 40))
    wrong.to_csv(tmp_path / "wrong.csv", index=False)
    paths = sorted((pool / "pool").iterdir()) + [tmp_path / "wrong.csv"]
    files = [resolve.resolve(str(path), submission=True) for path in paths]
    gt = ground_truth()
    split = Split("private.csv", np.arange(40) % 2 == 0, "")
    settings = Settings(0, 50, Resampling(30, 0.9, 3), per_query=True, batch_bytes=batch_bytes)
    boards = [(split.board(gt, name), settings) for name in (PUBLIC, PRIVATE)]
    parsed = []

    def counted(source, *args):  # a file's bytes parsed (not rows already in memory)
        if source.format != "table":
            parsed.append(source.where)
        return iter_pairs(source, *args)

    def here(inputs, gt, settings, state, task):  # the workers' task, in this process
        monkeypatch.setattr(pool_in_process, "_given", {**state, "gt": gt, "settings": settings})
        return [task(one) for one in inputs]

    monkeypatch.setattr(pool_in_process, "_run", here)
    for module in (batched, pool_in_process):
        monkeypatch.setattr(module, "iter_pairs", counted)
    # as submitted, a file is judged (its validity and warnings) with no intervals
    alone = pool_in_process.score_files(files, gt, replace(settings, resampling=None))
    once, parsed[:] = Counter(parsed), []
    submitted, on = pool_in_process.score_split(files, gt, settings, boards)
    assert Counter(parsed) == once and once[str(tmp_path / "wrong.csv")] == 1
    assert len(once) == len(files)
    assert [o.error is None for o in submitted] == [False, False] + [True] * 5
    assert on[1][-1].metrics.n_true_positives == 0 and on[1][-1].metrics.warnings
    for i, one in enumerate(files):
        source = pool_in_process._read(one)
        same_outcome(submitted[i], alone[i])
        for (b_gt, _), outcomes, name in zip(boards, on, (PUBLIC, PRIVATE)):
            if submitted[i].error is not None:
                assert outcomes[i] is None
                continue
            ids = pa.array(split.query_ids(gt, name), pa.string())
            rows = pool_in_process._rows_of(source, ids)
            same_outcome(outcomes[i], per_file.task_outcome(rows, b_gt, settings))


def test_an_error_on_one_board_is_that_boards_alone(pool, monkeypatch):
    """A board's scoring that raises InputError ends that board's Outcome with its error;
    the file stays valid as submitted and on the other board (one try for all three
    marked the whole file invalid)."""
    files = [resolve.resolve(str(pool / "pool" / "team0.csv"), submission=True)]
    gt = ground_truth()
    split = Split("private.csv", np.arange(40) % 2 == 0, "")
    boards = [(split.board(gt, name), Settings(0, 50)) for name in (PUBLIC, PRIVATE)]
    private_gt = boards[1][0]
    score = board_rows._on_board

    def failing(source, kept, known, board):
        if board[0] is private_gt:
            raise InputError(source.where, "a reason of the private board's", "line 7")
        return score(source, kept, known, board)

    def here(inputs, gt, settings, state, task):  # the workers' task, in this process
        monkeypatch.setattr(pool_in_process, "_given", {**state, "gt": gt, "settings": settings})
        return [task(one) for one in inputs]

    monkeypatch.setattr(pool_in_process, "_run", here)
    monkeypatch.setattr(board_rows, "_on_board", failing)
    (submitted,), (public, private) = pool_in_process.score_split(
        files, gt, Settings(0, 50), boards
    )
    assert submitted.error is None and submitted.metrics is not None
    assert public[0].error is None and public[0].metrics is not None
    assert private[0].metrics is None
    assert private[0].error[1:] == ("a reason of the private board's", "line 7")


def test_a_local_pool_needs_no_java(pool, tmp_path):
    """No Java on the path and JAVA_HOME wrong: a run that tried Spark would stop on it."""
    env = {
        **cli_env(),
        "JAVA_HOME": str(tmp_path / "no-java"),
        "PATH": str(Path(sys.executable).parent),
    }
    args = argv(pool, tmp_path / "out")[1:]
    done = subprocess.run(
        [sys.executable, str(ROOT / "jobs" / "evaluate.py"), *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "4 scored, 2 invalid" in done.stdout
    assert json.loads((tmp_path / "out" / "run.json").read_text())["spark_application_id"] is None


def test_explain_names_the_in_process_engine(pool, tmp_path, capsys):
    screen = in_process([*argv(pool, tmp_path / "out"), "--explain"], capsys, None)
    assert screen.code == 0, screen.err
    assert "engine: local" in screen.out and "input: pool" in screen.out
    assert "worker processes of this machine, no JVM" in screen.out


def started_by(driver, worker):
    """The processes a run started: the held worker by its own pid (a listing of the
    driver's descendants has been seen to miss it on a loaded machine) and the driver's
    descendants. One that ends while being listed is already gone, which is what the
    caller checks, so it is left out (psutil raised NoSuchProcess here once in CI)."""
    tree = []
    for listed in (
        lambda: [psutil.Process(worker)],
        lambda: psutil.Process(driver).children(recursive=True),
    ):
        try:
            tree += [p for p in listed() if p not in tree]
        except psutil.NoSuchProcess:
            pass
    return tree


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT], ids=["SIGKILL", "SIGINT"])
def test_a_pool_stopped_mid_run_leaves_no_output_and_no_worker(pool, tmp_path, how):
    """The driver stopped while its workers score: the previous output as it was, nothing
    beside it, and every process it started gone."""
    out = tmp_path / "out"
    succeed(None, argv(pool, out))
    before = snapshot(out)
    marker = tmp_path / "held.pid"
    proc = subprocess.Popen(
        [sys.executable, str(ROOT / "jobs" / "evaluate.py"), *argv(pool, out)[1:]],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**cli_env(), faults.HOLD_AT: f"in-process file:{marker}"},
        start_new_session=True,
    )
    try:
        worker = held_pid(proc, marker, "a worker")
        assert worker != proc.pid
        # every process the run started, the held worker named by its own pid (a listing
        # of the driver's descendants has been seen to miss it on a loaded machine)
        tree = started_by(proc.pid, worker)
        os.kill(proc.pid, how)
        printed = "".join(proc.communicate(timeout=120))
        gone, alive = psutil.wait_procs(tree, timeout=60)
        assert not alive, f"left running after {how!r}: {alive}"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    if how == signal.SIGINT:
        assert proc.returncode == 130, printed[-3000:]
    assert snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.startswith(".")) == [
        "held.pid",
        "out",
    ]
