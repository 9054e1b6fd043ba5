"""The organiser's inputs, mutated (``tests/test_fuzz_organiser.py`` runs them): split
files (``--private-queries``), groups files (``--query-groups``), board folders
(``--previous``, ``--compare-to``, ``freeze --board``) and option combinations, each
drawn from a seeded ``random.Random``.

A text mutation carries what a right result is: ``SAME`` (the same queries or groups as
the clean file: the reader must accept it and read the same thing), ``SAME_OR_REFUSED``
(the same, or one line) or ``ANY`` (any result that is valid, or one line). A board
mutation says whether the board is still whole (``freeze`` may copy it) and whether
reusing it must give the clean figures.
"""

from __future__ import annotations

import io
import json
import os
import random
import shutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from tests.mutations import BYTES, mutate_with

SAME, SAME_OR_REFUSED, ANY = "same", "same or refused", "any"
HUGE = 131_073  # one character over the csv module's field limit
BAD_BYTES = [b"\xff\xfe", b"\xe9", b"\x00", b"\xc3", b"\x80\x80"]


@dataclass(frozen=True)
class TextCase:
    """A mutated split or groups file: what was done, the bytes, what a right result is."""

    what: str
    data: bytes
    expect: str


# ------------------------------------------------------------------ split and groups


def _lines(text: str) -> tuple[str, list[str]]:
    head, *rows = text.splitlines()
    return head, rows


def _join(head: str, rows: list[str], end: str = "\n") -> bytes:
    return "".join(line + end for line in [head, *rows]).encode()


def text_mutations(clean: str, ids: list[str], unknown: str) -> dict[str, Callable]:
    """Structure-aware mutations of a small CSV (``clean``: a header, one row per query;
    ``ids``: every query of the ground truth): name → fn(rng) → (bytes, expect)."""
    head, rows = _lines(clean)
    width = head.count(",") + 1

    def pick(rng: random.Random) -> int:
        return rng.randrange(len(rows))

    def with_row(rng: random.Random, row: str) -> list[str]:
        out = list(rows)
        out.insert(rng.randrange(len(out) + 1), row)
        return out

    def row_of(query: str, rng: random.Random) -> str:
        fields = rows[pick(rng)].split(",")
        return ",".join([query, *fields[1:]])

    def bad_bytes(rng: random.Random) -> bytes:
        data = bytearray(_join(head, rows))
        at = rng.randrange(len(data) + 1)
        return bytes(data[:at]) + rng.choice(BAD_BYTES) + bytes(data[at:])

    def huge(rng: random.Random) -> list[str]:
        big = "Q" + "9" * HUGE
        return with_row(rng, row_of(big, rng) if rng.random() < 0.5 else big + "," * (width - 1))

    return {
        "bom": lambda rng: (b"\xef\xbb\xbf" + _join(head, rows), SAME_OR_REFUSED),
        "crlf": lambda rng: (_join(head, rows, "\r\n"), SAME),
        "cr": lambda rng: (_join(head, rows, "\r"), SAME),
        "no final newline": lambda rng: (_join(head, rows)[:-1], SAME),
        "blank lines": lambda rng: (_join(head, with_row(rng, rng.choice(["", "  ", "\t"]))), SAME),
        "padded ids": lambda rng: (
            _join(head, [" " + r.replace(",", " , ") + "\t" for r in rows]),
            SAME,
        ),
        "rows reordered": lambda rng: (_join(head, rng.sample(rows, len(rows))), SAME),
        "extra column": lambda rng: (
            _join(head + ",note", [r + f",n{i}" for i, r in enumerate(rows)]),
            SAME,
        ),
        "quoted ids": lambda rng: (
            _join(head, ['"' + r.replace(",", '","') + '"' for r in rows]),
            SAME,
        ),
        "empty file": lambda rng: (b"", ANY),
        "header only": lambda rng: (_join(head, []), ANY),
        "wrong header": lambda rng: (
            _join(rng.choice(["id", "query", "query_id;group", "QUERY_ID", '"query_id']), rows),
            ANY,
        ),
        "duplicate id": lambda rng: (_join(head, with_row(rng, rows[pick(rng)])), ANY),
        "unknown id": lambda rng: (_join(head, with_row(rng, row_of(unknown, rng))), ANY),
        "huge field": lambda rng: (_join(head, huge(rng)), ANY),
        "not UTF-8": lambda rng: (bad_bytes(rng), ANY),
        "NUL in an id": lambda rng: (_join(head, with_row(rng, row_of(ids[0] + "\0", rng))), ANY),
        "ragged row": lambda rng: (_join(head, with_row(rng, rows[pick(rng)] + ",x,y")), ANY),
        "every query": lambda rng: (
            _join(head, [row_of(q, rng) for q in ids]),
            ANY,
        ),
        "one row": lambda rng: (_join(head, [rows[pick(rng)]]), ANY),
        "bytes": lambda rng: (mutate_with(BYTES, rng, _join(head, rows))[1], ANY),
    }


