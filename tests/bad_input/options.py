"""Option values, refused before anything starts."""

from __future__ import annotations

from tests.bad_input.common import (
    MATCHING_FILES,
    OPT,
    OUT,
    Case,
    evaluate,
    matching,
    scores_like_clean,
    text,
    with_gt,
)
from tests.bad_input.descriptors import descriptors, evaluate_descriptors
from tests.bad_input.images import EXTRACT, MAKE_QUERIES, library_with
from tests.bad_inputs import (
    CLEAN,
)

# ----------------------------------------------------------------------- options


def usage(id: str, input: str, command: list[str], sees: str, setup=None, **kw) -> Case:
    """A bad option: refused before Spark starts (``none`` fails if a session is asked for)."""
    return Case(id, OPT, input, command, 2, sees, setup, engines=kw.pop("engines", ("none",)), **kw)


EVAL = evaluate("{d}/p.csv")
DESC = evaluate_descriptors()
LIBRARY = ["make-library", "--output", "{d}/out", "--size", "3"]
EXTRACT_BENCH = ["extract", "--bench", "{bench}", "--method", "tiny", "--output", "{d}/out"]
RANK = ["rank-eval", "--bench", "{bench}", "--output", "{d}/out", "--methods", "tiny"]
EVAL_RANGE = "error: --max-results must be ≥ 0, --sort-partitions ≥ 1 and --curve-points ≥ 2"
KNN_RANGE = "error: --knn, --max-dim and --nprobe must be ≥ 1"
RANK_RANGE = "error: --knn and --subsets must be ≥ 1, --resamples ≥ 10, --seed ≥ 0"
MQ_RANGE = "error: --seed must be ≥ 0 and --image-partitions ≥ 1"
CASES: list[Case] = [
    usage(
        "opt-max-results-negative", "--max-results -1", [*EVAL, "--max-results", "-1"], EVAL_RANGE
    ),
    usage(
        "opt-partitions-zero", "--sort-partitions 0", [*EVAL, "--sort-partitions", "0"], EVAL_RANGE
    ),
    usage(
        "opt-partitions-negative",
        "--sort-partitions -3",
        [*EVAL, "--sort-partitions", "-3"],
        EVAL_RANGE,
    ),
    usage("opt-curve-points-zero", "--curve-points 0", [*EVAL, "--curve-points", "0"], EVAL_RANGE),
    usage(
        "opt-max-results-text",
        "--max-results ten",
        [*EVAL, "--max-results", "ten"],
        "error: argument --max-results: invalid int value: 'ten'",
    ),
    usage(
        "opt-local-max-bytes",
        "--local-max-bytes -1",
        [*EVAL, "--local-max-bytes", "-1"],
        "error: argument --local-max-bytes: '-1': a size must be positive",
    ),
    usage(
        "opt-local-max-bytes-word",
        "--local-max-bytes lots",
        [*EVAL, "--local-max-bytes", "lots"],
        "error: argument --local-max-bytes: 'lots' is not a size such as 2G or 512M or auto",
    ),
    matching(
        "opt-max-results-absurd",
        OPT,
        "--max-results 10^30 (absurd, but only a limit)",
        with_gt(text("p.csv", CLEAN)),
        0,
        "the clean file's figures",
        extra=("--max-results", str(10**30)),
        check=scores_like_clean,
    ),
    matching(
        "opt-curve-points-absurd",
        OPT,
        "--curve-points 10^12 (more than there are points)",
        with_gt(text("p.csv", CLEAN)),
        0,
        "the clean file's figures",
        extra=("--curve-points", str(10**12)),
        check=scores_like_clean,
    ),
    Case(
        "opt-partitions-absurd",
        OPT,
        "--sort-partitions 100000 (more than there are rows)",
        [*EVAL, "--sort-partitions", "100000"],
        0,
        "the clean file's figures",
        with_gt(text("p.csv", CLEAN)),
        outputs=MATCHING_FILES,
        check=scores_like_clean,
    ),
    usage("opt-knn-zero", "--knn 0", [*DESC, "--knn", "0"], KNN_RANGE),
    usage("opt-nprobe-zero", "--nprobe 0", [*DESC, "--nprobe", "0"], KNN_RANGE),
    usage("opt-max-dim-zero", "--max-dim 0", [*DESC, "--max-dim", "0"], KNN_RANGE),
    usage(
        "opt-query-partitions-zero",
        "--query-partitions 0",
        [*DESC, "--query-partitions", "0"],
        "error: --query-partitions must be ≥ 1",
    ),
    usage(
        "opt-broadcast-limit-zero",
        "--broadcast-limit 0",
        [*DESC, "--broadcast-limit", "0"],
        "error: argument --broadcast-limit: '0': a size must be positive",
    ),
    usage(
        "opt-score-norm-neighbors",
        "--score-norm-neighbors 0..1",
        [*DESC, "--score-norm-neighbors", "0..1"],
        "error: argument --score-norm-neighbors: '0..1': need 1 ≤ a ≤ b",
    ),
    usage(
        "opt-descriptor-max-results-zero",
        "descriptor track with --max-results 0",
        [c for c in DESC if c not in ("--knn", "2")] + ["--max-results", "0"],
        "error: the descriptor track needs --max-results ≥ 1 (or --knn K)",
    ),
    Case(
        "opt-knn-absurd",
        OPT,
        "--knn 10^9 (more than there are references)",
        [*DESC, "--knn", str(10**9)],
        0,
        "every pair found, as with --knn 5",
        descriptors(),
        outputs=MATCHING_FILES,
    ),
    usage(
        "opt-library-size-zero",
        "make-library --size 0",
        [*LIBRARY, "--size", "0"],
        "error: size must be a positive integer, got 0",
    ),
    usage(
        "opt-library-size-negative",
        "make-library --size -1",
        [*LIBRARY, "--size", "-1"],
        "error: size must be a positive integer, got -1",
    ),
    usage(
        "opt-library-size-absurd",
        "make-library --size 10^12",
        [*LIBRARY, "--size", str(10**12)],
        "error: --size must be at most 10,000,000",
    ),
    usage(
        "opt-library-width-zero",
        "make-library --width 0",
        [*LIBRARY, "--width", "0"],
        "error: width must be in [16, 8192], got 0",
    ),
    usage(
        "opt-library-width-absurd",
        "make-library --width 10^6",
        [*LIBRARY, "--width", str(10**6)],
        "error: width must be in [16, 8192], got 1000000",
    ),
    usage(
        "opt-library-height-negative",
        "make-library --height -5",
        [*LIBRARY, "--height", "-5"],
        "error: height must be in [16, 8192], got -5",
    ),
    usage(
        "opt-library-seed-negative",
        "make-library --seed -1",
        [*LIBRARY, "--seed", "-1"],
        "error: seed must be a non-negative integer, got -1",
    ),
    usage(
        "opt-queries-per-test-zero",
        "make-queries --queries-per-test 0",
        [*MAKE_QUERIES, "--queries-per-test", "0"],
        "error: --queries-per-test: must be at least 1 (got 0)",
    ),
    usage(
        "opt-queries-per-test-negative",
        "make-queries --queries-per-test -4",
        [*MAKE_QUERIES, "--queries-per-test", "-4"],
        "error: --queries-per-test: must be at least 1 (got -4)",
    ),
    Case(
        "opt-queries-per-test-absurd",
        OPT,
        "make-queries --queries-per-test 10^9",
        [*MAKE_QUERIES, "--queries-per-test", str(10**9)],
        2,
        "error: --queries-per-test 1000000000: needs 1000000000 distinct source images; the "
        "library has 4 usable (4 files, 0 unreadable, 0 too small for the tests)",
        library_with(None),
    ),
    usage(
        "opt-distractors-negative",
        "make-queries --distractors -0.5",
        [*MAKE_QUERIES, "--distractors", "-0.5"],
        "error: --distractors: is a fraction in [0, 1) (got -0.5)",
    ),
    usage(
        "opt-distractors-one",
        "make-queries --distractors 1",
        [*MAKE_QUERIES, "--distractors", "1"],
        "error: --distractors: is a fraction in [0, 1) (got 1)",
    ),
    usage(
        "opt-distractors-nan",
        "make-queries --distractors nan",
        [*MAKE_QUERIES, "--distractors", "nan"],
        "error: --distractors: is a fraction in [0, 1) (got nan)",
    ),
    usage("opt-queries-seed", "make-queries --seed -1", [*MAKE_QUERIES, "--seed", "-1"], MQ_RANGE),
    usage(
        "opt-queries-partitions",
        "make-queries --image-partitions 0",
        [*MAKE_QUERIES, "--image-partitions", "0"],
        MQ_RANGE,
    ),
    # an option of the other track is refused, not ignored
    usage(
        "opt-descriptor-resamples",
        "descriptor track with --resamples 50 (it computes no interval)",
        [*DESC, "--resamples", "50"],
        "error: --resamples is for the matching track: the descriptor track computes no "
        "interval (score its --write-predictions file for them)",
    ),
    usage(
        "opt-descriptor-seed",
        "descriptor track with --seed 3",
        [*DESC, "--seed", "3"],
        "error: --seed is for the matching track: the descriptor track computes no "
        "interval (score its --write-predictions file for them)",
    ),
    usage(
        "opt-descriptor-pool-plan",
        "descriptor track with --pool-plan per-file",
        [*DESC, "--pool-plan", "per-file"],
        "error: --pool-plan is for a pool of predictions files, not the descriptor track",
    ),
    usage(
        "opt-matching-knn",
        "matching track with --knn 10 (a descriptor search option)",
        [*EVAL, "--knn", "10"],
        "error: --knn is for the descriptor track (--query-descriptors ...)",
    ),
    usage(
        "opt-sheet",
        "make-queries --sheet-per-test -1",
        [*MAKE_QUERIES, "--sheet-per-test", "-1"],
        "error: --sheet-per-test must be ≥ 0",
    ),
    usage(
        "tests-empty",
        "--tests '' (empty)",
        [*MAKE_QUERIES, "--tests", ""],
        "error: '': empty test in the list (tests are separated by commas)",
    ),
    usage(
        "tests-no-parameter",
        "--tests crop (no parameter)",
        [*MAKE_QUERIES, "--tests", "crop"],
        "error: 'crop' needs a parameter: crop:K",
    ),
    usage(
        "tests-zero",
        "--tests crop:0",
        [*MAKE_QUERIES, "--tests", "crop:0"],
        "error: 'crop:0': the parameter must be between 0.01 and 100",
    ),
    usage(
        "tests-text",
        "--tests crop:abc",
        [*MAKE_QUERIES, "--tests", "crop:abc"],
        "error: 'crop:abc': 'abc' is not a number",
    ),
    usage(
        "tests-identity-grid",
        "--tests jumble:1x1",
        [*MAKE_QUERIES, "--tests", "jumble:1x1"],
        "error: 'jumble:1x1': a 1x1 grid has no shuffle other than the identity",
    ),
    usage(
        "tests-range",
        "--tests lowcon:120",
        [*MAKE_QUERIES, "--tests", "lowcon:120"],
        "error: 'lowcon:120': the parameter must be between 0 and 100",
    ),
    usage(
        "tests-empty-item",
        "--tests crop:50,,jumble:2x2",
        [*MAKE_QUERIES, "--tests", "crop:50,,jumble:2x2"],
        "error: 'crop:50,,jumble:2x2': empty test in the list (tests are separated by commas)",
    ),
    usage(
        "tests-dangling-plus",
        "--tests crop:50+",
        [*MAKE_QUERIES, "--tests", "crop:50+"],
        "error: 'crop:50+': a '+' with no test after it",
    ),
    usage(
        "tests-twice",
        "--tests crop:50,crop:50",
        [*MAKE_QUERIES, "--tests", "crop:50,crop:50"],
        "error: test 'crop:50' is given twice",
    ),
    usage(
        "tests-unknown",
        "--tests blurr:2",
        [*MAKE_QUERIES, "--tests", "blurr:2"],
        "error: unknown test 'blurr:2' (known: …)",
    ),
    usage(
        "extract-partitions",
        "extract --image-partitions 0",
        [*EXTRACT, "--image-partitions", "0"],
        "error: --image-partitions must be ≥ 1",
    ),
    usage(
        "extract-method-unknown",
        "extract --method sift",
        [*EXTRACT[:4], "sift", *EXTRACT[5:]],
        "error: unknown descriptor method 'sift' (built-in: colorhist, correlogram, tiny, pdq; "
        "or module:function)",
    ),
    usage(
        "extract-method-module",
        "extract --method no_such_module:f",
        [*EXTRACT[:4], "no_such_module:f", *EXTRACT[5:]],
        "error: descriptor method 'no_such_module:f': cannot import module 'no_such_module': ModuleNotFoundError: No module named 'no_such_module'",
    ),
    usage("rank-knn", "rank-eval --knn 0", [*RANK, "--knn", "0"], RANK_RANGE),
    usage("rank-subsets", "rank-eval --subsets 0", [*RANK, "--subsets", "0"], RANK_RANGE),
    usage("rank-resamples", "rank-eval --resamples 9", [*RANK, "--resamples", "9"], RANK_RANGE),
    usage("rank-seed", "rank-eval --seed -1", [*RANK, "--seed", "-1"], RANK_RANGE),
    usage(
        "rank-partitions",
        "rank-eval --query-partitions 0",
        [*RANK, "--query-partitions", "0"],
        "error: --query-partitions must be ≥ 1",
    ),
    usage(
        "rank-sizes-order",
        "rank-eval --sizes 3,2",
        [*RANK, "--sizes", "3,2"],
        "error: argument --sizes: sizes must be positive and increasing, such as 500,1000",
    ),
    usage(
        "rank-sizes-zero",
        "rank-eval --sizes 0",
        [*RANK, "--sizes", "0"],
        "error: argument --sizes: sizes must be positive and increasing, such as 500,1000",
    ),
    usage(
        "rank-descriptors-empty",
        "rank-eval --methods ''",
        [*RANK, "--methods", ""],
        "error: --methods: give at least one method",
    ),
    usage(
        "rank-descriptors-twice",
        "rank-eval --methods tiny,tiny",
        [*RANK, "--methods", "tiny,tiny"],
        "error: --methods: a method is named twice (…)",
    ),
    Case(
        "rank-subsets-absurd",
        OPT,
        "rank-eval --subsets 10^6 (more than there are references)",
        [*RANK, "--subsets", str(10**6)],
        2,
        "error: --subsets: must be between 1 and the 7 references",
        engines=("inproc",),
    ),
    Case(
        "rank-sizes-absurd",
        OPT,
        "rank-eval --sizes 10^9 (larger than the library)",
        [*RANK, "--sizes", str(10**9)],
        2,
        "error: --sizes: 1,000,000,000 is outside 2..7 (every size holds the 2 originals of the queries; the bench has 7 references)",
        engines=("inproc",),
    ),
    Case(
        "rank-bench-missing",
        OUT,
        "rank-eval --bench that does not exist",
        ["rank-eval", "--bench", "{d}/nope", "--output", "{d}/out"],
        2,
        "error: {d}/nope: not a folder (give the --output of disc21spark make-queries)",
    ),
    Case(
        "rank-bench-empty",
        OUT,
        "rank-eval --bench of an empty folder",
        ["rank-eval", "--bench", "{d}/b", "--output", "{d}/out"],
        2,
        "error: {d}/b: bench.json is missing: not a folder written by disc21spark make-queries",
        lambda d: (d / "b").mkdir(),
    ),
    Case(
        "rank-vectors-folder",
        OPT,
        "rank-eval --methods tiny=folder without descriptors.json",
        [*RANK[:-1], "tiny={d}/vec"],
        2,
        "error: {d}/vec: descriptors.json is missing: not a folder written by disc21spark extract --bench",
        lambda d: (d / "vec").mkdir(),
    ),
    Case(
        "extract-bench-missing",
        OUT,
        "extract --bench that does not exist",
        ["extract", "--bench", "{d}/nope", "--method", "tiny", "--output", "{d}/out"],
        2,
        "error: {d}/nope: not a folder (give the --output of disc21spark make-queries)",
    ),
]
