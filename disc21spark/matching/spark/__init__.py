"""The Spark plans: the distributed plan (rows spread over the cluster, global positions by counting) and the per-file plan (one Spark task a file)."""
