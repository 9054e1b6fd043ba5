"""The descriptor track's files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np

from tests.bad_input.common import MATCHING_FILES, Case, D, assert_metrics, files, text
from tests.bad_inputs import (
    CLEAN,
    QIDS,
    RIDS,
    XB,
    XQ,
)

# ------------------------------------------------------------------- descriptors


def h5(name: str, ids=None, vectors=None, *, drop: str = "", dtype=np.float32):
    def write(d: Path) -> None:
        import h5py

        with h5py.File(d / name, "w") as f:
            if drop != "vectors":
                f.create_dataset("vectors", data=np.asarray(vectors, dtype=dtype))
            if drop != "image_names":
                f.create_dataset(
                    "image_names", data=np.array(ids, dtype=object), dtype=h5py.string_dtype()
                )

    return write


def descriptors(query=None, reference=None) -> Callable[[Path], None]:
    return files(
        text("gt.csv", "Q1,R1\nQ2,R2\nQ3,\nQ4,R4\n"),
        query or h5("q.h5", QIDS, XQ),
        reference or h5("r.h5", RIDS, XB),
    )


def evaluate_descriptors(*extra: str, q: str = "{d}/q.h5", r: str = "{d}/r.h5") -> list[str]:
    return [
        "evaluate",
        "--ground-truth",
        "{d}/gt.csv",
        "--query-descriptors",
        q,
        "--reference-descriptors",
        r,
        "--knn",
        "2",
        "--output",
        "{d}/out",
        *extra,
    ]


def descriptor_figures(d: Path, engine: str) -> None:
    """The kNN pairs of exact −squared distances (ties by reference id), scored by the
    specification: what the float32 inputs give."""
    from disc21spark.matching.model import GroundTruth
    from disc21spark.matching.oracle import spec

    x, b = XQ.astype(np.float64), XB.astype(np.float64)
    scores = -((x[:, None, :] - b[None, :, :]) ** 2).sum(-1).astype(np.float32)
    q, r, s = [], [], []
    for i, row in enumerate(scores):
        for j in sorted(range(len(RIDS)), key=lambda j: (-row[j], RIDS[j]))[:2]:
            q.append(QIDS[i]), r.append(RIDS[j]), s.append(float(row[j]))
    gt = GroundTruth(
        "gt",
        np.array(QIDS, dtype=object),
        np.array(["Q1", "Q2", "Q4"], dtype=object),
        np.array(["R1", "R2", "R4"], dtype=object),
    )
    expected = spec.evaluate(np.array(q, dtype=object), np.array(r, dtype=object), np.array(s), gt)
    assert_metrics(d / "out", expected)


NAN_XB = XB.copy()
NAN_XB[2, 1] = np.nan
CASES: list[Case] = [
    Case(
        "desc-clean",
        D,
        "clean HDF5 descriptors (the reference for the odd ones)",
        evaluate_descriptors(),
        0,
        "the table of figures",
        descriptors(),
        outputs=MATCHING_FILES,
        check=descriptor_figures,
    ),
    Case(
        "desc-float64",
        D,
        "float64 vectors",
        evaluate_descriptors(),
        0,
        "the float32 file's figures",
        descriptors(h5("q.h5", QIDS, XQ, dtype=np.float64), h5("r.h5", RIDS, XB, dtype=np.float64)),
        outputs=MATCHING_FILES,
        check=descriptor_figures,
    ),
    Case(
        "desc-no-vectors",
        D,
        "HDF5 without vectors",
        evaluate_descriptors(),
        2,
        "error: {d}/r.h5: missing HDF5 dataset 'vectors'",
        descriptors(reference=h5("r.h5", RIDS, XB, drop="vectors")),
    ),
    Case(
        "desc-no-names",
        D,
        "HDF5 without image_names",
        evaluate_descriptors(),
        2,
        "error: {d}/q.h5: missing HDF5 dataset 'image_names'",
        descriptors(query=h5("q.h5", QIDS, XQ, drop="image_names")),
    ),
    Case(
        "desc-lengths",
        D,
        "ids and vectors of different lengths",
        evaluate_descriptors(),
        2,
        "error: {d}/r.h5: 4 image_names for 5 vectors (they must match)",
        descriptors(reference=h5("r.h5", RIDS[:4], XB)),
    ),
    Case(
        "desc-zero-rows",
        D,
        "zero query rows",
        evaluate_descriptors(),
        2,
        "error: {d}/q.h5: the query side has no descriptors",
        descriptors(query=h5("q.h5", [], np.zeros((0, 4)))),
    ),
    Case(
        "desc-nan",
        D,
        "a NaN in a reference vector",
        evaluate_descriptors(),
        2,
        "error: {d}/r.h5: row 3 (image 'R3'): vector has NaN or infinite values",
        descriptors(reference=h5("r.h5", RIDS, NAN_XB)),
    ),
    Case(
        "desc-nan-query",
        D,
        "a NaN in a query vector",
        evaluate_descriptors(),
        2,
        "error: {d}/q.h5: row 1 (image 'Q1'): vector has NaN or infinite values",
        descriptors(query=h5("q.h5", QIDS, np.where(np.eye(4) > 0, np.nan, XQ))),
    ),
    Case(
        "desc-max-dim",
        D,
        "more dimensions than --max-dim",
        evaluate_descriptors("--max-dim", "3"),
        2,
        "error: {d}/r.h5: 4 dimensions, more than --max-dim 3",
        descriptors(),
    ),
    Case(
        "desc-dims",
        D,
        "query and reference dimensions differ",
        evaluate_descriptors(),
        2,
        "error: {d}/q.h5: query descriptors have 4 dimensions, references have 3",
        descriptors(reference=h5("r.h5", RIDS, np.zeros((5, 3)))),
    ),
    Case(
        "desc-repeated-ids",
        D,
        "a reference id repeated",
        evaluate_descriptors(),
        2,
        "error: {d}/r.h5: image id 'R2' appears 2 times in the reference descriptors",
        descriptors(reference=h5("r.h5", ["R1", "R2", "R3", "R2", "R5"], XB)),
    ),
    Case(
        "desc-empty-id",
        D,
        "an empty query id",
        evaluate_descriptors(),
        2,
        "error: {d}/q.h5: row 2: empty image id",
        descriptors(query=h5("q.h5", ["Q1", "", "Q3", "Q4"], XQ)),
    ),
    Case(
        "desc-text-h5",
        D,
        "a text file named .h5",
        evaluate_descriptors(),
        2,
        "error: {d}/r.h5: cannot be read as HDF5 (…)",
        descriptors(reference=text("r.h5", CLEAN)),
    ),
    Case(
        "desc-npy-no-ids",
        D,
        ".npy without its _ids.txt",
        evaluate_descriptors(r="{d}/r.npy"),
        2,
        "error: {d}/r.npy: needs its ids file {d}/r_ids.txt (one id per line)",
        descriptors(reference=lambda d: np.save(d / "r.npy", XB)),
    ),
    Case(
        "desc-factory",
        D,
        "an unbuildable FAISS factory string",
        evaluate_descriptors("--index", "IVF-nonsense"),
        2,
        "error: --index IVF-nonsense: FAISS cannot build it (could not parse index string IVF-nonsense)",
        descriptors(),
    ),
    Case(
        "desc-glob-nothing",
        D,
        "a glob matching no descriptor file",
        evaluate_descriptors(q="{d}/none*.h5"),
        2,
        "error: {d}/none*.h5: no query descriptor file found",
        descriptors(),
    ),
    Case(
        "desc-score-norm-nan",
        D,
        "--score-norm-weight nan",
        evaluate_descriptors("--score-norm-descriptors", "{d}/r.h5", "--score-norm-weight", "nan"),
        2,
        "error: --score-norm-weight must be a finite number",
        descriptors(),
        engines=("none",),
    ),
]
