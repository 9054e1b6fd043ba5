"""Pools of submissions."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np

from tests.bad_input.common import (
    PL,
    POOL_FILES,
    Case,
    board,
    files,
    fill,
    gzipped,
    official_metrics,
    parquet,
    text,
    with_gt,
)
from tests.bad_inputs import (
    CLEAN,
    CLEAN_COLUMNS,
)


def pool_statuses(expected: dict[str, str], scored: dict[str, str] | None = None):
    """leaderboard.csv: each submission's status (reason pattern for invalid ones) and the
    scored ones' figures equal to the specification on their file alone."""

    def check(d: Path, engine: str) -> None:
        import csv

        with (d / "out" / "leaderboard.csv").open(newline="") as fh:
            rows = {r["submission"]: r for r in csv.DictReader(fh)}
        assert sorted(rows) == sorted(expected)
        for name, status in expected.items():
            if status == "ok":
                assert rows[name]["status"] == "ok", rows[name]
            else:
                assert rows[name]["status"] == "invalid"
                assert re.fullmatch(fill(status, {"d": str(d)}), rows[name]["reason"]), rows[name]
        for name, file in (scored or {}).items():
            m = official_metrics(d / file, d / "gt.csv")
            doc = json.loads((d / "out" / "leaderboard.json").read_text())
            row = next(r for r in doc["submissions"] if r["submission"] == name)
            for key, value in m.to_dict().items():
                assert row[key] == (value if value is None or np.isfinite(value) else None), key
            assert_curve(d / "out" / "pr_curves" / f"{name}.csv", m)

    return check


def assert_curve(path: Path, expected) -> None:
    from disc21spark.matching.reports.report import write_curve_csv

    other = path.with_name("expected.tmp")
    write_curve_csv(other, expected)
    try:
        assert path.read_bytes() == other.read_bytes()
    finally:
        other.unlink()


SPLIT = ("--private-queries", "{d}/split.csv", "--private-output", "{d}/private")


def _text_ap(doc: dict) -> None:
    doc["submissions"][0]["micro_ap"] = "0.5"


def _no_name(doc: dict) -> None:
    del doc["submissions"][1]["submission"]


def pool(*writers):
    return with_gt(*writers)


def evaluate_pool(*preds: str, extra: tuple[str, ...] = ()) -> list[str]:
    return [
        "evaluate",
        "--ground-truth",
        "{d}/gt.csv",
        "--predictions",
        *preds,
        "--output",
        "{d}/out",
        *extra,
    ]


def split_pool(*writers, groups: bool = False) -> list[str]:
    """Two clean submissions scored with the split file split.csv (and groups.csv)."""
    extra = ("--private-queries", "{d}/split.csv", "--private-output", "{d}/hidden")
    if groups:
        extra += ("--query-groups", "{d}/groups.csv")
    return evaluate_pool("{d}/a.csv", "{d}/b.csv", extra=extra)


def split_files(split: str, *writers):
    return pool(text("a.csv", CLEAN), text("b.csv", CLEAN), text("split.csv", split), *writers)


LONG = "Q" * 131_073  # over Python's csv field limit (131,072 characters)

