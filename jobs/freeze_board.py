"""Copy a published board, frozen, to a new folder no run replaces (no Spark is started).

python jobs/freeze_board.py --board runs/latest --output boards/official
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout too

from disc21spark.commands import main  # noqa: E402

if __name__ == "__main__":
    # the command's own name and this docstring in --help and usage errors, as before
    sys.exit(main(["freeze", *sys.argv[1:]], prog=Path(__file__).name, description=__doc__))
