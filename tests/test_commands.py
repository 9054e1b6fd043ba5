"""The disc21spark command without Spark: defaults from defaults.ini, every option's type
and range errors, conflicts, --help (the runner's exit codes: test_runner.py)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import MISSING, fields

import pytest
from hypothesis import given
from hypothesis import strategies as st

from disc21spark import commands
from disc21spark.core import config
from tests.conftest import DESCRIPTORS, MINIMAL, ROOT

EVALUATE_DESCRIPTORS = ["--ground-truth", "gt.csv", "--output", "o", *DESCRIPTORS]
# how the command line types each default of defaults.ini
TYPES = {
    "max_results": int,
    "curve_points": int,
    "sort_partitions": int,
    "image_partitions": int,
    "knn": int,
    "nprobe": int,
    "max_dim": int,
    "broadcast_limit": config.parse_size,
    "score_norm_weight": float,
    "score_norm_neighbors": config.parse_span,
    "query_partitions": int,
    "seed": int,
    "width": int,
    "height": int,
    "queries_per_test": int,
    "distractors": float,
    "sheet_per_test": int,
    "subsets": int,
    "resamples": int,
    "sizes": config.parse_sizes,
    "local_max_bytes": config.parse_limit,
    "confidence": float,
}


def parse(command: str, *options: str):
    return commands.parse([command, *options])


def usage_error(capsys, command: str, *options: str) -> str:
    """The `error:` line of a rejected command line (argparse exits 2)."""
    with pytest.raises(SystemExit) as exit_info:
        parse(command, *options)
    assert exit_info.value.code == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if ": error: " in line]
    assert len(lines) == 1, lines
    prefix, _, message = lines[0].partition(": error: ")
    assert prefix == f"disc21spark {command}"
    return message


# ----------------------------------------------------------------- defaults.ini


@pytest.mark.parametrize("command", list(MINIMAL))
def test_every_default_comes_from_defaults_ini(command):
    args = parse(command, *MINIMAL[command])
    for key, text in config.section(command).items():
        expected = TYPES.get(key, str)(text) if text else None
        if key == "sizes":
            expected = expected or []
        assert getattr(args, key) == expected, key


def test_defaults_ini_has_a_section_per_command_and_a_comment_per_key():
    text = config.conf_item(config.DEFAULTS).read_text(encoding="utf-8")
    assert set(commands.COMMANDS) <= {
        line.strip("[]") for line in text.splitlines() if line.startswith("[")
    }
    previous = ""
    for line in text.splitlines():
        if "=" in line and not line.startswith("#"):
            assert previous.startswith("#"), f"no comment above {line!r}"
        if line.strip():
            previous = line


def test_a_job_built_without_options_has_the_command_lines_defaults():
    """The API and the tests build jobs with few options, the command line from every
    option: both get defaults.ini's values (read once, by config.fill_defaults)."""
    from disc21spark.descriptors.job import DescriptorJob
    from disc21spark.matching.job import MatchingJob
    from disc21spark.pool.job import PoolJob

    argv = ["evaluate", "--ground-truth", "g.csv", "--predictions", "p.csv", "--output", "out"]
    args = commands.parse(argv)
    vectors = ["--query-descriptors", "q.h5", "--reference-descriptors", "r.h5"]
    descriptor_args = commands.parse([*argv[:3], *vectors, "--output", "out"])
    jobs = [
        (MatchingJob("g.csv", "p.csv", "out"), MatchingJob.from_options(args.request)),
        (PoolJob("g.csv", ["p.csv"], "out"), PoolJob.from_options(args.request)),
        (
            DescriptorJob("g.csv", ["q.h5"], ["r.h5"], "out"),
            DescriptorJob.from_options(descriptor_args.request),
        ),
    ]
    for bare, built in jobs:
        cls = type(bare)
        for f in fields(cls):
            if f.default is config.FROM_DEFAULTS:
                assert getattr(bare, f.name) == getattr(built, f.name), (cls.__name__, f.name)
                assert getattr(bare, f.name) is not config.FROM_DEFAULTS


