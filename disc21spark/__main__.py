"""python -m disc21spark COMMAND ...: the same as the disc21spark command."""

import sys

from disc21spark.commands import main

if __name__ == "__main__":
    sys.exit(main())
