"""Each method's vectors for rank_eval (ranks/job.py computes them or reads them here):
read from a folder written by extract_descriptors --bench and checked against the bench's
ids, computed ones kept beside the report, put in the bench's row order, their distance
checked."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from disc21spark.core.errors import InputError
from disc21spark.core.invocation import command
from disc21spark.queries import bench_folder
from disc21spark.ranks import distances
from disc21spark.ranks.describe import Described, write_set


@dataclass
class MethodVectors:
    name: str
    metric: str
    reference: str
    ref_ids: np.ndarray
    xb: np.ndarray
    query_ids: np.ndarray
    xq: np.ndarray
    origin: str  # "computed" or the folder read
    extra: dict = field(default_factory=dict)


def read_vectors(name: str, folder: str, bench: bench_folder.Bench) -> MethodVectors:
    """Vectors written by extract_descriptors --bench, checked against the bench's ids."""
    import h5py

    root = Path(folder)
    meta_path = root / "descriptors.json"
    if not meta_path.is_file():
        raise InputError(
            str(root),
            f"descriptors.json is missing: not a folder written by {command('extract')} --bench",
        )
    try:
        meta = json.loads(meta_path.read_text())
    except ValueError as exc:
        raise InputError(str(meta_path), f"is not JSON ({exc})") from None
    sides = {}
    for side in ("references", "queries"):
        path = root / f"{side}.h5"
        try:
            with h5py.File(path, "r") as f:
                ids = np.array(
                    [x.decode() if isinstance(x, bytes) else str(x) for x in f["image_names"][:]]
                )
                sides[side] = (ids, np.asarray(f["vectors"][:], dtype=np.float32))
        except (OSError, KeyError) as exc:
            raise InputError(str(path), f"cannot be read as descriptors ({exc})") from None
        if not np.isfinite(sides[side][1]).all():
            raise InputError(str(path), "holds NaN or infinite values")
    for side, expected in (
        ("references", bench.references.reference_id),
        ("queries", bench.queries.query_id),
    ):
        _same_ids(root / f"{side}.h5", sides[side][0], np.asarray(expected, dtype=str))
    if sides["references"][1].shape[1] != sides["queries"][1].shape[1]:
        raise InputError(str(root), "queries and references have different dimensions")
    return MethodVectors(
        name,
        meta.get("metric", "l2"),
        meta.get("reference", ""),
        *sides["references"],
        *sides["queries"],
        origin=str(root),
    )


def _same_ids(path: Path, found: np.ndarray, expected: np.ndarray) -> None:
    missing = np.setdiff1d(expected, found)
    extra = np.setdiff1d(found, expected)
    if len(missing) or len(extra) or len(found) != len(expected):
        detail = []
        if len(missing):
            detail.append(f"{len(missing)} bench ids have no vector (first {missing[0]})")
        if len(extra):
            detail.append(f"{len(extra)} ids are not in the bench (first {extra[0]})")
        if not detail:
            detail.append("an id is repeated")
        raise InputError(str(path), f"ids do not match the bench: {'; '.join(detail)}")


def keep_vectors(target: Path, vec: MethodVectors, bench: bench_folder.Bench) -> None:
    """Computed vectors saved as extract_descriptors --bench writes them (to reuse them)."""
    target.mkdir(parents=True)
    about = {
        "method": vec.name,
        "metric": vec.metric,
        "dim": int(vec.xb.shape[1]),
        "reference": vec.reference,
    }
    sides = {
        "references": Described(list(vec.ref_ids), vec.xb, []),
        "queries": Described(list(vec.query_ids), vec.xq, []),
    }
    write_set(target, about, bench, sides)


def in_bench_order(
    vec: MethodVectors, q: pd.DataFrame, bench: bench_folder.Bench
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Query vectors, reference ids and reference vectors in the bench's row order."""
    rpos = pd.Index(vec.ref_ids).get_indexer(bench.references.reference_id.astype(str))
    qpos = pd.Index(vec.query_ids).get_indexer(q.query_id.astype(str))
    return vec.xq[qpos], np.asarray(bench.references.reference_id, dtype=str), vec.xb[rpos]


def check_distance(vec: MethodVectors) -> None:
    if vec.metric not in distances.METRICS:
        raise InputError(
            vec.origin if vec.origin != "computed" else vec.name,
            f"distance {vec.metric!r} is not one of {', '.join(distances.METRICS)}",
        )
    if vec.metric == "d1" and ((vec.xb < 0).any() or (vec.xq < 0).any()):
        # 1 + q + r may then be 0: d1 is defined for histograms and correlograms
        raise InputError(
            vec.name, "d1 needs vectors without negative values (histograms, correlograms)"
        )
