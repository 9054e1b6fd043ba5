"""Baseline for the pool benchmark: the numpy specification run once per submission,
one after the other in one process (each file read with pandas). Prints μAP by name."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from numpy_scorer import load_gt, score_file


def main(gt_path: str, folder: str) -> None:
    gt = load_gt(gt_path)
    results = {}
    for path in sorted(Path(folder).glob("*.csv")):
        results[path.stem] = score_file(gt, str(path)).micro_ap
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
