"""Pieces shared by every skdp estimator: privacy parameters and atomic fits."""

import functools
from numbers import Real

from sklearn.utils._param_validation import Interval, StrOptions

#: Parameter constraints every DP estimator shares; extend with ``**``.
PRIVACY_CONSTRAINTS = {
    "epsilon": [Interval(Real, 0, None, closed="neither")],
    "delta": [Interval(Real, 0, 1, closed="left")],
    "accounting": [StrOptions({"exact", "paper"})],
    "random_state": ["random_state"],
}


def require_positive_delta(estimator):
    """Gaussian mechanisms need δ > 0: say so before any work is done."""
    if estimator.delta == 0:
        raise ValueError(
            f"{type(estimator).__name__} adds Gaussian noise, which cannot be "
            "(epsilon, 0)-DP: set delta > 0 (e.g. 1e-5, well below 1/n_samples)."
        )


def fitted_attributes(estimator):
    """Names of the attributes that ``fit`` set (trailing underscore)."""
    return [k for k in vars(estimator) if k.endswith("_") and not k.startswith("__")]


def atomic_fit(fit):
    """Decorate ``fit`` so that a failure leaves the estimator unfitted.

    Nothing half-fitted survives an exception: every fitted attribute (also one
    left by an earlier successful fit, which no longer matches the parameters
    or data just given) is removed before the exception propagates.
    """

    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            for name in fitted_attributes(self):
                delattr(self, name)
            raise

    return wrapper
