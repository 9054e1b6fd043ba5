"""make_library on Spark writes exactly what library.render gives, whatever the tasks."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from disc21spark.core.errors import OutputError
from disc21spark.library import images as library
from disc21spark.library import job as library_job


def test_library_job_writes_the_rendered_images(spark, tmp_path, monkeypatch):
    job = library_job.LibraryJob(str(tmp_path / "lib"), size=30, seed=4, width=64, height=48)
    library_job.run(spark, job)
    monkeypatch.setattr(library_job, "ITEMS_PER_TASK", 7)
    library_job.run(
        spark, library_job.LibraryJob(**{**job.__dict__, "output": str(tmp_path / "again")})
    )
    items = library.library_plan(30, 4, 64, 48)
    manifest = pd.read_csv(tmp_path / "lib" / "library.csv", keep_default_na=False)
    assert sorted(manifest.file) == sorted(i.name for i in items)
    for item in items:
        expected = library.render(item, 4, 64, 48)
        assert (tmp_path / "lib" / item.name).read_bytes() == expected
        assert (tmp_path / "again" / item.name).read_bytes() == expected
    assert (tmp_path / "lib" / "library.csv").read_bytes() == (
        tmp_path / "again" / "library.csv"
    ).read_bytes()
    doc = json.loads((tmp_path / "lib" / "library.json").read_text())
    assert doc["photos"] + doc["deadleaves"] == 30 and doc["deadleaves"] == 30 - len(
        library.shipped_photos()
    )


def test_library_job_keeps_a_users_folder(spark, tmp_path):
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "mine.jpg").write_bytes(b"x")
    with pytest.raises(OutputError, match="not empty"):
        library_job.run(spark, library_job.LibraryJob(str(tmp_path / "lib"), size=3))
    assert (tmp_path / "lib" / "mine.jpg").read_bytes() == b"x"
