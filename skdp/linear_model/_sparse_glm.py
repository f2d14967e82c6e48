"""DPSparseGLM: noisy iterative hard thresholding with private peeling (paper 003, §5).

The fit is Algorithm 5 of Cai, Wang & Zhang (Score Attack): ``T`` steps of
gradient descent on the GLM loss, each followed by a private hard
thresholding (Algorithm 3, "NoisyHT"): ``s`` coordinates are selected by
peeling (report-noisy-max, one coordinate per round) and only their values
are released, with noise. Nothing else about the data leaves a step.

Sensitivity. Feature entries are clipped to ``[-x_bound, x_bound]`` and each
record's residual ``ψ'(z) - y`` to ``[-r, r]`` (``r = residual_bound``), so
replacing one record moves every coordinate of ``v = β - (η/n)·Σ_i r_i x_i``
by at most ``λ = 2·η·r·x_bound/n`` (the intercept is a constant column of
value ``min(1, x_bound)``, moved by no more), whatever the record's response.
The response itself is not truncated: the paper's ``Π_R(y)`` is not needed
for this bound (the residual clip alone gives it) and biased the fit (a
truncated response makes the fixed point shrink toward 0). The selection sees
``|v_j|``, which moves by at most λ too; the released values, by at most
``λ·sqrt(k)`` in L2 for ``k`` released coordinates.

Two calibrations, both accounted by :func:`_privacy_of`:

* ``"exact"``: Gumbel peeling (the exponential mechanism, ``ε_p = 2λ/g``,
  ε_p-bounded-range, hence ``ε_p²/8``-zCDP: Cesar & Rogers 2021) and a
  Gaussian release of the ``k`` values (``kλ²/(2σ²)``-zCDP); all ``2sT``
  steps add up in zCDP, converted to (ε, δ) with the conversion of Canonne,
  Kamath & Steinke (2020).
* ``"paper"``: the paper's Laplace peeling and Laplace release at
  ``(ε/T, δ/T)`` per step with its sensitivity constant ``B = 4(R + c1)σ_x``
  (Lemma 5.1, 5.4), under the condition that Lemma 5.1 leaves implicit
  (the advanced composition behind it must fit in ε/T; about
  ``ε/T <= 0.21·log(T/δ)``), which is checked.
"""

import math
import warnings
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.utils._param_validation import Hidden, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._base import (
    CLIP_CONSTRAINT,
    PRIVACY_CONSTRAINTS,
    DaskScoreMixin,
    DPEstimatorMixin,
    check_cost_before_steps,
    dense_float_rows,
    is_dask_array,
    private_fit,
    require_positive_delta,
    sum_over_rows,
    warn_if_delta_is_large,
    with_ones_column,
)
from .._clipping import csr_keeping_duplicates
from .._datafits import BinomialLogistic, Poisson, Quadratic
from .._dpgd import _Progress, clipped_gradient_sum
from .._inputs import SPARSE_FIT_FORMATS, finite_targets
from ..accounting import (
    REPLACE_ONE,
    PrivacyCost,
    epsilon_from_zcdp_tight,
    format_dp,
    format_up,
    secure_laplace_epsilon,
    zcdp_from_epsilon_tight,
)
from ..exceptions import MechanismFailedError
from ..mechanisms import add_gaussian_noise, add_laplace_noise, as_generator, peel_top_k

# Paper 003 (Lemma 5.4) calibrates to B = 4(R + c1)σ_x; with the residual
# clipped to r (R = c1 = r) replace-one needs only 2·r·σ_x.
_PAPER_SENSITIVITY_RATIO = 4.0
# Share of each step's zCDP budget spent on the selection (the rest goes to
# the released values). The review (spec review §3e) splits evenly; 0.6 gave
# the lowest error and surest support recovery over the three families at
# n = 20000, d = 500, s* = 5, ε = 1, T = 6 (8 seeds; 0.5 missed the Poisson
# support once in 8).
_SELECTION_SHARE = 0.6
# Per-step contraction κ of the IHT error at the default step sizes: the
# factor (1 - ρα/(2γ)) of Proposition 5.3 / (C.16), whose absolute constant ρ
# the paper leaves unspecified. Measured with the noise off on
# make_sparse_glm data (n = 3·10⁴ and 10⁵, d = 800, s* = 10; ratio of
# successive ℓ2 errors before the statistical floor): logistic 0.74-0.79,
# poisson 0.55-0.77 (0.72 over steps 3-8); gaussian reaches its floor in two
# steps (η = 1 is a Newton step when E xxᵀ = I; 0.1 bounds what is left).
_CONTRACTION = {"gaussian": 0.1, "poisson": 0.72, "logistic": 0.78}
# Upper end of the search for the automatic T (reached only when n·ε is
# astronomically large; each step costs O(nnz(X))).
_MAX_AUTO_ITER = 200
_DEFAULT_SPARSITY = 10
# Scales are multiplied by this before use, so that the rounding of the
# calibration can never leave the reported ε above the target.
_SAFETY = 1.0 + 1e-9
#: The step sensitivities λ a fixed-step fit takes: from 1e-300 (λ and its
#: noise normal floats, a step's rounding in the subnormals 1e-23 of λ at
#: most) to 1e250 (its noise, λ times at most ~1e11 for any accepted ε, T
#: and k, finite with room for the iterates). The clip constants' own range
#: gives λ from 1e-200/n to 2e200·η.
_SENSITIVITY_RANGE = (1e-300, 1e250)


# ---------------------------------------------------------------------------
# zCDP conversion (tighter than Bun & Steinke) and the two calibrations
# ---------------------------------------------------------------------------


def _advanced_composition(epsilons, delta):
    """Advanced composition of pure ε_i-DP steps (Dwork, Rothblum & Vadhan 2010).

    ``sqrt(2·log(1/δ)·Σε_i²) + Σ ε_i·(e^{ε_i} - 1)``, with δ spent on the
    composition.
    """
    eps = np.asarray(epsilons, dtype=float)
    return float(
        math.sqrt(2.0 * -math.log(delta) * np.sum(eps**2)) + np.sum(eps * np.expm1(eps))
    )


def _exact_scales(
    epsilon, delta, *, sensitivity, sparsity, n_released, n_features, n_iter
):
    """Gumbel scale g and Gaussian σ spending ρ(ε, δ) evenly over the steps.

    Per step, s Gumbel peels cost ``s·(2λ/g)²/8`` and the release costs
    ``kλ²/(2σ²)``. When every feature is selected (s = d) the selection
    releases nothing and costs nothing, so the release gets the whole step.
    """
    rho_step = zcdp_from_epsilon_tight(epsilon, delta) / n_iter
    share = _SELECTION_SHARE if sparsity < n_features else 0.0
    if share > 0:
        eps_peel = math.sqrt(8.0 * share * rho_step / sparsity)
        selection = _SAFETY * 2.0 * sensitivity / eps_peel
    else:
        selection = 0.0
    release = (
        _SAFETY * sensitivity * math.sqrt(n_released / (2.0 * (1.0 - share) * rho_step))
    )
    return selection, release


def _paper_scale(epsilon, delta, *, sensitivity, sparsity, n_released, n_iter):
    """Laplace scale of Algorithm 3 at (ε/T, δ/T) with the paper's λ = η·B/n.

    ``b = λ_paper · 2·sqrt(3·s·log(T/δ)) · T/ε`` with ``λ_paper = 4·λ``
    (``B = 4(R + c1)σ_x``); s counts the intercept when one is released.
    Raises if Lemma 5.1's implicit condition fails: by the reconstruction in
    the spec review (§3c), each NoisyHT is (ε/T, δ/T)-DP only if the advanced
    composition of its 2s Laplace steps fits in ε/T.
    """
    eps_step, delta_step = epsilon / n_iter, delta / n_iter
    lam = _PAPER_SENSITIVITY_RATIO * sensitivity
    b = lam * 2.0 * math.sqrt(3.0 * n_released * -math.log(delta_step)) / eps_step
    claimed = _advanced_composition(
        [2.0 * lam / b] * sparsity + [lam / b] * n_released, delta_step
    )
    if claimed > eps_step:
        raise ValueError(
            f"accounting='paper' cannot reach epsilon={epsilon:g}: the per-step "
            f"budget epsilon/T = {eps_step:.4g} is too large for Lemma 5.1, whose "
            "advanced-composition proof needs roughly epsilon/T <= "
            f"0.21*log(T/delta) = {0.21 * -math.log(delta_step):.4g}. Use "
            "accounting='exact', a smaller epsilon or more iterations."
        )
    return b


def _privacy_of(
    selection,
    release,
    *,
    accounting,
    sensitivity,
    sparsity,
    n_released,
    n_features,
    n_iter,
    delta,
    secure=False,
):
    """zCDP parameter and (ε, δ) of the noise actually used, all 2sT steps composed.

    ``secure`` (``noise="secure"``, Laplace only): every peel and released
    value is charged ``2^-16`` more ε for the grid rounding
    (:func:`skdp.accounting.secure_laplace_epsilon`).

    ``"exact"``: ``ρ = T·(s·(2λ/g)²/8 + kλ²/(2σ²))``. ``"paper"``: Laplace
    peels are ``2λ/b``-DP and each released value ``λ/b``-DP; the reported ε
    is the smaller of (i) zCDP (``ε_i²/2`` each) and (ii) the paper's route,
    advanced composition within a step at δ/T and basic composition over the
    T steps. ``λ`` is the true sensitivity, not the paper's constant.
    """
    selects = sparsity < n_features
    if accounting == "exact":
        rho_peel = (2.0 * sensitivity / selection) ** 2 / 8.0 if selects else 0.0
        # Ratios before squares: λ may be 1e-160, whose square underflows.
        rho = n_iter * (
            sparsity * rho_peel + n_released * (sensitivity / release) ** 2 / 2.0
        )
        return rho, epsilon_from_zcdp_tight(rho, delta)
    if secure:
        peel = secure_laplace_epsilon(2.0 * sensitivity, selection)
        value = secure_laplace_epsilon(sensitivity, release)
    else:
        peel, value = 2.0 * sensitivity / selection, sensitivity / release
    step = [peel] * (sparsity if selects else 0) + [value] * n_released
    rho = n_iter * float(np.sum(np.square(step))) / 2.0
    basic = n_iter * _advanced_composition(step, delta / n_iter)
    return rho, min(epsilon_from_zcdp_tight(rho, delta), basic)


# ---------------------------------------------------------------------------
# The algorithm
# ---------------------------------------------------------------------------


def representable_bound(bound, dtype):
    """The largest value of ``dtype`` that is not above ``bound``.

    Clipping a float32 array to ``float32(bound)`` can leave entries above
    ``bound`` (``float32(0.1) = 0.100000001...``), which would exceed the
    sensitivity ``λ = 2·η·r·bound/n`` the noise is calibrated to. The
    comparison is made in float64, where ``bound`` is exact.
    """
    dtype = np.dtype(dtype)
    rounded = dtype.type(bound)
    if float(rounded) > bound:
        rounded = np.nextafter(rounded, dtype.type(0.0))
    return rounded


