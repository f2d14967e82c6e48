"""DP-GD on random features in its exact kernel form (the fast path).

Algorithm 1 of Bombari & Mondelli (Privacy for Free) updates ``θ ∈ R^p``:

.. math::

    \\theta_t = \\theta_{t-1} - \\frac{\\eta}{n}\\sum_i c_{t,i}\\, g_i(\\theta_{t-1})
                + s\\, z_t, \\qquad z_t \\sim N(0, I_p),

with ``g_i = ℓ'(φ_iᵀθ, y_i)·φ_i``, clip factors ``c_{t,i} = min(1, C/‖g_i‖)`` and
``s = η·z·2C/n`` (``z`` the noise multiplier). A gradient is a multiple of its
own feature vector, so with ``θ_0 = 0`` the iterate is
``θ_t = Φᵀa_t + s·Σ_{k≤t} z_k`` and everything the loop reads lives in R^n:

* the predictions ``u_t = Φθ_t`` obey
  ``u_t = u_{t−1} − K v_t + s·w_t`` with ``K = ΦΦᵀ``,
  ``v_t = (η/n)·c_t ⊙ ℓ'(u_{t−1}, y)`` and ``w_t = Φz_t ~ N(0, K)``;
* the clip factors need only ``ℓ'(u_{t−1}, y)`` and the norms ``‖φ_i‖``;
* ``a_t = a_{t−1} − v_t``.

**Exactness (same law as Algorithm 1, so the same privacy).** Let
``P = ΦᵀK⁺Φ`` (the projector onto the row space of Φ). ``Pz_t = ΦᵀK⁺w_t`` is a
function of ``w_t``, and ``(I − P)z_t`` is Gaussian, uncorrelated with
``w_t``, hence independent of every ``w``. The run ``(w_1, …, w_T)`` fixes
``a_T``; given it, ``Z = Σ_t z_t`` is Gaussian with mean ``ΦᵀK⁺W``
(``W = Σ_t w_t``) and covariance ``T(I − P)``, which depend on the run only
through ``W``. So drawing ``w_t ~ N(0, K)`` step by step and then
``Z | W`` gives ``(w_{1:T}, Z)``, hence ``θ_T = Φᵀa_T + sZ``, exactly the
joint law of Algorithm 1. With a square root ``F`` of ``K`` (``FFᵀ = K``,
``F`` of full column rank r), ``w_t = F g_t`` with ``g_t ~ N(0, I_r)``,
``Q = ΦᵀF^{−T}`` has orthonormal columns spanning the row space of Φ, and
``Z = Q·Σg_t + sqrt(T)(I − QQᵀ)ξ`` with ``ξ ~ N(0, I_p)``. Collecting terms:

.. math:: \\theta_T = \\Phi^\\top b + s\\sqrt{T}\\,\\xi, \\qquad
          b = a_T + s F^{-\\top}\\textstyle\\sum_t g_t - s\\sqrt{T} K^{+}\\Phi\\xi.

``F`` is the Cholesky factor when K is well conditioned, else ``UΛ^{1/2}`` from
an eigendecomposition truncated at ``1e6·(n + p)·eps·λ_max`` (a singular or
nearly singular K: p < n, duplicated, near-duplicate or zero rows; below
that, float64 does not resolve an eigenvalue, see :class:`GramFactor`); no
jitter is added, which would change the law. Which factor runs depends on
K, but both give θ_T the same law (every kept direction to about 1e-6).

**Normalised rows, for every finite input.** Everything above is run on
``Φ̃``, Φ with each row divided by its norm ``r_i`` (a zero row stays 0),
so ``K̃ = Φ̃Φ̃ᵀ`` has entries in [−1, 1]: with ``g_i = ℓ'_i r_i φ̃_i`` the
clipped gradient is ``c_i ℓ'_i r_i`` (a scalar of size at most C) times
``φ̃_i``, the predictions are ``u = r ⊙ ũ`` with ``ũ = Φ̃θ``, and
``θ_T = Φ̃ᵀb̃ + s√T ξ`` as above; the same algebra, so the same law. In Φ's
own coordinates a record whose features are tiny (``x = 1e-200``: norm
1e-200, whose squares underflow in K) had ``K_ii = 0``, hence no clip,
and a dual coefficient of size ``|ℓ'|`` moved θ by 1e98 for a clip of 1.
Here ``r`` is computed free of underflow and every dual coefficient is at
most ``T·η·C/n``.

**Released.** Only θ_T. ``a_T``, ``b``, ``u``, ``W``, ``ξ`` and K are indexed by
training rows or read the features of the data; none leaves this module.

**Cost.** Two passes over blocks of feature columns (``O(npd)`` each, plus
``O(n²p)`` for K), ``O(n³)`` once, ``O(n²)`` per step; memory ``O(n²)`` plus
one ``n × block`` feature block, never the ``n × p`` matrix Φ.
"""

import numpy as np
import scipy.linalg as la
from scipy.linalg import lapack

from .._clipping import row_norms
from .._dpgd import _Progress
from ..exceptions import MechanismFailedError
from ._features import column_blocks, features

