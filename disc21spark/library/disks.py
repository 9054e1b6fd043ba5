"""The raster work of the dead-leaves model: radii drawn from the scale-invariant law, disks
rasterised (small ones by numpy stencils, large ones by Pillow), the bare-ground test that
skips disks falling under covered ground, the exact integer blur and the flat leaves' colours.
Pure numpy/Pillow."""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageDraw

# Upper bound on stencil cells handled by one numpy step, to cap temporary memory.
_STENCIL_CELLS = 1 << 20
_BLOCK = 8  # side of the blocks used to skip disks that only touch covered ground; 8 bytes = uint64
_INT32_MAX = np.iinfo(np.int32).max


def sample_radii(rng: np.random.Generator, n: int, r_min: float, r_max: float) -> np.ndarray:
    """n radii with density proportional to r^-3 on [r_min, r_max] (inverse CDF)."""
    # F(r) = (r_min^-2 - r^-2) / (r_min^-2 - r_max^-2), solved for r; sqrt and division
    # are correctly rounded everywhere, unlike libm's pow, so radii are bit-reproducible
    lo, hi = 1.0 / (r_min * r_min), 1.0 / (r_max * r_max)
    return 1.0 / np.sqrt(lo - rng.random(n) * (lo - hi))


_STENCILS: dict[tuple[int, int], tuple[np.ndarray, ...]] = {}


def _stencil(reach: int, width: int) -> tuple[np.ndarray, ...]:
    """Offsets of the pixels a disk of radius <= reach can touch around its rounded centre."""
    key = (reach, width)
    if key not in _STENCILS:
        grid = np.arange(-reach, reach + 1, dtype=np.int32)
        dy, dx = np.meshgrid(grid, grid, indexing="ij")
        # the centre is within half a pixel of the rounded one, so the corners are out of reach
        near = dx * dx + dy * dy <= (reach + 1) ** 2
        dx, dy = dx[near], dy[near]
        _STENCILS[key] = (
            dx.astype(np.float32),
            dy.astype(np.float32),
            dx,
            dy,
            dy * width + dx,
        )
    return _STENCILS[key]