CASES: list[Case] = [
    Case(
        "pool-bad-members",
        PL,
        "a pool with a bad line, a truncated .gz and a clean file",
        evaluate_pool("{d}/pool"),
        0,
        "the leaderboard: the clean file scored, the others invalid with their one line",
        pool(
            text("pool/a.csv", CLEAN),
            text("pool/b.csv", "Q1,R1,0.9\nQ2,R2,nan\n"),
            gzipped("pool/c.csv.gz", CLEAN * 50, cut=0.5),
        ),
        outputs=POOL_FILES,
        check=pool_statuses(
            {
                "a": "ok",
                "b": r"{d}/pool/b\.csv: line 2: score 'nan' is not finite",
                "c": r"{d}/pool/c\.csv\.gz: cannot be read as gzip \(truncated: the "
                r"compressed stream ends before its end\)",
            },
            {"a": "pool/a.csv"},
        ),
        engines=("local", "spark"),  # local: the pool in worker processes, no JVM
    ),
    Case(
        "pool-local-refused",
        PL,
        "--engine local for a pool with a file Arrow does not read as Spark (.deflate)",
        evaluate_pool("{d}/pool", extra=("--engine", "local")),
        2,
        "error: --engine local: {d}/pool/b.csv.deflate: a file Arrow does not read as Spark "
        "does; use --engine spark",
        pool(text("pool/a.csv", CLEAN), text("pool/b.csv.deflate", CLEAN)),
        engines=("none",),
    ),
    Case(
        "pool-fail-on-invalid",
        PL,
        "the same pool with --fail-on-invalid",
        evaluate_pool("{d}/pool", extra=("--fail-on-invalid",)),
        2,
        "error: {d}/pool: 1 of 2 submissions invalid (--fail-on-invalid); first: b: "
        "{d}/pool/b.csv: line 2: score 'nan' is not finite",
        pool(text("pool/a.csv", CLEAN), text("pool/b.csv", "Q1,R1,0.9\nQ2,R2,nan\n")),
    ),
    Case(
        "pool-parquet-schemas",
        PL,
        "Parquet files of different schemas in one pool "
        "(string scores, integer ids, no score column)",
        evaluate_pool("{d}/pool/*.parquet"),
        0,
        "the leaderboard: each file as it would score alone",
        pool(
            parquet("pool/a.parquet", **CLEAN_COLUMNS),
            parquet(
                "pool/b.parquet",
                **{**CLEAN_COLUMNS, "score": [str(x) for x in CLEAN_COLUMNS["score"]]},
            ),
            parquet("pool/c.parquet", query_id=[1, 2], reference_id=[1, 2], score=[0.5, 0.4]),
            parquet("pool/d.parquet", query_id=["Q1"], reference_id=["R1"]),
        ),
        outputs=POOL_FILES,
        check=pool_statuses(
            {
                "a": "ok",
                "b": "ok",
                "c": "ok",
                "d": r"{d}/pool/d\.parquet: missing column 'score' \(has: query_id, reference_id\)",
            },
            {"a": "pool/a.parquet", "c": "pool/c.parquet"},
        ),
    ),
    Case(
        "pool-same-name",
        PL,
        "two files that would name the same submission (a.csv, a.parquet)",
        evaluate_pool("{d}/pool"),
        2,
        "error: {d}/pool/a.parquet: two submissions would be named 'a' (also {d}/pool/a.csv)",
        pool(text("pool/a.csv", CLEAN), parquet("pool/a.parquet", **CLEAN_COLUMNS)),
    ),
    Case(
        "pool-glob-nothing",
        PL,
        "a glob matching nothing",
        evaluate_pool("{d}/pool/*.csv"),
        2,
        "error: {d}/pool/*.csv: no such file or directory",
        pool(),
    ),
    Case(
        "pool-empty-folder",
        PL,
        "a folder without data files (hidden and _SUCCESS files only)",
        evaluate_pool("{d}/pool"),
        2,
        "error: {d}/pool: folder holds no data file",
        pool(text("pool/_SUCCESS", ""), text("pool/.hidden.csv", CLEAN)),
    ),
    Case(
        "pool-column-missing",
        PL,
        "--submission-column naming no column",
        evaluate_pool("{d}/p.parquet", extra=("--submission-column", "team")),
        2,
        "error: {d}/p.parquet: missing column 'team' (has: query_id, reference_id, score)",
        pool(parquet("p.parquet", **CLEAN_COLUMNS)),
    ),
    Case(
        "pool-column-csv",
        PL,
        "--submission-column with a CSV file",
        evaluate_pool("{d}/p.csv", extra=("--submission-column", "team")),
        2,
        "error: {d}/p.csv: --submission-column needs a Parquet table (CSV has 3 fields)",
        pool(text("p.csv", CLEAN)),
    ),
    Case(
        "pool-column-null",
        PL,
        "a row without a submission name",
        evaluate_pool("{d}/p.parquet", extra=("--submission-column", "team")),
        2,
        "error: {d}/p.parquet: rows without a team (the submission)",
        pool(parquet("p.parquet", **CLEAN_COLUMNS, team=["a", "a", None, "b", "b", "b"])),
    ),
    Case(
        "pool-column-path",
        PL,
        "a submission named ../../x (it would name a file outside --output)",
        evaluate_pool("{d}/p.parquet", extra=("--submission-column", "team")),
        2,
        "error: {d}/p.parquet: submission name '../../x' cannot name a file (no '/', '\\', "
        "leading '.' or control character)",
        pool(parquet("p.parquet", **CLEAN_COLUMNS, team=["a", "a", "a", "../../x", "b", "b"])),
    ),
    Case(
        "pool-previous-damaged",
        PL,
        "--previous with a damaged leaderboard.json",
        evaluate_pool("{d}/a.csv", "{d}/b.csv", extra=("--previous", "{d}/last")),
        2,
        "error: --previous {d}/last: not a leaderboard this tool wrote (…)",
        pool(
            text("a.csv", CLEAN), text("b.csv", CLEAN), text("last/leaderboard.json", '{"run": 3}')
        ),
    ),
    *(
        Case(
            f"pool-{option}-{kind}-board",
            PL,
            f"--{option} {'an' if kind == 'unsplit' else 'a'} {kind} board"
            + (" with --private-queries" if split else " without --private-queries"),
            evaluate_pool(
                "{d}/a.csv",
                "{d}/b.csv",
                extra=(f"--{option}", "{d}/last", *(SPLIT if split else ())),
            ),
            2,
            f"error: --{option} {{d}}/last: {sees}",
            pool(
                text("a.csv", CLEAN),
                text("b.csv", CLEAN),
                text("split.csv", "query_id\nQ2\n"),
                board("last", kind),
            ),
        )
        for option, kind, split, sees in (
            (
                "previous",
                "private",
                True,
                "a private board, and this run publishes a public one: "
                "--previous takes the published board of an earlier run of the same kind (a "
                "private board is never reused: it is rescored every run)",
            ),
            (
                "previous",
                "public",
                False,
                "a public board, and this run publishes an unsplit "
                "one: --previous takes the published board of an earlier run of the same kind",
            ),
            (
                "compare-to",
                "public",
                False,
                "a public board, and this run publishes an unsplit "
                "one: --compare-to takes a board of the same kind",
            ),
            (
                "compare-to",
                "unsplit",
                True,
                "an unsplit board, and this run writes a public and "
                "a private one: --compare-to takes a board of the same kind",
            ),
        )
    ),
    *(
        Case(
            f"pool-compare-to-{name}",
            PL,
            f"--compare-to a board whose leaderboard.json has {what}",
            evaluate_pool("{d}/a.csv", "{d}/b.csv", extra=("--compare-to", "{d}/last")),
            2,
            "error: --compare-to {d}/last: not a leaderboard this tool wrote (" + sees + ")",
            pool(text("a.csv", CLEAN), text("b.csv", CLEAN), board("last", edit=edit)),
        )
        for name, what, edit, sees in (
            (
                "text-figure",
                'a μAP "0.5" (text)',
                _text_ap,
                "submission 1: micro_ap is '0.5', not a number",
            ),
            (
                "no-name",
                "an entry without a submission name",
                _no_name,
                "submission 2: no submission name",
            ),
        )
    ),
    *(
        Case(
            f"freeze-board-{name}",
            PL,
            f"freeze: a board {what}",
            ["freeze", "--board", "{d}/board", "--output", "{d}/out"],
            2,
            "error: " + sees,
            setup,
            engines=("none",),  # freeze starts no Spark
            preexisting=False,  # freeze never takes --overwrite
        )
        for name, what, setup, sees in (
            (
                "half-written",
                "without _SUCCESS (a run killed while writing)",
                board("board", drop="_SUCCESS"),
                "{d}/board: no _SUCCESS there: not a board a pool run published whole",
            ),
            (
                "minimal",
                'whose leaderboard.json is {"run": {}, "submissions": []}',
                files(
                    board("board"), text("board/leaderboard.json", '{"run": {}, "submissions": []}')
                ),
                "{d}/board/leaderboard.json: not a leaderboard this tool wrote (no submissions)",
            ),
            (
                "not-utf8",
                "whose leaderboard.json is not UTF-8",
                files(board("board"), text("board/leaderboard.json", b'{"run": "\xe9"}')),
                "{d}/board/leaderboard.json: not a leaderboard this tool wrote (UnicodeDecodeError: …)",
            ),
        )
    ),
    Case(
        "pool-split-no-private-positive",
        PL,
        "a split whose private queries have no match (the distractor Q3 alone)",
        split_pool(),
        2,
        "error: {d}/split.csv: the private board has no positive pair (every query with a "
        "match is public): its μAP would be 0 for every submission",
        split_files("query_id\nQ3\n"),
    ),
    Case(
        "pool-split-no-public-positive",
        PL,
        "a split that makes every query with a match private",
        split_pool(),
        2,
        "error: {d}/split.csv: the public board has no positive pair (every query with a "
        "match is private): its μAP would be 0 for every submission",
        split_files("query_id\nQ1\nQ2\nQ4\nQ5\n"),
    ),
    Case(
        "pool-split-long-field",
        PL,
        "a split file with a field of 131,073 characters",
        split_pool(),
        2,
        "error: {d}/split.csv: line 3: a field longer than 131,072 characters (an id or a "
        "group name expected)",
        split_files(f"query_id\nQ1\n{LONG}\n"),
    ),
    Case(
        "pool-groups-long-field",
        PL,
        "a groups file with a field of 131,073 characters",
        split_pool(groups=True),
        2,
        "error: {d}/groups.csv: line 2: a field longer than 131,072 characters (an id or a "
        "group name expected)",
        split_files("query_id\nQ1\n", text("groups.csv", f"query_id,group\nQ1,{LONG}\n")),
    ),
    Case(
        "pool-split-invisible-header",
        PL,
        "a split file whose header holds an invisible character (a zero-width space)",
        split_pool(),
        2,
        "error: {d}/split.csv: line 1: missing column 'query_id' (has: 'query_id\\u200b')",
        split_files("query_id\u200b\nQ1\n"),
    ),
    Case(
        "pool-explain-empty-split",
        PL,
        "--explain with an empty split file (checked as a run checks it)",
        split_pool() + ["--explain"],
        2,
        "error: {d}/split.csv: empty (a header query_id and one row per query expected)",
        split_files(""),
    ),
    Case(
        "pool-queries-needed-tiny",
        PL,
        "--queries-needed 1e-300 (no board shows such a difference)",
        split_pool() + ["--queries-needed", "1e-300"],
        2,
        "error: --queries-needed must be a μAP difference from 0.000001 to 1, such as 0.01 "
        "(got 1e-300)",
        split_files("query_id\nQ1\n"),
    ),
]
