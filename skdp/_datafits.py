"""Datafits: the model-specific part of a gradient-based DP estimator.

A datafit knows the per-record loss as a function of the linear predictor
``z = X @ coef + intercept`` (shape ``(n, k)``) and nothing about privacy. The DP
gradient-descent engine (:mod:`skdp._dpgd`) needs three members:

``raw_grad(y, z)``
    the per-record derivative of the loss w.r.t. ``z``, shape ``(n, k)``, not
    averaged. Record i's gradient w.r.t. ``(coef, intercept)`` is the outer
    product of ``raw_grad[i]`` with ``(x_i, 1)``, so its L2 norm is
    ``||raw_grad[i]|| * sqrt(||x_i||² + 1)``: the engine clips it without ever
    forming an ``n × d`` gradient matrix.
``grad_bound``
    an a-priori bound on ``||raw_grad[i]||`` for every label and predictor
    (``inf`` when there is none: the engine's clipping never relies on it).
``inverse_link(z)``
    the model's prediction (mean or class probabilities) from ``z``.

``value(y, z)`` (the mean loss) serves tests and examples only: no private
code path ever reads a loss value.
"""

import numpy as np
from scipy.special import expit, log_expit, log_softmax, softmax


class BinomialLogistic:
    """Logistic loss for labels ``y ∈ {0, 1}`` and one output (``k = 1``).

    .. math:: \\ell(y, z) = \\log(1 + e^{z}) - y z, \\qquad
              \\partial_z \\ell = \\sigma(z) - y \\in (-1, 1).

    ``raw_grad`` computes σ with scipy's ``expit`` formula, ``1/(1 + e^{-z})``,
    but with numpy's ``exp``: where numpy and the C library's ``exp`` differ
    in the last bit (some CPUs, e.g. with AVX-512), σ differs from ``expit``
    by an ulp. "The same model" across machines therefore means the same
    released distribution, with seeded outputs equal to within rounding, not
    bit for bit; the privacy guarantee never depends on those bits (every
    residual is clipped to the public bound either way).
    """

    grad_bound = 1.0

    def raw_grad(self, y, z):
        # σ(z) = 1/(1 + e^{-z}) by in-place passes: expit's formula, 15%
        # faster than expit and a subtraction; e^{-z} = inf gives σ = 0.
        g = np.negative(z)
        with np.errstate(over="ignore"):
            np.exp(g, out=g)
        g += 1.0
        np.divide(1.0, g, out=g)
        g[:, 0] -= y  # (a 1-d view: several times faster than broadcasting y[:, None])
        return g

    def inverse_link(self, z):
        return expit(z)

    def value(self, y, z):
        z = z[:, 0]
        return float(np.mean(np.logaddexp(0.0, z) - y * z))

    def log_proba(self, z):
        """Columns ``[log P(y=0), log P(y=1)]`` from ``z`` of shape ``(n,)``."""
        return np.column_stack([log_expit(-z), log_expit(z)])


class MultinomialLogistic:
    """Softmax cross-entropy for labels ``y ∈ {0, …, k-1}`` and ``k`` outputs.

    .. math:: \\ell(y, z) = \\log \\sum_j e^{z_j} - z_y, \\qquad
              \\nabla_z \\ell = \\mathrm{softmax}(z) - e_y,

    whose norm is below ``sqrt(2)`` (``||p - e_y||² = (1 - p_y)² + Σ_{j≠y} p_j²
    ≤ 2 (1 - p_y)²``).
    """

    grad_bound = float(np.sqrt(2.0))

    def raw_grad(self, y, z):
        g = softmax(z, axis=1)
        g[np.arange(z.shape[0]), y] -= 1.0
        return g

    def inverse_link(self, z):
        return softmax(z, axis=1)

    def value(self, y, z):
        return float(-np.mean(log_softmax(z, axis=1)[np.arange(z.shape[0]), y]))

    def log_proba(self, z):
        return log_softmax(z, axis=1)


class Quadratic:
    """Squared error ``scale·(z - y)²`` for real ``y`` and one output.

    .. math:: \\ell(y, z) = s\\,(z - y)^2, \\qquad
              \\partial_z \\ell = 2 s\\,(z - y).

    ``scale=1`` is the loss of Bombari & Mondelli (Privacy for Free, eq. (1.2),
    no factor 1/2), so that their clipping constant ``C = 0.5·sqrt(p)``
    carries over; ``scale=0.5`` is the Gaussian GLM convention. The
    derivative is unbounded (``grad_bound = inf``): clipping alone bounds a
    record's influence.
    """

    grad_bound = np.inf

    def __init__(self, scale=1.0):
        self.scale = scale

    def raw_grad(self, y, z):
        g = z.copy()
        g[:, 0] -= y
        g *= 2.0 * self.scale
        return g

    def inverse_link(self, z):
        return z

    def value(self, y, z):
        return float(self.scale * np.mean((z[:, 0] - y) ** 2))


class Poisson:
    """Poisson deviance (half, up to a term in y) with the log link, one output.

    .. math:: \\ell(y, z) = e^{z} - y z, \\qquad
              \\partial_z \\ell = e^{z} - y.

    For counts ``y >= 0``; the mean is ``e^z``. The derivative is unbounded
    (``grad_bound = inf``): clipping alone bounds a record's influence.
    """

    grad_bound = np.inf

    def raw_grad(self, y, z):
        g = np.exp(z)
        g[:, 0] -= y
        return g

    def inverse_link(self, z):
        return np.exp(z)

    def value(self, y, z):
        z = z[:, 0]
        return float(np.mean(np.exp(z) - y * z))
