"""What a μAP difference asked about may be (``--queries-needed``,
``Leaderboard.queries_needed``).

No numpy here: the command line checks its options with the standard library alone
(``evaluate --help`` and the checks run before any heavy import).
"""

from __future__ import annotations

import numbers

# the smallest μAP difference asked about: a board shows μAP to six decimals, so a
# smaller gap is a tie there (and its count of queries would overflow a table's int64)
SMALLEST_DIFFERENCE = 1e-6


def is_difference(value: object) -> bool:
    """``value`` is a μAP difference to ask the queries of: a real number (a numpy
    float too; a bool is no number here) from ``SMALLEST_DIFFERENCE`` to 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    return SMALLEST_DIFFERENCE <= value <= 1  # no float(): 10**400 has none
