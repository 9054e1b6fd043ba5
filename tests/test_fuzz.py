"""A fuzzer for every input format (issue 25): seeded mutations of valid files — bit flips,
truncation, inserted and deleted bytes, a changed length field, a changed header — fed to
the real commands. Whatever the bytes, a run ends in a verdict: exit 0 with a complete
output, or exit 2 with one ``error:`` line; never exit 1, never a trace, nothing written
outside --output.

* the matching track (predictions and ground truth as CSV, ``.csv.gz``, Parquet) on the
  in-process engine, as many cases as fit in ``DISC21SPARK_FUZZ_SECONDS`` (default 30);
  a sample of them (``DISC21SPARK_FUZZ_SPARK``, default 6) again on Spark: the same
  verdict, exit code and error line;
* the descriptor track (HDF5, ``.npy``) and images (``make-queries --images``), which
  run on Spark only: a few cases each (the same sample size).

``make fuzz`` runs the long fuzz (``DISC21SPARK_FUZZ_SECONDS=600``, a larger sample);
``DISC21SPARK_FUZZ_SEED`` sets the seed. Counts are printed (``-s``). The byte-level
mutations live in ``tests/mutations.py`` (the organiser's fuzzer,
``tests/test_fuzz_organiser.py``, uses them too); the header's is this file's.
"""

from __future__ import annotations

import gzip
import io
import os
import random
import re
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tests import bad_inputs as shared
from tests.mutations import BYTES, mutate_with
from tests.running import in_process

SEED = int(os.environ.get("DISC21SPARK_FUZZ_SEED", "25"))
SECONDS = float(os.environ.get("DISC21SPARK_FUZZ_SECONDS", "30"))
SPARK_SAMPLE = int(os.environ.get("DISC21SPARK_FUZZ_SPARK", "6"))
HEADERS = [
    b"query_id,reference_id,score\n",
    b"query_id,reference_id\n",
    b"query,ref,score\n",
    b"query_id,reference_id,score,extra\n",
    b"score,query_id,reference_id\n",
    b"",
]


# ----------------------------------------------------------------------------- mutations


def header(rng: random.Random, data: bytes) -> bytes:
    """The first line replaced (CSV): another header, or none."""
    rest = data.split(b"\n", 1)[1] if b"\n" in data else b""
    return rng.choice(HEADERS) + rest


MUTATIONS: dict[str, Callable[[random.Random, bytes], bytes]] = {**BYTES, "header": header}


