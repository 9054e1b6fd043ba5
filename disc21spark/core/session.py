"""The SparkSession, from a profile in conf/spark/ unless spark-submit already set things."""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path

from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

from disc21spark.core import gateway
from disc21spark.core.config import conf_file, conf_item
from disc21spark.core.errors import InputError
from disc21spark.core.paths import display_path, scheme

PACKAGE_DIR = Path(__file__).resolve().parents[1]


def read_profile(name: str) -> dict[str, str]:
    """Settings of conf/spark/<name>.conf ("key value" lines, # comments)."""
    profiles = conf_item("spark")
    path = profiles.joinpath(f"{name}.conf")
    if not path.is_file():
        known = sorted(
            p.name[: -len(".conf")] for p in profiles.iterdir() if p.name.endswith(".conf")
        )
        # a message of its own, naming no file: the option is the mistake
        raise InputError("", f"unknown Spark profile {name!r} (known: {', '.join(known)})")
    settings: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            key, _, value = line.partition(" ")
            settings[key] = value.strip()
    return settings


def is_local_master(master: str) -> bool:
    """local, local[4], local[*], local-cluster[...]: everything runs on this machine."""
    return master.startswith("local")


def effective_master(master: str | None, submitted: SparkConf, profile: dict[str, str]) -> str:
    """The master this run gets: --master > spark-submit's > the profile's."""
    if master:
        return master
    if submitted.contains("spark.master"):
        return submitted.get("spark.master")
    return profile.get("spark.master", "local[*]")


def profile_for(name: str, master: str) -> tuple[str, dict[str, str]]:
    """The profile that applies under ``master``. A profile written for one machine (its
    spark.master is local) does not apply to a cluster: its 16 shuffle partitions, its
    UI switched off and its log settings pointing at this disk are wrong there; the
    cluster profile (conf/spark/cluster.conf) applies instead."""
    settings = read_profile(name)
    if not is_local_master(master) and is_local_master(settings.get("spark.master", "local")):
        return "cluster", read_profile("cluster")
    return name, settings


def spark_session(
    profile: str = "local",
    master: str | None = None,
    conf: dict[str, str] | None = None,
    app_name: str = "disc21spark",
    debug: bool = False,
) -> SparkSession:
    """Get or create the session: command line > spark-submit > profile."""
    submitted = _submitted_conf()
    _check_shipped_files(submitted)
    target = effective_master(master, submitted, read_profile(profile))
    profile, settings = profile_for(profile, target)
    local = is_local_master(target)
    if local:
        # workers run this interpreter (the project's virtualenv), not whatever python3 is;
        # on a cluster this path means nothing: spark.pyspark.python (the archive of
        # make dist) or the cluster's own Python decides
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    settings.update(conf or {})
    if not debug:
        log_conf = f"-Dlog4j2.configurationFile=file:{conf_file('log4j2.properties')}"
        # the executors of a cluster cannot read a file on this disk
        keys = ("spark.driver.extraJavaOptions",) + (
            ("spark.executor.extraJavaOptions",) if local else ()
        )
        for key in keys:
            settings[key] = f"{settings.get(key, '')} {log_conf}".strip()
    builder = SparkSession.builder.appName(app_name)
    for key, value in settings.items():
        if key == "spark.master" or submitted.contains(key):
            continue
        builder = builder.config(key, value)
    builder = (
        builder.master(target) if master or not submitted.contains("spark.master") else builder
    )
    if not debug:
        _quiet_py4j()  # before the start: a signal may interrupt it
    with gateway.own_group():
        spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR" if not debug else "WARN")
    if not debug:
        _silence_task_failures(spark)
    if not local:
        ship_package(spark)
    _announce(spark, profile)
    return spark


SHIPPED_OPTIONS = {
    "spark.archives": "--archives",
    "spark.files": "--files",
    "spark.submit.pyFiles": "--py-files",
}


def _check_shipped_files(submitted: SparkConf) -> None:
    """A local archive or file named to spark-submit that does not exist: one line, not
    the JVM's trace when the context starts."""
    for key, option in SHIPPED_OPTIONS.items():
        for item in filter(None, submitted.get(key, "").split(",")):
            path = item.split("#", 1)[0].strip()
            if scheme(path) in (None, "file") and not os.path.exists(display_path(path)):
                raise InputError(display_path(path), f"not found (given to spark-submit {option})")


def _announce(spark: SparkSession, profile: str) -> None:
    """Where a cluster user follows the run: the application id and the UI address."""
    sc = spark.sparkContext
    ui = sc.uiWebUrl or "off (spark.ui.enabled false)"
    logging.getLogger("disc21spark").info(
        "spark:    %s on %s, profile %s, UI %s", sc.applicationId, sc.master, profile, ui
    )


def _submitted_conf() -> SparkConf:
    """What spark-submit was given when it launched us; empty under plain python."""
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        SparkContext._ensure_initialized()
        return SparkConf()
    return SparkConf(loadDefaults=False)


# a failed task is reported by the job as one line naming the input; these loggers would
# print the Java stack trace of the same failure first
NOISY_LOGGERS = (
    "org.apache.spark.executor.Executor",
    "org.apache.spark.scheduler.TaskSetManager",
    "org.apache.spark.api.python.PythonRunner",
    "org.apache.spark.storage.BlockManager",
)


def _quiet_py4j() -> None:
    # py4j logs the trace of a call a signal interrupted through the root logger (which
    # logging then configures to print); the runner says it in one line
    logging.getLogger("py4j").setLevel(logging.CRITICAL + 1)
    root = logging.getLogger()
    if not root.handlers:
        root.addHandler(logging.NullHandler())


def _silence_task_failures(spark: SparkSession) -> None:
    # PySpark logs the Java trace of a failed query itself; the job reports it in one line
    logging.getLogger("DataFrameQueryContextLogger").setLevel(logging.CRITICAL + 1)
    jvm = spark.sparkContext._jvm
    off = jvm.org.apache.logging.log4j.Level.OFF
    for name in NOISY_LOGGERS:
        jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(name, off)


_SHIPPED: set[str] = set()  # application ids whose executors have the package


def ship_package(spark: SparkSession) -> None:
    """Send this package to the executors of a cluster (local mode imports it directly),
    once per application: a job may ask for its session more than once."""
    app = spark.sparkContext.applicationId
    if app in _SHIPPED:
        return
    _SHIPPED.add(app)
    target = Path(tempfile.mkdtemp(prefix="disc21spark-pkg-")) / "disc21spark"
    archive = shutil.make_archive(str(target), "zip", PACKAGE_DIR.parent, PACKAGE_DIR.name)
    spark.sparkContext.addPyFile(archive)
