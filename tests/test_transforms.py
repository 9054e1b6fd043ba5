"""Howe's tests and the DISC21 edits hold their definitions exactly, on known images."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from disc21spark.queries.transforms import KINDS, BadTestSpec, TooSmall, expand_sweeps, parse_tests


def gradient(h: int, w: int) -> np.ndarray:
    y, x = np.mgrid[0:h, 0:w]
    return np.stack([x * 255 // max(w - 1, 1), y * 255 // max(h - 1, 1), (x + y) % 256], -1).astype(
        np.uint8
    )


def one(spec: str):
    (test,) = parse_tests(spec)
    return test


@pytest.mark.parametrize("k", [10, 25, 50, 80, 99])
@pytest.mark.parametrize("h,w", [(384, 512), (97, 131), (480, 270)])
def test_crop_keeps_k_percent_of_the_area_same_aspect_at_a_seeded_place(k, h, w):
    img = gradient(h, w)
    out, drawn = one(f"crop:{k}").apply(img, np.random.default_rng(3))
    ch, cw = out.shape[:2]
    # within one pixel row / column of the exact area
    assert abs(ch * cw - k / 100 * h * w) <= max(h, w)
    assert abs(cw / ch - w / h) <= 1.0 / min(ch, cw) * (w / h + 1)
    x, y = drawn[0]["x"], drawn[0]["y"]
    assert np.array_equal(out, img[y : y + ch, x : x + cw])
    again, _ = one(f"crop:{k}").apply(img, np.random.default_rng(3))
    assert np.array_equal(out, again)


def test_crop_positions_vary_with_the_draw():
    img = gradient(200, 300)
    places = {
        (d[0]["x"], d[0]["y"])
        for d in (one("crop:30").apply(img, np.random.default_rng(s))[1] for s in range(20))
    }
    assert len(places) > 10


@pytest.mark.parametrize("grid", [(4, 4), (2, 3), (1, 2), (5, 1)])
def test_jumble_is_a_permutation_of_equal_tiles_never_the_identity(grid):
    r, c = grid
    h, w = 41, 58  # not divisible: the remainder rows and columns are cut off
    img = gradient(h, w)
    th, tw = h // r, w // c
    for seed in range(25):
        out, drawn = one(f"jumble:{r}x{c}").apply(img, np.random.default_rng(seed))
        assert out.shape == (th * r, tw * c, 3)
        order = drawn[0]["order"]
        assert sorted(order) == list(range(r * c)) and order != list(range(r * c))
        for place, tile in enumerate(order):
            pr, pc = divmod(place, c)
            tr, tc = divmod(tile, c)
            assert np.array_equal(
                out[pr * th : (pr + 1) * th, pc * tw : (pc + 1) * tw],
                img[tr * th : (tr + 1) * th, tc * tw : (tc + 1) * tw],
            )


def test_jumble_keeps_every_pixel_when_the_grid_divides_the_size():
    img = gradient(40, 60)
    out, _ = one("jumble:4x4").apply(img, np.random.default_rng(0))
    assert np.array_equal(np.sort(out.reshape(-1, 3), axis=0), np.sort(img.reshape(-1, 3), axis=0))


@pytest.mark.parametrize("k", [0, 20, 50, 80, 100])
def test_lowcon_scales_values_about_their_mean(k):
    rng = np.random.default_rng(1)
    img = rng.integers(0, 256, size=(60, 80, 3), dtype=np.uint8)
    out, drawn = one(f"lowcon:{k}").apply(img, rng)
    mean = img.mean(dtype=np.float64)
    assert drawn[0]["mean"] == pytest.approx(mean, abs=1e-4)
    expected = mean + k / 100 * (img.astype(np.float64) - mean)
    assert np.abs(out - expected).max() <= 0.5 + 1e-9
    for ch in range(3):
        span = int(img[..., ch].max()) - int(img[..., ch].min())
        new = int(out[..., ch].max()) - int(out[..., ch].min())
        assert abs(new - k / 100 * span) <= 1
    assert abs(out.mean() - mean) <= 0.5


def test_edits_do_what_they_say():
    img = gradient(50, 70)
    rng = np.random.default_rng(0)
    assert np.array_equal(one("flip:h").apply(img, rng)[0], img[:, ::-1])
    assert np.array_equal(one("flip:v").apply(img, rng)[0], img[::-1])
    assert np.array_equal(one("identity").apply(img, rng)[0], img)
    assert one("resize:50").apply(img, rng)[0].shape == (25, 35, 3)
    padded, drawn = one("pad:10").apply(img, rng)
    assert padded.shape == (60, 84, 3)
    assert np.array_equal(padded[5:55, 7:77], img)
    assert (padded[0, 0] == drawn[0]["colour"]).all()
    bright = one("bright:50").apply(img, rng)[0]
    assert np.abs(bright - img.astype(float) * 0.5).max() <= 0.5
    gray = one("gray").apply(img, rng)[0]
    assert (gray[..., 0] == gray[..., 1]).all() and (gray[..., 1] == gray[..., 2]).all()
    pix = one("pixel:10").apply(img, rng)[0]
    assert len(np.unique(pix[:10, :10].reshape(-1, 3), axis=0)) == 1
    blurred = one("blur:3").apply(img, rng)[0]
    assert blurred.shape == img.shape and not np.array_equal(blurred, img)
    jpeg = one("jpeg:10").apply(img, rng)[0]
    assert jpeg.shape == img.shape and not np.array_equal(jpeg, img)
    rot = one("rotate:90").apply(gradient(50, 50), rng)[0]
    assert np.abs(rot.astype(int) - np.rot90(gradient(50, 50)).astype(int)).max() <= 1
    for spec in ("text:20", "shape:20"):
        out, drawn = one(spec).apply(img, np.random.default_rng(5))
        assert out.shape == img.shape and not np.array_equal(out, img)
        assert np.array_equal(out, one(spec).apply(img, np.random.default_rng(5))[0])


def test_shape_covers_its_box():
    img = np.zeros((100, 100, 3), np.uint8)
    out, drawn = one("shape:25").apply(img, np.random.default_rng(2))
    d = drawn[0]
    assert d["w"] == 50 and d["h"] == 50
    painted = (out != 0).any(axis=2)
    assert painted.sum() <= 50 * 50 and painted[d["y"] + 25, d["x"] + 25]


@settings(max_examples=60, deadline=None)
@given(
    h=st.integers(8, 90),
    w=st.integers(8, 90),
    spec=st.sampled_from(
        [
            "crop:37",
            "jumble:3x5",
            "lowcon:40",
            "rotate:33",
            "resize:73",
            "pad:12",
            "pixel:7",
            "text:15",
            "shape:10",
            "crop:60+jumble:2x2+lowcon:50",
            "pad:5+resize:150+flip:v",
        ]
    ),
    seed=st.integers(0, 2**32 - 1),
)
def test_output_size_is_known_before_the_pixels(h, w, spec, seed):
    test = one(spec)
    out, _ = test.apply(gradient(h, w), np.random.default_rng(seed))
    assert out.dtype == np.uint8 and out.shape == (*test.output_size((h, w)), 3)


def test_composition_applies_in_order_and_records_each_step():
    img = gradient(80, 120)
    test = one("crop:50+lowcon:80")
    assert test.name == "crop:50+lowcon:80"
    out, drawn = test.apply(img, np.random.default_rng(9))
    assert [d["step"] for d in drawn] == ["crop:50", "lowcon:80"]
    x, y, cw, ch = (drawn[0][k] for k in ("x", "y", "w", "h"))
    cropped = img[y : y + ch, x : x + cw]
    assert np.array_equal(out, one("lowcon:80").apply(cropped, np.random.default_rng(0))[0])


def test_too_small_images_are_named():
    with pytest.raises(TooSmall, match="3×2 px is too small for jumble:4x4"):
        one("jumble:4x4").output_size((2, 3))
    with pytest.raises(TooSmall, match="crop"):
        one("crop:1").output_size((4, 4))
    assert one("crop:1").output_size((1000, 1000)) == (100, 100)
    assert math.isclose(100 * 100, 0.01 * 1000 * 1000)


@pytest.mark.parametrize(
    "spec,message",
    [
        ("blurr:3", "unknown test 'blurr:3'"),
        ("crop", "'crop' needs a parameter: crop:K"),
        ("crop:0", "between"),
        ("crop:abc", "'abc' is not a number"),
        ("jumble:4", "ROWSxCOLUMNS"),
        ("jumble:1x1", "identity"),
        ("lowcon:120", "between 0 and 100"),
        ("jpeg:5.5", "not an integer"),
        ("flip:x", "h (left-right) or v"),
        ("crop:50,crop:50", "given twice"),
        ("crop:50,,lowcon:80", "empty test"),
        ("identity:3", "no parameter"),
        ("crop:90..10", "a sweep needs a step"),
        ("crop:90..10:0", "step of a sweep must be a positive number"),
        ("crop:a..10:10", "NAME:FIRST..LAST:STEP"),
        ("crop:90..0:10", "between 0.01 and 100"),
        ("crop:100..1:0.5", "more than 100 tests in one sweep"),
        ("jumble:2x3..8x8:2", "square grids"),
        ("jumble:2x2..3x3:0.5", "whole numbers of tiles"),
        ("crop:90..10:10+lowcon:90..10:10", "one sweep per test"),
        ("crop:90..10:10,crop:50", "given twice"),
    ],
)
def test_bad_tests_get_one_clear_line(spec, message):
    with pytest.raises(BadTestSpec, match=message.replace("(", r"\(").replace(")", r"\)")):
        parse_tests(spec)


def test_sweeps_expand_to_one_test_per_value():
    names = lambda text: [t.name for t in parse_tests(text)]  # noqa: E731
    assert names("crop:90..10:10") == [f"crop:{k}" for k in range(90, 0, -10)]
    assert names("lowcon:20..80:30") == ["lowcon:20", "lowcon:50", "lowcon:80"]
    # the last value is kept only when the steps land on it
    assert names("crop:50..75:10") == ["crop:50", "crop:60", "crop:70"]
    assert names("crop:50..51:0.25") == [
        "crop:50",
        "crop:50.25",
        "crop:50.5",
        "crop:50.75",
        "crop:51",
    ]
    assert names("jumble:2x2..8x8:2") == ["jumble:2x2", "jumble:4x4", "jumble:6x6", "jumble:8x8"]
    assert names("jumble:2x2..4x4") == ["jumble:2x2", "jumble:3x3", "jumble:4x4"]
    # a sweep in one step of a chain, beside plain tests
    assert names("identity,crop:30..10:10+lowcon:80") == [
        "identity",
        "crop:30+lowcon:80",
        "crop:20+lowcon:80",
        "crop:10+lowcon:80",
    ]
    assert expand_sweeps("crop:50,lowcon:80") == ["crop:50", "lowcon:80"]


def test_every_kind_is_documented():
    for kind in KINDS.values():
        assert kind.about and kind.usage.startswith(kind.name)
