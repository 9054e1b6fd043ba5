"""Image alterations for artificial queries: Howe's crop, jumble and low-contrast tests and
the kinds of edits in DISC21 queries, composable as ``crop:50+lowcon:80``.

Every step takes an RGB uint8 array and a numpy Generator and returns the altered array plus
the parameters it drew, so that a manifest can say exactly what was done to each query.
Output sizes depend only on the input size and the test, never on the draw: the job can tell
before any pixel work which library images are too small for a test.
"""

from __future__ import annotations

import io
import math
import string
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

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


def _number(text: str, low: float, high: float, kind: str, integer: bool = False) -> float:
    try:
        value = int(text) if integer else float(text)
    except ValueError:
        raise BadTestSpec(f"'{kind}:{text}': '{text}' is not a{'n integer' if integer else ' number'}") from None
    if not (low <= value <= high) or (not integer and not math.isfinite(value)):
        raise BadTestSpec(f"'{kind}:{text}': the parameter must be between {low:g} and {high:g}")
    return value


def _same(size: Size, _value: object) -> Size:
    return size


def _pil(img: np.ndarray) -> Image.Image:
    return Image.fromarray(img, "RGB")


def _rgb(img: Image.Image) -> np.ndarray:
    return np.asarray(img.convert("RGB"), dtype=np.uint8)


# -- Howe's three tests ------------------------------------------------------------------------


def _crop_size(size: Size, k: float) -> Size:
    h, w = size
    # same aspect ratio: both sides scale by sqrt(K%), so the area is K% up to rounding
    s = math.sqrt(k / 100.0)
    ch, cw = round(h * s), round(w * s)
    if ch < 1 or cw < 1:
        raise TooSmall(f"{w}×{h} px is too small for crop:{k:g}")
    return ch, cw


