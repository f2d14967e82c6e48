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
* ``a_t = a_{t−1} − v_t``, and ``θ_T = Φᵀa_T + s·Z`` with ``Z = Σ_t z_t``.

**Exactness (same law as Algorithm 1, so the same privacy).** Draw the noise
backwards: first ``Z = √T·ξ`` with ``ξ ~ N(0, I_p)`` (its law), which fixes
``W = Σ_t w_t = ΦZ`` (one product in the pass that builds K). Given Z, the
partial sums ``Σ_{k≤t} z_k`` are a Gaussian bridge from 0 to Z, and their
images under Φ a bridge in R^n with steps of covariance K, from 0 to W. Such
a bridge is drawn step by step: with m = T − t + 1 steps left and
``N = Σ_{k<t} w_k``,

.. math:: w_t = \\frac{W - N}{m} + \\sqrt{1 - 1/m}\\; F g_t,
          \\qquad g_t \\sim N(0, I), \\quad FF^\\top = K,

(the law of the first of m i.i.d. ``N(0, K)`` steps given their sum), so the
last step lands on W exactly. ``(w_1, …, w_T, Z)`` then has the joint law of
Algorithm 1's noise, and ``θ_T = Φᵀa_T + s√T·ξ`` with the run's ``a_T``:
exactly Algorithm 1's θ_T. F is any square root of K; the run takes the
Cholesky factor of ``K̃ + λI`` with a tiny public λ (below, A fixed cost).

