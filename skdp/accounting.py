"""Exact privacy accounting: Gaussian differential privacy and its conversions.

This module is the single source of truth for how much noise skdp adds and for
what a fitted model's guarantee is. Every estimator calibrates its noise here
and reports its cost as a :class:`PrivacyCost`.

The workhorse is Gaussian differential privacy (μ-GDP, Dong, Roth & Su 2022).
A Gaussian mechanism with L2 sensitivity Δ and noise standard deviation σ is
exactly (Δ/σ)-GDP, and ``T`` adaptively composed such steps are exactly
``μ = sqrt(T)·Δ/σ``-GDP ([1]_, Cor. 3.3). A μ-GDP mechanism is (ε, δ)-DP for
every ε ≥ 0 with ([1]_, Cor. 2.13; [2]_, Thm. 8)

.. math::

    \\delta(\\varepsilon; \\mu) = \\Phi(-\\varepsilon/\\mu + \\mu/2)
        - e^{\\varepsilon}\\,\\Phi(-\\varepsilon/\\mu - \\mu/2),

and no smaller δ holds for that ε: the curve is tight. It is evaluated in log
space (:func:`log_delta_from_mu`) so that ε in the hundreds does not overflow,
and inverted by bracketed root finding whose result is then nudged, if needed,
to the private side. Every inversion is calibrated against δ·(1 − 1e-9), not
δ, and checked in log space (``log δ(ε; μ) <= log δ + log1p(-1e-9)``, which
also holds for a subnormal δ): the margin covers the float error of the
evaluation, so the *true* δ at the returned ε, μ or noise multiplier never
exceeds the target. Every search loop is bounded; an input that the float64
search cannot handle raises :class:`~skdp.exceptions.MechanismFailedError`
instead of spinning.

Pure ε-DP pieces (e.g. Laplace noise) are not GDP; a composition that contains
them is accounted for conservatively (:func:`compose`). zCDP conversions follow
[3]_.

References
----------
.. [1] J. Dong, A. Roth, W. J. Su. "Gaussian differential privacy". JRSS-B 84(1),
   2022.
.. [2] B. Balle, Y.-X. Wang. "Improving the Gaussian mechanism for differential
   privacy: analytical calibration and optimal denoising". ICML 2018.
.. [3] M. Bun, T. Steinke. "Concentrated differential privacy: simplifications,
   extensions, and lower bounds". TCC 2016.
"""

from __future__ import annotations

import contextlib
import contextvars
import decimal
import functools
import math
import numbers
import sys
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np
from scipy.optimize import brentq, minimize_scalar
from scipy.special import erfcx, log_ndtr

from ._secure import GRID_BITS
from .exceptions import MechanismFailedError

__all__ = [
    "ADD_REMOVE",
    "REPLACE_ONE",
    "REPLACE_ONE_OUTCOME",
    "REPLACE_ONE_USER",
    "PrivacyCost",
    "check_independent_noise",
    "classical_gaussian_noise_multiplier",
    "compose",
    "delta_from_mu",
    "epsilon_from_mu",
    "epsilon_from_rdp",
    "epsilon_from_zcdp",
    "epsilon_from_zcdp_tight",
    "epsilon_of_private_selection",
    "gaussian_cost",
    "gaussian_noise_multiplier",
    "log_delta_from_mu",
    "mu_from_epsilon",
    "secure_gaussian_noise_multiplier",
    "secure_laplace_epsilon",
    "secure_noise_cost",
    "split_gaussian_budget",
    "truncated_negative_binomial_gamma",
    "truncated_negative_binomial_mean",
    "unshared_memo",
    "zcdp_from_epsilon",
    "zcdp_from_epsilon_tight",
    "zcdp_from_pure_dp",
    "zcdp_of_private_selection",
]

#: Neighbouring data sets differ by replacing one record (n is public).
REPLACE_ONE = "replace one record"
#: Neighbouring data sets differ by adding or removing one record.
ADD_REMOVE = "add or remove one record"
#: Neighbouring data sets differ by replacing all the records of one user.
REPLACE_ONE_USER = "replace one user"
#: Neighbouring data sets have the same comparisons (which items met, public)
#: and differ in the 0/1 outcome of one of them.
REPLACE_ONE_OUTCOME = "replace one comparison outcome"

_SENSITIVITY_FACTOR = {
    REPLACE_ONE: 2.0,
    ADD_REMOVE: 1.0,
    REPLACE_ONE_USER: 2.0,
    REPLACE_ONE_OUTCOME: 1.0,
}

_SQRT2 = math.sqrt(2.0)

# The memo of the calibrations below inside unshared_memo(), else None.
_SCOPED_MEMO = contextvars.ContextVar("skdp_scoped_memo", default=None)


def _memoised(maxsize):
    """``functools.lru_cache(maxsize)``, except inside :func:`unshared_memo`.

    The process-wide cache keeps its entries and counts its hits and misses,
    which anything in the process can read: calls made where their number
    is secret (the runs of DPRandomSearchCV) go to the scope's own memo.
    Errors are raised, never cached.
    """

    def decorate(fn):
        shared = functools.lru_cache(maxsize=maxsize)(fn)

        @functools.wraps(fn)
        def memoised(*args, **kwargs):
            memo = _SCOPED_MEMO.get()
            if memo is None:
                return shared(*args, **kwargs)
            key = (fn, args, tuple(sorted(kwargs.items())))
            if key not in memo:
                memo[key] = fn(*args, **kwargs)
            return memo[key]

        memoised.cache_info, memoised.cache_clear = (
            shared.cache_info,
            shared.cache_clear,
        )
        return memoised

    return decorate


@contextlib.contextmanager
def unshared_memo():
    """Within: the calibrations are memoised apart and forgotten at the end.

    For computations whose number of calls must stay secret: DPRandomSearchCV
    runs each candidate in one, as the process-wide caches' sizes and hit
    counts would count its runs (Papernot & Steinke's bound needs the number
    of runs K kept secret). Thread- and task-local (a context variable).
    """
    token = _SCOPED_MEMO.set({})
    try:
        yield
    finally:
        _SCOPED_MEMO.reset(token)


# brentq's tightest relative tolerance (it refuses anything below 4 * machine eps).
_RTOL = 4 * np.finfo(float).eps
# Its absolute tolerance: the smallest positive float, so that _RTOL governs
# even for roots near the 1e-300 floors of the searches (1e-300 would leave a
# root at 2.5e-300 only ±40% resolved).
_XTOL = 5e-324

# Calibrations aim at δ·(1 − _DELTA_MARGIN) instead of δ, so that the float
# error of log_delta_from_mu cannot put the true δ above the target. That error
# is ≤ 4.2e-13 relative on δ (measured against mpmath at 80 digits for μ from
# 1e-8 to 1e10, δ from 5e-324 to 0.9, ε from 0.5x to 2x each calibrated point;
# most of it is the rounding of log δ itself, |log δ| ≤ 745 wherever a target
# can be), so 1e-9 leaves > 2000x headroom, also for the few-ulp rounding of
# √T/z and of the sensitivities callers multiply in. Without the margin the
# true δ came out up to 3.5e-13 above target. The margin moves ε by
# 1e-9/|d log δ/dε| and μ by 1e-9/|d log δ/d log μ| relative: ≤ 1e-9
# relative on the test grids, up to ~4e-9 on ε where ε is small next to μ.
_DELTA_MARGIN = 1e-9
_LOG1P_MARGIN = math.log1p(-_DELTA_MARGIN)

# Caps on the search loops. Brackets grow or shrink by a factor 2 per step, so
# these never bind before the bracket limits (μ ≤ 1e12, μ ≥ 1e-300, ε ≥ 1e-300,
# or float overflow) do; a nudge doubles its step each time and reaches the far
# end of its bracket, which is known to satisfy the check, within 55 steps.
_MAX_BRACKET_STEPS = 2200
_MAX_NUDGES = 64