def clip_features(X, bound):
    """Entries of X clipped to ``[-bound, bound]``: a copy, CSR made canonical.

    Every entry of the result is at most ``bound`` in absolute value, exactly,
    in X's own dtype (see :func:`representable_bound`). A sparse X has its
    duplicate entries summed first, so that the clip bounds the entries that
    ``X @ coef`` reads; a sum that overflows to ±inf is clipped like any
    other large value (to ±bound), so a record stored that way is fitted as
    its neighbours are, rather than raising (an error that only some inputs
    trigger would itself reveal them).
    """
    limit = representable_bound(bound, X.dtype)
    if sp.issparse(X):
        X = csr_keeping_duplicates(X).copy()
        # Summing finite duplicates one after another gives a finite value or
        # ±inf, never NaN (inf plus a finite value stays inf); only
        # overflow is silenced here, and the clip maps ±inf to ±bound.
        with np.errstate(over="ignore"):
            X.sum_duplicates()
        np.clip(X.data, -limit, limit, out=X.data)
        return X
    return np.clip(X, -limit, limit)


def _clipped_design(X, bound):
    """:func:`clip_features` of X; of each chunk (lazily) for a Dask array."""
    if is_dask_array(X):
        return X.map_blocks(clip_features, bound, dtype=X.dtype)
    return clip_features(X, bound)


def _is_binary(y):
    return bool(np.isin(y, (0.0, 1.0)).all())


def _is_count(y):
    return bool((y >= 0).all())


#: Per-chunk checks of a Dask response, with the in-memory messages.
_RESPONSE_CHECKS = {
    "logistic": (
        _is_binary,
        "family='logistic' needs y in {0, 1}; y has other values.",
    ),
    "poisson": (
        _is_count,
        "Some value(s) of y are negative which is not allowed for "
        "family='poisson' (counts must be >= 0).",
    ),
}


def descent(X, y, datafit, theta, *, learning_rate, x_bound, residual_bound):
    """``u = -(η/n)·Σ_i clip_r(ψ'(z_i) - y_i)·(x_i, c)``: NoisyHT's move from θ.

    ``θ`` has shape ``(d + 1,)``, its last coordinate the intercept divided by
    ``c = min(1, x_bound)`` (the constant column's value). With the entries
    of X in ``[-x_bound, x_bound]``, one record moves each coordinate of the
    sum by at most ``r·x_bound`` (the engine clips the record's gradient to
    ∞-norm ``r·x_bound`` given the ∞-norm bound ``x_bound`` of ``(x_i, c)``:
    that clips the residual to ``±r``), so replacing it moves every
    coordinate of ``u`` by at most ``λ = 2·η·r·x_bound/n``, and every
    coordinate is at most ``η·r·x_bound`` in size.

    The move is returned apart from θ (public: a released iterate) so that
    the noise goes onto ``u`` itself: ``θ + u`` rounded to float64 moves by
    up to an ulp of θ between neighbours, which for a large θ (a Poisson
    start ``b₀/c`` at a small ``x_bound``) was many times λ (review: 30×
    at ``x_bound = 1e-6``, n = 20000).
    """
    n, d = X.shape
    c = min(1.0, x_bound)
    grad = clipped_gradient_sum(
        X,
        y,
        datafit,
        theta[:d, None],
        c * theta[d:],
        float(x_bound),  # every row's ∞-norm bound (one scalar for all rows)
        residual_bound * x_bound,
    )[:, 0]
    grad[d] *= c
    return -(learning_rate / n) * grad


def gradient_step(X, y, datafit, theta, *, learning_rate, x_bound, residual_bound):
    """``v = θ + u`` (:func:`descent`): the exact step, for references and tests."""
    return theta + descent(
        X,
        y,
        datafit,
        theta,
        learning_rate=learning_rate,
        x_bound=x_bound,
        residual_bound=residual_bound,
    )


def selection_rounding(theta, move_bound, sensitivity):
    """``1 + s``: how much further the float scores ``|θ_j + u_j|`` can move
    between neighbours than ``sensitivity``, the exact bound (public).

    Each of ``fl(η·D_j)`` and ``fl(θ_j + u_j)`` is off by at most 2⁻⁵³ of its
    size, with ``|u_j| <= move_bound``: a score moves by at most
    ``sensitivity + 2⁻⁵²·(|θ_j| + 2·move_bound)``. The selection's noise
    scale is multiplied by this factor, so that its ε stays the planned one
    (1 + 1e-13 for standardised features; large only where θ is huge next
    to the sensitivity).
    """
    largest = float(np.max(np.abs(theta), initial=0.0))
    return 1.0 + 2.0**-51 * (largest + move_bound) / sensitivity


def noisy_iht(
    X,
    y,
    datafit,
    *,
    sparsity,
    n_iter,
    learning_rate,
    x_bound,
    residual_bound,
    fit_intercept,
    selection,
    selection_scale,
    release,
    release_scale,
    rng,
    progress=None,
    iterates=None,
):
    """Noisy iterative hard thresholding (Score Attack, Algorithms 3-5).

    Each step: ``v = θ - (η/n)·Σ_i clip_r(ψ'(z_i) - y_i)·(x_i, c)`` with
    ``c = min(1, x_bound)``; select ``sparsity`` coordinates of ``|v|``
    (intercept excluded) with :func:`skdp.mechanisms.peel_top_k`; release
    ``v`` on them (and on the intercept) plus i.i.d. noise; zero the rest.
    Per step the noise is drawn in that order: the selection's, then the
    release's (``k`` values: the selected features in selection order, then
    the intercept).

    Parameters
    ----------
    X : {ndarray, CSR matrix} of shape (n, d)
        Entries already clipped to ``[-x_bound, x_bound]`` (callers use
        :func:`clip_features`); the sensitivity relies on it.
    y : ndarray of shape (n,)
        Finite responses, not truncated: the residual clip alone bounds a
        record's influence.
    datafit : object
        ``raw_grad(y, z)`` gives the residual ``ψ'(z) - y``.
    selection : {"gumbel", "laplace"}
    release : {"gaussian", "laplace"}
    selection_scale, release_scale : float
        Noise scales; both 0 gives the non-private IHT (references only).

    Returns
    -------
    coef : ndarray of shape (d,)
        Exactly ``sparsity`` entries are released (non-zero unless the noise
        is off).
    intercept : float
    support : ndarray of shape (sparsity,)
        The selected features, in selection order.
    """
    d = X.shape[1]
    c = min(1.0, x_bound)
    add_noise = {"gaussian": add_gaussian_noise, "laplace": add_laplace_noise}[release]
    theta = np.zeros(d + 1)  # the last coordinate is intercept / c
    support = np.arange(0)
    n = X.shape[0]
    move_bound = learning_rate * residual_bound * x_bound
    for t in range(n_iter):
        u = descent(
            X,
            y,
            datafit,
            theta,
            learning_rate=learning_rate,
            x_bound=x_bound,
            residual_bound=residual_bound,
        )
        rounding = selection_rounding(theta[:d], move_bound, 2.0 * move_bound / n)
        support = peel_top_k(
            np.abs(theta[:d] + u[:d]),
            sparsity,
            noise=selection,
            scale=selection_scale * rounding,
            rng=rng,
        )
        theta = _release_on_support(
            theta, u, support, fit_intercept, add_noise, release_scale, rng
        )
        _report_step(t, theta, iterates, progress)
    _check_finite(theta)
    return theta[:d], float(c * theta[d]), support


def _release_on_support(theta, u, support, fit_intercept, add_noise, scale, rng):
    """The next iterate: ``θ + u`` on the selected coordinates (and the
    intercept), with noise of the given scale on ``u`` (θ is public and added
    after the noise: :func:`descent`); zero elsewhere."""
    d = u.shape[0] - 1
    keep = np.append(support, d) if fit_intercept else support
    following = np.zeros(d + 1)
    following[keep] = theta[keep] + add_noise(u[keep], scale, rng)
    return following


def _report_step(t, theta, iterates, progress):
    """Keep the released iterate (for the divergence check) and show progress."""
    if iterates is not None:
        iterates.append(theta.copy())
    if progress is not None:
        progress.step(t, theta)


def _check_finite(theta):
    if not np.isfinite(theta).all():
        raise MechanismFailedError(
            "Noisy IHT produced a non-finite model; lower the learning rate. "
            "The noisy steps ran: the budget of this fit is spent, and a "
            "refit on the same data spends it again."
        )


# ---------------------------------------------------------------------------
# Private step size and number of steps (learning_rate="auto", exact)
# ---------------------------------------------------------------------------

# Share of ρ spent before the first step on the restricted conditioning
# (half on the first peel, half on the two extreme eigenvalues).
_PRE_SHARE = 0.1
# Shares of one later step's ρ: peeling, the curvature release, the values.
_STEP_SHARES = {"selection": 0.54, "curvature": 0.1, "values": 0.36}
# Poisson's start (``poisson_start``): share of ρ, bisection steps and the
# public range of the log mean count it searches. 12 steps halve the range
# to 0.007 in log scale. Measured on make_sparse_glm's counts (mean 1.4, n =
# 20000, d = 1000, ε = 1, 24 fits): coefficient error 0.258 ± 0.010 with no
# start, 0.258 ± 0.011 at 2% and 12 steps, 0.274 ± 0.014 at 5% and 16.
_START_SHARE = 0.02
_START_STEPS = 12
# The start is used only where its releases' noise, relative to r (public:
# n, ε, δ), is below this: above, a midpoint's score near the root, or below
# it for counts of mean < r, is read wrong often enough that the start lands
# decades off, and the steps 1/(e^{b₀}·γ) cannot bring it back (n = 200,
# ε = 1: noise 0.99·r, 40% of starts off by more than 3 in log scale;
# n = 2000: 0.1·r, none in 300; review).
_START_MAX_NOISE = 0.1
_START_RANGE = (-10.0, 20.0)
# Released curvatures are raised by this many noise standard deviations
# (an upper confidence bound), eigenvalue floors lowered by as many.
_CONFIDENCE_Z = 2.0
# Bound on the curvature weight ψ''(z) of each family: exact for gaussian (1)
# and logistic (1/4); poisson's e^z is unbounded (see curvature_weight).
_CURVATURE_WEIGHT = {"gaussian": 1.0, "poisson": 2.0, "logistic": 0.25}


