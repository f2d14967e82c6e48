"""Pieces shared by every skdp estimator: privacy parameters and atomic fits."""

import functools
import warnings
from numbers import Real

import numpy as np
from sklearn.utils._param_validation import Interval, StrOptions

from .exceptions import PrivacyLeakWarning

#: Parameter constraints every DP estimator shares; extend with ``**``.
#: ``random_state`` also takes a :class:`numpy.random.Generator` (see
#: :func:`skdp.mechanisms.as_generator`).
PRIVACY_CONSTRAINTS = {
    "epsilon": [Interval(Real, 0, None, closed="neither")],
    "delta": [Interval(Real, 0, 1, closed="left")],
    "accounting": [StrOptions({"exact", "paper"})],
    "random_state": ["random_state", np.random.Generator],
}


def require_positive_delta(estimator):
    """Gaussian mechanisms need δ > 0: say so before any work is done."""
    if estimator.delta == 0:
        raise ValueError(
            f"{type(estimator).__name__} adds Gaussian noise, which cannot be "
            "(epsilon, 0)-DP: set delta > 0 (e.g. 1e-5, well below 1/n_samples)."
        )


def warn_if_delta_is_large(estimator, n_samples):
    """Warn when ``delta >= 1/n_samples`` (n is public).

    An (ε, δ)-DP mechanism may publish each record outright with probability
    δ, so at δ ≥ 1/n it may publish one record (in expectation) and still meet
    its guarantee.
    """
    if estimator.delta >= 1.0 / n_samples:
        warnings.warn(
            f"delta={estimator.delta:g} is at least 1/n_samples = "
            f"{1.0 / n_samples:.3g}: a mechanism with this guarantee may reveal a "
            "whole record. Use delta well below 1/n_samples (e.g. 1/n**1.5).",
            PrivacyLeakWarning,
            stacklevel=5,  # the caller of fit (through fit's two decorators)
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
