"""Differentially private preprocessing, histograms and quantiles."""

from ._quantile_transformers import (
    DPMinMaxScaler,
    DPQuantileTransformer,
    DPRobustScaler,
)
from ._scaler import DPStandardScaler
from ._stats import DPHistogram, DPQuantiles, dp_histogram, dp_quantiles

__all__ = [
    "DPHistogram",
    "DPMinMaxScaler",
    "DPQuantileTransformer",
    "DPQuantiles",
    "DPRobustScaler",
    "DPStandardScaler",
    "dp_histogram",
    "dp_quantiles",
]
