"""The alterations themselves, one function per kind: Howe's crop, jumble and low-contrast
tests and the kinds of edits in DISC21 queries (``transforms.py`` names them and reads
test specifications such as ``crop:50+lowcon:80``).

Every step takes an RGB uint8 array and a numpy Generator and returns the altered array plus
the parameters it drew; a kind's size function gives the output size from the input size and
the parameter alone (TooSmall when the image cannot take the test).
"""

from __future__ import annotations

import io
import math
import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from PIL import Image

Size = tuple[int, int]  # (height, width)


class BadTestSpec(ValueError):
    """A test name or parameter the user gave is not valid."""


class TooSmall(ValueError):
    """An image is too small for a test (a per-image problem, not the user's command)."""


@dataclass(frozen=True)
class Kind:
    """One kind of alteration: how its parameter reads, its output size, its pixel work."""

    name: str
    usage: str
    parse: Callable[[str], object]
    size: Callable[[Size, object], Size]
    apply: Callable[[np.ndarray, object, np.random.Generator], tuple[np.ndarray, dict]]
    default: str | None = None
    about: str = ""


def number(text: str, low: float, high: float, kind: str, integer: bool = False) -> float:
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        raise BadTestSpec(
            f"'{kind}:{text}': '{text}' is not a{'n integer' if integer else ' number'}"
        ) from None
    if not (low <= value <= high) or (not integer and not math.isfinite(value)):
        raise BadTestSpec(f"'{kind}:{text}': the parameter must be between {low:g} and {high:g}")
    return value


def same(size: Size, _value: object) -> Size:
    return size


def pil(img: np.ndarray) -> Image.Image:
    from PIL import Image  # Pillow: pixel work only (not --help, not parsing)

    return Image.fromarray(img, "RGB")


def rgb(img: Image.Image) -> np.ndarray:
    return np.asarray(img.convert("RGB"), dtype=np.uint8)


# -- Howe's three tests ------------------------------------------------------------------------


def crop_size(size: Size, k: float) -> Size:
    h, w = size
    # same aspect ratio: both sides scale by sqrt(K%), so the area is K% up to rounding
    s = math.sqrt(k / 100.0)
    ch, cw = round(h * s), round(w * s)
    if ch < 1 or cw < 1:
        raise TooSmall(f"{w}×{h} px is too small for crop:{k:g}")
    return ch, cw