# log Φ(b) − log Φ(a) + ε for b = a − μ is an increment of g(x) = log erfcx(x)
# over [x, x + μ/√2]; for μ < 1 it is integrated from g' = −2·c (see
# _erfcx_log_slope) by 8-point Gauss–Legendre, exact to ~1e-17 there (g' is
# analytic within distance 2 of the interval: erfc's nearest zero is at
# −1.35 ± 1.99i).
_QUADRATURE_MAX_MU = 1.0
_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(8)
_GL_NODES = (_GL_NODES + 1.0) / 2.0  # on [0, 1]
_GL_WEIGHTS = _GL_WEIGHTS / 2.0
_SQRTPI = math.sqrt(math.pi)
# Above this t, c(t) = 1/(√π erfcx(t)) − t comes from its asymptotic series
# t·s/(1 − s) with s = u·p(u), p(u) = Σ_{k≥1} (−1)^(k+1) (2k−1)!! u^(k−1) and
# u = 1/(2t²): 17 terms leave a truncation error below 1e-18 relative at
# t = 10. Below it, the direct difference loses ~2t² ulps (≤ 200, i.e.
# ≤ 6e-14 relative).
_SERIES_MIN_T = 10.0
_SERIES_COEFFS = np.array(
    [(-1) ** (k + 1) * math.prod(range(1, 2 * k, 2)) for k in range(17, 0, -1)],
    dtype=float,
)


def sensitivity_factor(adjacency):
    """L2 sensitivity of a sum of vectors of norm ≤ 1 under ``adjacency``.

    Replacing one record can move a clipped sum from ``+C u`` to ``-C u``: 2C.
    Adding or removing one record moves it by at most C. Flipping one 0/1
    outcome of a public comparison moves ``Σ y_r x_r`` by one ``x_r``: C.
    """
    try:
        return _SENSITIVITY_FACTOR[adjacency]
    except KeyError:
        raise ValueError(f"Unknown adjacency {adjacency!r}.") from None


# ---------------------------------------------------------------------------
# The exact (ε, δ) curve of μ-GDP and its inverses
# ---------------------------------------------------------------------------


def _erfcx_log_slope(t):
    """``c(t) = 1/(√π·erfcx(t)) − t > 0``, so that ``d/dt log erfcx(t) = −2·c(t)``.

    Accurate to 6e-14 relative for every real ``t`` (see ``_SERIES_MIN_T``).
    """
    direct = np.minimum(t, _SERIES_MIN_T)  # clipped: no overflow, no warnings
    series = np.maximum(t, _SERIES_MIN_T)
    u = 0.5 / series / series  # underflows to 0 for t > 1e154; t·u does not
    p = np.polyval(_SERIES_COEFFS, u)
    return np.where(
        t < _SERIES_MIN_T,
        1.0 / (_SQRTPI * erfcx(direct)) - direct,
        0.5 / series * p / (1.0 - u * p),
    )


def _shift(mu, epsilon):
    """``a = μ/2 − ε/μ``, correctly rounded where the two terms nearly cancel.

    For ``q = ε/μ`` in [μ/4, μ] the subtraction is exact (Sterbenz), so only
    the rounding of q, ~ulp(μ/2), is left. That is negligible for μ ≤ 1, but
    moves δ by ~|a|·μ·1e-16 relative, 1e-9 at μ ≈ 1e6: exact rational
    arithmetic removes it. Outside that range |a| ≥ μ/4 and the rounding
    error is relative to a.
    """
    q = epsilon / mu
    if mu > 1.0 and mu / 4.0 <= q <= mu:
        return float(Fraction(mu) / 2 - Fraction(epsilon) / Fraction(mu))
    return mu / 2.0 - q


def log_delta_from_mu(mu, epsilon):
    """Natural log of the smallest δ such that μ-GDP implies (ε, δ)-DP.

    Computes ``log Φ(a) + log(1 - e^ε Φ(b)/Φ(a))`` with ``a = -ε/μ + μ/2`` and
    ``b = -ε/μ - μ/2`` (Dong, Roth & Su 2022, Cor. 2.13). The ratio is taken
    as ``erfcx(-b/√2) / erfcx(-a/√2)``, which equals it exactly, so ``e^ε`` is
    never formed and the result stays accurate where δ underflows. For μ < 1
    the log of that ratio, a difference of two nearly equal numbers, is
    instead integrated from its derivative, so δ keeps its relative accuracy
    however small μ is; for large μ, ``a`` is formed exactly.

    Parameters
    ----------
    mu : float
        GDP parameter, ``mu >= 0``.
    epsilon : float
        ``epsilon >= 0``.

    Returns
    -------
    log_delta : float
        ``-inf`` when δ is exactly 0 (``mu == 0`` or ``epsilon == inf``).
    """
    mu, epsilon = float(mu), float(epsilon)
    if mu < 0 or epsilon < 0 or math.isnan(mu) or math.isnan(epsilon):
        raise ValueError(f"Need mu >= 0 and epsilon >= 0; got {mu=}, {epsilon=}.")
    if mu == 0.0 or math.isinf(epsilon):
        return -math.inf
    if math.isinf(mu):
        return 0.0
    a = _shift(mu, epsilon)
    b = -epsilon / mu - mu / 2.0
    log_phi_a = float(log_ndtr(a))
    # log of e^ε Φ(b) / Φ(a), < 0 in exact arithmetic because δ > 0. With
    # Φ(x) = erfcx(-x/√2) e^{-x²/2} / 2 and b² - a² = 2ε exactly, the ε and the
    # Gaussian exponents cancel analytically, leaving a difference of two
    # moderate logs instead of two huge ones (no cancellation where δ
    # underflows).
    if mu < _QUADRATURE_MAX_MU:
        # The difference g(x + h) − g(x), g = log erfcx, x = −a/√2, h = μ/√2,
        # loses ~1e-16/|result| relative (1e-6 at μ = 1e-8): integrate g'.
        h = mu / _SQRT2
        slopes = _erfcx_log_slope(-a / _SQRT2 + h * _GL_NODES)
        log_ratio = -2.0 * h * float(_GL_WEIGHTS @ slopes)
    elif a < 30.0:
        log_ratio = float(np.log(erfcx(-b / _SQRT2)) - np.log(erfcx(-a / _SQRT2)))
    else:
        # erfcx(-a/√2) overflows for a > 37; use its closed form
        # log erfcx(-a/√2) = a²/2 + log 2 + log Φ(a) (b ≤ 0 never overflows).
        log_ratio = float(np.log(erfcx(-b / _SQRT2))) - (
            a * a / 2.0 + math.log(2.0) + log_phi_a
        )
    if log_ratio >= 0.0:  # δ is below what float64 resolves at this point
        return -math.inf
    # log(1 - e^x): -expm1 is exact near x = 0, log1p(-exp) far from it.
    if log_ratio > -math.log(2.0):
        log_one_minus = math.log(-math.expm1(log_ratio))
    else:
        log_one_minus = math.log1p(-math.exp(log_ratio))
    return log_phi_a + log_one_minus


def delta_from_mu(mu, epsilon):
    """Smallest δ such that a μ-GDP mechanism is (ε, δ)-DP.

    Parameters
    ----------
    mu : float
        GDP parameter, ``mu >= 0``.
    epsilon : float
        ``epsilon >= 0``.

    Returns
    -------
    delta : float

    Examples
    --------
    >>> from skdp.accounting import delta_from_mu
    >>> round(delta_from_mu(1.0, 1.0), 6)
    0.126937

    Up by 1e-12 relative (the curve's rounding left it up to 3.4e-13 below
    the exact δ; review), and never below the smallest positive float where
    the exact δ is positive but underflows.
    """
    log_delta = log_delta_from_mu(mu, epsilon)
    if log_delta == -math.inf:
        return 0.0
    delta = math.exp(log_delta)
    # A relative step cannot move a subnormal: two of its ulps instead (the
    # exact δ was up to 1.7e-9 relative above; review).
    return min(max(delta * (1.0 + 1e-12), delta + 2.0 * math.ulp(0.0)), 1.0)


def _check_delta(delta):
    delta = float(delta)
    if not 0.0 <= delta <= 1.0 or math.isnan(delta):
        raise ValueError(f"delta must be in [0, 1]; got {delta}.")
    return delta


def _check_n_steps(n_steps):
    if isinstance(n_steps, bool) or not isinstance(n_steps, numbers.Integral):
        raise ValueError(f"n_steps must be an integer; got {n_steps!r}.")
    if n_steps < 1:
        raise ValueError(f"n_steps must be >= 1; got {n_steps}.")
    return int(n_steps)


def _log_target(delta):
    """``log(δ·(1 − _DELTA_MARGIN))``, the level every calibration checks log δ against.

    ``-log δ`` rather than ``log(1/δ)`` throughout: ``1/δ`` overflows to inf for
    a subnormal δ, while ``log(5e-324)`` is a plain -744.4.
    """
    return math.log(delta) + _LOG1P_MARGIN


