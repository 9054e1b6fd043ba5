"""The check that the names the docs write in `backticks` resolve against the code.

Every span in backticks of README.md and docs/**/*.md (fenced blocks left out: test_docs.py
parses their commands) is split into words, and each word that looks like a name is
checked:

- an option (``--name``): an option of a disc21spark command, of the synthesiser, or of a
  tool the docs document (TOOL_OPTIONS, with a reason each). After a command's name
  (``make-queries --query-format``, ``jobs/evaluate.py --knn``) it must be that command's.
  An old, renamed spelling is allowed only on the page that maps old names to new ones;
- a path (``disc21spark/matching/spark/plan.py``, ``jobs/*.py``, ``matching/spark/plan.py``,
  ``tests/test_pool.py::test_name``): a file of the checkout, found from the checkout or
  from the package (a path may leave out ``disc21spark/``), the test named in it defined;
- an output file (``metrics.json``, ``demo/out/pr_curve.png``, ``<stem>_run.json``): a
  name the package's source writes; a ``demo/X`` folder one a documented command or the
  Makefile writes;
- a dotted name (``disc21spark.testing.synth``, ``engine.choose``, ``ds.evaluate``,
  ``m.pr_curve``): imports and resolves, a module named by its last parts;
- a call with keywords (``evaluate(ground_truth, *, max_results, ...)``): each keyword is
  a parameter of the function's signature, or an option of its command that
  ``**options`` takes; in a signature (a bare ``*``) each bare name is a parameter;
- a code name (``staged_output``, ``NotForThisEngine``, ``BENCH_POOL``): occurs in the
  project's code (the package, jobs, tests, benchmarks, dags, scripts, Makefile).

The history page (benchmarks-archive.md) may also cite the names of GONE, code of its
day. ``problems_of(page, text)`` gives ``page:line: `name`: why`` for each name that does
not resolve. No subprocess and no Spark: the modules are imported, the files read.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import re
from pathlib import Path

from disc21spark import commands
from disc21spark.commands.common import _Renamed
from disc21spark.core.version import __version__
from tests.docs_names_lists import (
    CODE,
    COMMAND_WORDS,
    EXAMPLE_FILES,
    EXTENSIONS,
    EXTERNAL_NAMES,
    FENCE,
    FOREIGN_FILES,
    GONE,
    HISTORY,
    OPTION,
    OWN_FILES,
    PAGES,
    PLACEHOLDER,
    RENAMES_PAGE,
    ROOT,
    SPAN,
    SPARK_CONF,
    TOOL_OPTIONS,
    TOP,
    VARIABLES,
    WRITERS,
    WRITTEN_UNDER,
)


def spans(text: str) -> list[tuple[int, str]]:
    """(line, text) of every span in backticks outside fenced blocks."""
    text = FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    return [(text.count("\n", 0, m.start()) + 1, m.group(1)) for m in SPAN.finditer(text)]


@functools.cache
def options() -> tuple[dict[str, set[str]], set[str]]:
    """Each command's options by name (today's names), and the renamed old names."""
    _, parsers = commands.main_parser()
    current: dict[str, set[str]] = {}
    old: set[str] = set()
    for name, parser in parsers.items():
        for action in parser._actions:
            (old if isinstance(action, _Renamed) else current.setdefault(name, set())).update(
                action.option_strings
            )
    synth = (ROOT / "disc21spark/testing/synth.py").read_text(encoding="utf-8")
    current["synth"] = set(re.findall(r"add_argument\(\"(--[\w-]+)\"", synth))
    return current, old


@functools.cache
def files() -> list[str]:
    """The checkout's files (as paths relative to it) where the docs' names may point."""
    found = []
    for top in TOP:
        found += [str(p.relative_to(ROOT)) for p in (ROOT / top).rglob("*") if p.is_file()]
    return found + [p.name for p in ROOT.iterdir() if p.is_file()]


@functools.cache
def source(*tops: str) -> str:
    """The text of every file of these folders (and the Makefile): what the code says."""
    parts = [(ROOT / "Makefile").read_text(encoding="utf-8")]
    for top in tops:
        for path in (ROOT / top).rglob("*"):
            if path.name in OWN_FILES:  # the made-up names of its tests are not the code's
                continue
            if path.suffix in (".py", ".ini", ".conf", ".sh", ".properties") or (
                path.parent.name == "scripts" and path.is_file()
            ):
                parts.append(path.read_text(encoding="utf-8", errors="replace"))
    return "\n".join(parts)


def as_pattern(name: str) -> re.Pattern:
    """A name with placeholders (``<stem>``, ``NAME``, ``*``, ``…``) as a regex."""
    pieces = PLACEHOLDER.split(name)
    return re.compile("[^/]*".join(re.escape(p) for p in pieces) + "$")


def check_option(option: str, command: str | None, page: str) -> str | None:
    current, old = options()
    if command is not None and command in current:
        if option in current[command] or (option in old and page == RENAMES_PAGE):
            return None
        return f"not an option of {command}"
    if any(option in names for names in current.values()) or option in TOOL_OPTIONS:
        return None
    if option in old:
        return "an old, renamed option name" if page != RENAMES_PAGE else None
    return "no command or documented tool has this option"


def check_options(text: str, page: str) -> list[tuple[str, str]]:
    """The options of one span, each with the command its leading words name."""
    problems, command = [], None
    for word in text.split():
        word = word.strip("'\"(),;")
        if word in COMMAND_WORDS or word.startswith("jobs/"):
            command = COMMAND_WORDS.get(word) or Path(word).stem.replace("_", "-")
        elif word.endswith("synth"):
            command = "synth"
        elif word in ("spark-submit", "scripts/spark-submit"):
            command = "spark-submit"
        for option in OPTION.findall(word):
            if option.startswith("--") or option in TOOL_OPTIONS:
                if command == "spark-submit" and option in TOOL_OPTIONS or option == "--master":
                    continue
                why = check_option(option, command, page)
                if why:
                    problems.append((option, why))
    return problems


def find_file(path: str) -> str | None:
    """The checkout's file (or a file in the folder) this path names; a path that does not
    start at the checkout's top may start inside the package (``matching/spark/plan.py``)."""
    folder = path.endswith("/")
    anchor = "^" if path.split("/")[0] in TOP else r"(^|/)"
    pattern = re.compile(anchor + as_pattern(path.rstrip("/")).pattern)
    for candidate in files():
        names = [str(p) for p in Path(candidate).parents][:-1] if folder else [candidate]
        if any(pattern.search(name) for name in names):
            return candidate
    return None


