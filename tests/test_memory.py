"""auto's --local-max-bytes: sized from the memory there is, a container's limit included."""

from __future__ import annotations

import os

import pytest

from disc21spark import engine
from disc21spark.commands import evaluate as evaluate_command
from disc21spark.core import config, memory
from tests.evaluate_inputs import args_for

GiB = 1 << 30


@pytest.mark.parametrize(
    ("files", "room"),
    [
        ({}, None),  # no cgroup file system
        ({"memory.max": "max\n", "memory.current": "123\n"}, None),
        ({"memory.max": "4096\n", "memory.current": "1000\n"}, 3096),
        ({"memory.max": "1000\n", "memory.current": "4096\n"}, 0),  # over: nothing left
        # v1: "unlimited" is a number near 2**63
        (
            {
                "memory/memory.limit_in_bytes": "9223372036854771712\n",
                "memory/memory.usage_in_bytes": "5\n",
            },
            None,
        ),
        (
            {
                "memory/memory.limit_in_bytes": "2147483648\n",
                "memory/memory.usage_in_bytes": "1073741824\n",
            },
            1 << 30,
        ),
    ],
)
def test_cgroup_room(tmp_path, files, room):
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    assert memory.cgroup_room(tmp_path) == room


def test_available_bytes_is_the_smaller_of_the_machine_and_the_container(tmp_path):
    (tmp_path / "memory.max").write_text(f"{1 << 20}\n")
    (tmp_path / "memory.current").write_text("0\n")
    assert memory.available_bytes(tmp_path) == 1 << 20  # this machine has more than 1 MiB


@pytest.mark.parametrize(
    ("available", "limit"),
    [
        (16 * GiB, GiB),  # half of 16 GiB at 8 bytes a byte
        (2 * GiB, engine.TASK_MAX_BYTES),  # never under a task's share
        (0, engine.TASK_MAX_BYTES),
    ],
)
def test_auto_limit_takes_half_the_memory_available(monkeypatch, available, limit):
    monkeypatch.setattr(memory, "available_bytes", lambda: available)
    assert engine.in_process_limit(None) == limit
    assert engine.in_process_limit(5) == 5  # a size given is the size


def test_auto_engine_follows_the_memory_available(tmp_path, monkeypatch):
    """The same file is read in batches sized from the memory available."""
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.setattr(engine, "TASK_MAX_BYTES", 1)  # the floor out of the way
    args = args_for(tmp_path)
    size = os.path.getsize(args.predictions[0])
    fits = 2 * engine.PEAK_PER_BYTE * size
    for available in (fits, 1 << 34):
        monkeypatch.setattr(memory, "available_bytes", lambda a=available: a)
        chosen = evaluate_command.choice_of(args.request)
        limit = engine.in_process_limit(None)
        assert chosen.engine == "local" and chosen.batch_bytes == engine.batch_bytes(limit)
    # --local-max-bytes auto is the default, spelled out
    assert config.parse_limit("auto") is None and config.parse_limit("1k") == 1024
    asked = args_for(tmp_path, "--local-max-bytes", "auto")
    assert asked.local_max_bytes is None and args.local_max_bytes is None


def test_memavailable_is_psutils_available(tmp_path):
    import psutil

    read, told = memory._mem_available(), psutil.virtual_memory().available
    assert read is not None and abs(read - told) < told // 20  # read a moment apart
    (tmp_path / "meminfo").write_text("MemTotal:       1000 kB\nMemAvailable:    300 kB\n")
    assert memory._mem_available(tmp_path / "meminfo") == 300 * 1024
    (tmp_path / "meminfo").write_text("MemTotal:       1000 kB\n")
    assert memory._mem_available(tmp_path / "meminfo") is None
    assert memory._mem_available(tmp_path / "missing") is None
