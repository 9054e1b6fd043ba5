"""Image libraries, benches and vectors of the image commands."""

from __future__ import annotations

import io
import re
import struct
import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np

from tests.bad_input.common import IM, Case, files, text
from tests.bad_inputs import (
    image_bytes,
    picture,
)

# ------------------------------------------------------------------------ images


def png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def bomb() -> bytes:
    """A valid PNG header declaring 20,000 × 20,000 pixels over a few bytes of data."""
    header = struct.pack(">IIBBBBB", 20_000, 20_000, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + png_chunk(b"IHDR", header)
        + png_chunk(b"IDAT", zlib.compress(b"\x00" * 64))
        + png_chunk(b"IEND", b"")
    )


def odd_images() -> dict[str, Callable[[], bytes]]:
    from PIL import Image

    def gif() -> bytes:
        frames = [Image.fromarray(picture(i)) for i in range(3)]
        out = io.BytesIO()
        frames[0].save(out, format="GIF", save_all=True, append_images=frames[1:], duration=50)
        return out.getvalue()

    return {
        "zero-bytes": lambda: b"",
        "truncated": lambda: image_bytes(picture(9, 64, 64), "JPEG")[:400],
        "not-an-image": lambda: b"hello, I am text",
        "1x1": lambda: image_bytes(picture(3, 1, 1)),
        "16-bit": lambda: image_bytes(
            Image.fromarray((np.arange(48 * 48).reshape(48, 48) * 20).astype(np.uint16))
        ),
        "cmyk": lambda: image_bytes(Image.new("CMYK", (48, 48), (10, 200, 30, 0)), "JPEG"),
        "animated-gif": gif,
        "bomb": bomb,
        "unreadable": lambda: image_bytes(picture(4)),
    }


ODD_SUFFIX = {
    "truncated": ".jpg",
    "not-an-image": ".jpg",
    "cmyk": ".jpg",
    "animated-gif": ".gif",
    "zero-bytes": ".png",
}


def library_with(kind: str | None, good: int = 4) -> Callable[[Path], None]:
    def write(d: Path) -> None:
        (d / "lib").mkdir()
        for i in range(good):
            (d / "lib" / f"good_{i}.png").write_bytes(image_bytes(picture(i)))
        if kind:
            path = d / "lib" / f"odd{ODD_SUFFIX.get(kind, '.png')}"
            path.write_bytes(odd_images()[kind]())
            if kind == "unreadable":
                path.chmod(0)

    return write


def odd_file(kind: str) -> str:
    return f"odd{ODD_SUFFIX.get(kind, '.png')}"


def bench_has(kind: str, reason: str | None):
    """skipped.csv lists the odd file with ``reason`` (None: it is a reference, unskipped)."""

    def check(d: Path, engine: str) -> None:
        import pandas as pd

        skipped = pd.read_csv(d / "out" / "skipped.csv", keep_default_na=False)
        refs = pd.read_csv(d / "out" / "references.csv", keep_default_na=False)
        hits = skipped[skipped.path.str.endswith(odd_file(kind))]
        if reason is None:
            assert hits.empty, hits
            assert refs.path.str.endswith(odd_file(kind)).any()
        else:
            assert len(hits) == 1 and re.fullmatch(reason, hits.reason.iloc[0]), hits

    return check


def vectors_have(kind: str, reason: str | None):
    """v.h5 holds the good images (and the odd one when legal); v_skipped.csv the rest."""

    def check(d: Path, engine: str) -> None:
        import h5py
        import pandas as pd

        with h5py.File(d / "v.h5") as f:
            names = [n.decode() for n in f["image_names"][:]]
            assert np.isfinite(f["vectors"][:]).all()
        skipped = pd.read_csv(d / "v_skipped.csv", keep_default_na=False)
        good = [f"good_{i}" for i in range(4)]
        if reason is None:
            assert sorted(names) == sorted([*good, "odd"]) and skipped.empty
        else:
            assert sorted(names) == good and len(skipped) == 1
            assert re.fullmatch(reason, skipped.reason.iloc[0]), skipped

    return check


