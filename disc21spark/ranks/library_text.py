"""What a rank_eval report says about its library: make_library's library.json when the
bench's images came from one, else the folders or globs as given."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path


def library_about(patterns: list[str], paths: list[str] = ()) -> dict:
    """What the references are: make_library's library.json when the bench's images came
    from one (generator and settings), else the folders or globs as given. The folder is
    looked for from the globs make_queries was given and from the references' own paths
    (the globs may be relative to another working folder)."""

    candidates = list(patterns)
    if len(paths):
        try:
            candidates.append(os.path.commonpath([os.path.dirname(p) for p in paths]))
        except ValueError:  # paths on different drives or mixed absolute and relative
            pass
    for pattern in candidates:
        base = Path(re.split(r"[*?\[]", pattern, maxsplit=1)[0] or ".")
        for folder in (base, *list(base.parents)[:2]):
            doc = folder / "library.json"
            if doc.is_file():
                try:
                    about = json.loads(doc.read_text())
                except ValueError:
                    continue
                return {"source": str(folder), **about, "text": _library_text(str(folder), about)}
    return {
        "source": ", ".join(patterns),
        "text": f"a collection of image files ({', '.join(patterns)}); not written by make_library",
    }


def _library_text(folder: str, a: dict) -> str:
    parts = [f"make_library output `{folder}`: {a.get('size', '?'):,} images"]
    if "photos" in a:
        parts.append(f"{a['photos']} photographs shipped by scikit-image")
    kind = a.get("leaves", "deadleaves")
    count = a.get("deadleaves", 0)
    if kind == "textured":
        parts.append(
            f"{count:,} textured dead-leaves images {a.get('width')}×{a.get('height')} (leaves "
            f"filled with windows of {len(a.get('patch_sources', []))} shipped photographs; "
            f"seed {a.get('seed')})"
        )
    else:
        parts.append(
            f"{count:,} dead-leaves images with one random palette each "
            f"{a.get('width')}×{a.get('height')} (seed {a.get('seed')})"
        )
    return "; ".join(parts)
