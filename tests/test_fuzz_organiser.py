"""A fuzzer for the organiser's inputs (issue 44), beside the one of every submission
format (``tests/test_fuzz.py``): split files (``--private-queries``), groups files
(``--query-groups``), board folders (leaderboard.json/.csv, run.json, resamples/*.npy,
pr_curves/, FROZEN.json, _SUCCESS; symlinks) read by ``--previous``, ``--compare-to`` and
``freeze --board``, and combinations of the board options (``tests/organiser_fuzz.py``
draws them). Every outcome is one of:

* the right result: exit 0, the outputs whole, the inputs byte for byte as they were, no
  frozen board touched, nothing private in the published folder (no private query, no
  private figure, not the split file's plain SHA-256), and where the inputs mean what the
  clean ones mean, the clean boards' figures; a rerun after an input changed is not "up
  to date";
* or one line, exit 2 (``InputError`` for a reader): naming the file or option, with no
  invisible character, and nothing written or changed anywhere.

Three parts: the split and groups readers called directly (``READS`` cases each, no
Spark), ``freeze --board`` on mutated boards (``FREEZES`` cases, no Spark) and the
command end to end on a shared SparkSession (``RUNS`` cases), on copies of one scene
built once: a 40-query ground truth, three submissions, a split, a groups file, the
public and private boards of a split run, a board without a split and a frozen copy.
``DISC21SPARK_FUZZ_SEED`` (default 25), ``DISC21SPARK_ORGANISER_READS`` (300),
``DISC21SPARK_ORGANISER_FREEZES`` (40), ``DISC21SPARK_ORGANISER_RUNS`` (24); ``make
fuzz`` runs more. Every failure of a run is listed at its end; the counts are printed
(``-s``).
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from disc21spark.core.errors import InputError
from disc21spark.matching.stats.groups_file import read_query_groups
from disc21spark.pool.split import read_split
from tests.helpers import gt_csv, make_gt, random_submission
from tests.organiser_fuzz import (
    ANY,
    EVALUATE,
    SAME,
    SPLIT_RUN,
    Run,
    draw_run,
    freeze_run,
    split_mutations,
    text_case,
    text_mutations,
)
from tests.running import NoCapture, in_process

SEED = int(os.environ.get("DISC21SPARK_FUZZ_SEED", "25"))
READS = int(os.environ.get("DISC21SPARK_ORGANISER_READS", "300"))
FREEZES = int(os.environ.get("DISC21SPARK_ORGANISER_FREEZES", "40"))
RUNS = int(os.environ.get("DISC21SPARK_ORGANISER_RUNS", "24"))
GT = make_gt(40, 25)
IDS = [str(q) for q in GT.query_ids]
POSITIVES = [str(q) for q in GT.positive_queries]
PRIVATE = sorted(random.Random(7).sample(IDS, 16))
FIGURES = ("status", "micro_ap", "micro_ap_low", "micro_ap_high", "recall_at_p90", "n_predictions")
BASELINE = SPLIT_RUN
FREEZE_A = ["freeze", "--board", "pubA", "--output", "parent/official"]
FROZEN = ["parent/official"]
PATH_OPTIONS = {
    "--ground-truth",
    "--predictions",
    "--output",
    "--private-queries",
    "--private-output",
    "--query-groups",
    "--previous",
    "--compare-to",
    "--board",
}
TRACES = ("Traceback (most recent call last)", "internal error", "Py4JJavaError", "\tat org.")


def split_text(ids: list[str]) -> str:
    return "query_id\n" + "".join(f"{q}\n" for q in ids)


def groups_text() -> str:
    """Groups a and b over the queries, and ``secretgroup``: four private queries alone."""
    hidden = set(PRIVATE[:4])
    rows = [f"{q},{'secretgroup' if q in hidden else 'ab'[i % 2]}" for i, q in enumerate(IDS)]
    return "query_id,group\n" + "".join(f"{r}\n" for r in rows)


# ------------------------------------------------------------------------------ verdicts


def one_line(message: str) -> str | None:
    """Why ``message`` is not one readable line (None: it is)."""
    if not message.replace("\t", " ").isprintable():
        bad = sorted({repr(c) for c in message if not c.replace("\t", " ").isprintable()})
        return f"not one printable line ({', '.join(bad)} inside)"
    return None


def read_verdict(
    read: Callable[[], object], path: Path, case, same: Callable[[object], bool]
) -> str | None:
    """A reader's outcome against the oracle: None when right, else what went wrong."""
    try:
        found = read()
    except InputError as exc:
        message = str(exc)
        if not message.startswith(f"{path}: "):
            return f"InputError not naming the file: {message[:300]!r}"
        if one_line(message):
            return f"InputError {one_line(message)}: {message[:300]!r}"
        if case.expect == SAME:
            return f"refused a file meaning the clean one: {message[:300]!r}"
        return None
    except Exception as exc:  # noqa: BLE001 (the verdict: anything else is a bug)
        return f"{type(exc).__name__}: {str(exc)[:300]}"
    if case.expect != ANY and not same(found):
        return "read a file meaning the clean one differently"
    return None