def _nudge(passes, x, bound, what):
    """Move ``x`` toward ``bound`` until ``passes(x)``, in steps doubling from one ulp.

    ``bound`` passes (it is the far end of a bracket that was checked), so
    with ``|bound − x| <= |x|`` it is reached within 55 steps, even where the
    curve is so flat that an ulp-sized step would take forever. Steps past
    that are a safety net for a float check that is not quite monotone.
    """
    step = math.ulp(x)
    for _ in range(_MAX_NUDGES):
        if passes(x):
            return x
        x = min(x + step, bound) if bound > x else max(x - step, bound)
        step *= 2.0
    raise MechanismFailedError(
        f"Could not move {what} to the private side within {_MAX_NUDGES} steps; "
        f"stuck at {x!r}."
    )


def epsilon_from_mu(mu, delta):
    """Smallest ε such that a μ-GDP mechanism is (ε, δ)-DP.

    Solves ``δ(ε; μ) = δ·(1 − 1e-9)`` for ε by Brent's method on a bracket
    that is widened geometrically until it holds the root, then moves the
    answer up, if rounding left it on the wrong side, until
    ``log δ(ε; μ) <= log δ + log1p(-1e-9)``. The check is in log space, so
    it also works for a subnormal δ, and the margin exceeds the float error
    of the evaluation, so the true ``δ(ε; μ) <= δ`` always. The reported ε
    exceeds the exact one by ``~1e-9 / |d log δ / dε|``: ~1e-9 relative or less,
    unless ε is small next to μ.

    Parameters
    ----------
    mu : float
        GDP parameter, ``mu >= 0``.
    delta : float
        Target δ in [0, 1].

    Returns
    -------
    epsilon : float
        ``inf`` if ``delta == 0`` and ``mu > 0`` (GDP never gives pure DP), or
        if ε overflows float64 (``mu > ~1.9e154``).

    Raises
    ------
    MechanismFailedError
        If a bounded search loop runs out of steps (not expected for any
        valid input; it replaces an endless loop).

    Examples
    --------
    >>> from skdp.accounting import epsilon_from_mu
    >>> round(epsilon_from_mu(1.0, 1e-5), 5)
    4.37718
    """
    return _epsilon_from_mu(float(mu), _check_delta(delta))


# Pure and called by every fit (often with the same budget, in a search):
# cached. Errors are raised, never cached.
@_memoised(maxsize=1024)
def _epsilon_from_mu(mu, delta):
    if mu < 0 or math.isnan(mu):
        raise ValueError(f"mu must be >= 0; got {mu}.")
    if mu == 0.0 or delta == 1.0:
        return 0.0
    if math.isinf(mu):
        return math.inf
    if delta == 0.0:
        return math.inf
    log_target = _log_target(delta)

    def gap(eps):  # decreasing in eps; the root is the answer
        return log_delta_from_mu(mu, eps) - log_target

    if gap(0.0) <= 0.0:
        return 0.0
    # At ε = μ²/2 + μ·s with s = sqrt(2 log(1/δ)), a = -s and
    # δ(ε; μ) < Φ(-s) < δ/2: an upper bracket unless rounding says otherwise.
    hi = mu * mu / 2.0 + mu * math.sqrt(-2.0 * math.log(delta)) + 1e-12
    for _ in range(_MAX_BRACKET_STEPS):
        if gap(hi) <= 0.0:
            break
        hi *= 2.0
    else:
        raise MechanismFailedError(f"Found no upper bound on epsilon for {mu=}.")
    if math.isinf(hi):
        return math.inf  # ε ≥ ~μ²/2 is beyond float64
    lo = hi / 2.0
    for _ in range(_MAX_BRACKET_STEPS):
        if gap(lo) > 0.0:
            break
        if lo < 1e-300:
            return lo  # 0 < ε <= lo: not worth resolving further
        hi, lo = lo, lo / 2.0
    else:
        raise MechanismFailedError(f"Found no lower bound on epsilon for {mu=}.")
    eps = brentq(_finite(gap), lo, hi, xtol=_XTOL, rtol=_RTOL, maxiter=500)
    # Rounding must err toward a safer (larger) ε; hi passes.
    return float(_nudge(lambda e: gap(e) <= 0.0, eps, hi, "epsilon"))


def mu_from_epsilon(epsilon, delta):
    """Largest μ such that a μ-GDP mechanism is (ε, δ)-DP.

    Solves ``δ(ε; μ) = δ·(1 − 1e-9)`` for μ (δ increases with μ) on an
    expanding bracket, then moves the answer down, if rounding left it on the
    wrong side, until ``log δ(ε; μ) <= log δ + log1p(-1e-9)``. The check is in
    log space, so it also works for a subnormal δ, and the margin exceeds the
    float error of the evaluation, so the true ``δ(ε; μ) <= δ`` always.

    Parameters
    ----------
    epsilon : float
        Target ε, ``epsilon >= 0``.
    delta : float
        Target δ in [0, 1].

    Returns
    -------
    mu : float
        0 when ``delta == 0`` (only an infinitely noisy Gaussian mechanism is
        pure DP); ``inf`` when ``delta == 1``.

    Raises
    ------
    MechanismFailedError
        If μ would exceed 1e12 (ε beyond ~5e23) or fall below 1e-300 (ε and
        δ both so small, e.g. ε = 0 and δ below about 5e-301, that float64
        cannot calibrate them).

    Examples
    --------
    >>> from skdp.accounting import mu_from_epsilon
    >>> round(1 / mu_from_epsilon(1.0, 1e-5), 4)  # the analytic Gaussian mechanism
    3.7306
    """
    return _mu_from_epsilon(float(epsilon), _check_delta(delta))


# Pure and called by every fit (often with the same budget, in a search):
# cached. Errors are raised, never cached.
@_memoised(maxsize=1024)
def _mu_from_epsilon(epsilon, delta):
    if epsilon < 0 or math.isnan(epsilon):
        raise ValueError(f"epsilon must be >= 0; got {epsilon}.")
    if delta == 0.0:
        return 0.0
    if delta == 1.0 or math.isinf(epsilon):
        return math.inf
    log_target = _log_target(delta)

    def gap(mu):  # increasing in mu; the root is the answer
        return log_delta_from_mu(mu, epsilon) - log_target

    hi = 1.0
    for _ in range(_MAX_BRACKET_STEPS):
        if gap(hi) >= 0.0:
            break
        hi *= 2.0
        if hi > 1e12:
            raise MechanismFailedError(
                f"No finite mu for {epsilon=}, {delta=}: it would exceed 1e12."
            )
    lo = hi / 2.0
    for _ in range(_MAX_BRACKET_STEPS):
        if gap(lo) <= 0.0:
            break
        hi, lo = lo, lo / 2.0
        if lo < 1e-300:
            raise MechanismFailedError(
                f"No mu >= 1e-300 for {epsilon=}, {delta=}: too small to "
                "calibrate in float64."
            )
    mu = brentq(_finite(gap), lo, hi, xtol=_XTOL, rtol=_RTOL, maxiter=500)
    # Rounding must err toward a safer (smaller) μ; lo passes.
    return float(_nudge(lambda m: gap(m) <= 0.0, mu, lo, "mu"))


def _finite(f):
    """Wrap ``f`` so that brentq never sees ±inf (δ underflow far from the root)."""

    def wrapped(x):
        return float(np.clip(f(x), -1e300, 1e300))

    return wrapped


def gaussian_noise_multiplier(epsilon, delta, n_steps=1, *, noise="fast"):
    """Smallest noise multiplier σ/Δ for ``n_steps`` composed Gaussian steps.

    With ``noise="secure"`` this is
    :func:`secure_gaussian_noise_multiplier` (discrete Gaussian noise,
    accounted in zCDP); the rest of this docstring is the fast path.

    Each step adds N(0, σ²) noise to a query of L2 sensitivity Δ; adaptively
    composed they are ``sqrt(n_steps)·Δ/σ``-GDP, so the multiplier is
    ``sqrt(n_steps) / mu_from_epsilon(epsilon, delta)``, nudged up until the
    composition provably meets (ε, δ): like :func:`mu_from_epsilon` it is
    calibrated against δ·(1 − 1e-9) and checked in log space,
    ``log δ(ε; sqrt(n_steps)/z) <= log δ + log1p(-1e-9)``, so that the true δ
    of the returned z is at most δ.

    Parameters
    ----------
    epsilon : float
        Target ε > 0.
    delta : float
        Target δ in (0, 1).
    n_steps : int, default=1
        Number of Gaussian steps composed.
    noise : {"fast", "secure"}, default="fast"
        The sampler the noise is drawn with.

    Returns
    -------
    noise_multiplier : float
        ``inf`` if the multiplier overflows float64.

    Raises
    ------
    MechanismFailedError
        When :func:`mu_from_epsilon` does.

    Examples
    --------
    >>> from skdp.accounting import gaussian_noise_multiplier
    >>> round(gaussian_noise_multiplier(1.0, 1e-5), 4)
    3.7306
    >>> round(gaussian_noise_multiplier(1.0, 1e-5, n_steps=100), 2)
    37.31
    """
    if noise == "secure":
        return secure_gaussian_noise_multiplier(epsilon, delta, n_steps)
    epsilon, delta = _check_gaussian_budget(epsilon, delta)
    n_steps = _check_n_steps(n_steps)
    if math.isinf(epsilon):
        return 0.0
    sqrt_steps = math.sqrt(n_steps)
    log_target = _log_target(delta)

    def passes(z):
        return log_delta_from_mu(sqrt_steps / z, epsilon) <= log_target

    z = sqrt_steps / mu_from_epsilon(epsilon, delta)
    # √T/z gives back μ only to a few ulps: err toward more noise. 2z (μ/2)
    # passes by far.
    return float(_nudge(passes, z, 2.0 * z, "the noise multiplier"))


