"""A pool's results as files: leaderboard.csv/.json/.md/.html/.tex, pr_curves/,
pr_curves.png; and the previous run's leaderboard read back for incremental runs."""

from __future__ import annotations

import csv
import json
import logging
import re
from dataclasses import replace
from pathlib import Path

import numpy as np

from disc21spark.core import board_files, fs, paths
from disc21spark.core.errors import InputError
from disc21spark.core.paths import display_path
from disc21spark.matching.model import ATTACHED, MatchingMetrics, PRCurve, Submission
from disc21spark.matching.reports.report import ROWS, json_safe, plot_curves, write_curve_csv
from disc21spark.matching.stats import compare
from disc21spark.matching.stats.groups_table import GroupTable
from disc21spark.matching.stats.model import STATISTICS, Resampling, Uncertainty
from disc21spark.pool import latex, page

log = logging.getLogger("disc21spark")
FIGURES = [key for key, _, _ in ROWS]
FIGURES.insert(FIGURES.index("threshold_at_p90") + 1, "precision_at_p90")
COLUMNS = [
    "rank",
    "submission",
    "status",
    "reason",
    "reused",
    "checksum",
    *FIGURES,
    *compare.COLUMNS,
    "warnings",
]
TOP_PLOTTED = 10
# a spreadsheet runs a cell starting with one of these as a formula (OWASP's list)
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def ordered(subs: list) -> list:
    """Scored submissions by μAP, then recall at P90, then name; invalid ones after, by name."""

    ok = sorted((s for s in subs if s.status == "ok"), key=board_key)
    bad = sorted((s for s in subs if s.status != "ok"), key=lambda s: s.name)
    return ok + bad


def board_key(s: Submission) -> tuple:
    """The board's order of scored submissions: μAP, then recall at P90, then name."""
    m = s.metrics
    r90 = m.recall_at_p90 if m.recall_at_p90 is not None else -1.0
    return (-m.micro_ap, -r90, s.name)


def records(subs: list) -> list[dict]:
    out = []
    board = ordered(subs)
    ok = [s for s in board if s.status == "ok"]
    statistics = compare.board_columns(
        [s.metrics.micro_ap for s in ok],
        [board_key(s) for s in ok],
        [s.metrics.uncertainty for s in ok],
        ok[0].metrics.n_queries if ok else None,
    )
    for rank, s in enumerate(board, start=1):
        figures = s.metrics.to_dict() if s.metrics is not None else {}
        if s.status == "ok":
            figures.update(statistics[rank - 1])
        out.append(
            {
                "rank": rank if s.status == "ok" else None,
                "submission": s.name,
                "status": s.status,
                "reason": s.reason,
                "reused": s.reused,
                "checksum": s.checksum,
                **{k: json_safe(figures.get(k)) for k in FIGURES + compare.COLUMNS},
                "warnings": list(s.metrics.warnings) if s.metrics is not None else [],
                "groups": _groups(s),
            }
        )
    return out


def _groups(s: Submission) -> dict | None:
    """metrics.json's ``groups`` block of a scored submission (None: no query groups)."""
    if s.metrics is None or s.metrics.groups is None:
        return None
    return s.metrics.groups.to_dict()


def group_names(rows: list[dict]) -> list[str]:
    """The groups of the board, in name order (every scored submission has the same)."""
    return next((list(g["group"] for g in r["groups"]["groups"]) for r in rows if r["groups"]), [])