def reader_cases(tmp_path: Path, name: str, mutations: dict, read, same) -> tuple[int, list]:
    rng = random.Random(f"{SEED}-{name}")
    failures, counts = [], {}
    for i in range(READS):
        case = text_case(rng, mutations)
        counts[case.what] = counts.get(case.what, 0) + 1
        path = tmp_path / f"{name}{i:04d}.csv"
        path.write_bytes(case.data)
        wrong = read_verdict(lambda p=path: read(str(p), GT), path, case, same)
        if wrong:
            key = f"{case.what}: {wrong.split(':')[0]}"
            failures.append((key, f"{name} case {i} ({case.what}, {case.data[:60]!r}…): {wrong}"))
        path.unlink()
    print(
        f"\norganiser fuzz ({name} reader): {READS} cases, seed {SEED}: {len(failures)} wrong; "
        f"{dict(sorted(counts.items()))}"
    )
    return READS, distinct(failures)


def distinct(failures: list[tuple[str, str]]) -> list[str]:
    """One failure of each kind (its first case), with how many cases had it."""
    seen: dict[str, list] = {}
    for key, text in failures:
        seen.setdefault(key, [text, 0])[1] += 1
    shown = dict.fromkeys(text for text, _ in seen.values())  # a case wrong in two ways: once
    for text, n in seen.values():
        shown[text] = f"{shown[text] or ''} [{n} case(s) of this kind]"
    return [f"{text}{counts}" for text, counts in shown.items()]


def test_fuzz_split_files_through_the_reader(tmp_path):
    clean = read_split(str(_written(tmp_path / "clean.csv", split_text(PRIVATE))), GT)
    mutations = split_mutations(split_text(PRIVATE), IDS, POSITIVES)
    _, failures = reader_cases(
        tmp_path, "split", mutations, read_split, lambda s: (s.private == clean.private).all()
    )
    assert not failures, "\n".join(failures)


def test_fuzz_groups_files_through_the_reader(tmp_path):
    clean = read_query_groups(str(_written(tmp_path / "clean.csv", groups_text())), GT)

    def same(g) -> bool:
        return g.names == clean.names and (g.codes == clean.codes).all()

    mutations = text_mutations(groups_text(), IDS, "Q999")
    _, failures = reader_cases(tmp_path, "groups", mutations, read_query_groups, same)
    assert not failures, "\n".join(failures)


