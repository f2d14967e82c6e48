"""Private model selection: hyperparameter search whose whole run is DP."""

from ._search import DPRandomSearchCV

__all__ = ["DPRandomSearchCV"]
