"""The one full-batch DP gradient-descent engine shared by gradient-based estimators.

Each step computes every record's gradient of the loss, clips it to L2 norm
``clip_norm``, sums, adds Gaussian noise of standard deviation
``noise_multiplier × sensitivity`` to the sum, and takes a gradient step:

.. math::

    \\beta^{t+1} = \\mathrm{post}\\Big(\\beta^{t} - \\eta\\Big[\\frac{1}{n}
        \\Big(\\sum_i \\mathrm{clip}_C(\\nabla \\ell_i(\\beta^t)) + w_t\\Big)
        + \\alpha \\beta^{t}\\Big]\\Big), \\qquad
    w_t \\sim N(0, (z \\Delta)^2 I).

Privacy (Bassily, Smith & Thakurta 2014; Cai, Wang & Zhang, Score Attack,
Algorithm 1, with per-record clipping in place of assumed bounds): replacing one
record changes the clipped sum by at most ``Δ = 2C`` (``C`` under add/remove),
whatever the data and whatever ``β^t``; so each step is a Gaussian mechanism
that is ``1/z``-GDP, and ``T`` adaptively chosen steps compose exactly to
``sqrt(T)/z``-GDP (Dong, Roth & Su 2022, Cor. 3.3). The step size, the L2
penalty ``α β`` and ``post`` read only the previous (already private) iterate:
post-processing, free. The engine runs exactly ``n_iter`` steps and never looks
at a loss value, so the guarantee holds whether or not it converges.
"""

import numpy as np
from sklearn.utils.extmath import row_norms

from .accounting import REPLACE_ONE, gaussian_cost, sensitivity_factor
from .mechanisms import gaussian_noise

_DATAFIT_MEMBERS = ("raw_grad", "grad_bound", "inverse_link")


def check_datafit(datafit):
    """Raise a TypeError naming every member the engine needs and ``datafit`` lacks."""
    missing = [m for m in _DATAFIT_MEMBERS if not hasattr(datafit, m)]
    if missing:
        raise TypeError(
            f"{type(datafit).__name__} cannot be used by the DP-GD engine: it has "
            f"no {', '.join(missing)}."
        )


def clip_scale(raw_grad, row_norm, clip_norm):
    """Per-record factors ``min(1, C / ||g_i||)`` that clip gradients to norm C.

    Record i's gradient is ``raw_grad[i] ⊗ x̃_i`` with ``||x̃_i|| = row_norm[i]``,
    so its norm is ``||raw_grad[i]|| · row_norm[i]``: one scalar per record.
    """
    norms = np.sqrt(np.einsum("ij,ij->i", raw_grad, raw_grad)) * row_norm
    return clip_norm / np.maximum(norms, clip_norm)  # = min(1, C/norm), no 0/0


def dpgd(
    X,
    y,
    datafit,
    *,
    n_outputs,
    clip_norm,
    noise_multiplier,
    n_iter,
    learning_rate,
    delta,
    rng,
    alpha=0.0,
    fit_intercept=True,
    adjacency=REPLACE_ONE,
    post=None,
    mechanism="full-batch DP gradient descent",
    verbose=0,
):
    """Run ``n_iter`` steps of clipped, noised full-batch gradient descent.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_samples, n_features)
        Features (any values: clipping bounds each record's influence).
    y : ndarray of shape (n_samples,)
        Targets, in whatever encoding ``datafit.raw_grad`` expects.
    datafit : object
        Has ``raw_grad``, ``grad_bound`` and ``inverse_link`` (see
        :mod:`skdp._datafits`).
    n_outputs : int
        Number of columns ``k`` of the linear predictor.
    clip_norm : float
        Every record's gradient w.r.t. ``(coef, intercept)`` is clipped to this
        L2 norm.
    noise_multiplier : float
        Noise std divided by the L2 sensitivity of one step's gradient sum.
        0 turns noise off (tests only: the result is then not private).
    n_iter : int
        Number of steps; each one is paid for.
    learning_rate : float
        Step size η applied to the mean gradient.
    delta : float
        δ at which the returned cost states ε.
    rng : numpy.random.Generator
        Source of the noise.
    alpha : float, default=0.0
        L2 penalty ``alpha/2 · ||coef||²`` on the mean loss (not on the
        intercept).
    fit_intercept : bool, default=True
        Whether to fit an intercept (a constant feature 1 inside the clip).
    adjacency : str, default=REPLACE_ONE
        Neighbouring relation; sets the sensitivity (2C or C).
    post : callable, optional
        ``post(coef, intercept) -> (coef, intercept)`` applied after each step;
        it must not read the data (e.g. a projection onto a ball).
    mechanism : str
        Description stored in the returned cost.
    verbose : int, default=0
        Print one line per step when > 0.

    Returns
    -------
    coef : ndarray of shape (n_features, n_outputs)
    intercept : ndarray of shape (n_outputs,)
    cost : PrivacyCost
        ``sqrt(n_iter)/noise_multiplier``-GDP under ``adjacency``.
    """
    check_datafit(datafit)
    n, d = X.shape
    row_norm = np.sqrt(row_norms(X, squared=True) + (1.0 if fit_intercept else 0.0))
    noise_std = noise_multiplier * sensitivity_factor(adjacency) * clip_norm
    coef = np.zeros((d, n_outputs))
    intercept = np.zeros(n_outputs)
    for t in range(n_iter):
        g = datafit.raw_grad(y, X @ coef + intercept)
        g *= clip_scale(g, row_norm, clip_norm)[:, None]
        noise = gaussian_noise(rng, noise_std, (d + 1, n_outputs))
        coef = coef - learning_rate * ((X.T @ g + noise[:d]) / n + alpha * coef)
        if fit_intercept:
            intercept = intercept - learning_rate * (g.sum(axis=0) + noise[d]) / n
        if post is not None:
            coef, intercept = post(coef, intercept)
        if verbose > 0:
            print(
                f"[dpgd] step {t + 1}/{n_iter}: ||coef|| = {np.linalg.norm(coef):.4g}"
            )
    cost = gaussian_cost(
        noise_multiplier,
        n_iter,
        delta=delta,
        adjacency=adjacency,
        mechanism=(
            f"{mechanism}: {n_iter} steps, per-record clip {clip_norm:g}, "
            f"noise multiplier {noise_multiplier:.6g}"
        ),
    )
    return coef, intercept, cost