def mutate(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    return mutate_with(MUTATIONS, rng, data)


# ------------------------------------------------------------------------- valid inputs


KINDS = ["p.csv", "p.csv.gz", "p.csv.gz", "p.parquet", "gt.csv"]  # .gz twice: text, bytes


def matching_case(rng: random.Random, kind: str | None = None) -> tuple[str, dict[str, bytes], str]:
    """(what was done, the case's files, the predictions' name): one mutated file, of
    ``kind`` (a name of KINDS) or one drawn."""
    kind = kind or rng.choice(KINDS)
    valid = {"p.csv": (shared.HEADER + shared.CLEAN).encode(), "gt.csv": shared.GT.encode()}
    case = dict(valid)
    preds = "p.csv" if kind == "gt.csv" else kind
    if kind == "p.csv.gz":
        del case["p.csv"]
        text_first = rng.random() < 0.5  # mutate the text, or the compressed bytes
        what, data = mutate(
            rng, valid["p.csv"] if text_first else gzip.compress(valid["p.csv"], mtime=0)
        )
        case[kind] = gzip.compress(data, mtime=0) if text_first else data
        what = f"{'text' if text_first else 'gzip'} {what}"
    elif kind == "p.parquet":
        del case["p.csv"]
        what, case[kind] = mutate(rng, shared.parquet_bytes())
    else:
        what, case[kind] = mutate(rng, valid[kind])
    return f"{kind}: {what}", case, preds


def write_case(folder: Path, files: dict[str, bytes]) -> None:
    folder.mkdir(parents=True)
    for name, data in files.items():
        (folder / name).write_bytes(data)


# ---------------------------------------------------------------------------- verdicts


def verdict(folder: Path, screen, what: str) -> tuple[int, str]:
    """(exit code, the error line with the case folder as ``{d}``) after the checks every
    case passes."""
    where = f"{what}\n{screen.text[-3000:]}"
    assert screen.code in (0, 2), f"exit {screen.code}: {where}"
    assert "Traceback" not in screen.text and "internal error" not in screen.text, where
    errors = [line for line in screen.text.splitlines() if line.startswith("error:")]
    names = {p.name for p in folder.iterdir()}
    if screen.code == 0:
        assert errors == [] and (folder / "out" / "_SUCCESS").exists(), where
    else:
        assert len(errors) == 1, where
        assert "out" not in names, f"a failed run left an output: {where}"
    assert not [n for n in names if n.startswith(".")], f"debris beside the output: {where}"
    return screen.code, errors[0].replace(str(folder), "{d}") if errors else ""


def evaluate_args(folder: Path, preds: str, engine: str) -> list[str]:
    return [
        "evaluate",
        "--ground-truth",
        str(folder / "gt.csv"),
        "--predictions",
        str(folder / preds),
        "--output",
        str(folder / "out"),
        "--engine",
        engine,
    ]


LOCAL_REFUSES = re.compile(r"use --engine spark")


def matching_cases(tmp: Path, capsys, budget: float) -> list[tuple]:
    """Cases on the in-process engine until ``budget`` seconds are spent: each one's
    description, folder, predictions' name and verdict."""
    rng = random.Random(SEED)
    done, deadline = [], time.monotonic() + budget
    while time.monotonic() < deadline:
        what, files, preds = matching_case(rng)
        folder = tmp / f"case{len(done):05d}"
        write_case(folder, files)
        screen = in_process(evaluate_args(folder, preds, "local"), capsys, None)
        done.append((what, folder, preds, verdict(folder, screen, what)))
    return done


def test_fuzz_matching_inputs_on_the_in_process_engine(tmp_path, capsys):
    cases = matching_cases(tmp_path, capsys, SECONDS)
    codes = [v[0] for *_, v in cases]
    kinds: dict[str, int] = {}
    for what, *_ in cases:  # "p.csv.gz: gzip flip": the file, and for .gz what was mutated
        kind = what.split(":")[0] + (f" ({what.split()[1]})" if what.startswith("p.csv.gz") else "")
        kinds[kind] = kinds.get(kind, 0) + 1
    print(
        f"\nfuzz (in process): {len(cases)} cases, seed {SEED}: {codes.count(0)} exit 0, "
        f"{codes.count(2)} exit 2; per file: {dict(sorted(kinds.items()))}"
    )
    assert len(cases) >= 10 and codes.count(2) > 0


# ------------------------------------------------------------------------------ on Spark


def test_fuzz_sample_gives_the_same_verdict_on_spark(spark, tmp_path, capsys):
    """Cases made as the in-process fuzz makes them (the same seed), on both engines, each
    file kind in turn (plain CSV, .csv.gz, Parquet, the ground truth): the same exit code
    and the same error line, word for word. Parquet's reason is ours on both engines
    (``core/damage.py``), not Arrow's or parquet-mr's."""
    rng = random.Random(SEED)
    compared: dict[str, int] = {}
    for i in range(SPARK_SAMPLE * 3):
        kind = KINDS[sum(compared.values()) % len(KINDS)]
        what, files, preds = matching_case(rng, kind)
        folders = {e: tmp_path / e / f"case{i:03d}" for e in ("local", "spark")}
        for folder in folders.values():
            write_case(folder, files)
        local = verdict(
            folders["local"],
            in_process(evaluate_args(folders["local"], preds, "local"), capsys, None),
            what,
        )
        if LOCAL_REFUSES.search(local[1]):
            continue  # not one for the in-process engine: nothing to compare
        on_spark = verdict(
            folders["spark"],
            in_process(evaluate_args(folders["spark"], preds, "spark"), capsys, spark),
            what,
        )
        assert on_spark == local, f"{what}: local {local} vs Spark {on_spark}"
        compared[kind] = compared.get(kind, 0) + 1
        if sum(compared.values()) == SPARK_SAMPLE:
            break
    print(
        f"\nfuzz (Spark sample): {sum(compared.values())} cases compared, seed {SEED}: {compared}"
    )
    assert sum(compared.values()) >= min(SPARK_SAMPLE, 3)


def h5_bytes(ids: list[str], vectors: np.ndarray) -> bytes:
    import h5py

    out = io.BytesIO()
    with h5py.File(out, "w") as f:
        f.create_dataset("vectors", data=vectors.astype(np.float32))
        f.create_dataset("image_names", data=np.array(ids, dtype=object), dtype=h5py.string_dtype())
    return out.getvalue()


def npy_bytes(vectors: np.ndarray) -> bytes:
    out = io.BytesIO()
    np.save(out, vectors.astype(np.float32))
    return out.getvalue()


def descriptor_case(rng: random.Random, fmt: str) -> tuple[str, dict[str, bytes], list[str]]:
    """One mutated descriptor file of ``fmt`` (h5 or npy), the query's or the reference's."""
    files = {"gt.csv": b"Q1,R1\nQ2,R2\nQ3,\nQ4,R4\n"}
    if fmt == "h5":
        files |= {
            "q.h5": h5_bytes(shared.QIDS, shared.XQ),
            "r.h5": h5_bytes(shared.RIDS, shared.XB),
        }
    else:
        files |= {
            "q.npy": npy_bytes(shared.XQ),
            "q_ids.txt": "\n".join(shared.QIDS).encode() + b"\n",
            "r.npy": npy_bytes(shared.XB),
            "r_ids.txt": "\n".join(shared.RIDS).encode() + b"\n",
        }
    target = rng.choice([f"q.{fmt}", f"r.{fmt}"])
    what, files[target] = mutate(rng, files[target])
    return f"{target}: {what}", files, [f"q.{fmt}", f"r.{fmt}"]


# found by this fuzzer, then mended: a corrupt HDF5 object header was an internal error
# (KeyError 'message not aligned'); descriptors/files.HDF5_DAMAGE now names the file
def test_fuzz_descriptor_files_on_spark(spark, tmp_path, capsys):
    rng = random.Random(SEED)
    codes = []
    for i in range(SPARK_SAMPLE):
        what, files, (q, r) = descriptor_case(rng, ("h5", "npy")[i % 2])  # both, in turn
        folder = tmp_path / f"case{i:03d}"
        write_case(folder, files)
        args = [
            "evaluate",
            "--ground-truth",
            str(folder / "gt.csv"),
            "--query-descriptors",
            str(folder / q),
            "--reference-descriptors",
            str(folder / r),
            "--knn",
            "2",
            "--output",
            str(folder / "out"),
        ]
        codes.append(verdict(folder, in_process(args, capsys, spark), what)[0])
    print(f"\nfuzz (descriptors, Spark): {len(codes)} cases: {codes}")


def test_fuzz_images_on_spark(spark, tmp_path, capsys):
    """One mutated PNG or JPEG among good images: skipped with a reason, or used."""
    rng = random.Random(SEED)
    codes = []
    for i in range(SPARK_SAMPLE):
        fmt = ("PNG", "JPEG")[i % 2]  # both, in turn
        what, data = mutate(rng, shared.image_bytes(shared.picture(50 + i), fmt))
        folder = tmp_path / f"case{i:03d}"
        write_case(folder, {})
        (folder / "lib").mkdir()
        for k in range(4):
            (folder / "lib" / f"good_{k}.png").write_bytes(shared.image_bytes(shared.picture(k)))
        (folder / "lib" / f"odd.{fmt.lower()}").write_bytes(data)
        args = [
            "make-queries",
            "--images",
            str(folder / "lib"),
            "--output",
            str(folder / "out"),
            "--tests",
            "crop:50",
            "--queries-per-test",
            "2",
            "--seed",
            "1",
        ]
        codes.append(verdict(folder, in_process(args, capsys, spark), f"{fmt} {what}")[0])
    print(f"\nfuzz (images, Spark): {len(codes)} cases: {codes}")


def test_mutations_are_seeded_and_change_the_bytes():
    data = (shared.HEADER + shared.CLEAN).encode()
    first = [mutate(random.Random(7), data) for _ in range(3)]
    assert first == [mutate(random.Random(7), data) for _ in range(3)]
    rng = random.Random(3)
    assert sum(MUTATIONS[name](rng, data) != data for name in MUTATIONS for _ in range(5)) > 20


def test_a_parquet_id_whose_bytes_are_not_utf8_is_refused_naming_its_row(tmp_path, capsys):
    """Found by the fuzz (seed 25, case 3675, a flipped bit in a data page): Arrow does not
    check a page's strings, and the id was an internal error (UnicodeDecodeError)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = [line.split(",") for line in shared.CLEAN.splitlines()]
    out = io.BytesIO()  # plain pages, uncompressed: the ids' bytes as they are
    pq.write_table(
        pa.table(
            {
                "query_id": [r[0] for r in rows],
                "reference_id": [r[1] for r in rows],
                "score": [float(r[2]) for r in rows],
            }
        ),
        out,
        compression="none",
        use_dictionary=False,
        write_statistics=False,
    )
    data = out.getvalue()
    at = data.index(b"QX")  # row 4's query id, in the data page
    write_case(
        tmp_path / "c",
        {"gt.csv": shared.GT.encode(), "p.parquet": data[:at] + b"\xd1" + data[at + 1 :]},
    )
    screen = in_process(evaluate_args(tmp_path / "c", "p.parquet", "local"), capsys, None)
    assert verdict(tmp_path / "c", screen, "not UTF-8") == (
        2,
        "error: {d}/p.parquet: row query_id='\ufffdX', reference_id='R4': not UTF-8 text "
        "(an id's bytes are not UTF-8)",
    )


# ------------------------------------------------------------------- one enormous line

BOMB_BYTES = 1536 * 2**20  # one line of 1.5 GB, in about 1.5 MB of gzip
MEMORY_BOUND = 512 * 2**20  # what the refusal may take, Python and Arrow included


def gzip_bomb(path: Path) -> None:
    with (
        open(path, "wb") as raw,
        gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, compresslevel=1) as gz,
    ):
        gz.write(b"Q1,R1,")
        chunk = b"9" * 2**24
        for _ in range(BOMB_BYTES // len(chunk)):
            gz.write(chunk)
        gz.write(b"\n")


def test_a_gzip_bomb_is_refused_in_one_line_and_bounded_memory(tmp_path):
    """One 1.5 GB line in 1.5 MB: refused naming the file and line, the whole process
    staying under MEMORY_BOUND (it peaked at 5.4 GB, with Arrow's internals as message)."""
    import subprocess
    import sys

    from tests.conftest import ROOT, cli_env

    gzip_bomb(tmp_path / "p.csv.gz")
    (tmp_path / "gt.csv").write_text(shared.GT)
    args = evaluate_args(tmp_path, "p.csv.gz", "local")[1:]
    # a launcher of its own: its children's peak memory is the job's alone
    measure = (
        "import resource, subprocess, sys; code = subprocess.call(sys.argv[1:]); "
        "print('maxrss', resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss); "
        "sys.exit(code)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", measure, sys.executable, str(ROOT / "jobs" / "evaluate.py"), *args],
        capture_output=True,
        text=True,
        env=cli_env(),
        timeout=300,
    )
    text = proc.stdout + proc.stderr
    assert proc.returncode == 2, text
    assert [line for line in text.splitlines() if line.startswith("error:")] == [
        f"error: {tmp_path / 'p.csv.gz'}: line 1: longer than 1,048,576 characters (not a "
        "line of predictions)"
    ]
    peak = int(re.search(r"^maxrss (\d+)$", proc.stdout, re.M).group(1)) * 1024  # KiB on Linux
    print(f"\ngzip bomb refused, peak memory {peak / 2**20:.0f} MiB")
    assert peak < MEMORY_BOUND
    assert sorted(p.name for p in tmp_path.iterdir()) == ["gt.csv", "p.csv.gz"]


@pytest.mark.skipif(SECONDS < 300, reason="make fuzz: a 3 GB file (sparse: no disk used)")
def test_a_multi_gigabyte_line_is_refused_in_one_line(tmp_path, capsys):
    path = tmp_path / "p.csv"
    path.write_bytes(b"Q1,R1,")
    os.truncate(path, 3 * 2**30)  # one line of NUL bytes
    (tmp_path / "gt.csv").write_text(shared.GT)
    screen = in_process(evaluate_args(tmp_path, "p.csv", "local"), capsys, None)
    assert verdict(tmp_path, screen, "3 GB line") == (
        2,
        "error: {d}/p.csv: line 1: longer than 1,048,576 characters (not a line of predictions)",
    )
