"""make bench BENCH_LARGE=1 (soak): 200 million predictions as a pool of 400 submissions
× 500,000 in a driver of 1 GB, beside the numpy specification run on each file alone.

    BENCH_SOAK_POOL=400 BENCH_SOAK_ROWS=500000 BENCH_SOAK_MEMORY=1g

In local mode the executors are threads of the driver's JVM, so ``spark.driver.memory``
is also the executors' heap: 1 GB cannot hold the pair hashes of 200 million rows that
the distributed plan's repeat check shuffles, and Spark must spill. Both pool plans run; each writes a Spark event log,
from which the spill bytes are summed (``Memory Bytes Spilled``: the in-memory size of
what was spilled; ``Disk Bytes Spilled``: what reached the disk). Peak memory is the
resident set of the whole process tree (JVM and Python workers), sampled every 50 ms.
Each leaderboard must equal, μAP for μAP, the numpy specification's on each file alone.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

from bench_matching import BIN, GT, RESULTS, ROOT, measure, report, spark_env
from bench_pool import write_pool


def spill_of(event_dir: Path) -> dict:
    """Spill and shuffle bytes summed over every task of the run's event log."""
    totals = dict.fromkeys(
        (
            "memory_bytes_spilled",
            "disk_bytes_spilled",
            "shuffle_write_bytes",
            "tasks",
            "failed_tasks",
        ),
        0,
    )
    settings = {}
    for log in sorted(p for p in event_dir.rglob("*") if p.is_file()):
        with open(log, encoding="utf-8") as fh:
            for line in fh:
                event = json.loads(line)
                kind = event.get("Event")
                if kind == "SparkListenerEnvironmentUpdate":
                    props = event.get("Spark Properties", {})
                    settings = {k: props.get(k) for k in ("spark.driver.memory", "spark.master")}
                if kind != "SparkListenerTaskEnd":
                    continue
                totals["tasks"] += 1
                if event.get("Task End Reason", {}).get("Reason") != "Success":
                    totals["failed_tasks"] += 1
                metrics = event.get("Task Metrics") or {}
                totals["memory_bytes_spilled"] += metrics.get("Memory Bytes Spilled", 0)
                totals["disk_bytes_spilled"] += metrics.get("Disk Bytes Spilled", 0)
                write = metrics.get("Shuffle Write Metrics") or {}
                totals["shuffle_write_bytes"] += write.get("Shuffle Bytes Written", 0)
    return {**totals, **settings}


def main() -> None:
    n_subs = int(os.environ.get("BENCH_SOAK_POOL", 400))
    rows = int(os.environ.get("BENCH_SOAK_ROWS", 500_000))
    memory = os.environ.get("BENCH_SOAK_MEMORY", "1g")
    folder = write_pool(n_subs, rows)
    total = n_subs * rows
    env = spark_env()
    results = {}
    aps = {}
    for plan in ("distributed", "per-file"):
        out = RESULTS / f"soak_out_{plan}"
        events = Path(tempfile.mkdtemp(prefix="soak-events-"))
        cmd = [
            str(BIN / "spark-submit"),
            "--master",
            "local[*]",
            "--driver-memory",
            memory,
            "--conf",
            "spark.eventLog.enabled=true",
            "--conf",
            f"spark.eventLog.dir={events.as_uri()}",
            # one plain JSON file (Spark 4 rolls and compresses event logs by default)
            "--conf",
            "spark.eventLog.rolling.enabled=false",
            "--conf",
            "spark.eventLog.compress=false",
            str(ROOT / "jobs" / "evaluate.py"),
            "--ground-truth",
            str(GT),
            "--predictions",
            str(folder / "*.csv"),
            "--output",
            str(out),
            "--overwrite",
            "--quiet",
            "--pool-plan",
            plan,
        ]
        print(f"bench: soak, {plan} plan, {total:,} predictions, driver {memory}", flush=True)
        seconds, peak, _ = measure(cmd, env)
        results[plan] = {"seconds": round(seconds, 1), "peak_mb": round(peak), **spill_of(events)}
        shutil.rmtree(events, ignore_errors=True)
        board = json.loads((out / "leaderboard.json").read_text())["submissions"]
        aps[plan] = {r["submission"]: r["micro_ap"] for r in board if r["status"] == "ok"}
        print(f"bench: soak {plan}: {json.dumps(results[plan])}", flush=True)
    print("bench: soak, numpy specification on each file alone", flush=True)
    seconds, peak, stdout = measure(
        [sys.executable, str(ROOT / "benchmarks" / "numpy_pool.py"), str(GT), str(folder)], env
    )
    results["numpy specification, each file alone"] = {
        "seconds": round(seconds, 1),
        "peak_mb": round(peak),
    }
    aps["numpy"] = json.loads(stdout.strip().splitlines()[-1])
    equal = {plan: aps[plan] == aps["numpy"] for plan in ("distributed", "per-file")}
    mb = 2**20
    lines = [
        f"Soak: a pool of {n_subs} submissions × {rows:,} predictions ({total:,} rows) vs the "
        f"DISC21 dev ground truth, `--driver-memory {memory}` (local mode: the executors' heap "
        f"too), {os.cpu_count()} cores, one run each",
        "",
        "| run | wall s | rows / s | peak MB (process tree) | spilled, in memory MB | "
        "spilled to disk MB | shuffle written MB | tasks (failed) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        spill = (
            f"{r['memory_bytes_spilled'] / mb:,.0f} | {r['disk_bytes_spilled'] / mb:,.0f} | "
            f"{r['shuffle_write_bytes'] / mb:,.0f} | {r['tasks']:,} ({r['failed_tasks']})"
            if "tasks" in r
            else "— | — | — | —"
        )
        label = f"disc21spark pool, {name} plan" if name in equal else name
        lines.append(
            f"| {label} | {r['seconds']:,.1f} | {total / r['seconds']:,.0f} | "
            f"{r['peak_mb']:,} | {spill} |"
        )
    lines.append("")
    for plan, ok in equal.items():
        lines.append(
            f"{plan} plan: all {len(aps[plan])} μAPs identical to the numpy specification's "
            f"on each file alone: {'yes' if ok else 'NO'}"
        )
    report(f"soak_{n_subs}x{rows}", lines, results)
    if not all(equal.values()):
        raise SystemExit("bench: the soak's leaderboard and the specification disagree")


if __name__ == "__main__":
    main()
