"""The house rules a reader can check without running anything: no module of the
package over 400 lines, no function over 60 (its docstring included), no test of
``spark is None`` outside ``disc21spark/engine.py`` (the engine is decided there and
handed down), and no import circle among the package's modules."""

from __future__ import annotations

import ast
import re

from tests.conftest import ROOT

PACKAGE = ROOT / "disc21spark"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
MAX_PARAMETERS = 6


def modules() -> list:
    return sorted(PACKAGE.rglob("*.py"))


def test_no_module_is_over_400_lines():
    long = {
        str(p.relative_to(ROOT)): n
        for p in modules()
        if (n := len(p.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines: {long}"


def test_no_function_is_over_60_lines():
    long = {}
    for path in modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long[f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"] = lines
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines: {long}"


def parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """What a call names: positional, keyword-only, ``*args`` and ``**kwargs`` alike; a
    method's self or cls not counted."""
    a = node.args
    names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    if names and names[0] in ("self", "cls"):
        names = names[1:]
    return len(names) + (a.vararg is not None) + (a.kwarg is not None)


def test_no_function_of_the_scorer_takes_over_6_parameters():
    many = set()
    for folder in ("matching", "pool"):
        for path in sorted((PACKAGE / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    if parameters(node) > MAX_PARAMETERS:
                        many.add(f"{path.relative_to(ROOT).as_posix()} {node.name}")
    assert not many, f"over {MAX_PARAMETERS} parameters: {many}"


# a value a call needs is handed to it (issue 45): nothing of matching/ or pool/ keeps
# one in the module for the next call. The one cache loads an extension (an import)
MODULE_CACHES = {"disc21spark/matching/stats/product.py _kernels"}


def test_no_module_of_the_scorer_keeps_a_value_for_the_next_call():
    kept = set()
    for folder in ("matching", "pool"):
        for path in sorted((PACKAGE / folder).rglob("*.py")):
            where = path.relative_to(ROOT).as_posix()
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Global):
                    kept.add(f"{where} global {', '.join(node.names)}")
                if isinstance(node, ast.FunctionDef):
                    names = {ast.unparse(d).split("(")[0] for d in node.decorator_list}
                    if names & {"functools.cache", "functools.lru_cache", "cache", "lru_cache"}:
                        kept.add(f"{where} {node.name}")
    assert kept == MODULE_CACHES, f"hand the value down instead: {kept - MODULE_CACHES}"


def test_only_the_engine_module_tells_the_engines_apart_by_a_missing_session():
    missing_session = re.compile(r"\b(spark|session|sc)\s+is\s+(not\s+)?None\b")
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in modules()
        if path != PACKAGE / "engine.py"
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if missing_session.search(line)
    ]
    assert not found, f"pass the engine down instead of testing its session: {found}"


def module_name(path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported(path, names: set[str]) -> set[str]:
    """The package's modules that ``path`` imports, at module level or inside a function
    (``from disc21spark.x import y`` names the module y when y is one, else x)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in names else node.module)
    return (found & names) - {module_name(path)}


def test_no_import_circle():
    names = {module_name(p): p for p in modules()}
    graph = {name: imported(path, set(names)) for name, path in names.items()}
    circles, done = [], set()

    def visit(name: str, chain: list[str]) -> None:
        if name in chain:
            circles.append(" → ".join(chain[chain.index(name) :] + [name]))
            return
        if name in done:
            return
        for target in sorted(graph[name]):
            visit(target, [*chain, name])
        done.add(name)

    for name in sorted(graph):
        visit(name, [])
    assert not circles, f"import circles (move the shared piece down): {circles}"


def test_the_data_types_import_no_runner():
    names = {module_name(p): p for p in modules()}
    reached, todo = set(), ["disc21spark.matching.model", "disc21spark.matching.stats.model"]
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo += imported(names[name], set(names))
    assert "disc21spark.core.runner" not in reached, sorted(reached)


# a test module takes what it shares from conftest.py or a helpers module (shared
# fixtures: tests/scenes.py, a plugin of conftest.py), never from another test module
def test_no_test_module_imports_another():
    found = set()
    for path in sorted((ROOT / "tests").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tests.test_"):
                found.add((path.name, node.module))
    assert not found, sorted(found)


# resolving an input: where a path lives, how it is read, whether an output may be
# written, which engine runs (docs/design.md, "One run, step by step"): the decision's
# (engine.py, resolve.py) and core's, which defines them, alone
RESOLVERS = {
    "detect_format",
    "file_format",
    "local_path",
    "format_problem",
    "unsupported",
    "sized_files",
    "check_writable",
    "codec",
}
# the calls still made below the decision (issue 45 took the others away: the ground
# truth is read from its resolved input, the engine handed down as a value, a hand-built
# job's outputs checked by the decision, a file's codec taken from its resolution); none
# may be added. Left: the parts of a ground truth given as a folder, which Spark lists as
# it reads them (the decision resolves the folder, not each part)
RESOLVED_AGAIN: set[tuple[str, str, str]] = {("matching/spark/read.py", "_small_text", "codec")}


def test_only_the_decision_resolves_an_input():
    """No module of matching/, pool/ or descriptors/ asks again where a path lives, how
    it is read, whether its output may be written or which engine runs: the decision
    resolved it (``resolve.RunInputs`` on ``engine.Choice.inputs``) and the stages take
    it."""
    found = set()
    for path in modules():
        where = str(path.relative_to(PACKAGE))
        if not where.startswith(("matching/", "pool/", "descriptors/")):
            continue
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(function):
                if isinstance(node, ast.Call):
                    f = node.func
                    name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
                    if name in RESOLVERS:
                        found.add((where, function.name, name))
    assert found <= RESOLVED_AGAIN, f"resolved again below the decision: {found - RESOLVED_AGAIN}"
    assert found >= RESOLVED_AGAIN, f"now resolved once (drop them): {RESOLVED_AGAIN - found}"


# what a codec's name looks like to a stage that would tell it from a file's name again
CODEC_NAMES = {".gz", ".bz2", ".deflate", ".zst", ".lz4", ".snappy"}


def test_no_stage_tells_a_files_codec_from_its_name():
    """The stages of matching/ and pool/ decompress by the codec the decision resolved
    (``resolve.ResolvedInput.codec``): no suffix of a path read, no name compared with a
    codec's suffix, no list of codecs but the pool's names (``pool/listing.py`` takes the
    suffixes off a file's name to name its submission)."""
    found = set()
    for path in modules():
        where = str(path.relative_to(PACKAGE))
        if not where.startswith(("matching/", "pool/")):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and node.attr in ("suffix", "suffixes"):
                found.add((where, node.lineno, node.attr))
            named = isinstance(node, ast.Name) and node.id == "HADOOP_CODECS"
            if (named or getattr(node, "attr", None) == "HADOOP_CODECS") and where != (
                "pool/listing.py"
            ):
                found.add((where, node.lineno, "HADOOP_CODECS"))
            if isinstance(node, ast.Call) and getattr(node.func, "attr", None) == "endswith":
                texts = {a.value for a in ast.walk(node) if isinstance(a, ast.Constant)}
                if texts & CODEC_NAMES:
                    found.add((where, node.lineno, "endswith"))
    assert not found, f"a codec told from a file's name below the decision: {sorted(found)}"


# the one decision (docs/design.md, "Which engine and which plan"): engine.choose before
# anything starts, engine.settle once Spark can list the inputs, each asked once a run by
# the entry points below; the rule itself (plan_of, the pool test) is engine.py's alone
DECIDERS = {
    "choose": {"commands/evaluate.py", "api/inputs.py"},
    # the API's one submission settles through matching.ground_truth.first_steps, the one sequence
    "settle": {"commands/evaluate.py", "matching/ground_truth.py", "pool/job.py"},
    "plan_of": set(),
}


def test_the_engine_and_the_plan_are_decided_in_engine_py_alone():
    calls = re.compile(r"\b(?:engine|engines)\.(choose|settle|plan_of)\(")
    # a plan compared with "auto" is a plan still to decide; a master or a session's
    # configuration read to pick an engine or a plan is deciding again
    undecided = re.compile(r"plan\s*[!=]=\s*\"auto\"|\.master\b.*plan|is_pool|plan_for")
    found = []
    for path in modules():
        where = str(path.relative_to(PACKAGE))
        if where == "engine.py":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for name in calls.findall(line):
                if where not in DECIDERS[name]:
                    found.append(f"{where}:{number} calls engine.{name}")
            if undecided.search(line):
                found.append(f"{where}:{number} decides: {line.strip()}")
    assert not found, f"decide in disc21spark/engine.py and pass the Choice down: {found}"
    # and each entry point asks once
    for name, places in DECIDERS.items():
        for where in places:
            text = (PACKAGE / where).read_text(encoding="utf-8")
            assert len(calls.findall(text)) >= 1 and text.count(f".{name}(") == 1, (where, name)


# one run of one submission is one sequence (docs/design.md, "One run, step by step"):
# matching.ground_truth.first_steps settles the job, reads the ground truth, then the query groups;
# matching.job.score_one (the command's and the API's run of one file) and the pool call it, and
# none of them takes these steps itself
SEQUENCE = ("settle", "ground_truth_phase", "groups_phase")
SEQUENCE_CALLERS = {
    ("matching/job.py", "score_one"),
    ("pool/job.py", "run"),
}
# one file's run, first steps to metrics: the command's job and the API's call it, nothing else
ONE_FILE_CALLERS = {("matching/job.py", "run"), ("api/matching.py", "_score_one")}
# the pool's own decision (a pool kind, its plan) before the sequence takes it
OWN_STEPS = {("pool/job.py", "_settled", "settle")}


def _calls_in_order(function: ast.AST) -> list[str]:
    calls = [n for n in ast.walk(function) if isinstance(n, ast.Call)]
    calls.sort(key=lambda n: (n.lineno, n.col_offset))
    return [
        c.func.attr if isinstance(c.func, ast.Attribute) else getattr(c.func, "id", "")
        for c in calls
    ]


def test_one_run_is_one_sequence():
    steps, callers, found, one_file = None, set(), set(), set()
    for path in modules():
        where = str(path.relative_to(PACKAGE))
        if not where.startswith(("matching/", "pool/", "api/")):
            continue
        for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(function, ast.FunctionDef):
                continue
            names = _calls_in_order(function)
            if (where, function.name) == ("matching/ground_truth.py", "first_steps"):
                steps = [n for n in names if n in SEQUENCE]
                continue
            if "first_steps" in names:
                callers.add((where, function.name))
            if "score_one" in names:
                one_file.add((where, function.name))
            found |= {(where, function.name, n) for n in names if n in SEQUENCE[:2]}
    assert steps == list(SEQUENCE), steps
    assert callers == SEQUENCE_CALLERS, callers
    assert one_file == ONE_FILE_CALLERS, one_file
    assert found == OWN_STEPS, f"a step of the one sequence taken outside it: {found - OWN_STEPS}"
