"""make bench: the matching-track scorer beside its baselines, in one run, medians of N.

    BENCH_ROWS=5000000 (default) | BENCH_LARGE=1 (50M) | BENCH_REPEAT=3 | ISC2021_REPO=path
    BENCH_DRIVER_MEMORY=2g (disc21spark's driver; 1g with BENCH_LARGE, the naive plan keeps 2g)
    BENCH_SCALING=1: only the distributed plan, on local[1] then local[2] (the scaling
        goal, measured on the phases that touch the rows)
    BENCH_RESAMPLES=N: --resamples of the scaling runs (default: the product's)
    BENCH_SKIP=numpy,disc21spark in process: contenders left out (by how their names begin)
    BENCH_ROWS=500000 ISC2021_REPO=path: issue 46's rows, one file in process: python
        jobs/evaluate.py --resamples 0 against DuckDB (goal ≥ 1.0×, also at 5M) and with
        its defaults against the official scorer (goal ≥ 4×); each row prints its command

The distributed plan's row phases are printed against one bare pass (bare_read.py).
disc21spark runs five times: spark-submit with its defaults (one local file is scored in
process, a file past --local-max-bytes in batches), spark-submit with --engine spark (the
distributed plan, forced), the same with --resamples 0 (no bootstrap: the official scorer
computes no intervals), python jobs/evaluate.py with --engine local, and python
jobs/evaluate.py with --resamples 0 and otherwise its defaults, beside DuckDB (a handful
of SQL statements, benchmarks/duckdb_scorer.py). The last lines print each one's speed
against the peers and the goal of the size.

Each contender runs as its own process; wall time includes start-up (the JVM for the
Spark ones) and peak memory is the largest resident set of the whole process tree
(JVM and Python workers included), sampled every 50 ms.
"""

from __future__ import annotations

import json
import os
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

import psutil
from bare_read import BARE, RESAMPLES_0, bare_read_lines, pass_seconds

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
RESULTS = ROOT / "benchmarks" / "results"
GT = ROOT / "data" / "disc21_dev_ground_truth.csv"
OFFICIAL = (
    "import sys, json\n"
    "from isc.io import read_ground_truth, read_predictions\n"
    "from isc.metrics import evaluate\n"
    "m = evaluate(read_ground_truth(sys.argv[1]), read_predictions(sys.argv[2]))\n"
    'print(json.dumps({"micro_ap": m.average_precision, "recall_at_p90": m.recall_at_p90}))\n'
)


def spark_env(**extra: str) -> dict:
    """The environment every benchmarked process gets: this interpreter for Spark's
    Python, loopback networking, the project's quiet log configuration."""
    return dict(
        os.environ,
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        SPARK_LOCAL_IP="127.0.0.1",
        SPARK_CONF_DIR=str(ROOT / "disc21spark" / "conf"),
        **extra,
    )


def measure(cmd: list[str], env: dict) -> tuple[float, float, str]:
    """(seconds, peak MB of the process tree, stdout) of one run."""
    start = time.perf_counter()
    proc = psutil.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    peak = 0
    while proc.poll() is None:
        try:
            tree = [proc, *proc.children(recursive=True)]
            peak = max(peak, sum(p.memory_info().rss for p in tree if p.is_running()))
        except psutil.Error:
            pass
        time.sleep(0.05)
    out, err = proc.communicate()
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"bench: {' '.join(cmd[:3])} failed:\n{err[-2000:]}")
    return seconds, peak / 2**20, out


def report(stem: str, lines: list[str], results: dict | None = None) -> None:
    """Print the table and keep it as results/<stem>.md, with the raw figures as
    results/<stem>.json when given."""
    table = "\n".join(lines)
    print("\n" + table)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"{stem}.md").write_text(table + "\n")
    if results is not None:
        (RESULTS / f"{stem}.json").write_text(json.dumps(results, indent=2) + "\n")


def disc21spark_result(name: str) -> dict | None:
    """The metrics.json a disc21spark contender wrote (None: another scorer)."""
    if name.startswith("disc21spark python"):
        return json.loads((RESULTS / "out_python" / "metrics.json").read_text())
    if name.startswith("disc21spark in process"):
        return json.loads((RESULTS / "out_local" / "metrics.json").read_text())
    if name.startswith("disc21spark defaults"):
        return json.loads((RESULTS / "out_auto" / "metrics.json").read_text())
    if name.startswith("disc21spark"):
        return json.loads((RESULTS / "out" / "metrics.json").read_text())
    return None