def _small_disk_pixels(
    r: np.ndarray, cx: np.ndarray, cy: np.ndarray, ids: np.ndarray, width: int, height: int
) -> tuple[np.ndarray, np.ndarray]:
    """(flat pixel, disk id) for every in-frame pixel centre inside each disk."""
    if r.size == 0:  # a batch may hold only large disks
        return np.empty(0, np.int32), np.empty(0, np.int32)
    reach = np.ceil(r).astype(np.int32)
    rx = np.rint(cx).astype(np.int32)
    ry = np.rint(cy).astype(np.int32)
    # disks whose stencil stays inside the frame skip the four bound tests
    inner = (rx >= reach) & (rx + reach < width) & (ry >= reach) & (ry + reach < height)
    fx = (cx - rx).astype(np.float32)
    fy = (cy - ry).astype(np.float32)
    r2 = (r * r).astype(np.float32)
    order = np.lexsort((inner, reach))
    group = reach[order] * 2 + inner[order]
    cuts = np.flatnonzero(np.diff(group)) + 1
    pixels, owners = [], []
    for start, stop in zip(np.r_[0, cuts], np.r_[cuts, group.size]):
        k = order[start]
        sdx, sdy, idx, idy, dflat = _stencil(int(reach[k]), width)
        step = max(1, _STENCIL_CELLS // sdx.size)
        for lo in range(start, stop, step):
            sel = order[lo : min(lo + step, stop)]
            ax = sdx - fx[sel, None]
            ay = sdy - fy[sel, None]
            inside = ax * ax + ay * ay <= r2[sel, None]
            if not inner[k]:
                px = rx[sel, None] + idx
                py = ry[sel, None] + idy
                inside &= (px >= 0) & (px < width) & (py >= 0) & (py < height)
            rows, cols = np.nonzero(inside)
            disk = sel[rows]
            pixels.append(ry[disk] * width + rx[disk] + dflat[cols])
            owners.append(ids[disk])
    if not pixels:
        return np.empty(0, np.int32), np.empty(0, np.int32)
    return np.concatenate(pixels), np.concatenate(owners)


def _large_disk_layer(
    r: np.ndarray, cx: np.ndarray, cy: np.ndarray, ids: np.ndarray, width: int, height: int
) -> np.ndarray:
    """Per pixel, the smallest id among the given disks (int32 max where none)."""
    layer = Image.new("I", (width, height), _INT32_MAX)
    draw = ImageDraw.Draw(layer)
    # painting from the highest id down leaves the lowest id, the topmost leaf, visible
    for i in np.argsort(ids)[::-1].tolist():
        x, y, rad = float(cx[i]), float(cy[i]), float(r[i])
        draw.ellipse((x - rad, y - rad, x + rad, y + rad), fill=int(ids[i]))
    return np.asarray(layer, dtype=np.int32).ravel()


def _touches_bare(
    bare: np.ndarray, x0: np.ndarray, x1: np.ndarray, y0: np.ndarray, y1: np.ndarray
) -> np.ndarray:
    """Whether each box [x0, x1) x [y0, y1) meets a block holding a bare pixel."""
    height, width = bare.shape
    gh, gw = -(-height // _BLOCK), -(-width // _BLOCK)
    padded = np.zeros((gh * _BLOCK, gw * _BLOCK), np.uint8)
    padded[:height, :width] = bare
    # eight bytes of a row read as one uint64: a block is bare if any of its 8 words is non-zero
    blocks = padded.view(np.uint64).reshape(gh, _BLOCK, gw).any(axis=1)
    table = np.zeros((gh + 1, gw + 1), np.int32)
    table[1:, 1:] = blocks.cumsum(0, dtype=np.int32).cumsum(1, dtype=np.int32)
    bx0, by0 = x0 // _BLOCK, y0 // _BLOCK
    bx1, by1 = -(-x1 // _BLOCK), -(-y1 // _BLOCK)
    return table[by1, bx1] - table[by0, bx1] - table[by1, bx0] + table[by0, bx0] > 0


def _blur121(image: np.ndarray) -> np.ndarray:
    """16 x the [1, 2, 1] / 4 blur in both directions, in exact integers (uint16)."""
    # sigma ~0.7 px: softens the aliased disk edges the way a lens would
    src = image.astype(np.uint16)
    tmp = np.empty_like(src)
    tmp[1:-1] = src[:-2] + 2 * src[1:-1] + src[2:]
    tmp[0] = 3 * src[0] + src[1]  # edge pixel repeated
    tmp[-1] = src[-2] + 3 * src[-1]
    out = np.empty_like(src)
    out[:, 1:-1] = tmp[:, :-2] + 2 * tmp[:, 1:-1] + tmp[:, 2:]
    out[:, 0] = 3 * tmp[:, 0] + tmp[:, 1]
    out[:, -1] = tmp[:, -2] + 3 * tmp[:, -1]
    return out


def _hsv_to_rgb(h: np.ndarray, s: np.ndarray, v: np.ndarray) -> np.ndarray:
    # closed form f(n) = v - v s max(0, min(k, 4 - k, 1)), k = (n + 6h) mod 6, n = 5, 3, 1
    k = (np.array([5.0, 3.0, 1.0]) + (h % 1.0)[:, None] * 6.0) % 6.0
    ramp = np.clip(np.minimum(k, 4.0 - k), 0.0, 1.0)
    return v[:, None] * (1.0 - s[:, None] * ramp)


_Palette = tuple[np.ndarray, np.ndarray, np.ndarray]  # hue, saturation, value per colour


def _palette(rng: np.random.Generator) -> _Palette:
    # A scene has a dominant hue with a few accents and a wide range of lightness;
    # fully random RGB per disk would look like confetti, nothing like a photograph.
    k = int(rng.integers(3, 8))
    base = rng.random()
    accent = rng.random(k) < 0.25
    hue = np.where(accent, rng.random(k), base + rng.normal(0.0, 0.06, k))
    sat = rng.uniform(0.05, 0.55, k)
    val = rng.uniform(0.12, 0.95, k)
    return hue, sat, val


def _leaf_colours(rng: np.random.Generator, palette: _Palette, n: int) -> np.ndarray:
    """RGB uint8 colours of n leaves: a palette entry each, jittered in HSV."""
    hue, sat, val = palette
    pick = rng.integers(0, hue.size, n)
    jitter = rng.normal(0.0, 1.0, (n, 3))
    h = hue[pick] + 0.02 * jitter[:, 0]
    s = np.clip(sat[pick] + 0.06 * jitter[:, 1], 0.0, 1.0)
    v = np.clip(val[pick] + 0.08 * jitter[:, 2], 0.02, 1.0)
    return np.rint(_hsv_to_rgb(h, s, v) * 255.0).astype(np.uint8)
