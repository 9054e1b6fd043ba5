"""What a fresh machine needs: Java 17, said clearly when missing; the conf files in place."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from disc21spark.core.errors import InputError
from disc21spark.core.runner import java_is_usable
from disc21spark.core.session import effective_master, profile_for, read_profile

ROOT = Path(__file__).resolve().parents[1]


def test_java_is_found_here():
    assert java_is_usable() is None


def both_checks(monkeypatch, java_home: Path) -> tuple[str | None, subprocess.CompletedProcess]:
    """What the job (runner.java_is_usable) and make (check_java.sh) say of a JAVA_HOME."""
    monkeypatch.setenv("JAVA_HOME", str(java_home))
    proc = subprocess.run(
        [str(ROOT / "scripts" / "check_java.sh")],
        capture_output=True,
        text=True,
        env=dict(os.environ, JAVA_HOME=str(java_home)),
    )
    return java_is_usable(), proc


def test_missing_java_is_one_clear_sentence(monkeypatch, tmp_path):
    said, proc = both_checks(monkeypatch, tmp_path / "no-jdk")
    assert "Java 17 is required" in said
    assert proc.returncode == 1 and "Java 17 is required" in proc.stderr


def test_old_java_is_refused(monkeypatch, tmp_path):
    fake = tmp_path / "jdk" / "bin"
    fake.mkdir(parents=True)
    (fake / "java").write_text("#!/bin/sh\necho 'openjdk version \"11.0.2\" 2019-01-15' >&2\n")
    (fake / "java").chmod(0o755)
    said, proc = both_checks(monkeypatch, tmp_path / "jdk")
    assert "version 11" in said
    assert proc.returncode == 1 and "version 11" in proc.stderr


def test_profiles_are_readable():
    local = read_profile("local")
    assert local["spark.master"] == "local[*]" and local["spark.driver.memory"] == "2g"
    assert "spark.master" not in read_profile("cluster")


@pytest.mark.parametrize(
    "given,master,applies",
    [
        ("local", "local[*]", "local"),
        ("local", "local[2]", "local"),
        ("images", "local-cluster[2,1,1024]", "images"),
        ("local", "spark://127.0.0.1:7077", "cluster"),
        ("images", "yarn", "cluster"),
        ("cluster", "k8s://https://host:443", "cluster"),
    ],
)
def test_one_machine_profiles_apply_to_local_masters_only(given, master, applies):
    name, settings = profile_for(given, master)
    assert name == applies
    if applies == "cluster":  # nothing that sizes or silences a cluster
        for key in ("spark.sql.shuffle.partitions", "spark.ui.enabled", "spark.driver.memory"):
            assert key not in settings


def test_the_master_comes_from_the_command_line_then_spark_submit_then_the_profile():
    from pyspark import SparkConf

    submitted = SparkConf(loadDefaults=False)
    profile = read_profile("local")
    assert effective_master(None, submitted, profile) == "local[*]"
    assert effective_master("yarn", submitted, profile) == "yarn"
    submitted.set("spark.master", "spark://h:7077")
    assert effective_master(None, submitted, profile) == "spark://h:7077"
    assert effective_master("local[1]", submitted, profile) == "local[1]"


def test_an_unknown_profile_is_one_line():
    with pytest.raises(InputError) as info:
        read_profile("nope")
    assert str(info.value) == "unknown Spark profile 'nope' (known: cluster, images, local)"


def test_the_conf_files_are_read_from_a_zip_on_py_files(tmp_path):
    """spark-submit --py-files disc21spark.zip: defaults, profiles and the log4j2 file come
    out of the zip (the JVM is given a real file)."""
    archive = shutil.make_archive(str(tmp_path / "disc21spark"), "zip", ROOT, "disc21spark")
    code = (
        "import disc21spark, sys; from disc21spark.core import config; "
        "from disc21spark import commands; "
        "assert disc21spark.__file__.startswith(sys.argv[1]), disc21spark.__file__; "
        "print(config.default('evaluate', 'max_results')); "
        "print(config.conf_file('log4j2.properties').read_text().count('rootLogger'));"
        "print(config.conf_item('spark', 'local.conf').is_file())"
    )
    out = subprocess.run(
        [sys.executable, "-c", f"import sys; sys.path.insert(0, {archive!r}); {code}", archive],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["500000", "2", "True"]


def test_every_import_of_the_package_is_a_declared_dependency():
    """A module the package imports (at the top or inside a function) is the standard
    library's, the package's own, or a distribution ``install_requires`` declares: the
    wheel's users get nothing else (psutil was once declared only under the dev extra),
    but for what a declared distribution itself requires."""
    import ast
    import configparser
    from importlib.metadata import packages_distributions

    from packaging.requirements import Requirement

    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    lines = cfg["options"]["install_requires"].splitlines()
    declared = {
        Requirement(line).name.lower().replace("_", "-")
        for line in lines
        if line.strip() and not line.strip().startswith("#")
    }
    # a declared distribution's own requirement (py4j for pyspark) comes with it
    from importlib.metadata import requires

    for dist in list(declared):
        for line in requires(dist) or ():
            req = Requirement(line)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                declared.add(req.name.lower().replace("_", "-"))
    owners = packages_distributions()
    missing = set()
    for path in (ROOT / "disc21spark").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top == "disc21spark":
                    continue
                dists = {d.lower().replace("_", "-") for d in owners.get(top, [top])}
                if not dists & declared:
                    missing.add(f"{path.relative_to(ROOT)}: {top}")
    assert not missing, sorted(missing)
