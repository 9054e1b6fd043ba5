"""DISC21-shaped data for demos, tests and benchmarks, without the 1M images.

A simulated copy-detection system answers every query of a ground truth (the real
DISC21 dev file by default) with ``per_query`` candidate references: the true
reference, when it has one and the system finds it, scores high; the rest are
random references of the 1M-image reference set, scoring lower but overlapping.
Scores are rounded so that ties occur, as in real submissions.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

N_REFERENCES = 1_000_000


def read_ground_truth_csv(path: str | Path) -> pd.DataFrame:
    """query_id, reference_id ('' for distractors) from a DISC21 CSV (header optional)."""
    gt = pd.read_csv(
        path, header=None, names=["query_id", "reference_id"], dtype=str, keep_default_na=False
    )
    return gt[gt["query_id"] != "query_id"].reset_index(drop=True)


def reference_ids(indices: np.ndarray) -> np.ndarray:
    return np.char.add("R", np.char.zfill(indices.astype(str), 6)).astype(object)


def simulate_submission(
    gt: pd.DataFrame,
    n_predictions: int,
    seed: int = 0,
    recall: float = 0.75,
    decimals: int = 4,
) -> pd.DataFrame:
    """A plausible submission of about n_predictions pairs (no duplicate pair)."""
    rng = np.random.default_rng(seed)
    queries = gt["query_id"].to_numpy(dtype=object)
    per_query = max(1, n_predictions // len(queries))
    q = np.repeat(queries, per_query)
    r = rng.integers(0, N_REFERENCES, size=q.size)
    # random references do not collide with each other within a query
    r = (r + np.tile(np.arange(per_query), len(queries)) * 7919) % N_REFERENCES
    score = rng.beta(1.0, 9.0, size=q.size)
    refs = reference_ids(r)

    has_truth = gt["reference_id"].to_numpy() != ""
    found = has_truth & (rng.random(len(queries)) < recall)
    slot = np.flatnonzero(found) * per_query  # the first slot of a found query holds the truth
    refs[slot] = gt["reference_id"].to_numpy(dtype=object)[found]
    score[slot] = np.clip(rng.normal(0.62, 0.15, size=slot.size), 0.0, 1.0)
    extra = n_predictions - q.size  # top up with more false pairs of random queries
    frame = pd.DataFrame({"query_id": q, "reference_id": refs, "score": score.round(decimals)})
    if extra > 0:
        eq = rng.choice(queries, size=extra)
        er = reference_ids(rng.integers(0, N_REFERENCES, size=extra))
        es = rng.beta(1.0, 9.0, size=extra).round(decimals)
        frame = pd.concat(
            [frame, pd.DataFrame({"query_id": eq, "reference_id": er, "score": es})],
            ignore_index=True,
        )
    return frame.drop_duplicates(["query_id", "reference_id"]).reset_index(drop=True)


def write_submission(frame: pd.DataFrame, path: str | Path) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix in (".parquet", ".pq"):
        frame.to_parquet(path, index=False)
    else:
        frame.to_csv(path, index=False, float_format="%.6g")


def planted_descriptors(
    gt: pd.DataFrame, n_references: int, dim: int, noise: float, seed: int = 0
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Descriptors for a ground truth: random unit reference vectors; a query with a true
    reference is that vector plus noise (relative norm ``noise``); a distractor query is
    a noisy copy of a vector that is not in the reference set.
    Returns query ids, query vectors, reference ids, reference vectors."""
    rng = np.random.default_rng(seed)
    truth = gt["reference_id"].to_numpy(dtype=object)
    needed = pd.unique(truth[truth != ""])
    if len(needed) > n_references:
        raise ValueError(
            f"the ground truth needs {len(needed)} references, more than {n_references}"
        )
    taken = set(needed)
    others = []
    while len(others) < n_references - len(needed):
        for i in rng.integers(0, N_REFERENCES, size=2 * n_references):
            rid = f"R{i:06d}"
            if rid not in taken:
                taken.add(rid)
                others.append(rid)
                if len(others) == n_references - len(needed):
                    break
    ref_ids = np.array(list(needed) + others, dtype=object)
    ref_ids = ref_ids[rng.permutation(len(ref_ids))]
    xb = _unit(rng.standard_normal((n_references, dim)))
    where = {r: i for i, r in enumerate(ref_ids)}
    base = _unit(rng.standard_normal((len(gt), dim)))  # distractors: originals not indexed
    has = truth != ""
    base[has] = xb[[where[r] for r in truth[has]]]
    xq = _unit(base + noise / np.sqrt(dim) * rng.standard_normal(base.shape))
    return gt["query_id"].to_numpy(dtype=object), xq, ref_ids, xb


def _unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def write_hdf5_descriptors(path: str | Path, ids: np.ndarray, vectors: np.ndarray) -> None:
    """The ISC2021 layout (float32 'vectors', 'image_names'), written as the jobs write it."""
    # imported here: writing a submission needs neither Spark nor HDF5
    from disc21spark.descriptors.files import write_vectors

    write_vectors(path, [str(i) for i in ids], vectors)


def write_descriptor_set(
    gt: pd.DataFrame, folder: str | Path, n_references: int, dim: int, noise: float, seed: int
) -> tuple[Path, Path]:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    qids, xq, rids, xb = planted_descriptors(gt, n_references, dim, noise, seed)
    queries, refs = folder / "queries.h5", folder / "references.h5"
    write_hdf5_descriptors(queries, qids, xq)
    write_hdf5_descriptors(refs, rids, xb)
    return queries, refs


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(
        description="write a DISC21-shaped matching-track submission (--output) "
        "or descriptor set (--descriptors)"
    )
    p.add_argument("--ground-truth", required=True)
    p.add_argument("--output", help=".csv, .csv.gz or .parquet")
    p.add_argument(
        "--predictions",
        type=int,
        default=100_000,
        help="about this many pairs: at least one per query of the ground truth, fewer "
        "when a random pair comes out twice (its repeat is dropped); it prints how many",
    )
    p.add_argument("--descriptors", help="folder for queries.h5 and references.h5")
    p.add_argument("--references", type=int, default=50_000)
    p.add_argument("--dim", type=int, default=64)
    p.add_argument("--noise", type=float, default=0.6)
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if not (args.output or args.descriptors):
        p.error("give --output or --descriptors")
    gt = read_ground_truth_csv(args.ground_truth)
    if args.descriptors:
        q, r = write_descriptor_set(
            gt, args.descriptors, args.references, args.dim, args.noise, args.seed
        )
        print(f"wrote {len(gt):,} query and {args.references:,} reference descriptors: {q}, {r}")
        if not args.output:
            return
    frame = simulate_submission(gt, args.predictions, args.seed)
    write_submission(frame, args.output)
    print(
        f"wrote {len(frame):,} predictions for {frame['query_id'].nunique():,} queries to {args.output}"
    )


if __name__ == "__main__":
    main()
