"""The inputs the bad-input matrix, the fuzzer, the damage and safety tests share: one
small ground truth, a clean submission (as text, columns and Parquet), query and
reference vectors, and pictures to encode."""

from __future__ import annotations

import io

import numpy as np

GT = "query_id,reference_id\nQ1,R1\nQ2,R2\nQ3,\nQ4,R4\nQ5,R5\n"
CLEAN = "Q1,R1,0.9\nQ2,R9,0.8\nQ2,R2,0.7\nQX,R4,0.6\nQ5,R1,0.5\nQ4,R4,0.4\n"
HEADER = "query_id,reference_id,score\n"
CLEAN_COLUMNS = {
    k: [row.split(",")[i] if i < 2 else float(row.split(",")[i]) for row in CLEAN.splitlines()]
    for i, k in enumerate(("query_id", "reference_id", "score"))
}
QIDS, RIDS = ["Q1", "Q2", "Q3", "Q4"], ["R1", "R2", "R3", "R4", "R5"]
XQ = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1]], dtype=np.float32) * 0.9
XB = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [1, 1, 1, 1], [0, 0, 0, 2], [2, 0, 1, 0]], np.float32)


def picture(seed: int, h: int = 48, w: int = 48) -> np.ndarray:
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:h, 0:w]
    base = np.stack([x * 5 + y, y * 3, (x * y) % 256], -1) + rng.integers(0, 60, size=3)
    return (base % 256).astype(np.uint8)


def image_bytes(img, fmt: str = "PNG", **kw) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    (img if isinstance(img, Image.Image) else Image.fromarray(img)).save(out, format=fmt, **kw)
    return out.getvalue()


def parquet_bytes() -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [line.split(",") for line in CLEAN.splitlines()]
    table = pa.table(
        {
            "query_id": [r[0] for r in rows],
            "reference_id": [r[1] for r in rows],
            "score": [float(r[2]) for r in rows],
        }
    )
    out = io.BytesIO()
    pq.write_table(table, out)
    return out.getvalue()
