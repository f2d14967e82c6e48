"""Differentially private linear models."""

from ._logistic import DPLogisticRegression
from ._sparse_glm import DPSparseGLM

__all__ = ["DPLogisticRegression", "DPSparseGLM"]
