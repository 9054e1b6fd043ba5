"""Howe's rank of the original and DISC21's μAP for every (method, test) of a benchmark
folder written by make_queries.py (make-queries).

scripts/spark-submit jobs/rank_eval.py --bench bench/ --methods colorhist,correlogram,tiny,pdq \
    --output report/ --subsets 3 --sizes 500,1000,2000,4000

--methods takes built-in methods (colorhist, correlogram, tiny, pdq), user functions
(module:function) and precomputed vectors as name=folder (a folder written by
extract_descriptors.py --bench).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout too

from disc21spark.commands import main  # noqa: E402

if __name__ == "__main__":
    # the command's own name and this docstring in --help and usage errors, as before
    sys.exit(main(["rank-eval", *sys.argv[1:]], prog=Path(__file__).name, description=__doc__))