def split_gaussian_budget(epsilon, delta, parts, *, noise="fast"):
    """Noise multipliers of several Gaussian releases that share one budget.

    ``parts`` lists ``(n_steps, share)`` pairs: ``n_steps`` equal releases
    that together get a ``share`` of the budget (the shares add up to 1).
    With ``z`` the multiplier of one release that spends the whole
    (``epsilon``, ``delta``), a part's releases each get the multiplier
    ``z·sqrt(n_steps/share)``, so that ``Σ n_steps/z_i² = 1/z²``: the
    releases compose to exactly ``1/z``-GDP (Dong, Roth & Su 2022, Cor. 3.3),
    the same as ``n`` (the total number of releases) steps of the one
    *equivalent* multiplier ``sqrt(n)·z``, which is what
    :func:`gaussian_cost` is given to report the total.

    With ``noise="secure"`` the releases are accounted in zCDP with a grid
    slack s per release (:func:`secure_noise_cost`):
    ``Σ_i (1/z_i + s)² <= n·(1/(sqrt(n)·z) + s)²`` by Cauchy–Schwarz
    (``Σ 1/z_i <= sqrt(n·Σ 1/z_i²)``), so ``z`` is calibrated for ``n``
    secure steps of multiplier ``sqrt(n)·z`` and the same report holds.

    Parameters
    ----------
    epsilon, delta : float
        The total budget.
    parts : sequence of (int, float)
        ``(n_steps, share)`` per part; shares in (0, 1] adding up to 1.
    noise : {"fast", "secure"}, default="fast"

    Returns
    -------
    multipliers : list of float
        The noise multiplier of each release of each part, in order.
    equivalent : float
        The multiplier ``sqrt(n)·z`` for which ``gaussian_cost(equivalent,
        n, ...)`` is the cost of all the releases together.

    Examples
    --------
    >>> from skdp.accounting import gaussian_cost, split_gaussian_budget
    >>> (z_search, z_release), z_eq = split_gaussian_budget(
    ...     1.0, 1e-5, [(4, 0.25), (1, 0.75)]
    ... )
    >>> round(4 / z_search**2 + 1 / z_release**2, 12) == round(5 / z_eq**2, 12)
    True
    >>> cost = gaussian_cost(z_eq, 5, delta=1e-5, adjacency="replace one record")
    >>> round(cost.epsilon, 6)
    1.0
    """
    parts = [(_check_n_steps(steps), float(share)) for steps, share in parts]
    if not parts or not all(0.0 < share <= 1.0 for _, share in parts):
        raise ValueError(f"Every share must be in (0, 1]; got {parts}.")
    total = sum(share for _, share in parts)
    if not math.isclose(total, 1.0, rel_tol=1e-9):
        raise ValueError(f"The shares must add up to 1; got {parts}.")
    # Shares that add up to 1 + 1e-9 would spend that much more than the
    # budget (review: δ 1.7e-8 relative above the target): normalised.
    parts = [(steps, share / total) for steps, share in parts]
    n = sum(steps for steps, _ in parts)
    if noise == "secure":
        z = gaussian_noise_multiplier(epsilon, delta, n, noise="secure") / math.sqrt(n)
    else:
        z = gaussian_noise_multiplier(epsilon, delta)
    multipliers = [z * math.sqrt(steps / share) for steps, share in parts]
    return multipliers, math.sqrt(n) * z


def _check_gaussian_budget(epsilon, delta):
    epsilon, delta = float(epsilon), _check_delta(delta)
    if not epsilon > 0:
        raise ValueError(f"epsilon must be > 0; got {epsilon}.")
    if not 0.0 < delta < 1.0:
        raise ValueError(
            f"delta must be in (0, 1) for Gaussian noise; got {delta}. "
            "A Gaussian mechanism cannot be pure (delta=0) differentially private."
        )
    return epsilon, delta


# ---------------------------------------------------------------------------
# Secure noise: the discrete Gaussian on a grid, accounted in zCDP
# ---------------------------------------------------------------------------

#: The rounding of secure noise adds at most noise_std·2^-GRID_BITS to the L2
#: sensitivity of one release (see skdp._secure and add_gaussian_noise).
_SECURE_SLACK = 2.0**-GRID_BITS


def _secure_step_rho(noise_multiplier):
    """ρ of one secure Gaussian release: ``(1/z + 2^-16)²/2``.

    A release of L2 sensitivity Δ with requested noise std σ = z·Δ is
    rounded to a grid g <= σ·2^-16/sqrt(dim) (sensitivity at most
    ``Δ + g·sqrt(dim) <= Δ + σ·2^-16`` in grid units times g) and gets
    discrete Gaussian noise of scale ``s·g >= σ``: ρ-zCDP with
    ``ρ = (Δ + σ·2^-16)²/(2σ²)`` (Canonne, Kamath & Steinke 2020, Thm. 14;
    for one coordinate Thm. 4).
    """
    if noise_multiplier == 0:
        return math.inf
    return (1.0 / noise_multiplier + _SECURE_SLACK) ** 2 / 2.0


def secure_noise_cost(noise_multiplier, n_steps, *, delta, adjacency, mechanism=""):
    """Cost of ``n_steps`` secure (discrete Gaussian) releases, composed in zCDP.

    Each release of L2 sensitivity Δ, noised by
    :func:`skdp.mechanisms.add_gaussian_noise` from a secure source with
    std ``noise_multiplier·Δ``, is ρ-zCDP with ``ρ = (1/z + 2^-16)²/2``:
    Canonne, Kamath & Steinke (2020), Thm. 14 (independent discrete
    Gaussians on Z^d, Δ₂²/(2σ²)-zCDP), with the grid rounding's
    ``σ·2^-16`` added to Δ. The steps compose to ``n_steps·ρ`` (zCDP
    composes additively, Bun & Steinke 2016, Lemma 2.3), reported as (ε,
    ``delta``)-DP by :func:`epsilon_from_zcdp_tight`. The continuous
    μ-GDP curve is *not* used: its tightness is not known to carry over.

    Returns
    -------
    PrivacyCost
        With ``zcdp`` set and ``mu`` None.

    Examples
    --------
    >>> from skdp.accounting import secure_noise_cost
    >>> cost = secure_noise_cost(10.0, 100, delta=1e-5, adjacency="replace one record")
    >>> round(cost.zcdp, 4), round(cost.epsilon, 3)
    (0.5002, 4.729)
    """
    noise_multiplier = float(noise_multiplier)
    if noise_multiplier < 0:
        raise ValueError(f"noise_multiplier must be >= 0; got {noise_multiplier}.")
    rho = _check_n_steps(n_steps) * _secure_step_rho(noise_multiplier)
    return PrivacyCost(
        epsilon_from_zcdp_tight(rho, delta) if rho < math.inf else math.inf,
        float(delta),
        None,
        adjacency,
        mechanism,
        zcdp=rho,
    )


