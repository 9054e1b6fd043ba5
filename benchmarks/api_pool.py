"""``ds.evaluate_pool`` of a pool's files from a Python script (the benchmark's API
contender): prints each submission's μAP as JSON, as the command's board holds it.

    python benchmarks/api_pool.py GROUND_TRUTH 'POOL/*.csv' [auto|local|spark]
"""

from __future__ import annotations

import json
import sys

import disc21spark as ds

if __name__ == "__main__":  # the pool's workers import this script first
    gt, pool, engine = sys.argv[1], sys.argv[2], sys.argv[3] if len(sys.argv) > 3 else "auto"
    board = ds.evaluate_pool(gt, pool, engine=engine)
    print(json.dumps(dict(zip(board.table.submission, board.table.micro_ap))))