def write(folder: Path, subs: list, run: dict) -> None:
    rows = records(subs)
    (folder / "leaderboard.json").write_text(
        json.dumps({"run": run, "submissions": rows}, indent=2, ensure_ascii=False) + "\n"
    )
    by_group = [f"micro_ap:{name}" for name in group_names(rows)]
    with (folder / "leaderboard.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS + by_group)
        writer.writeheader()
        for row in rows:
            cells = {k: _csv_cell(row[k]) for k in COLUMNS}
            cells.update(zip(by_group, map(_csv_cell, _group_values(row))))
            writer.writerow(cells)
    text = markdown(rows) + _detectable_note(rows)
    if by_group:
        text += "\n\n" + group_markdown(rows)
    (folder / "leaderboard.md").write_text(text + "\n")
    tex = latex.render(rows, latex.resampling_of(subs))
    (folder / "leaderboard.tex").write_text(tex, encoding="utf-8")
    curves = folder / "pr_curves"
    curves.mkdir()
    scored = [s for s in ordered(subs) if s.status == "ok"]
    page.write_page(folder / "leaderboard.html", rows, scored, run)
    for s in scored:
        write_curve_csv(curves / curve_file(s.name), s.metrics)
    write_replicates(folder / "resamples", scored)
    plot_curves(
        folder / "pr_curves.png",
        [(s.name, s.metrics) for s in scored[:TOP_PLOTTED]],
        f"DISC21 matching track: top {min(TOP_PLOTTED, len(scored))} of {len(subs)}",
    )


def write_queries_needed(folder: Path, subs: list, difference: float) -> None:
    """queries_needed.csv: per place with a next one, the queries ``difference`` needs."""
    rows = compare.queries_needed_rows(records(subs), difference)
    with (folder / "queries_needed.csv").open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=compare.NEEDED_COLUMNS)
        writer.writeheader()
        writer.writerows({k: _csv_cell(v) for k, v in r.items()} for r in rows)


def queries_needed_lines(subs: list, difference: float) -> list[str]:
    """The terminal's lines of queries_needed.csv."""
    rows = compare.queries_needed_rows(records(subs), difference)
    out = [f"queries a μAP difference of {difference:g} from the next place would need:"]
    for r in rows:
        if r["next_detectable"] is None:
            why = "no bootstrap replicates for this pair; they need --resamples above 0"
            out.append(f"  {r['rank']:>3}  {r['submission']}: not measured ({why})")
        elif r["queries_needed"] is None:
            out.append(
                f"  {r['rank']:>3}  {r['submission']}: no number of queries (it and the next "
                "place score the same on every resample)"
            )
        else:
            out.append(
                f"  {r['rank']:>3}  {r['submission']}: {r['queries_needed']:,} queries "
                f"(these detect {r['next_detectable']:.4f})"
            )
    return out


def write_replicates(folder: Path, scored: list[Submission]) -> None:
    """resamples/<name>.npy: float64 (statistics, resamples), each scored submission's
    replicates (model.STATISTICS order), so that --previous can compare a reused
    submission with the new ones."""
    drawn = [
        s for s in scored if s.metrics.uncertainty is not None and s.metrics.uncertainty.replicates
    ]
    if not drawn:
        return
    folder.mkdir()
    for s in drawn:
        found = s.metrics.uncertainty.replicates
        np.save(folder / replicates_file(s.name), np.stack([found[k] for k in STATISTICS]))


def replicates_file(name: str) -> str:
    return curve_file(name)[: -len(".csv")] + ".npy"


def curve_file(name: str) -> str:
    """pr_curves/<name>.csv; a name from a submission column may hold a path separator
    (``=cmd|' /C calc'!A0``), which is percent-encoded, with ``%`` itself, so that two
    names never share a file. Other names keep their file name."""
    safe = name.replace("%", "%25").replace("/", "%2F").replace("\\", "%5C").replace("\0", "%00")
    return f"{safe}.csv"


def _text(value) -> str:
    return repr(value) if isinstance(value, float) else str(value)


def _csv_cell(value: object) -> str:
    """A leaderboard.csv cell; text from a team (a name, a reason) that a spreadsheet would
    run as a formula gets a leading quote. Figures are written as they are: a negative
    threshold is a number, which no spreadsheet runs."""
    if value is None:
        return ""
    if isinstance(value, list):
        value = "; ".join(map(str, value))
    if isinstance(value, str):
        return "'" + value if value.startswith(FORMULA_STARTS) else value
    return _text(value)