def secure_gaussian_noise_multiplier(epsilon, delta, n_steps=1):
    """Smallest noise multiplier for ``n_steps`` secure releases to be (ε, δ)-DP.

    The target ``ρ = zcdp_from_epsilon_tight(ε, δ)`` is split over the
    steps, ``(1/z + 2^-16)²/2 <= ρ/n_steps``, i.e.
    ``z = 1/(sqrt(2ρ/n_steps) - 2^-16)``, then nudged up until
    :func:`secure_noise_cost` provably meets ε. This needs more noise than
    the fast path's exact μ-GDP calibration (the zCDP conversion is not
    tight for a Gaussian): 6% more at ε = 8, 8.5% at ε = 1, 11% at
    ε = 0.1 (δ = 1e-5, 1 to 100 steps; see the user guide, "Secure noise").

    Examples
    --------
    >>> from skdp.accounting import gaussian_noise_multiplier
    >>> from skdp.accounting import secure_gaussian_noise_multiplier
    >>> fast = gaussian_noise_multiplier(1.0, 1e-5, 100)
    >>> round(secure_gaussian_noise_multiplier(1.0, 1e-5, 100) / fast, 2)
    1.08
    """
    epsilon, delta = _check_gaussian_budget(epsilon, delta)
    n_steps = _check_n_steps(n_steps)
    if math.isinf(epsilon):
        return 0.0
    rho = zcdp_from_epsilon_tight(epsilon, delta)
    root = math.sqrt(2.0 * rho / n_steps) - _SECURE_SLACK
    if not root > 0:
        raise MechanismFailedError(
            f"(epsilon={epsilon:g}, delta={delta:g}) over {n_steps} steps is too "
            "small for secure noise: its grid rounding alone would exceed it."
        )
    z = 1.0 / root

    def passes(zz):
        spent = n_steps * _secure_step_rho(zz)
        return epsilon_from_zcdp_tight(spent, delta) <= epsilon

    return float(_nudge(passes, z, 2.0 * z, "the secure noise multiplier"))


def secure_laplace_epsilon(sensitivity, scale):
    """ε of one secure Laplace release (or report-noisy-max round).

    ``sensitivity/scale + 2^-16``: the discrete Laplace of integer scale
    ``t >= scale/g`` on an integer query of L1 sensitivity D is D/t-DP, and
    rounding to the grid ``g <= scale·2^-16/dim`` adds at most
    ``g·dim <= scale·2^-16`` to the L1 sensitivity (see
    :func:`skdp.mechanisms.add_laplace_noise`). For a report-noisy-max round
    pass ``sensitivity = 2Δ``: the charge ``2Δ/scale + 2^-16`` is at least
    the round's ``2(Δ + g)/(t·g) <= 2Δ/scale + 2^-15/(k·d)``
    (:func:`skdp.mechanisms.peel_top_k`'s Notes) whenever ``k·d >= 2``; a
    round with ``k = d = 1`` selects the only index and releases nothing.
    """
    if scale == 0:
        return math.inf
    return float(sensitivity) / float(scale) + _SECURE_SLACK


def classical_gaussian_noise_multiplier(epsilon, delta, n_steps=1):
    """Noise multiplier of the classical Gaussian mechanism under basic composition.

    Each of ``n_steps`` steps gets the budget (ε/T, δ/T) and the textbook
    calibration σ/Δ = sqrt(2·log(2/δ'))/ε' (Cai, Wang & Zhang, Score Attack,
    Example 2.1), i.e. ``sqrt(2·log(2T/δ))·T/ε``. This is how Algorithm 1 of
    Cai, Wang & Zhang (Score Attack) calibrates its noise; it is for
    reproducing that paper only.
    The textbook analysis needs ε' ≤ 1, so callers must check the exact
    guarantee of the noise they end up using (:func:`gaussian_cost`).

    Examples
    --------
    >>> from skdp.accounting import classical_gaussian_noise_multiplier
    >>> round(classical_gaussian_noise_multiplier(1.0, 1e-5), 4)
    4.9409
    """
    epsilon, delta = float(epsilon), _check_delta(delta)
    if not epsilon > 0 or not 0.0 < delta < 1.0:
        raise ValueError(f"Need epsilon > 0 and 0 < delta < 1; got {epsilon}, {delta}.")
    n_steps = _check_n_steps(n_steps)
    ratio = 2.0 * n_steps / delta
    if ratio < math.inf:
        log_ratio = math.log(ratio)
    else:  # 2T/δ overflows for a subnormal δ; its log does not
        log_ratio = math.log(2.0 * n_steps) - math.log(delta)
    return math.sqrt(2.0 * log_ratio) * n_steps / epsilon


# ---------------------------------------------------------------------------
# zCDP and pure DP
# ---------------------------------------------------------------------------


def epsilon_from_zcdp(rho, delta):
    """ε such that ρ-zCDP implies (ε, δ)-DP: ``ρ + 2·sqrt(ρ·log(1/δ))``.

    Bun & Steinke (2016), Prop. 1.3. Not tight; for Gaussian mechanisms use
    the exact GDP curve (a Gaussian mechanism that is ρ-zCDP is sqrt(2ρ)-GDP).

    Examples
    --------
    >>> from skdp.accounting import epsilon_from_zcdp
    >>> round(epsilon_from_zcdp(0.5, 1e-5), 4)
    5.2985
    """
    rho, delta = float(rho), _check_delta(delta)
    if not rho >= 0:
        raise ValueError(f"rho must be >= 0; got {rho}.")
    if delta == 0.0:
        return math.inf if rho > 0 else 0.0
    # -log δ, not log(1/δ): 1/δ overflows for a subnormal δ.
    return rho + 2.0 * math.sqrt(rho * -math.log(delta))


def zcdp_from_epsilon(epsilon, delta):
    """Largest ρ such that ρ-zCDP implies (ε, δ)-DP via Bun & Steinke Prop. 1.3.

    Inverts :func:`epsilon_from_zcdp`:
    ``ρ = (sqrt(log(1/δ) + ε) - sqrt(log(1/δ)))²``.

    Examples
    --------
    >>> from skdp.accounting import epsilon_from_zcdp, zcdp_from_epsilon
    >>> round(epsilon_from_zcdp(zcdp_from_epsilon(1.0, 1e-6), 1e-6), 12)
    1.0
    """
    epsilon, delta = float(epsilon), _check_delta(delta)
    if not epsilon >= 0:
        raise ValueError(f"epsilon must be >= 0; got {epsilon}.")
    if not 0.0 < delta < 1.0:
        raise ValueError(f"delta must be in (0, 1); got {delta}.")
    if math.isinf(epsilon):
        return math.inf
    # -log δ, not log(1/δ): 1/δ overflows for a subnormal δ. The rationalised
    # form ε/(√(L + ε) + √L) avoids the cancellation of √(L + ε) − √L when
    # ε ≪ L.
    log_inv = -math.log(delta)
    return (epsilon / (math.sqrt(log_inv + epsilon) + math.sqrt(log_inv))) ** 2


def epsilon_from_rdp(rdp, delta, *, centre):
    """ε such that a mechanism with Rényi curve ``rdp`` is (ε, δ)-DP.

    (α, τ)-RDP implies (ε, δ)-DP with ``ε = τ + log(1 - 1/α) - (log δ +
    log α)/(α - 1)`` (Canonne, Kamath & Steinke 2020; Balle et al. 2020, the
    conversion dp-accounting's RDP accountant uses), for every α > 1. This
    minimises over α on a log grid around ``α - 1 = centre`` (8 e-folds
    either side), then refines; every α gives a valid ε, so an imperfect
    minimisation only loses tightness.

    Parameters
    ----------
    rdp : callable
        ``rdp(alpha)``: the mechanism is (α, rdp(α))-RDP for every α > 1.
    delta : float
        Target δ in (0, 1).
    centre : float
        A guess of the best ``α - 1`` (> 0).
    """
    log_delta = math.log(float(delta))

    def eps_at(log_am1):  # α = 1 + e^log_am1
        am1 = math.exp(log_am1)
        alpha = 1.0 + am1
        # log(1 − 1/α) without cancellation: log1p(−1/α) for large α (the
        # log of a ratio near 1 lost digits; at tiny ρ, α ~ 1e10 and ε came
        # out 6e-8 too small, relatively), log(α−1) − log(α) near α = 1.
        if am1 >= 1.0:
            log_ratio = math.log1p(-1.0 / alpha)
        else:
            log_ratio = log_am1 - math.log1p(am1)
        return rdp(alpha) + log_ratio - (log_delta + math.log1p(am1)) / am1

    grid = math.log(centre) + np.linspace(-8.0, 8.0, 65)
    values = [eps_at(g) for g in grid]
    best = int(np.argmin(values))
    lo, hi = grid[max(best - 1, 0)], grid[min(best + 1, grid.size - 1)]
    refined = minimize_scalar(eps_at, bounds=(lo, hi), method="bounded")
    return min(values[best], float(refined.fun)) if refined.success else values[best]


