"""The DuckDB peer of a pool: every submission's figures from one SQL query over the glob.

    python benchmarks/duckdb_pool.py GROUND_TRUTH.csv 'POOL/*.csv'

What a data engineer writes with DuckDB for a leaderboard (its defaults: every core, its
own memory limit): the files read as one table with ``filename = true``, left-joined to
the ground truth's non-empty pairs for the label; repeated pairs found per file; one
window partitioned by file in the pessimistic order (``ORDER BY score DESC, label ASC``)
giving each true pair's precision, summed for μAP, and recall at precision 0.9; recall at
rank 1 and 10 from each true pair joined with its query's rows in the same file scoring at
least as high. It computes every figure the leaderboard shows but the intervals, and checks
nothing else. Prints one JSON line: file name → figures. Needs ``pip install duckdb``.
"""

from __future__ import annotations

import json
import sys

import duckdb

POOL = """
WITH positives AS (
  SELECT query_id, reference_id FROM read_csv($gt, header = true, auto_detect = false,
         columns = {'query_id': 'VARCHAR', 'reference_id': 'VARCHAR'})
  WHERE reference_id IS NOT NULL AND reference_id <> ''
),
n_pos AS (SELECT count(*)::DOUBLE AS n FROM positives),
preds AS (
  SELECT p.filename AS file, p.query_id, p.reference_id, p.score,
         (g.query_id IS NOT NULL) AS label
  FROM read_csv($pool, header = true, auto_detect = false, filename = true,
                columns = {'query_id': 'VARCHAR', 'reference_id': 'VARCHAR',
                           'score': 'DOUBLE'}) p
  LEFT JOIN positives g USING (query_id, reference_id)
),
repeats AS (
  SELECT file, count(*) AS repeated FROM (
    SELECT file FROM preds GROUP BY file, query_id, reference_id HAVING count(*) > 1
  ) GROUP BY file
),
ranked AS (
  SELECT file,
         sum(CASE WHEN label THEN tp / n ELSE 0 END) AS ap_sum,
         coalesce(max(CASE WHEN label AND tp / n >= 0.9 THEN tp END), 0) AS tp_at_p90
  FROM (
    SELECT file, label,
           sum(label::INTEGER) OVER w AS tp,
           row_number() OVER w AS n
    FROM preds
    WINDOW w AS (PARTITION BY file ORDER BY score DESC, label ASC
                 ROWS UNBOUNDED PRECEDING)
  ) GROUP BY file
),
ranks AS (
  SELECT file, count(*) FILTER (WHERE rank < 1) AS r1, count(*) FILTER (WHERE rank < 10) AS r10
  FROM (
    SELECT t.file, t.query_id, t.reference_id, count(*) - 1 AS rank
    FROM preds t JOIN preds o
      ON o.file = t.file AND o.query_id = t.query_id AND o.score >= t.score
    WHERE t.label
    GROUP BY t.file, t.query_id, t.reference_id
  ) GROUP BY file
)
SELECT r.file, coalesce(x.repeated, 0), r.ap_sum / n, r.tp_at_p90 / n,
       coalesce(k.r1, 0) / n, coalesce(k.r10, 0) / n
FROM ranked r CROSS JOIN n_pos LEFT JOIN ranks k USING (file) LEFT JOIN repeats x USING (file)
ORDER BY r.file
"""


def main(ground_truth: str, pool: str) -> dict:
    rows = duckdb.connect().execute(POOL, {"gt": ground_truth, "pool": pool}).fetchall()
    out = {}
    for file, repeated, micro_ap, recall_at_p90, r1, r10 in rows:
        out[file] = (
            {"invalid": f"{repeated} repeated pairs"}
            if repeated
            else {
                "micro_ap": micro_ap,
                "recall_at_p90": recall_at_p90,
                "recall_at_rank1": r1,
                "recall_at_rank10": r10,
            }
        )
    return out


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1], sys.argv[2])))
