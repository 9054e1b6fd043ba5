"""The budget cuts on Spark: spec.py's cuts of one searched pair frame, every budget in
one frame for the one scorer (each budget a submission, scored in the same passes).

A pair of the search belongs to every budget at least as large as its place, so the
budgets' pair sets are nested: each pair is written once per budget it belongs to (an
``explode`` of the budget codes from the first that keeps it), in one pass over the
searched pairs, no union of one filtered copy per budget.

* global search: the pairs of budget N are those ``plan.cut_condition(pairs, N)``
  holds for (the search's own --max-results cut: a score bound, then the ids of the pairs
  tied at it);
* kNN: a pair's rank within its query, by score descending then reference id (a window
  over each query's K rows), at most k.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from disc21spark.core.phases import Phases
from disc21spark.descriptors import plan as descriptor_plan
from disc21spark.descriptors.budgets.spec import Budgets
from disc21spark.descriptors.budgets.table import BudgetTable
from disc21spark.matching.model import MatchingMetrics
from disc21spark.matching.spark.labels import SUBMISSION
from disc21spark.matching.spark.score import Scoring, score

RANK = "_rank_in_query"


def _kept(pairs: DataFrame, budgets: Budgets, budget: int) -> Column | None:
    """The condition of the pairs ``budget`` keeps (None: all of them)."""
    if budget >= budgets.search:
        return None
    if budgets.kind == "knn":
        return F.col(RANK) <= budget
    return descriptor_plan.cut_condition(pairs, budget)


def _ranked(pairs: DataFrame, budgets: Budgets) -> DataFrame:
    if budgets.kind != "knn" or len(budgets.cuts) == 1:
        return pairs
    order = Window.partitionBy("query_id").orderBy(F.desc("score"), F.asc("rrank"))
    return pairs.withColumn(RANK, F.row_number().over(order))


def main_pairs(pairs: DataFrame, budgets: Budgets) -> DataFrame:
    """The pairs of the job's own budget (query_id, reference_id, score)."""
    ranked = _ranked(pairs, budgets)
    keep = _kept(ranked, budgets, budgets.main)
    kept = ranked if keep is None else ranked.where(keep)
    return kept.select("query_id", "reference_id", "score")


def budget_pairs(pairs: DataFrame, budgets: Budgets) -> DataFrame:
    """The pairs of every budget of ``budgets.cuts`` (the searched ``pairs``: query_id,
    reference_id, rrank, score; persisted), as the scorer's input: ``submission`` is the
    budget's index in ``budgets.cuts``."""
    ranked = _ranked(pairs, budgets)
    last = len(budgets.cuts) - 1
    first: Column = F.lit(0)
    for budget in budgets.cuts[:-1]:
        # the pairs a budget drops start at the next budget's code
        keep = _kept(ranked, budgets, budget)
        if keep is not None:
            first = first + F.when(keep, 0).otherwise(1)
    # a generator cannot sit inside another expression (no cast): the codes are ints
    code = F.explode(F.sequence(first, F.lit(last))) if last else F.lit(0)
    return ranked.select(code.alias(SUBMISSION), "query_id", "reference_id", "score")


def score_budgets(
    spark: SparkSession, pairs: DataFrame, budgets: Budgets, scoring: Scoring, phases: Phases
) -> tuple[MatchingMetrics, BudgetTable | None]:
    """The metrics of the job's own budget, and the budgets table (None when no budget
    was asked for): every cut scored by the one scorer in the same passes."""
    cuts = budgets.cuts
    frame = budget_pairs(pairs, budgets)
    metrics = score(spark, frame, list(range(len(cuts))), scoring, phases).metrics
    main = metrics[cuts.index(budgets.main)]
    if not budgets.values:
        return main, None
    return main, BudgetTable(budgets, tuple(metrics[cuts.index(b)] for b in budgets.values))
