"""make bench (a pool's scale and its private split): the in-process pool of N local
files with default settings beside the same pool with a private split, and beside a pool
of 10 × N files (each file copied under ten names), interleaved, medians of R
(issue 46's goals: the split at most 1.2× the unsplit pool's time; the larger pool
completes in bounded memory, every process together, at the same time per file).

    BENCH_POOL=20 BENCH_POOL_ROWS=500000 BENCH_REPEAT=2 python benchmarks/bench_pool_scale.py

Peak memory is the whole process tree (the workers included). The copies are real files,
not links, so each one is read from its own pages.
"""

from __future__ import annotations

import csv
import os
import shutil
from pathlib import Path

from bench_matching import GT, RESULTS, interleave, report, spark_env
from bench_pool import write_pool
from bench_pool_local import board, ours

COPIES = 10


def copied_pool(folder: Path, copies: int) -> Path:
    """``folder``'s files, each copied under ``copies`` names, kept for the next run."""
    files = sorted(folder.glob("*.csv"))
    big = folder.with_name(f"{folder.name}_x{copies}")
    big.mkdir(exist_ok=True)
    for k in range(copies):
        for f in files:
            target = big / f"{f.stem}_{k:02d}.csv"
            if not target.exists():
                shutil.copyfile(f, big / ".partial")
                (big / ".partial").rename(target)  # an interrupted copy is redone
    return big


def private_half() -> Path:
    """Every other query of the ground truth, as a ``--private-queries`` file."""
    with open(GT, newline="") as f:
        queries = sorted({row["query_id"] for row in csv.DictReader(f)})
    path = RESULTS / "data" / "private_half.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("query_id\n" + "".join(q + "\n" for q in queries[::2]))
    return path


def main() -> None:
    n_subs = int(os.environ.get("BENCH_POOL", 20))
    rows = int(os.environ.get("BENCH_POOL_ROWS", 500_000))
    repeat = int(os.environ.get("BENCH_REPEAT", 2))
    folder = write_pool(n_subs, rows)
    big = copied_pool(folder, COPIES)
    split = ["--private-queries", str(private_half())]
    out = {k: RESULTS / f"pool_scale_{k}" for k in ("one", "split", "private", "big")}
    names = {
        "one": f"{n_subs} files, defaults",
        "split": f"{n_subs} files, defaults, a private split",
        "big": f"{n_subs * COPIES} files, defaults",
    }
    commands = {
        names["one"]: ours(folder, out["one"]),
        names["split"]: ours(folder, out["split"], *split, "--private-output", str(out["private"])),
        names["big"]: ours(big, out["big"]),
    }
    results = interleave(commands, spark_env(), repeat)
    med = {n: r["median_seconds"] for n, r in results.items()}
    lines = [
        f"# The in-process pool at {n_subs} and {n_subs * COPIES} files of {rows:,} pairs,"
        f" and with a private split, {repeat} runs, medians",
        "",
        "| command | seconds | seconds a file | peak MB (process tree) | runs |",
        "|---|---|---|---|---|",
    ]
    files = {names["one"]: n_subs, names["split"]: n_subs, names["big"]: n_subs * COPIES}
    for name, r in results.items():
        per_file = med[name] / files[name]
        lines.append(
            f"| {name} | {med[name]:.2f} | {per_file:.3f} | {r['median_peak_mb']:,.0f} "
            f"| {r['seconds']} |"
        )
    split_ratio = med[names["split"]] / med[names["one"]]
    per_file_ratio = (med[names["big"]] / (n_subs * COPIES)) / (med[names["one"]] / n_subs)
    same = all(
        board(out["big"])[f"{s}_{k:02d}"] == ap
        for s, ap in board(out["one"]).items()
        for k in range(COPIES)
    )
    lines += [
        "",
        f"- the split pool ÷ the same pool unsplit: {split_ratio:.2f}× (goal ≤ 1.2×)",
        f"- a file of the {n_subs * COPIES}-file pool ÷ a file of the {n_subs}-file pool:"
        f" {per_file_ratio:.2f}× (goal ≤ 1.1×)",
        f"- every copy's μAP equal to its original's: {same}",
        "",
        "Commands:",
        *(f"- {n}: `{' '.join(c)}`" for n, c in commands.items()),
    ]
    report("pool_scale", lines, results)


if __name__ == "__main__":
    main()
