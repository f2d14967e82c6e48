"""Seeded data generators for examples, tests and benchmarks (nothing is downloaded)."""

from ._btl import make_btl_comparisons, make_btl_rare_items
from ._sparse_glm import make_sparse_glm
from ._text import make_sparse_text_classification

__all__ = [
    "make_btl_comparisons",
    "make_btl_rare_items",
    "make_sparse_glm",
    "make_sparse_text_classification",
]
