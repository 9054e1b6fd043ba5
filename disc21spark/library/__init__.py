"""The offline image library: ``images.py`` renders it (shipped photographs, dead leaves),
``disks.py`` rasterises the leaves, ``job.py`` writes it on Spark."""

import sys

from disc21spark.library import images

# ``disc21spark.library.spec`` was this package's renderer before ``spec.py`` came to mean
# only the numpy references plans are held to; the old name stays an alias of the same
# module object (so a caller's monkeypatch reaches the code) for the callers not moved yet
spec = images
sys.modules[f"{__name__}.spec"] = images
