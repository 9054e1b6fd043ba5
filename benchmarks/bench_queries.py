"""make bench (altered-image queries): make_queries on Spark beside a plain single-process
loop over the same images with the same library functions; runs interleaved, medians.

    BENCH_IMAGES=2000 BENCH_REPEAT=3

The library is written once by jobs/make_library.py (scikit-image's photographs, then
dead-leaves images of 512×384). Each run scans every file, alters 2,000 of them under four
tests (500 each) and writes the benchmark folder; the two folders must be byte-identical.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from bench_matching import RESULTS, ROOT, measure, report, spark_env

TESTS = "crop:50,jumble:4x4,lowcon:80,crop:50+lowcon:80"


def digest(folder: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            h.update(str(p.relative_to(folder)).encode())
            h.update(p.read_bytes())
    return h.hexdigest()


def main() -> None:
    n = int(os.environ.get("BENCH_IMAGES", 2000))
    repeat = int(os.environ.get("BENCH_REPEAT", 3))
    per_test = n // 4
    library = RESULTS / "data" / f"library_{n}"
    env = spark_env()
    if not (library / "library.json").exists():
        print(f"bench: writing a library of {n:,} images to {library}", flush=True)
        shutil.rmtree(library, ignore_errors=True)
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "jobs" / "make_library.py"),
                "--output",
                str(library),
                "--size",
                str(n),
                "--width",
                "512",
                "--height",
                "384",
                "--seed",
                "2000",
                "--quiet",
            ],
            env=env,
            check=True,
        )
    warm = RESULTS / "data" / "library_warmup"
    if not (warm / "library.json").exists():
        shutil.rmtree(warm, ignore_errors=True)
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "jobs" / "make_library.py"),
                "--output",
                str(warm),
                "--size",
                "40",
                "--no-photos",
                "--seed",
                "1",
                "--quiet",
            ],
            env=env,
            check=True,
        )
    script = ROOT / "benchmarks" / "queries_spark.py"
    contenders = {
        "single-process loop": [ROOT / "benchmarks" / "queries_single.py"],
        "disc21spark (Spark, local[*]), first job": [script],
        "disc21spark (Spark, local[*]), after a 40-image job": [script, warm],
    }
    res = {name: {"seconds": [], "peak_mb": [], "wall_seconds": []} for name in contenders}
    digests = {}
    for i in range(repeat):
        for k, (name, (script, *extra)) in enumerate(contenders.items()):
            out = RESULTS / f"queries_{k}"
            shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(str(out) + ".warmup", ignore_errors=True)
            cmd = [sys.executable, str(script), str(library), str(out), TESTS, str(per_test), "7"]
            cmd += [str(x) for x in extra]
            wall, peak, text = measure(cmd, env)
            doc = json.loads([ln for ln in text.splitlines() if ln.startswith("{")][-1])
            res[name]["seconds"].append(round(doc["seconds"], 2))
            res[name]["peak_mb"].append(round(peak))
            res[name]["wall_seconds"].append(round(wall, 2))
            res[name]["queries"] = doc["queries"]
            res[name]["files"] = doc["files"]
            res[name]["phases"] = doc.get("phases")
            digests[name] = digest(out)
            print(f"bench: run {i + 1}/{repeat} {name}: {doc['seconds']:.1f} s", flush=True)
    base = statistics.median(res["single-process loop"]["seconds"])
    lines = [
        f"make_queries, {n:,} library images (~512×384), {4 * per_test:,} queries ({TESTS}), "
        f"{os.cpu_count()} cores, median of {repeat} (Spark: JVM and Python worker start "
        "excluded; 'after a 40-image job': JIT warm-up excluded too)",
        "",
        "| contender | s (median) | runs (s) | queries/s | speed-up | wall s with start-up | peak MB |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, v in res.items():
        med = statistics.median(v["seconds"])
        v["median_seconds"] = med
        lines.append(
            f"| {name} | {med:.1f} | {', '.join(f'{s:.1f}' for s in v['seconds'])} | "
            f"{v['queries'] / med:.1f} | {base / med:.2f}× | "
            f"{statistics.median(v['wall_seconds']):.1f} | {statistics.median(v['peak_mb']):,.0f} |"
        )
    same = len(set(digests.values())) == 1
    res["identical_folders"] = same
    lines += ["", f"benchmark folders byte-identical: {'yes' if same else 'NO'}"]
    report(f"queries_{n}", lines, res)


if __name__ == "__main__":
    main()