MAKE_QUERIES = [
    "make-queries",
    "--images",
    "{d}/lib",
    "--output",
    "{d}/out",
    "--tests",
    "jumble:2x2",
    "--queries-per-test",
    "2",
    "--seed",
    "1",
]
EXTRACT = ["extract", "--images", "{d}/lib", "--method", "colorhist", "--output", "{d}/v.h5"]
BENCH_FILES = (
    "bench.json",
    "contact_sheet.png",
    "ground_truth.csv",
    "queries",
    "queries.csv",
    "queries.parquet",
    "query_groups.csv",
    "references.csv",
    "references.parquet",
    "skipped.csv",
)
IMAGE_REASONS = {  # kind: (input, what the scan says; None: a usable image)
    "zero-bytes": ("an image file of zero bytes", r"empty file \(0 bytes\)"),
    "truncated": ("a truncated JPEG", r"damaged image \(.+\)"),
    "not-an-image": ("text named .jpg", "not an image Pillow can read"),
    "1x1": (
        "a 1×1 image",
        r"not used as a query source \(kept as a reference\): 1×1 px is too "
        r"small for jumble:2x2",
    ),
    "16-bit": ("a 16-bit greyscale PNG", None),
    "cmyk": ("a CMYK JPEG", None),
    "animated-gif": ("an animated GIF (the first frame is used)", None),
    "bomb": (
        "a PNG declaring 20,000 × 20,000 pixels (decompression bomb)",
        r"too many pixels \(.+\)",
    ),
    "unreadable": ("an image without read permission", r".*Permission denied.*"),
}
CASES: list[Case] = []

for kind, (what, reason) in IMAGE_REASONS.items():
    CASES.append(
        Case(
            f"make-queries-{kind}",
            IM,
            what,
            MAKE_QUERIES,
            0,
            f"listed in skipped.csv: {reason}" if reason else "used like any image",
            library_with(kind),
            outputs=BENCH_FILES,
            check=bench_has(kind, reason),
            root_skip=kind == "unreadable",
            engines=("jobs",) if kind == "unreadable" else (),
        )
    )
for kind in ("zero-bytes", "truncated", "16-bit", "cmyk", "bomb", "unreadable"):
    what, reason = IMAGE_REASONS[kind]
    CASES.append(
        Case(
            f"extract-{kind}",
            IM,
            what,
            EXTRACT,
            0,
            f"listed in v_skipped.csv: {reason}" if reason else "described like any image",
            library_with(kind),
            beside=("v_skipped.csv", "v_run.json"),
            check=vectors_have(kind, reason),
            preexisting=False,
            root_skip=kind == "unreadable",
            engines=("jobs",) if kind == "unreadable" else (),
        )
    )
CASES += [
    Case(
        "make-queries-only-bad",
        IM,
        "a library of unreadable files only",
        MAKE_QUERIES,
        2,
        "error: --queries-per-test 2: needs 2 distinct source images; the library has 0 usable (2 files, 2 unreadable, 0 too small for the tests)",
        files(text("lib/a.jpg", "text"), text("lib/b.png", b"")),
    ),
    Case(
        "make-queries-glob-nothing",
        IM,
        "--images glob matching nothing",
        [*MAKE_QUERIES[:2], "{d}/lib/*.jpg", *MAKE_QUERIES[3:]],
        2,
        "error: {d}/lib/*.jpg: no such file or folder",
        library_with(None),
    ),
    Case(
        "make-queries-no-images",
        IM,
        "a folder without image files",
        MAKE_QUERIES,
        2,
        "error: {d}/lib: no image files found",
        text("lib/notes.txt", "no images here"),
    ),
    Case(
        "make-queries-missing",
        IM,
        "--images that does not exist",
        MAKE_QUERIES,
        2,
        "error: {d}/lib: no such file or folder",
    ),
    Case(
        "extract-no-images",
        IM,
        "extract from a folder without images",
        EXTRACT,
        2,
        "error: {d}/lib: no image could be described",
        text("lib/notes.txt", "no images here"),
        preexisting=False,
    ),
    Case(
        "extract-only-bad",
        IM,
        "extract from unreadable files only",
        EXTRACT,
        2,
        "error: {d}/lib: no image could be described",
        files(text("lib/a.jpg", "text"), text("lib/b.png", b"")),
        preexisting=False,
    ),
]