def epsilon_from_zcdp_tight(rho, delta):
    """ε such that ρ-zCDP implies (ε, δ)-DP, optimised over the Rényi order.

    ρ-zCDP is (α, αρ)-RDP for every α > 1, converted by
    :func:`epsilon_from_rdp`; the result is also capped by Bun & Steinke's
    ``ρ + 2·sqrt(ρ·log(1/δ))`` (the same bound without the two log terms).
    """
    rho, delta = float(rho), float(delta)
    bound = epsilon_from_zcdp(rho, delta)  # checks ρ >= 0 and δ in [0, 1]
    if rho == 0.0 or delta >= 1.0:  # every mechanism is (0, 1)-DP
        return 0.0
    centre = math.sqrt(-math.log(delta) / rho) if delta > 0.0 else math.inf
    if not math.isfinite(bound) or not centre < 1e150:
        # δ = 0 or ρ = ∞ (ε = ∞), or a ρ so small that the Rényi orders
        # overflow (5e-324): Bun & Steinke's bound (review).
        return bound
    eps = epsilon_from_rdp(lambda alpha: alpha * rho, delta, centre=centre)
    # Up by 1e-12 relative: the minimisation's rounding left the result 1-2
    # ulp below the exact conversion at some (ρ, δ), and a calibration to a
    # target ε then spent a hair above it (review). Never below, as the GDP
    # path's margin.
    return max(0.0, min(eps, bound)) * (1.0 + 1e-12)


# ---------------------------------------------------------------------------
# Private selection: the best of a random number of private runs
# ---------------------------------------------------------------------------


def truncated_negative_binomial_mean(gamma, shape):
    """E[K] for K truncated negative binomial (η = ``shape``, γ = ``gamma``).

    ``P[K = k] ∝ (1 - γ)^k·Γ(k + η)/(Γ(η)·k!)`` for k ≥ 1 (Papernot &
    Steinke 2022, Def. 1): ``η(1 - γ)/(γ(1 - γ^η))`` for η > 0, and the
    logarithmic distribution's ``(1 - γ)/(γ·log(1/γ))`` for η = 0.
    """
    gamma, shape = float(gamma), float(shape)
    if gamma == 1.0:  # K = 1 surely (the limit of both formulas)
        return 1.0
    if shape == 0.0:
        return (1.0 - gamma) / (gamma * -math.log(gamma))
    # -expm1(η log γ) = 1 - γ^η without cancellation for small η.
    return shape * (1.0 - gamma) / (gamma * -math.expm1(shape * math.log(gamma)))


@_memoised(maxsize=256)  # pure; solved by bisection, used per ρ
def truncated_negative_binomial_gamma(mean, shape):
    """The γ in (0, 1] of the truncated negative binomial with ``E[K] = mean``.

    E[K] decreases from ∞ to 1 as γ goes from 0 to 1: solved by bisection in
    log γ to ~1e-15 relative.
    """
    mean, shape = float(mean), float(shape)
    if not mean >= 1.0:
        raise ValueError(f"The mean number of runs must be >= 1; got {mean}.")
    if mean == 1.0:
        return 1.0
    lo, hi = -1.0, -1e-300  # log γ
    while truncated_negative_binomial_mean(math.exp(lo), shape) < mean:
        lo *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if truncated_negative_binomial_mean(math.exp(mid), shape) < mean:
            hi = mid
        else:
            lo = mid
    return math.exp(lo)  # E[K] at γ = e^lo is >= mean: the safe side


def epsilon_of_private_selection(rho, delta, *, mean, shape):
    r"""(ε, δ) of the best of K runs of a ρ-zCDP mechanism, K truncated neg. binomial.

    Papernot & Steinke (2022), Theorem 2: if one run is (λ, ε(λ))-RDP for
    every λ and K (the number of runs, drawn independently of the data) is
    truncated negative binomial with shape η and parameter γ, then releasing
    only the best run is (λ, ε'(λ))-RDP with

    .. math::

        \varepsilon'(\lambda) = \varepsilon(\lambda) + (1 + \eta)\Bigl(
        (1 - 1/\hat\lambda)\,\varepsilon(\hat\lambda)
        + \log(1/\gamma)/\hat\lambda\Bigr)
        + \log(\mathbb{E}[K])/(\lambda - 1)

    for any λ̂ > 1. With ε(λ) = λρ (a ρ-zCDP run, e.g. μ-GDP with ρ = μ²/2)
    the bracket is ``(λ̂ - 1)ρ + log(1/γ)/λ̂``, minimised at
    ``λ̂ = sqrt(log(1/γ)/ρ)`` (or just above 1). The RDP curve is converted to
    (ε, δ) by :func:`epsilon_from_rdp`.

    Parameters
    ----------
    rho : float
        zCDP parameter of one run, > 0.
    delta : float
        Target δ in (0, 1).
    mean : float
        E[K] >= 1.
    shape : float
        η >= 0 (0: logarithmic, 1: geometric).
    """
    rho, shape = float(rho), float(shape)
    gamma = truncated_negative_binomial_gamma(mean, shape)
    log_inv_gamma = -math.log(gamma)
    lam_hat = max(math.sqrt(log_inv_gamma / rho), 1.0 + 1e-9)
    c = (1.0 + shape) * ((lam_hat - 1.0) * rho + log_inv_gamma / lam_hat)
    log_mean = math.log(truncated_negative_binomial_mean(gamma, shape))

    def rdp(alpha):
        return alpha * rho + c + log_mean / (alpha - 1.0)

    centre = math.sqrt((-math.log(delta) + log_mean) / rho)
    # Up by 1e-12 relative, as every other conversion here: the float
    # minimisation left it up to 1.3e-16 relative below the exact bound (an
    # mpmath oracle; review).
    return epsilon_from_rdp(rdp, delta, centre=centre) * (1.0 + 1e-12)


@_memoised(maxsize=256)  # pure; every search fit calibrates anew
def zcdp_of_private_selection(epsilon, delta, *, mean, shape):
    """Largest ρ of one run such that :func:`epsilon_of_private_selection` <= ε.

    Bisection in log ρ; the result errs low (the safe side).

    Raises
    ------
    MechanismFailedError
        If no ρ >= 1e-300 fits the budget.
    """

    def spends(rho):
        return epsilon_of_private_selection(rho, delta, mean=mean, shape=shape)

    # 2·log ε: log(ε²) overflowed from ε ≈ 1e155 (review).
    lo, hi = math.log(1e-300), 2.0 * math.log(max(1.0, float(epsilon)))
    try:
        while spends(math.exp(hi)) <= epsilon:
            hi += 2.0
    except (ZeroDivisionError, OverflowError):  # ρ beyond any sane budget
        raise MechanismFailedError(
            f"epsilon={epsilon} is too large for a private selection to calibrate "
            "(its Renyi orders fall to 1); use an epsilon below about 1e12."
        ) from None
    if spends(math.exp(lo)) > epsilon:
        raise MechanismFailedError(
            f"No run fits in ({epsilon}, {delta})-DP with {mean} expected runs."
        )
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if spends(math.exp(mid)) <= epsilon:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-13:
            break
    return math.exp(lo)


# Pure and called twice by every secure fit (its calibration and its
# privacy_budget): cached. Errors are raised, never cached.
@_memoised(maxsize=256)
def zcdp_from_epsilon_tight(epsilon, delta):
    """Largest ρ (to ~1e-12 relative) with ``epsilon_from_zcdp_tight(ρ, δ) <= ε``."""
    lo = zcdp_from_epsilon(epsilon, delta)  # Bun & Steinke: passes, but for

    def gap(rho):
        return epsilon_from_zcdp_tight(rho, delta) - epsilon

    # ... the 1e-12 margin, which tips it over where the two bounds meet
    # (ε above ~1.6e13: scipy's "f(a) and f(b) must have different signs";
    # review): halve until it passes.
    for _ in range(64):
        if gap(lo) <= 0:
            break
        lo /= 2.0
    else:
        raise MechanismFailedError(f"No zCDP bound found for {epsilon=}, {delta=}.")

    hi = 2.0 * lo
    for _ in range(200):
        if gap(hi) > 0:
            break
        lo, hi = hi, 2.0 * hi
    else:
        raise MechanismFailedError(f"No zCDP bound found for {epsilon=}, {delta=}.")
    rho = brentq(gap, lo, hi, rtol=1e-13)
    if gap(rho) <= 0:
        return rho
    # ε(ρ) jumps where the α grid moves with ρ, and brentq can settle on a
    # jump: bisect between lo (passes) and rho (fails), erring toward
    # privacy. (Stepping down by 1e-12 relative took ~1e9 passes at ε =
    # 1e-4, δ = 1e-8: make_private_pipeline with a secure step hung, review.)
    while rho - lo > 1e-12 * rho:
        mid = lo + (rho - lo) / 2.0
        if gap(mid) > 0:
            rho = mid
        else:
            lo = mid
    return lo


