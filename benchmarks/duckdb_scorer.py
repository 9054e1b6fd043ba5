"""The DuckDB peer: the DISC21 figures from a handful of SQL statements over the same CSV.

    python benchmarks/duckdb_scorer.py GROUND_TRUTH.csv PREDICTIONS.csv

What a data engineer writes first with DuckDB (its defaults: every core, its own memory
limit, spilling to disk past it): the ground truth read with string columns and its
non-empty pairs kept; the predictions read with explicit types and left-joined to it on
(query, reference) for the label; repeated pairs refused (``GROUP BY … HAVING``); one
window over every row in the pessimistic order (``ORDER BY score DESC, label ASC``)
giving each true pair's precision, summed for μAP, and recall at precision 0.9 from the
same window; recall at rank 1 and 10 from each true pair joined with its query's rows
scoring at least as high. It checks nothing else (no line numbers, no finite-score or
empty-id checks). Prints one JSON line of the figures. Needs ``pip install duckdb``
(the ``bench`` extra).
"""

from __future__ import annotations

import json
import sys

import duckdb

LABELLED = """
CREATE TEMP TABLE preds AS
SELECT p.query_id, p.reference_id, p.score, (g.query_id IS NOT NULL) AS label
FROM read_csv(?, header = true, auto_detect = false,
              columns = {'query_id': 'VARCHAR', 'reference_id': 'VARCHAR', 'score': 'DOUBLE'}) p
LEFT JOIN positives g USING (query_id, reference_id)
"""

RANKED = """
SELECT
  sum(CASE WHEN label THEN (tp / n) ELSE 0 END) / ? AS micro_ap,
  coalesce(max(CASE WHEN label AND tp / n >= 0.9 THEN tp END), 0) / ? AS recall_at_p90
FROM (
  SELECT label,
         sum(label::INTEGER) OVER w AS tp,
         row_number() OVER w AS n
  FROM preds
  WINDOW w AS (ORDER BY score DESC, label ASC ROWS UNBOUNDED PRECEDING)
)
"""

RANKS = """
SELECT count(*) FILTER (WHERE rank < 1) / ? AS r1, count(*) FILTER (WHERE rank < 10) / ? AS r10
FROM (
  SELECT t.query_id, t.reference_id, count(*) - 1 AS rank
  FROM preds t JOIN preds o ON o.query_id = t.query_id AND o.score >= t.score
  WHERE t.label
  GROUP BY t.query_id, t.reference_id
)
"""


def main(ground_truth: str, predictions: str) -> dict:
    con = duckdb.connect()
    con.execute(
        "CREATE TEMP TABLE positives AS SELECT query_id, reference_id FROM read_csv(?, "
        "header = true, auto_detect = false, "
        "columns = {'query_id': 'VARCHAR', 'reference_id': 'VARCHAR'}) "
        "WHERE reference_id IS NOT NULL AND reference_id <> ''",
        [ground_truth],
    )
    (n_positives,) = con.execute("SELECT count(*) FROM positives").fetchone()
    con.execute(LABELLED, [predictions])
    (repeats,) = con.execute(
        "SELECT count(*) FROM (SELECT 1 FROM preds GROUP BY query_id, reference_id "
        "HAVING count(*) > 1)"
    ).fetchone()
    if repeats:
        raise SystemExit(f"{predictions}: {repeats} repeated pairs")
    micro_ap, recall_at_p90 = con.execute(RANKED, [n_positives, n_positives]).fetchone()
    r1, r10 = con.execute(RANKS, [n_positives, n_positives]).fetchone()
    return {
        "micro_ap": micro_ap,
        "recall_at_p90": recall_at_p90,
        "recall_at_rank1": r1,
        "recall_at_rank10": r10,
    }


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
