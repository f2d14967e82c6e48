"""Differentially private preprocessing."""

from ._scaler import DPStandardScaler

__all__ = ["DPStandardScaler"]
