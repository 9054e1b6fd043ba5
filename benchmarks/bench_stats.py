"""make bench (intervals): one 500,000-pair DISC21-shaped submission scored with and
without 1,000 bootstrap resamples, on the in-process engine and on Spark, interleaved,
medians of N (the wall time of the whole command, start-up included).

    BENCH_STATS_ROWS=500000 BENCH_STATS_RESAMPLES=1000 BENCH_REPEAT=3
    BENCH_STATS_ENGINES=local,spark   (local alone starts no JVM)

The goal (issue 24): the run with 1,000 resamples at most triple the in-process run
without them.
"""

from __future__ import annotations

import os
import statistics
import sys

from bench_matching import GT, RESULTS, measure, report, spark_env, write_predictions


def main() -> None:
    rows = int(os.environ.get("BENCH_STATS_ROWS", 500_000))
    resamples = int(os.environ.get("BENCH_STATS_RESAMPLES", 1000))
    repeat = int(os.environ.get("BENCH_REPEAT", 3))
    engines = os.environ.get("BENCH_STATS_ENGINES", "local,spark").split(",")
    env = spark_env()
    data = RESULTS / "data" / f"stats_{rows}.csv"
    if not data.exists():
        write_predictions(data, rows, 1, env, quiet=True)
    runs = {
        (engine, n): [
            sys.executable,
            "-m",
            "disc21spark",
            "evaluate",
            "--ground-truth",
            str(GT),
            "--predictions",
            str(data),
            "--output",
            str(RESULTS / f"stats_{engine}_{n}"),
            "--overwrite",
            "--engine",
            engine,
            "--resamples",
            str(n),
            "--quiet",
        ]
        for engine in ["local", *engines]  # the in-process run without resamples: the base
        for n in (0, resamples)
        if engine in engines or n == 0
    }
    times: dict = {key: [] for key in runs}
    peaks: dict = {key: [] for key in runs}
    for _ in range(repeat):
        for key, cmd in runs.items():
            seconds, peak, _ = measure(cmd, env)
            times[key].append(seconds)
            peaks[key].append(peak)
    base = statistics.median(times[("local", 0)])
    lines = [
        f"# Bootstrap intervals: {rows:,} pairs, median of {repeat} (wall time, start-up included)",
        "",
        "| engine | resamples | seconds | × in process without | peak MB |",
        "|---|---|---|---|---|",
    ]
    for (engine, n), values in times.items():
        median = statistics.median(values)
        lines.append(
            f"| {engine} | {n:,} | {median:.2f} | {median / base:.2f} | "
            f"{statistics.median(peaks[(engine, n)]):.0f} |"
        )
    report("stats_" + "_".join(engines), lines, {f"{e}_{n}": v for (e, n), v in times.items()})


if __name__ == "__main__":
    main()
