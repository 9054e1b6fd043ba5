"""The benchmark folder that make_queries writes and rank evaluation reads.

    references.csv/.parquet   reference_id, path, width, height, bytes, sha256
    queries/Q000000.png       the altered images
    queries.csv/.parquet      query_id, file, test, reference_id, source_path, params, seed,
                              stream, width, height, bytes, sha256
    ground_truth.csv          query_id,reference_id (DISC21 format; empty for a distractor)
    query_groups.csv          query_id,group: the test of each query, distractors in no group
                              (``evaluate --query-groups``; rank-eval reads it)
    skipped.csv               path,reason
    contact_sheet.png         some queries beside their originals
    bench.json                the settings, counts and library versions

Everything here is a function of the inputs and the seed (no times, no host names), so two
runs with the same seed give byte-identical folders.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from PIL import Image, ImageDraw, ImageFont

from disc21spark.core.errors import InputError
from disc21spark.core.invocation import command
from disc21spark.core.paths import display_path
from disc21spark.queries.spec import Made, Selection, Settings
from disc21spark.queries.transforms import parse_tests

GROUND_TRUTH = "ground_truth.csv"
QUERY_GROUPS = "query_groups.csv"
QUERY_COLUMNS = (
    "query_id",
    "file",
    "test",
    "reference_id",
    "source_path",
    "params",
    "seed",
    "stream",
    "width",
    "height",
    "bytes",
    "sha256",
)


def write(
    folder: Path, settings: Settings, selection: Selection, made: list[Made], library: list[str]
) -> dict:
    """Write the manifests, ground truth and contact sheet; return bench.json's content."""
    refs = pd.DataFrame(
        [
            (rid, display_path(s.path), s.width, s.height, s.nbytes, s.sha256)
            for rid, s in selection.references
        ],
        columns=["reference_id", "path", "width", "height", "bytes", "sha256"],
    )
    by_id = {m.query_id: m for m in made}
    if len(by_id) != len(selection.queries):
        raise RuntimeError(f"{len(by_id)} queries made for {len(selection.queries)} planned")
    queries = _query_table(settings, selection, by_id)
    for name, table in (("references", refs), ("queries", queries)):
        table.to_csv(folder / f"{name}.csv", index=False)
        table.to_parquet(folder / f"{name}.parquet", index=False)
    queries[["query_id", "reference_id"]].to_csv(folder / GROUND_TRUTH, index=False)
    write_query_groups(folder / QUERY_GROUPS, queries)
    pd.DataFrame(selection.skipped, columns=["path", "reason"]).assign(
        path=lambda t: t.path.map(display_path)
    ).to_csv(folder / "skipped.csv", index=False)
    contact_sheet(folder / "contact_sheet.png", settings, selection, by_id)
    document = {
        # the order the folders were named in changes no image's id, choice or bytes
        "library": sorted(library),
        "tests": [
            {"name": t.name, "steps": [{"step": s.text, "about": s.kind.about} for s in t.steps]}
            for t in settings.tests
        ],
        "queries_per_test": settings.per_test,
        "distractors": settings.distractors,
        "seed": settings.seed,
        "format": settings.fmt,
        "counts": {
            "library_files": selection.files,
            "references": len(selection.references),
            "queries": len(selection.queries),
            "distractor_queries": sum(1 for q in selection.queries if not q.reference_id),
            "held_out": settings.n_distractors,
            "skipped": len(selection.skipped),
        },
        "versions": _versions(),
    }
    (folder / "bench.json").write_text(json.dumps(document, indent=2) + "\n")
    return document


def _query_table(settings: Settings, selection: Selection, by_id: dict[str, Made]) -> pd.DataFrame:
    """queries.csv/.parquet: each planned query with the image made for it (QUERY_COLUMNS)."""
    rows = []
    for q in selection.queries:
        m = by_id[q.query_id]
        rows.append(
            (
                q.query_id,
                f"queries/{q.query_id}.{settings.fmt}",
                settings.tests[q.test].name,
                q.reference_id,
                display_path(q.path),
                m.params,
                settings.seed,
                q.number,
                m.width,
                m.height,
                m.nbytes,
                m.sha256,
            )
        )
    return pd.DataFrame(rows, columns=list(QUERY_COLUMNS))


