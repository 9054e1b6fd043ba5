"""Candidate-budget curves of the descriptor track: the metrics of one search cut to
several budgets (spec.py: numpy, the specification; plan.py: Spark; table.py: the
budgets table, budgets.csv, the ``budgets`` block of metrics.json and budgets.png)."""
