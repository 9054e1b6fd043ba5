"""The images of an offline image library for copy-detection benchmarks, on one machine.

A library is the photographs that scikit-image ships inside its installed package
(real camera statistics, no download) followed by as many synthetic dead-leaves
images as needed. The dead-leaves model (Matheron; Lee, Mumford & Huang 2001)
drops opaque disks with a scale-invariant radius law, each new one falling *under*
the ones already there; its images share the occlusion structure and the ~1/f^2
power spectrum of natural images, while any number of distinct images can be
regenerated from (seed, index) alone, byte for byte, without storing them.

By default (``textured_leaves``) each leaf shows a window of one of the photographs
that installed packages ship, so every image draws its colours and textures from one
common pool, as the pictures of a photo collection share their colour statistics; with
one random palette per image (``dead_leaves``, ``--leaves flat``) a colour histogram
tells almost every image apart whatever the alteration, which describes the generator
rather than the method.

Everything here is pure and single-process: a distributed job (``job.py``) maps ``render``
over ``library_plan`` and writes each item's bytes under its ``name``; the disks themselves
are rasterised by ``disks.py``.
"""

from __future__ import annotations

import importlib.util
import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from statistics import NormalDist

import numpy as np
from PIL import Image

from disc21spark.library.disks import (
    _INT32_MAX,
    _blur121,
    _large_disk_layer,
    _leaf_colours,
    _palette,
    _small_disk_pixels,
    _touches_bare,
    sample_radii,
)

PHOTOS: tuple[str, ...] = ("*.png", "*.jpg")  # patterns of the photographs in skimage/data

MIN_SIDE = 16
MAX_SIDE = 8192  # beyond this the int32 leaf map and the stencils would need gigabytes
R_MIN = 1.0
R_MAX_FRACTION = 0.25  # r_max = 0.25 * min(width, height)
JPEG_QUALITY = 90
NOISE_SIGMA = 2.0  # grey levels; mimics sensor noise so JPEG has texture to quantise

BARE = -1  # leaf id of a pixel no disk has reached

# Expected covering intensity (mean number of disks over a pixel) added per batch;
# e^-2 of the still-bare pixels survive each batch, so ~7 batches finish a 512x384
# frame while keeping every batch big enough for numpy to pay off.
_BATCH_COVER = 2.0
# Far beyond any real need (e^-60 of pixels bare), only there to bound the loop.
_CAP_COVER = 60.0
# Disks larger than this are filled by Pillow's C rasteriser: a few of them cover most
# of the area, and their stencils would dominate numpy's work.
_PIL_RADIUS = 4


@dataclass(frozen=True)
class LibraryItem:
    name: str  # relative output path
    kind: str  # "photo" or "deadleaves"
    index: int  # dead-leaves index, or rank among the shipped photos
    source: str  # path of the shipped photo, "" for dead leaves


def shipped_photos() -> list[Path]:
    """The photograph files inside the installed scikit-image package, sorted by name."""
    # the files next to skimage.data are read directly: the skimage.data.<name>()
    # loaders may fetch missing files from the network through pooch
    import skimage.data

    folder = Path(skimage.data.__file__).resolve().parent
    found = sorted(
        (p for pattern in PHOTOS for p in folder.glob(pattern) if p.is_file()),
        key=lambda p: p.name,
    )
    if not found:
        raise RuntimeError(f"no {' or '.join(PHOTOS)} photograph in {folder}")
    return found


def _check_size(width: int, height: int) -> None:
    for label, side in (("width", width), ("height", height)):
        if not isinstance(side, (int, np.integer)) or isinstance(side, bool):
            raise ValueError(f"{label} must be an integer, got {side!r}")
        if not MIN_SIDE <= side <= MAX_SIDE:
            raise ValueError(f"{label} must be in [{MIN_SIDE}, {MAX_SIDE}], got {side}")


def _check_natural(label: str, value: int) -> None:
    # SeedSequence only takes non-negative integers
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{label} must be a non-negative integer, got {value!r}")


def _flat_paint(rng: np.random.Generator) -> _Paint:
    palette = _palette(rng)
    return lambda rng, r, cx, cy: _leaf_colours(rng, palette, r.size)


