"""Paths of any Hadoop file system: outputs committed through Hadoop for a URI, streamed
SHA-256, one-line errors for a scheme with no connector."""

from __future__ import annotations

import hashlib
import os

import pytest

from disc21spark.core import fs, paths
from disc21spark.core.errors import InputError, OutputError
from disc21spark.core.output import check_writable, recover, staged_output


@pytest.mark.parametrize(
    "path,kind",
    [
        ("out/", None),
        ("/data/x.csv", None),
        ("C:/data", None),
        ("file:///tmp/x", "file"),
        ("file:/tmp/x", "file"),
        ("s3a://bucket/x", "s3a"),
        ("hdfs://nn:8020/x", "hdfs"),
    ],
)
def test_schemes(path, kind):
    assert paths.scheme(path) == kind


def test_a_uri_output_is_committed_through_hadoop(spark, tmp_path):
    target = tmp_path / "out"
    uri = target.as_uri()
    with staged_output(uri, overwrite=False) as stage:
        (stage / "metrics.json").write_text("{}")
        (stage / "sub").mkdir()
        (stage / "sub" / "a.csv").write_text("x\n")
    assert sorted(p.name for p in target.iterdir()) == [
        "_SUCCESS",
        "metrics.json",
        "run.json",
        "sub",
    ]
    assert (target / "sub" / "a.csv").read_text() == "x\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # no staging debris
    # the user's folder is not replaced unasked, and a failed run leaves it as it was
    with pytest.raises(OutputError, match="not empty .*--overwrite"):
        check_writable(uri, overwrite=False)
    with pytest.raises(RuntimeError, match="boom"), staged_output(uri, overwrite=True) as stage:
        (stage / "metrics.json").write_text('{"new": 1}')
        raise RuntimeError("boom")
    assert (target / "metrics.json").read_text() == "{}"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
    with staged_output(uri, overwrite=True) as stage:
        (stage / "metrics.json").write_text('{"new": 1}')
    assert sorted(p.name for p in target.iterdir()) == ["_SUCCESS", "metrics.json", "run.json"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_uri_output_checks(spark, tmp_path):
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match="exists and is not a folder"):
        check_writable((tmp_path / "file").as_uri(), overwrite=True)
    with pytest.raises(OutputError, match="parent folder does not exist"):
        check_writable((tmp_path / "no" / "out").as_uri(), overwrite=False)
    with pytest.raises(OutputError) as info:
        check_writable("s3a://bucket/out", overwrite=False)
    assert str(info.value) == (
        "s3a://bucket/out: no FileSystem for scheme 's3a': add the hadoop-aws package "
        "(--packages org.apache.hadoop:hadoop-aws:<Hadoop version>)"
    )
    with pytest.raises(OutputError, match="no FileSystem for scheme 'nosuchfs'"):
        check_writable("nosuchfs://x/out", overwrite=False)


def test_a_plain_output_holds_success_too(tmp_path):
    with staged_output(tmp_path / "out", overwrite=False) as stage:
        (stage / "a").write_text("1")
    assert sorted(os.listdir(tmp_path / "out")) == ["_SUCCESS", "a", "run.json"]


def test_sha256_is_streamed_and_equal_on_every_path(spark, tmp_path):
    data = os.urandom(3 << 20) + b"tail"
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    want = hashlib.sha256(data).hexdigest()
    assert fs.sha256(str(path)) == want  # hashlib, no JVM
    assert fs.sha256(path.as_uri(), spark) == want  # Hadoop's stream, digested in the JVM
    with pytest.raises(InputError, match="cannot be read"):
        fs.sha256(str(tmp_path / "missing"))
    with pytest.raises(InputError, match="missing.*cannot be read"):
        fs.sha256((tmp_path / "missing").as_uri(), spark)


def test_local_copy_and_text_of_a_uri(spark, tmp_path):
    (tmp_path / "a.txt").write_text("hello\n")
    assert fs.read_text((tmp_path / "a.txt").as_uri(), spark) == "hello\n"
    with fs.local_copy((tmp_path / "a.txt").as_uri(), spark) as here:
        assert here != str(tmp_path / "a.txt") and open(here).read() == "hello\n"
    assert not os.path.exists(here)


def test_the_next_run_cleans_a_killed_runs_debris(tmp_path):
    """SIGKILL between setting the old output aside and renaming the new one in: the
    next run puts the old one back first, and removes the dead writer's staging."""
    dead = 2**22 + 12345  # above any pid this machine hands out
    out = tmp_path / "out"
    aside = tmp_path / f".out.old-{dead}-x1"
    (aside / "out").mkdir(parents=True)
    (aside / "out" / "metrics.json").write_text("previous")
    (tmp_path / f".out.staging-{dead}-x2").mkdir()
    (tmp_path / f".out.staging-{dead}-x2" / "half.csv").write_text("partial")
    live = tmp_path / f".out.staging-{os.getpid()}-x3"  # a run still going: left alone
    live.mkdir()
    recover(out)
    assert (out / "metrics.json").read_text() == "previous"
    assert sorted(p.name for p in tmp_path.iterdir()) == [live.name, "out"]
    with pytest.raises(OutputError, match="not empty"), staged_output(out, overwrite=False):
        pass
    live.rmdir()
    with staged_output(out, overwrite=True) as stage:
        (stage / "metrics.json").write_text("new")
    assert (out / "metrics.json").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]
