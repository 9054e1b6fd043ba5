"""The precision/recall curve as a PNG, drawn with Pillow.

One in-process run of 500,000 pairs scores in a few tenths of a second; importing
matplotlib's figure stack took longer than that (0.4 to 0.7 s here), so the picture is
drawn with Pillow's ImageDraw: axes with ticks at every 0.1, a grid, the 0.9 precision
line, one polyline per curve, the operating point at precision 0.9, a legend. The text
uses the DejaVu Sans font matplotlib ships (found on disk, not imported), which has the
μ of "μAP"; Pillow's own font otherwise.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from disc21spark.matching.model import MatchingMetrics

SIZE = (770, 605)  # the 7 × 5.5 inch figure at 110 dpi that matplotlib drew before
MARGIN = (70, 45, 25, 55)  # left, top, right, bottom
# matplotlib's default colour cycle, so that pools' curves keep their colours
COLOURS = (
    "#1f77b4",
    "#ff7f0e",
    "#2ca02c",
    "#d62728",
    "#9467bd",
    "#8c564b",
    "#e377c2",
    "#7f7f7f",
    "#bcbd22",
    "#17becf",
)
LEGEND_ROWS = 25  # more curves than this: the legend says how many were left out


FONT_SIZES = (11, 12, 13, 15)  # the legend, the ticks, the axes' names, the title


def fonts() -> dict[int, ImageFont.ImageFont]:
    """The text's font at each of FONT_SIZES, loaded once per picture: matplotlib's
    DejaVu Sans when it is installed, else Pillow's own."""
    spec = importlib.util.find_spec("matplotlib")
    for folder in spec.submodule_search_locations or [] if spec else []:
        path = Path(folder) / "mpl-data" / "fonts" / "ttf" / "DejaVuSans.ttf"
        if path.is_file():
            return {size: ImageFont.truetype(str(path), size) for size in FONT_SIZES}
    return {size: ImageFont.load_default(size) for size in FONT_SIZES}


def draw_curves(path: Path, curves: list[tuple[str, MatchingMetrics]], title: str) -> None:
    """A PNG of each (label, metrics) curve: recall on x, precision on y, both 0..1.02."""
    image = Image.new("RGB", SIZE, "white")
    pen = ImageDraw.Draw(image)
    left, top, right, bottom = MARGIN
    box = (left, top, SIZE[0] - right, SIZE[1] - bottom)

    def xy(recall: np.ndarray, precision: np.ndarray) -> list[tuple[float, float]]:
        x = box[0] + np.asarray(recall, dtype=float) / 1.02 * (box[2] - box[0])
        y = box[3] - np.asarray(precision, dtype=float) / 1.02 * (box[3] - box[1])
        return list(zip(x.tolist(), y.tolist()))

    font = fonts()
    _axes(pen, box, xy, title, font)
    for i, (_, metrics) in enumerate(curves):
        points = xy(metrics.curve.recall, metrics.curve.precision)
        if len(points) > 1:
            pen.line(points, fill=COLOURS[i % len(COLOURS)], width=2, joint="curve")
        if metrics.recall_at_p90 is not None:
            ((x, y),) = xy([metrics.recall_at_p90], [metrics.precision_at_p90])
            pen.ellipse((x - 3, y - 3, x + 3, y + 3), fill="black")
    _legend(pen, box, curves, font[11])
    # the fastest of zlib's levels: the same picture, its PNG written in 4 ms less
    image.save(path, optimize=False, compress_level=1)


def _axes(pen: ImageDraw.ImageDraw, box: tuple, xy, title: str, font: dict) -> None:
    small, grey = font[12], (176, 176, 176)
    for tick in np.round(np.arange(0, 1.01, 0.1), 1):
        (x, _), (_, y) = xy([tick], [0])[0], xy([0], [tick])[0]
        pen.line((x, box[1], x, box[3]), fill=(235, 235, 235))
        pen.line((box[0], y, box[2], y), fill=(235, 235, 235))
        pen.text((x, box[3] + 6), f"{tick:.1f}", fill="black", font=small, anchor="mt")
        pen.text((box[0] - 6, y), f"{tick:.1f}", fill="black", font=small, anchor="rm")
    ((_, y90),) = xy([0], [0.9])
    for x in range(box[0], box[2], 8):  # the dashed line of the 0.9 precision the figures use
        pen.line((x, y90, min(x + 4, box[2]), y90), fill=grey)
    pen.rectangle(box, outline="black")
    middle = (box[0] + box[2]) / 2
    pen.text((middle, box[3] + 26), "recall", fill="black", font=font[13], anchor="mt")
    pen.text((middle, box[1] - 12), title, fill="black", font=font[15], anchor="mb")
    label = Image.new("L", (80, 20), 0)
    ImageDraw.Draw(label).text((40, 10), "precision", fill=255, font=font[13], anchor="mm")
    turned = label.rotate(90, expand=True)
    pen._image.paste("black", (box[0] - 62, int((box[1] + box[3]) / 2 - 40)), turned)


def _legend(
    pen: ImageDraw.ImageDraw,
    box: tuple,
    curves: list[tuple[str, MatchingMetrics]],
    small: ImageFont.ImageFont,
) -> None:
    lines = [
        (COLOURS[i % len(COLOURS)], f"{label} (μAP {m.micro_ap:.4f})")
        for i, (label, m) in enumerate(curves[:LEGEND_ROWS])
    ]
    if len(curves) > LEGEND_ROWS:
        lines.append((None, f"… and {len(curves) - LEGEND_ROWS} more"))
    if not lines:
        return
    width = max(pen.textlength(text, font=small) for _, text in lines) + 40
    height = 16 * len(lines) + 8
    x0, y1 = box[0] + 8, box[3] - 8
    pen.rectangle((x0, y1 - height, x0 + width, y1), fill="white", outline=(204, 204, 204))
    for row, (colour, text) in enumerate(lines):
        y = y1 - height + 12 + 16 * row
        if colour:
            pen.line((x0 + 6, y, x0 + 26, y), fill=colour, width=2)
        pen.text((x0 + 32, y), text, fill="black", font=small, anchor="lm")