def test_job_dataclasses_read_the_same_defaults():
    from disc21spark.descriptors.job import DescriptorJob
    from disc21spark.library.job import LibraryJob
    from disc21spark.matching.job import MatchingJob
    from disc21spark.pool.job import PoolJob
    from disc21spark.queries.job import QueryJob
    from disc21spark.queries.spec import Settings
    from disc21spark.ranks.extract_job import ExtractJob
    from disc21spark.ranks.job import RankJob

    def check(cls, command: str, renamed: dict | None = None) -> None:
        conf = config.section(command)
        for f in fields(cls):
            key = (renamed or {}).get(f.name, f.name)
            # a required field has none; one read from defaults.ini when the job is built
            # is held by test_a_job_built_without_options_has_the_command_lines_defaults
            if key in conf and f.default not in (MISSING, config.FROM_DEFAULTS):
                text = conf[key]
                expected = TYPES.get(key, str)(text) if text else None
                if key == "sizes":
                    expected = tuple(expected or ())
                assert f.default == expected, (cls.__name__, f.name)

    for cls in (MatchingJob, PoolJob, DescriptorJob):
        check(cls, "evaluate")
    check(LibraryJob, "make-library")
    check(QueryJob, "make-queries")
    check(Settings, "make-queries", {"fmt": "query_format"})
    check(ExtractJob, "extract")
    check(RankJob, "rank-eval")


def test_a_job_of_a_command_line_with_no_option_is_the_job_with_its_defaults():
    from disc21spark.descriptors.job import DescriptorJob
    from disc21spark.library.job import LibraryJob
    from disc21spark.matching.job import MatchingJob
    from disc21spark.pool.job import PoolJob
    from disc21spark.ranks.extract_job import ExtractJob
    from disc21spark.ranks.job import RankJob

    args = parse("evaluate", *MINIMAL["evaluate"])
    assert MatchingJob.from_options(args.request) == MatchingJob("gt.csv", "p.csv", "o")
    assert PoolJob.from_options(args.request) == PoolJob("gt.csv", ["p.csv"], "o")
    args = parse("evaluate", *EVALUATE_DESCRIPTORS)
    assert DescriptorJob.from_options(args.request) == DescriptorJob(
        "gt.csv", ["q.h5"], ["r.h5"], "o"
    )
    args = parse("make-library", *MINIMAL["make-library"])
    assert LibraryJob.from_options(args.request) == LibraryJob("o", 3)
    args = parse("extract", *MINIMAL["extract"])
    assert ExtractJob.from_options(args.request) == ExtractJob("tiny", "o.h5", images=["lib"])
    args = parse("rank-eval", *MINIMAL["rank-eval"])
    methods = config.default("rank-eval", "methods").split(",")
    assert RankJob.from_options(args.request) == RankJob("b", methods, "o")


def test_a_conf_folder_of_ones_own_replaces_the_defaults(tmp_path):
    own = tmp_path / "conf"
    own.mkdir()
    text = config.conf_item(config.DEFAULTS).read_text(encoding="utf-8")
    (own / config.DEFAULTS).write_text(text.replace("max_results = 500000", "max_results = 7"))
    code = (
        "from disc21spark import commands; "
        "print(commands.parse(['evaluate', '--ground-truth', 'g', '--predictions', 'p', "
        "'--output', 'o']).max_results)"
    )
    env = {"DISC21SPARK_CONF": str(own), "PATH": "/usr/bin:/bin"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=ROOT
    )
    assert out.stdout.strip() == "7", out.stderr


# ------------------------------------------------------------ types and ranges

NUMBERS = [  # command, option, kind of number (argparse's name for it), options needed
    ("evaluate", "--max-results", "int", []),
    ("evaluate", "--sort-partitions", "int", []),
    ("evaluate", "--curve-points", "int", []),
    ("evaluate", "--knn", "int", []),
    ("evaluate", "--nprobe", "int", []),
    ("evaluate", "--max-dim", "int", []),
    ("evaluate", "--query-partitions", "int", []),
    ("evaluate", "--score-norm-weight", "float", []),
    ("make-library", "--size", "int", []),
    ("make-library", "--seed", "int", []),
    ("make-library", "--width", "int", []),
    ("make-library", "--height", "int", []),
    ("make-queries", "--queries-per-test", "int", []),
    ("make-queries", "--distractors", "float", []),
    ("make-queries", "--seed", "int", []),
    ("make-queries", "--sheet-per-test", "int", []),
    ("make-queries", "--image-partitions", "int", []),
    ("extract", "--image-partitions", "int", []),
    ("rank-eval", "--knn", "int", []),
    ("rank-eval", "--subsets", "int", []),
    ("rank-eval", "--seed", "int", []),
    ("rank-eval", "--resamples", "int", []),
    ("rank-eval", "--query-partitions", "int", []),
]


