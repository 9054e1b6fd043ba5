"""Image alterations for artificial queries: Howe's crop, jumble and low-contrast tests and
the kinds of edits in DISC21 queries, composable as ``crop:50+lowcon:80``.

Every step takes an RGB uint8 array and a numpy Generator and returns the altered array plus
the parameters it drew, so that a manifest can say exactly what was done to each query.
Output sizes depend only on the input size and the test, never on the draw: the job can tell
before any pixel work which library images are too small for a test.

The pixel work of each kind is in ``edits.py``; here the kinds are named (``KINDS``) and a
test specification is read into a chain of steps (``parse_tests``), sweeps expanded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import numpy as np

from disc21spark.queries.edits import (
    BadTestSpec,
    Kind,
    Size,
    TooSmall,
    blur,
    bright,
    crop,
    crop_size,
    flip,
    flip_axis,
    gray,
    grid,
    identity,
    jpeg,
    jumble,
    jumble_size,
    lowcon,
    none,
    number,
    pad,
    pad_size,
    pixel,
    resize,
    resize_size,
    rotate,
    same,
    shape,
    text,
)

__all__ = [
    "KINDS",
    "BadTestSpec",
    "Kind",
    "Size",
    "Step",
    "Test",
    "TooSmall",
    "expand_sweeps",
    "parse_step",
    "parse_tests",
]


def _numeric(
    name: str,
    letter: str,
    low: float,
    high: float,
    size,
    apply,
    about: str,
    integer: bool = False,
    default: str | None = None,
) -> Kind:
    """A kind whose parameter is one number in [low, high], written ``name:LETTER``."""
    parse = partial(number, low=low, high=high, kind=name, integer=integer)
    return Kind(name, f"{name}:{letter}", parse, size, apply, default, about)


# fmt: off
KINDS: dict[str, Kind] = {k.name: k for k in (
    _numeric("crop", "K", 0.01, 100, crop_size, crop,
             "keep a window of K % of the area, same aspect ratio, random position"),
    Kind("jumble", "jumble:RxC", grid, jumble_size, jumble,
         about="cut into an R×C grid of tiles and shuffle them (never the identity)"),
    _numeric("lowcon", "K", 0, 100, same, lowcon,
             "contrast reduced to K % of its range (values scaled about their mean)"),
    Kind("flip", "flip:h|v", flip_axis, same, flip, "h", "mirror left-right (h) or top-bottom (v)"),
    _numeric("rotate", "DEG", -360, 360, same, rotate, "rotate about the centre, same size, black corners"),
    _numeric("blur", "R", 0.1, 100, same, blur, "Gaussian blur of radius R px"),
    _numeric("jpeg", "Q", 1, 100, same, jpeg, "re-encode as JPEG of quality Q", integer=True),
    _numeric("resize", "P", 1, 1000, resize_size, resize, "scale both sides to P %"),
    _numeric("gray", "P", 0, 100, same, gray, "desaturate by P % towards the luminance", default="100"),
    _numeric("pad", "P", 0, 100, pad_size, pad, "add a border of P % of each side, random colour"),
    _numeric("bright", "P", 0, 1000, same, bright, "multiply values by P % (clipped)"),
    _numeric("pixel", "B", 1, 1024, same, pixel, "pixelise into B×B px blocks", integer=True),
    _numeric("text", "P", 1, 50, same, text,
             "overlay random text of P % of the image height, random colour and place"),
    _numeric("shape", "P", 0.01, 100, same, shape,
             "overlay an ellipse, rectangle or triangle covering P % of the area"),
    Kind("identity", "identity", none, same, identity, "", "no alteration (an exact copy)"),
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
                raise BadTestSpec(
                    f"'{step}': a jumble sweep runs over square grids, such as 2x2..8x8:2"
                )
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
