"""Which board a folder is, and what a pool run takes from one.

Every board's ``run`` block says which it is (``core/board_files.kind``): ``unsplit``,
``public`` or ``private``. A run publishes an unsplit board, or with
``--private-queries`` a public one (and writes a private one apart). ``--previous``
takes only a board of the kind this run publishes: a private board is rescored every
run, never reused, and a public board is never the previous of an unsplit one.
``--compare-to`` takes a board of the kind it is compared with: an unsplit or a public
board beside the published one, a private board beside the private one; its ground truth
may differ (the point of rescoring beside a frozen board).

The split's digest on a published board is keyed (HMAC-SHA256): its key is kept in the
private board's run block only, so that no reader can test a guess of the private
queries. A run finds the key of the run before in the private board that the previous
public board names (``private_board``), so that an unchanged split gives the same digest
and its submissions are reused; without it, a new random key (nothing is reused).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import secrets
from typing import Any

from disc21spark.core import board_files, fs
from disc21spark.core.board_files import PRIVATE, PUBLIC, UNSPLIT
from disc21spark.core.errors import InputError
from disc21spark.pool.split import Split

log = logging.getLogger("disc21spark")
KEY = "private_queries_key"  # the private board's run block: the digest's key (hex)
KEYED = "private_queries_hmac_sha256"  # the public board's: the split's keyed digest
PLAIN = "private_queries_sha256"  # the private board's: the split file's SHA-256


def published(split: Split | None) -> str:
    """The kind of board a run publishes: ``public`` with a split, else ``unsplit``."""
    return UNSPLIT if split is None else PUBLIC


def previous_board(path: str, split: Split | None, spark: Any = None) -> dict | None:
    """The --previous board's leaderboard.json (None when the folder holds none: nothing
    is reused), checked. Raises InputError when it is malformed, or a board of another
    kind than the one this run publishes."""
    label = f"--previous {path}"
    if not fs.exists(f"{path.rstrip('/')}/{board_files.BOARD}", spark):
        log.warning("--previous %s: no leaderboard.json there; scoring everything", path)
        return None
    doc = board_files.read(path, label, spark)
    found, wanted = board_files.kind(doc["run"]), published(split)
    if found != wanted:
        raise InputError(
            label,
            f"{_a(found)} board, and this run publishes {_a(wanted)} one: --previous takes "
            f"the published board of an earlier run of the same kind{_why(found)}",
        )
    return doc


def compared_board(path: str, split: Split | None, spark: Any = None) -> dict:
    """The --compare-to board's leaderboard.json, checked: an unsplit board without a
    split; with one, a public board (compared with the public board) or a private one
    (with the private board). Raises InputError otherwise."""
    label = f"--compare-to {path}"
    doc = board_files.read(path, label, spark)
    found = board_files.kind(doc["run"])
    allowed = (UNSPLIT,) if split is None else (PUBLIC, PRIVATE)
    if found not in allowed:
        writes = (
            "publishes an unsplit one" if split is None else "writes a public and a private one"
        )
        raise InputError(
            label,
            f"{_a(found)} board, and this run {writes}: --compare-to takes a board of the same kind",
        )
    return doc


def _a(kind: str) -> str:
    return f"an {kind}" if kind == UNSPLIT else f"a {kind}"


def _why(found: str) -> str:
    return (
        " (a private board is never reused: it is rescored every run)" if found == PRIVATE else ""
    )


def split_key(previous: dict | None, spark: Any = None) -> bytes:
    """The key of the split's keyed digest: the one kept in the private board the
    previous public board names, else a new random one."""
    where = (previous or {}).get("run", {}).get("private_board")
    if isinstance(where, str) and where:
        try:
            run = board_files.read(where, f"the previous run's private board {where}", spark)["run"]
            if board_files.kind(run) == PRIVATE:
                return bytes.fromhex(run[KEY])
        except (InputError, KeyError, TypeError, ValueError) as exc:
            log.warning("%s: no key of the split's digest there (%s); a new key", where, exc)
    return secrets.token_bytes(32)


def keyed_digest(key: bytes, split: Split) -> str:
    """HMAC-SHA256 of the split file's SHA-256 under ``key``: the same split and key give
    the same digest, and without the key no guess of the split can be tested."""
    return hmac.new(key, split.digest.encode(), hashlib.sha256).hexdigest()
