"""Score a DISC21 submission on Spark: matching track (pairs) or descriptor track (vectors).

scripts/spark-submit jobs/evaluate.py --ground-truth gt.csv --predictions preds.csv --output out/
scripts/spark-submit jobs/evaluate.py --ground-truth gt.csv \
    --query-descriptors queries.h5 --reference-descriptors 'refs_*.h5' --output out/
.venv/bin/python jobs/evaluate.py ...   (no master given: one local file in process, else local[*])
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout too

from disc21spark.commands import main  # noqa: E402

if __name__ == "__main__":
    # the command's own name and this docstring in --help and usage errors, as before
    sys.exit(main(["evaluate", *sys.argv[1:]], prog=Path(__file__).name, description=__doc__))