def crop(img: np.ndarray, k: float, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    ch, cw = crop_size(img.shape[:2], k)
    y = int(rng.integers(0, img.shape[0] - ch + 1))
    x = int(rng.integers(0, img.shape[1] - cw + 1))
    return np.ascontiguousarray(img[y : y + ch, x : x + cw]), {"x": x, "y": y, "w": cw, "h": ch}


def grid(text: str) -> tuple[int, int]:
    rows, sep, cols = text.lower().partition("x")
    if not sep:
        raise BadTestSpec(f"'jumble:{text}': the grid is ROWSxCOLUMNS, such as 4x4")
    r = int(number(rows, 1, 64, "jumble", integer=True))
    c = int(number(cols, 1, 64, "jumble", integer=True))
    if r * c < 2:
        raise BadTestSpec(f"'jumble:{text}': a 1x1 grid has no shuffle other than the identity")
    return r, c


def jumble_size(size: Size, grid: tuple[int, int]) -> Size:
    h, w = size
    r, c = grid
    if h < r or w < c:
        raise TooSmall(f"{w}×{h} px is too small for jumble:{r}x{c}")
    # tiles must be equal to be exchanged: the rows and columns left over are cut off
    return (h // r) * r, (w // c) * c


def jumble(
    img: np.ndarray, grid: tuple[int, int], rng: np.random.Generator
) -> tuple[np.ndarray, dict]:
    r, c = grid
    h, w = jumble_size(img.shape[:2], grid)
    th, tw = h // r, w // c
    tiles = img[:h, :w].reshape(r, th, c, tw, 3).transpose(0, 2, 1, 3, 4).reshape(r * c, th, tw, 3)
    identity = np.arange(r * c)
    order = rng.permutation(r * c)
    while np.array_equal(order, identity):  # Howe's jumble must move something
        order = rng.permutation(r * c)
    out = tiles[order].reshape(r, c, th, tw, 3).transpose(0, 2, 1, 3, 4).reshape(h, w, 3)
    # order[i] = which original tile lands in place i (row-major)
    return np.ascontiguousarray(out), {"order": order.tolist()}


def lowcon(img: np.ndarray, k: float, _rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    mean = float(img.mean(dtype=np.float64))
    # a convex blend of each value with the mean: the range shrinks to K% and stays in 0..255
    out = np.rint(mean + (k / 100.0) * (img.astype(np.float64) - mean))
    return np.clip(out, 0, 255).astype(np.uint8), {"mean": round(mean, 4)}


# -- DISC21 kinds of edits ---------------------------------------------------------------------


def flip_axis(text: str) -> str:
    if text not in ("h", "v"):
        raise BadTestSpec(f"'flip:{text}': the parameter is h (left-right) or v (top-bottom)")
    return text


def flip(img: np.ndarray, axis: str, _rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    return np.ascontiguousarray(img[:, ::-1] if axis == "h" else img[::-1]), {}


def rotate(img: np.ndarray, deg: float, _rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    from PIL import Image  # Pillow: pixel work only (not --help, not parsing)

    out = pil(img).rotate(deg, resample=Image.Resampling.BICUBIC, expand=False, fillcolor=(0, 0, 0))
    return rgb(out), {}


def blur(img: np.ndarray, radius: float, _rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    from PIL import ImageFilter  # Pillow: pixel work only (not --help, not parsing)

    return rgb(pil(img).filter(ImageFilter.GaussianBlur(radius))), {}


def jpeg(img: np.ndarray, quality: float, _rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    from PIL import Image  # Pillow: pixel work only (not --help, not parsing)

    buf = io.BytesIO()
    pil(img).save(buf, format="JPEG", quality=int(quality))
    return rgb(Image.open(io.BytesIO(buf.getvalue()))), {}


def resize_size(size: Size, pct: float) -> Size:
    h, w = size
    nh, nw = round(h * pct / 100.0), round(w * pct / 100.0)
    if nh < 1 or nw < 1:
        raise TooSmall(f"{w}×{h} px is too small for resize:{pct:g}")
    return nh, nw


def resize(img: np.ndarray, pct: float, _rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    from PIL import Image  # Pillow: pixel work only (not --help, not parsing)

    nh, nw = resize_size(img.shape[:2], pct)
    return rgb(pil(img).resize((nw, nh), Image.Resampling.LANCZOS)), {}


def gray(img: np.ndarray, pct: float, _rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    luma = np.asarray(pil(img).convert("L"), dtype=np.float64)[..., None]
    p = pct / 100.0
    out = np.rint((1.0 - p) * img.astype(np.float64) + p * luma)
    return np.clip(out, 0, 255).astype(np.uint8), {}


def pad_size(size: Size, pct: float) -> Size:
    h, w = size
    return h + 2 * round(h * pct / 100.0), w + 2 * round(w * pct / 100.0)


def pad(img: np.ndarray, pct: float, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    h, w = img.shape[:2]
    ph, pw = round(h * pct / 100.0), round(w * pct / 100.0)
    colour = rng.integers(0, 256, size=3).astype(np.uint8)
    out = np.empty((h + 2 * ph, w + 2 * pw, 3), dtype=np.uint8)
    out[...] = colour
    out[ph : ph + h, pw : pw + w] = img
    return out, {"colour": colour.tolist()}


def bright(img: np.ndarray, pct: float, _rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    out = np.rint(img.astype(np.float64) * (pct / 100.0))
    return np.clip(out, 0, 255).astype(np.uint8), {}


def pixel(img: np.ndarray, block: float, _rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    from PIL import Image  # Pillow: pixel work only (not --help, not parsing)

    h, w = img.shape[:2]
    b = int(block)
    small = pil(img).resize(
        (max(1, math.ceil(w / b)), max(1, math.ceil(h / b))), Image.Resampling.BOX
    )
    return rgb(small.resize((w, h), Image.Resampling.NEAREST)), {}


def text(img: np.ndarray, pct: float, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    from PIL import ImageDraw, ImageFont  # Pillow: pixel work only (not --help, not parsing)

    h, w = img.shape[:2]
    size = max(6, round(h * pct / 100.0))
    letters = string.ascii_letters + string.digits
    text = "".join(letters[i] for i in rng.integers(0, len(letters), size=int(rng.integers(4, 13))))
    colour = tuple(int(v) for v in rng.integers(0, 256, size=3))
    font = ImageFont.load_default(size=size)
    canvas = pil(img)
    draw = ImageDraw.Draw(canvas)
    left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
    x = int(rng.integers(-left, max(-left, w - right) + 1))
    y = int(rng.integers(-top, max(-top, h - bottom) + 1))
    draw.text((x, y), text, fill=colour, font=font)
    return rgb(canvas), {"text": text, "x": x, "y": y, "size": size, "colour": list(colour)}


def shape(img: np.ndarray, pct: float, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    from PIL import ImageDraw  # Pillow: pixel work only (not --help, not parsing)

    h, w = img.shape[:2]
    # an ellipse, rectangle or triangle whose bounding box covers K% of the image area
    kind = ("ellipse", "rectangle", "triangle")[int(rng.integers(0, 3))]
    s = math.sqrt(pct / 100.0)
    bw, bh = max(1, round(w * s)), max(1, round(h * s))
    x = int(rng.integers(0, w - bw + 1))
    y = int(rng.integers(0, h - bh + 1))
    colour = tuple(int(v) for v in rng.integers(0, 256, size=3))
    canvas = pil(img)
    draw = ImageDraw.Draw(canvas)
    box = (x, y, x + bw - 1, y + bh - 1)
    if kind == "ellipse":
        draw.ellipse(box, fill=colour)
    elif kind == "rectangle":
        draw.rectangle(box, fill=colour)
    else:
        draw.polygon([(x, y + bh - 1), (x + bw - 1, y + bh - 1), (x + bw // 2, y)], fill=colour)
    return rgb(canvas), {"shape": kind, "x": x, "y": y, "w": bw, "h": bh, "colour": list(colour)}


def identity(img: np.ndarray, _value: object, _rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    return img, {}


def none(text: str) -> None:
    if text:
        raise BadTestSpec(f"'identity:{text}': identity takes no parameter")
    return None