_Paint = Callable[[np.random.Generator, np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def _layout(
    rng: np.random.Generator, width: int, height: int, paint: _Paint
) -> tuple[np.ndarray, np.ndarray]:
    """(leaf id per pixel, BARE where none; what ``paint(rng, r, cx, cy)`` gave each leaf)."""
    r_max = R_MAX_FRACTION * min(width, height)
    # centres up to r_max outside the frame: every disk that could overlap the frame is
    # possible, so the border is as densely covered as the middle
    margin = r_max
    ext_w, ext_h = width + 2 * margin, height + 2 * margin
    mean_r2 = 2.0 * np.log(r_max / R_MIN) / (R_MIN**-2 - r_max**-2)  # E[r^2] under r^-3
    per_cover = ext_w * ext_h / (np.pi * mean_r2)  # disks adding one expected layer
    batch = int(np.ceil(_BATCH_COVER * per_cover))
    cap = int(np.ceil(_CAP_COVER * per_cover))

    first = np.full(height * width, _INT32_MAX, np.int32)
    bare = np.ones(height * width, bool)
    colours, kept = [], []
    placed = 0
    while placed < cap and bare.any():
        r = sample_radii(rng, batch, R_MIN, r_max)
        cx = rng.uniform(-margin, width + margin, batch)
        cy = rng.uniform(-margin, height + margin, batch)
        ids = np.arange(placed, placed + batch, dtype=np.int32)
        placed += batch

        x0 = np.clip(np.floor(cx - r), 0, width).astype(np.int32)
        x1 = np.clip(np.floor(cx + r) + 1, 0, width).astype(np.int32)
        y0 = np.clip(np.floor(cy - r), 0, height).astype(np.int32)
        y1 = np.clip(np.floor(cy + r) + 1, 0, height).astype(np.int32)
        # a disk that only overlaps covered ground lies entirely under earlier leaves
        keep = (x1 > x0) & (y1 > y0)
        if not bare.all():
            keep &= _touches_bare(bare.reshape(height, width), x0, x1, y0, y1)
        r, cx, cy, ids = r[keep], cx[keep], cy[keep], ids[keep]
        # hidden disks never show, so only the kept ones are painted
        colours.append(paint(rng, r, cx, cy))
        kept.append(ids)

        large = r > _PIL_RADIUS
        if large.any():
            layer = _large_disk_layer(r[large], cx[large], cy[large], ids[large], width, height)
            np.minimum(first, layer, out=first)
        small = ~large
        pix, owner = _small_disk_pixels(r[small], cx[small], cy[small], ids[small], width, height)
        hit = bare[pix]
        np.minimum.at(first, pix[hit], owner[hit])
        bare = first == _INT32_MAX

    painted = np.concatenate(colours)
    table = np.zeros((max(placed, 1), *painted.shape[1:]), painted.dtype)
    table[np.concatenate(kept)] = painted
    first[bare] = BARE
    return first.reshape(height, width), table


def leaf_ids(seed: int, index: int, width: int, height: int) -> np.ndarray:
    """Id of the visible leaf at each pixel of dead_leaves(seed, index, width, height).

    BARE (-1) marks a pixel no disk reached, which only the safety cap on the number of
    disks can leave behind.
    """
    _check_natural("seed", seed)
    _check_natural("index", index)
    _check_size(width, height)
    rng = np.random.default_rng(np.random.SeedSequence([seed, index]))
    return _layout(rng, width, height, _flat_paint(rng))[0]


# Gaussian noise by inverse CDF of one random byte, in 1/16 grey levels: drawing bytes
# and looking them up is several times cheaper than standard_normal for ~600k values,
# and 256 quantiles (tails at +-2.9 sigma) are plenty for sigma = 2 grey levels.
_NOISE16 = np.array(
    [round(16 * NOISE_SIGMA * NormalDist().inv_cdf((k + 0.5) / 256)) for k in range(256)],
    dtype=np.int16,
)


def dead_leaves(seed: int, index: int, width: int, height: int) -> np.ndarray:
    """An RGB uint8 (height, width, 3) dead-leaves image, a pure function of its arguments."""
    _check_natural("seed", seed)
    _check_natural("index", index)
    _check_size(width, height)
    # one generator per image, seeded by (seed, index) only: any image can be rebuilt
    # alone, in any process, in any order
    rng = np.random.default_rng(np.random.SeedSequence([seed, index]))
    ids, table = _layout(rng, width, height, _flat_paint(rng))
    # bare pixels (cap reached) take the colour of leaf 0, as if it lay underneath
    image = np.take(table, np.maximum(ids, 0), axis=0)
    sixteenths = _blur121(image).astype(np.int16)
    noise = np.frombuffer(rng.bytes(sixteenths.size), dtype=np.uint8).reshape(sixteenths.shape)
    sixteenths += np.take(_NOISE16, noise)
    # integer arithmetic end to end: the same bytes on every CPU and numpy build
    return np.clip((sixteenths + 8) >> 4, 0, 255).astype(np.uint8)


# Photographs that installed packages ship inside their folders (package, path in it): the
# patches that fill textured leaves. Photographs only, colour and grey (drawings, charts
# and synthetic test patterns would teach a method nothing about photographs); a file a
# package no longer ships is skipped, and library.json lists the ones used.
PATCH_SOURCES: tuple[tuple[str, str], ...] = (
    ("skimage", "data/astronaut.png"),
    ("skimage", "data/brick.png"),
    ("skimage", "data/camera.png"),
    ("skimage", "data/cell.png"),
    ("skimage", "data/chelsea.png"),
    ("skimage", "data/clock_motion.png"),
    ("skimage", "data/coffee.png"),
    ("skimage", "data/coins.png"),
    ("skimage", "data/grass.png"),
    ("skimage", "data/gravel.png"),
    ("skimage", "data/hubble_deep_field.jpg"),
    ("skimage", "data/ihc.png"),
    ("skimage", "data/moon.png"),
    ("skimage", "data/motorcycle_left.png"),
    ("skimage", "data/motorcycle_right.png"),
    ("skimage", "data/retina.jpg"),
    ("skimage", "data/rocket.jpg"),
    ("matplotlib", "mpl-data/sample_data/grace_hopper.jpg"),
)
PATCH_MAX_SIDE = 512  # sources are shrunk to this long side: one scale for all textures
# A scene draws its leaves from a few photographs, as a real picture shows a few surfaces.
# Measured with 1,000 images, crop:50 / lowcon:80, colour histogram by L1 (median rank):
# 1-4 photographs, leaves anywhere: 1 / 4; a per-image exposure and white balance on top:
# 1 / 1 (each image its own colour cast: too easy, as the old palettes); 3-6 photographs
# in regions: 3 / 3; 4-8 in regions: 2 / 5, the closest to Howe's proportions.
SCENE_SOURCES = (4, 8)  # inclusive range of photographs per image


@dataclass(frozen=True)
class Patches:
    """Every patch source in one flat RGB buffer (pixel rows), with each one's place."""

    pixels: np.ndarray  # (total pixels, 3) uint8
    base: np.ndarray  # first pixel of each source
    width: np.ndarray
    height: np.ndarray
    names: tuple[str, ...]  # "package/path" of each source


def _package_file(package: str, relative: str) -> Path | None:

    found = importlib.util.find_spec(package)
    if found is None or not found.submodule_search_locations:
        return None
    path = Path(list(found.submodule_search_locations)[0]) / relative
    return path if path.is_file() else None


_PATCHES: list[Patches] = []


def patch_sources() -> Patches:
    """The shipped photographs as patch sources, loaded once per process."""
    if not _PATCHES:
        arrays, names = [], []
        for package, relative in PATCH_SOURCES:
            path = _package_file(package, relative)
            if path is None:
                continue
            with Image.open(path) as img:
                img = img.convert("RGB")
                scale = PATCH_MAX_SIDE / max(img.size)
                if scale < 1:
                    size = (round(img.width * scale), round(img.height * scale))
                    img = img.resize(size, Image.Resampling.BOX)
                arrays.append(np.asarray(img, dtype=np.uint8))
            names.append(f"{package}/{relative}")
        if not arrays:
            raise RuntimeError("no shipped photograph found to fill the leaves (see PATCH_SOURCES)")
        sizes = np.array([a.shape[0] * a.shape[1] for a in arrays], dtype=np.int64)
        _PATCHES.append(
            Patches(
                np.concatenate([a.reshape(-1, 3) for a in arrays]),
                np.r_[0, np.cumsum(sizes)[:-1]],
                np.array([a.shape[1] for a in arrays], dtype=np.int64),
                np.array([a.shape[0] for a in arrays], dtype=np.int64),
                tuple(names),
            )
        )
    return _PATCHES[0]


def _texture_paint(rng: np.random.Generator, patches: Patches, width: int, height: int) -> _Paint:
    """Each leaf shows a window of one of the scene's photographs (source, x and y shift)."""
    n_sources = len(patches.names)
    low, high = min(SCENE_SOURCES[0], n_sources), min(SCENE_SOURCES[1], n_sources)
    k = int(rng.integers(low, high + 1))
    scene = rng.choice(n_sources, size=k, replace=False)
    # each photograph of the scene owns a region (nearest anchor), as sky, wall and ground
    # occupy parts of a picture: a crop then loses some surfaces and keeps others
    anchors = rng.random((k, 2)) * np.array([width, height])

    def paint(
        rng: np.random.Generator, r: np.ndarray, cx: np.ndarray, cy: np.ndarray
    ) -> np.ndarray:
        near = np.argmin(
            (cx[:, None] - anchors[:, 0]) ** 2 + (cy[:, None] - anchors[:, 1]) ** 2, axis=1
        )
        src = scene[near]
        w, h = patches.width[src], patches.height[src]
        # the window holds the whole disk when the photograph is large enough (else it wraps)
        side = 2 * np.ceil(r).astype(np.int64) + 1
        u = np.floor(rng.random(r.size) * np.maximum(w - side, 1)).astype(np.int64)
        v = np.floor(rng.random(r.size) * np.maximum(h - side, 1)).astype(np.int64)
        left = np.floor(cx - r).astype(np.int64)
        top = np.floor(cy - r).astype(np.int64)
        return np.stack([src, u - left, v - top], axis=1)

    return paint


def textured_leaves(seed: int, index: int, width: int, height: int) -> np.ndarray:
    """An RGB uint8 dead-leaves image whose leaves are windows of shipped photographs.

    The occlusion geometry is dead_leaves'; each leaf shows a window of one of a few
    photographs (the scene), so colours, textures and their mixtures come from real
    camera images rather than from a palette invented per image, and every image draws
    from the same pool: a colour histogram has to tell apart images that share colour
    statistics, as in a photo collection. Each photograph of the scene owns a region of
    the frame, so a crop changes the mixture as cropping a real scene does.
    """
    _check_natural("seed", seed)
    _check_natural("index", index)
    _check_size(width, height)
    patches = patch_sources()
    # spawn key 1 keeps these streams apart from dead_leaves' (seed, index) streams
    rng = np.random.default_rng(np.random.SeedSequence([seed, index], spawn_key=(1,)))
    ids, table = _layout(rng, width, height, _texture_paint(rng, patches, width, height))
    leaf = table[np.maximum(ids, 0)]
    src, dx, dy = leaf[..., 0], leaf[..., 1], leaf[..., 2]
    ys, xs = np.indices((height, width), dtype=np.int64)
    w, h = patches.width[src], patches.height[src]
    flat = patches.base[src] + ((ys + dy) % h) * w + (xs + dx) % w
    image = patches.pixels[flat]
    sixteenths = _blur121(image).astype(np.int16)
    noise = np.frombuffer(rng.bytes(sixteenths.size), dtype=np.uint8).reshape(sixteenths.shape)
    sixteenths += np.take(_NOISE16, noise)
    return np.clip((sixteenths + 8) >> 4, 0, 255).astype(np.uint8)


def library_plan(
    size: int, seed: int, width: int, height: int, photos: bool = True
) -> list[LibraryItem]:
    """The size items of a library: shipped photographs first, then dead leaves 0, 1, ..."""
    if not isinstance(size, (int, np.integer)) or isinstance(size, bool) or size < 1:
        raise ValueError(f"size must be a positive integer, got {size!r}")
    _check_natural("seed", seed)
    _check_size(width, height)
    items = []
    if photos:
        for rank, path in enumerate(shipped_photos()[:size]):
            items.append(LibraryItem(f"photos/{path.name}", "photo", rank, str(path)))
    for index in range(size - len(items)):
        items.append(LibraryItem(f"deadleaves/dl_{index:06d}.jpg", "deadleaves", index, ""))
    return items


LEAVES = {"textured": textured_leaves, "flat": dead_leaves}  # --leaves: how leaves are filled


def render(
    item: LibraryItem, seed: int, width: int, height: int, leaves: str = "textured"
) -> bytes:
    """The bytes of item's file: the photograph as shipped, or a dead-leaves JPEG whose
    leaves are windows of photographs (textured) or one colour of a per-image palette (flat)."""
    if item.kind == "photo":
        if not item.source:
            raise ValueError(f"photo item {item.name} has no source path")
        # copied as is: re-encoding would change the photo's own compression history
        return Path(item.source).read_bytes()
    if item.kind == "deadleaves":
        out = io.BytesIO()
        # no optimize/progressive: both change the bytes without changing the pixels
        if leaves not in LEAVES:
            raise ValueError(f"leaves must be one of {', '.join(LEAVES)}, got {leaves!r}")
        Image.fromarray(LEAVES[leaves](seed, item.index, width, height)).save(
            out, format="JPEG", quality=JPEG_QUALITY
        )
        return out.getvalue()
    raise ValueError(f"unknown library item kind {item.kind!r} for {item.name}")