def curvature_weight(family, residual_bound):
    """``w_f``, the bound on ψ'' that sets the default steps ``1/(w_f·γ)``.

    Gaussian 1 and logistic 1/4 are exact. Poisson's ψ''(z) = e^z is the
    mean count at the model, unbounded: ``max(2, r − 1)`` (``r`` the public
    ``residual_bound``). A step ``1/(w_f·γ)`` moves the coefficients by
    ``1/γ`` times at most ``r/w_f <= 1.5`` (the clipped residuals over
    ``w_f``), so the linear predictor of standardised rows moves by about
    1.5 per step at most. With the old constant 2 (mean counts up to about
    2, as at make_sparse_glm's coefficients and the default ``r`` = 3, which
    keep it) it moved by ``r/2``: Bikeshare's counts (mean 144, ``r`` = 197)
    overflowed e^z to predictions of 1e25 after one step (R² −1e44, no
    warning). With ``r − 1``: R² 0.41 at ε = 1 and 0.45 at ε = 1e6
    (scikit-learn's Poisson fit 0.69; the automatic T stops early there,
    the steps being short for counts far above their spread). ``r/2``
    oscillated on counts near ``r`` (R² −0.2 where ``r − 1`` converges).
    A public constant: it reads only the parameters. The public steps
    (``accounting="paper"``) use it; released step
    sizes use the curvature at Poisson's released start instead
    (:func:`poisson_start`).
    """
    if family == "poisson":
        return max(_CURVATURE_WEIGHT["poisson"], float(residual_bound) - 1.0)
    return _CURVATURE_WEIGHT[family]


# The automatic T of the private schedule stops here (O(T·nnz(X)) time).
_MAX_ADAPTIVE_ITER = 100
# ... and before the norm of a step's release noise exceeds this (standardised
# targets: a quarter of a unit-scale signal). Measured on diabetes (n = 331)
# and 50 equicorrelated features (n = 10⁴) at ε = 1 to 1e6: 0.5 let the noise
# swamp diabetes at ε = 1 (R² down to −6), 0.25 kept both.
_MAX_NOISE_NORM = 0.25
#: Release noise (norm) below which the automatic T ignores the sampling
#: error: a fifth of ``_MAX_NOISE_NORM``. Measured (seeded, 30 fits, the
#: target-scaling recipe on diabetes): R² at ε = 10 / 100 0.266 / 0.373
#: (0.266 / 0.330 with any noise counted, 0.202 / 0.219 with none).
_NEGLIGIBLE_NOISE = 0.05


def _gram_and_sums(cols):
    """``colsᵀcols`` (raveled) then the column sums of a block of rows.

    In float64 whatever X's dtype: a float32 entry clipped at 1.9e19 or more
    squares past float32's range, and whether the Gram matrix overflowed
    would depend on the data (the clip bounds the float64 sum, see
    :data:`skdp._base.MAX_CLIP`). A sum over rows, for
    :func:`~skdp._base.sum_over_rows` (a Dask block may be CSR).
    """
    cols = cols.astype(np.float64)
    gram = cols.T @ cols
    gram = gram.toarray() if sp.issparse(gram) else np.asarray(gram)
    return np.concatenate([gram.ravel(), np.asarray(cols.sum(axis=0)).ravel()])


def _column_gram(X, columns, c):
    """``(1/n)·A_Uᵀ A_U`` for the clipped columns U of X and the constant c."""
    n, k = X.shape[0], len(columns)
    total = sum_over_rows(_gram_and_sums, X[:, columns], (k * k + k,))
    out = np.empty((k + 1, k + 1))
    out[:k, :k] = total[: k * k].reshape(k, k)
    out[:k, k] = out[k, :k] = c * total[k * k :]
    out[k, k] = c * c * n
    return out / n


def curvature_sensitivity(n_columns, x_bound, n):
    """How much one record moves any eigenvalue of ``(1/n)·A_Uᵀ A_U``.

    Replacing record a by a' changes the matrix by ``(a'a'ᵀ - aaᵀ)/n``, a
    difference of two rank-one PSD matrices, so by Weyl's inequality every
    eigenvalue moves by at most ``max(‖a‖², ‖a'‖²)/n <= (|U|·x_bound² +
    c²)/n`` (``|U|`` clipped features and the constant column ``c = min(1,
    x_bound)``); the pair (largest, smallest) moves by at most √2 times that
    in L2 (Hoffman & Wielandt).
    """
    c = min(1.0, x_bound)
    return (n_columns * x_bound**2 + c * c) / n


def adaptive_budget(rho, n_iter, sparsity, n_features, start_share=0.0):
    """zCDP shares of the private schedule: ``(pre-pass peel, pre-pass
    eigenvalues, per-step unit u)``.

    ``start_share·ρ`` goes to Poisson's start (:func:`poisson_start`), then
    the pre-pass spends ``_PRE_SHARE·ρ``; step 0 only releases values
    (``values·u``), each later step peels (``selection·u``), releases a
    curvature (``curvature·u``) and values (``values·u``). ``u`` is set so
    that the total is exactly ρ whatever T. When every feature is selected
    the peels are free and their shares go to the values.
    """
    selects = sparsity < n_features
    pre = _PRE_SHARE * rho
    pre_peel, pre_eig = (pre / 2, pre / 2) if selects else (0.0, pre)
    shares = dict(_STEP_SHARES)
    if not selects:
        shares["values"] += shares.pop("selection")
        shares["selection"] = 0.0
    # rho = inf: the noise-free reference (nonprivate_iht)
    rest = rho - pre - start_share * rho if math.isfinite(rho) else math.inf
    unit = rest / (shares["values"] + (n_iter - 1))
    return pre_peel, pre_eig, unit, shares


def _adaptive_n_iter(kappa, sampling, release_unit, eta, n_released, budget):
    """T from the released conditioning, at most ``_MAX_ADAPTIVE_ITER``.

    The first T with ``κ^T <= sqrt(sampling + k·(η·σ_1(T))²)`` (the
    optimisation error below the error no step removes, as
    :meth:`DPSparseGLM._auto_n_iter`). With ``κ = 1`` (the released smallest
    eigenvalue cannot be told from 0: a badly conditioned design, or small
    n) that crossing would come only once the release noise had grown to the
    size of the signal; T then stops before the noise norm exceeds
    ``_MAX_NOISE_NORM`` (a quarter of a unit-scale coefficient vector), or
    before the floor does once the noise is above ``_NEGLIGIBLE_NOISE``, and
    at the first crossing if that comes earlier.
    """
    for n_iter in range(1, _MAX_ADAPTIVE_ITER + 1):
        unit, shares = budget(n_iter)
        std = eta * release_unit * math.sqrt(1.0 / (2.0 * shares["values"] * unit))
        noise = math.sqrt(n_released) * std
        floor = math.hypot(math.sqrt(sampling), noise)
        if kappa**n_iter <= floor:
            return n_iter
        # Noise below _NEGLIGIBLE_NOISE does not stop T: with the sampling
        # error alone above the cap, a small table stopped after one step at
        # any ε (ISLP Credit at n = 300, ε = 1e6: R² 0.71, 0.95 with 100
        # steps; new-user trial). Capping the noise alone instead let T grow
        # to 80 steps at ε = 100 on diabetes, whose noise cost more than the
        # steps gained (R² 0.33 -> 0.22).
        if noise > _MAX_NOISE_NORM or (
            floor > _MAX_NOISE_NORM and noise > _NEGLIGIBLE_NOISE
        ):
            return max(n_iter - 1, 1)
    return _MAX_ADAPTIVE_ITER


def _clipped_count_residuals(X, y, *, mean, bound):
    """``Σ_i clip(y_i - mean, ±bound)`` (a sum over rows; X only chunks them)."""
    residuals = np.asarray(y, dtype=np.float64) - mean
    return np.array([np.clip(residuals, -bound, bound).sum()])


def _start_std_over_r(n, rho_start):
    """Noise std over ``r`` of each of :func:`poisson_start`'s releases at
    its budget ``rho_start`` (sensitivity ``2r/n``, ``rho_start/K`` each)."""
    return _SAFETY * (2.0 / n) / math.sqrt(2.0 * rho_start / _START_STEPS)


def start_noise(n, rho):
    """Noise std of :func:`poisson_start`'s releases over ``r`` at a fit's
    budget ``rho`` (public)."""
    return _start_std_over_r(n, _START_SHARE * rho)


def poisson_start(X, y, residual_bound, rho, rng):
    """Poisson's start: a released log mean count ``b₀`` (the intercept-only fit).

    The intercept's score at ``θ = (0, b)``, ``S(b) = (1/n)·Σ_i clip_r(y_i -
    e^b)``, decreases in b, and its root is the intercept-only fit under the
    residual clip (the mean count when the clip is inactive, nearer the
    median when r is below the counts' spread). ``_START_STEPS`` steps of
    bisection on the public range ``_START_RANGE`` each release ``S`` at the
    midpoint with Gaussian noise (replace-one sensitivity ``2r/n``, ρ/K each,
    K the steps): the side kept is post-processing of that release, so the
    K releases compose adaptively to ρ. Returns ``b₀`` (the last interval's
    midpoint) and the record an accountant needs.

    Why: the Poisson loss's curvature is the mean count ``e^z``, unknown
    before the fit. From ``θ = 0`` counts of mean 158 took every step of a
    fit to bring the intercept up (steps clipped at r), and the step
    ``1/(w·γ)`` with ``w = r - 1`` oscillated around it (deviance 40-100
    against a null model's 22). From ``b₀`` with ``w = e^{b₀}`` the same
    fit reaches scikit-learn's deviance when r covers the counts' spread.
    """
    n = X.shape[0]
    sensitivity = 2.0 * residual_bound / n
    std = residual_bound * _start_std_over_r(n, rho)
    low, high = _START_RANGE
    for _ in range(_START_STEPS):
        middle = 0.5 * (low + high)
        total = sum_over_rows(
            _clipped_count_residuals,
            X,
            (1,),
            rows=(y,),
            mean=math.exp(middle),
            bound=residual_bound,
        )
        score = add_gaussian_noise(total / n, std, rng)[0]
        low, high = (middle, high) if score > 0.0 else (low, middle)
    log_mean = 0.5 * (low + high)
    record = dict(
        start_steps=_START_STEPS,
        start_std=std,
        start_sensitivity=sensitivity,
        start_log_mean=log_mean,
    )
    return log_mean, record