def markdown(rows: list[dict]) -> str:
    lines = [
        "| rank | tier | submission | μAP | interval | recall@P90 | recall@1 | recall@10 | "
        "predictions | μAP − next [interval], flips | status |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r["status"] == "ok":
            r90 = "—" if r["recall_at_p90"] is None else f"{r['recall_at_p90']:.6f}"
            notes = " (reused)" if r["reused"] else ""
            if r["tie_sensitive"]:
                notes += f"; place {r['place_optimistic']} with optimistic ties"
            tier = "" if r["tier"] is None else r["tier"]
            lines.append(
                f"| {r['rank']} | {tier} | {_md(r['submission'])} | {r['micro_ap']:.6f} | "
                f"{_span(r['micro_ap_low'], r['micro_ap_high'])} | {r90} | "
                f"{r['recall_at_rank1']:.6f} | {r['recall_at_rank10']:.6f} | "
                f"{r['n_predictions']:,} | {_versus(r)} | ok{notes} |"
            )
        else:
            lines.append(
                f"| | | {_md(r['submission'])} | | | | | | | | invalid: {_md(r['reason'])} |"
            )
    return "\n".join(lines)


def _detectable_note(rows: list[dict]) -> str:
    """The board's line on detectable gaps (``compare.detectable_sentence``) after a blank
    line; "" without intervals."""
    sentence = compare.detectable_sentence(rows)
    return f"\n\n{sentence}" if sentence else ""


def _group_values(row: dict) -> list[float | None]:
    return [g["micro_ap"] for g in row["groups"]["groups"]] if row["groups"] else []


def group_markdown(rows: list[dict]) -> str:
    """μAP by query group, one row per scored submission (board order), one column per
    group: the μAP and its interval."""
    names = group_names(rows)
    scored = [r for r in rows if r["status"] == "ok" and r["groups"]]
    first = scored[0]["groups"] if scored else {"file": "", "ungrouped_queries": 0}
    lines = [
        f"μAP by query group ({_md(first['file'])}; each group with the "
        f"{first['ungrouped_queries']:,} queries in no group)",
        "",
        "| rank | submission | " + " | ".join(_md(n) for n in names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for r in scored:
        cells = []
        for g in r["groups"]["groups"]:
            ap = "—" if g["micro_ap"] is None else f"{g['micro_ap']:.4f}"
            span = _span(g["micro_ap_low"], g["micro_ap_high"])
            cells.append(ap + (f" ({span})" if span else ""))
        lines.append(f"| {r['rank']} | {_md(r['submission'])} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _span(low: float | None, high: float | None) -> str:
    return "" if low is None else f"{low:.4f}–{high:.4f}"


def _versus(r: dict) -> str:
    """The comparison with the next place: the μAP difference, its interval, the flips."""
    if r["next_difference"] is None:
        return ""
    text = f"{r['next_difference']:+.4f}"
    if r["next_difference_low"] is not None:
        text += f" [{r['next_difference_low']:+.4f}, {r['next_difference_high']:+.4f}], "
        text += f"{r['next_flip_share']:.1%}"
    return text


def _md(text: object) -> str:
    """A team's text in a Markdown cell: a pipe would end the cell, and a renderer that
    passes HTML through would run a name such as ``<script>``; backslash escapes keep
    both as text and stay readable in the terminal table."""
    return re.sub(r"([\\|<>])", r"\\\1", str(text))


def format_table(subs: list, limit: int = 20) -> str:
    rows = records(subs)
    text = markdown(rows[:limit])
    if len(rows) > limit:
        text += f"\n… {len(rows) - limit} more in leaderboard.md"
    text += _detectable_note(rows)
    if group_names(rows):
        text += "\n\n" + group_markdown(rows[:limit])
    return text


def read_previous(folder: str, settings: dict) -> dict:
    """Submissions of a previous run's output folder, by name, when it was made with the
    same ground truth and settings; otherwise nothing is reused. A folder on another
    file system is copied here first (a leaderboard and its curves: small files)."""
    if paths.is_uri(folder) and fs.exists(folder):
        with fs.local_copy(folder) as here:
            return _read_previous(folder, Path(here), settings)
    return _read_previous(folder, Path(display_path(folder)), settings)


def _read_previous(folder: str, here: Path, settings: dict) -> dict:
    path = here / "leaderboard.json"
    if not path.exists():
        log.warning("--previous %s: no leaderboard.json there; scoring everything", folder)
        return {}
    label = f"--previous {folder}"
    try:
        text = path.read_text()
    except (OSError, ValueError) as exc:
        raise InputError(label, f"not a leaderboard this tool wrote ({exc})") from None
    doc = board_files.parse(text, label)
    try:
        return _previous_submissions(here, doc, settings, label)
    except (ValueError, KeyError, TypeError, IndexError, AttributeError) as exc:
        # a damaged record is the user's file, not our bug: refuse it in one line
        reason = f"not a leaderboard this tool wrote ({type(exc).__name__}: {exc})"
        raise InputError(f"--previous {folder}", reason) from None


def _previous_submissions(folder: Path, doc: dict, settings: dict, label: str) -> dict:
    run = doc.get("run", {})
    changed = [k for k, v in settings.items() if run.get(k) != v]
    if changed:
        log.warning("--previous %s: %s changed; scoring everything", folder, ", ".join(changed))
        return {}
    out = {}
    for row in doc.get("submissions", []):
        s = Submission(row["submission"], "", row.get("checksum", ""), row["status"], row["reason"])
        if s.status == "ok":
            curve = folder / "pr_curves" / curve_file(s.name)
            if not curve.exists():
                continue
            s.metrics = _metrics(row, curve, _uncertainty(folder, row, settings, label))
            if row.get("groups"):
                table = GroupTable.from_dict(row["groups"], _resampling(settings))
                s.metrics = replace(s.metrics, groups=table)
        out[s.name] = s
    return out


def _uncertainty(folder: Path, row: dict, settings: dict, label: str) -> Uncertainty | None:
    """A reused submission's replicates and optimistic μAP, as the previous run wrote them
    (each file checked: ``board_files.replicates``)."""
    if row.get("micro_ap_optimistic") is None:
        return None
    r = _resampling(settings)
    name = f"resamples/{replicates_file(row['submission'])}"
    found, shape = folder / name, (len(STATISTICS), r.resamples)
    named = f"{label}/{name}"
    if not r.resamples:
        return Uncertainty(r, {}, row["micro_ap_optimistic"])
    if not found.is_file():  # a reused interval without its replicates would differ
        reason = f"missing, or not a file (the board was scored with --resamples {r.resamples})"
        raise InputError(named, reason)
    replicates = dict(zip(STATISTICS, board_files.replicates(found, named, shape)))
    return Uncertainty(r, replicates, row["micro_ap_optimistic"])


def _resampling(settings: dict) -> Resampling:
    return Resampling(**{k: settings[k] for k in ("resamples", "confidence", "seed")})


def _metrics(row: dict, curve_csv: Path, uncertainty: Uncertainty | None) -> MatchingMetrics:
    with curve_csv.open() as fh:
        data = list(csv.reader(fh))[1:]
    values = np.array([[float(x) for x in r] for r in data]) if data else np.zeros((0, 3))
    curve = PRCurve(values[:, 0], values[:, 1], values[:, 2])
    fields = {k: row[k] for k in MatchingMetrics.__dataclass_fields__ if k not in ATTACHED}
    # a leaderboard written before the coverage warnings has none
    warnings = tuple(row.get("warnings") or ())
    return MatchingMetrics(**fields, curve=curve, warnings=warnings, uncertainty=uncertainty)