@pytest.mark.parametrize("command,option,kind,extra", NUMBERS)
def test_a_number_that_is_not_one_is_a_usage_error(capsys, command, option, kind, extra):
    message = usage_error(capsys, command, *MINIMAL[command], *extra, option, "x")
    assert message == f"argument {option}: invalid {kind} value: 'x'"


RANGES = [  # command, options, the usage error
    ("evaluate", ["--max-results", "-1"],
     "--max-results must be ≥ 0, --sort-partitions ≥ 1 and --curve-points ≥ 2"),
    ("evaluate", ["--sort-partitions", "0"],
     "--max-results must be ≥ 0, --sort-partitions ≥ 1 and --curve-points ≥ 2"),
    ("evaluate", ["--curve-points", "1"],
     "--max-results must be ≥ 0, --sort-partitions ≥ 1 and --curve-points ≥ 2"),
    ("evaluate", ["--knn", "0"], "--knn, --max-dim and --nprobe must be ≥ 1"),
    ("evaluate", ["--max-dim", "0"], "--knn, --max-dim and --nprobe must be ≥ 1"),
    ("evaluate", ["--nprobe", "-2"], "--knn, --max-dim and --nprobe must be ≥ 1"),
    ("evaluate", ["--query-partitions", "-1"], "--query-partitions must be ≥ 1"),
    ("evaluate", ["--broadcast-limit", "2X"],
     "argument --broadcast-limit: '2X' is not a size such as 2G or 512M"),
    ("evaluate", ["--broadcast-limit", "0"],
     "argument --broadcast-limit: '0': a size must be positive"),
    ("evaluate", ["--score-norm-neighbors", "3..1"],
     "argument --score-norm-neighbors: '3..1': need 1 ≤ a ≤ b"),
    ("evaluate", ["--score-norm-neighbors", "a"],
     "argument --score-norm-neighbors: 'a' is not a range such as 10..20"),
    ("evaluate", ["--distance", "cos"],
     "argument --distance: invalid choice: 'cos' (choose from 'l2', 'ip')"),
    ("evaluate", ["--predictions-format", "tsv"],
     "argument --predictions-format: invalid choice: 'tsv' (choose from 'auto', 'csv', 'parquet')"),
    ("make-queries", ["--seed", "-1"], "--seed must be ≥ 0 and --image-partitions ≥ 1"),
    ("make-queries", ["--image-partitions", "0"], "--seed must be ≥ 0 and --image-partitions ≥ 1"),
    ("make-queries", ["--sheet-per-test", "-1"], "--sheet-per-test must be ≥ 0"),
    ("make-queries", ["--query-format", "gif"],
     "argument --query-format: invalid choice: 'gif' (choose from 'png', 'jpeg')"),
    ("extract", ["--image-partitions", "0"], "--image-partitions must be ≥ 1"),
    ("rank-eval", ["--knn", "0"], "--knn and --subsets must be ≥ 1, --resamples ≥ 10, --seed ≥ 0"),
    ("rank-eval", ["--subsets", "0"],
     "--knn and --subsets must be ≥ 1, --resamples ≥ 10, --seed ≥ 0"),
    ("rank-eval", ["--resamples", "9"],
     "--knn and --subsets must be ≥ 1, --resamples ≥ 10, --seed ≥ 0"),
    ("rank-eval", ["--seed", "-1"], "--knn and --subsets must be ≥ 1, --resamples ≥ 10, --seed ≥ 0"),
    ("rank-eval", ["--query-partitions", "0"], "--query-partitions must be ≥ 1"),
    ("rank-eval", ["--sizes", "3,2"],
     "argument --sizes: sizes must be positive and increasing, such as 500,1000"),
    ("rank-eval", ["--sizes", "x"], "argument --sizes: 'x' is not a list such as 500,1000,2000"),
]  # fmt: skip


@pytest.mark.parametrize("command,options,message", RANGES)
def test_out_of_range_values_are_usage_errors(capsys, command, options, message):
    assert usage_error(capsys, command, *MINIMAL[command], *options) == message


def test_descriptor_track_range_rules(capsys):
    assert (
        usage_error(capsys, "evaluate", *EVALUATE_DESCRIPTORS, "--max-results", "0")
        == "the descriptor track needs --max-results ≥ 1 (or --knn K)"
    )
    assert parse("evaluate", *EVALUATE_DESCRIPTORS, "--max-results", "0", "--knn", "5").knn == 5