def micro_ap_of(name: str, out: str) -> float | None:
    """The μAP a contender printed or wrote (None: the bare read, which scores nothing)."""
    if name == BARE:
        return None
    found = disc21spark_result(name)
    if found is not None:
        return found["micro_ap"]
    lines = [line for line in out.splitlines() if line.startswith("{")]
    if not lines:
        raise SystemExit(f"bench: {name} printed no result:\n{out[-2000:]}")
    return json.loads(lines[-1])["micro_ap"]


GOALS = {  # rows: (peer, the least speed-up over it)
    5_000_000: ("official ISC2021 (pure Python)", 2.0),
    20_000_000: ("official ISC2021 (pure Python)", 5.0),
    50_000_000: ("naive Spark plan (Window.orderBy)", 2.0),
}
DUCKDB = "DuckDB (SQL, every core)"
OFFICIAL_NAME = "official ISC2021 (pure Python)"
# issue 46's goals for one file in process, by size: (contender, peer, the least peer
# time ÷ contender time)
IN_PROCESS_GOALS = {
    500_000: (
        ("disc21spark python --resamples 0 (engine auto)", DUCKDB, 1.0),
        ("disc21spark in process (python jobs/evaluate.py)", OFFICIAL_NAME, 4.0),
    ),
    5_000_000: (("disc21spark python --resamples 0 (engine auto)", DUCKDB, 1.0),),
}
NAIVE = "naive Spark plan (Window.orderBy)"
SCALING_GOAL = 1.8  # local[2] over local[1], the distributed plan on one file
# issue 33's goals at 50M: the distributed plan forced (--engine spark) against the naive
# plan, by how the contender's name begins: (name, the least speed-up over the naive plan)
DISTRIBUTED_GOALS = ((RESAMPLES_0, 1.5), ("disc21spark (--driver", 1.0))
# the phases that touch the rows (read to count), on which the scaling goal is measured:
# the session's start and the driver's serial work are Amdahl's share
ROW_PHASES = ("read", "validate", "label", "count")


def bench_data(rows: int, env: dict) -> Path:
    """The DISC21-shaped predictions of ``rows`` pairs (written once, seed 2021)."""
    data = RESULTS / "data" / f"predictions_{rows}.csv"
    if not data.exists():
        print(f"bench: writing {rows:,} DISC21-shaped predictions to {data}", flush=True)
        write_predictions(data, rows, 2021, env)
    return data


def write_predictions(path: Path, rows: int, seed: int, env: dict, quiet: bool = False) -> None:
    """``rows`` DISC21-shaped predictions of the dev ground truth into ``path`` (the
    synthesiser of ``disc21spark.testing.synth``); ``quiet``: its output captured."""
    path.parent.mkdir(parents=True, exist_ok=True)
    cmd = [sys.executable, "-m", "disc21spark.testing.synth", "--ground-truth", str(GT)]
    cmd += ["--output", str(path), "--predictions", str(rows), "--seed", str(seed)]
    subprocess.run(cmd, check=True, env=env, capture_output=quiet)


def ours(data: Path, output: Path) -> list[str]:
    return [
        str(ROOT / "jobs" / "evaluate.py"),
        "--ground-truth",
        str(GT),
        "--predictions",
        str(data),
        "--output",
        str(output),
        "--overwrite",
        "--max-results",
        "0",
        "--quiet",
    ]


def submit(master: str, memory: str) -> list[str]:
    return [str(BIN / "spark-submit"), "--master", master, "--driver-memory", memory]


