"""Descriptor methods: hand-computed values, the invariances the evaluation relies on, and
the checks on user functions. No Spark here."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from disc21spark.ranks.methods import BUILTIN, Method, describe_all, method

H, W = 96, 128


def natural_image(seed: int = 0) -> np.ndarray:
    """Smooth gradients, a disc, a bar and mild noise: photograph-like, not flat."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:H, 0:W].astype(np.float64)
    r = 40 + 150 * x / W + 30 * np.sin(y / 13.0)
    g = 60 + 120 * y / H + 20 * np.cos(x / 9.0)
    b = 180 - 100 * (x + y) / (W + H)
    disc = (y - 40) ** 2 + (x - 80) ** 2 < 18**2
    r[disc], g[disc], b[disc] = 220, 200, 40
    bar = (y > 60) & (y < 80) & (x > 10) & (x < 50)
    r[bar], g[bar], b[bar] = 30, 40, 90
    rgb = np.stack([r, g, b], axis=-1) + rng.normal(0, 3, (H, W, 3))
    return rgb.clip(0, 255).round().astype(np.uint8)


# --- user functions resolved by name as "tests.test_features:<name>" ---------------------


def mean_colour(image: np.ndarray) -> np.ndarray:
    """Mean RGB colour: a 3-number toy descriptor."""
    return image.reshape(-1, 3).mean(axis=0)


def unit_mean_colour(image: np.ndarray) -> list[float]:
    v = image.reshape(-1, 3).mean(axis=0) + 1.0
    return list(v / np.linalg.norm(v))


unit_mean_colour.metric = "ip"
unit_mean_colour.deterministic = False

NOT_CALLABLE = 42


def returns_2d(image: np.ndarray) -> np.ndarray:
    return np.zeros((4, 4))


def returns_nan(image: np.ndarray) -> np.ndarray:
    return np.array([1.0, np.nan, 2.0])


def returns_empty(image: np.ndarray) -> np.ndarray:
    return np.zeros(0)


def returns_strings(image: np.ndarray) -> list[str]:
    return ["a", "b"]


def raises(image: np.ndarray) -> np.ndarray:
    raise RuntimeError("model weights not found")


def one_per_row(image: np.ndarray) -> np.ndarray:
    """Length follows the image height: fine on the probe, wrong on other sizes."""
    return image[:, 0, 0].astype(np.float64)


def nan_on_dark(image: np.ndarray) -> np.ndarray:
    return np.array([np.nan if image.mean() < 10 else 1.0, 0.0])


def bad_metric(image: np.ndarray) -> np.ndarray:
    return np.ones(2)


bad_metric.metric = "cosine"


def here(fn: str) -> str:
    return f"{__name__}:{fn}"


# --- registry ----------------------------------------------------------------------------


def test_builtins_resolve_with_declared_shape_and_metric() -> None:
    img = natural_image()
    expected = {"colorhist": (64, "l1"), "correlogram": (256, "d1"), "tiny": (256, "ip")}
    expected["pdq"] = (256, "l2")
    assert BUILTIN == tuple(expected)
    for name in BUILTIN:
        m = method(name)
        assert isinstance(m, Method)
        assert (m.name, m.dim, m.metric, m.deterministic) == (name, *expected[name], True)
        assert m.reference and "\n" not in m.reference
        vec = m.describe(img)
        assert vec.dtype == np.float32 and vec.shape == (m.dim,)
        assert np.all(np.isfinite(vec))
        # deterministic: a second call, on a copy, is bit-identical
        assert np.array_equal(vec, m.describe(img.copy()))


def test_unknown_name() -> None:
    with pytest.raises(ValueError) as err:
        method("sift")
    assert str(err.value) == (
        "unknown descriptor method 'sift' "
        "(built-in: colorhist, correlogram, tiny, pdq; or module:function)"
    )


@pytest.mark.parametrize(
    "image, problem",
    [
        (np.zeros((8, 8), np.uint8), "shape"),
        (np.zeros((8, 8, 4), np.uint8), "shape"),
        (np.zeros((8, 8, 3), np.float32), "uint8"),
        (np.zeros((0, 8, 3), np.uint8), "non-empty"),
    ],
)
def test_builtins_reject_other_images(image: np.ndarray, problem: str) -> None:
    for name in BUILTIN:
        with pytest.raises(ValueError, match=problem):
            method(name).describe(image)


def test_describe_all_stacks_in_order() -> None:
    images = [natural_image(0), natural_image(1)[::-1], natural_image(2)[:50, :70]]
    for name in BUILTIN:
        m = method(name)
        got = describe_all(m, iter(images))
        assert got.dtype == np.float32 and got.shape == (3, m.dim)
        for row, img in zip(got, images):
            assert np.array_equal(row, m.describe(img))
        empty = describe_all(m, [])
        assert empty.dtype == np.float32 and empty.shape == (0, m.dim)


# --- colorhist ---------------------------------------------------------------------------