def check_path(word: str) -> str | None:
    """A path of the checkout, a module with an attribute, a test in a test file."""
    if word in FOREIGN_FILES:
        return None
    under = next((f for f in WRITTEN_UNDER if word.startswith(f)), None)
    if under is not None:
        rest = [p for p in word[len(under) :].split("/") if p]
        missing = [p for p in rest if p not in source(WRITTEN_UNDER[under])]
        return f"the benchmarks write no {missing[0]!r}" if missing else None
    path, _, test = word.partition("::")
    if re.search(r"\.\w+$", path) and Path(path).suffix[1:] not in EXTENSIONS:
        module, _, attr = path.rpartition(".")  # matching/local.score_file
        found = find_file(module + ".py")
        if found is None:
            return "no such module in the checkout"
        return resolve(found[: -len(".py")].replace("/", "."), attr.rstrip("()"))
    found = find_file(path)
    if found is None:
        return "no such file in the checkout"
    if test and not re.search(
        rf"def {re.escape(test.split('[')[0])}\(", (ROOT / found).read_text()
    ):
        return f"{found} defines no {test}"
    return None


def resolve(module: str, attr: str) -> str | None:
    try:
        obj = importlib.import_module(module)
    except ImportError as e:
        return f"does not import ({e})"
    for part in attr.split(".") if attr else []:
        if not has(obj, part):
            return f"{module} has no {attr}"
        obj = getattr(obj, part, None)
    return None


def has(obj: object, name: str) -> bool:
    """An attribute, a dataclass field, or (of a class) an attribute its methods set."""
    fields = {*getattr(obj, "__dataclass_fields__", {}), *getattr(obj, "__annotations__", {})}
    if hasattr(obj, name) or name in fields:
        return True
    return isinstance(obj, type) and f"self.{name} =" in inspect.getsource(obj)


@functools.cache
def modules() -> list[str]:
    return [
        path[: -len(".py")].replace("/", ".").removesuffix(".__init__")
        for path in files()
        if path.startswith("disc21spark/") and path.endswith(".py")
    ]


def check_dotted(word: str) -> str | None:
    """``disc21spark.x.y``, ``engine.choose``, ``stats.spec.bootstrap``, ``m.pr_curve``."""
    parts = word.removesuffix("()").split(".")
    if parts[0] in VARIABLES:
        import disc21spark

        owner = VARIABLES[parts[0]]
        obj = getattr(disc21spark, owner) if owner else disc21spark
        return None if has(obj, parts[1]) else f"{owner or 'disc21spark'} has no {parts[1]}"
    for cut in range(len(parts), 0, -1):
        tail = ".".join(parts[:cut])
        found = [m for m in modules() if m == tail or m.endswith("." + tail)]
        if found:
            why = [resolve(m, ".".join(parts[cut:])) for m in found]
            return None if None in why else why[0]
    classes = classes_named(parts[0])
    if classes:
        ok = any(has(c, parts[1]) for c in classes)
        return None if ok else f"{parts[0]} has no {parts[1]}"
    return "skip"  # another library's name (np.unique, Window.orderBy)


@functools.cache
def classes_named(name: str) -> list[type]:
    found = []
    for module in modules():
        obj = getattr(importlib.import_module(module), name, None)
        if isinstance(obj, type):
            found.append(obj)
    return found


# the command whose options an API function takes as **options
API_COMMANDS = {"evaluate_descriptors": "evaluate", "rank_eval": "rank-eval"}


