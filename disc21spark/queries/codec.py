"""Image files to pixel arrays and back, with the reason when a file cannot be read."""

from __future__ import annotations

import hashlib
import io
import warnings

import numpy as np
from PIL import Image

from disc21spark.core.errors import first_line

FORMATS = {"png": "PNG", "jpeg": "JPEG"}


class Unreadable(ValueError):
    """A file that is not an image Pillow can decode completely."""


def decode(content: bytes) -> np.ndarray:
    """RGB uint8 array of the whole image; Unreadable with a short reason otherwise."""
    try:
        with warnings.catch_warnings():
            # a huge image is refused below rather than half-warned about
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(content)) as img:
                img.load()  # the header alone does not reveal a truncated file
                if img.mode != "RGB":
                    img = img.convert("RGB")
                return np.asarray(img, dtype=np.uint8)
    except (Image.DecompressionBombError, Image.DecompressionBombWarning) as exc:
        raise Unreadable(f"too many pixels ({exc})") from None
    except Image.UnidentifiedImageError:
        raise Unreadable("not an image Pillow can read") from None
    except (OSError, SyntaxError, ValueError, EOFError) as exc:
        text = first_line(exc, limit=None, empty=type(exc).__name__)
        raise Unreadable(f"damaged image ({text})") from None


def encode(img: np.ndarray, fmt: str) -> bytes:
    """PNG (lossless, so the test's pixels are exactly what is stored) or JPEG quality 95.

    Pillow's encoders are deterministic for the same library versions: the same array gives
    the same bytes on every executor.
    """
    buf = io.BytesIO()
    pil = Image.fromarray(img, "RGB")
    if fmt == "png":
        pil.save(buf, format="PNG", compress_level=1)
    else:
        pil.save(buf, format="JPEG", quality=95)
    return buf.getvalue()


def sha256(content: bytes) -> str:
    return hashlib.sha256(content).hexdigest()


def thumbnail(img: np.ndarray, height: int) -> np.ndarray:
    """A small copy for a contact sheet, `height` px tall."""
    h, w = img.shape[:2]
    width = max(1, round(w * height / max(h, 1)))
    pil = Image.fromarray(img, "RGB").resize((width, height), Image.Resampling.BOX)
    return np.asarray(pil, dtype=np.uint8)
