"""Differentially private naive Bayes."""

from ._gaussian import DPGaussianNB

__all__ = ["DPGaussianNB"]