def test_colorhist_hand_computed() -> None:
    img = np.array(
        [
            [[0, 0, 0], [255, 255, 255]],
            [[64, 0, 0], [63, 127, 191]],
        ],
        dtype=np.uint8,
    )
    # bins: (0,0,0) -> 0; (3,3,3) -> 63; (1,0,0) -> 16; (0,1,2) -> 0*16 + 1*4 + 2 = 6
    expected = np.zeros(64, np.float32)
    expected[[0, 63, 16, 6]] = 0.25
    assert np.array_equal(method("colorhist").describe(img), expected)
    two_black = img.copy()
    two_black[1, 1] = 0
    expected[6], expected[0] = 0.0, 0.5
    assert np.array_equal(method("colorhist").describe(two_black), expected)


def jumble(img: np.ndarray, rows: int, cols: int, seed: int) -> np.ndarray:
    """The image cut into rows x cols equal blocks, the blocks shuffled."""
    h, w = img.shape[0] // rows, img.shape[1] // cols
    blocks = img.reshape(rows, h, cols, w, 3).transpose(0, 2, 1, 3, 4).reshape(-1, h, w, 3)
    blocks = blocks[np.random.default_rng(seed).permutation(rows * cols)]
    return blocks.reshape(rows, cols, h, w, 3).transpose(0, 2, 1, 3, 4).reshape(img.shape)


def test_colorhist_exactly_invariant_to_jumble_and_flips() -> None:
    img = natural_image()
    hist = method("colorhist").describe(img)
    assert hist.sum() == pytest.approx(1.0, abs=1e-6)
    jumbled = jumble(img, 4, 4, seed=3)
    assert not np.array_equal(jumbled, img)
    assert np.array_equal(np.sort(jumbled.reshape(-1, 3), 0), np.sort(img.reshape(-1, 3), 0))
    for variant in (jumbled, img[:, ::-1], img[::-1], np.rot90(img)):
        assert np.array_equal(method("colorhist").describe(variant), hist)


# --- correlogram -------------------------------------------------------------------------


