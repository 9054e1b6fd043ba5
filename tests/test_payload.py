"""The Spark bootstrap's counts between processes (disc21spark/matching/stats/payload.py):
blocks that add up on any split of the rows, back bit for bit, small and narrow."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from disc21spark.matching.stats import groups, payload, weighted
from disc21spark.matching.stats.groups_file import QueryGroups
from disc21spark.matching.stats.model import Resampling
from disc21spark.matching.stats.weights import query_keys
from tests.helpers import weighing


@settings(max_examples=60, deadline=None)
@given(
    levels=st.integers(1, 40),
    code_levels=st.none() | st.lists(st.integers(0, 6), min_size=1, max_size=4),
    resamples=st.integers(0, 50),
    partitions=st.integers(1, 5),
    spread=st.sampled_from([0, 100, 30_000, 2**40]),
    seed=st.integers(0, 2**32 - 1),
)
def test_the_partitions_blocks_add_up_to_the_whole(
    levels, code_levels, resamples, partitions, spread, seed
):
    rng = np.random.default_rng(seed)
    shapes = payload.count_shapes(levels, code_levels, resamples)
    parts = [[rng.integers(0, spread + 1, shape) for shape in shapes] for _ in range(partitions)]
    sent: dict[int, list[bytes]] = {}
    for one in parts:
        # small blocks, so that arrays straddle them
        for number, data in payload.blocks(one, size=37):
            assert len(data) <= 9 + 8 * 37
            sent.setdefault(number, []).append(data)
    summed = {number: payload.unpack(payload.add(data)) for number, data in sent.items()}
    got = payload.assemble(summed, shapes)
    for i, shape in enumerate(shapes):
        want = sum(one[i] for one in parts)
        assert got[i].shape == shape and got[i].dtype == np.int64
        np.testing.assert_array_equal(got[i], want)


def test_counts_that_differ_by_hundreds_travel_in_two_bytes():
    values = 2**45 + np.arange(0, 30_000, 3, dtype=np.int64)
    packed = payload.pack(values)
    assert packed[0] == 2 and len(packed) == 9 + 2 * len(values)
    np.testing.assert_array_equal(payload.unpack(packed), values)
    # a negative difference is none: the base is the least value
    assert payload.unpack(payload.pack(np.array([-5, 7]))).tolist() == [-5, 7]


def test_the_shapes_are_the_counters_own():
    rng = np.random.default_rng(3)
    codes = rng.integers(0, 3, 9).astype(np.int32)  # two groups, and 2: in none
    two = QueryGroups("groups.csv", ("a", "b"), codes, np.bincount(codes, minlength=2)[:2], "")
    r = Resampling(11, 0.95, 1, groups=two)
    score, query = rng.random(50), rng.integers(-1, 9, 50)  # -1: a query the truth lacks
    keys = query_keys(np.arange(9), seed=2)
    fixed = query < 0
    levels = weighted.levels_of(rng.random(6))
    by_code = [weighted.levels_of(rng.random(k)) for k in (2, 0, 4)]
    drawn = weighing(r, keys)
    made = [
        *weighted.miss_counts(
            weighted.Reach.of(levels, score), keys[np.maximum(query, 0)], fixed, drawn
        ),
        *groups.code_miss_counts(by_code, score, query, drawn),
    ]
    shapes = payload.count_shapes(len(levels), [len(lv) for lv in by_code], r.resamples)
    assert [m.shape for m in made] == shapes


def test_a_missing_block_or_a_wrong_size_is_refused():
    shapes = [(2, 3), (2,)]
    with pytest.raises(ValueError, match="not 0"):
        payload.assemble({0: np.zeros(4, np.int64), 2: np.zeros(4, np.int64)}, shapes)
    with pytest.raises(ValueError, match="7 counts"):
        payload.assemble({0: np.zeros(7, np.int64)}, shapes)
    with pytest.raises(ValueError, match="no block"):
        payload.add([])