def text_case(rng: random.Random, mutations: dict[str, Callable]) -> TextCase:
    name = rng.choice(sorted(mutations))
    data, expect = mutations[name](rng)
    return TextCase(name, data, expect)


def split_mutations(clean: str, gt_ids: list[str], positives: list[str]) -> dict[str, Callable]:
    """``text_mutations`` of a split file, and the splits that leave a board without a
    positive pair: every positive query private, or distractors alone private."""
    out = text_mutations(clean, gt_ids, "Q999")
    distractors = [q for q in gt_ids if q not in set(positives)]
    out["public board without positives"] = lambda rng: (
        _join("query_id", list(positives)),
        ANY,
    )
    out["private board without positives"] = lambda rng: (
        _join("query_id", rng.sample(distractors, min(3, len(distractors)))),
        ANY,
    )
    return out


# ------------------------------------------------------------------------ board folders


@dataclass(frozen=True)
class BoardMutation:
    """What a mutation did to a board folder. ``whole``: False when the board is no
    longer one a run published whole (``freeze`` must refuse it), None when either is
    right; ``values``: False when it changed figures in a well-formed file (a reused
    board then gives its own figures, which are not checked)."""

    what: str
    whole: bool | None = None
    values: bool = True


def _json_edit(folder: Path, edit: Callable[[dict], object]) -> None:
    path = folder / "leaderboard.json"
    doc = json.loads(path.read_text())
    path.write_text(json.dumps(edit(doc), indent=2))


def _first_ok(doc: dict) -> dict:
    return next(r for r in doc["submissions"] if r["status"] == "ok")


def _set(row_key: str, value: object) -> Callable[[dict], dict]:
    def edit(doc: dict) -> dict:
        _first_ok(doc)[row_key] = value
        return doc

    return edit


def _drop(row_key: str) -> Callable[[dict], dict]:
    def edit(doc: dict) -> dict:
        _first_ok(doc).pop(row_key)
        return doc

    return edit


JSON_EDITS: dict[str, tuple[Callable[[dict], object], bool | None]] = {
    "micro_ap a string": (_set("micro_ap", "0.5"), None),
    "micro_ap null": (_set("micro_ap", None), None),
    "micro_ap a list": (_set("micro_ap", [0.5]), None),
    "micro_ap_optimistic a string": (_set("micro_ap_optimistic", "x"), None),
    "no submission key": (_drop("submission"), None),
    "no status key": (_drop("status"), None),
    "status unknown": (_set("status", "maybe"), None),
    "submission a number": (_set("submission", 7), None),
    "rank a string": (_set("rank", "1"), None),
    "checksum a number": (_set("checksum", 12), None),
    "groups a string": (_set("groups", "ab"), None),
    "warnings a number": (_set("warnings", 3), None),
    "n_predictions a float": (_set("n_predictions", 1.5), None),
    "an extra key": (_set("extra_key", {"x": 1}), True),
    "run a list": (lambda d: {**d, "run": []}, False),
    "no run": (lambda d: {"submissions": d["submissions"]}, False),
    "no submissions": (lambda d: {"run": d["run"]}, False),
    "submissions an object": (lambda d: {**d, "submissions": {"a": 1}}, False),
    "a submission a list": (lambda d: {**d, "submissions": [[1, 2]]}, None),
    "an array": (lambda d: [d], False),
    "minimal": (lambda d: {"run": {}, "submissions": []}, False),
    "ground_truth_sha256 a number": (
        lambda d: {**d, "run": {**d["run"], "ground_truth_sha256": 5}},
        None,
    ),
    "board unknown": (lambda d: {**d, "run": {**d["run"], "board": "secret"}}, None),
}


def _npy_bytes(array: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, array, allow_pickle=True)
    return out.getvalue()