def contenders(data: Path, rows: int, env: dict) -> dict[str, list[str]]:
    """Every scorer of one run, by name (the official one when ISC2021_REPO names it)."""
    memory = os.environ.get("BENCH_DRIVER_MEMORY", "1g" if rows >= 50_000_000 else "2g")
    if os.environ.get("BENCH_SCALING"):
        return {
            f"disc21spark distributed plan, local[{n}]": submit(f"local[{n}]", memory)
            + ours(data, RESULTS / "out")
            + ["--engine", "spark"]
            + (
                ["--resamples", os.environ["BENCH_RESAMPLES"]]
                if "BENCH_RESAMPLES" in os.environ
                else []
            )
            for n in (1, 2)
        }
    found = {
        # what a user gets: one file that fits --local-max-bytes takes the per-file plan
        f"disc21spark defaults (--driver-memory {memory})": submit("local[*]", memory)
        + ours(data, RESULTS / "out_auto"),
        f"disc21spark (--driver-memory {memory})": submit("local[*]", memory)
        + ours(data, RESULTS / "out")
        + ["--engine", "spark"],
        # the official scorer computes no intervals: the plan alone, without the bootstrap
        f"{RESAMPLES_0} (--driver-memory {memory})": submit("local[*]", memory)
        + ours(data, RESULTS / "out")
        + ["--engine", "spark", "--resamples", "0"],
        # the in-process engine that python jobs/evaluate.py picks for one local file
        "disc21spark in process (python jobs/evaluate.py)": [
            sys.executable,
            *ours(data, RESULTS / "out_local"),
            "--engine",
            "local",
        ],
        # issue 32's contender: what python jobs/evaluate.py picks (engine auto: in
        # process, a file past --local-max-bytes in batches), figures only, beside DuckDB
        "disc21spark python --resamples 0 (engine auto)": [
            sys.executable,
            *ours(data, RESULTS / "out_python"),
            "--resamples",
            "0",
        ],
        "DuckDB (SQL, every core)": [
            sys.executable,
            str(ROOT / "benchmarks" / "duckdb_scorer.py"),
            str(GT),
            str(data),
        ],
        "numpy specification (1 process)": [
            sys.executable,
            str(ROOT / "benchmarks" / "numpy_scorer.py"),
            str(GT),
            str(data),
        ],
        "naive Spark plan (Window.orderBy)": submit("local[*]", "2g")
        + [str(ROOT / "benchmarks" / "naive_plan.py"), str(GT), str(data)],
        # issue 47's yardstick for the row phases: Spark's own CSV source, one bare pass
        BARE: submit("local[*]", memory) + [str(ROOT / "benchmarks" / "bare_read.py"), str(data)],
    }
    official = os.environ.get("ISC2021_REPO")
    if official:
        # the official reader and evaluate() from a checkout, printing every digit
        found["official ISC2021 (pure Python)"] = [
            sys.executable,
            "-c",
            OFFICIAL,
            str(GT),
            str(data),
        ]
        # this checkout first: the disc21spark under test is the one imported
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), official])
    skip = [s for s in os.environ.get("BENCH_SKIP", "").split(",") if s]
    return {name: cmd for name, cmd in found.items() if not any(name.startswith(s) for s in skip)}


def interleave(commands: dict[str, list[str]], env: dict, repeat: int, seen=None) -> dict:
    """Each command run ``repeat`` times in turn (A B A B: a noisy spell hits every one
    alike): ``{name: {"seconds", "peak_mb", "median_seconds", "median_peak_mb"}}``.
    ``seen(name, out, result)`` reads whatever else a run printed or wrote."""
    results: dict[str, dict] = {name: {"seconds": [], "peak_mb": []} for name in commands}
    for i in range(repeat):
        for name, cmd in commands.items():
            seconds, peak, out = measure(cmd, env)
            results[name]["seconds"].append(round(seconds, 2))
            results[name]["peak_mb"].append(round(peak))
            if seen is not None:
                seen(name, out, results[name])
            print(
                f"bench: run {i + 1}/{repeat} {name}: {seconds:.2f} s, {peak:,.0f} MB", flush=True
            )
    for r in results.values():
        r["median_seconds"] = statistics.median(r["seconds"])
        r["median_peak_mb"] = statistics.median(r["peak_mb"])
    return results


def run_all(commands: dict[str, list[str]], env: dict, repeat: int) -> dict[str, dict]:
    def seen(name: str, out: str, result: dict) -> None:
        result["micro_ap"] = micro_ap_of(name, out)
        if name == BARE:  # the pass's own seconds, timed as a run's phases are
            result.setdefault("pass_seconds", []).append(pass_seconds(out))
        found = disc21spark_result(name)
        if found is not None:  # where a run's seconds went, from its own phase lines
            result.setdefault("phases", []).append(found["run"]["phase_seconds"])

    return interleave(commands, env, repeat, seen)