def zcdp_from_pure_dp(epsilon):
    """An ε-DP mechanism is (ε²/2)-zCDP (Bun & Steinke 2016, Prop. 1.4)."""
    epsilon = float(epsilon)
    if not epsilon >= 0:
        raise ValueError(f"epsilon must be >= 0; got {epsilon}.")
    return epsilon * epsilon / 2.0  # inf, not OverflowError, from ε ≈ 1.3e154


# ---------------------------------------------------------------------------
# Costs, composition and the ledger
# ---------------------------------------------------------------------------


@dataclass(frozen=True)
class PrivacyCost:
    """The privacy guarantee of one release, or of a composition of releases.

    Parameters
    ----------
    epsilon : float
        The release is (epsilon, delta)-DP.
    delta : float
        See ``epsilon``.
    mu : float or None
        If not None, the release is mu-GDP, which implies (ε, δ(ε; μ))-DP for
        *every* ε (see :func:`~skdp.accounting.delta_from_mu`);
        ``(epsilon, delta)`` is one point of that curve. None when a part of
        the release is not Gaussian.
    adjacency : str
        The neighbouring relation the guarantee is stated for, e.g.
        ``"replace one record"``.
    mechanism : str
        One line describing what was released.
    noise_seeds : tuple of str, default=()
        Fingerprints (:func:`skdp.mechanisms.noise_seed_id`) of the seeded
        noise streams the release drew from; empty when its noise came from
        fresh entropy (``random_state=None``). Releases that share a
        fingerprint share their noise and refuse to compose.
    caveats : tuple of str, default=()
        Assumptions the guarantee rests on beyond the adjacency, e.g. that a
        label set inferred from the training labels is public. Carried into
        every composition that includes this release.
    zcdp : float or None, default=None
        If not None (and ``mu`` is None), the release is ``zcdp``-zCDP
        (ρ), e.g. discrete Gaussian noise (``noise="secure"``), and
        ``(epsilon, delta)`` is one point of
        :func:`~skdp.accounting.epsilon_from_zcdp_tight`. Compositions
        that contain such a release compose in zCDP.
    sampler : str, default=""
        Which noise sampler drew the noise (set by every skdp fit: numpy's
        floating-point PCG64 path, or the secure discrete samplers).

    Notes
    -----
    Costs compose with ``+`` (see :func:`~skdp.accounting.compose`). Costs
    stated for different adjacencies refuse to compose, and so do costs that
    share a noise seed.

    Examples
    --------
    >>> from skdp.accounting import PrivacyCost
    >>> a = PrivacyCost.from_gdp(0.3, delta=1e-6, adjacency="replace one record")
    >>> b = PrivacyCost.from_gdp(0.4, delta=1e-6, adjacency="replace one record")
    >>> round((a + b).mu, 12)
    0.5
    """

    epsilon: float
    delta: float
    mu: float | None = None
    adjacency: str = REPLACE_ONE
    mechanism: str = ""
    noise_seeds: tuple = ()
    caveats: tuple = ()
    zcdp: float | None = None
    sampler: str = ""

    def __post_init__(self):
        if not self.epsilon >= 0:
            raise ValueError(f"epsilon must be >= 0; got {self.epsilon}.")
        if not 0.0 <= self.delta <= 1.0:
            raise ValueError(f"delta must be in [0, 1]; got {self.delta}.")
        if self.mu is not None and not self.mu >= 0:
            raise ValueError(f"mu must be >= 0; got {self.mu}.")
        if self.zcdp is not None and not self.zcdp >= 0:
            raise ValueError(f"zcdp must be >= 0; got {self.zcdp}.")

    @classmethod
    def from_gdp(cls, mu, *, delta, adjacency=REPLACE_ONE, mechanism=""):
        """The cost of a μ-GDP release, reported at ``delta``."""
        mu = float(mu)
        return cls(epsilon_from_mu(mu, delta), float(delta), mu, adjacency, mechanism)

    @property
    def rho(self):
        """zCDP parameter: μ²/2 of a GDP cost, ``zcdp`` of a zCDP cost, else None."""
        return self.zcdp if self.mu is None else self.mu**2 / 2.0

    def epsilon_at(self, delta):
        """ε at another δ: exact for GDP, the zCDP conversion for zCDP costs,
        else only for larger δ."""
        if self.mu is not None:
            return epsilon_from_mu(self.mu, delta)
        if self.zcdp is not None:
            return epsilon_from_zcdp_tight(self.zcdp, delta)
        if delta >= self.delta:
            return self.epsilon
        raise ValueError(
            f"This cost is not GDP; its epsilon is only known at delta >= {self.delta}."
        )

    def __add__(self, other):
        if not isinstance(other, PrivacyCost):
            return NotImplemented
        return compose([self, other])

    def __str__(self):
        mu = "" if self.mu is None else f", mu={format_up(self.mu, 6)}"
        if self.mu is None and self.zcdp is not None:
            mu = f", rho={format_up(self.zcdp, 6)} (zCDP)"
        caveats = "".join(f"; assuming {c}" for c in self.caveats)
        sampler = f"; noise: {self.sampler}" if self.sampler else ""
        return (
            f"({format_up(self.epsilon, 6)}, {format_up(self.delta, 3)})-DP{mu} under "
            f"'{self.adjacency}' adjacency: {self.mechanism}{caveats}{sampler}"
        )


def gaussian_cost(
    noise_multiplier, n_steps, *, delta, adjacency, mechanism="", noise="fast"
):
    """Cost of ``n_steps`` Gaussian steps with noise std = multiplier × sensitivity.

    The steps compose exactly to ``mu = sqrt(n_steps) / noise_multiplier``-GDP,
    reported as (ε, ``delta``)-DP. With ``noise="secure"`` (discrete Gaussian
    noise on a grid) the cost is :func:`secure_noise_cost` instead.

    Examples
    --------
    >>> from skdp.accounting import gaussian_cost
    >>> cost = gaussian_cost(10.0, 100, delta=1e-5, adjacency="replace one record")
    >>> cost.mu, round(cost.epsilon, 5)
    (1.0, 4.37718)
    """
    if noise == "secure":
        return secure_noise_cost(
            noise_multiplier,
            n_steps,
            delta=delta,
            adjacency=adjacency,
            mechanism=mechanism,
        )
    n_steps = _check_n_steps(n_steps)  # as the secure path (0 or 2.5 passed)
    noise_multiplier = float(noise_multiplier)
    if noise_multiplier < 0:
        raise ValueError(f"noise_multiplier must be >= 0; got {noise_multiplier}.")
    mu = math.inf if noise_multiplier == 0 else math.sqrt(n_steps) / noise_multiplier
    return PrivacyCost.from_gdp(
        mu, delta=delta, adjacency=adjacency, mechanism=mechanism
    )


#: A printed guarantee may sit this far (relative) below the computed one:
#: float noise of the accounting (an ε calibrated to 2 came back as
#: 2.0000000000000004, printed 2.00001). Every computed ε, δ carries a
#: larger margin over the exact guarantee (δ·(1 − 1e-9) in the GDP
#: calibration, 1e-12 relative in the zCDP conversion), so what is printed
#: still bounds the exact one.
_PRINT_TOLERANCE = 1e-13


def format_up(value, digits):
    """``value`` to ``digits`` significant digits, rounded up (a printed
    guarantee is never below the one computed, but for float noise of
    ``_PRINT_TOLERANCE``: ε = 4.877178 was printed as 4.87718, δ = 1.0049e-05
    as 1e-05, to nearest; review)."""
    value = float(value)
    text = f"{value:.{digits}g}"
    if not math.isfinite(value):
        return text
    exact = decimal.Decimal(value)  # the float's exact binary value
    subnormal = 0.0 < abs(value) < sys.float_info.min
    if subnormal:
        # float(text) may round back to value itself although the text is
        # below it (9.8739e-320 for 9.873903e-320; review): exact decimals.
        if decimal.Decimal(text) >= exact:
            return text
    elif float(text) >= value * (1.0 - _PRINT_TOLERANCE):
        return text  # to nearest is not below (1e-05 stays 1e-05)
    step = decimal.Decimal(1).scaleb(exact.adjusted() - digits + 1)
    up = exact.quantize(step, rounding=decimal.ROUND_CEILING)
    return format(up, f".{digits}g") if subnormal else f"{float(up):.{digits}g}"


