"""Describe images with a baseline descriptor on Spark; write what the descriptor track reads.

scripts/spark-submit jobs/extract_descriptors.py --images library/ --method colorhist --output refs.h5
scripts/spark-submit jobs/extract_descriptors.py --bench bench/ --method tiny --output bench/descriptors/tiny/

methods: colorhist (Swain & Ballard 1991), correlogram (Huang et al. 1997), tiny (16×16 grey
thumbnail, Torralba et al. 2008), pdq (Meta's PDQ hash), or a user function module:function
mapping an RGB uint8 array to a vector (importable on the executors).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout too

from disc21spark.commands import main  # noqa: E402

if __name__ == "__main__":
    # the command's own name and this docstring in --help and usage errors, as before
    sys.exit(main(["extract", *sys.argv[1:]], prog=Path(__file__).name, description=__doc__))
