"""Spark's fixed costs of a tiny run: how many Spark jobs and py4j round trips a 400-pair
``evaluate`` on Spark makes once the session is up (issue 47's limits: 3 jobs, 200
calls). Every DataFrame expression built in Python is a py4j call, and its release
another; every action under adaptive execution runs a job per exchange. Those, not the
rows, are what a small run pays for."""

from __future__ import annotations

import gc

import pytest

import disc21spark as ds
from tests.helpers import py4j_calls, tiny_inputs

MAX_JOBS = 3
MAX_CALLS = 200


@pytest.mark.xfail(
    strict=False,
    reason="issue 47: 5 Spark jobs and 900-1,100 py4j calls on 2026-12-06 (18 and 1,500-1,800 "
    "before a small input got a static plan and its census's slices from the file's size; "
    "3,811 calls before the plan's expressions were SQL text; docs/design.md, Cost model): "
    "not reached yet",
)
def test_a_tiny_evaluate_on_spark_makes_few_jobs_and_py4j_calls(spark, tmp_path):
    gt, predictions = tiny_inputs(tmp_path)
    wanted = ds.evaluate(gt, predictions, engine="local")
    tracker = spark.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup())
    with py4j_calls() as calls:
        found = ds.evaluate(gt, predictions, engine=spark)
        gc.collect()  # proxies in reference cycles released now, counted with the run
    jobs = len(set(tracker.getJobIdsForGroup()) - before)
    assert found.to_dict() == wanted.to_dict()
    assert jobs <= MAX_JOBS and calls[0] <= MAX_CALLS, f"{jobs} Spark jobs, {calls[0]} py4j calls"


def test_a_tiny_evaluate_on_spark_stays_within_five_jobs(spark, tmp_path):
    """What the static plan of a small input reached (issue 47): a 400-pair evaluate on
    Spark in at most 5 Spark jobs (18 under adaptive execution), the figures the
    in-process engine's. Guards the count the limits above are not yet met for."""
    gt, predictions = tiny_inputs(tmp_path)
    wanted = ds.evaluate(gt, predictions, engine="local")
    tracker = spark.sparkContext.statusTracker()
    before = set(tracker.getJobIdsForGroup())
    found = ds.evaluate(gt, predictions, engine=spark)
    jobs = len(set(tracker.getJobIdsForGroup()) - before)
    assert found.to_dict() == wanted.to_dict()
    assert jobs <= 5, f"{jobs} Spark jobs"
