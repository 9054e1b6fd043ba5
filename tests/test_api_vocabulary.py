"""The API speaks the command line's vocabulary (docs/reference/vocabulary.md): every
keyword of a public function is an option of its command by the option's name, and the
0.1.0 keywords and defaults.ini keys still work for one release, with a warning."""

from __future__ import annotations

import argparse
import inspect
import os
import shutil
import subprocess
import sys
import warnings

import pandas as pd
import pytest

import disc21spark as ds
from disc21spark import commands
from disc21spark.api.renamed import RENAMED
from disc21spark.core import config

COMMAND = {
    "evaluate": "evaluate",
    "evaluate_pool": "evaluate",
    "evaluate_descriptors": "evaluate",
    "make_library": "make-library",
    "make_queries": "make-queries",
    "rank_eval": "rank-eval",
}
# keywords that are not a command's option, and why
NOT_OPTIONS = {
    "engine": "--engine's values plus a SparkSession (make-queries and rank-eval run on Spark)",
    "return_pairs": "a notebook's wish: the searched pairs as a DataFrame",
    "options": "**options: any other option of the command by its name",
}
GT = pd.DataFrame({"query_id": ["Q1", "Q2", "Q3"], "reference_id": ["R1", "R2", None]})
PAIRS = pd.DataFrame(
    {
        "query_id": ["Q1", "Q3", "Q2", "Q2"],
        "reference_id": ["R1", "R7", "R5", "R2"],
        "score": [0.9, 0.8, 0.7, 0.5],
    }
)


def option_names(command: str) -> set[str]:
    parser = commands.main_parser()[1][command]
    return {
        a.dest
        for a in parser._actions
        if a.option_strings and a.help != argparse.SUPPRESS and a.dest != "help"
    }


@pytest.mark.parametrize("function", sorted(COMMAND))
def test_every_keyword_is_an_option_of_the_command(function):
    options = option_names(COMMAND[function])
    for name in inspect.signature(getattr(ds, function)).parameters:
        assert name in options or name in NOT_OPTIONS, (
            f"{function}({name}=...) is not an option of {COMMAND[function]}"
        )


@pytest.mark.parametrize("function", sorted(RENAMED))
def test_every_renamed_keyword_now_names_an_option(function):
    parameters = inspect.signature(getattr(ds, function)).parameters
    for old, new in RENAMED[function].items():
        assert old not in parameters and new in option_names(COMMAND[function])


def test_an_old_keyword_warns_and_does_what_the_new_one_does():
    new = ds.evaluate(GT, PAIRS, sort_partitions=3, resamples=0)
    with pytest.warns(DeprecationWarning, match=r"evaluate\(partitions=\.\.\.\) is deprecated"):
        old = ds.evaluate(GT, PAIRS, partitions=3, resamples=0)
    assert old.to_dict() == new.to_dict()
    with pytest.raises(TypeError, match="both 'partitions' and 'sort_partitions'"):
        ds.evaluate(GT, PAIRS, partitions=3, sort_partitions=3)


def test_a_pool_of_one_table_takes_its_column_by_the_options_name():
    pool = pd.concat([PAIRS.assign(team="a"), PAIRS.head(2).assign(team="b")])
    board = ds.evaluate_pool(GT, pool, submission_column="team", resamples=0)
    with pytest.warns(DeprecationWarning, match="use submission_column="):
        old = ds.evaluate_pool(GT, pool, submission="team", resamples=0)
    assert board.table.equals(old.table) and [s.name for s in board.submissions] == ["a", "b"]


# defaults.ini is read when the package is imported: a folder of one's own is named by
# $DISC21SPARK_CONF before that, in a process of its own
OWN_SORT_PARTITIONS = """
import warnings
from disc21spark.core import config
with warnings.catch_warnings(record=True) as said:
    warnings.simplefilter("always")
    value = config.value("evaluate", "sort_partitions", int)
print(value, [str(w.message) for w in said if w.category is FutureWarning])
"""


def test_a_conf_folder_of_0_1_0_keeps_its_keys(tmp_path):
    mine = tmp_path / "conf"
    shutil.copytree(config.conf_item(), mine)
    ini = mine / config.DEFAULTS
    text = ini.read_text(encoding="utf-8")
    ini.write_text(text.replace("sort_partitions =\n", "partitions = 7\n", 1), encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != config.CONF_ENV}
    ran = [
        subprocess.run(
            [sys.executable, "-c", OWN_SORT_PARTITIONS], env=e, capture_output=True, text=True
        )
        for e in ({**env, config.CONF_ENV: str(mine)}, env)
    ]
    said = "['defaults.ini [evaluate]: partitions is deprecated, use sort_partitions']"
    assert [r.stdout.strip() for r in ran] == [f"7 {said}", "None []"], [r.stderr for r in ran]


def test_defaults_ini_is_read_once_at_import(monkeypatch):
    def unread(*parts):
        raise AssertionError(f"conf file read again: {parts}")

    monkeypatch.setattr(config, "conf_item", unread)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the package's own file names the new keys only
        assert config.value("evaluate", "sort_partitions", int) is None
        assert config.default("evaluate", "max_results") == "500000"
