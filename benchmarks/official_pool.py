"""Peer of the pool benchmark: the official ISC2021 scorer run once per submission file, each
in its own process, as organisers score a pool today. Prints μAP by name (JSON).

    PYTHONPATH=<isc2021 checkout> python benchmarks/official_pool.py GT FOLDER
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from bench_matching import OFFICIAL


def main(gt_path: str, folder: str) -> None:
    results = {}
    for path in sorted(Path(folder).glob("*.csv")):
        out = subprocess.run(
            [sys.executable, "-c", OFFICIAL, gt_path, str(path)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        results[path.stem] = json.loads(out.strip().splitlines()[-1])["micro_ap"]
    print(json.dumps(results))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
