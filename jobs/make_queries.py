"""Build an altered-image benchmark from an image library (Howe 2000; DISC21-style edits).

scripts/spark-submit jobs/make_queries.py --images library/ --output bench/ \
    --tests crop:50,jumble:4x4,lowcon:80 --queries-per-test 500 --distractors 0.5 --seed 7
.venv/bin/python jobs/make_queries.py ...   (no master given: local[*])
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout too

from disc21spark.commands import main  # noqa: E402

if __name__ == "__main__":
    # the command's own name and this docstring in --help and usage errors, as before
    sys.exit(main(["make-queries", *sys.argv[1:]], prog=Path(__file__).name, description=__doc__))