def brute_correlogram(img: np.ndarray) -> np.ndarray:
    """The definition, pixel by pixel: every in-image neighbour at chessboard distance d."""
    r, g, b = (img.astype(int) // 64).transpose(2, 0, 1)
    q = r * 16 + g * 4 + b
    h, w = q.shape
    out = []
    for d in (1, 3, 5, 7):
        same, pairs = np.zeros(64), np.zeros(64)
        for y in range(h):
            for x in range(w):
                for dy in range(-d, d + 1):
                    for dx in range(-d, d + 1):
                        yy, xx = y + dy, x + dx
                        if max(abs(dy), abs(dx)) == d and 0 <= yy < h and 0 <= xx < w:
                            pairs[q[y, x]] += 1
                            same[q[y, x]] += q[yy, xx] == q[y, x]
        out.append(np.divide(same, pairs, out=np.zeros(64), where=pairs > 0))
    return np.concatenate(out)


def test_correlogram_one_colour() -> None:
    img = np.full((4, 4, 3), (200, 100, 30), np.uint8)
    colour = 3 * 16 + 1 * 4 + 0
    vec = method("correlogram").describe(img).reshape(4, 64)
    expected = np.zeros((4, 64), np.float32)
    # a 4x4 image has neighbours at distance 1 and 3, none at 5 or 7
    expected[0, colour] = expected[1, colour] = 1.0
    assert np.array_equal(vec, expected)


def test_correlogram_checkerboard_by_hand() -> None:
    y, x = np.mgrid[0:4, 0:4]
    img = np.where(((y + x) % 2 == 0)[..., None], 255, 0).astype(np.uint8).repeat(3, axis=2)
    vec = method("correlogram").describe(img).reshape(4, 64)
    # d=1, white (y+x even): 2 corners with 1 same of 3 ring neighbours (the diagonal),
    # 4 edge pixels with 2 of 5, 2 inner pixels with 4 of 8: (2 + 8 + 8) / (6 + 20 + 16)
    # = 3/7; black is the mirror image
    assert vec[0, 63] == pytest.approx(3 / 7) and vec[0, 0] == pytest.approx(3 / 7)
    assert np.count_nonzero(vec[0]) == 2
    # d=3: unordered pairs with |dy| = 3 (rows 0 and 3): 16, with |dx| = 3: 16, both: 2
    # (the diagonals), so 30. Same colour iff dy + dx is even, i.e. dx odd when |dy| = 3:
    # 8 + 8 - 2 = 14. Both colours see the same pairs: 14/30 = 7/15 each.
    assert vec[1, 63] == pytest.approx(7 / 15) and vec[1, 0] == pytest.approx(7 / 15)
    assert np.count_nonzero(vec[1]) == 2
    assert not vec[2:].any()


@pytest.mark.parametrize("shape", [(9, 11), (1, 17), (16, 5), (3, 3)])
def test_correlogram_matches_the_definition(shape: tuple[int, int]) -> None:
    rng = np.random.default_rng(sum(shape))
    img = (rng.integers(0, 3, (*shape, 3)) * 100).astype(np.uint8)
    assert np.allclose(method("correlogram").describe(img), brute_correlogram(img), atol=1e-7)


def test_correlogram_downscales_large_images() -> None:
    big = np.asarray(Image.fromarray(natural_image()).resize((512, 384), Image.Resampling.BICUBIC))
    small = np.asarray(Image.fromarray(big).resize((256, 192), Image.Resampling.BOX))
    vec = method("correlogram").describe(big)
    assert np.array_equal(vec, method("correlogram").describe(small))
    assert np.all((vec >= 0) & (vec <= 1))


# --- tiny --------------------------------------------------------------------------------


def test_tiny_unit_norm_and_flat_image_is_zero() -> None:
    vec = method("tiny").describe(natural_image())
    assert np.linalg.norm(vec) == pytest.approx(1.0, abs=1e-5)
    assert vec.sum() == pytest.approx(0.0, abs=1e-4)
    flat = method("tiny").describe(np.full((30, 50, 3), 77, np.uint8))
    assert flat.dtype == np.float32 and flat.shape == (256,) and not flat.any()


def test_tiny_nearly_invariant_to_contrast() -> None:
    img = natural_image()
    mean = img.mean()
    lowcon = (mean + 0.5 * (img - mean)).round().astype(np.uint8)
    a, b = method("tiny").describe(img), method("tiny").describe(lowcon)
    assert float(a @ b) > 0.99
    other = method("tiny").describe(np.ascontiguousarray(img[::-1, ::-1]))
    assert float(a @ other) < 0.9


# --- pdq ---------------------------------------------------------------------------------


def test_pdq_signs_and_hamming_distance() -> None:
    m = method("pdq")
    img = natural_image()
    a = m.describe(img)
    assert a.shape == (256,) and set(np.unique(a)) <= {-1.0, 1.0}
    assert np.sum((a - m.describe(img.copy())) ** 2) == 0
    other = m.describe(np.ascontiguousarray(np.rot90(natural_image(5), 2)))
    hamming = int(np.count_nonzero(a != other))
    assert np.sum((a - other) ** 2) == 4 * hamming
    assert hamming > 64


# --- user functions ----------------------------------------------------------------------


def test_user_callable_resolves_and_detects_dim() -> None:
    m = method(here("mean_colour"))
    assert (m.name, m.dim, m.metric, m.deterministic) == (here("mean_colour"), 3, "l2", True)
    assert m.reference == "Mean RGB colour: a 3-number toy descriptor."
    img = natural_image()
    vec = m.describe(img)
    assert vec.dtype == np.float32
    assert np.allclose(vec, img.reshape(-1, 3).mean(axis=0))
    assert describe_all(m, [img, img]).shape == (2, 3)
    assert describe_all(m, []).shape == (0, 3)


def test_user_callable_attributes() -> None:
    m = method(here("unit_mean_colour"))
    assert (m.dim, m.metric, m.deterministic) == (3, "ip", False)
    assert m.reference == f"user callable {here('unit_mean_colour')}"


@pytest.mark.parametrize(
    "fn, problem",
    [
        ("NOT_CALLABLE", "'NOT_CALLABLE' is a int, not callable"),
        ("returns_2d", r"shape \(4, 4\), not a 1-D vector"),
        ("returns_nan", r"1 non-finite value"),
        ("returns_empty", "empty vector"),
        ("returns_strings", "not real numbers"),
        ("raises", "failed on a 64x64 probe image: RuntimeError: model weights not found"),
        ("no_such_function", "has no 'no_such_function'"),
        ("bad_metric", "metric 'cosine' is not one of l2, ip, l1, d1"),
    ],
)
def test_bad_user_callables(fn: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem) as err:
        method(here(fn))
    assert here(fn) in str(err.value)


def test_missing_module_is_one_line() -> None:
    with pytest.raises(ValueError) as err:
        method("tests.no_such_module:describe")
    msg = str(err.value)
    assert "\n" not in msg
    assert "cannot import module 'tests.no_such_module'" in msg
    assert "ModuleNotFoundError" in msg
    with pytest.raises(ValueError, match="expected 'package.module:function'"):
        method("tests.test_features:")


def test_user_vectors_are_checked_on_every_call() -> None:
    m = method(here("one_per_row"))
    assert m.dim == 64
    assert m.describe(natural_image()[:64]).shape == (64,)
    with pytest.raises(ValueError, match=r"one_per_row'.*length 96, expected 64"):
        m.describe(natural_image())
    m = method(here("nan_on_dark"))
    with pytest.raises(ValueError, match=r"nan_on_dark'.*non-finite"):
        describe_all(m, [natural_image(), np.zeros((8, 8, 3), np.uint8)])
