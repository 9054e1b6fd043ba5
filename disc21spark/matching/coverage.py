"""Coverage warnings: signs that a submission's ids are misnamed rather than its system bad.

A user of the official scorer once got μAP 0.096 instead of 0.563 "with no idea why"
(isc2021 issue #10): the ids did not match the ground truth's. Such a submission is
legal (predictions for unknown queries are false positives), so it is scored as it is,
and flagged:

* most predictions are for queries the ground truth does not know;
* no predicted reference id is a reference of the ground truth;
* ids that match the ground truth only once a folder or an image extension is stripped
  (``images/Q00012.jpg`` for ``Q00012``), for queries or for references.

Cheap by construction: the first sign comes from figures every engine already has; the
ids are looked at again only when a submission has predictions for unknown queries or
no true pair at all (neither happens to a well-named submission). Both engines count the
same predictions with the same rules (``bare_id``, the same regular expressions on
Arrow and on Spark) and name the same example (the smallest id), so their warnings are
equal, word for word.
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, replace
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

import numpy as np

from disc21spark.core.paths import IMAGE_SUFFIX_PATTERN, bare_image_name
from disc21spark.matching.inprocess.arrays import compute, numbers, strings
from disc21spark.matching.model import GroundTruth, MatchingMetrics

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column, DataFrame, SparkSession

# "most": more than half of the predictions
MOST = 0.5
# the two steps of bare_id as regular expressions (Java's on Spark, RE2 on Arrow: these
# patterns mean the same in both)
FOLDER = r"^.*[/\\]"
SUFFIX = IMAGE_SUFFIX_PATTERN


def bare_id(name: str) -> str:
    """'images/Q000123.jpg' -> 'Q000123': the id once its folder and image extension go."""
    base = PurePosixPath(name.replace("\\", "/")).name if ("/" in name or "\\" in name) else name
    return bare_image_name(base)


@dataclass(frozen=True)
class IdCheck:
    """What a second look at one submission's ids found (counts are of predictions)."""

    n_known_references: int  # predictions whose reference id is a ground-truth reference
    n_bare_queries: int  # unknown query ids that the ground truth knows once stripped
    bare_query: str | None  # the smallest of them
    n_bare_references: int  # reference ids that are ground-truth references once stripped
    bare_reference: str | None


def needs_id_check(metrics: MatchingMetrics) -> bool:
    """Whether the ids must be looked at again: only a submission with predictions for
    unknown queries, or with predictions and no true pair, can show a sign beyond the first."""
    return metrics.n_predictions > 0 and (
        metrics.n_unknown_query_predictions > 0 or metrics.n_true_positives == 0
    )


def warnings(metrics: MatchingMetrics, ids: IdCheck | None) -> tuple[str, ...]:
    """The warnings of one submission, each a sentence a user can act on."""
    out = []
    n, unknown = metrics.n_predictions, metrics.n_unknown_query_predictions
    if n and unknown > MOST * n:
        out.append(
            f"{unknown / n:.0%} of the predictions ({unknown:,} of {n:,}) are for queries "
            "the ground truth does not know"
        )
    if ids is None:
        return tuple(out)
    if metrics.n_true_positives == 0 and ids.n_known_references == 0:
        out.append("no predicted reference id appears in the ground truth")
    for kind, count, example in (
        ("query", ids.n_bare_queries, ids.bare_query),
        ("reference", ids.n_bare_references, ids.bare_reference),
    ):
        if count:
            out.append(
                f"{count:,} predictions name a {kind} id the ground truth knows only without "
                f"its folder or image extension (e.g. {example!r} for {bare_id(example)!r}): "
                "rename the ids"
            )
    return tuple(out)


# the example a renaming warning gives, as ``warnings`` writes it (a board that must
# not name some ids drops it: ``pool/boards.py``)
EXAMPLE = re.compile(r" \(e\.g\. .*\)(?=: rename the ids$)")


def announce(where: str, found: tuple[str, ...]) -> None:
    """One line on stderr per flagged submission (the run goes on: it is scored as it is)."""
    if found:
        print(f"warning: {where}: {'; '.join(found)}", file=sys.stderr)


def _reference_set(gt: GroundTruth) -> np.ndarray:
    return np.unique(gt.positive_references.astype(str))


# ---------------------------------------------------------------- in process (Arrow)


def check_local(
    query: pa.Array,
    reference: pa.Array,
    gt: GroundTruth,
    metrics: MatchingMetrics,
    where: str | None,
) -> MatchingMetrics:
    """``metrics`` with the warnings of one submission's ids (stripped strings, as the
    in-process engine reads them); one stderr line when there are some and ``where``
    names the submission (None: the caller says it, e.g. a pool's driver)."""

    def counted():
        # each distinct id is looked at once; the counts are of predictions
        q, r = compute("dictionary_encode", query), compute("dictionary_encode", reference)
        q_rows = np.bincount(numbers(q.indices), minlength=len(q.dictionary))
        r_rows = np.bincount(numbers(r.indices), minlength=len(r.dictionary))
        return (q.dictionary, q_rows), (r.dictionary, r_rows)

    return check_counted(counted, gt, metrics, where)


