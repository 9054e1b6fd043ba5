"""Single-machine image descriptors: the baselines of Howe (2000), "Using Artificial Queries
to Evaluate Image Retrieval", plus PDQ and any user function.

Every method maps an RGB uint8 image (H, W, 3) to a float32 vector of a fixed length and
declares how its vectors are compared (``ranks.distances``): "l2" (score = -squared L2
distance), "ip" (inner product), "l1" (-L1: histogram intersection's order) or "d1"
(Huang's relative distance), each method by the comparison it was published with. A user
method is named "package.module:function".
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
import pdqhash
from PIL import Image

BUILTIN: tuple[str, ...] = ("colorhist", "correlogram", "tiny", "pdq")
METRICS = ("l2", "ip", "l1", "d1")  # ranks.distances.METRICS (not imported: no FAISS here)

# the distance set of Huang et al.'s experiments: local texture up to a 15x15 window
CORRELOGRAM_DISTANCES: tuple[int, ...] = (1, 3, 5, 7)
# The ring comparisons cost ~8*sum(d) passes over the image, so the cost grows with the
# pixel count (512x384: ~13 ms at full size, ~4 ms at 256 px). Downscaling bounds it for
# large photographs, and the distances then scale with the image rather than being
# pixels of whatever size a copy was saved at.
CORRELOGRAM_MAX_SIDE = 256
TINY_SIDE = 16
N_COLOURS = 64  # 4 levels per channel


@dataclass(frozen=True)
class Method:
    name: str
    dim: int
    metric: str  # "l2" | "ip" | "l1" | "d1"
    describe: Callable[[np.ndarray], np.ndarray]
    reference: str
    deterministic: bool = True


def _rgb(image: np.ndarray) -> np.ndarray:
    """The built-ins index the channels and the pixel count directly: reject anything else."""
    image = np.asarray(image)
    if image.ndim != 3 or image.shape[2] != 3:
        raise ValueError(f"expected an RGB image of shape (H, W, 3), got shape {image.shape}")
    if image.dtype != np.uint8:
        raise ValueError(f"expected an RGB image of dtype uint8, got {image.dtype}")
    if image.shape[0] == 0 or image.shape[1] == 0:
        raise ValueError(f"expected a non-empty image, got shape {image.shape}")
    return image


def _quantise(rgb: np.ndarray) -> np.ndarray:
    """Colour index 0..63: the top two bits of R, G and B (value // 64)."""
    top = rgb >> 6
    return (top[..., 0] << 4) | (top[..., 1] << 2) | top[..., 2]


def colorhist(image: np.ndarray) -> np.ndarray:
    """Joint 4x4x4 RGB histogram, summing to 1 (Swain & Ballard 1991)."""
    q = _quantise(_rgb(image))
    # exact integer counts, so the vector depends only on the multiset of pixels: flips
    # and block permutations give bit-identical vectors
    counts = np.bincount(q.ravel(), minlength=N_COLOURS)
    return (counts / float(q.size)).astype(np.float32)


def _shrink(rgb: np.ndarray, max_side: int) -> np.ndarray:
    h, w = rgb.shape[:2]
    if max(h, w) <= max_side:
        return rgb
    scale = max_side / max(h, w)
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    return np.asarray(Image.fromarray(rgb).resize(size, Image.Resampling.BOX))


def _in_image(n: int, k: int) -> np.ndarray:
    """For each index i in 0..n-1, how many of i-k..i+k lie in 0..n-1."""
    i = np.arange(n)
    return np.minimum(i + k, n - 1) - np.maximum(i - k, 0) + 1


def correlogram(image: np.ndarray) -> np.ndarray:
    """Colour auto-correlogram (Huang, Kumar, Mitra, Zhu & Zabih, CVPR 1997).

    Entry (d, c) is the probability that a pixel at chessboard distance exactly d from a
    pixel of colour c also has colour c. The full ring of 8d neighbours is used, as
    defined: Huang's run-count algorithm gives the same numbers, here each ring offset is
    one shifted comparison of the whole image (not the 8 axis-and-diagonal shortcut).
    Only neighbours inside the image count, in the numerator and the denominator alike.
    Images longer than 256 px are first downscaled (Pillow BOX) to 256 px on the long
    side. Layout: the 64 colours for d=1, then d=3, 5, 7.
    """
    q = _quantise(_shrink(_rgb(image), CORRELOGRAM_MAX_SIDE))
    h, w = q.shape
    flat = q.ravel()
    out = np.zeros((len(CORRELOGRAM_DISTANCES), N_COLOURS), dtype=np.float64)
    for row, d in enumerate(CORRELOGRAM_DISTANCES):
        # same[p] = how many ring neighbours of p share its colour; at most 8*7 = 56
        same = np.zeros((h, w), dtype=np.uint8)
        # Half of the ring suffices: an equal pair (p, p + o) is the pair (p + o, p) at
        # offset -o, so each comparison credits both of its pixels.
        half = [(d, dx) for dx in range(-d, d + 1)]
        half += [(dy, dx) for dy in range(1, d) for dx in (-d, d)]
        half.append((0, d))
        for dy, dx in half:
            ya1 = h - dy
            xa0, xa1 = max(0, -dx), w - max(0, dx)
            if ya1 <= 0 or xa1 <= xa0:
                continue
            eq = q[:ya1, xa0:xa1] == q[dy:, xa0 + dx : xa1 + dx]
            same[:ya1, xa0:xa1] += eq
            same[dy:, xa0 + dx : xa1 + dx] += eq
        # in-image ring size = in-image (2d+1)^2 square minus the in-image (2d-1)^2 one
        ring = np.outer(_in_image(h, d), _in_image(w, d)) - np.outer(
            _in_image(h, d - 1), _in_image(w, d - 1)
        )
        num = np.bincount(flat, weights=same.ravel(), minlength=N_COLOURS)
        den = np.bincount(flat, weights=ring.ravel(), minlength=N_COLOURS)
        # absent colours, and colours whose pixels have no neighbour at d, stay 0
        np.divide(num, den, out=out[row], where=den > 0)
    return out.ravel().astype(np.float32)


def tiny(image: np.ndarray) -> np.ndarray:
    """16x16 grey thumbnail, centred and of unit norm (Torralba, Fergus & Freeman 2008)."""
    grey = Image.fromarray(_rgb(image)).convert("L")
    # resample in float so the thumbnail is not rounded a second time
    thumb = np.asarray(
        grey.convert("F").resize((TINY_SIDE, TINY_SIDE), Image.Resampling.BOX),
        dtype=np.float64,
    ).ravel()
    thumb = thumb - thumb.mean()
    norm = float(np.linalg.norm(thumb))
    # a flat image has no direction; a zero vector scores 0 against everything
    if norm < 1e-9:
        return np.zeros(TINY_SIDE * TINY_SIDE, dtype=np.float32)
    return (thumb / norm).astype(np.float32)


def pdq(image: np.ndarray) -> np.ndarray:
    """Meta's PDQ hash as 256 values of +-1: squared L2 distance = 4 x Hamming distance."""
    bits, _quality = pdqhash.compute(np.ascontiguousarray(_rgb(image)))
    return np.asarray(bits, dtype=np.float32) * 2 - 1


_BUILTINS: dict[str, Method] = {
    "colorhist": Method(
        "colorhist",
        N_COLOURS,
        "l1",
        colorhist,
        "Swain & Ballard 1991, Color Indexing (IJCV): 4x4x4 RGB histogram, intersection (L1);"
        " Howe 2000's first baseline",
    ),
    "correlogram": Method(
        "correlogram",
        N_COLOURS * len(CORRELOGRAM_DISTANCES),
        "d1",
        correlogram,
        "Huang, Kumar, Mitra, Zhu & Zabih, CVPR 1997, Image Indexing Using Color Correlograms:"
        " auto-correlogram, 64 colours, d = 1, 3, 5, 7, their d1 distance",
    ),
    "tiny": Method(
        "tiny",
        TINY_SIDE * TINY_SIDE,
        "ip",
        tiny,
        "Torralba, Fergus & Freeman 2008, 80 Million Tiny Images (PAMI): 16x16 grey thumbnail,"
        " cosine",
    ),
    "pdq": Method(
        "pdq",
        256,
        "l2",
        pdq,
        "Meta ThreatExchange PDQ perceptual hash (2019), pdqhash bindings; -L2^2 = -4 x Hamming",
    ),
}
assert tuple(_BUILTINS) == BUILTIN


def _probe_image() -> np.ndarray:
    """Mid-grey with gradients in both directions: not flat, so no method is degenerate."""
    ramp = np.arange(64, dtype=np.int16)
    y, x = np.meshgrid(ramp, ramp, indexing="ij")
    rgb = np.stack([96 + x, 96 + y, 128 + (x - y) // 2], axis=-1)
    return rgb.astype(np.uint8)


def _one_line(text: object) -> str:
    return " ".join(str(text).split())


def _as_vector(value: object, what: str) -> np.ndarray:
    """value as a 1-D finite float32 vector, or ValueError('<what>: <problem>')."""
    try:
        arr = np.asarray(value)
    except Exception as exc:  # any array-like failure is the user's to fix
        raise ValueError(f"{what}: returned {type(value).__name__}, not an array-like") from exc
    if arr.dtype.kind not in "biuf":
        raise ValueError(f"{what}: returned values of dtype {arr.dtype}, not real numbers")
    if arr.ndim != 1:
        raise ValueError(f"{what}: returned an array of shape {arr.shape}, not a 1-D vector")
    if arr.size == 0:
        raise ValueError(f"{what}: returned an empty vector")
    # cast first: a float64 beyond float32's range becomes inf and is caught here
    vec = arr.astype(np.float32)
    if not np.all(np.isfinite(vec)):
        bad = int(np.count_nonzero(~np.isfinite(vec)))
        raise ValueError(f"{what}: returned {bad} non-finite value(s) (NaN or inf in float32)")
    return vec


def _user_method(name: str) -> Method:
    module_name, _, attr_path = name.partition(":")
    if not module_name or not attr_path:
        raise ValueError(f"descriptor method {name!r}: expected 'package.module:function'")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # a broken module is reported, whatever broke it
        raise ValueError(
            f"descriptor method {name!r}: cannot import module {module_name!r}: "
            f"{type(exc).__name__}: {_one_line(exc)}"
        ) from exc
    fn: object = module
    for part in attr_path.split("."):
        if not hasattr(fn, part):
            raise ValueError(
                f"descriptor method {name!r}: module {module_name!r} has no {attr_path!r}"
            )
        fn = getattr(fn, part)
    if not callable(fn):
        raise ValueError(
            f"descriptor method {name!r}: {attr_path!r} is a {type(fn).__name__}, not callable"
        )

    metric = getattr(fn, "metric", "l2")
    if metric not in METRICS:
        # a typo such as "cosine" would otherwise silently rank by L2
        raise ValueError(
            f"descriptor method {name!r}: metric {metric!r} is not one of {', '.join(METRICS)}"
        )
    deterministic = getattr(fn, "deterministic", True)
    if not isinstance(deterministic, bool):
        raise ValueError(
            f"descriptor method {name!r}: attribute deterministic={deterministic!r} is not a bool"
        )

    what = f"descriptor method {name!r}"
    try:
        probe = fn(_probe_image())
    except Exception as exc:  # the user's function failing is a bad method
        raise ValueError(
            f"{what}: failed on a 64x64 probe image: {type(exc).__name__}: {_one_line(exc)}"
        ) from exc
    dim = _as_vector(probe, f"{what} (on the probe image)").size

    def describe(image: np.ndarray) -> np.ndarray:
        vec = _as_vector(fn(image), what)
        if vec.size != dim:
            raise ValueError(f"{what}: returned a vector of length {vec.size}, expected {dim}")
        return vec

    doc = (getattr(fn, "__doc__", None) or "").strip()
    reference = _one_line(doc.splitlines()[0]) if doc else f"user callable {name}"
    return Method(name, dim, metric, describe, reference, deterministic)


def method(name: str) -> Method:
    """A built-in method by name, or a user function named "package.module:function"."""
    if name in _BUILTINS:
        return _BUILTINS[name]
    if ":" in name:
        return _user_method(name)
    raise ValueError(
        f"unknown descriptor method {name!r} "
        "(built-in: colorhist, correlogram, tiny, pdq; or module:function)"
    )


def describe_all(m: Method, images: Iterable[np.ndarray]) -> np.ndarray:
    """(n, m.dim) float32 matrix of the images' vectors, in order; (0, m.dim) for none."""
    rows = [m.describe(image) for image in images]
    if not rows:
        return np.zeros((0, m.dim), dtype=np.float32)
    return np.stack(rows).astype(np.float32, copy=False)
