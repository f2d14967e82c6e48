"""Sparse generalised linear models (Cai, Wang & Zhang, Score Attack, §5)."""

from numbers import Integral, Real

import numpy as np
from scipy.special import expit
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, StrOptions, validate_params


@validate_params(
    {
        "n_samples": [Interval(Integral, 1, None, closed="left")],
        "n_features": [Interval(Integral, 1, None, closed="left")],
        "n_informative": [Interval(Integral, 1, None, closed="left")],
        "family": [StrOptions({"gaussian", "poisson", "logistic"})],
        "signal": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "noise": [Interval(Real, 0, None, closed="left")],
        "intercept": [Real],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_sparse_glm(
    n_samples=1000,
    n_features=100,
    n_informative=5,
    *,
    family="gaussian",
    signal="auto",
    noise=1.0,
    intercept=0.0,
    random_state=None,
):
    """Data from an ``n_informative``-sparse GLM with a standard Gaussian design.

    The setting of Cai, Wang & Zhang (Score Attack, §5): ``x ~ N(0, I_d)``;
    the true coefficients have ``n_informative`` non-zeros at random
    positions, with random signs and magnitudes uniform in
    ``[signal/2, signal]``; the response given ``z = xᵀβ + intercept`` is
    ``z + noise·N(0, 1)`` (gaussian), ``Poisson(e^z)`` (poisson) or
    ``Bernoulli(σ(z))`` (logistic).

    Parameters
    ----------
    n_samples, n_features, n_informative : int
        Sizes; ``n_informative <= n_features``.
    family : {"gaussian", "poisson", "logistic"}, default="gaussian"
        Response distribution.
    signal : float or "auto", default="auto"
        Largest coefficient magnitude. ``"auto"``: 1 (gaussian, logistic) or
        ``1/sqrt(n_informative)`` (poisson, so that ``e^z`` stays moderate).
    noise : float, default=1.0
        Noise standard deviation (gaussian only).
    intercept : float, default=0.0
        Added to the linear predictor.
    random_state : int, RandomState instance or None, default=None
        Seed.

    Returns
    -------
    X : ndarray of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)
        Float responses (counts and 0/1 labels as floats).
    coef : ndarray of shape (n_features,)
        The true coefficients.

    Examples
    --------
    >>> from skdp.datasets import make_sparse_glm
    >>> X, y, coef = make_sparse_glm(100, 20, 3, family="poisson", random_state=0)
    >>> X.shape, int((coef != 0).sum()), bool((y >= 0).all())
    ((100, 20), 3, True)
    """
    if n_informative > n_features:
        raise ValueError(
            f"n_informative={n_informative} exceeds n_features={n_features}."
        )
    rng = check_random_state(random_state)
    if signal == "auto":
        signal = 1.0 / np.sqrt(n_informative) if family == "poisson" else 1.0
    coef = np.zeros(n_features)
    support = rng.choice(n_features, n_informative, replace=False)
    magnitudes = rng.uniform(signal / 2.0, signal, n_informative)
    coef[support] = rng.choice([-1.0, 1.0], n_informative) * magnitudes
    X = rng.standard_normal((n_samples, n_features))
    z = X @ coef + intercept
    if family == "gaussian":
        y = z + noise * rng.standard_normal(n_samples)
    elif family == "poisson":
        y = rng.poisson(np.exp(z)).astype(float)
    else:
        y = (rng.uniform(size=n_samples) < expit(z)).astype(float)
    return X, y, coef
