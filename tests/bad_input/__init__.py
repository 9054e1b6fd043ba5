"""The bad-input matrix's cases, by stage, in the order docs/errors.md shows them
(``tests/test_bad_input_matrix.py`` runs them)."""

from tests.bad_input import descriptors, images, installed, matching, options, outputs, pools

CASES = [
    *matching.CASES,
    *pools.CASES,
    *descriptors.CASES,
    *images.CASES,
    *options.CASES,
    *outputs.CASES,
    *installed.CASES,
]
