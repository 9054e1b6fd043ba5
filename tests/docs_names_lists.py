"""What the check of the docs' names (tests/docs_names.py) looks at and allows: the pages,
the checkout's folders, and the names of other tools and projects the docs may cite, each
with the reason it is allowed."""

from __future__ import annotations

import re
from pathlib import Path

from disc21spark import commands

ROOT = Path(__file__).resolve().parents[1]
PAGES = [
    ROOT / "README.md",
    *sorted(p for p in (ROOT / "docs").rglob("*.md") if "_notes" not in p.parts),
]
# the page whose table maps each renamed option to its new name
RENAMES_PAGE = "docs/reference/vocabulary.md"
TOP = ("disc21spark", "jobs", "tests", "scripts", "benchmarks", "dags", "data", "docs", ".ci")
CODE = ("disc21spark", "jobs", "tests", "benchmarks", "dags", "scripts")
WRITERS = ("disc21spark", "jobs", "dags", "scripts")  # what writes the outputs
# Spark's own settings (spark.driver.memory), not our module disc21spark/.../spark.py
SPARK_CONF = tuple(
    f"spark.{n}." for n in "driver executor pyspark kubernetes task sql eventLog rdd".split()
) + ("spark.archives",)
EXTENSIONS = (
    "py csv json md html png parquet h5 hdf5 npy txt ini conf jpg gz tar whl sh yml"
).split()

# options of other tools the docs document: option → why it is allowed
TOOL_OPTIONS = {
    **dict.fromkeys(
        ["--archives", "--conf", "--driver-memory", "--executor-memory", "--driver-java-options"],
        "spark-submit's option (docs/cluster.md, docs/configuration.md)",
    ),
    **dict.fromkeys(["--durations", "-s"], "pytest's option (docs/operations.md)"),
    **dict.fromkeys(
        ["--gt_filepath", "--preds_filepath", "--pr_curve_filepath", "--max_results", "--knn"]
        + ["--track2", "--query_descs", "--db_descs", "--max_dim", "--ip", "--title"]
        + ["--write_predictions"],
        "isc2021's scripts/compute_metrics.py, mapped to ours in the vocabulary",
    ),
    **dict.fromkeys(
        ["--train_descs", "--n", "--reduction", "--factor", "--o", "--read_norms", "--norms"],
        "isc2021's scripts/score_normalization.py, mapped to ours in the vocabulary",
    ),
    **dict.fromkeys(["--old", "--new"], "the placeholders of the deprecation warning's text"),
    "--bounding-set": "setpriv's option (docs/errors.md: the matrix run without root's rights)",
}
# names of other projects the docs cite: name → why
EXTERNAL_NAMES = {
    "METRIC_L1": "FAISS's distance constant (faiss.METRIC_L1)",
    "find_operating_point": "isc2021's isc/metrics.py function (the P90 point)",
    "AIRFLOW_CONN_DISC21SPARK_SPARK": "Airflow's variable for the disc21spark_spark connection",
    "AIRFLOW__CORE__DAGS_FOLDER": "Airflow's setting of its DAG folder",
}
# example files of the user's that the docs name: file (a regex) → why
EXAMPLE_FILES = {
    "background.h5": "a user's background descriptors (--score-norm-descriptors)",
    "refs_run.json": "extract's record of an output named refs.h5 (<stem>_run.json)",
    "refs_skipped.csv": "extract's list of skipped images for refs.h5 (<stem>_skipped.csv)",
    "out_of_last_run/": "the --output folder of a user's previous run",
    r"images/[QR]\d+\.jpg": "a DISC21 image of the user's (Q00000.jpg, R000123.jpg)",
    r"\w+_ids\.txt": "the ids file beside a user's .npy file (<name>_ids.txt)",
    "deadleaves/dl_000000.jpg": "make-library's name f'deadleaves/dl_{index:06d}.jpg'",
}
# files of other projects the docs cite: path → why
FOREIGN_FILES = {
    "scripts/compute_metrics.py": "isc2021's scorer (facebookresearch/isc2021)",
    "scripts/score_normalization.py": "isc2021's score normalisation",
    "compute_metrics.py": "isc2021's scorer",
    "isc/metrics.py": "isc2021's metrics module",
    "contrib/exhaustive_search.py": "FAISS's contrib module",
}
# the history page keeps its text as written then: the names it may cite though they are
# gone (name → what replaced it); on any other page they fail as any name does
HISTORY = "docs/benchmarks-archive.md"
GONE = {
    "stats/spark.pack_counts": "replaced by stats/payload.py (commit 7d0a317)",
    "stats/spark._added": "the executors add the packed blocks up (stats/spark._add_blocks)",
}
# folders the benchmark scripts write (not in the checkout): folder → the code that writes
WRITTEN_UNDER = {"benchmarks/results/": "benchmarks"}
# what a span's leading word says its options belong to
COMMAND_WORDS = {
    **{name: name for name in commands.COMMANDS},
    **{name.replace("-", "_"): name for name in commands.COMMANDS},
    "jobs/extract_descriptors.py": "extract",
}
# the variables api.md's examples use, by the class they hold
VARIABLES = {"m": "MatchingMetrics", "board": "Leaderboard", "e": "InputError", "ds": None}
PLACEHOLDER = re.compile(r"<[^>]*>|…|\.\.\.|\*|\b[A-Z]{1,6}\b(?=\.\w+$|/)")
OPTION = re.compile(r"(?<![\w/=-])(--?[A-Za-z][\w]*(?:-\w+)*)")
# this check's own files: the made-up names of its tests are not the code's
OWN_FILES = ("docs_names.py", "docs_names_lists.py", "test_docs_names.py")
SPAN = re.compile(r"`([^`\n]+)`")
FENCE = re.compile(r"^ *```.*?^ *```", re.S | re.M)