def goal_lines(results: dict[str, dict], rows: int) -> list[str]:
    """Each disc21spark contender's speed against the peers, and the goals of its size."""
    lines = []
    names = list(results)
    if os.environ.get("BENCH_SCALING"):
        one, two = (results[n]["median_seconds"] for n in names)
        rows_one, rows_two = (row_phase_seconds(results[n]) for n in names)
        verdict = "met" if rows_one / rows_two >= SCALING_GOAL else "MISSED"
        return [
            f"\nscaling local[1] → local[2], whole run: {one / two:.2f}×",
            f"\nscaling local[1] → local[2], the phases that touch the rows "
            f"({', '.join(ROW_PHASES)}): {rows_one / rows_two:.2f}× "
            f"(goal ≥ {SCALING_GOAL}×: {verdict})",
        ]
    peers = ("official ISC2021 (pure Python)", "naive Spark plan (Window.orderBy)", DUCKDB)
    for peer in peers:
        if peer not in results:
            continue
        for name in (n for n in names if n.startswith("disc21spark")):
            speed = results[peer]["median_seconds"] / results[name]["median_seconds"]
            lines.append(f"\n{name}: {speed:.2f}× the speed of the {peer}")
    for start, least in DISTRIBUTED_GOALS if rows >= 50_000_000 and NAIVE in results else ():
        for name in (n for n in names if n.startswith(start)):
            speed = results[NAIVE]["median_seconds"] / results[name]["median_seconds"]
            verdict = "met" if speed >= least else "MISSED"
            lines.append(f"\ngoal: {name} ≥ {least}× the {NAIVE}: {speed:.2f}× ({verdict})")
    for name, peer, least in IN_PROCESS_GOALS.get(rows, ()):
        if name in results and peer in results:
            speed = results[peer]["median_seconds"] / results[name]["median_seconds"]
            verdict = "met" if speed >= least else "MISSED"
            lines.append(f"\ngoal: {name} ≥ {least}× the {peer}: {speed:.2f}× ({verdict})")
    lines += bare_read_lines(results, ROW_PHASES, row_phase_seconds)
    goal = GOALS.get(rows)
    if goal and goal[0] in results:
        speed = results[goal[0]]["median_seconds"] / results[names[0]]["median_seconds"]
        verdict = "met" if speed >= goal[1] else "MISSED"
        lines.append(
            f"\ngoal at {rows:,} rows: ≥ {goal[1]}× the {goal[0]}: {speed:.2f}× ({verdict})"
        )
    return lines


def command_text(cmd: list[str]) -> str:
    """A contender's command as one shell line, paths under this checkout relative to it
    (a multi-line ``python -c`` script as one line of statements)."""
    words = ["python" if w == sys.executable else w.replace(str(ROOT) + os.sep, "") for w in cmd]
    return shlex.join(w.strip().replace("\n", "; ") for w in words)


def row_phase_seconds(result: dict) -> float:
    """The median over the runs of the seconds of ROW_PHASES (from the run's phase lines)."""
    return statistics.median(
        sum(run.get(p, 0.0) for p in ROW_PHASES) for run in result.get("phases") or [{}]
    )


def phase_lines(results: dict[str, dict]) -> list[str]:
    """Each disc21spark contender's phases (seconds, median over the runs)."""
    lines = []
    for name, r in results.items():
        runs = r.get("phases") or []
        if runs:
            median = {p: statistics.median(run.get(p, 0.0) for run in runs) for p in runs[0]}
            text = ", ".join(f"{p} {s:.2f} s" for p, s in median.items())
            lines.append(f"\nphases of {name}: {text}")
    return lines


def main() -> None:
    rows = (
        50_000_000
        if os.environ.get("BENCH_LARGE")
        else int(os.environ.get("BENCH_ROWS", 5_000_000))
    )
    repeat = int(os.environ.get("BENCH_REPEAT", 3))
    env = spark_env()
    data = bench_data(rows, env)
    commands = contenders(data, rows, env)
    results = run_all(commands, env, repeat)
    first = results[next(iter(results))]["median_seconds"]
    lines = [
        f"Matching track, {rows:,} predictions vs the DISC21 dev ground truth, "
        f"{os.cpu_count()} cores, median of {repeat} (JVM start included)",
        "",
        "| scorer | wall s (median) | runs (s) | peak MB (median) | time / first row | μAP | command |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        med, ap = r["median_seconds"], r["micro_ap"]
        lines.append(
            f"| {name} | {med:.1f} | {', '.join(f'{s:.1f}' for s in r['seconds'])} | "
            f"{r['median_peak_mb']:,.0f} | {med / first:.2f}× | {'—' if ap is None else f'{ap:.12f}'} | "
            f"`{command_text(commands[name])}` |"
        )
    lines += goal_lines(results, rows)
    lines += phase_lines(results)
    aps = [r["micro_ap"] for r in results.values() if r["micro_ap"] is not None]
    agree = not aps or max(aps) - min(aps) <= 1e-12
    lines += ["", f"μAP agrees across scorers to 1e-12: {'yes' if agree else 'NO'}"]
    stem = f"matching_{rows}" + ("_scaling" if os.environ.get("BENCH_SCALING") else "")
    report(stem, lines, results)
    if not agree:
        raise SystemExit("bench: the scorers disagree")


if __name__ == "__main__":
    main()
