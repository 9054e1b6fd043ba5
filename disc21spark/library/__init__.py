"""The offline image library: ``images.py`` renders it (shipped photographs, dead leaves),
``disks.py`` rasterises the leaves, ``job.py`` writes it on Spark."""
