"""make bench (a pool of local files): the pool scored in worker processes with no JVM,
beside DuckDB's one query over the pool, the official scorer once per file, the
per-file plan on Spark and ``ds.evaluate_pool`` from a script, interleaved, medians of
N (issue 46's pool rows); then one more file's cost on Spark and in process, in one
warm session (``per_file_cost.py``).

    BENCH_POOL=20 BENCH_POOL_ROWS=500000 BENCH_REPEAT=3 ISC2021_REPO=<isc2021 checkout>

Wall time includes start-up (the JVM for Spark); peak memory is the whole process tree
(the in-process pool's workers included). The figures of every contender are compared:
μAP equal to 1e-12 (DuckDB sums in another order), the boards of both engines equal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from bench_matching import BIN, GT, RESULTS, ROOT, interleave, report, spark_env
from bench_pool import write_pool


def ours(folder: Path, out: Path, *extra: str) -> list[str]:
    """The pool command: in process unless ``extra`` asks for Spark."""
    return [
        str(BIN / "python"),
        str(ROOT / "jobs" / "evaluate.py"),
        "--ground-truth",
        str(GT),
        "--predictions",
        str(folder / "*.csv"),
        "--output",
        str(out),
        "--overwrite",
        "--quiet",
        *extra,
    ]


def contenders(folder: Path, env: dict) -> dict[str, list[str]]:
    out = {name: RESULTS / f"pool_local_{name}" for name in ("r0", "defaults", "spark")}
    found = {
        "in process, --resamples 0": ours(folder, out["r0"], "--resamples", "0"),
        "DuckDB, one query over the pool (no intervals)": [
            sys.executable,
            str(ROOT / "benchmarks" / "duckdb_pool.py"),
            str(GT),
            str(folder / "*.csv"),
        ],
        "in process, defaults (1,000 resamples)": ours(folder, out["defaults"]),
        "--engine spark (per-file plan), defaults": ours(folder, out["spark"], "--engine", "spark"),
        "Python, ds.evaluate_pool, defaults": [
            str(BIN / "python"),
            str(ROOT / "benchmarks" / "api_pool.py"),
            str(GT),
            str(folder / "*.csv"),
        ],
    }
    official = os.environ.get("ISC2021_REPO")
    if official:
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), official])
        found["official ISC2021, once per file"] = [
            sys.executable,
            str(ROOT / "benchmarks" / "official_pool.py"),
            str(GT),
            str(folder),
        ]
    return found


def board(out: Path) -> dict[str, float]:
    rows = json.loads((out / "leaderboard.json").read_text())["submissions"]
    return {r["submission"]: r["micro_ap"] for r in rows}


def figures_agree(stdout: dict[str, str]) -> list[str]:
    """Lines saying whether every contender's μAP agrees with the in-process board."""
    ours_ap = board(RESULTS / "pool_local_r0")
    lines = []
    duck = json.loads(stdout["DuckDB, one query over the pool (no intervals)"])
    duck_ap = {Path(f).stem: v["micro_ap"] for f, v in duck.items()}
    lines.append(f"DuckDB μAP equal to 1e-12: {_close(ours_ap, duck_ap)}")
    spark_boards = (RESULTS / "pool_local_defaults", RESULTS / "pool_local_spark")
    a, b = ((p / "leaderboard.json").read_text() for p in spark_boards)
    same = json.loads(a)["submissions"] == json.loads(b)["submissions"]
    lines.append(f"leaderboard.json of both engines (defaults) equal: {same}")
    api = json.loads(stdout["Python, ds.evaluate_pool, defaults"])
    lines.append(f"ds.evaluate_pool's μAP equal to the command's, bit for bit: {api == ours_ap}")
    name = "official ISC2021, once per file"
    if name in stdout:
        lines.append(f"official μAP equal to 1e-12: {_close(ours_ap, json.loads(stdout[name]))}")
    return lines


def _close(a: dict[str, float], b: dict[str, float]) -> bool:
    return set(a) == set(b) and all(abs(a[k] - b[k]) <= 1e-12 for k in a)


def main() -> None:
    n_subs = int(os.environ.get("BENCH_POOL", 20))
    rows = int(os.environ.get("BENCH_POOL_ROWS", 500_000))
    repeat = int(os.environ.get("BENCH_REPEAT", 3))
    folder = write_pool(n_subs, rows)
    env = spark_env()
    commands = contenders(folder, env)
    stdout: dict[str, str] = {}

    def seen(name: str, out: str, result: dict) -> None:
        stdout[name] = out.strip().splitlines()[-1] if out.strip() else ""

    results = interleave(commands, env, repeat, seen)
    med = {n: r["median_seconds"] for n, r in results.items()}
    lines = [
        f"# A pool of {n_subs} × {rows:,} pairs of local files, {repeat} runs, medians",
        "",
        "| command | seconds | peak MB | runs |",
        "|---|---|---|---|",
    ]
    for name, r in results.items():
        lines.append(f"| {name} | {med[name]:.2f} | {r['median_peak_mb']:,.0f} | {r['seconds']} |")
    pairs = [
        ("DuckDB, one query over the pool (no intervals)", "in process, --resamples 0"),
        ("official ISC2021, once per file", "in process, defaults (1,000 resamples)"),
        ("--engine spark (per-file plan), defaults", "in process, defaults (1,000 resamples)"),
        ("Python, ds.evaluate_pool, defaults", "in process, defaults (1,000 resamples)"),
    ]
    lines.append("")
    for peer, mine in pairs:
        if peer in med:
            lines.append(f"- {peer} ÷ {mine}: {med[peer] / med[mine]:.2f}×")
    lines += ["", *figures_agree(stdout)]
    lines += ["", "Commands:", *(f"- {n}: `{' '.join(c)}`" for n, c in commands.items())]
    lines += one_more_file(folder, env, repeat)
    report("pool_local", lines, results)


def one_more_file(folder: Path, env: dict, repeat: int) -> list[str]:
    """One more file's cost on Spark's per-file plan and in process, in one warm session
    (``per_file_cost.py``, docs/benchmarks.md [O]): the pool, then the pool beside a copy
    of each of its files (hard links, under other names)."""
    twice = folder.parent / f"{folder.name}_twice"
    twice.mkdir(exist_ok=True)
    for file in sorted(folder.glob("*.csv")):
        for name in (file.name, f"copy_{file.name}"):
            if not (twice / name).exists():
                os.link(file, twice / name)
    script = ROOT / "benchmarks" / "per_file_cost.py"
    pools = [f"{folder}/*.csv", f"{twice}/*.csv"]
    done = subprocess.run(
        [str(BIN / "python"), str(script), str(GT), *pools],
        env={**env, "BENCH_REPEAT": str(repeat)},
        capture_output=True,
        text=True,
        check=True,
    )
    return [
        "",
        f"One more file, one warm session (`{script.name}`):",
        *done.stdout.strip().splitlines(),
    ]


if __name__ == "__main__":
    main()