def check_counted(ids, gt: GroundTruth, metrics: MatchingMetrics, where: str | None):
    """``check_local`` from the distinct ids and their predictions: ``ids()`` returns
    ((query ids pa.Array, int (Q,) predictions of each), (reference ids, int (R,))),
    asked for only when the ids must be looked at (``needs_id_check``)."""
    found = warnings(metrics, _local_ids(*ids(), gt) if needs_id_check(metrics) else None)
    if where is not None:
        announce(where, found)
    return replace(metrics, warnings=found)


def _local_ids(query: tuple, reference: tuple, gt: GroundTruth) -> IdCheck:
    queries, references = strings(gt.query_ids), strings(_reference_set(gt))
    (q_ids, q_rows), (r_ids, r_rows) = query, reference

    def member(values: pa.Array, value_set: pa.Array) -> np.ndarray:
        return np.asarray(compute("is_in", values, value_set=value_set).to_pylist(), dtype=bool)

    def bare(values: pa.Array) -> pa.Array:
        no_folder = compute("replace_substring_regex", values, pattern=FOLDER, replacement="")
        return compute("replace_substring_regex", no_folder, pattern=SUFFIX, replacement="")

    q_bare = ~member(q_ids, queries) & member(bare(q_ids), queries)
    r_known = member(r_ids, references)
    r_bare = ~r_known & member(bare(r_ids), references)

    def example(values: pa.Array, flags: np.ndarray) -> str | None:
        chosen = [v for v, f in zip(values.to_pylist(), flags) if f]
        return min(chosen) if chosen else None

    return IdCheck(
        n_known_references=int(r_rows[r_known].sum()),
        n_bare_queries=int(q_rows[q_bare].sum()),
        bare_query=example(q_ids, q_bare),
        n_bare_references=int(r_rows[r_bare].sum()),
        bare_reference=example(r_ids, r_bare),
    )


# ---------------------------------------------------------------- on Spark


def check_spark(
    spark: SparkSession,
    pairs: DataFrame,
    gt: GroundTruth,
    metrics: dict[int, MatchingMetrics],
    where: dict[int, str],
    announce_here: bool = True,
) -> dict[int, MatchingMetrics]:
    """``metrics`` of each submission of ``pairs`` (``submission``, ``query_id``,
    ``reference_id``) with its warnings; one pass over the pairs of the submissions that
    need their ids looked at again (none, for well-named submissions). ``announce_here``
    False: the caller says them (the library API never prints)."""
    todo = [s for s, m in metrics.items() if needs_id_check(m)]
    ids = _spark_ids(spark, pairs, gt, todo) if todo else {}
    out = {}
    for sub, m in metrics.items():
        found = warnings(m, ids.get(sub, _NOTHING) if sub in todo else None)
        if announce_here:
            announce(where.get(sub, "predictions"), found)
        out[sub] = replace(m, warnings=found)
    return out


_NOTHING = IdCheck(0, 0, None, 0, None)  # a submission whose rows all went elsewhere


def _spark_ids(
    spark: SparkSession, pairs: DataFrame, gt: GroundTruth, subs: list[int]
) -> dict[int, IdCheck]:
    import pandas as pd
    from pyspark.sql import functions as F

    from disc21spark.matching.spark.labels import SUBMISSION

    def id_set(values: np.ndarray, name: str) -> DataFrame:
        table = pd.DataFrame({name: pd.Series(values, dtype=object).astype(str)})
        frame = spark.createDataFrame(table, f"{name} string").withColumn(f"{name}_in", F.lit(1))
        return F.broadcast(frame)

    def bare(column: Column) -> Column:
        return F.regexp_replace(F.regexp_replace(column, FOLDER, ""), SUFFIX, "")

    rows = pairs.where(F.col(SUBMISSION).isin(subs)).select(
        SUBMISSION,
        "query_id",
        "reference_id",
        bare(F.col("query_id")).alias("bare_q"),
        bare(F.col("reference_id")).alias("bare_r"),
    )
    queries, references = gt.query_ids, _reference_set(gt)
    joined = (
        rows.join(id_set(queries, "query_id"), "query_id", "left")
        .join(id_set(queries, "bare_q"), "bare_q", "left")
        .join(id_set(references, "reference_id"), "reference_id", "left")
        .join(id_set(references, "bare_r"), "bare_r", "left")
    )
    bare_query = F.col("query_id_in").isNull() & F.col("bare_q_in").isNotNull()
    bare_reference = F.col("reference_id_in").isNull() & F.col("bare_r_in").isNotNull()
    summary = joined.groupBy(SUBMISSION).agg(
        F.count("reference_id_in").alias("known_references"),
        F.count(F.when(bare_query, 1)).alias("bare_queries"),
        F.min(F.when(bare_query, F.col("query_id"))).alias("bare_query"),
        F.count(F.when(bare_reference, 1)).alias("bare_references"),
        F.min(F.when(bare_reference, F.col("reference_id"))).alias("bare_reference"),
    )
    return {
        r[SUBMISSION]: IdCheck(
            r["known_references"],
            r["bare_queries"],
            r["bare_query"],
            r["bare_references"],
            r["bare_reference"],
        )
        for r in summary.collect()
    }