def _npy_edit(folder: Path, rng: random.Random, how: str) -> bool:
    files = sorted((folder / "resamples").glob("*.npy")) if (folder / "resamples").is_dir() else []
    if not files:
        return False
    path = rng.choice(files)
    array = np.load(path)
    new: dict[str, Callable[[], bytes]] = {
        "wrong shape": lambda: _npy_bytes(array[:, : max(1, array.shape[1] // 2)].copy()),
        "too few rows": lambda: _npy_bytes(array[:2].copy()),
        "one dimension": lambda: _npy_bytes(array.ravel()),
        "wrong dtype": lambda: _npy_bytes(array.astype(np.int32)),
        "strings": lambda: _npy_bytes(array.astype(str)),
        "objects": lambda: _npy_bytes(array.astype(object)),
        "truncated": lambda: path.read_bytes()[: rng.randrange(1, len(path.read_bytes()))],
        "not npy": lambda: b"not a numpy file\n",
        "empty": lambda: b"",
    }
    path.write_bytes(new[how]())
    return True


NPY_EDITS = (
    "wrong shape",
    "too few rows",
    "one dimension",
    "wrong dtype",
    "strings",
    "objects",
    "truncated",
    "not npy",
    "empty",
)
REMOVABLE = ("_SUCCESS", "run.json", "leaderboard.csv", "pr_curves", "leaderboard.json")


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    else:
        path.unlink()


def mutate_board(rng: random.Random, folder: Path, gt_file: Path) -> BoardMutation:
    """One seeded mutation of the board in ``folder`` (a copy of a published board)."""
    kind = rng.choice(["json", "json", "json bytes", "npy", "remove", "file", "symlink"])
    if kind == "json":
        name = rng.choice(sorted(JSON_EDITS))
        edit, whole = JSON_EDITS[name]
        _json_edit(folder, edit)
        return BoardMutation(f"leaderboard.json: {name}", whole)
    if kind == "json bytes":
        return _json_bytes(rng, folder)
    if kind == "npy":
        how = rng.choice(NPY_EDITS)
        if _npy_edit(folder, rng, how):
            return BoardMutation(f"resamples/*.npy: {how}")
        kind = "remove"
    if kind == "remove":
        name = rng.choice(REMOVABLE)
        if (folder / name).exists():
            _remove(folder / name)
            return BoardMutation(f"{name} removed", whole=False)
        return BoardMutation("nothing removed", whole=True)
    if kind == "file":
        return _file_bytes(rng, folder)
    return _symlink(rng, folder, gt_file)


def _json_bytes(rng: random.Random, folder: Path) -> BoardMutation:
    path = folder / "leaderboard.json"
    data = path.read_bytes()
    how = rng.choice(["bom", "not UTF-8", "truncated", "nested", "NaN", "empty", "bytes"])
    if how == "bom":
        path.write_bytes(b"\xef\xbb\xbf" + data)
        return BoardMutation("leaderboard.json: a byte-order mark")
    if how == "not UTF-8":
        at = data.index(b'"submission"')
        path.write_bytes(data[:at] + b'"\xff\xfe":1,' + data[at:])
        return BoardMutation("leaderboard.json: not UTF-8", whole=False)
    if how == "truncated":
        path.write_bytes(data[: rng.randrange(len(data))])
        return BoardMutation("leaderboard.json: truncated", whole=False)
    if how == "nested":
        path.write_bytes(b"[" * 100_000 + b"]" * 100_000)
        return BoardMutation("leaderboard.json: 100,000 nested arrays", whole=False)
    if how == "NaN":
        doc = json.loads(data)
        _first_ok(doc)["micro_ap"] = float("nan")
        path.write_text(json.dumps(doc))
        return BoardMutation("leaderboard.json: micro_ap NaN")
    if how == "empty":
        path.write_bytes(b"")
        return BoardMutation("leaderboard.json: empty", whole=False)
    what, new = mutate_with(BYTES, rng, data)
    path.write_bytes(new)
    return BoardMutation(f"leaderboard.json: {what}", values=False)


def _file_bytes(rng: random.Random, folder: Path) -> BoardMutation:
    """leaderboard.csv, run.json, a curve or FROZEN.json mutated byte by byte."""
    names = ["leaderboard.csv", "run.json", "FROZEN.json", "pr_curves"]
    name = rng.choice([n for n in names if (folder / n).exists()])
    path = folder / name
    if path.is_dir():
        curves = sorted(path.glob("*.csv"))
        if not curves:
            return BoardMutation("no curve to mutate", whole=True)
        path = rng.choice(curves)
        name = f"pr_curves/{path.name}"
    how = rng.choice(["bytes", "empty", "header only", "not a number", "huge field"])
    data = path.read_bytes()
    if how == "bytes":
        how, data = mutate_with(BYTES, rng, data)
    elif how == "empty":
        data = b""
    elif how == "header only":
        data = data.split(b"\n", 1)[0] + b"\n"
    elif how == "not a number":
        data = data.split(b"\n", 1)[0] + b"\nx,y,z\n"
    else:
        data = data + b"9" * HUGE + b"\n"
    path.write_bytes(data)
    return BoardMutation(f"{name}: {how}", values=False)


def _symlink(rng: random.Random, folder: Path, gt_file: Path) -> BoardMutation:
    """A file of the board replaced by a symbolic link: to another file, or dangling. A
    board without its leaderboard.json, run.json or pr_curves/ is not whole; resamples/
    is not always there (``--resamples 0``), and a run.json is not read for figures."""
    name = rng.choice(["leaderboard.json", "pr_curves", "resamples", "run.json"])
    path = folder / name
    if path.exists():
        _remove(path)
    if rng.random() < 0.5:
        os.symlink(gt_file.resolve(), path)
        whole = False if name in ("leaderboard.json", "pr_curves") else None
        return BoardMutation(f"{name}: a symlink to the ground truth", whole)
    os.symlink(folder / "gone", path)
    return BoardMutation(f"{name}: a dangling symlink", None if name == "resamples" else False)


# --------------------------------------------------------------------------- the runs


@dataclass
class Run:
    """One command line of the fuzz (paths relative to the case folder), what it mutated
    and what its inputs are (these it must never change)."""

    argv: list[str]
    what: list[str] = field(default_factory=list)
    inputs: list[str] = field(default_factory=list)
    split: str | None = None  # the split file given, when one is
    expect: str = SAME  # the split's or groups file's TextCase.expect (SAME: clean)
    board: BoardMutation | None = None  # a --previous board mutated
    outputs: list[str] = field(default_factory=list)
    edited: str | None = None  # a rerun's edit since the outputs were made

    def option(self, name: str) -> str | None:
        return self.argv[self.argv.index(name) + 1] if name in self.argv else None


EVALUATE = ["evaluate", "--ground-truth", "gt.csv", "--predictions", "pool", "--resamples", "20"]
OUTPUTS = [".", "pool", "pubA", "privA", "boardN", "parent", "parent/official", "parent/official/x"]
PRIVATE_OUTPUTS = [".", "pool", "pubA", "privA", "out", "out/private", "parent", "parent/official"]
BOARDS = ["pubA", "privA", "boardN", "parent/official", "missing"]
NEEDED = ["0.01", "0.2", "1e-300", "5e-324", "1e400", "0", "-0.1", "nan", "inf", "x", "1"]


def evaluate_run(rng: random.Random) -> Run:
    """An evaluate command line: a split or not, groups or not, the outputs (mostly new
    folders, else the inputs, the boards, a frozen board or a folder holding one), a
    --previous and --compare-to board, and the other options, each drawn."""
    run = Run(list(EVALUATE), inputs=["gt.csv", "pool"])
    out = "out" if rng.random() < 0.7 else rng.choice(OUTPUTS)
    run.argv += ["--output", out]
    run.outputs.append(out)
    if rng.random() < 0.6:
        priv = "priv" if rng.random() < 0.7 else rng.choice(PRIVATE_OUTPUTS)
        run.argv += ["--private-queries", "split.csv", "--private-output", priv]
        run.inputs.append("split.csv")
        run.outputs.append(priv)
        run.split = "split.csv"
    if rng.random() < 0.4:
        run.argv += ["--query-groups", "groups.csv"]
        run.inputs.append("groups.csv")
    for option, share in (("--previous", 0.3), ("--compare-to", 0.25)):
        if rng.random() < share:
            board = rng.choice(BOARDS)
            run.argv += [option, board]
            run.inputs.append(board)
    for flag, share in (("--freeze", 0.15), ("--per-query", 0.15), ("--overwrite", 0.4)):
        if rng.random() < share:
            run.argv.append(flag)
    if rng.random() < 0.2:
        run.argv += ["--queries-needed", rng.choice(NEEDED)]
    return run


SPLIT_RUN = [
    *EVALUATE,
    "--private-queries",
    "split.csv",
    "--query-groups",
    "groups.csv",
    "--output",
    "pubA",
    "--private-output",
    "privA",
]
KINDS = ["split"] * 3 + ["groups"] * 2 + ["previous"] * 3 + ["compare"] * 2 + ["options"] * 3
KINDS += ["rerun"]


def draw_run(rng: random.Random, folder: Path, split: dict, groups: dict) -> Run:
    """One case in ``folder`` (a copy of the scene): its files mutated, its command line.
    ``split`` and ``groups``: the text mutations of split.csv and groups.csv."""
    kind = rng.choice(KINDS)
    if kind == "options":
        run = evaluate_run(rng)
        run.what.append("options")
        return run
    if kind == "rerun":
        return _rerun(rng, folder)
    if kind in ("split", "groups"):
        with_split = kind == "split" or rng.random() < 0.3
        run = Run([*EVALUATE, "--output", "out"], inputs=["gt.csv", "pool"], outputs=["out"])
        if with_split:
            run.argv += ["--private-queries", "split.csv", "--private-output", "priv"]
            run.inputs.append("split.csv")
            run.outputs.append("priv")
            run.split = "split.csv"
        if kind == "groups" or rng.random() < 0.3:
            run.argv += ["--query-groups", "groups.csv"]
            run.inputs.append("groups.csv")
        case = text_case(rng, split if kind == "split" else groups)
        (folder / f"{kind}.csv").write_bytes(case.data)
        run.what.append(f"{kind}.csv: {case.what}")
        run.expect = case.expect if kind == "split" else SAME
        for flag, share in (("--per-query", 0.15), ("--explain", 0.1)):
            if rng.random() < share:
                run.argv.append(flag)
        return run
    return _board_run(rng, folder, kind)


def _board_run(rng: random.Random, folder: Path, kind: str) -> Run:
    """--previous a mutated copy of a board (with the split and groups of pubA when the
    copy is pubA's), or --compare-to one (reusing boardN: no scoring)."""
    run = Run([*EVALUATE, "--output", "out"], inputs=["gt.csv", "pool"], outputs=["out"])
    if kind == "previous":
        source = rng.choice(["boardN", "boardN", "pubA"])
        if source == "pubA":
            run.argv += ["--private-queries", "split.csv", "--private-output", "priv"]
            run.argv += ["--query-groups", "groups.csv"]
            run.inputs += ["split.csv", "groups.csv"]
            run.outputs.append("priv")
            run.split = "split.csv"
        copy, option = "prevM", "--previous"
    else:
        source = rng.choice(["pubA", "boardN", "parent/official", "privA"])
        run.argv += ["--previous", "boardN"]
        run.inputs.append("boardN")
        copy, option = "cmpM", "--compare-to"
    shutil.copytree(folder / source, folder / copy, symlinks=True)
    mutation = mutate_board(rng, folder / copy, folder / "gt.csv")
    run.argv += [option, copy]
    run.inputs.append(copy)
    run.what.append(f"{option} {copy} (a copy of {source}): {mutation.what}")
    if kind == "previous":
        run.board = mutation
    return run


def _rerun(rng: random.Random, folder: Path) -> Run:
    """The scene's split run again, without --overwrite, after an edit (or none): an
    input's content changed in place, or an output deleted."""
    run = Run(list(SPLIT_RUN), inputs=["gt.csv", "pool", "split.csv", "groups.csv"])
    run.outputs, run.split = ["pubA", "privA"], "split.csv"
    edit = rng.choice(["nothing", "split.csv edited", "groups.csv edited", "privA deleted"])
    run.what.append(f"rerun, {edit}")
    if edit == "split.csv edited":  # one private query made public: another split
        text = (folder / "split.csv").read_text().splitlines()
        (folder / "split.csv").write_text("\n".join(text[:-1]) + "\n")
        run.expect = ANY
    elif edit == "groups.csv edited":  # the same queries, a group renamed
        path = folder / "groups.csv"
        path.write_text(path.read_text().replace(",b\n", ",c\n"))
    elif edit == "privA deleted":
        shutil.rmtree(folder / "privA")
    run.edited = None if edit == "nothing" else edit
    return run


FREEZE_OUTPUTS = ["frozen2", "frozen2", "frozen2", "parent/official/copy", "pubA", "parent", "out"]


def freeze_run(rng: random.Random, folder: Path) -> Run:
    """``freeze --board`` a mutated copy of a board (or a clean one), to a new folder or
    not."""
    source = rng.choice(["pubA", "privA", "boardN", "parent/official"])
    shutil.copytree(folder / source, folder / "boardM", symlinks=True)
    mutation = (
        mutate_board(rng, folder / "boardM", folder / "gt.csv")
        if rng.random() < 0.85
        else BoardMutation("clean", whole=True)
    )
    out = rng.choice(FREEZE_OUTPUTS)
    run = Run(["freeze", "--board", "boardM", "--output", out], inputs=["boardM"], outputs=[out])
    run.what.append(f"freeze a copy of {source}: {mutation.what}")
    run.board = mutation
    return run
