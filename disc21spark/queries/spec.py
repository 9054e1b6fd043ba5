"""Which library images become references, which become queries under which test, and the
work of making one query: the single-machine specification that the Spark job distributes.

Every random choice comes from the seed alone (numpy SeedSequence with a spawn key per use):
the selection from key (0,), query number i from key (1, i). No draw depends on which
executor or partition does the work, so the same seed gives byte-identical files.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from disc21spark.core import config
from disc21spark.core.errors import InputError
from disc21spark.queries import codec
from disc21spark.queries.transforms import Test, TooSmall


@dataclass(frozen=True)
class Settings:
    tests: tuple[Test, ...]
    per_test: int
    distractors: float
    seed: int
    fmt: str = config.value("make-queries", "query_format")  # conf/defaults.ini [make-queries]
    sheet_per_test: int = config.value("make-queries", "sheet_per_test", int)

    def __post_init__(self) -> None:
        if self.per_test < 1:
            raise InputError("--queries-per-test", f"must be at least 1 (got {self.per_test})")
        if not 0.0 <= self.distractors < 1.0:
            raise InputError("--distractors", f"is a fraction in [0, 1) (got {self.distractors:g})")
        if self.fmt not in codec.FORMATS:
            raise InputError("--query-format", f"must be one of {', '.join(codec.FORMATS)}")

    @property
    def n_distractors(self) -> int:
        return round(self.per_test * self.distractors)


@dataclass(frozen=True)
class Scanned:
    """One library file as the scan saw it."""

    path: str
    nbytes: int
    width: int = 0
    height: int = 0
    sha256: str = ""
    problem: str = ""


@dataclass(frozen=True)
class Planned:
    """One query to make: what goes in, under which test, and where it is written."""

    query_id: str
    number: int  # the query's index: its random stream
    path: str  # the library file it is made from
    reference_id: str  # "" for a distractor (its source is held out of the references)
    test: int  # index in Settings.tests
    sheet: bool  # shown on the contact sheet


@dataclass
class Selection:
    references: list[tuple[str, Scanned]]  # (reference id, file) in path order
    queries: list[Planned]
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, reason)
    files: int = 0  # library files seen, readable or not


def scan_one(path: str, content: bytes) -> Scanned:
    try:
        img = codec.decode(content)
    except codec.Unreadable as exc:
        return Scanned(path, len(content), problem=str(exc))
    return Scanned(path, len(content), img.shape[1], img.shape[0], codec.sha256(content))


def rng_for(seed: int, *key: int) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(entropy=seed, spawn_key=key))


def ids(prefix: str, count: int) -> list[str]:
    width = max(6, len(str(max(count - 1, 0))))
    return [f"{prefix}{i:0{width}d}" for i in range(count)]


def select(scanned: list[Scanned], settings: Settings) -> Selection:
    """References, held-out distractor sources and matched sources, from the seed alone.

    Each test alters the same source images, so tests are compared on the same queries
    (Howe's design); a distractor's source is held out of the references (DISC21's).
    """
    scanned = sorted(scanned, key=lambda s: s.path)
    skipped = [(s.path, s.problem) for s in scanned if s.problem]
    readable = [s for s in scanned if not s.problem]
    eligible = []
    for s in readable:
        reason = _too_small(s, settings.tests)
        if reason:
            skipped.append((s.path, f"not used as a query source (kept as a reference): {reason}"))
        else:
            eligible.append(s)
    n, n_dis = settings.per_test, settings.n_distractors
    if len(eligible) < n:
        raise InputError(
            f"--queries-per-test {n}",
            f"needs {n} distinct source images; the library has "
            f"{len(eligible)} usable ({len(scanned)} files, {len(scanned) - len(readable)} "
            f"unreadable, {len(readable) - len(eligible)} too small for the tests)",
        )
    if len(readable) - n_dis < 1:
        raise InputError(
            "--distractors", "no reference image would be left after holding out the distractors"
        )
    rng = rng_for(settings.seed, 0)
    chosen = [eligible[i] for i in rng.permutation(len(eligible))[:n]]
    held = {s.path for s in chosen[:n_dis]}
    kept = [s for s in readable if s.path not in held]
    references = list(zip(ids("R", len(kept)), kept))
    ref_of = {s.path: rid for rid, s in references}
    # the distractors are mixed in, so a query id says nothing about having a match
    order = [chosen[i] for i in rng.permutation(n)]
    query_ids = ids("Q", n * len(settings.tests))
    planned = []
    for t in range(len(settings.tests)):
        shown = 0
        for j, s in enumerate(order):
            number = t * n + j
            ref = ref_of.get(s.path, "")
            sheet = bool(ref) and shown < settings.sheet_per_test
            shown += sheet
            planned.append(Planned(query_ids[number], number, s.path, ref, t, sheet))
    return Selection(references, planned, sorted(skipped), len(scanned))


def _too_small(s: Scanned, tests: tuple[Test, ...]) -> str:
    for test in tests:
        try:
            test.output_size((s.height, s.width))
        except TooSmall as exc:
            return str(exc)
    return ""


@dataclass(frozen=True)
class Made:
    """What the manifest records of one query, plus the thumbnails for the contact sheet."""

    query_id: str
    width: int
    height: int
    nbytes: int
    sha256: str
    params: str  # JSON: the parameters each step drew
    thumbs: tuple[bytes, bytes] | None = None  # (original, query) PNG thumbnails


SHEET_HEIGHT = 128


def make_all(content: bytes, plans: list[Planned], settings: Settings) -> list[tuple[Made, bytes]]:
    """Every query of one source image, decoded once (each test alters the same sources),
    with its encoded bytes: whoever owns the output folder writes them."""
    original = codec.decode(content)
    return [make_one(original, plan, settings) for plan in plans]


def query_file(folder: str | os.PathLike, query_id: str, settings: Settings) -> str:
    return os.path.join(folder, f"{query_id}.{settings.fmt}")


def make_one(original: np.ndarray, plan: Planned, settings: Settings) -> tuple[Made, bytes]:
    """Alter one image: what the manifest says of it, and its encoded bytes."""
    rng = rng_for(settings.seed, 1, plan.number)
    altered, drawn = settings.tests[plan.test].apply(original, rng)
    data = codec.encode(altered, settings.fmt)
    thumbs = None
    if plan.sheet:
        thumbs = tuple(
            codec.encode(codec.thumbnail(a, SHEET_HEIGHT), "png") for a in (original, altered)
        )
    made = Made(
        plan.query_id,
        altered.shape[1],
        altered.shape[0],
        len(data),
        codec.sha256(data),
        json.dumps(drawn, separators=(",", ":")),
        thumbs,
    )
    return made, data


def make_local(paths: list[str], settings: Settings, folder: str) -> tuple[Selection, list[Made]]:
    """The whole job in one process, file by file: the specification the Spark job must equal
    (and the single-process baseline of the benchmark)."""
    scanned = []
    for p in paths:
        scanned.append(scan_one(p, Path(p).read_bytes()))
    selection = select(scanned, settings)
    os.makedirs(folder, exist_ok=True)
    made = []
    for path, plans in by_source(selection.queries).items():
        for one, data in make_all(Path(path).read_bytes(), plans, settings):
            Path(query_file(folder, one.query_id, settings)).write_bytes(data)
            made.append(one)
    return selection, made


def by_source(planned: list[Planned]) -> dict[str, list[Planned]]:
    out: dict[str, list[Planned]] = {}
    for q in planned:
        out.setdefault(q.path, []).append(q)
    return out