@given(st.integers(-(10**6), 10**6))
def test_max_results_is_accepted_exactly_when_not_negative(n):
    try:
        args = parse("evaluate", *MINIMAL["evaluate"], "--max-results", str(n))
    except SystemExit as exc:
        assert exc.code == 2 and n < 0
    else:
        assert n >= 0 and args.request.max_results == n and args.request.track == "matching"


@given(st.integers(1, 10**4), st.sampled_from(["", "k", "M", "g", "T", "kb", "GB"]))
def test_sizes_with_units(n, unit):
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[unit[:1].lower()]
    assert config.parse_size(f"{n}{unit}") == n * scale


def test_local_max_bytes_takes_a_size_or_auto(capsys):
    one = ["--ground-truth", "gt.csv", "--output", "o", "--predictions", "p.csv"]
    assert parse("evaluate", *one, "--local-max-bytes", "AUTO").local_max_bytes is None
    assert parse("evaluate", *one, "--local-max-bytes", "1g").local_max_bytes == 1 << 30
    assert usage_error(capsys, "evaluate", *one, "--local-max-bytes", "lots") == (
        "argument --local-max-bytes: 'lots' is not a size such as 2G or 512M or auto"
    )


@given(st.integers(-5, 50), st.integers(-5, 50))
def test_spans(a, b):
    if 1 <= a <= b:
        assert config.parse_span(f"{a}..{b}") == (a, b)
    else:
        with pytest.raises(Exception, match="need 1 ≤ a ≤ b"):
            config.parse_span(f"{a}..{b}")


@given(st.lists(st.integers(-3, 10**6), min_size=1, max_size=6))
def test_library_sizes(sizes):
    text = ",".join(map(str, sizes))
    if sizes == sorted(set(sizes)) and sizes[0] >= 1:
        assert config.parse_sizes(text) == sizes
    else:
        with pytest.raises(Exception, match="positive and increasing"):
            config.parse_sizes(text)


# ------------------------------------------------------------------- conflicts


CONFLICTS = [
    ("evaluate", ["--ground-truth", "g", "--output", "o"],
     "give --predictions, or --query-descriptors and --reference-descriptors"),
    ("evaluate", [*MINIMAL["evaluate"], "--query-descriptors", "q.h5"],
     "give --predictions (matching track) or descriptors (descriptor track), not both"),
    ("evaluate", [*MINIMAL["evaluate"], *DESCRIPTORS],
     "give --predictions (matching track) or descriptors (descriptor track), not both"),
    ("evaluate", ["--ground-truth", "g", "--output", "o", "--reference-descriptors", "r.h5"],
     "the descriptor track needs --query-descriptors and --reference-descriptors"),
    ("evaluate", ["--predictions", "p.csv", "--output", "o"],
     "the following arguments are required: --ground-truth"),
    ("make-library", ["--output", "o"], "the following arguments are required: --size"),
    ("make-queries", ["--output", "o"], "the following arguments are required: --images"),
    ("extract", ["--method", "tiny", "--output", "o"],
     "one of the arguments --images --bench is required"),
    ("extract", ["--images", "a", "--bench", "b", "--method", "tiny", "--output", "o"],
     "argument --bench: not allowed with argument --images"),
    ("rank-eval", ["--output", "o"], "the following arguments are required: --bench"),
]  # fmt: skip


@pytest.mark.parametrize("command,options,message", CONFLICTS)
def test_conflicts_and_missing_options(capsys, command, options, message):
    assert usage_error(capsys, command, *options) == message


def test_tracks():
    assert parse("evaluate", *MINIMAL["evaluate"]).request.track == "matching"
    request = parse("evaluate", *EVALUATE_DESCRIPTORS, "--broadcast-limit", "512M").request
    assert request.track == "descriptor" and request.broadcast_limit == 512 << 20


def test_a_jobs_script_keeps_its_own_name(capsys):
    with pytest.raises(SystemExit) as exit_info:
        commands.parse(["make-library", "--output", "o"], prog="make_library.py")
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        "make_library.py: error: the following arguments are required: --size"
    )


def test_unknown_command_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_info:
        commands.parse(["score"])
    assert exit_info.value.code == 2
    assert "invalid choice: 'score'" in capsys.readouterr().err


