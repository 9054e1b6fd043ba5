"""The in-process engine: one file read with Arrow in batches and counted in this process, no JVM (a local file, or a file's bytes in one Spark task)."""
