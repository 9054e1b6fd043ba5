"""What a run never touches: a path it reads, and a frozen board.

Every command's request names the paths it reads and the paths it writes, by option
(``commands/requests.py``); ``check`` refuses, before any work and whatever
``--overwrite`` says, an output that is an input, holds one (replacing it would delete
the input) or lies inside one (writing there would change it), and an output inside or
over a frozen board (``core/frozen.refuse_frozen``). A ``file:`` URI is its local path;
another scheme's paths are left to their file system's own checks.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path, PurePath

from disc21spark.core import paths
from disc21spark.core.errors import OutputError
from disc21spark.core.frozen import refuse_frozen

# the rule every refusal here ends with
NEVER = "a run never replaces or writes into a path it reads"


def local(text: str) -> tuple[Path, str | None] | None:
    """The resolved local folder or file a path option names, and for a glob its pattern
    (resolved the same way); None for a URI of another file system than ``file:``."""
    if paths.is_uri(text):
        if paths.scheme(text) != "file":
            return None
        text = paths.display_path(text)
    if not paths.is_glob(text):
        return Path(text).resolve(), None
    parts = PurePath(text).parts
    fixed = next(i for i, part in enumerate(parts) if paths.is_glob(part))
    base = Path(*parts[:fixed]) if fixed else Path(".")
    return base.resolve(), str(base.resolve().joinpath(*parts[fixed:]))


def check(reads: dict[str, list[str]], writes: dict[str, str], overwrite: bool) -> None:
    """Refuse (OutputError naming the options and the paths) an output of ``writes``
    (option → path) that is, holds or lies inside a path of ``reads`` (option → paths)
    or another output, or that would write inside or over a frozen board."""
    outputs = {option: (text, local(text)) for option, text in writes.items()}
    outputs = {option: (text, at[0]) for option, (text, at) in outputs.items() if at}
    _refuse_nested(outputs)
    for w_option, (w_text, target) in outputs.items():
        for r_option, texts in reads.items():
            for r_text in texts:
                read = local(r_text)
                if read is not None:
                    _refuse_overlap(f"{w_option} {w_text}", target, f"{r_option} {r_text}", read)
        refuse_frozen(target if paths.is_uri(w_text) else w_text, replaced=overwrite)


def _refuse_nested(outputs: dict[str, tuple[str, Path]]) -> None:
    """Two outputs (option → (as given, resolved)) where one is or holds the other."""
    for w_option, (w_text, target) in outputs.items():
        for o_option, (o_text, other) in outputs.items():
            if o_option != w_option and (other == target or other in target.parents):
                relation = "is" if other == target else "holds"
                raise OutputError(
                    f"{o_option} {o_text} {relation} {w_option} {w_text}: each output needs a "
                    "folder of its own (writing one would replace the other)"
                )


def _refuse_overlap(out: str, target: Path, named: str, read: tuple[Path, str | None]) -> None:
    base, pattern = read
    if target == base:
        relation = "is"
    elif target in base.parents:
        relation = "holds"
    elif base in target.parents and (pattern is None or _matches(target, base, pattern)):
        relation = "is inside"
    else:
        return
    raise OutputError(f"{out} {relation} {named}: {NEVER}")


def _matches(target: Path, base: Path, pattern: str) -> bool:
    """Whether ``target`` or a folder above it, below the glob's fixed folder ``base``,
    is one of the glob's paths (Hadoop's ``{a,b}`` is taken as a match: refused)."""
    if "{" in pattern:
        return True
    return any(
        fnmatch.fnmatchcase(os.fspath(p), pattern)
        for p in (target, *target.parents)
        if base in p.parents
    )