def private_schedule_iht(
    X,
    y,
    datafit,
    *,
    family,
    sparsity,
    n_iter,
    rho,
    x_bound,
    residual_bound,
    fit_intercept,
    rng,
    progress=None,
    iterates=None,
):
    """Noisy IHT whose step sizes (and, if ``n_iter`` is None, T) are released.

    A pre-pass peels ``s`` features from ``|∇L(0)|`` (the first step's
    ranking, which does not depend on η) and releases the largest and
    smallest eigenvalue of the Gram matrix ``G_U = (1/n)·A_Uᵀ A_U`` of those
    columns and the constant one, with Gaussian noise (L2 sensitivity
    ``√2·curvature_sensitivity``). Then step t uses ``η_t = 1/(w_f·γ_t)``,
    where ``γ_t`` is a released upper confidence bound on ``λ_max(G_U)`` on the
    coordinates the step moves (``U = S^t ∪ S^{t+1}`` and the intercept;
    the pre-pass's for step 0), never below 1, and ``w_f`` bounds the
    family's ψ'' (gaussian 1, logistic 1/4): so ``η_t`` is at most the
    inverse restricted smoothness of Proposition 5.3, for which the
    contraction (C.16) holds and the iterates cannot diverge. Step t's
    peeling noise and value noise are proportional to the step size it uses
    (``η_{t-1}`` for the ranking, ``η_t`` for the values), as is its
    sensitivity, so every step costs the same ρ whatever the released η.

    ``n_iter=None``: T is the first T whose optimisation error
    ``κ^T`` (``κ = max(κ_f, 1 - λ̂_min/λ̂_max)``, the per-step contraction
    ``1 - α/γ`` of gradient steps ``1/γ``, floored by the family's measured
    ``κ_f``) meets the error no step removes (as the public schedule),
    read from the pre-pass's release. The per-step budget is then fixed so
    that the steps together spend ``ρ - ρ_pre`` whatever T: for every
    outcome of the pre-pass, the steps are a ``(ρ - ρ_pre)``-zCDP mechanism
    (each step's parameters depend only on earlier releases), so the two
    stages compose adaptively to ρ (Bun & Steinke 2016, Lemma 2.3).

    Returns ``coef, intercept, support, record`` where ``record`` lists what
    an accountant needs (see :func:`_adaptive_rho`).
    """
    n, d = X.shape
    c = min(1.0, x_bound)
    unit_lambda = 2.0 * residual_bound * x_bound / n  # λ at η = 1
    n_released = sparsity + int(fit_intercept)
    selects = sparsity < d
    start_share = (
        _START_SHARE
        if family == "poisson" and start_noise(n, rho) <= _START_MAX_NOISE
        else 0.0
    )
    theta_start = np.zeros(d + 1)
    if start_share:
        log_mean, start_record = poisson_start(
            X, y, residual_bound, start_share * rho, rng
        )
        # ψ''(z) = e^z: the curvature at the start, for every row.
        weight = max(_CURVATURE_WEIGHT["poisson"], math.exp(log_mean))
        theta_start[d] = log_mean / c if fit_intercept else 0.0
    else:
        start_record = dict(start_steps=0, start_std=1.0, start_sensitivity=0.0)
        weight = curvature_weight(family, residual_bound)
    start_record["start_intercept"] = float(c * theta_start[d])

    def budget(n_iter):
        return adaptive_budget(rho, n_iter, sparsity, d, start_share)

    pre_peel, pre_eig, _, _ = budget(2)
    # Pre-pass: the first step's ranking (from the start: θ = 0 but for
    # Poisson's intercept) and the conditioning on it.
    u0 = descent(
        X,
        y,
        datafit,
        theta_start,
        learning_rate=1.0,
        x_bound=x_bound,
        residual_bound=residual_bound,
    )
    # The scale the accounting is given; the noise's covers float rounding.
    pre_scale = (
        _SAFETY * 2.0 * unit_lambda / math.sqrt(8.0 * pre_peel / sparsity)
        if selects
        else 0.0
    )
    move_bound = residual_bound * x_bound  # |u_j| at η = 1
    pre_rounding = selection_rounding(theta_start[:d], move_bound, unit_lambda)
    support = peel_top_k(
        np.abs(theta_start[:d] + u0[:d]),
        sparsity,
        noise="gumbel",
        scale=pre_scale * pre_rounding,
        rng=rng,
    )
    eig_sens = math.sqrt(2.0) * curvature_sensitivity(sparsity, x_bound, n)
    eig_std = _SAFETY * eig_sens / math.sqrt(2.0 * pre_eig)
    eigvals = np.linalg.eigvalsh(_column_gram(X, support, c))
    lam_max, lam_min = add_gaussian_noise(
        np.array([eigvals[-1], eigvals[0]]), eig_std, rng
    )
    gamma = max(lam_max + _CONFIDENCE_Z * eig_std, 1.0)
    if n_iter is None:
        alpha = max(lam_min - _CONFIDENCE_Z * eig_std, 0.0)
        kappa = max(_CONTRACTION[family], 1.0 - alpha / gamma)
        sampling = sparsity * max(math.log(d), 1.0) / n
        n_iter = _adaptive_n_iter(
            kappa,
            sampling,
            unit_lambda * math.sqrt(n_released),
            1.0 / (weight * gamma),
            n_released,
            lambda t: budget(t)[2:],
        )
    if progress is not None:
        progress.set_steps(n_iter)
    _, _, unit, shares = budget(n_iter)
    value_unit = (
        _SAFETY * unit_lambda * math.sqrt(n_released / (2.0 * shares["values"] * unit))
    )
    peel_unit = (
        _SAFETY
        * 2.0
        * unit_lambda
        / math.sqrt(8.0 * shares["selection"] * unit / sparsity)
        if selects
        else 0.0
    )
    record = dict(
        n_iter=n_iter,
        pre_selection_scale=pre_scale,
        pre_eigen_std=eig_std,
        pre_lambda_max=float(lam_max),
        pre_eigen_sensitivity=eig_sens,
        step_sizes=[],
        selection_scales=[],
        release_scales=[],
        curvature_stds=[],
        curvature_sensitivities=[],
        unit_sensitivity=unit_lambda,
        value_unit=value_unit,
        selection_unit=peel_unit,
        **start_record,
    )
    theta = theta_start.copy()
    eta = 1.0 / (weight * gamma)
    previous = support
    for t in range(n_iter):
        # One pass over X per step: the (clipped) mean gradient's move u at
        # η = 1, then θ + η·u for whichever η (the pre-pass has step 0's).
        u = (
            u0
            if t == 0
            else descent(
                X,
                y,
                datafit,
                theta,
                learning_rate=1.0,
                x_bound=x_bound,
                residual_bound=residual_bound,
            )
        )
        if t > 0:
            record["selection_scales"].append(eta * peel_unit)
            rounding = selection_rounding(
                theta[:d], eta * move_bound, eta * unit_lambda
            )
            support = peel_top_k(
                np.abs(theta[:d] + eta * u[:d]),
                sparsity,
                noise="gumbel",
                scale=eta * peel_unit * rounding,
                rng=rng,
            )
            moved = np.union1d(previous, support)
            sens = curvature_sensitivity(len(moved), x_bound, n)
            std = _SAFETY * sens / math.sqrt(2.0 * shares["curvature"] * unit)
            top = np.linalg.eigvalsh(_column_gram(X, moved, c))[-1]
            released = float(add_gaussian_noise(np.array([top]), std, rng)[0])
            record["curvature_stds"].append(std)
            record["curvature_sensitivities"].append(sens)
            eta = 1.0 / (weight * max(released + _CONFIDENCE_Z * std, 1.0))
        theta = _release_on_support(
            theta,
            eta * u,
            support,
            fit_intercept,
            add_gaussian_noise,
            eta * value_unit,
            rng,
        )
        record["step_sizes"].append(eta)
        record["release_scales"].append(eta * value_unit)
        previous = support
        _report_step(t, theta, iterates, progress)
    _check_finite(theta)
    return theta[:d], float(c * theta[d]), support, record


def _adaptive_rho(record, *, sparsity, n_released, n_features):
    """zCDP of a :func:`private_schedule_iht` run, from its record alone.

    Pre-pass: ``s`` Gumbel peels (``(2λ₁/g₀)²/8`` each, λ₁ the sensitivity at
    η = 1) and the eigenvalue pair (``Δ²/(2σ²)``). Step t: ``s`` peels at
    sensitivity ``η_{t-1}·λ₁`` and scale ``g_t``, one curvature at
    sensitivity ``Δ_t`` and std ``σ_t``, ``k`` values at sensitivity
    ``η_t·λ₁`` and std ``σ'_t``.
    """
    # Each step's noise is its step size times a unit scale, as is its
    # sensitivity: η cancels, so the ρ is read from the unit scales (the same
    # for every η, hence for every rounding of a released η).
    lam1 = record["unit_sensitivity"]
    selects = sparsity < n_features
    rho = (record["pre_eigen_sensitivity"] / record["pre_eigen_std"]) ** 2 / 2.0
    rho += record["start_steps"] * (
        (record["start_sensitivity"] / record["start_std"]) ** 2 / 2.0
    )
    if selects:
        rho += sparsity * (2.0 * lam1 / record["pre_selection_scale"]) ** 2 / 8.0
    value = n_released * (lam1 / record["value_unit"]) ** 2 / 2.0
    peel = (
        sparsity * (2.0 * lam1 / record["selection_unit"]) ** 2 / 8.0
        if selects
        else 0.0
    )
    rho += record["n_iter"] * value + (record["n_iter"] - 1) * peel
    for sens, std in zip(
        record["curvature_sensitivities"], record["curvature_stds"], strict=True
    ):
        rho += (sens / std) ** 2 / 2.0
    return rho


def diverged(iterates, noise_std, n_released, start=0.0):
    """Whether released iterates blew up (post-processing of released values).

    ``iterates`` are the T released ``θ^t`` (θ^0 = ``start`` before them:
    0, or Poisson's released start). A
    converging IHT moves less and less after its first step; a diverging one
    moves more each step. Flags a run whose last move exceeds twice its
    first by more than the noise can explain (``4·sqrt(k)`` release standard
    deviations), or that is not finite.
    """
    if not all(np.isfinite(t).all() for t in iterates):
        return True
    if len(iterates) < 2:
        return False
    first = np.linalg.norm(iterates[0] - start)
    last = np.linalg.norm(iterates[-1] - iterates[-2])
    return bool(last > 2.0 * first + 4.0 * math.sqrt(n_released) * noise_std)


def residuals_clipped(intercepts, max_moves, noise_stds):
    """Whether the released intercept path saturated (post-processing).

    ``intercepts``: the intercept coordinate of θ^0, ..., θ^T (released);
    ``max_moves``: the most the clipped residuals can move it at each step,
    ``η_t·r·c`` (every residual clipped at ``r`` the same way);
    ``noise_stds``: each step's release noise std. True when its steps in
    the second half of the run still average more than a quarter of their
    largest size, beyond 4 standard deviations of what the noise adds to
    that average: a run that converged has stopped moving it by then (from
    any start); here most residuals are still clipped on one side, so the
    fit follows their sign, not their size (a response far from the model's
    scale; review: raw diabetes' y, mean 152 against ``residual_bound = 3``,
    R² −0.07 at ε = 10⁶, silent).
    """
    max_moves = np.asarray(max_moves, dtype=float)
    moves = np.diff(np.asarray(intercepts, dtype=float)) / max_moves
    half = moves.size // 2
    ratios = np.asarray(noise_stds, dtype=float)[half:] / max_moves[half:]
    late = moves[half:]
    noise = np.sqrt(np.sum(ratios**2)) / late.size
    return bool(abs(late.mean()) - 4.0 * noise > 0.1)


#: Share of its largest possible value (every clipped entry at ``±x_bound``,
#: all rows alike) above which the pre-pass's released curvature says that
#: the features are not standardised. Measured at ε = 1 (ratio of the
#: released λ_max to ``s·x_bound² + c²``): raw diabetes 0.93, Auto 0.90,
#: Boston 0.47; the same standardised 0.05, 0.08, −0.06.
_SATURATED_SHARE = 0.3