def write_query_groups(path: Path, queries: pd.DataFrame) -> None:
    """query_groups.csv: each matched query's test as its group; a distractor (no
    reference) is in no group, so that its false positives weigh on every test alike."""
    matched = queries[queries.reference_id.fillna("").astype(str) != ""]
    matched[["query_id", "test"]].rename(columns={"test": "group"}).to_csv(path, index=False)


def _versions() -> dict:
    import PIL

    return {"pillow": PIL.__version__, "numpy": np.__version__}


def contact_sheet(path: Path, settings: Settings, selection: Selection, made: dict) -> None:
    """One row per test: a few originals with their queries, labelled with the ids."""
    font = ImageFont.load_default(size=13)
    gap, label_w, caption_h = 8, 150, 18
    rows = []
    for t, test in enumerate(settings.tests):
        pairs = [
            (q, made[q.query_id].thumbs)
            for q in selection.queries
            if q.test == t and q.sheet and made[q.query_id].thumbs
        ]
        rows.append((test.name, pairs))
    thumbs = {}
    for _, pairs in rows:
        for q, (a, b) in pairs:
            thumbs[q.query_id] = tuple(Image.open(io.BytesIO(x)).convert("RGB") for x in (a, b))

    def row_width(pairs):
        return label_w + sum(
            thumbs[q.query_id][0].width + thumbs[q.query_id][1].width + 3 * gap for q, _ in pairs
        )

    row_h = 128 + caption_h + gap
    width = max([row_width(p) for _, p in rows] + [label_w + 200])
    sheet = Image.new("RGB", (width, row_h * len(rows) + gap), (255, 255, 255))
    draw = ImageDraw.Draw(sheet)
    for r, (name, pairs) in enumerate(rows):
        y = gap + r * row_h
        draw.text((gap, y + 56), name, fill=(0, 0, 0), font=font)
        x = label_w
        for q, _ in pairs:
            original, query = thumbs[q.query_id]
            sheet.paste(original, (x, y))
            sheet.paste(query, (x + original.width + gap, y))
            caption = f"{q.reference_id} -> {q.query_id}"
            draw.text((x, y + 130), caption, fill=(60, 60, 60), font=font)
            x += original.width + query.width + 3 * gap
        if not pairs:
            draw.text((x, y + 56), "(no matched query to show)", fill=(120, 0, 0), font=font)
    sheet.save(path, format="PNG")


@dataclass(frozen=True)
class Bench:
    """A benchmark folder read back: the tables rank evaluation needs."""

    folder: Path
    settings: dict
    references: pd.DataFrame
    queries: pd.DataFrame

    @property
    def ground_truth(self) -> Path:
        return self.folder / GROUND_TRUTH


def read(folder: str | Path) -> Bench:
    """Open a folder written by make_queries, or say in one line what is missing."""
    root = Path(folder).absolute()  # query files are named relative to it
    if not root.is_dir():
        raise InputError(
            str(root), f"not a folder (give the --output of {command('make-queries')})"
        )
    for name in ("bench.json", "references.parquet", "queries.parquet", GROUND_TRUTH):
        if not (root / name).is_file():
            raise InputError(
                str(root), f"{name} is missing: not a folder written by {command('make-queries')}"
            )
    try:
        settings = json.loads((root / "bench.json").read_text())
        parse_tests(",".join(t["name"] for t in settings["tests"]))
    except (ValueError, KeyError, TypeError) as exc:
        raise InputError(str(root / "bench.json"), f"not readable ({exc})") from None
    refs = pd.read_parquet(root / "references.parquet")
    queries = pd.read_parquet(root / "queries.parquet")
    missing = [c for c in QUERY_COLUMNS if c not in queries.columns]
    if missing:
        raise InputError(str(root / "queries.parquet"), f"missing columns {', '.join(missing)}")
    return Bench(root, settings, refs, queries)
