"""make bench (pools): one Spark job scoring a pool of submissions beside the numpy
specification run once per submission, interleaved, medians of N.

    BENCH_POOL=100 BENCH_POOL_ROWS=500000 BENCH_REPEAT=1

Wall time includes start-up (the JVM for Spark); peak memory is the whole process tree.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys

from bench_matching import BIN, GT, RESULTS, ROOT, measure, spark_env


def main() -> None:
    n_subs = int(os.environ.get("BENCH_POOL", 100))
    rows = int(os.environ.get("BENCH_POOL_ROWS", 500_000))
    repeat = int(os.environ.get("BENCH_REPEAT", 1))
    folder = RESULTS / "data" / f"pool_{n_subs}x{rows}"
    env = spark_env()
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n_subs):
        path = folder / f"team{i:04d}.csv"
        if not path.exists():
            subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "disc21spark.testing.synth",
                    "--ground-truth",
                    str(GT),
                    "--output",
                    str(path),
                    "--predictions",
                    str(rows),
                    "--seed",
                    str(1000 + i),
                ],
                check=True,
                env=env,
                capture_output=True,
            )
    total = sum(1 for _ in folder.glob("*.csv")) * rows
    out = RESULTS / "pool_out"
    contenders = {
        "disc21spark pool (one Spark job)": [
            str(BIN / "spark-submit"),
            "--master",
            "local[*]",
            "--driver-memory",
            "2g",
            str(ROOT / "jobs" / "evaluate.py"),
            "--ground-truth",
            str(GT),
            "--predictions",
            str(folder / "*.csv"),
            "--output",
            str(out),
            "--overwrite",
            "--quiet",
        ],
        "numpy specification, once per submission": [
            sys.executable,
            str(ROOT / "benchmarks" / "numpy_pool.py"),
            str(GT),
            str(folder),
        ],
    }
    results = {name: {"seconds": [], "peak_mb": []} for name in contenders}
    aps = {}
    for i in range(repeat):
        for name, cmd in contenders.items():
            seconds, peak, stdout = measure(cmd, env)
            results[name]["seconds"].append(round(seconds, 1))
            results[name]["peak_mb"].append(round(peak))
            print(
                f"bench: pool run {i + 1}/{repeat} {name}: {seconds:.1f} s, {peak:,.0f} MB",
                flush=True,
            )
            if "numpy" in name:
                aps["numpy"] = json.loads(stdout.strip().splitlines()[-1])
    board = json.loads((out / "leaderboard.json").read_text())["submissions"]
    aps["spark"] = {r["submission"]: r["micro_ap"] for r in board}
    same = aps["spark"] == aps["numpy"]
    base = statistics.median(results["numpy specification, once per submission"]["seconds"])
    lines = [
        f"Pool of {n_subs} submissions × {rows:,} predictions ({total:,} rows) vs the DISC21 dev "
        f"ground truth, {os.cpu_count()} cores, median of {repeat} (start-up included)",
        "",
        "| scorer | wall s (median) | rows / s | peak MB (median) | time / numpy loop |",
        "|---|---|---|---|---|",
    ]
    for name, r in results.items():
        med = statistics.median(r["seconds"])
        lines.append(
            f"| {name} | {med:.1f} | {total / med:,.0f} | "
            f"{statistics.median(r['peak_mb']):,.0f} | {med / base:.2f}× |"
        )
    lines += ["", f"every submission's μAP identical in both: {'yes' if same else 'NO'}"]
    table = "\n".join(lines)
    print("\n" + table)
    (RESULTS / f"pool_{n_subs}x{rows}.md").write_text(table + "\n")
    (RESULTS / f"pool_{n_subs}x{rows}.json").write_text(json.dumps(results, indent=2) + "\n")
    if not same:
        raise SystemExit("bench: the pool and the per-file scores disagree")


if __name__ == "__main__":
    main()
