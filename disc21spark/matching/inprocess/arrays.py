"""Arrow arrays to and from numpy without pandas: every Python-to-Arrow conversion
(``pa.array``, ``to_numpy``) first probes for pandas, whose import alone is a sixth of
a 500,000-pair in-process run."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa
from pyarrow import _compute

_DTYPES = {
    "double": np.dtype(np.float64),
    "int8": np.dtype(np.int8),
    "int16": np.dtype(np.int16),
    "int32": np.dtype(np.int32),
    "int64": np.dtype(np.int64),
    "uint64": np.dtype(np.uint64),
}

# the options class of each compute function called with options (``compute``)
_OPTIONS = {
    "ascii_rpad": _compute.PadOptions,
    "cast": _compute.CastOptions,
    "index_in": _compute.SetLookupOptions,
    "is_in": _compute.SetLookupOptions,
    "match_substring": _compute.MatchSubstringOptions,
    "replace_substring_regex": _compute.ReplaceSubstringOptions,
    "utf8_trim": _compute.TrimOptions,
}


def compute(name: str, *args: object, **options: object):
    """Arrow's compute function ``name`` on ``args`` (Arrow arrays or scalars), as
    ``pyarrow.compute.<name>(*args, **options)`` gives it; ``options``: the keywords of its
    options class (``_OPTIONS``). Importing ``pyarrow.compute`` builds a Python wrapper for
    each of Arrow's functions (25 ms, a twentieth of a 500,000-pair run); the kernels are
    ``pyarrow._compute``'s. (A Python value among ``args``, ``pa.scalar``, ``Array.filter``
    or ``Array.take`` imports it all the same: kept off the common path.)"""
    return _compute.call_function(name, list(args), _OPTIONS[name](**options) if options else None)


def strings(values: Iterable[object]) -> pa.Array:
    """An Arrow string array of the values' ``str``, built from buffers."""
    data = [str(v).encode() for v in values]
    offsets = np.zeros(len(data) + 1, dtype=np.int32)
    np.cumsum([len(d) for d in data], out=offsets[1:])
    return pa.Array.from_buffers(
        pa.string(), len(data), [None, pa.py_buffer(offsets), pa.py_buffer(b"".join(data))]
    )


def numbers(array: pa.Array) -> np.ndarray:
    """A numeric Arrow array without nulls as numpy (shape (n,), the array's dtype), read
    from its buffer."""
    dtype = _DTYPES[str(array.type)]
    data = array.buffers()[1]
    return np.frombuffer(data, dtype=dtype, count=len(array), offset=array.offset * dtype.itemsize)


def offsets(values: pa.Array) -> np.ndarray:
    """int32 (n + 1,): where each string of a string array starts in its data buffer, then
    its end (a view of the offsets buffer)."""
    return np.frombuffer(values.buffers()[1], np.int32, len(values) + 1, values.offset * 4)


def factorize(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(distinct uint64 keys, int32 (n,) index of each key among them), in order of first
    appearance: Arrow's hash table, where ``np.unique`` sorts (8× the time at 20M keys)."""
    keys = np.ascontiguousarray(keys, dtype=np.uint64)
    encoded = compute(
        "dictionary_encode",
        pa.Array.from_buffers(pa.uint64(), len(keys), [None, pa.py_buffer(keys)]),
    )
    return numbers(encoded.dictionary), numbers(encoded.indices)