# Cholesky is used when LAPACK's estimate of 1/cond(K) is at least this (its
# solves then lose at most ~1e-6 relative accuracy); otherwise the truncated
# eigendecomposition (about 6× slower, robust to rank loss).
_MIN_RCOND_CHOLESKY = 1e-10

# Kept directions of K: eigenvalues above this many times K's rounding error
# (see GramFactor).
_RESOLUTION = 1e6

# Below this row norm, some squares of the row's features may have underflowed
# in the Gram matrix: those rows of K̃ are recomputed from normalised features.
_SMALLEST_NORM = 1e-140


class GramFactor:
    """A square root ``F`` of the Gram matrix K (``FFᵀ = K``) and its solves.

    Only directions of K resolved by float64 are kept. K sums p products per
    entry, so it is known to about ``(n + p)·eps·||K||`` (absolute), and an
    eigenvalue near that is known to no digit: kept, its direction's noise in
    θ came out with a wrong variance (a near-duplicate record gave one, and
    3/4 of the noise in that direction; a review). The cut is
    ``_RESOLUTION = 1e6`` times that error, so that every kept direction is
    exact to about 1e-6 relative; a cut direction gets its noise in θ in
    full from ξ, and only the predictions (which decide the clips) miss a
    noise component of variance below the cut. The Cholesky factor is used
    only when K's smallest eigenvalue is above the cut too.
    """

    def __init__(self, gram, *, may_be_definite=True, n_features=None):
        n = gram.shape[0]
        p = n if n_features is None else n_features
        resolution = _RESOLUTION * (n + p) * np.finfo(float).eps
        # With p < n features K = ΦΦᵀ is singular (rank ≤ p), and at p = n
        # it is nearly so (cond ~1e9 for tanh features at n = 2000): skip the
        # Cholesky attempt, which would fail its condition check.
        self._cholesky = (
            _well_conditioned_cholesky(gram, resolution) if may_be_definite else None
        )
        if self._cholesky is not None:
            self.rank = n
            return
        eigvals, eigvecs = la.eigh(gram, check_finite=False)
        top = max(eigvals[-1], 0.0)
        keep = eigvals > resolution * top
        self._sqrt_eigvals = np.sqrt(eigvals[keep])
        self._eigvecs = eigvecs[:, keep]
        self.rank = int(keep.sum())

    def times(self, G):
        """``F @ G`` for ``G`` of shape ``(rank, m)``."""
        if self._cholesky is not None:
            return self._cholesky @ G
        return (self._eigvecs * self._sqrt_eigvals) @ G

    def inverse_transpose_times(self, g):
        """``F^{−T} g`` (the pseudo-inverse when K is singular)."""
        if self._cholesky is not None:
            return la.solve_triangular(self._cholesky, g, lower=True, trans="T")
        return self._eigvecs @ (g / self._sqrt_eigvals)

    def pinv_times(self, h):
        """``K⁺ h``."""
        if self._cholesky is not None:
            return la.cho_solve((self._cholesky, True), h)
        return self._eigvecs @ ((self._eigvecs.T @ h) / self._sqrt_eigvals**2)


def _well_conditioned_cholesky(gram, resolution):
    """The lower Cholesky factor of K if it exists and K is well conditioned:
    LAPACK's estimate of 1/cond(K) at least ``_MIN_RCOND_CHOLESKY`` and
    ``resolution`` (the relative size of the smallest eigenvalue kept)."""
    try:
        chol = la.cholesky(gram, lower=True, check_finite=False)
    except la.LinAlgError:
        return None
    rcond, info = lapack.dpocon(chol, np.abs(gram).sum(axis=0).max(), uplo="L")
    good = info == 0 and rcond >= max(_MIN_RCOND_CHOLESKY, resolution)
    return chol if good else None


def gram_pass(X, weights, activation, xi):
    """First pass over feature blocks: ``K̃ = Φ̃Φ̃ᵀ``, ``h̃ = Φ̃ξ`` and the norms r.

    K and h are summed from Φ and divided by the norms afterwards, which are
    exact for every row (per block free of over/underflow, combined with
    hypot). Rows of norm below ``_SMALLEST_NORM`` (whose squares may have
    underflowed) are recomputed from normalised features, in one more pass
    that runs only when there are such rows.
    """
    n = X.shape[0]
    gram, h, norms = np.zeros((n, n)), np.zeros(n), np.zeros(n)
    for cols in column_blocks(n, weights.shape[1]):
        A = features(X, weights, activation, cols)
        gram += A @ A.T
        h += A @ xi[cols]
        norms = np.hypot(norms, row_norms(A))
    usual = norms >= _SMALLEST_NORM
    inverse = np.divide(1.0, norms, out=np.zeros(n), where=usual)
    gram *= inverse[:, None]
    gram *= inverse
    h *= inverse
    tiny = np.flatnonzero(~usual & (norms > 0))
    if tiny.size:
        _normalised_rows(X, weights, activation, xi, norms, tiny, gram, h)
    return gram, h, norms


