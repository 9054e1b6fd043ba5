"""Write an offline image library of any size: the photographs scikit-image ships, then
seeded dead-leaves images with natural-image statistics (no download, byte-identical for a
seed).

scripts/spark-submit jobs/make_library.py --output library/ --size 6000 --seed 1
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout too

from disc21spark.commands import main  # noqa: E402

if __name__ == "__main__":
    # the command's own name and this docstring in --help and usage errors, as before
    sys.exit(main(["make-library", *sys.argv[1:]], prog=Path(__file__).name, description=__doc__))
