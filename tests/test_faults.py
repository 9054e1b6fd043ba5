"""The fault points the stop-and-kill tests hold a job at (``core/faults.py``)."""

from __future__ import annotations

import multiprocessing

from disc21spark.core import faults


def _hold_often(marker: str, times: int) -> None:
    faults.HOLD_SECONDS = 0
    for _ in range(times):
        faults._hold(marker)


def test_processes_reaching_one_hold_together_each_write_the_marker(tmp_path):
    """A pool's workers reach the same hold at once: each names itself in the marker and
    none fails (a part file shared by both was moved by one under the other)."""
    marker = str(tmp_path / "held.pid")
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_hold_often, args=(marker, 400)) for _ in range(3)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [w.exitcode for w in workers] == [0, 0, 0]
    assert int(open(marker).read()) in {w.pid for w in workers}
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith(".")] == ["held.pid"]