def _normalised_rows(X, weights, activation, xi, norms, rows, gram, h):
    """Rows and columns ``rows`` of K̃, and entries of h̃, from Φ̃ itself."""
    part, h_part = np.zeros((rows.size, X.shape[0])), np.zeros(rows.size)
    for cols in column_blocks(X.shape[0], weights.shape[1]):
        A = normalised_features(X, weights, activation, cols, norms)
        part += A[rows] @ A.T
        h_part += A[rows] @ xi[cols]
    gram[rows, :] = part
    gram[:, rows] = part.T
    h[rows] = h_part


def normalised_features(X, weights, activation, cols, norms):
    """Columns ``cols`` of Φ̃: each row of features divided by its norm."""
    A = features(X, weights, activation, cols)
    return np.divide(A, norms[:, None], out=A, where=norms[:, None] > 0)


def transpose_pass(X, weights, activation, b, norms):
    """Second pass: ``Φ̃ᵀb``, recomputing the same feature blocks."""
    out = np.empty(weights.shape[1])
    for cols in column_blocks(X.shape[0], weights.shape[1]):
        out[cols] = normalised_features(X, weights, activation, cols, norms).T @ b
    return out


def dual_iterates(
    gram,
    norms,
    y,
    datafit,
    factor,
    *,
    clip_norm,
    step,
    noise_std,
    n_iter,
    rng,
    progress,
):
    """Run the n-dimensional recursion on K̃; return ``ã_T`` and ``Σ_t g_t``.

    ``step`` is ``η/n``; ``norms`` the feature rows' norms r. Noise is drawn
    as ``w̃_t = F g_t`` in chunks of steps, with one matrix product per chunk.
    """
    n = gram.shape[0]
    preds, dual = np.zeros(n), np.zeros(n)  # ũ = Φ̃θ and ã
    noise_sum = np.zeros(factor.rank)
    chunk = max(1, min(n_iter, (1 << 22) // max(n, 1)))
    for start in range(0, n_iter, chunk):
        G = rng.standard_normal((factor.rank, min(chunk, n_iter - start)))
        noise_sum += G.sum(axis=1)
        noise = noise_std * factor.times(G)
        for j in range(G.shape[1]):
            with np.errstate(all="ignore"):
                raw = datafit.raw_grad(y, (norms * preds)[:, None])[:, 0]
                # As in the primal engine: a non-finite gradient contributes 0.
                raw[~np.isfinite(raw)] = 0.0
                # Record i's gradient ℓ'_i·r_i·φ̃_i, clipped to norm C: its
                # length along the unit φ̃_i, ℓ'_i·r_i, clipped to ±C (an
                # overflow to ±inf clips to ±C; r is finite, so 0·r is 0).
                length = raw * norms
            v = step * np.clip(length, -clip_norm, clip_norm, out=length)
            dual -= v
            preds = preds - gram @ v + noise[:, j]
            progress.step(start + j)
    return dual, noise_sum


def kernel_dpgd(
    X,
    y,
    weights,
    activation,
    datafit,
    *,
    clip_norm,
    noise_multiplier,
    n_iter,
    learning_rate,
    cost,
    rng,
    mechanism,
    verbose=0,
):
    """θ_T of Algorithm 1 (no intercept, θ_0 = 0), drawn by the kernel form.

    Same arguments and meaning as the primal run of :func:`skdp._dpgd.dpgd`
    on the features ``φ(X)`` with ``fit_intercept=False`` and
    ``solver="gd"``; ``cost`` is the guarantee being spent (for progress
    output). Returns θ_T of shape ``(p,)``; raises
    :class:`~skdp.exceptions.MechanismFailedError` if it is not finite.
    """
    n, p = X.shape[0], weights.shape[1]
    sum_noise_std = noise_multiplier * 2.0 * clip_norm
    noise_std = learning_rate * sum_noise_std / n  # s: on θ, per step
    progress = _Progress(mechanism, n_iter, verbose)
    progress.start(cost, sum_noise_std, n, p)
    xi = rng.standard_normal(p)
    gram, h, norms = gram_pass(X, weights, activation, xi)
    progress.phase(f"pass 1 of 2 over the {p} features done")
    factor = GramFactor(gram, may_be_definite=p > n, n_features=p)
    dual, noise_sum = dual_iterates(
        gram,
        norms,
        y,
        datafit,
        factor,
        clip_norm=clip_norm,
        step=learning_rate / n,
        noise_std=noise_std,
        n_iter=n_iter,
        rng=rng,
        progress=progress,
    )
    root_t = np.sqrt(n_iter)
    b = (
        dual
        + noise_std * factor.inverse_transpose_times(noise_sum)
        - noise_std * root_t * factor.pinv_times(h)
    )
    theta = transpose_pass(X, weights, activation, b, norms)
    theta += noise_std * root_t * xi
    if not np.isfinite(theta).all():  # checked on the private output only
        raise MechanismFailedError(
            f"{mechanism} produced a non-finite model; lower the learning rate."
        )
    progress.done(cost)
    return theta
