"""Seeded byte-level mutations of a file's content, which the fuzzers share
(``tests/test_fuzz.py``, ``tests/test_fuzz_organiser.py``): bit flips, truncation,
inserted and deleted bytes, a changed 4-byte length or offset field."""

from __future__ import annotations

import random
from collections.abc import Callable

Mutation = Callable[[random.Random, bytes], bytes]


def flip(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        if out:
            out[rng.randrange(len(out))] ^= 1 << rng.randrange(8)
    return bytes(out)


def truncate(rng: random.Random, data: bytes) -> bytes:
    return data[: rng.randrange(len(data) + 1)]


def insert(rng: random.Random, data: bytes) -> bytes:
    at = rng.randrange(len(data) + 1)
    alphabet = [b"\n", b"\r", b",", b'"', b"\x00", b"\xff\xfe", b"\xe9", b" ", b"1e309", b"nan"]
    junk = b"".join(rng.choice(alphabet) for _ in range(rng.randint(1, 12)))
    if rng.random() < 0.3:
        junk = bytes(rng.randrange(256) for _ in range(rng.randint(1, 64)))
    return data[:at] + junk + data[at:]


def delete(rng: random.Random, data: bytes) -> bytes:
    if not data:
        return data
    at = rng.randrange(len(data))
    return data[:at] + data[at + rng.randint(1, 32) :]


def length(rng: random.Random, data: bytes) -> bytes:
    """A 4-byte little- or big-endian integer changed: a length or offset field (the
    Parquet footer's length, gzip's ISIZE, HDF5's and .npy's header fields)."""
    if len(data) < 4:
        return data
    at = rng.choice([len(data) - 8, len(data) - 4, rng.randrange(len(data) - 3)])
    order = rng.choice(["little", "big"])
    value = int.from_bytes(data[at : at + 4], order)
    value = rng.choice([0, 1, 2**31 - 1, 2**32 - 1, value + 1, max(value - 1, 0), value * 2])
    return data[:at] + (value % 2**32).to_bytes(4, order) + data[at + 4 :]


BYTES: dict[str, Mutation] = {
    "flip": flip,
    "truncate": truncate,
    "insert": insert,
    "delete": delete,
    "length": length,
}


def mutate_with(
    mutations: dict[str, Mutation], rng: random.Random, data: bytes
) -> tuple[str, bytes]:
    """One or two of ``mutations`` (drawn by ``rng``) applied in turn: (their names
    joined by ``+``, the bytes)."""
    names = rng.sample(list(mutations), rng.randint(1, 2))
    for name in names:
        data = mutations[name](rng, data)
    return "+".join(names), data