**Accuracy.** θ_T's noise, ``s√T·ξ``, is exact to rounding. The steps'
noise has covariance ``FFᵀ = K + E``: nothing is solved with K, so every
direction of K, however small its eigenvalue, keeps its noise in the
predictions that decide the clips, and ``E`` is rounding: ``‖E‖₂`` of
about ``n·eps`` for the normalised K below (entries in [−1, 1]; K itself
carries ``p·eps`` per entry). In a direction whose exact variance is
nearly 0 (two records almost equal) the predictions' noise is thus off by
a standard deviation of about ``sqrt(n·eps)·s``, 1e-7·s at n = 10⁴ (the
primal's rounding there is ``sqrt(p)·eps·s``). A square root exact to
rounding there (the R of a QR of Φᵀ) would cost 4-5 times the Gram
product. (An earlier form solved with K and dropped the directions below
``1e6·(n + p)·eps·λ_max``: the predictions then lacked up to ``1e-3·s`` of
noise in directions that depend on the data, outside the proof.)

**Normalised rows, for every finite input.** Everything above is run on
``Φ̃``, Φ with each row divided by its norm ``r_i`` (a zero row stays 0),
so ``K̃ = Φ̃Φ̃ᵀ`` has entries in [−1, 1]: with ``g_i = ℓ'_i r_i φ̃_i`` the
clipped gradient is ``c_i ℓ'_i r_i`` (a scalar of size at most C) times
``φ̃_i``, the predictions are ``u = r ⊙ ũ`` with ``ũ = Φ̃θ``, and
``θ_T = Φ̃ᵀã_T + s√T ξ`` as above; the same algebra, so the same law. In Φ's
own coordinates a record whose features are tiny (``x = 1e-200``: norm
1e-200, whose squares underflow in K) had ``K_ii = 0``, hence no clip,
and a dual coefficient of size ``|ℓ'|`` moved θ by 1e98 for a clip of 1.
Here ``r`` is computed free of underflow and every dual coefficient is at
most ``T·η·C/n``. A row of norm below ``SMALLEST_NORM`` = 1e-140 (whose
squares may have underflowed in K) is run as a zero row: a fixed map of the
record's own features, like a clip, so the guarantee is unchanged; the
primal solver zeroes the same rows, so that both run one mechanism.
(Recomputing those rows exactly took one more pass over the features,
which one such record triggered: a timing channel.)

**Released.** Only θ_T. ``a_T``, ``u``, ``W``, ``ξ`` and K are indexed by
training rows or read the features of the data; none leaves this module.

**A fixed cost: the jitter.** The steps' noise is drawn with the Cholesky
factor of ``K̃ + λI`` (λ = :func:`gram_jitter`, public: n, p), which
completes for every finite input and costs the same on any data. (Factoring
K̃ itself failed where two records were equal, and the eigendecomposition
that took over ran three to four times as long: one duplicated record was
visible in the running time, and in the times ``verbose`` prints.) The
bridge of covariance ``K̃ + λI`` from 0 to W has the law of the bridge of
K̃ from 0 to W plus an independent bridge of ``λI`` from 0 to 0 (two
independent Gaussian bridges add: the means add, ``W + 0``, and so do the
covariances ``(min(s, t) − st/T)·(K̃ + λI)``). So the run is Algorithm 1
whose clip factors are read at predictions moved by a process ``s·B_t``
that is drawn independently of the data (B_T = 0): each step's clipped
gradient still has norm at most C, its noise is unchanged, and the
adaptive composition of the T Gaussian steps, given any value of B, is
the same μ; θ_T is exactly ``Φ̃ᵀã_T + s√T·ξ`` as before.

**Cost.** Two passes over blocks of feature columns (``O(npd)`` each, plus
``O(n²p)`` for K), ``O(n³)`` once (the square root), ``O(n²)`` per step;
memory ``O(n²)`` plus one ``n × block`` feature block, never the ``n × p``
matrix Φ.
"""

import numpy as np
import scipy.linalg as la

from .._base import check_cost_before_steps
from .._clipping import row_norms
from .._dpgd import _Progress
from ..exceptions import MechanismFailedError
from ._features import SMALLEST_NORM, column_blocks, features

# Noise for as many steps at once as fit in this many values (n per step).
_CHUNK_VALUES = 1 << 22


def gram_jitter(n, p):
    """The public ``λ = 2·n·(n + p)·eps`` added to K̃'s diagonal.

    K̃ (n × n, entries in [−1, 1], so ‖K̃‖₂ ≤ n) carries a rounding error of
    at most ``p·eps`` per entry (‖E‖₂ ≤ n·p·eps), and Cholesky's backward
    error is about ``n·eps·‖K̃‖₂ ≤ n²·eps``: above both, the factorisation
    of ``K̃ + λI`` completes for every finite input (module docstring, A
    fixed cost). Its noise, ``sqrt(λ)`` per prediction next to K̃'s 1, is
    9e-5 of it at n = 2500, p = 5000.
    """
    return 2.0 * n * (n + p) * np.finfo(np.float64).eps


def gram_square_root(gram, jitter=0.0):
    """A square root ``F`` with ``FFᵀ = K + jitter·I`` (to rounding).

    The Cholesky factor of ``K + jitter·I``, whose cost (n³/3 flops) does not
    depend on the data; should LAPACK not complete it (not expected for a
    finite input at :func:`gram_jitter`), ``UΛ^{1/2}`` from an
    eigendecomposition of K, with the negative (rounding-level) eigenvalues
    set to 0. Only products ``F·G`` are taken, never a solve, so a tiny
    eigenvalue needs no correct digit: its direction gets noise of about its
    size in the predictions, as in Algorithm 1 (module docstring, Accuracy).
    Should LAPACK's default eigensolver not converge, the QR-iteration
    driver is used, so that no data-dependent error escapes.
    """
    jittered = gram + jitter * np.eye(gram.shape[0]) if jitter else gram
    try:
        return la.cholesky(jittered, lower=True, check_finite=False)
    except la.LinAlgError:
        pass
    try:
        eigvals, eigvecs = la.eigh(gram, check_finite=False)
    except la.LinAlgError:
        eigvals, eigvecs = la.eigh(gram, check_finite=False, driver="ev")
    keep = eigvals > 0  # the others contribute nothing (at most rounding)
    return eigvecs[:, keep] * np.sqrt(eigvals[keep])


def gram_pass(X, weights, activation, xi):
    """First pass over feature blocks: ``K̃ = Φ̃Φ̃ᵀ``, ``h̃ = Φ̃ξ`` and the norms r.

    K and h are summed from Φ and divided by the norms afterwards, which are
    exact for every row (per block free of over/underflow, combined with
    hypot). Rows of norm below ``SMALLEST_NORM`` (whose squares may have
    underflowed) are zero rows, with norm 0 (module docstring, Normalised
    rows): the pass costs the same whatever the rows.
    """
    n = X.shape[0]
    gram, h, norms = np.zeros((n, n)), np.zeros(n), np.zeros(n)
    for cols in column_blocks(n, weights.shape[1]):
        A = features(X, weights, activation, cols)
        gram += A @ A.T
        h += A @ xi[cols]
        norms = np.hypot(norms, row_norms(A))
    norms[norms < SMALLEST_NORM] = 0.0  # zero rows (see the module docstring)
    inverse = np.divide(1.0, norms, out=np.zeros(n), where=norms > 0)
    gram *= inverse[:, None]
    gram *= inverse
    h *= inverse
    return gram, h, norms


def normalised_features(X, weights, activation, cols, norms):
    """Columns ``cols`` of Φ̃: each row of features divided by its norm (a
    row of norm 0, see :func:`gram_pass`, is 0)."""
    A = features(X, weights, activation, cols)
    return np.divide(A, norms[:, None], out=np.zeros_like(A), where=norms[:, None] > 0)


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
    root,
    noise_total,
    *,
    clip_norm,
    step,
    noise_std,
    n_iter,
    rng,
    progress,
):
    """Run the n-dimensional recursion on K̃; return ``ã_T`` and ``ũ_T``.

    ``step`` is ``η/n``; ``norms`` the feature rows' norms r; ``root`` a
    square root of K̃; ``noise_total`` is ``W̃ = Φ̃Z``, where the steps'
    noise must land. The steps' noise ``w̃_t`` is the bridge of the module
    docstring, its fresh parts drawn in chunks of steps with one matrix
    product per chunk.
    """
    n = gram.shape[0]
    preds, dual = np.zeros(n), np.zeros(n)  # ũ = Φ̃θ and ã
    walked = np.zeros(n)  # Σ_{k<t} w̃_k
    chunk = max(1, min(n_iter, _CHUNK_VALUES // max(n, 1)))
    for start in range(0, n_iter, chunk):
        size = min(chunk, n_iter - start)
        fresh = root @ rng.standard_normal((root.shape[1], size))
        for j in range(size):
            left = n_iter - start - j  # steps left, this one included
            noise = (noise_total - walked) / left
            noise += np.sqrt(1.0 - 1.0 / left) * fresh[:, j]
            walked += noise
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
            preds = preds - gram @ v + noise_std * noise
            progress.step(start + j)
    return dual, preds


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
    check_cost_before_steps(cost)
    progress = _Progress(mechanism, n_iter, verbose)
    progress.start(cost, sum_noise_std, n, p)
    xi = rng.standard_normal(p)  # Z = √T·ξ, the steps' noise summed
    gram, h, norms = gram_pass(X, weights, activation, xi)
    progress.phase(f"pass 1 of 2 over the {p} features done")
    root_t = np.sqrt(n_iter)
    dual, _ = dual_iterates(
        gram,
        norms,
        y,
        datafit,
        gram_square_root(gram, gram_jitter(n, p)),
        root_t * h,
        clip_norm=clip_norm,
        step=learning_rate / n,
        noise_std=noise_std,
        n_iter=n_iter,
        rng=rng,
        progress=progress,
    )
    theta = transpose_pass(X, weights, activation, dual, norms)
    theta += noise_std * root_t * xi
    if not np.isfinite(theta).all():  # checked on the private output only
        raise MechanismFailedError(
            f"{mechanism} produced a non-finite model; lower the learning rate. "
            "The noisy steps ran: the budget of this fit is spent, and a "
            "refit on the same data spends it again."
        )
    progress.done(cost)
    return theta
