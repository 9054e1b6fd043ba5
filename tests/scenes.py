"""Module-scoped scenes shared by several test modules (a descriptor set, a Howe bench,
a pool and its baseline outputs) and the byte comparison of output folders: built once
per module that asks for them, as any fixture of this package's helpers."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from PIL import Image

from disc21spark.library import images as library
from disc21spark.queries.job import QueryJob
from disc21spark.queries.job import run as make_bench
from disc21spark.queries.spec import Settings
from disc21spark.queries.transforms import parse_tests
from disc21spark.testing.synth import write_hdf5_descriptors
from tests.pool_helpers import GT, random_submission
from tests.running import succeed

# the Howe bench's tests (``bench``)
TESTS = "identity,jumble:4x4,lowcon:30,crop:50"


def write_npy(path: Path, ids, vectors) -> str:
    np.save(path, np.asarray(vectors, dtype=np.float32))
    Path(str(path)[:-4] + "_ids.txt").write_text("".join(f"{i}\n" for i in ids))
    return str(path)


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    """Queries in two HDF5 files, references in an HDF5 and a .npy file, a background set;
    coarse values so that many scores tie, and duplicated reference vectors."""
    root = tmp_path_factory.mktemp("desc")
    rng = np.random.default_rng(42)
    nq, nb, d = 230, 400, 6
    xb = np.round(rng.standard_normal((nb, d)) * 2).astype(np.float32)
    xb[10:14] = xb[3]
    xq = np.round(rng.standard_normal((nq, d)) * 2).astype(np.float32)
    xq[:40] = xb[rng.integers(0, nb, 40)] + np.round(rng.standard_normal((40, d))) * 0.5
    qids = np.array([f"Q{i:05d}" for i in rng.permutation(nq)], dtype=object)
    rids = np.array([f"R{i:06d}" for i in rng.permutation(nb)], dtype=object)
    bg = rng.standard_normal((300, d)).astype(np.float32)
    write_hdf5_descriptors(root / "q1.h5", [f"imgs/{q}.jpg" for q in qids[:100]], xq[:100])
    write_hdf5_descriptors(root / "q2.h5", qids[100:], xq[100:])
    write_hdf5_descriptors(root / "r1.h5", rids[:150], xb[:150])
    write_npy(root / "r2.npy", rids[150:], xb[150:])
    write_hdf5_descriptors(root / "bg.h5", [f"B{i}" for i in range(300)], bg)
    gt = pd.DataFrame({"query_id": qids, "reference_id": [""] * nq})
    gt.loc[:39, "reference_id"] = [rids[i] for i in rng.integers(0, nb, 40)]
    gt.to_csv(root / "gt.csv", index=False)
    return dict(root=root, xq=xq, xb=xb, qids=qids, rids=rids, bg=bg)


@pytest.fixture(scope="module")
def bench(spark, tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("rank")
    lib = root / "library"
    lib.mkdir()
    for i in range(36):  # 96×72: a 4×4 grid divides it, so jumble keeps every pixel
        Image.fromarray(library.dead_leaves(5, i, 96, 72)).save(lib / f"dl_{i:03d}.png")
    settings = Settings(tuple(parse_tests(TESTS)), per_test=12, distractors=0.25, seed=3)
    make_bench(spark, QueryJob([str(lib)], str(root / "bench"), settings))
    return root / "bench"


def comparable(folder: Path) -> Files:
    """Every file's bytes, less the run record: ``run.json`` files are left out, a JSON
    report is compared without its ``run`` block and the leaderboard page without the
    run record it shows (their other bytes are the written ones)."""
    out = Files()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        name = str(path.relative_to(folder))
        if path.name == "run.json" or path.name.endswith("_run.json"):
            continue
        data = path.read_bytes()
        if path.suffix == ".html":  # the page shows the run record: its start and block
            data = re.sub(rb" \xc2\xb7 run started [^<]*", b"", data)
            data = re.sub(rb'<pre id="run">.*?</pre>', b"", data, flags=re.S)
        if path.suffix == ".json":
            doc = json.loads(data)
            if isinstance(doc, dict):
                doc.pop("run", None)
            data = json.dumps(doc, indent=2).encode()
        out[name] = data
    return out


class Files(dict):
    """A folder's comparable bytes; a short repr keeps hypothesis's reports readable."""

    def __repr__(self) -> str:
        return f"<{len(self)} files>"


def same(a: dict[str, bytes], b: dict[str, bytes]) -> None:
    assert sorted(a) == sorted(b)
    differ = [name for name in a if a[name] != b[name]]
    assert not differ, f"files differ: {differ}"


@pytest.fixture(scope="module")
def scene(tmp_path_factory):
    """A ground truth of 40 queries and five submissions full of tied scores."""
    root = tmp_path_factory.mktemp("determinism")
    GT.to_csv(root / "gt.csv", index=False)
    rng = np.random.default_rng(16)
    subs = {f"team{i}": random_submission(rng, 300) for i in range(5)}
    for name, frame in subs.items():
        frame.to_csv(root / f"{name}.csv", index=False)
    return root, subs


@pytest.fixture(scope="module")
def baseline(spark, scene, tmp_path_factory):
    """Each kind of output once, with the default partitions and sorted inputs."""
    root, subs = scene
    out = tmp_path_factory.mktemp("baseline")
    gt = str(root / "gt.csv")
    succeed(
        spark,
        [
            "evaluate",
            "--ground-truth",
            gt,
            "--predictions",
            str(root / "team0.csv"),
            "--engine",
            "spark",
            "--output",
            str(out / "single"),
        ],
    )
    succeed(
        spark,
        [
            "evaluate",
            "--ground-truth",
            gt,
            "--predictions",
            *sorted(str(root / f"{n}.csv") for n in subs),
            "--output",
            str(out / "pool"),
        ],
    )
    return Files(single=comparable(out / "single"), pool=comparable(out / "pool"))