def _written(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# ------------------------------------------------------------------------------- the scene


def projection(board: Path) -> dict:
    """Each submission's status and figures on the board in ``board`` (its error, as
    text, when it holds no readable board)."""
    try:
        doc = json.loads((board / "leaderboard.json").read_text())
    except (OSError, ValueError) as exc:
        return {"no board": str(exc)}
    return {r["submission"]: tuple(r.get(k) for k in FIGURES) for r in doc["submissions"]}


def tree(folder: Path) -> dict[str, object]:
    """Every entry under ``folder`` (itself included): a file's bytes, a folder's None, a
    symbolic link's target."""
    out: dict[str, object] = {}
    if not (folder.exists() or folder.is_symlink()):
        return out
    stack = [folder]
    while stack:
        path = stack.pop()
        key = str(path.relative_to(folder))
        if path.is_symlink():
            out[key] = ("link", os.readlink(path))
        elif path.is_dir():
            out[key] = None
            stack.extend(sorted(path.iterdir()))
        else:
            out[key] = path.read_bytes()
    return out


@pytest.fixture(scope="module")
def scene(spark, tmp_path_factory) -> dict:
    """The folder every case copies: gt.csv, pool/ (three submissions), split.csv,
    groups.csv; pubA/ and privA/ (a split run with the groups), boardN/ (no split) and
    parent/official/ (pubA frozen); and what the right results are."""
    import numpy as np

    root = tmp_path_factory.mktemp("organiser") / "scene"
    root.mkdir()
    gt_csv(root / "gt.csv", GT)
    rng = np.random.default_rng(7)
    (root / "pool").mkdir()
    for i in range(3):
        random_submission(rng, GT, 200, 9).to_csv(root / "pool" / f"team{i}.csv", index=False)
    (root / "split.csv").write_text(split_text(PRIVATE))
    (root / "groups.csv").write_text(groups_text())
    (root / "parent").mkdir()
    for argv in (BASELINE, [*EVALUATE, "--output", "boardN"], FREEZE_A):
        screen = in_process([*absolute(argv, root), "--quiet"], NoCapture(), spark)
        assert screen.code == 0, (argv, screen.text[-3000:])
    secret = private_figures(root)
    assert secret, "the private board's figures are all public ones too"
    return {
        "root": root,
        "public": {True: projection(root / "pubA"), False: projection(root / "boardN")},
        "private": projection(root / "privA"),
        "secret": secret,
    }


def absolute(argv: list[str], folder: Path) -> list[str]:
    """``argv`` with every path option's value under ``folder``."""
    out = list(argv)
    for i, arg in enumerate(argv[:-1]):
        if arg in PATH_OPTIONS:
            out[i + 1] = str(folder / argv[i + 1])
    return out


def private_figures(root: Path) -> set[str]:
    """The private board's μAPs as written (repr, 6 digits) found in no public file."""
    doc = json.loads((root / "privA" / "leaderboard.json").read_text())
    found = set()
    for r in doc["submissions"]:
        if r["micro_ap"] is not None:
            found |= {repr(r["micro_ap"]), f"{r['micro_ap']:.6f}"}
    public = b"".join(
        p.read_bytes() for b in ("pubA", "boardN") for p in (root / b).rglob("*") if p.is_file()
    )
    return {f for f in found if f.encode() not in public}


def case_folder(scene: dict, folder: Path) -> Path:
    """A copy of the scene whose boards' records name the copy (as if made there: a
    rerun there is up to date)."""
    shutil.copytree(scene["root"], folder, symlinks=True)
    for path in folder.rglob("*.json"):
        path.write_text(path.read_text().replace(str(scene["root"]), str(folder)))
    return folder


# ----------------------------------------------------------------------------- the oracle


def command_verdict(run: Run, folder: Path, screen, before: dict, scene: dict) -> list[str]:
    """What is wrong with a run's outcome (empty: the right result or one line, exit 2)."""
    text = screen.text
    errors = error_lines(text)
    wrong = [f"a trace or internal error on screen: {t!r}" for t in TRACES if t in text]
    if screen.code not in (0, 2):
        wrong.append(f"exit {screen.code}")
    if screen.code == 2:
        named = [a for a in absolute(run.argv, folder) if a.startswith(("--", str(folder)))]
        if len(errors) != 1:
            wrong.append(f"{len(errors)} error lines")
        elif one_line(errors[0]) or not any(n in errors[0] for n in named):
            wrong.append("the error line names no file or option, or is not one printable line")
        changed = changes(before, tree(folder))
        if changed:
            wrong.append(f"exit 2, yet files changed: {changed[:6]}")
    elif screen.code == 0:
        wrong += [f"an error line with exit 0: {e[:200]!r}" for e in errors]
        wrong += right_result(run, folder, before, scene)
    return wrong


def error_lines(text: str) -> list[str]:
    """The error lines on screen: ours, and argparse's (``disc21spark evaluate: error:``)."""
    return [
        line
        for line in text.splitlines()
        if line.startswith(("error:", "internal error:")) or ": error: " in line
    ]


def within(key: str, folder: str) -> bool:
    """Whether the entry ``key`` of a ``tree`` is ``folder`` or under it ("." or "": all)."""
    return folder in ("", ".") or key == folder or key.startswith(folder + "/")


def changes(before: dict, after: dict, under: str = "") -> list[str]:
    keys = {k for k in {*before, *after} if within(k, under)}
    return sorted(k for k in keys if before.get(k, "absent") != after.get(k, "absent"))


def right_result(run: Run, folder: Path, before: dict, scene: dict) -> list[str]:
    """An exit 0's checks: outputs whole, inputs and frozen boards untouched, nothing
    else changed, nothing private published, the clean figures where they are known."""
    after = tree(folder)
    if "--explain" in run.argv:  # nothing written, and the files it reads are good ones
        return explained(run, folder, before, after)
    wrong = [
        f"{o}: no _SUCCESS after exit 0"
        for o in run.outputs
        if o not in after
        or (run.argv[0] == "evaluate" and f"{o}/_SUCCESS".lstrip("./") not in after)
    ]
    for name in {*run.inputs, *FROZEN}:
        if name in before and changes(before, after, name):
            wrong.append(
                f"{name} (read by the run, or frozen) changed: {changes(before, after, name)[:4]}"
            )
    outside = [k for k in changes(before, after) if not any(within(k, o) for o in run.outputs)]
    if outside:
        wrong.append(f"changed outside the outputs: {outside[:4]}")
    if run.argv[0] != "evaluate" or wrong:
        return wrong
    return wrong + published(run, folder, after, scene) + figures(run, folder, before, scene)


def explained(run: Run, folder: Path, before: dict, after: dict) -> list[str]:
    wrong = [f"--explain changed {changes(before, after)[:4]}"] if changes(before, after) else []
    for option, read in (("--private-queries", read_split), ("--query-groups", read_query_groups)):
        if run.option(option):
            try:
                read(str(folder / run.option(option)), GT)
            except Exception as exc:  # noqa: BLE001 (InputError, or a reader's own bug)
                wrong.append(f"--explain exits 0 on a bad {option} file ({str(exc)[-80:]})")
    return wrong


def published(run: Run, folder: Path, after: dict, scene: dict) -> list[str]:
    """Nothing of the private board in the --output folder."""
    out = run.option("--output")
    files = {k: v for k, v in after.items() if within(k, out) and isinstance(v, bytes)}
    needles = {f: f"a private μAP {f}" for f in scene["secret"]}
    if run.split and run.expect != ANY:
        needles |= {q: f"the private query {q}" for q in PRIVATE} | {
            "secretgroup": "the private group"
        }
    if run.split and run.split in before_bytes(folder, run):
        needles[hashlib.sha256(before_bytes(folder, run)[run.split]).hexdigest()] = (
            "the split file's plain SHA-256"
        )
    return [
        f"published {why} in {name}"
        for name, data in files.items()
        for needle, why in needles.items()
        if needle.encode() in data
    ]


def before_bytes(folder: Path, run: Run) -> dict:
    path = folder / run.split
    return {run.split: path.read_bytes()} if path.is_file() else {}


def figures(run: Run, folder: Path, before: dict, scene: dict) -> list[str]:
    """The clean boards' figures, when the inputs mean the clean ones; a rerun after an
    edit is no stale output."""
    wrong = []
    if run.edited and all(changes(before, tree(folder), o) == [] for o in run.outputs):
        wrong.append(f"exit 0 with the outputs as they were after {run.edited}: stale")
    if run.split:
        wrong += positives(folder / run.split)
    if run.expect == ANY or (run.board is not None and not run.board.values):
        return wrong
    out, split = run.option("--output"), run.split is not None
    if projection(folder / out) != scene["public"][split]:
        wrong.append(f"{out}: not the clean board's figures")
    if split and projection(folder / run.option("--private-output")) != scene["private"]:
        wrong.append(f"{run.option('--private-output')}: not the clean private board's figures")
    return wrong


def positives(split: Path) -> list[str]:
    """A board without a positive pair is no board: a run that scored one is wrong."""
    try:
        private = read_split(str(split), GT).private
    except Exception:  # noqa: BLE001 (the readers' own test judges the file)
        return []
    hidden = {str(q) for q in GT.query_ids[private]}
    on = {
        name: [q for q in POSITIVES if (q in hidden) == (name == "private")]
        for name in ("public", "private")
    }
    return [
        f"scored the {name} board, which has no positive pair" for name, q in on.items() if not q
    ]


def freeze_verdict(run: Run, folder: Path, screen) -> list[str]:
    """freeze's own right result: a whole board copied byte for byte, FROZEN.json added."""
    board, out = folder / run.option("--board"), folder / run.option("--output")
    if screen.code != 0:
        return []
    if run.board.whole is False:
        return [f"froze a board that is not whole ({run.board.what})"]
    copy, source = tree(out), tree(board)
    copy.pop("FROZEN.json", None)  # a frozen board copied is frozen anew
    source.pop("FROZEN.json", None)
    return [] if copy == source else ["the frozen copy is not the board byte for byte"]


def run_case(run: Run, folder: Path, scene: dict, capsys, session) -> list[tuple[str, str]]:
    """The case run and judged: (the kind of each thing wrong, the case told in full)."""
    before = tree(folder)
    capsys.readouterr()  # the screen is this command's alone
    screen = in_process([*absolute(run.argv, folder), "--quiet"], capsys, session)
    wrong = command_verdict(run, folder, screen, before, scene)
    if run.argv[0] == "freeze" and not wrong:
        wrong = freeze_verdict(run, folder, screen)
    err = screen.err.splitlines()
    last = max((i for i, line in enumerate(err) if error_lines(line)), default=None)
    if last is not None and any(line.strip() for line in err[last + 1 :]):
        wrong.append("the error line is followed by more text")
    told = (
        f"{'; '.join(run.what)}: `{' '.join(run.argv)}`: exit {screen.code}: {'; '.join(wrong)}"
        f"\n    screen: {screen.text.strip()[-400:]!r}"
    )
    internal = re.search(r"internal error: (\w+)", screen.text)
    if internal:  # one kind per exception and input
        return [(f"{internal.group(1)} {run.what[0][:60]}", told)]
    return [(re.sub(r"\d", "#", w[:48]), told) for w in wrong]


def fuzz(tmp_path: Path, scene: dict, capsys, session, count: int, draw, name: str) -> list[str]:
    """``count`` cases drawn by ``draw(rng, folder)``, each in a copy of the scene; every
    kind of failure told (its first case), with how many cases had it."""
    rng = random.Random(f"{SEED}-{name}")
    failures, kinds = [], {}
    for i in range(count):
        folder = case_folder(scene, tmp_path / f"case{i:03d}")
        run = draw(rng, folder)
        found = run_case(run, folder, scene, capsys, session)
        failures += [(key, f"{name} case {i}: {told}") for key, told in found]
        kind = run.what[0].split(":")[0].split(" (")[0]
        kinds[kind] = kinds.get(kind, 0) + 1
        shutil.rmtree(folder, ignore_errors=True)
    wrong = {told for _, told in failures}
    with capsys.disabled():  # not on the next command's screen
        print(
            f"\norganiser fuzz ({name}): {count} cases, seed {SEED}: {len(wrong)} wrong; "
            f"{dict(sorted(kinds.items()))}"
        )
    return distinct(failures)


def test_fuzz_freeze_and_the_board_options_end_to_end(spark, scene, tmp_path, capsys):
    """One test, so that the scene is built once per pytest-xdist worker: ``freeze
    --board`` (no Spark), then ``evaluate`` on the shared session."""
    failures = fuzz(tmp_path / "freeze", scene, capsys, None, FREEZES, freeze_run, "freeze")
    split = split_mutations(split_text(PRIVATE), IDS, POSITIVES)
    groups = text_mutations(groups_text(), IDS, "Q999")

    def draw(rng: random.Random, folder: Path) -> Run:
        return draw_run(rng, folder, split, groups)

    failures += fuzz(tmp_path / "commands", scene, capsys, spark, RUNS, draw, "commands")
    assert not failures, "\n".join(failures)


def test_the_draws_are_seeded(tmp_path):
    split = split_mutations(split_text(PRIVATE), IDS, POSITIVES)
    first = [text_case(random.Random(5), split) for _ in range(3)]
    assert first == [text_case(random.Random(5), split) for _ in range(3)]
    assert {text_case(random.Random(i), split).what for i in range(400)} == set(split)