# ------------------------------------------------------------------------ help


@pytest.mark.parametrize("command", list(MINIMAL))
def test_help_of_each_command(capsys, command):
    with pytest.raises(SystemExit) as exit_info:
        commands.parse([command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: disc21spark {command} [-h]")
    assert f"disc21spark {command} --" in out  # the usage lines of the description
    for option in ("--output", "--master", "--profile", "--quiet", "--debug"):
        assert option in out


def test_help_shows_the_defaults_of_defaults_ini(capsys):
    with pytest.raises(SystemExit):
        commands.parse(["evaluate", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert f"0: no limit (default: {config.default('evaluate', 'max_results')})" in out
    assert f"disc21spark/conf/spark/ (default: {config.default('evaluate', 'profile')})" in out


def test_python_m_disc21spark_lists_the_commands():
    out = subprocess.run(
        [sys.executable, "-m", "disc21spark", "--help"], capture_output=True, text=True, cwd=ROOT
    )
    assert out.returncode == 0
    for command in MINIMAL:
        assert command in out.stdout


def test_each_request_holds_every_option_of_its_parser_and_evaluate_s_groups():
    """A command's REQUEST (what the API builds and the command line parses into) has a
    field for every option of its parser; evaluate's lists each track's options as
    --help groups them (its track check reads these lists, not the parser)."""
    import argparse

    from disc21spark.commands import COMMANDS
    from disc21spark.commands import evaluate_options as options
    from disc21spark.commands import evaluate_request as request

    for name, module in COMMANDS.items():
        parser = argparse.ArgumentParser(add_help=False)
        module.add_arguments(parser)
        dests = {a.dest for a in parser._actions} - {"version"}
        own = {f.name for f in fields(module.REQUEST)} - {"given", "track"}
        assert dests == own, name
    parser = argparse.ArgumentParser(add_help=False)
    options.add_arguments(parser)
    groups = {g.title: {a.dest for a in g._group_actions} for g in parser._action_groups}
    assert groups[options.POOLS] == set(request.POOL_OPTIONS)
    assert groups[options.DESCRIPTOR_TRACK] == set(request.DESCRIPTOR_OPTIONS)
    assert groups[options.INTERVALS] == set(request.INTERVAL_OPTIONS)


def test_the_api_and_the_command_line_build_the_same_request():
    from disc21spark.api import inputs
    from disc21spark.core.errors import InputError

    argv = ["--ground-truth", "g.csv", "--predictions", "p.csv", "--output", "o"]
    parsed = commands.parse(["evaluate", *argv, "--max-results", "7", "--seed", "3"]).request
    built = inputs.request(
        "evaluate", ground_truth="g.csv", predictions=["p.csv"], output="o", max_results=7, seed=3
    )
    assert built == parsed and built.track == "matching"
    with pytest.raises(InputError, match="--knn is for the descriptor track"):
        inputs.request("evaluate", ground_truth="g", predictions=["p"], output=None, knn=3)
    with pytest.raises(TypeError, match="unknown option 'max_result' of evaluate"):
        inputs.request("evaluate", ground_truth="g", predictions=["p"], output=None, max_result=3)


@pytest.mark.parametrize("prog", [None, "evaluate.py"])
def test_the_command_line_is_parsed_once(monkeypatch, capsys, prog):
    """jobs/evaluate.py (``prog``) and ``disc21spark evaluate`` read argv once: the options
    given are told from the defaults by that one parse, an old name warned of once."""
    from disc21spark.commands import common

    parsed = []
    real = common.Parser.parse_known_args

    def counted(self, *args, **kwargs):
        parsed.append(self.prog)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(common.Parser, "parse_known_args", counted)
    argv = ["evaluate", "--ground-truth", "g.csv", "--predictions", "p.csv", "--output", "o"]
    args = commands.parse([*argv, "--resamples", "5", "--partitions", "3"], prog=prog)
    assert parsed == (["evaluate.py"] if prog else ["disc21spark", "disc21spark evaluate"])
    assert capsys.readouterr().err.count("--partitions is deprecated") == 1
    assert args.given == {"ground_truth", "predictions", "output", "resamples", "sort_partitions"}
    assert (args.resamples, args.sort_partitions, args.overwrite) == (5, 3, False)
    assert args.max_results == config.value("evaluate", "max_results", int)
    assert args.broadcast_limit == config.value("evaluate", "broadcast_limit", config.parse_size)
