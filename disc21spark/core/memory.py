"""The memory this process may still take: the machine's available memory, or less when a
container's cgroup limit is lower (psutil reports the host's memory inside a container,
and a container that passes its limit is killed, not slowed); and the bounds of the
in-process engine's batches."""

from __future__ import annotations

from pathlib import Path

# the most CSV bytes the in-process engine parses into one batch (and 1/24 as many
# Parquet rows), and the least: twice the longest line its reader takes (1 MiB);
# engine.batch_bytes picks one between them from the memory available
BATCH_BYTES = 64 << 20
SMALLEST_BATCH = 2 << 20
CGROUP = Path("/sys/fs/cgroup")
MEMINFO = Path("/proc/meminfo")
# (limit, usage) files: cgroup v2 first, then v1
_CGROUP_FILES = (
    ("memory.max", "memory.current"),
    ("memory/memory.limit_in_bytes", "memory/memory.usage_in_bytes"),
)


def available_bytes(root: Path = CGROUP) -> int:
    """Bytes this process can allocate without swapping or being killed: psutil's
    ``available``, capped by the cgroup's limit minus its usage when there is one
    (``root``: where the cgroup file system is mounted)."""
    free = _mem_available()
    if free is None:
        import psutil

        free = int(psutil.virtual_memory().available)
    room = cgroup_room(root)
    return free if room is None else min(free, room)


def _mem_available(meminfo: Path = MEMINFO) -> int | None:
    """Linux's MemAvailable in bytes, the figure psutil's ``available`` is there (read
    here: importing psutil is 2 % of a 500,000-pair run); None without it."""
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def cgroup_room(root: Path = CGROUP) -> int | None:
    """The cgroup's limit minus its usage in bytes, or None with no limit (no cgroup
    files, ``max``, or v1's "unlimited", a number near 2**63)."""
    for limit_name, usage_name in _CGROUP_FILES:
        try:
            limit = (root / limit_name).read_text().strip()
            usage = int((root / usage_name).read_text().strip())
        except (OSError, ValueError):
            continue
        if limit == "max" or not limit.isdigit() or int(limit) >= 1 << 60:
            return None
        return max(0, int(limit) - usage)
    return None


# the in-process engine's peak memory per byte of CSV it scores, rounded up from what
# /usr/bin/time -v measured (7.3 at 5M pairs, 5.5 at 20M; docs/benchmarks.md)
PEAK_PER_BYTE = 8
# auto's limit for a file scored in a Spark task (--pool-plan per-file,
# engine.py's rules): the driver cannot
# see an executor's memory, so a size whose peak (about 2 GB) executors commonly allow
TASK_MAX_BYTES = 256 << 20


def batch_bytes(limit: int) -> int:
    """The batch the local engine reads a file in (``matching/inprocess/batched.py``) for an
    in-process limit of ``limit`` bytes: a sixteenth of it (a batch's peak is about eight
    times its bytes, PEAK_PER_BYTE), within SMALLEST_BATCH … BATCH_BYTES."""
    return int(min(BATCH_BYTES, max(SMALLEST_BATCH, limit // 16)))


def in_process_limit(asked: int | None) -> int:
    """The largest file (bytes) this process scores whole: ``asked``, or for None (auto)
    the size whose peak (``PEAK_PER_BYTE`` per byte) takes half the memory available
    now (``core.memory``: a container's limit included), and at least
    ``TASK_MAX_BYTES``: for less, Spark's JVM and workers would take as much memory."""
    if asked is not None:
        return asked
    return max(TASK_MAX_BYTES, available_bytes() // (2 * PEAK_PER_BYTE))