def _crop(img: np.ndarray, k: float, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    ch, cw = _crop_size(img.shape[:2], k)
    y = int(rng.integers(0, img.shape[0] - ch + 1))
    x = int(rng.integers(0, img.shape[1] - cw + 1))
    return np.ascontiguousarray(img[y : y + ch, x : x + cw]), {"x": x, "y": y, "w": cw, "h": ch}


def _grid(text: str) -> tuple[int, int]:
    rows, sep, cols = text.lower().partition("x")
    if not sep:
        raise BadTestSpec(f"'jumble:{text}': the grid is ROWSxCOLUMNS, such as 4x4")
    r = int(_number(rows, 1, 64, "jumble", integer=True))
    c = int(_number(cols, 1, 64, "jumble", integer=True))
    if r * c < 2:
        raise BadTestSpec(f"'jumble:{text}': a 1x1 grid has no shuffle other than the identity")
    return r, c


def _jumble_size(size: Size, grid: tuple[int, int]) -> Size:
    h, w = size
    r, c = grid
    if h < r or w < c:
        raise TooSmall(f"{w}×{h} px is too small for jumble:{r}x{c}")
    # tiles must be equal to be exchanged: the rows and columns left over are cut off
    return (h // r) * r, (w // c) * c


def _jumble(
    img: np.ndarray, grid: tuple[int, int], rng: np.random.Generator
) -> tuple[np.ndarray, dict]:
    r, c = grid
    h, w = _jumble_size(img.shape[:2], grid)
    th, tw = h // r, w // c
    tiles = img[:h, :w].reshape(r, th, c, tw, 3).transpose(0, 2, 1, 3, 4).reshape(r * c, th, tw, 3)
    identity = np.arange(r * c)
    order = rng.permutation(r * c)
    while np.array_equal(order, identity):  # Howe's jumble must move something
        order = rng.permutation(r * c)
    out = tiles[order].reshape(r, c, th, tw, 3).transpose(0, 2, 1, 3, 4).reshape(h, w, 3)
    # order[i] = which original tile lands in place i (row-major)
    return np.ascontiguousarray(out), {"order": order.tolist()}


def _lowcon(img: np.ndarray, k: float, _rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    mean = float(img.mean(dtype=np.float64))
    # a convex blend of each value with the mean: the range shrinks to K% and stays in 0..255
    out = np.rint(mean + (k / 100.0) * (img.astype(np.float64) - mean))
    return np.clip(out, 0, 255).astype(np.uint8), {"mean": round(mean, 4)}


# -- DISC21 kinds of edits ---------------------------------------------------------------------


def _flip_axis(text: str) -> str:
    if text not in ("h", "v"):
        raise BadTestSpec(f"'flip:{text}': the parameter is h (left-right) or v (top-bottom)")
    return text


def _flip(img: np.ndarray, axis: str, _rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    return np.ascontiguousarray(img[:, ::-1] if axis == "h" else img[::-1]), {}


def _rotate(img: np.ndarray, deg: float, _rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    out = _pil(img).rotate(deg, resample=Image.Resampling.BICUBIC, expand=False, fillcolor=(0, 0, 0))
    return _rgb(out), {}


def _blur(img: np.ndarray, radius: float, _rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    return _rgb(_pil(img).filter(ImageFilter.GaussianBlur(radius))), {}


def _jpeg(img: np.ndarray, quality: float, _rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    buf = io.BytesIO()
    _pil(img).save(buf, format="JPEG", quality=int(quality))
    return _rgb(Image.open(io.BytesIO(buf.getvalue()))), {}


def _resize_size(size: Size, pct: float) -> Size:
    h, w = size
    nh, nw = round(h * pct / 100.0), round(w * pct / 100.0)
    if nh < 1 or nw < 1:
        raise TooSmall(f"{w}×{h} px is too small for resize:{pct:g}")
    return nh, nw


def _resize(img: np.ndarray, pct: float, _rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    nh, nw = _resize_size(img.shape[:2], pct)
    return _rgb(_pil(img).resize((nw, nh), Image.Resampling.LANCZOS)), {}


def _gray(img: np.ndarray, pct: float, _rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    luma = np.asarray(_pil(img).convert("L"), dtype=np.float64)[..., None]
    p = pct / 100.0
    out = np.rint((1.0 - p) * img.astype(np.float64) + p * luma)
    return np.clip(out, 0, 255).astype(np.uint8), {}


def _pad_size(size: Size, pct: float) -> Size:
    h, w = size
    return h + 2 * round(h * pct / 100.0), w + 2 * round(w * pct / 100.0)


def _pad(img: np.ndarray, pct: float, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    h, w = img.shape[:2]
    ph, pw = round(h * pct / 100.0), round(w * pct / 100.0)
    colour = rng.integers(0, 256, size=3).astype(np.uint8)
    out = np.empty((h + 2 * ph, w + 2 * pw, 3), dtype=np.uint8)
    out[...] = colour
    out[ph : ph + h, pw : pw + w] = img
    return out, {"colour": colour.tolist()}


def _bright(img: np.ndarray, pct: float, _rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    out = np.rint(img.astype(np.float64) * (pct / 100.0))
    return np.clip(out, 0, 255).astype(np.uint8), {}


def _pixel(img: np.ndarray, block: float, _rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    h, w = img.shape[:2]
    b = int(block)
    small = _pil(img).resize((max(1, math.ceil(w / b)), max(1, math.ceil(h / b))), Image.Resampling.BOX)
    return _rgb(small.resize((w, h), Image.Resampling.NEAREST)), {}


def _text(img: np.ndarray, pct: float, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    h, w = img.shape[:2]
    size = max(6, round(h * pct / 100.0))
    letters = string.ascii_letters + string.digits
    text = "".join(letters[i] for i in rng.integers(0, len(letters), size=int(rng.integers(4, 13))))
    colour = tuple(int(v) for v in rng.integers(0, 256, size=3))
    font = ImageFont.load_default(size=size)
    canvas = _pil(img)
    draw = ImageDraw.Draw(canvas)
    left, top, right, bottom = draw.textbbox((0, 0), text, font=font)
    x = int(rng.integers(-left, max(-left, w - right) + 1))
    y = int(rng.integers(-top, max(-top, h - bottom) + 1))
    draw.text((x, y), text, fill=colour, font=font)
    return _rgb(canvas), {"text": text, "x": x, "y": y, "size": size, "colour": list(colour)}


def _shape(img: np.ndarray, pct: float, rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    h, w = img.shape[:2]
    # an ellipse, rectangle or triangle whose bounding box covers K% of the image area
    kind = ("ellipse", "rectangle", "triangle")[int(rng.integers(0, 3))]
    s = math.sqrt(pct / 100.0)
    bw, bh = max(1, round(w * s)), max(1, round(h * s))
    x = int(rng.integers(0, w - bw + 1))
    y = int(rng.integers(0, h - bh + 1))
    colour = tuple(int(v) for v in rng.integers(0, 256, size=3))
    canvas = _pil(img)
    draw = ImageDraw.Draw(canvas)
    box = (x, y, x + bw - 1, y + bh - 1)
    if kind == "ellipse":
        draw.ellipse(box, fill=colour)
    elif kind == "rectangle":
        draw.rectangle(box, fill=colour)
    else:
        draw.polygon([(x, y + bh - 1), (x + bw - 1, y + bh - 1), (x + bw // 2, y)], fill=colour)
    return _rgb(canvas), {"shape": kind, "x": x, "y": y, "w": bw, "h": bh, "colour": list(colour)}


def _identity(img: np.ndarray, _value: object, _rng: np.random.Generator) -> tuple[np.ndarray, dict]:
    return img, {}


def _none(text: str) -> None:
    if text:
        raise BadTestSpec(f"'identity:{text}': identity takes no parameter")
    return None


def _numeric(
    name: str, letter: str, low: float, high: float, size, apply, about: str,
    integer: bool = False, default: str | None = None,
) -> Kind:  # fmt: skip
    """A kind whose parameter is one number in [low, high], written ``name:LETTER``."""
    parse = partial(_number, low=low, high=high, kind=name, integer=integer)
    return Kind(name, f"{name}:{letter}", parse, size, apply, default, about)


# fmt: off
KINDS: dict[str, Kind] = {k.name: k for k in (
    _numeric("crop", "K", 0.01, 100, _crop_size, _crop,
             "keep a window of K % of the area, same aspect ratio, random position"),
    Kind("jumble", "jumble:RxC", _grid, _jumble_size, _jumble,
         about="cut into an R×C grid of tiles and shuffle them (never the identity)"),
    _numeric("lowcon", "K", 0, 100, _same, _lowcon,
             "contrast reduced to K % of its range (values scaled about their mean)"),
    Kind("flip", "flip:h|v", _flip_axis, _same, _flip, "h", "mirror left-right (h) or top-bottom (v)"),
    _numeric("rotate", "DEG", -360, 360, _same, _rotate, "rotate about the centre, same size, black corners"),
    _numeric("blur", "R", 0.1, 100, _same, _blur, "Gaussian blur of radius R px"),
    _numeric("jpeg", "Q", 1, 100, _same, _jpeg, "re-encode as JPEG of quality Q", integer=True),
    _numeric("resize", "P", 1, 1000, _resize_size, _resize, "scale both sides to P %"),
    _numeric("gray", "P", 0, 100, _same, _gray, "desaturate by P % towards the luminance", default="100"),
    _numeric("pad", "P", 0, 100, _pad_size, _pad, "add a border of P % of each side, random colour"),
    _numeric("bright", "P", 0, 1000, _same, _bright, "multiply values by P % (clipped)"),
    _numeric("pixel", "B", 1, 1024, _same, _pixel, "pixelise into B×B px blocks", integer=True),
    _numeric("text", "P", 1, 50, _same, _text,
             "overlay random text of P % of the image height, random colour and place"),
    _numeric("shape", "P", 0.01, 100, _same, _shape,
             "overlay an ellipse, rectangle or triangle covering P % of the area"),
    Kind("identity", "identity", _none, _same, _identity, "", "no alteration (an exact copy)"),
)}
# fmt: on


@dataclass(frozen=True)
class Step:
    kind: Kind
    value: object
    text: str  # canonical "name:param"


@dataclass(frozen=True)
class Test:
    """A chain of steps applied in order; its name is the canonical spec (``crop:50+lowcon:80``)."""

    name: str
    steps: tuple[Step, ...]

    def output_size(self, size: Size) -> Size:
        """The size of the query made from an image of `size`; TooSmall if it cannot be made."""
        for step in self.steps:
            size = step.kind.size(size, step.value)
        return size

    def apply(self, img: np.ndarray, rng: np.random.Generator) -> tuple[np.ndarray, list[dict]]:
        drawn = []
        for step in self.steps:
            img, params = step.kind.apply(img, step.value, rng)
            drawn.append({"step": step.text, **params})
        return img, drawn


def parse_step(text: str) -> Step:
    name, sep, param = text.strip().partition(":")
    name = name.strip().lower()
    kind = KINDS.get(name)
    if kind is None:
        known = ", ".join(k.usage for k in KINDS.values())
        raise BadTestSpec(f"unknown test '{text.strip()}' (known: {known})")
    if not sep:
        if kind.default is None:
            raise BadTestSpec(f"'{name}' needs a parameter: {kind.usage}")
        param = kind.default
    param = param.strip()
    value = kind.parse(param)
    return Step(kind, value, f"{name}:{param}" if param else name)


MAX_SWEEP = 100  # tests one sweep may expand to: a typo in the step should not make 10^6


def _sweep_values(step: str, first: str, last: str, by: str) -> list[str]:
    """The parameters of ``name:A..B:S``: A, A±S, ... up to B (included when reached)."""
    try:
        a, b, s = float(first), float(last), float(by)
    except ValueError:
        raise BadTestSpec(f"'{step}': a sweep is NAME:FIRST..LAST:STEP with numbers") from None
    if not all(map(math.isfinite, (a, b, s))) or s <= 0:
        raise BadTestSpec(f"'{step}': the step of a sweep must be a positive number")
    n = math.floor(abs(b - a) / s + 1e-9) + 1
    if n > MAX_SWEEP:
        raise BadTestSpec(f"'{step}': {n} values, more than {MAX_SWEEP} tests in one sweep")
    sign = 1 if b >= a else -1
    # each value from A by multiplication, not by repeated addition: 0.1 steps stay exact
    return [f"{round(a + sign * i * s, 9):g}" for i in range(n)]


def _expand_step(step: str) -> list[str]:
    """One step with a sweep (``crop:90..10:10``, ``jumble:2x2..8x8:2``) → one step per value."""
    name, _, param = step.strip().partition(":")
    span, _, by = param.partition("..")[2].partition(":")
    first = param.partition("..")[0]
    if name.strip().lower() == "jumble":
        # a jumble sweep runs over square grids: RxR, (R+S)x(R+S), ...
        ends = []
        for grid in (first, span):
            rows, sep, cols = grid.lower().partition("x")
            if not sep or rows != cols:
                raise BadTestSpec(f"'{step}': a jumble sweep runs over square grids, such as 2x2..8x8:2")
            ends.append(rows)
        values = _sweep_values(step, ends[0], ends[1], by or "1")
        if any(float(v) != int(float(v)) for v in values):
            raise BadTestSpec(f"'{step}': a jumble sweep needs whole numbers of tiles")
        return [f"{name}:{v}x{v}" for v in values]
    if not by:
        raise BadTestSpec(f"'{step}': a sweep needs a step, such as {name}:90..10:10")
    return [f"{name}:{v}" for v in _sweep_values(step, first, span, by)]


def expand_sweeps(text: str) -> list[str]:
    """The comma list of tests with every sweep expanded: ``crop:90..70:10,jumble:4x4`` →
    crop:90, crop:80, crop:70, jumble:4x4. A sweep may stand in one step of a chain
    (``crop:90..10:10+lowcon:80``); one sweep per test."""
    out: list[str] = []
    for spec in text.split(","):
        steps = spec.split("+")
        swept = [i for i, part in enumerate(steps) if ".." in part]
        if len(swept) > 1:
            raise BadTestSpec(f"'{spec.strip()}': one sweep per test (several steps have '..')")
        if not swept:
            out.append(spec)
            continue
        i = swept[0]
        for value in _expand_step(steps[i]):
            out.append("+".join(steps[:i] + [value] + steps[i + 1 :]))
    return out


def parse_tests(text: str) -> list[Test]:
    """``crop:50,jumble:4x4,crop:50+lowcon:80`` → three tests; names must be distinct.
    Sweeps (``crop:90..10:10``) expand to one test per value."""
    tests: list[Test] = []
    for spec in expand_sweeps(text):
        if not spec.strip():
            raise BadTestSpec(f"'{text}': empty test in the list (tests are separated by commas)")
        if any(not part.strip() for part in spec.split("+")):  # else: "unknown test ''"
            raise BadTestSpec(f"'{spec.strip()}': a '+' with no test after it")
        steps = tuple(parse_step(part) for part in spec.split("+"))
        test = Test("+".join(s.text for s in steps), steps)
        if any(t.name == test.name for t in tests):
            raise BadTestSpec(f"test '{test.name}' is given twice")
        tests.append(test)
    return tests