def _warn_if_saturated(record, sparsity, x_bound):
    """Warn when the selected columns' curvature is near its largest
    possible value (post-processing of the pre-pass's release): their
    clipped entries are mostly at ``±x_bound`` and alike in every row,
    raw columns of large values (R² 0.01 on raw diabetes at ε = 1, 0.17
    standardised; review)."""
    c = min(1.0, x_bound)
    largest = sparsity * x_bound**2 + c * c
    lower = record["pre_lambda_max"] - _CONFIDENCE_Z * record["pre_eigen_std"]
    if lower > _SATURATED_SHARE * largest:
        warnings.warn(
            "DPSparseGLM: the selected features' clipped entries are mostly at "
            "±x_bound and alike in every row (their released curvature is "
            f"{record['pre_lambda_max'] / largest:.2f} of the largest it can "
            "be; read from a released value only): the features look raw, not "
            "standardised, and the fit keeps little of them. Standardise them "
            "(DPStandardScaler in a pipeline) or give an x_bound that covers "
            "them.",
            UserWarning,
            stacklevel=6,
        )


def _warn_if_counts_spread_past(log_mean, residual_bound):
    """Warn when r is below 0.4 Poisson standard deviations at the released
    mean count ``e^{b₀}`` (post-processing of :func:`poisson_start`'s
    release): most residuals are then clipped, and the steps, whose size
    follows the curvature ``e^{b₀}``, move by r at most. Measured at r = 3
    (n = 8000, ε = 1, 3 seeds; scikit-learn's mean deviance about 1.0):
    1.01-1.05 for counts of mean 10-40 (sd/r up to 2.1), 1.65 at 60 (2.6),
    2.9 at 80, 11.7 at 160 (4.2); 1.0 at 160 with r = 30.
    """
    spread = math.sqrt(math.exp(log_mean))
    if residual_bound < 0.4 * spread:
        warnings.warn(
            f"DPSparseGLM: residual_bound={residual_bound:g} is small against "
            f"the spread of Poisson counts at the released mean count (about "
            f"{math.exp(log_mean):.3g}, standard deviation {spread:.3g}; read "
            "from the fit's private start only): most residuals are clipped "
            "and the fit moves slowly. Set residual_bound to 2-3 standard "
            f"deviations of the counts (about {2 * spread:.3g} to "
            f"{3 * spread:.3g} if they are Poisson; real counts are often "
            "overdispersed, with a spread several times this: use what is "
            "known of it publicly). A larger bound costs more noise per "
            "step; at this n and budget a Poisson GLM may fit poorly.",
            UserWarning,
            stacklevel=6,
        )


def noise_dominated(coef, noise_std):
    """Whether the released coefficients are mostly release noise (post-processing).

    The last step releases ``m + w`` on its support (size s), with ``w ~
    N(0, noise_std² I_s)`` drawn after the support was chosen, so
    ``E||coef||² = ||m||² + s·noise_std²``. Flags a fit whose ``||coef||²``
    is below ``s·noise_std² + 2·noise_std²·sqrt(2s)`` (two standard
    deviations of the pure-noise χ²_s above its mean): the last release's
    noise alone then carries about as much of the coefficients' norm as
    the signal, or more. It counts the last release only (noise that earlier
    steps left in ``m`` is not seen): it can miss a noisy fit, but a fit it
    flags has at least that much noise.
    """
    support = np.flatnonzero(coef)
    s = support.size
    if s == 0 or noise_std == 0.0:
        return False
    # In units of noise_std: its square overflows at the largest bounds
    norm2 = float(np.sum(np.square(coef[support] / noise_std)))
    return norm2 < s + 2.0 * math.sqrt(2.0 * s)


# ---------------------------------------------------------------------------
# The estimator
# ---------------------------------------------------------------------------


def _make_datafit(family):
    return {
        "gaussian": Quadratic(scale=0.5),
        "poisson": Poisson(),
        "logistic": BinomialLogistic(),
    }[family]


def nonprivate_iht(estimator, X, y):
    """Coefficients of plain IHT with ``estimator``'s schedule and clipping.

    The same algorithm as ``estimator.fit`` (same steps, step size, feature
    and residual clipping, intercept) with both noises set to zero: **not
    private**, a reference for benchmarks and examples. Returns ``coef`` of
    shape ``(n_features,)``.
    """
    y, residual_bound = estimator._check_response(y)
    if estimator._private_step_size():
        n_iter = None if estimator.max_iter == "auto" else int(estimator.max_iter)
        return private_schedule_iht(
            clip_features(X, estimator.x_bound),
            y,
            _make_datafit(estimator.family),
            family=estimator.family,
            sparsity=estimator._schedule_sparsity(X.shape[1]),
            n_iter=n_iter,
            rho=math.inf,
            x_bound=estimator.x_bound,
            residual_bound=residual_bound,
            fit_intercept=estimator.fit_intercept,
            rng=np.random.default_rng(0),
        )[0]
    sparsity, n_iter, learning_rate = estimator._schedule(*X.shape, residual_bound)
    return noisy_iht(
        clip_features(X, estimator.x_bound),
        y,
        _make_datafit(estimator.family),
        sparsity=sparsity,
        n_iter=n_iter,
        learning_rate=learning_rate,
        x_bound=estimator.x_bound,
        residual_bound=residual_bound,
        fit_intercept=estimator.fit_intercept,
        selection="gumbel",
        selection_scale=0.0,
        release="gaussian",
        release_scale=0.0,
        rng=np.random.default_rng(0),
    )[0]


#: What the "mostly noise" warning suggests instead, per family (it said
#: DPLinearRegression for every family; review).
_DENSE_ALTERNATIVE = {
    "gaussian": "use DPLinearRegression, which shrinks a noisy fit.",
    "logistic": "use DPLogisticRegression (a dense fit: no selection to pay for).",
    "poisson": "a smaller sparsity (fewer coefficients share the budget).",
}


