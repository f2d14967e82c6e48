"""Differentially private linear models."""

from ._linear import DPLinearRegression
from ._logistic import DPLogisticRegression
from ._sparse_glm import DPSparseGLM

__all__ = ["DPLinearRegression", "DPLogisticRegression", "DPSparseGLM"]
