"""Random-features models trained with DP gradient descent (Bombari & Mondelli)."""

from ._regressor import DPRandomFeaturesRegressor

__all__ = ["DPRandomFeaturesRegressor"]