def format_dp(epsilon, delta):
    """``"(ε, δ)-DP"`` for progress output, both rounded up (:func:`format_up`)."""
    return f"({format_up(epsilon, 4)}, {format_up(delta, 3)})-DP"


def _suggested_delta(spent):
    """A round δ above ``spent`` that leaves the Gaussian parts room: 10×
    ``spent``, rounded up to one significant digit (1e-10 for a δ of 0)."""
    if not spent > 0.0:
        return 1e-10
    target = 10.0 * spent
    scale = 10.0 ** math.floor(math.log10(target))
    return math.ceil(target / scale - 1e-9) * scale


def compose(costs: Iterable[PrivacyCost], *, delta=None):
    """Compose the guarantees of several releases on the same data.

    * All parts GDP: exact, ``mu = sqrt(sum mu_i²)`` (Dong, Roth & Su 2022,
      Cor. 3.3), reported at ``delta`` (default: the sum of the parts' δ).
    * Some parts zCDP (secure noise), the rest GDP or not: the GDP and zCDP
      parts compose in zCDP, ``ρ = Σ μ_i²/2 + Σ ρ_j`` (a μ-GDP release is
      exactly (μ²/2)-zCDP; Bun & Steinke 2016, Lemma 2.3), reported by
      :func:`epsilon_from_zcdp_tight` at the sum of their δ's; any other
      parts are added by basic composition as below. Where GDP parts are
      present, the total of the next item (the zCDP parts then counted at
      their own (ε, δ)) is computed too, and the smaller ε is reported (both
      hold at the same total δ; GDP parts that dominate lose in their zCDP
      conversion).
    * Otherwise the GDP parts are composed exactly and reported at the sum of
      their δ's; the other parts add up by basic composition
      (Dwork & Roth 2014, Thm. 3.16); the two totals add up again by basic
      composition. If ``delta`` is given, the GDP parts are reported at
      ``delta`` minus the other parts' δ.

    Parameters
    ----------
    costs : iterable of PrivacyCost
        Must all share one adjacency.
    delta : float, optional
        The total δ to report at.

    Returns
    -------
    PrivacyCost
    """
    costs = list(costs)
    if not costs:
        raise ValueError("Nothing to compose.")
    adjacencies = {c.adjacency for c in costs}
    if len(adjacencies) > 1:
        raise ValueError(
            f"Cannot compose guarantees stated for different adjacencies: "
            f"{sorted(adjacencies)}."
        )
    check_independent_noise(costs)
    (adjacency,) = adjacencies
    if len(costs) == 1:
        mechanism = costs[0].mechanism or "one release"
    else:
        mechanism = f"composition of {len(costs)} releases"
    extras = dict(
        noise_seeds=tuple(dict.fromkeys(s for c in costs for s in c.noise_seeds)),
        caveats=tuple(dict.fromkeys(v for c in costs for v in c.caveats)),
        sampler="; ".join(dict.fromkeys(c.sampler for c in costs if c.sampler)),
    )
    if any(c.mu is None and c.zcdp is not None for c in costs):
        total = _compose_zcdp(costs, delta, adjacency, mechanism, extras)
        if any(c.mu is not None for c in costs):
            # GDP parts lose to their zCDP conversion when they dominate:
            # the GDP route (the zCDP parts at their own (ε, δ)) may be
            # tighter, at the same total δ. Both are valid; report the less.
            try:
                gdp_route = _compose_gdp(costs, delta, adjacency, mechanism, extras)
            except ValueError:
                return total
            if gdp_route.epsilon < total.epsilon:
                return gdp_route
        return total
    return _compose_gdp(costs, delta, adjacency, mechanism, extras)


def _compose_gdp(costs, delta, adjacency, mechanism, extras):
    """:func:`compose` of the GDP parts exactly, the others by basic
    composition: see its docstring."""
    gdp = [c for c in costs if c.mu is not None]
    other = [c for c in costs if c.mu is None]
    mu = math.sqrt(sum(c.mu**2 for c in gdp))
    other_eps = sum(c.epsilon for c in other)
    other_delta = sum(c.delta for c in other)
    if delta is None:
        gdp_delta = min(1.0, sum(c.delta for c in gdp))
    else:
        gdp_delta = float(delta) - other_delta
        if gdp_delta < 0 or (gdp and gdp_delta <= 0 < mu):
            raise ValueError(
                f"delta={delta:g} is too small for this total: {len(other)} of the "
                f"releases are (epsilon, delta) guarantees (not Gaussian) whose "
                f"deltas alone add up to {other_delta:g}. Total them at a larger "
                f"delta, e.g. PrivacyLedger(delta={_suggested_delta(other_delta):g})."
            )
    if not other:
        return replace(
            PrivacyCost.from_gdp(
                mu, delta=gdp_delta, adjacency=adjacency, mechanism=mechanism
            ),
            **extras,
        )
    gdp_eps = epsilon_from_mu(mu, gdp_delta) if gdp else 0.0
    total_delta = min(1.0, other_delta + (gdp_delta if gdp else 0.0))
    return PrivacyCost(
        gdp_eps + other_eps, total_delta, None, adjacency, mechanism, **extras
    )


def _compose_zcdp(costs, delta, adjacency, mechanism, extras):
    """:func:`compose` when some parts are zCDP: see its docstring."""
    conc = [c for c in costs if c.rho is not None]
    other = [c for c in costs if c.rho is None]
    rho = sum(c.rho for c in conc)
    other_eps = sum(c.epsilon for c in other)
    other_delta = sum(c.delta for c in other)
    if delta is None:
        conc_delta = min(1.0, sum(c.delta for c in conc))
    else:
        conc_delta = float(delta) - other_delta
        if conc_delta < 0 or conc_delta <= 0 < rho:
            raise ValueError(
                f"delta={delta:g} is too small for this total: the releases that "
                f"are (epsilon, delta) guarantees alone add up to delta "
                f"{other_delta:g}. Total them at a larger delta, e.g. "
                f"PrivacyLedger(delta={_suggested_delta(other_delta):g})."
            )
    eps = epsilon_from_zcdp_tight(rho, conc_delta) if rho > 0 else 0.0
    if not other:
        return PrivacyCost(
            eps, conc_delta, None, adjacency, mechanism, zcdp=rho, **extras
        )
    total_delta = min(1.0, other_delta + conc_delta)
    return PrivacyCost(
        eps + other_eps, total_delta, None, adjacency, mechanism, **extras
    )


def check_independent_noise(costs):
    """Refuse releases that drew their noise from one seeded stream.

    Two fits given the same seed (an int copied by ``clone`` into every fold
    fit, refit and sibling step, or a sweep over ε with one seed) add the same
    noise vector, and a linear combination of their releases cancels it, so
    no composition of their guarantees is a guarantee. The same release
    recorded twice (one object) is only counted twice, which is safe.
    """
    owner = {}
    for cost in costs:
        for seed in cost.noise_seeds:
            first = owner.setdefault(seed, cost)
            if first is not cost:
                raise ValueError(
                    "Two releases drew their noise from the same seeded stream "
                    f"(fingerprint {seed}): '{first.mechanism}' and "
                    f"'{cost.mechanism}'. Releases that share noise can be "
                    "combined to cancel it, so no total of their guarantees is "
                    "honest. Fit with random_state=None (fresh noise for every "
                    "fit), or give every fit its own seed."
                )


#: Names this module used to re-export from :mod:`skdp._ledger`, which sits
#: above it (the ledger walks estimators; accounting is a foundation).
_MOVED_TO_SKDP = ("PrivacyLedger", "rowwise")


def __getattr__(name):
    """``skdp.accounting.PrivacyLedger`` and ``.rowwise``: deprecated aliases.

    Import them from ``skdp`` instead. The old path keeps working (with a
    DeprecationWarning) so that code written against it does not break; the
    ledger is loaded only when an old name is looked up, so accounting
    imports nothing above it.
    """
    if name in _MOVED_TO_SKDP:
        from . import _ledger  # deprecated forward (tests/test_layers.py)

        warnings.warn(
            f"skdp.accounting.{name} is deprecated: import it from skdp "
            f"(from skdp import {name}).",
            DeprecationWarning,
            stacklevel=2,
        )
        return getattr(_ledger, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
