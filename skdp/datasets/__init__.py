"""Seeded data generators for examples, tests and benchmarks (nothing is downloaded)."""

from ._text import make_sparse_text_classification

__all__ = ["make_sparse_text_classification"]
