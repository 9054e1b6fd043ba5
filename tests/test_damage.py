"""A damaged Parquet file's reason, the same on both engines (``core/damage.py``), and the
in-process reader leaving out a damaged ``ARROW:schema`` key as Spark's reader does. The
fuzz (``tests/test_fuzz.py``) holds the two engines' lines equal; these are the exact
words, computed by hand. No JVM."""

from __future__ import annotations

import io

import pytest

from tests.bad_inputs import parquet_bytes


def test_a_damaged_parquet_files_reason_is_told_from_its_size_and_ends():
    """core/damage.py's words, which both engines give: from the size, the first 4 and
    the last 8 bytes alone (tiny cases, computed by hand)."""
    from disc21spark.core.damage import parquet_reason_of_bytes as reason

    good = parquet_bytes()
    footer = int.from_bytes(good[-8:-4], "little")
    said = "cannot be read as Parquet ({})"
    assert reason(b"") == said.format(
        "truncated, or not a Parquet file: 0 bytes, fewer than the 12 of the smallest"
    )
    assert reason(b"PAR1PAR1PAR") == said.format(
        "truncated, or not a Parquet file: 11 bytes, fewer than the 12 of the smallest"
    )
    assert reason(good[:-1]) == said.format(
        "not a Parquet file, or a damaged one: no PAR1 magic number at both ends"
    )
    assert reason(b"Q1,R" + good[4:]) == reason(good[:-1])
    cut = good[:4] + good[-(footer // 2) - 8 :]  # the footer's end kept, its start lost
    assert reason(cut) == said.format(
        f"truncated or damaged: its footer is said to be {footer:,} bytes, more than the file holds"
    )
    assert reason(good) == said.format("damaged: its metadata or data pages cannot be decoded")


def test_a_damaged_arrow_schema_is_left_out_as_spark_leaves_it_out():
    """Spark's reader ignores the ``ARROW:schema`` key of a footer; the in-process engine
    reads a file whose key is damaged without it, to the same table, and an id that
    happens to read ``ARROW:schema`` is not touched."""
    import base64

    import pyarrow as pa
    import pyarrow.parquet as pq

    from disc21spark.core.errors import InputError
    from disc21spark.matching.inprocess.source import ARROW_SCHEMA, Source, parquet_table
    from disc21spark.resolve import resolve

    table = pa.table(
        {"query_id": ["ARROW:schema", "Q2"], "reference_id": ["R1", "R2"], "score": [0.5, 0.25]}
    )
    out = io.BytesIO()
    pq.write_table(table, out)
    data = out.getvalue()
    key = data.rindex(ARROW_SCHEMA)  # the footer's, after the id in the data page
    value = data.index(base64.b64encode(table.schema.serialize())[:16], key)
    damaged = data[:value] + b"!" + data[value + 1 :]  # not base64: Arrow refuses the key
    with pytest.raises(pa.ArrowInvalid):
        pq.read_table(pa.BufferReader(damaged))
    assert parquet_table(Source.of_bytes("/x/p.parquet", damaged, resolve("/x/p.parquet"))).equals(
        table
    )
    # and with a column name that is not UTF-8 as well: damaged either way, in our words
    start = len(data) - 8 - int.from_bytes(data[-8:-4], "little")
    worse = damaged[:start] + damaged[start:].replace(b"reference_id", b"\xffeference_id")
    with pytest.raises(InputError) as info:
        parquet_table(Source.of_bytes("/x/p.parquet", worse, resolve("/x/p.parquet")))
    assert str(info.value) == (
        "/x/p.parquet: cannot be read as Parquet (damaged: its metadata "
        "or data pages cannot be decoded)"
    )


def test_a_damaged_gzip_files_reason_is_zlibs_told_from_its_bytes():
    """``core/damage.gzip_reason``: None for one or more whole members; else not gzip,
    truncated, or zlib's own reason (a CRC, a deflate block), the same on both engines."""
    import gzip

    from disc21spark.core.damage import gzip_reason

    def reason(data: bytes) -> str | None:
        return gzip_reason(io.BytesIO(data))

    whole = gzip.compress(b"Q1,R1,0.5\n" * 1000, mtime=0)
    said = "cannot be read as gzip ({})"
    assert reason(whole) is None and reason(whole + whole) is None  # members, as both read
    assert reason(b"Q1,R1,0.5\n") == said.format("not gzip: no gzip magic number at its start")
    cut = said.format("truncated: the compressed stream ends before its end")
    assert reason(whole[:10]) == reason(whole[: len(whole) // 2]) == reason(whole[:-1]) == cut
    crc = bytearray(whole)
    crc[-5] ^= 1  # the CRC-32 of the trailer
    assert reason(bytes(crc)) == said.format("damaged: incorrect data check")
    assert reason(whole + b"junk") == said.format("damaged: incorrect header check")


def test_the_spark_sides_reason_is_the_same_for_a_file_on_this_machine(tmp_path):
    """``damage.unreadable``, which the Spark jobs call after a failed read: the reasons
    above for one Parquet or ``.gz`` file, the reader's words for anything else."""
    import gzip

    from disc21spark.core.damage import gzip_reason, parquet_reason_of_bytes, unreadable

    failed = RuntimeError("java.io.IOException: the reader's own words\nat ...")
    (tmp_path / "p.parquet").write_bytes(parquet_bytes()[:-3])
    assert unreadable(str(tmp_path / "p.parquet"), failed, "parquet") == parquet_reason_of_bytes(
        parquet_bytes()[:-3]
    )
    cut = gzip.compress(b"Q1,R1,0.5\n" * 100, mtime=0)[:30]
    (tmp_path / "p.csv.gz").write_bytes(cut)
    assert unreadable(str(tmp_path / "p.csv.gz"), failed, "csv") == gzip_reason(io.BytesIO(cut))
    words = "cannot be read (java.io.IOException: the reader's own words)"
    assert unreadable(str(tmp_path), failed, "parquet") == words  # a folder: no ends to tell
    assert unreadable(str(tmp_path / "p.csv"), failed, "csv") == words
