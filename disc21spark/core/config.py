"""The conf files (defaults.ini, Spark profiles, log4j2.properties) and the defaults of every
command, read the same way from a checkout, an installed wheel or a zip on --py-files."""

from __future__ import annotations

import argparse
import configparser
import dataclasses
import hashlib
import os
import tempfile
import warnings
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # importlib.resources.abc is 3.11+; only the annotations need it
    from importlib.resources.abc import Traversable

T = TypeVar("T")
# a folder of one's own (same layout as disc21spark/conf) replaces the package's
CONF_ENV = "DISC21SPARK_CONF"
DEFAULTS = "defaults.ini"


def conf_root() -> Traversable:
    """$DISC21SPARK_CONF, else the package's conf/ (a folder, or a folder inside a zip)."""
    override = os.environ.get(CONF_ENV)
    return Path(override) if override else resources.files("disc21spark").joinpath("conf")


def conf_item(*parts: str) -> Traversable:
    item = conf_root()
    for part in parts:  # Traversable.joinpath takes one name before Python 3.11
        item = item.joinpath(part)
    return item


def conf_file(*parts: str) -> Path:
    """A conf file as a real path, for programs that want one (the JVM's log4j2): inside a
    zip the file is copied out first, to a folder named by its content (one per content
    and user, the same for every session that asks)."""
    item = conf_item(*parts)
    if isinstance(item, Path):
        return item
    return _copied_out("/".join(parts), item.read_bytes())


def _copied_out(name: str, data: bytes) -> Path:
    digest = hashlib.sha256(data).hexdigest()[:16]
    target = Path(tempfile.gettempdir()) / f"disc21spark-conf-{os.getuid()}-{digest}" / name
    if target.is_file() and target.read_bytes() == data:
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.{os.getpid()}")
    partial.write_bytes(data)
    os.replace(partial, target)  # a JVM reading it meanwhile sees the whole file
    return target


def _read_defaults() -> dict[str, dict[str, str]]:
    """Every section of defaults.ini: each key's text, stripped."""
    parser = configparser.ConfigParser(interpolation=None)
    parser.read_string(conf_item(DEFAULTS).read_text(encoding="utf-8"), DEFAULTS)
    return {name: {k: v.strip() for k, v in parser.items(name)} for name in parser.sections()}


# defaults.ini, parsed once when the package is imported (a folder of one's own is named
# by $DISC21SPARK_CONF before that): the job dataclasses read their defaults at import too
DEFAULTS_INI = _read_defaults()


# keys renamed with their options after 0.1.0 (docs/reference/vocabulary.md): a folder of
# one's own ($DISC21SPARK_CONF) written for 0.1.0 keeps working for one release
OLD_KEYS = {
    "evaluate": {"partitions": "sort_partitions", "metric": "distance"},
    "make-queries": {"format": "query_format", "partitions": "image_partitions"},
    "extract": {"partitions": "image_partitions"},
    "rank-eval": {"descriptors": "methods", "partitions": "query_partitions"},
}


def section(command: str) -> dict[str, str]:
    """Every default of one command, as the text defaults.ini gives (empty: none); a
    key's 0.1.0 name read as its new one, with a FutureWarning."""
    if command not in DEFAULTS_INI:
        raise KeyError(f"{DEFAULTS} has no [{command}] section")
    values = dict(DEFAULTS_INI[command])
    for old, new in OLD_KEYS.get(command, {}).items():
        if old in values and new not in values:
            warnings.warn(
                f"{DEFAULTS} [{command}]: {old} is deprecated, use {new}", FutureWarning, 2
            )
            values[new] = values.pop(old)
    return values


def default(command: str, key: str) -> str | None:
    """One default's text, None when left empty (decided at run time, e.g. from the size)."""
    values = section(command)
    if key not in values:
        raise KeyError(f"{DEFAULTS} [{command}] has no {key!r}")
    return values[key] or None


def value(command: str, key: str, parse: Callable[[str], T] = str) -> T | None:
    """One default, typed by the parser the command line uses for the same option."""
    text = default(command, key)
    return None if text is None else parse(text)


class _FromDefaults:
    def __repr__(self) -> str:
        return "<from defaults.ini>"


FROM_DEFAULTS: Any = _FromDefaults()


def from_defaults(parse: Callable[[str], Any] = str) -> Any:
    """A job dataclass's field whose default is the defaults.ini value of its name, in
    the job's ``DEFAULTS`` section, typed by ``parse`` (the option's argparse type);
    ``fill_defaults`` reads it when the job is built, so a job built without the option
    (a test, the API) gets what the command line would."""
    return dataclasses.field(default=FROM_DEFAULTS, metadata={"parse": parse})


def fill_defaults(job: Any, command: str) -> None:
    """Every field of the (frozen) dataclass ``job`` still at ``FROM_DEFAULTS`` set to
    defaults.ini's value of its name in ``[command]``."""
    for f in dataclasses.fields(job):
        if getattr(job, f.name) is FROM_DEFAULTS:
            object.__setattr__(job, f.name, value(command, f.name, f.metadata["parse"]))


# value syntaxes shared by defaults.ini and the command line (argparse types: a bad value
# is reported as "argument --x: <message>")


def parse_size(text: str, alternative: str = "") -> int:
    """'2G', '512M', '1.5g', '4096' -> bytes; ``alternative``: what else the option takes,
    for the message."""
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    t = text.strip().lower().removesuffix("b")
    try:
        number = float(t[:-1]) * units[t[-1]] if t and t[-1] in units else float(t)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"'{text}' is not a size such as 2G or 512M{alternative}"
        ) from None
    if number < 1:
        # shared by --broadcast-limit and --local-max-bytes: argparse names the option
        raise argparse.ArgumentTypeError(f"'{text}': a size must be positive")
    return int(number)


def parse_limit(text: str) -> int | None:
    """'auto' -> None (sized when it is used, from the memory there is); else parse_size."""
    return None if text.strip().lower() == "auto" else parse_size(text, " or auto")


def parse_span(text: str) -> tuple[int, int]:
    """'10..20' -> (10, 20); '3' -> (3, 3)."""
    a, sep, b = text.partition("..")
    try:
        first, last = (int(a), int(b)) if sep else (int(a), int(a))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a range such as 10..20") from None
    if not 1 <= first <= last:
        raise argparse.ArgumentTypeError(f"'{text}': need 1 ≤ a ≤ b")
    return first, last


def parse_counts(text: str, example: str = "500,1000,2000") -> list[int]:
    """'500,1000,2000' -> [500, 1000, 2000]: whole numbers, as given (the caller checks
    their range and order)."""
    try:
        return [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a list such as {example}") from None


def parse_sizes(text: str) -> list[int]:
    """'500,1000,2000' -> [500, 1000, 2000]: positive and increasing."""
    sizes = parse_counts(text)
    if not sizes or sorted(set(sizes)) != sizes or sizes[0] < 1:
        raise argparse.ArgumentTypeError("sizes must be positive and increasing, such as 500,1000")
    return sizes