class DPSparseGLM(DaskScoreMixin, DPEstimatorMixin, RegressorMixin, BaseEstimator):
    """Differentially private sparse GLM by noisy iterative hard thresholding.

    Fits an ``s``-sparse generalised linear model (Gaussian, Poisson or
    Bernoulli response) by the noisy iterative hard thresholding of Cai,
    Wang & Zhang (Score Attack, §5.2, Algorithms 3-5): each of ``T`` steps
    takes a gradient step on the GLM loss, privately selects ``s``
    coordinates by *peeling* (report-noisy-max, one coordinate per round)
    and releases the step's values on them with noise. The error is
    ``s·log d/n + (s·log d)²·log(1/δ)/(n²ε²)`` up to log factors (Theorem
    5.2): logarithmic, not linear, in the number of features. ``predict``
    returns the mean response, as scikit-learn's GLM regressors do.

    Parameters
    ----------
    family : {"gaussian", "poisson", "logistic"}, default="gaussian"
        Response distribution with its canonical link: identity (real y),
        log (counts ``y >= 0``) or logit (``y`` in {0, 1}; ``predict`` gives
        P(y = 1)).
    sparsity : int or "auto", default="auto"
        Number ``s`` of non-zero coefficients. Above ``n_features`` it
        warns and keeps all features, as
        :class:`~sklearn.feature_selection.SelectKBest` does for ``k``.
        ``"auto"``: ``min(10, n_features)`` (n_features is public).
    epsilon : float, default=1.0
        Privacy budget ε > 0 of one fit.
    delta : float, default=1e-5
        Privacy parameter δ in (0, 1); should be well below ``1/n_samples``.
    accounting : {"exact", "paper"}, default="exact"
        ``"exact"``: Gumbel peeling and a Gaussian release, composed in zCDP
        (the tightest recipe of the spec review, §3e). ``"paper"``: the
        paper's Laplace peeling and Laplace release, calibrated at
        (ε/T, δ/T) per step with its sensitivity constant; its noise is
        19-42 times that of ``"exact"`` at ε = 1 (standard deviations at the
        same T, on each peel and on each released value, for s = 5-20,
        T = 4-12, δ = 1e-8 to 1e-5). It raises if Lemma 5.1's implicit
        condition ``ε/T ≲ 0.21·log(T/δ)`` fails. Either way
        ``privacy_spent_`` reports the tightest guarantee proven for the
        noise actually used.
    residual_bound : float, default=3.0
        Residual clip r (public, never read from the data): each record's
        residual ``ψ'(z) - y`` is clipped to ``[-r, r]`` in every step, which
        bounds the record's influence (see Notes). The responses themselves
        are not truncated. Choose r about 2-3 standard deviations of the
        response noise (gaussian) or of the counts (poisson): a smaller r
        adds less noise but clips more residuals, which biases the fit when
        the noise is asymmetric (poisson); a poisson fit with released step
        sizes warns when r is below 0.4 standard deviations of counts at its
        released mean count. Ignored for logistic (residuals lie in (-1, 1),
        r = 1).
    x_bound : float, default=3.0
        Feature bound σ_x: every entry of X is clipped to
        ``[-x_bound, x_bound]``, in ``fit`` and in ``predict``. Meant for
        standardised features.
    fit_intercept : bool, default=True
        Fit an intercept: a constant column of value ``min(1, x_bound)``
        that is always kept (it does not count towards ``sparsity``) and is
        released with the selected values.
    max_iter : int or "auto", default="auto"
        Number of steps T; each is paid for. ``"auto"`` with released step
        sizes: a pre-pass (10% of the budget) peels the first support and
        releases the extreme eigenvalues of its Gram matrix; T is the first
        T at which ``κ^T`` (``κ = max(κ_f, 1 - λ̂_min/λ̂_max)``, the
        contraction of Proposition 5.3 / (C.16) at η = 1/γ, floored by the
        family's measured κ_f: 0.1 gaussian, 0.72 poisson, 0.78 logistic)
        falls below the error no step removes (sampling ``s·log d/n`` and
        the release noise), at most 100; the per-step budget then makes the
        total exactly the declared one. With a given ``learning_rate`` (or
        ``accounting="paper"``): the same rule with κ_f alone, from public
        values only (n, d, s, ε, δ, the bounds, the step size); e.g. at
        n = 10⁵, d = 800, s = 10, ε = 1, δ = 1e-5: 2 (gaussian), 11
        (poisson), 12 (logistic).
    learning_rate : float or "auto", default="auto"
        Step size η. ``"auto"`` with ``accounting="exact"``: released per
        step, ``η_t = 1/(w_f·γ_t)`` with ``γ_t`` an upper confidence bound
        (2 noise sd) on the largest eigenvalue of the Gram matrix of the
        columns the step moves (previous and new support, intercept),
        released with Gaussian noise from 10% of the step's budget, never
        below 1; ``w_f`` = 1 (gaussian), 1/4 (logistic), ``max(2, e^{b₀})``
        (poisson, the curvature ``e^z`` at its start ``b₀``, a log mean
        count released by a bisection from 2% of the budget, also the
        intercept's starting value with ``fit_intercept=True``; see
        ``poisson_start``; where that release's noise exceeds ``0.1·r``,
        public from n, ε and δ, there is no start and ``w_f = max(2, r −
        1)``, as with ``accounting="paper"``). That is the inverse
        restricted smoothness of Proposition 5.3, for which the contraction
        (C.16) holds, so the iterates settle on correlated features. A
        float, or ``"auto"`` with ``accounting="paper"``: the public steps
        1 (gaussian), ``1/max(2, r − 1)`` (poisson) or 4 (logistic), about
        the inverse curvature for standardised,
        uncorrelated features; the fit warns if the released iterates grow.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the noise; use None in production (a known seed makes the
        noise predictable). The rule
        is the same for every skdp estimator: None (the default)
        draws fresh operating-system entropy for every fit; a seed makes the
        noise reproducible, so every fit given it (clones in a search or
        cross-validation, sibling steps, a sweep) draws the same noise: the
        fit warns, and :class:`~skdp.PrivacyLedger` refuses to total fits
        that share a seed. A ``Generator`` seeds a child stream.
    noise : {"fast", "secure"}, default="fast"
        Sampler of the privacy noise. ``"fast"``: numpy's floating-point
        sampler (PCG64), not hardened against floating-point attacks on the
        low-order bits of a release. ``"secure"``: every noisy value is rounded
        to a power-of-two grid and gets exact discrete Gaussian (or Laplace)
        noise drawn from the operating system's CSPRNG; the rounding is paid
        for in the calibration (6-11% more noise at the same ε) and each draw
        is 20-45 times slower than numpy's. Requires ``random_state=None``.
        See :ref:`secure_noise`.
    verbose : int, default=0
        1: the guarantee being spent, about ten progress lines and a summary;
        2: one line per step.
    y_bound : float
        Deprecated alias of ``residual_bound`` (renamed in 0.1, removed in
        0.3). It used to be also the paper's response truncation level R,
        which biased the fit and is not needed for privacy; its value is now
        used as the residual clip only, with a ``FutureWarning``.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Coefficients, exactly ``sparsity_`` of them non-zero.
    intercept_ : float
        Intercept (0.0 when ``fit_intercept=False``).
    support_ : ndarray of bool of shape (n_features,)
        Mask of the selected features (the non-zeros of ``coef_``).
    sparsity_ : int
        ``sparsity`` resolved: ``min(sparsity, n_features)``.
    n_iter_ : int
        Number of steps run (``max_iter`` resolved).
    learning_rate_ : float
        Step size of the last step.
    step_sizes_ : ndarray of shape (`n_iter_`,)
        Step size of each step (released values under
        ``learning_rate="auto"``, ``accounting="exact"``).
    schedule_record_ : dict
        With released step sizes only: every noise scale and sensitivity of
        the run (pre-pass, per-step peels, curvatures and values), from
        which ``rho_`` is recomputed.
    sensitivity_ : float
        ``λ = 2·η·r·x_bound/n``: how much one record moves any coordinate of
        a step's ``v`` (``r = residual_bound``, or 1 for logistic).
    selection_noise_scale_ : float
        Scale of the peeling noise: Gumbel β (``"exact"``) or Laplace b
        (``"paper"``); 0 when ``sparsity_ == n_features`` under ``"exact"``
        (selecting everything releases nothing).
    release_noise_scale_ : float
        Gaussian σ (``"exact"``) or Laplace b (``"paper"``) on each released
        value.
    rho_ : float
        zCDP parameter of the whole fit (see Notes).
    privacy_spent_ : PrivacyCost
        ``epsilon``, ``delta``, ``mu=None`` (not all-Gaussian), adjacency and
        the composition in one line.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    sklearn.linear_model.Lasso : Non-private sparse linear regression.
    sklearn.linear_model.PoissonRegressor : Non-private Poisson GLM.

    Notes
    -----
    **Released.** ``coef_``, ``intercept_`` and ``support_`` are the last of
    the T noisy iterates; every earlier iterate and every selected set is
    covered by the same guarantee.

    **Guarantee** (*replace-one-record* adjacency, n public). Let
    ``λ = sensitivity_``, ``k = sparsity_ + fit_intercept`` and ``s =
    sparsity_``. With ``accounting="exact"`` each step is ``s`` rounds of the
    exponential mechanism (Gumbel scale ``g``) with ``ε_p = 2λ/g``, each
    ε_p-bounded-range and so ``ε_p²/8``-zCDP (Cesar & Rogers 2021), plus a
    Gaussian release of ``k`` values of L2 sensitivity ``λ·sqrt(k)``,
    ``kλ²/(2σ²)``-zCDP. The ``2sT`` steps compose (adaptively) to
    ``rho_ = T·(s·ε_p²/8 + kλ²/(2σ²))``-zCDP, which is (ε, δ)-DP with
    ``ε = min_α [α·ρ + log(1 - 1/α) - (log δ + log α)/(α - 1)]`` (Canonne,
    Kamath & Steinke 2020). The noise is calibrated so that this ε equals
    ``epsilon`` (to 1e-9 relative, never above), 60% of ρ going to the
    selection. No advanced composition is used, and no Gaussian noise
    enters the report-noisy-max. With ``accounting="paper"`` the peels are
    Laplace report-noisy-max (``2λ/b``-DP each) and the releases Laplace
    (``λ/b``-DP each); ``privacy_spent_`` is the smaller of their zCDP
    composition (``rho_ = T·Σε_i²/2``) and the paper's own route (advanced
    composition within a step at δ/T, basic composition over steps).

    **Public.** n, d, and the constants ``residual_bound``, ``x_bound``; a
    given step size and the public T, which never read the data. Under
    ``learning_rate="auto"`` (exact) the step sizes and the automatic T are
    read from noisy releases (Poisson's start, a pre-pass and one curvature
    per step), all in ``rho_``: the pre-pass fixes T, and for each of its
    outcomes the steps spend the rest of the declared ρ, so the stages
    compose adaptively in zCDP (Bun & Steinke 2016, Lemma 2.3) to the
    declared ρ whatever T. Error messages never quote data values. Invalid
    responses (y < 0 for Poisson, y outside {0, 1} for logistic) raise
    before any work.

    **Clipping.** Feature entries are clipped to ``±x_bound`` and residuals
    to ``±r``; data outside these bounds changes the fit (the estimand), not
    the guarantee. The responses are not truncated (the paper's ``Π_R(y)``):
    record i enters a step only through ``clip_r(ψ'(z_i) - y_i)·(x_i, c)``,
    every coordinate of which lies in ``[-r·x_bound, r·x_bound]`` whatever
    ``y_i`` is (a residual that overflows contributes 0), so replacing one
    record moves each coordinate of the step's sum by at most
    ``2·r·x_bound`` and of ``v`` by at most ``λ``, exactly the sensitivity
    the noise is calibrated to. Truncating y as well cannot lower this bound
    and shrank the coefficients (to about 0.77 of their size on
    ``make_sparse_glm`` data with R = 3); clipping only the residual leaves
    the fixed point of the gaussian family unbiased whenever the noise is
    symmetric (``E clip_r(noise) = 0`` at the true coefficients). The
    feature bound holds exactly in the stored dtype: float32 entries are
    clipped to the largest float32 not above ``x_bound`` (``float32(0.1)``
    itself is above 0.1), and a sparse row's duplicate entries are summed
    before clipping, a sum that overflows to ±inf being clipped to
    ±``x_bound`` like any large value (no input raises where its neighbour
    fits). Floating point: the noise goes on the step's move ``v − θ``
    alone, and the released θ (public) is added after it, so a large θ
    (Poisson's start ``b₀/c`` at a small ``x_bound``) adds no rounding to
    the sensitivity; the selection's scores ``|θ_j + u_j|`` can round by
    an ulp of θ, and its noise scale is widened by that public margin.

    **Warnings from the release.** Three checks read the released iterates
    only (post-processing): iterates that grow instead of settling (a given
    step size too large for the curvature), final coefficients whose
    squared norm is within two standard deviations of what the last
    release's noise alone gives (``s·σ² + 2σ²·sqrt(2s)``: too few records
    for the budget, the fit is mostly noise), and (gaussian and poisson,
    with an intercept) an intercept still moving in the second half of the
    run by more than a quarter of the most the clipped residuals allow per
    step, ``η·r·min(1, x_bound)``, beyond 4 noise standard deviations of
    that average (``residuals_clipped``: y far from the model's scale
    against ``residual_bound``; raw diabetes' y, mean 152, at r = 3).

    **Caveats.** With ``noise="fast"`` (the default) noise is drawn with
    numpy floating point, not hardened against Mironov (2012);
    ``noise="secure"`` (with ``accounting="paper"``) is. Each fit spends
    the budget; compose several with :class:`skdp.PrivacyLedger`.

    **Dask.** ``fit`` also takes a ``dask.array.Array`` (dense or CSR
    chunks along rows): the clipped residual sum of each step is one
    reduction over the chunks; the peeling and the noisy release run on the
    client, so the guarantee is that of the in-memory fit, and a seeded fit
    gives the same model up to rounding. ``predict`` returns a Dask array.
    See :ref:`large_data`.

    **Cost.** Time ``O(T·nnz(X))``, memory one clipped copy of X plus
    O(n + s·d) (the Laplace peeling draws an ``s × d`` array per step).

    References
    ----------
    .. [1] T. T. Cai, Y. Wang, L. Zhang. "Score Attack: A Lower Bound Technique
       for Optimal Differentially Private Learning", §5.2, Algorithms 3-5,
       Lemma 5.1, Theorem 5.2.
    .. [2] C. Dwork, W. J. Su, L. Zhang. "Differentially private false
       discovery rate control", 2018 (peeling).
    .. [3] D. Durfee, R. Rogers. "Practical differentially private top-k
       selection with pay-what-you-get composition", NeurIPS 2019.
    .. [4] M. Cesar, R. Rogers. "Bounding, concentrating, and truncating:
       unifying privacy loss composition for data analytics", ALT 2021.
    .. [5] C. Canonne, G. Kamath, T. Steinke. "The discrete Gaussian for
       differential privacy", NeurIPS 2020.

    Examples
    --------
    >>> from skdp.datasets import make_sparse_glm
    >>> from skdp.linear_model import DPSparseGLM
    >>> X, y, coef = make_sparse_glm(
    ...     n_samples=20000, n_features=200, n_informative=5, random_state=0
    ... )
    >>> model = DPSparseGLM(
    ...     sparsity=5, epsilon=1.0, delta=1e-6
    ... ).fit(X, y)
    >>> int(model.support_.sum())
    5
    >>> bool((model.support_ == (coef != 0)).all())
    True
    >>> round(model.privacy_spent_.epsilon, 6), model.privacy_spent_.adjacency
    (1.0, 'replace one record')

    The number of steps, ``n_iter_`` (2 to 4 here, over 40 fits), is read
    from a private release, so it varies from fit to fit; the support was
    recovered exactly in all 40.
    """

    _parameter_constraints = {
        **PRIVACY_CONSTRAINTS,
        "family": [StrOptions({"gaussian", "poisson", "logistic"})],
        "sparsity": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "residual_bound": [CLIP_CONSTRAINT],
        "y_bound": [
            CLIP_CONSTRAINT,
            Hidden(StrOptions({"deprecated"})),
        ],
        "x_bound": [CLIP_CONSTRAINT],
        "fit_intercept": ["boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "learning_rate": [
            Interval(Real, 0, None, closed="neither"),
            StrOptions({"auto"}),
        ],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        *,
        family="gaussian",
        sparsity="auto",
        epsilon=1.0,
        delta=1e-5,
        accounting="exact",
        residual_bound=3.0,
        x_bound=3.0,
        fit_intercept=True,
        max_iter="auto",
        learning_rate="auto",
        random_state=None,
        noise="fast",
        verbose=0,
        y_bound="deprecated",
    ):
        self.family = family
        self.sparsity = sparsity
        self.epsilon = epsilon
        self.delta = delta
        self.accounting = accounting
        self.residual_bound = residual_bound
        self.x_bound = x_bound
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.random_state = random_state
        self.noise = noise
        self.verbose = verbose
        self.y_bound = y_bound

    def _budget_is_gdp(self):
        # Gumbel peeling is bounded-range, not Gaussian: the cost is an
        # (epsilon, delta) pair from the zCDP composition.
        return False

    def _budget_is_zcdp(self):
        # accounting="exact" composes every release in zCDP (the budget is
        # rho(epsilon, delta)); "paper" may take the paper's own route.
        return self.accounting == "exact"

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _audit_canary(self):
        """Default canary (for :mod:`skdp.audit`): a worst-case record."""
        return "GLMCanary", {}

    def _audit_glm_view(self):
        """skdp.audit's score-attack view: clipped rows and the intercept."""
        theta = np.concatenate([self.coef_, [self.intercept_]])
        inverse_link = _make_datafit(self.family).inverse_link
        x_bound = self.x_bound
        return dict(
            theta=theta,
            features=lambda X: with_ones_column(
                clip_features(dense_float_rows(X), x_bound)
            ),
            mean=lambda z: inverse_link(z[:, None])[:, 0],
            encode=lambda y: y * 1.0,
        )

    @private_fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the model with (``epsilon``, ``delta``)-DP.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training features (standardised, ideally).
        y : array-like of shape (n_samples,)
            Responses: real (gaussian), counts >= 0 (poisson) or 0/1
            (logistic).

        Returns
        -------
        self : DPSparseGLM
            The fitted estimator.
        """
        require_positive_delta(self)
        if self.noise == "secure" and self.accounting == "exact":
            raise ValueError(
                "noise='secure' needs accounting='paper' in DPSparseGLM: the exact "
                "recipe peels with Gumbel noise (the exponential mechanism), which "
                "has no exact sampler here; the paper's Laplace peeling and "
                "Laplace release do."
            )
        if is_dask_array(X):  # map-reduce on the chunks; peeling on the client
            X, y = self._validate_dask(X, y)
        else:
            X, y = validate_data(
                self,
                X,
                y,
                accept_sparse=SPARSE_FIT_FORMATS,
                dtype=[np.float64, np.float32],
                y_numeric=True,
            )
        n, d = X.shape
        y, residual_bound = self._check_response(y)
        warn_if_delta_is_large(self, n)
        if self._private_step_size():
            return self._fit_private_schedule(X, y, residual_bound)
        sparsity, n_iter, learning_rate = self._schedule(n, d, residual_bound)
        sizes = self._sizes(n, d, sparsity, n_iter, learning_rate, residual_bound)
        sensitivity = sizes["sensitivity"]
        scales = self._noise_scales(**sizes)
        if not np.all(np.isfinite(scales)):
            raise ValueError(
                "The noise scales of this fit overflow (a sensitivity of "
                f"{sensitivity:.3g} at epsilon={self.epsilon:g} over {n_iter} "
                "steps): choose a smaller learning_rate, residual_bound or x_bound."
            )
        rho, epsilon = _privacy_of(
            *scales,
            accounting=self.accounting,
            delta=self.delta,
            secure=self.noise == "secure",
            **sizes,
        )
        cost = PrivacyCost(
            epsilon,
            float(self.delta),
            None,
            REPLACE_ONE,
            self._describe(rho, *scales, **sizes),
            # Accounted in zCDP (see _budget_is_zcdp): epsilon is that point
            # of rho, and a ledger composes the fit in zCDP.
            zcdp=rho if self._budget_is_zcdp() else None,
        )
        check_cost_before_steps(cost)
        progress = _Progress("DPSparseGLM noisy IHT", n_iter, self.verbose)
        progress.phase(
            f"spending {format_dp(cost.epsilon, cost.delta)} ({REPLACE_ONE}) "
            f"on {n_iter} steps over n = {n}, d = {d}: {cost.mechanism}"
        )
        exact = self.accounting == "exact"
        iterates = []
        coef, intercept, _ = noisy_iht(
            _clipped_design(X, self.x_bound),
            y,
            _make_datafit(self.family),
            sparsity=sparsity,
            n_iter=n_iter,
            learning_rate=learning_rate,
            x_bound=self.x_bound,
            residual_bound=residual_bound,
            fit_intercept=self.fit_intercept,
            selection="gumbel" if exact else "laplace",
            selection_scale=scales[0],
            release="gaussian" if exact else "laplace",
            release_scale=scales[1],
            rng=as_generator(self.random_state, self.noise),
            progress=progress,
            iterates=iterates,
        )
        progress.done(cost)
        release_std = scales[1] * (1.0 if exact else math.sqrt(2.0))
        self._warn_if_unreliable(
            iterates,
            coef,
            (learning_rate, release_std),
            sizes["n_released"],
            depth=0,
            residual_bound=residual_bound,
        )
        self.coef_, self.intercept_ = coef, intercept
        self.support_ = coef != 0
        self.sparsity_, self.n_iter_, self.learning_rate_ = (
            sparsity,
            n_iter,
            learning_rate,
        )
        self.step_sizes_ = np.full(n_iter, learning_rate)
        self.sensitivity_ = sensitivity
        self.selection_noise_scale_, self.release_noise_scale_ = scales
        self.rho_ = rho
        self.privacy_spent_ = cost
        return self

    def _private_step_size(self):
        """Whether the step sizes are released (``learning_rate="auto"``
        under ``accounting="exact"``) rather than fixed in advance."""
        return self.learning_rate == "auto" and self.accounting == "exact"

    def _warn_if_unreliable(
        self, iterates, coef, noise, n_released, depth, residual_bound, start=None
    ):
        """Warnings read from the released iterates only (post-processing).

        ``noise``: ``(step_sizes, release_stds)`` of the T steps, public.
        ``depth``: the frames between this method and ``fit`` (0 when ``fit``
        calls it), so that the warning points at the caller of ``fit``
        (through ``fit``'s two decorators). ``start``: θ^0 (see
        :func:`diverged`; None: 0).
        """
        step_sizes, release_stds = (np.broadcast_to(v, len(iterates)) for v in noise)
        release_std = float(release_stds[-1])
        start = np.zeros_like(iterates[-1]) if start is None else start
        stacklevel = 5 + depth
        if diverged(iterates, release_std, n_released, start):
            warnings.warn(
                "DPSparseGLM's iterates grew instead of settling (read from the "
                "released iterates only): the step size is too large for the "
                "curvature of these features; the model is unreliable. Use "
                "learning_rate='auto' (a released, safe step) or a smaller "
                "learning_rate with more max_iter.",
                UserWarning,
                stacklevel=stacklevel,
            )
        elif noise_dominated(coef, release_std):
            warnings.warn(
                "DPSparseGLM: the released coefficients are mostly noise (their "
                "squared norm is within two standard deviations of what the last "
                f"release's noise alone gives, σ = {release_std:.3g} on each; "
                "read from the released values only): predictions will be "
                "poor. Give the fit more records or budget, or "
                + _DENSE_ALTERNATIVE[self.family],
                UserWarning,
                stacklevel=stacklevel,
            )
        c = min(1.0, self.x_bound)
        if (
            self.fit_intercept
            and self.family != "logistic"  # its residuals lie in [-1, 1]
            and residuals_clipped(
                [start[-1]] + [theta[-1] for theta in iterates],
                step_sizes * residual_bound * c,
                release_stds,
            )
        ):
            warnings.warn(
                "DPSparseGLM: the released intercept was still moving, late in "
                "the run, by more than a quarter of the most the clipped "
                "residuals allow per step (read from the released iterates "
                "only): the fit has not converged. y's offset is large against "
                "what the steps can move (each by at most residual_bound="
                f"{residual_bound:g} times the step size): standardise y (a "
                "TransformedTargetRegressor with DPStandardScaler, see the "
                "user guide), or raise residual_bound if y's spread is beyond "
                "it"
                + (
                    ""
                    if self.learning_rate == "auto" and self.max_iter == "auto"
                    else ", or the given learning_rate or max_iter make the "
                    "steps too few or too small for its offset (leave them "
                    "'auto')"
                )
                + ".",
                UserWarning,
                stacklevel=stacklevel,
            )

    def _fit_private_schedule(self, X, y, residual_bound):
        """``learning_rate="auto"``, exact: :func:`private_schedule_iht`."""
        n, d = X.shape
        sparsity = self._schedule_sparsity(d)
        n_iter = None if self.max_iter == "auto" else int(self.max_iter)
        n_released = sparsity + int(self.fit_intercept)
        rho_target = zcdp_from_epsilon_tight(self.epsilon, self.delta)
        # The schedule spends rho_target by construction (adaptive_budget);
        # the fit's actual ρ is checked again after the run.
        check_cost_before_steps(
            PrivacyCost(
                epsilon_from_zcdp_tight(rho_target, self.delta),
                float(self.delta),
                None,
                REPLACE_ONE,
                "DPSparseGLM: the planned schedule",
                zcdp=rho_target,
            )
        )
        progress = _Progress(
            "DPSparseGLM noisy IHT", n_iter or _MAX_ADAPTIVE_ITER, self.verbose
        )
        progress.phase(
            f"spending ({float(self.epsilon):.4g}, {float(self.delta):.3g})-DP "
            f"({REPLACE_ONE}) over n = {n}, d = {d}: noisy IHT with released "
            "step sizes"
        )
        iterates = []
        coef, intercept, _, record = private_schedule_iht(
            _clipped_design(X, self.x_bound),
            y,
            _make_datafit(self.family),
            family=self.family,
            sparsity=sparsity,
            n_iter=n_iter,
            rho=rho_target,
            x_bound=self.x_bound,
            residual_bound=residual_bound,
            fit_intercept=self.fit_intercept,
            rng=as_generator(self.random_state, self.noise),
            progress=progress,
            iterates=iterates,
        )
        rho = _adaptive_rho(
            record, sparsity=sparsity, n_released=n_released, n_features=d
        )
        etas = np.asarray(record["step_sizes"])
        selects = sparsity < d
        peels = (
            f"{sparsity} Gumbel peels"
            if selects
            else "selection of all features (free)"
        )
        cost = PrivacyCost(
            epsilon_from_zcdp_tight(rho, self.delta),
            float(self.delta),
            None,
            REPLACE_ONE,
            (
                "DPSparseGLM noisy IHT with released step sizes: "
                + (
                    f"a start [{record['start_steps']} Gaussian releases of the "
                    "intercept's clipped score (bisection)], "
                    if record["start_steps"]
                    else ""
                )
                + f"a pre-pass [{peels} + Gaussian release of 2 eigenvalues], "
                f"then {record['n_iter']} steps x [{peels}"
                + (" (eps_p^2/8-zCDP each; none in step 1)" if selects else "")
                + " + Gaussian release of 1 "
                f"curvature (none in step 1) + Gaussian release of {n_released} "
                f"values]; rho={format_up(rho, 6)}-zCDP in total (fully adaptive "
                "composition); zCDP converted by Canonne-Kamath-Steinke"
            ),
            zcdp=rho,
        )
        progress.done(cost)
        start = np.zeros(d + 1)
        start[d] = record["start_intercept"] / min(1.0, self.x_bound)
        self._warn_if_unreliable(
            iterates,
            coef,
            (etas, np.asarray(record["release_scales"])),
            n_released,
            depth=1,
            residual_bound=residual_bound,
            start=start,
        )
        if record["start_steps"]:
            _warn_if_counts_spread_past(record["start_log_mean"], residual_bound)
        _warn_if_saturated(record, sparsity, self.x_bound)
        self.coef_, self.intercept_ = coef, intercept
        self.support_ = coef != 0
        self.sparsity_, self.n_iter_ = sparsity, record["n_iter"]
        self.step_sizes_ = etas
        self.learning_rate_ = float(etas[-1])
        self.sensitivity_ = (
            2.0 * self.learning_rate_ * residual_bound * self.x_bound / n
        )
        self.selection_noise_scale_ = (
            record["selection_scales"][-1]
            if record["selection_scales"]
            else record["pre_selection_scale"]
        )
        self.release_noise_scale_ = record["release_scales"][-1]
        self.schedule_record_ = record
        self.rho_ = rho
        self.privacy_spent_ = cost
        return self

    def _validate_dask(self, X, y):
        """Dask (X, y): shapes and chunks, then one pass that checks values.

        The pass releases only whether X and y are finite and whether y is
        valid for the family (0/1, or counts >= 0), as the in-memory checks
        raise or not.
        """
        from .. import _dask

        check, message = _RESPONSE_CHECKS.get(self.family, (None, ""))
        X, y = _dask.validate(
            self,
            X,
            y,
            accept_sparse=True,
            y_check=check,
            y_message=message,
            y_numeric=True,
        )
        return X, y

    def _residual_bound(self):
        """The residual clip r: ``residual_bound``, or ``y_bound`` if given.

        ``y_bound`` (deprecated) was the paper's response truncation level R,
        also used as the residual clip; the response is no longer truncated,
        so only its role as the residual clip remains.
        """
        if isinstance(self.y_bound, str):  # "deprecated": not given
            return float(self.residual_bound)
        warnings.warn(
            "'y_bound' was renamed 'residual_bound' in 0.1 and will be removed "
            "in 0.3: it is the residual clip r (responses are no longer "
            "truncated). Its value is used as residual_bound.",
            FutureWarning,
            stacklevel=6,  # the caller of fit (via _check_response, fit, 2 decorators)
        )
        return float(self.y_bound)

    def _check_response(self, y):
        """y as float64 and the residual clip r; invalid y raises (no values quoted).

        y is not truncated: each record's residual ``ψ'(z) - y`` is clipped to
        ``±r`` in :func:`descent`, which bounds its influence whatever
        y is (see the class Notes). Logistic residuals lie in (-1, 1): r = 1.
        """
        residual_bound = self._residual_bound()  # warns for y_bound, any family
        if is_dask_array(y):  # values checked in the validation pass
            return y, 1.0 if self.family == "logistic" else residual_bound
        y = finite_targets(y)
        if self.family == "logistic":
            if not np.isin(y, (0.0, 1.0)).all():
                raise ValueError(
                    "family='logistic' needs y in {0, 1}; y has other values."
                )
            return y, 1.0
        if self.family == "poisson" and (y < 0).any():
            raise ValueError(
                "Some value(s) of y are negative which is not allowed for "
                "family='poisson' (counts must be >= 0)."
            )
        return y, residual_bound

    def _sizes(self, n, d, sparsity, n_iter, learning_rate, residual_bound):
        """The public sizes the calibration reads (``λ = 2·η·r·x_bound/n``).

        λ is a product of three public constants and 1/n, which their own
        ranges do not keep finite or normal (a learning rate of 1e300 or
        1e-310): λ is refused outside ``_SENSITIVITY_RANGE``, where it and its
        noise scales are normal, finite floats and the rounding of a step is
        negligible next to λ.
        """
        sensitivity = 2.0 * learning_rate * residual_bound * self.x_bound / n
        low, high = _SENSITIVITY_RANGE
        if not low <= sensitivity <= high:
            raise ValueError(
                f"The step's sensitivity 2*learning_rate*residual_bound*x_bound/n "
                f"= {sensitivity:.3g} (n = {n}) is outside [{low:g}, {high:g}], "
                "where it and its noise are finite, normal floats: choose a "
                "learning_rate, residual_bound and x_bound whose product over n "
                "lies in that range."
            )
        return dict(
            sensitivity=sensitivity,
            sparsity=sparsity,
            n_released=sparsity + int(self.fit_intercept),
            n_features=d,
            n_iter=n_iter,
        )

    def _auto_n_iter(self, n, d, sparsity, learning_rate, residual_bound):
        """T of the proof of Theorem 5.2 (§C.8), from public quantities only.

        The proof bounds the error after T steps by an optimisation term
        that contracts by a factor κ per step, ``κ^T·E0`` (C.16), plus the
        error that no number of steps removes: sampling, ``s·log d/n``, and
        the noise of the release. The paper takes T large enough for the
        first term to fall to 1/n (``T = (2γ/ρα)·log(6γn)``); here it falls
        only to the second, which is computed from public quantities:

        ``T = min{T >= 1 : κ_f^T <= sqrt(s·max(log d, 1)/n + k·σ(T)²)}``

        (at most ``_MAX_AUTO_ITER``; ``max(log d, 1)`` keeps the sampling
        term from vanishing at d = 1, where log d = 0)

        with ``κ_f`` the measured contraction of the family (``_CONTRACTION``),
        ``E0 = 1`` (standardised features and coefficients of order one, the
        paper's initialisation radius up to a constant), ``k`` released
        values and ``σ(T)`` the standard deviation of the noise on each
        released value when the budget is split over T steps (the same
        calibration as the fit: it grows like sqrt(T), or like T under
        ``accounting="paper"``). More steps would only add noise; fewer leave
        optimisation error above the noise. Reads n, d, s, ε, δ, the bounds
        and the step size; never the data.
        """
        kappa = _CONTRACTION[self.family]
        sampling = sparsity * max(math.log(d), 1.0) / n
        laplace = self.accounting == "paper"
        for n_iter in range(1, _MAX_AUTO_ITER + 1):
            sizes = self._sizes(n, d, sparsity, n_iter, learning_rate, residual_bound)
            try:
                release = self._noise_scales(**sizes)[1]
            except ValueError:  # "paper": Lemma 5.1's condition fails at this T
                continue
            std = release * math.sqrt(2.0) if laplace else release
            # hypot: std² overflows at the largest bounds the constraints accept
            floor = math.hypot(
                math.sqrt(sampling), math.sqrt(sizes["n_released"]) * std
            )
            if kappa**n_iter <= floor:
                return n_iter
        return _MAX_AUTO_ITER

    def _schedule_sparsity(self, d):
        """``sparsity`` resolved against the public d."""
        if self.sparsity == "auto":
            return min(_DEFAULT_SPARSITY, d)
        if self.sparsity > d:
            # As SelectKBest does for k > n_features: keep every feature. d is
            # public, so the choice reads no data (and selecting all features
            # releases nothing, see _exact_scales).
            warnings.warn(
                f"sparsity={self.sparsity} is greater than n_features={d}: all "
                f"{d} features are kept (sparsity_ = {d}).",
                UserWarning,
                stacklevel=6,  # the caller of fit (via 2 helpers and 2 decorators)
            )
            return d
        return int(self.sparsity)

    def _schedule(self, n, d, residual_bound):
        """Sparsity, steps and step size from the parameters and public n, d
        (the public schedule: a given ``learning_rate``, or
        ``accounting="paper"``)."""
        sparsity = self._schedule_sparsity(d)
        # Default: ~1/γ for standardised features (E xxᵀ ≈ I).
        learning_rate = (
            1.0 / curvature_weight(self.family, residual_bound)
            if self.learning_rate == "auto"
            else float(self.learning_rate)
        )
        n_iter = (
            self._auto_n_iter(n, d, sparsity, learning_rate, residual_bound)
            if self.max_iter == "auto"
            else self.max_iter
        )
        return sparsity, n_iter, learning_rate

    def _noise_scales(self, **sizes):
        """(selection scale, release scale) for the accounting chosen."""
        if self.accounting == "exact":
            return _exact_scales(self.epsilon, self.delta, **sizes)
        b = _paper_scale(
            self.epsilon,
            self.delta,
            sensitivity=sizes["sensitivity"],
            sparsity=sizes["sparsity"],
            n_released=sizes["n_released"],
            n_iter=sizes["n_iter"],
        )
        return b, b

    def _describe(
        self,
        rho,
        selection,
        release,
        *,
        sensitivity,
        sparsity,
        n_released,
        n_features,
        n_iter,
    ):
        if self.accounting == "exact":
            peel = (
                f"{sparsity} Gumbel peels (scale {selection:.4g}, "
                f"eps_p={2 * sensitivity / selection:.4g}-bounded range, "
                "eps_p^2/8-zCDP each)"
                if sparsity < n_features
                else "selection of all features (free)"
            )
            values = f"Gaussian release of {n_released} values (std {release:.4g})"
            rule = "zCDP composition converted by Canonne-Kamath-Steinke"
        else:
            peel = f"{sparsity} Laplace peels (scale {selection:.4g})"
            values = f"Laplace release of {n_released} values (scale {release:.4g})"
            rule = "min of zCDP composition and advanced-within-step + basic-over-steps"
        return (
            f"DPSparseGLM noisy IHT: {n_iter} steps x [{peel} + {values}], "
            f"inf-sensitivity {sensitivity:.4g}; "
            f"rho={format_up(rho, 6)}-zCDP in total; {rule}"
        )

    def _linear_predictor(self, X):
        check_is_fitted(self)
        X = validate_data(
            self, X, accept_sparse="csr", reset=False, dtype=[np.float64, np.float32]
        )
        z = clip_features(X, self.x_bound) @ self.coef_ + self.intercept_
        return np.asarray(z, dtype=np.float64).reshape(-1)

    def predict(self, X):
        """Predict the mean response (post-processing of the private model).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples; entries are clipped to ``±x_bound`` as in ``fit``.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            ``x·coef_ + intercept_`` (gaussian), its exponential (poisson) or
            its logistic sigmoid, P(y = 1) (logistic).
        """
        if is_dask_array(X):
            from .. import _dask

            check_is_fitted(self)
            return _dask.map_rows(self.predict, self, X, accept_sparse=True)
        z = self._linear_predictor(X)
        return _make_datafit(self.family).inverse_link(z[:, None])[:, 0]