def check_call(text: str) -> str | None:
    """``evaluate(a, *, b, c=1, ...)``: each keyword (``c=``) is a parameter of the API's
    function, or an option of its command that ``**options`` takes; in a signature (one
    with a bare ``*``) each bare name is a named parameter."""
    import disc21spark

    m = re.match(r"^(?:ds\.)?(\w+)\((.*)\)$", text)
    if not m or m.group(1) not in disc21spark.__all__:
        return None
    parameters = inspect.signature(getattr(disc21spark, m.group(1))).parameters
    _, parsers = commands.main_parser()
    command = parsers.get(API_COMMANDS.get(m.group(1), ""))
    dests = {a.dest for a in command._actions} if command else set()
    items = [i.strip() for i in re.split(r",(?![^\[(]*[\])])", m.group(2))]
    signature = "*" in items
    for item in items:
        key = item.split("=")[0].strip()
        if item.startswith("**") or not key.isidentifier():
            continue  # **options, ..., *, a literal
        if "=" not in item and not signature:
            continue  # a value passed by position
        if key not in parameters and not ("=" in item and key in dests):
            return f"{m.group(1)} takes no {key!r}"
    return None


@functools.cache
def written_folders() -> str:
    """The text of the docs' commands and the Makefile: where a ``demo/X`` folder is made."""
    blocks = [re.findall(r"```(?:bash|sh)\n(.*?)```", p.read_text(), re.S) for p in PAGES]
    return "\n".join(sum(blocks, [])) + (ROOT / "Makefile").read_text(encoding="utf-8")


def check_output(word: str) -> str | None:
    """A file or folder a run writes: its stem and extension, and each folder of it, are
    in the code's source (``demo/X/``: X in a documented command or the Makefile;
    ``dist/``: what ``make dist`` builds)."""
    if any(re.fullmatch(example, word) for example in EXAMPLE_FILES):
        return None
    if word.startswith(("demo/", "dist/")):
        folder = "/".join(word.split("/")[:2])
        if word.startswith("demo/") and not re.search(re.escape(folder) + r"\b", written_folders()):
            return "no documented command or make target writes this folder"
        word = "/".join(word.split("/")[2 if word.startswith("demo/") else 1 :])
    wheel = re.match(r"^disc21spark-(.*)-py3-none-any\.whl$", word)
    if wheel:
        version = wheel.group(1)
        return (
            None if PLACEHOLDER.fullmatch(version) or version == __version__ else "not the version"
        )
    code = source(*WRITERS)
    for piece in re.split(r"/|<[^>]*>|\*|…|\.\.\.", word):
        stem, ext = re.match(r"^(.*?)((?:\.[a-z]\w*)*)$", piece).groups()
        # the name as written, or (a table written as f"{name}.csv") its stem as a string
        if len(piece.strip(".")) > 2 and piece not in code:
            if not (ext and ext in code and re.search(rf"[\"']{re.escape(stem)}[\"']", code)):
                return f"the code writes no {piece!r}"
    return None


def check_word(word: str) -> str | None:
    """What is wrong with one word of a span (None: nothing, or not a name we check)."""
    word = word.strip("'\"(),;").split("#")[0]
    if not word or "://" in word or word[0] in "~/$." and not word.startswith(".ci/"):
        return None
    if word.endswith(":") or word in FOREIGN_FILES or word.startswith(SPARK_CONF):
        return None  # a message's subject: the file it names (p.csv:); Spark's settings
    key, _, value = word.partition("=")
    if value and re.match(r"^[A-Za-z_][\w.]*$", key):
        return check_word(key) or (check_word(value) if value.split("/")[0] in TOP else None)
    if "/" in word or "::" in word:
        if word.split("/")[0] in TOP or word.endswith(".py") or "::" in word:
            return check_path(word)
        if re.match(r"^[a-z_]+/[a-z_]+\.\w+$", word) and find_file(word.split(".")[0] + ".py"):
            return check_path(word)  # matching/local.score_file
        return check_output(word)
    if Path(word).suffix[1:] in EXTENSIONS and re.match(r"^[\w<>*….-]+$", word):
        return check_output(word) if find_file(word) is None else None
    if re.match(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+(\(\))?$", word):
        why = check_dotted(word)
        return None if why == "skip" else why
    name = word.removesuffix("()")
    if re.match(r"^[A-Za-z_]\w*$", name) and re.search(r"_|[a-z][A-Z]", name.strip("_")):
        if name not in EXTERNAL_NAMES and not re.search(rf"\b{name}\b", source(*CODE)):
            return "the code has no such name"
    return None


def problems_of(page: str, text: str) -> list[str]:
    """``page:line: `name`: why`` for every name of the page that does not resolve."""
    found = []
    for line, span in spans(text):
        named = [(option, why) for option, why in check_options(span, page)]
        if not span.startswith(("error:", "warning:")) and check_call(span):
            named.append((span, check_call(span)))
        words = [] if re.match(r"^[\w.]+\(", span) else span.split()
        named += [(w, why) for w in words if not w.startswith("-") and (why := check_word(w))]
        if page == HISTORY:
            named = [(name, why) for name, why in named if name.strip("`'\"(),;") not in GONE]
        found += [f"{page}:{line}: `{name}`: {why}" for name, why in named]
    return found
