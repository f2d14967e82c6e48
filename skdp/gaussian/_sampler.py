"""DPGaussianSampler: differentially private samples from a Gaussian."""

import math
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._base import (
    PRIVACY_CONSTRAINTS,
    DPEstimatorMixin,
    fitted_attributes,
    is_dask_array,
    private_fit,
    require_positive_delta,
    sum_over_rows,
    warn_if_delta_is_large,
)
from .._clipping import clip_factors
from .._dpgd import row_norms
from ..accounting import (
    REPLACE_ONE,
    PrivacyCost,
    classical_gaussian_noise_multiplier,
    gaussian_cost,
    gaussian_noise_multiplier,
    split_gaussian_budget,
)
from ..exceptions import InsufficientSamplesError, MechanismFailedError
from ..mechanisms import as_generator, gaussian_mechanism, seed_entropy
from ..preprocessing._quantiles import (
    N_BOUND_RELEASES,
    histogram_sensitivity,
    private_bounds,
)
from ..preprocessing._scaler import _feature_list, warn_if_near_range
from ._certify import plan as certified_plan
from ._subroutines import run_sampler

_FAIL_MESSAGE = (
    "The unbounded Gaussian sampler output Fail on {n_failed} of {n_draws} "
    "draw(s). Fail is a legitimate differentially private output (the "
    "stability test did not pass, e.g. for degenerate data: all rows equal, "
    "a rank-deficient covariance, or many outliers); the privacy budget is "
    "spent and the mechanism is not retried. Refitting on the same data "
    "spends a fresh (epsilon, delta). Use on_fail='ignore' to keep the "
    "successful draws."
)


# Entries of ``x - center`` are clipped to this before the row clip.
_HUGE = 1e300


def _shape_of(X):
    """(n, d) from ``X.shape`` without reading values when X is an array."""
    shape = getattr(X, "shape", None)
    if shape is None:
        shape = np.shape(X)
    if len(shape) != 2:
        raise ValueError(
            f"Expected a 2D array of shape (n_samples, n_features); got shape "
            f"{tuple(shape)}. Reshape 1D data with X.reshape(-1, 1)."
        )
    return int(shape[0]), int(shape[1])


def _is_auto(value):
    return isinstance(value, str) and value == "auto"


#: Smallest public signal-to-noise ratio ``n / (z_bounds·sqrt(2 d))`` of one
#: bound-search round from which ``"auto"`` finds the bulk of Gaussian data
#: (below it, ``fit`` warns; see ``_check_public_ball``). Chosen
#: on correlated Gaussians, d in {1, 2, 5, 10}, offsets 5 to 1e4, spreads
#: 1e-2 to 30: at 30 the median covariance error is 0.14-0.6 of ||Σ||_F and
#: the mean within 0.1 sd per coordinate; at 10-15 the search often misses
#: the bulk and the covariance error reaches 9-21 ||Σ||_F.
_MIN_SEARCH_SNR = 30.0
#: A released variance below this many noise standard deviations of the
#: second moment is called drowned (``_warn_if_drowned``).
_DROWNED_SDS = 2.0
#: ... and only if another feature's exceeds this many (NYSE's widest
#: feature: 68, Default's: 209; 200 standard normal rows in 5 features at
#: ε = 1: about 4, where every variance is rough and the scales agree).
_MEASURED_SDS = 20.0


#: ``spawn_key`` of the streams of :meth:`DPGaussianSampler.sample`. Fits
#: draw their noise from ``SeedSequence(entropy)`` (:func:`as_generator`) or
#: its children, spawned in order with keys ``(0,), (1,), ...``; this key,
#: the 64-bit word of the bytes ``b"skdp.smp"``, is none of them.
_SAMPLING_KEY = int.from_bytes(b"skdp.smp", "big")


def _sampling_generator(random_state):
    """The generator for :meth:`DPGaussianSampler.sample`.

    Seeded with the entropy :func:`as_generator` would use for the same
    ``random_state`` (an int, or four words of a ``Generator`` /
    ``RandomState``), under a ``spawn_key`` no fit uses: a seed equal to
    that of any fit (this sampler's, or another estimator's, whose children
    have keys ``(0,), (1,), ...``) never replays its noise, which the
    released draws would otherwise reveal.
    """
    if random_state is None:
        return np.random.default_rng()
    seq = np.random.SeedSequence(seed_entropy(random_state), spawn_key=(_SAMPLING_KEY,))
    return np.random.default_rng(seq)


def clipped_moments(X, center, radius):
    """Mean and second moment of the rows clipped to a ball around ``center``.

    Rows ``u_i = (x_i - c)·min(1, radius/||x_i - c||)``; returns
    ``(1/n)Σu_i`` and ``(1/n)Σu_i u_iᵀ``. Replacing one row moves them by at
    most ``2·radius/n`` (L2) and ``sqrt(2)·radius²/n`` (Frobenius). A Dask X
    is read in one reduction: each chunk's ``Σu_i`` and ``Σu_i u_iᵀ``
    (:func:`_clipped_moment_sums`), summed, then divided by the public n.
    """
    n, d = X.shape
    if is_dask_array(X):
        sums = sum_over_rows(
            _clipped_moment_sums, X, (d + d * d,), center=center, radius=radius
        )
        return sums[:d] / n, sums[d:].reshape(d, d) / n
    U = _clipped_rows(X, center, radius)
    return U.mean(axis=0), (U.T @ U) / n


def _clipped_rows(X, center, radius):
    """Rows ``(x_i - c)·min(1, radius/||x_i - c||)``: each one a function of its row."""
    with np.errstate(over="ignore"):
        U = X - center
    # Per entry, so still a function of the row alone: a difference that
    # overflowed (|x - c| > 1.8e308) becomes large but finite, so that the
    # clip below scales it down instead of producing inf·0 = NaN.
    np.clip(U, -_HUGE, _HUGE, out=U)
    U *= clip_factors(row_norms(U), radius)[:, None]  # norms free of overflow
    return U


def _clipped_moment_sums(X, *, center, radius):
    """``(Σu_i, Σu_i u_iᵀ)`` of one chunk, flattened (a sum over rows)."""
    U = _clipped_rows(X, center, radius)
    return np.concatenate([U.sum(axis=0), (U.T @ U).ravel()])


def joint_sensitivity(n_features):
    """κ: joint L2 sensitivity of the bounded mode's two releases, in units.

    With ``Δ_m = 2C/n`` and ``Δ_S = sqrt(2)·C²/n`` the sensitivities of the
    clipped mean and second moment on their own, replacing one clipped row
    u by v moves the stacked vector ``(mean/Δ_m, second/Δ_S)`` by at most
    κ = 5/4 for ``n_features >= 2`` and κ = 1 for one feature (never the
    ``sqrt(2)`` of adding the two worst cases). Proof in the Notes of
    :class:`DPGaussianSampler`.

    Parameters
    ----------
    n_features : int
        Dimension d of the rows.

    Returns
    -------
    kappa : float

    Examples
    --------
    >>> from skdp.gaussian import joint_sensitivity
    >>> joint_sensitivity(1), joint_sensitivity(3)
    (1.0, 1.25)
    """
    return 1.0 if n_features == 1 else 1.25


_TINY = float(np.finfo(np.float64).tiny)
_MAX = float(np.finfo(np.float64).max)
_EPS = float(np.finfo(np.float64).eps)


def _radius_range(n_samples):
    """Radii whose squares the bounded mode can sum and release in float64.

    ``n·C²`` (the trace of the summed outer products) stays below max/4,
    and ``C²/n`` (the second moment's sensitivity scale) stays a normal
    number with full precision. A function of the public n only.
    """
    n = max(int(n_samples), 1)
    return math.sqrt(n * _TINY / _EPS), math.sqrt(_MAX / (4.0 * n))


def _check_radius(radius, n_samples):
    """Refuse a radius outside :func:`_radius_range` (public: radius and n).

    Empty data is left to the input validation (its standard message).
    """
    if n_samples < 1:
        return
    lo, hi = _radius_range(n_samples)
    if not lo <= radius <= hi:
        raise ValueError(
            f"radius={radius:g} is outside the range in which the bounded mode "
            f"can clip and release in float64 with n_samples={n_samples}: it "
            f"needs {lo:.3g} <= radius <= {hi:.3g} (radius**2 summed over the "
            "rows must stay finite and radius**2/n_samples a normal number). "
            "Rescale the data, center and radius together."
        )


def _release_sensitivities(radius, n_samples):
    """``(Δ_m, Δ_S) = (2C/n, sqrt(2)·C²/n)``, after checking the radius."""
    _check_radius(radius, n_samples)
    n = float(n_samples)
    return 2.0 * radius / n, math.sqrt(2.0) * (radius * radius) / n


# Messages of the input checks whose first line carries no data values
# (templates of scikit-learn and numpy); any other message is withheld
# (issue 29, item 12: an error message must never echo data).
_SAFE_INPUT_MESSAGES = (
    "Input X contains NaN",
    "Input X contains infinity",
    "Input contains NaN",
    "Input contains infinity",
    "Found array with",
    "Sparse data was passed",
    "Complex data not supported",
    "float() argument must be",
    "X has ",
    "The feature names should match",
    "Feature names",
    "Expected a 2D array",
)


def _validate_input(estimator, X, **kwargs):
    """``validate_data``, whose error messages never echo data values."""
    try:
        return validate_data(estimator, X, **kwargs)
    except (ValueError, TypeError) as exc:
        message = str(exc)
        if message.startswith(_SAFE_INPUT_MESSAGES):
            # The first line only: scikit-learn appends the array itself to
            # some (complex data).
            replacement = type(exc)(message.split("\n", 1)[0])
        else:
            replacement = type(exc)(
                "X must be a 2D array-like of finite real numbers, shape "
                "(n_samples, n_features); it could not be converted (the "
                "converter's message is withheld: it may quote data values)."
            )
    # Outside the except clause: the replaced error is not its __context__.
    raise replacement


class DPGaussianSampler(DPEstimatorMixin, BaseEstimator):
    """Differentially private samples from a multivariate Gaussian.

    Two mechanisms, chosen by ``method``:

    * ``"unbounded"``: the sampler of Iverson, Kamath & Mouzakis [1]_ (paper
      004, Algorithm 2). No bounds on the mean or the covariance are needed; each
      run releases **one** point whose law (over the data and the mechanism)
      is within total variation ``tv_error`` of N(μ, Σ), or Fail. It is
      certified only above a very large sample size
      (:func:`~skdp.gaussian.required_n_samples`: about 9·10⁶ rows for d = 2,
      ε = 1, δ = 10⁻⁶), and ``fit`` refuses smaller data before reading it.
      ``fit`` runs the mechanism ``n_draws`` times on disjoint chunks of the
      (shuffled) rows and keeps only the released draws.
    * ``"bounded"`` (default): rows are clipped to the ball of radius
      ``radius`` around ``center``, and the clipped mean and second moment
      are released once with the Gaussian mechanism. ``center`` and
      ``radius`` are either given (public, never read from the data) or
      ``"auto"`` (the default): then a share ``bounds_share`` of the budget
      first finds per-feature bounds privately, and the ball is the
      smallest one around ``center`` that holds the box they span. The
      released model (``mean_``, ``covariance_``) is (ε, δ)-DP;
      :meth:`sample` then draws any number of points from
      N(``mean_``, ``covariance_``) as post-processing.

    Parameters
    ----------
    method : {"bounded", "unbounded"}, default="bounded"
        The mechanism (see above). ``noise="secure"`` supports
        ``"bounded"`` only (it raises for ``"unbounded"``).
    epsilon : float, default=1.0
        Privacy budget ε > 0 of one fit. ``"unbounded"`` needs ε <= 1
        (Theorem 4.1 of the paper).
    delta : float, default=1e-5
        Privacy parameter δ in (0, 1); should be well below ``1/n_samples``.
        ``"unbounded"`` needs δ <= ε/10.
    accounting : {"exact", "paper"}, default="exact"
        ``"bounded"``: ``"exact"`` calibrates the noise with the tight
        Gaussian-DP curve; ``"paper"`` uses the classical calibration
        ``σ = Δ·sqrt(2 log(2/δ'))/ε'`` at (ε/2, δ/2) per release (textbook,
        more noise; ``privacy_spent_`` reports the exact guarantee of the
        noise used). The classical bound is only valid for ε/2 <= 1 and
        falls below the exact multiplier from ε ≈ 45, so the larger of the two
        is used: never less noise than the declared budget needs.
        ``"unbounded"``: no effect (no noise is calibrated; the
        paper's own PTR constants are not certifiable, see Notes).
    center : "auto", float, array-like of shape (n_features,) or None, \
            default="auto"
        ``"bounded"``: centre of the clipping ball. ``"auto"``: the midpoint
        of the private per-feature bounds (see Notes); None: the origin; a
        value: public, never read from the data.
    radius : "auto" or float, default="auto"
        ``"bounded"``: radius of the clipping ball (> 0); rows farther from
        ``center`` are moved onto the sphere. ``"auto"``: the smallest ball
        around ``center`` that holds the box of the private per-feature
        bounds (see Notes). A value is public: choose it from domain
        knowledge so that it contains most of the data: too small biases
        the covariance down, too large adds noise (∝ radius²). The ball is
        round: on columns of very different scales the widest sets the
        radius and the noise swamps the others (ISLP Default's balance, sd
        484, beside income, sd 13336: a released sd of 982 at ε = 1);
        standardise such columns first, or sample them apart.
    data_range : float, default=1e6
        ``"bounded"`` with an ``"auto"`` center or radius: the public range
        ``[-data_range, data_range]`` in which the per-feature bounds are
        searched (as in :class:`~skdp.preprocessing.DPStandardScaler`).
        Values beyond it are clamped to it; the fit warns when the centre it
        finds lies beyond ``data_range/2``.
    bounds_share : float, default=0.25
        ``"bounded"`` with an ``"auto"`` center or radius: the share of the
        budget, in μ² (``μ_bounds² = bounds_share·μ²``), spent on the bounds;
        the release gets the rest.
    min_variance : float or "auto", default="auto"
        ``"bounded"``: the released covariance's eigenvalues are raised to at
        least this (a projection onto the positive-definite cone,
        post-processing). ``"auto"``: the noise standard deviation of one
        second-moment entry (data-independent).
    tv_error : float, default=0.1
        ``"unbounded"``: target total-variation distance α in (0, 1).
    n_draws : int, default=1
        ``"unbounded"``: number of draws; the rows are split into ``n_draws``
        disjoint chunks of ``n_samples // n_draws`` rows, each certified on
        its own (parallel composition: the total cost stays (ε, δ)).
    on_fail : {"raise", "ignore"}, default="raise"
        ``"unbounded"``: what ``fit`` does when a draw outputs Fail.
        ``"raise"``: raise :class:`~skdp.exceptions.MechanismFailedError`
        (nothing is stored). ``"ignore"``: keep the successful draws and
        count the failures in ``n_failed_``. Never retried.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the mechanism's coins (noise; shuffle, reference set, PTR noise
        and sphere direction). None draws fresh operating-system entropy: use
        it in production, since a known seed makes the noise predictable.
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
        1: the guarantee being spent, the certified configuration and one
        line per draw (released or Fail; not its running time, which
        depends on the data).

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,)
        ``"bounded"``: released mean (DP).
    covariance_ : ndarray of shape (n_features, n_features)
        ``"bounded"``: released covariance (DP), positive definite.
    center_ : ndarray of shape (n_features,)
        ``"bounded"``: the centre used (given, or found privately).
    radius_ : float
        ``"bounded"``: the radius used (given, or found privately).
    noise_multiplier_ : float
        ``"bounded"``: with a given center and radius, the noise standard
        deviation divided by the joint L2 sensitivity κ of the one release
        of mean and second moment (Notes); each part's noise is
        ``κ·noise_multiplier_`` times its own sensitivity. With ``"auto"``:
        the multiplier z for which ``n_iter_`` releases of multiplier z
        compose to the same guarantee as the bounds search and the release
        (:func:`skdp.accounting.split_gaussian_budget`).
        The composition stated here is that of ``noise="fast"``. Secure noise
        is composed in zCDP instead: each release is ``(1/z + 2^-16)²/2``-zCDP
        for its own multiplier z (the grid rounding's slack,
        :func:`~skdp.accounting.secure_noise_cost`), and
        ``privacy_spent_.zcdp`` is their sum; a GDP accountant given this
        multiplier understates it.
    n_iter_ : int
        ``"bounded"``: number of Gaussian releases composed (1, or 5 with
        an ``"auto"`` center or radius: four bound-search rounds and the
        release).
    samples_ : ndarray of shape (n_released, n_features)
        ``"unbounded"``: the released draws (one per successful run).
    n_failed_ : int
        ``"unbounded"``: number of runs that output Fail.
    plan_ : SamplerPlan
        ``"unbounded"``: the certified, data-independent configuration of
        one run (n1, n2, λ0, k, ``|R|``, the PTR's ε_p and δ_p, the release's
        budget), a function of the chunk size, d, ε, δ and ``tv_error`` only.
    privacy_spent_ : PrivacyCost
        The guarantee of the fit (ε, δ; ``mu`` for ``"bounded"``),
        adjacency ``"replace one record"`` and the mechanism.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    skdp.gaussian.required_n_samples : Certified size of the unbounded mode.

    Notes
    -----
    **Adjacency.** Neighbouring data sets have the same number of rows
    (public) and differ in one row (``"replace one record"``).

    **Bounded guarantee.** Let ``u_i = clip(x_i - c)`` with
    ``||u_i|| <= C`` (C = ``radius``). Replacing one row moves the mean
    ``(1/n)Σu_i`` by at most ``Δ_m = 2C/n`` and the second moment
    ``(1/n)Σu_i u_iᵀ`` by at most ``Δ_S = sqrt(2)·C²/n`` in Frobenius norm,
    but never both at once. The two are released together as one Gaussian
    mechanism on the stacked vector ``(mean/Δ_m, second/Δ_S)`` (the
    symmetric second moment through its upper triangle with off-diagonal
    entries scaled by sqrt(2), whose L2 norm is the Frobenius norm), with
    i.i.d. noise of standard deviation ``κ·noise_multiplier_``, where κ is
    the joint L2 sensitivity of that vector:

    * κ = 5/4 for ``n_features >= 2``. *Proof.* Replace u by v and write
      a = u/C, b = v/C (``||a||, ||b|| <= 1``), t = aᵀb. The squared change
      of the stacked vector is
      ``g = ||u - v||²/(nΔ_m)² + ||uuᵀ - vvᵀ||_F²/(nΔ_S)²
      = (||a||² + ||b||² - 2t)/4 + (||a||⁴ + ||b||⁴ - 2t²)/2``.
      For fixed t, g grows with ||a|| and ||b||, and ``|t| <= ||a||·||b||``
      stays feasible as they grow, so the maximum has ``||a|| = ||b|| = 1``:
      ``g = (1 - t)/2 + 1 - t²``, concave in t ∈ [-1, 1] (every t is
      attained when d >= 2), maximal at t = -1/4 with g = 25/16. So
      κ = sqrt(25/16) = 5/4, attained by two points on the sphere at
      ``uᵀv = -C²/4`` (the worst pair of
      :class:`~skdp.audit.BallCanary`).
    * κ = 1 for one feature. *Proof.* Now t = ab, so
      ``g = (a - b)²/4 + (a² - b²)²/2 = s²/4 + s²r²/2`` with s = a - b,
      r = a + b and ``|s| + |r| <= 2``. Then ``g <= h(|s|)`` with
      ``h(x) = x²/4 + x²(2 - x)²/2``, and
      ``h'(x) = x·(1/2 + (2 - x)(2 - 2x)) >= 0`` on [0, 2] (the bracket's
      minimum is 0, at x = 3/2), so ``g <= h(2) = 1``, at v = -u.

    Adding the two worst cases as if one pair attained both gives sqrt(2)
    instead of κ: the joint calibration has 11.6% less noise (29% at
    d = 1) for the same guarantee. The release is ``1/noise_multiplier_``
    -GDP (one Gaussian mechanism, ``n_iter_ = 1``; Dong, Roth & Su 2022,
    Thm. 2.7), calibrated so that the fit is (``epsilon``, ``delta``)-DP
    (``skdp.accounting``); with ``noise="secure"`` the whole stacked vector
    is one discrete-Gaussian release of sensitivity κ. The noise on
    ``mean_`` has standard deviation ``κ·noise_multiplier_·Δ_m``, on a
    diagonal entry of the second moment ``κ·noise_multiplier_·Δ_S`` and on
    an off-diagonal entry that over sqrt(2). The covariance
    ``S̃ - (μ̃ - c)(μ̃ - c)ᵀ`` is projected to eigenvalues ``>= min_variance``
    and sampling is post-processing: :meth:`sample` may be called any
    number of times. ``radius`` must keep ``n·radius²`` finite in float64
    (checked, with n, before X is read).

    **Private centre and radius** (``"auto"``). The per-feature bounds of
    ``private_bounds`` (the search of
    :class:`~skdp.preprocessing.DPStandardScaler`): four Gaussian releases of
    per-feature histograms, L2 sensitivity ``sqrt(2d)`` each under replace
    one, that together get ``μ_bounds² = bounds_share·μ²``; the release of
    mean and second moment gets the rest, so the fit is ``μ``-GDP in all
    (Dong, Roth & Su 2022, Cor. 3.3: adaptive composition), calibrated so
    that it is (``epsilon``, ``delta``)-DP. The ball (``center_``,
    ``radius_``) is post-processing of the bounds, so the release's
    sensitivities ``2C/n`` and ``sqrt(2)·C²/n`` hold for it as for a given
    ball. Before reading X, ``fit`` warns when the data are too small for
    the search to find the bulk at this budget (n, d, ε, δ are public): the
    fit is still (ε, δ)-DP, but its ball may span the whole search range
    and the model be mostly noise; give ``center`` and ``radius`` then.

    **Unbounded guarantee.** Algorithm 2 of the paper with the spec's
    resolutions of its errata: StableCov on the pairs of the last ``2·n2``
    rows, StableMean on the first ``n1`` rows with a reference set of
    ``|R| = M`` of them, a truncated-Laplace PTR test [3]_ on the larger score
    (sensitivity 2), then ``Z = μ̂ + sqrt((1 - 1/n1)·n2)·W z`` with z
    uniform on the sphere. The paper's constants C1, C2 are unspecified;
    :func:`~skdp.gaussian.required_n_samples` replaces them by a numeric
    certification of every explicit sufficient condition of its privacy
    proof (exact Beta tails, an explicit Chernoff bound). The paper's
    Lemma 3.4 PTR is not achievable for sensitivity-2 scores; skdp keeps the
    paper's ``k = ⌈6·log(6/δ)/ε⌉ + 4`` and gives the PTR the smallest ε_p
    whose fail threshold is k (about 0.6ε); the release gets
    ``(ε - ε_p, 2δ/3)``, and R fails to be degree-representative with
    probability <= δ/6. Each run is (ε, δ)-DP; ``n_draws`` runs on disjoint
    chunks (a data-independent shuffle, then fixed chunk sizes) are
    (ε, δ)-DP together by parallel composition. The guarantee relies on
    the stability lemmas of [2]_ as the paper restates them (Lemmas 3.1,
    3.3, 3.5).

    **What is released.** Bounded: ``mean_`` and ``covariance_``.
    Unbounded: ``samples_`` and ``n_failed_`` only. No intermediate (μ̂, Σ̂,
    weights, scores, reference set, PTR noise) is stored, and
    :meth:`sample` returns the paid-for draws, never fresh data-dependent
    randomness: repeated calls return the same points, which are **not**
    fresh samples. A Fail is a DP output; it is never retried, since a retry
    is a new run that spends budget again.

    **Public.** n, d, the parameters (``center``, ``radius``, ...), and
    whether the input is finite: NaN/inf raise an error (a domain check
    outside the DP model). The unbounded mode's size check uses only
    ``X.shape`` and happens before any value is read.

    **Caveats.** Noise comes from numpy's floating-point samplers, not
    hardened against Mironov (2012)'s attacks; the unbounded mode's running
    time depends on the data (peeling rounds). Every fit on the same data
    spends the budget again (see :class:`skdp.PrivacyLedger`). The unbounded
    output's TV guarantee is over fresh data: given one data set, the draws
    are not N(μ, Σ).

    **Floating point** (unbounded mode): the PTR score's stability (Lemma
    3.5, "moves by at most 2 between neighbours") is proved in exact
    arithmetic; in float64 the rank decision uses a tolerance that reads a
    different order statistic of the rows' sizes at each level, so that one
    row can move it only as far as the proof's next level allows, and pair
    differences below 2^-290 (≈ 5e-88) count as 0 so that every QR fits in
    float64's range (data at that scale should be rescaled). The computed
    leverages are assumed to keep the exact ones' inequalities within the
    levels' margin (Householder QR of row-sorted rows is row-wise backward
    stable). Tested for rows up to 1e300, duplicated rows, and adversarial
    data whose pairs fall into groups 1e14 to 1e250 apart in size, one of
    them in a hyperplane (see ``skdp/gaussian/_subroutines.py``).

    **Dask.** With ``method="bounded"``, ``fit`` also takes a
    ``dask.array.Array``: the clipped sum and sum of outer products are one
    reduction over the row chunks (d + d² floats), and the noise is drawn on
    the client: the guarantee is that of the in-memory fit.
    ``method="unbounded"`` refuses Dask input. See :ref:`large_data`.

    **Cost.** Bounded: O(n·d²) time, O(n·d) memory. Unbounded: O(n·d²)
    for StableCov (one pass on clean data, at most k + 1 with outliers) plus
    ``O(n1·|R|·d)`` for StableMean, in blocks of 10⁴ rows (≈ 100 MB). At the
    certified n for d = 2 (≈ 9·10⁶ rows) a run takes seconds and under
    1 GB (see docs/benchmarks.md).

    References
    ----------
    .. [1] M. Iverson, G. Kamath, A. Mouzakis. "Optimal Differentially
       Private Sampling of Unbounded Gaussians". Algorithms 2-6,
       Theorem 4.1.
    .. [2] G. Brown, S. Hopkins, A. Smith. "Fast, sample-efficient,
       affine-invariant private mean and covariance estimation for
       subgaussian distributions", COLT 2023 [BHS23].
    .. [3] Q. Geng, W. Ding, R. Guo, S. Kumar. "Tight analysis of privacy
       and utility tradeoff in approximate differential privacy", AISTATS
       2020 (truncated Laplace).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.gaussian import DPGaussianSampler
    >>> rng = np.random.default_rng(0)
    >>> X = rng.multivariate_normal([1.0, -1.0], [[1.0, 0.5], [0.5, 2.0]], 20000)
    >>> model = DPGaussianSampler(
    ...     epsilon=1.0, delta=1e-6, center=[0, 0], radius=8.0
    ... ).fit(X)
    >>> np.round(model.mean_, 1)
    array([ 1., -1.])
    >>> model.sample(5, random_state=0).shape
    (5, 2)
    >>> round(model.privacy_spent_.epsilon, 6), model.privacy_spent_.adjacency
    (1.0, 'replace one record')
    """

    _parameter_constraints = {
        **PRIVACY_CONSTRAINTS,
        "method": [StrOptions({"bounded", "unbounded"})],
        "center": ["array-like", Real, None, StrOptions({"auto"})],
        "radius": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "data_range": [Interval(Real, 0, 1e150, closed="right")],
        "bounds_share": [Interval(Real, 0, 1, closed="neither")],
        "min_variance": [
            Interval(Real, 0, None, closed="neither"),
            StrOptions({"auto"}),
        ],
        "tv_error": [Interval(Real, 0, 1, closed="neither")],
        "n_draws": [Interval(Integral, 1, None, closed="left")],
        "on_fail": [StrOptions({"raise", "ignore"})],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        *,
        method="bounded",
        epsilon=1.0,
        delta=1e-5,
        accounting="exact",
        center="auto",
        radius="auto",
        data_range=1e6,
        bounds_share=0.25,
        min_variance="auto",
        tv_error=0.1,
        n_draws=1,
        on_fail="raise",
        random_state=None,
        noise="fast",
        verbose=0,
    ):
        self.method = method
        self.epsilon = epsilon
        self.delta = delta
        self.accounting = accounting
        self.center = center
        self.radius = radius
        self.data_range = data_range
        self.bounds_share = bounds_share
        self.min_variance = min_variance
        self.tv_error = tv_error
        self.n_draws = n_draws
        self.on_fail = on_fail
        self.random_state = random_state
        self.noise = noise
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = self.method == "unbounded"
        return tags

    def _budget_is_gdp(self):
        # The unbounded mode's PTR and StableMean are not Gaussian.
        return self.method == "bounded"

    def _audit_canary(self):
        """Default canary (for :mod:`skdp.audit`): by ``method``; the
        bounded mode's puts one record far out (a radius read from the data
        is seen)."""
        if self.method == "unbounded":
            return "UnboundedCanary", {}
        return "FarBallCanary", {}

    @private_fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Run the mechanism on X, spending (``epsilon``, ``delta``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            I.i.d. rows (finite values).
        y : None
            Ignored.

        Returns
        -------
        self : DPGaussianSampler
            The fitted estimator.
        """
        # A fit in one method never keeps the other method's draws or model.
        for name in fitted_attributes(self):
            delattr(self, name)
        require_positive_delta(self)
        if self.method == "unbounded" and self.noise == "secure":
            raise ValueError(
                "method='unbounded' has no secure sampler: its PTR test and its "
                "release draw continuous noise whose law is the guarantee. Use "
                "method='bounded' with noise='secure', or noise='fast'."
            )
        if is_dask_array(X):
            if self.method == "unbounded":
                raise ValueError(
                    "method='unbounded' runs its stability tests on the rows in "
                    "memory and does not accept a Dask array; use "
                    "method='bounded' (a sum over records) or compute X."
                )
            from .. import _dask

            _dask.row_chunks(X)  # n known (skdp's message for nan chunks)
            self._check_public_ball(*_shape_of(X))
            X, _ = _dask.validate(self, X, dtype=np.float64)
            self._warn_if_too_small(*X.shape)
        elif self.method == "unbounded":
            # Public checks first (sizes, parameters), before reading X.
            plan = self._plan(X)
            X = _validate_input(self, X, dtype=np.float64, ensure_min_samples=2)
        else:
            # Public checks first (shape, radius, budget), before reading X.
            self._check_public_ball(*_shape_of(X))
            X = _validate_input(self, X, dtype=np.float64)
            self._warn_if_too_small(*X.shape)
        warn_if_delta_is_large(self, X.shape[0])
        if self.method == "unbounded":
            return self._fit_unbounded(X, plan)
        return self._fit_bounded(X)

    # -- bounded -----------------------------------------------------------

    def _finds_ball(self):
        """Whether the ball (or part of it) is found privately."""
        return _is_auto(self.center) or _is_auto(self.radius)

    def _check_public_ball(self, n, d):
        """Checks of the ball's parameters from public values, before X is read."""
        if not _is_auto(self.radius):  # given, also beside center="auto"
            _check_radius(float(self.radius), n)
        if not self._finds_ball():
            return
        if n < 1 or d < 1:  # empty data: the input check's message
            return
        if self.accounting == "paper":
            raise ValueError(
                "accounting='paper' is the textbook calibration of one release "
                "with a public ball; give center and radius (not 'auto'), or use "
                "accounting='exact'."
            )

    def _warn_if_too_small(self, n, d):
        """Warn, from public values, when the search is unlikely to find the
        ball; after the input checks, so that bad input is refused first."""
        if not self._finds_ball():
            return
        (z_bounds, _), _ = self._budget_split()
        snr = n / (z_bounds * histogram_sensitivity(d))
        if snr < _MIN_SEARCH_SNR:
            # As DPStandardScaler at small n: a public warning, then the same
            # search (still DP; its ball may hold the whole search range).
            warnings.warn(
                f"DPGaussianSampler: n_samples={n} is too small to find the "
                f"center and radius of {d} feature(s) privately at "
                f"epsilon={self.epsilon:g}, delta={self.delta:g} with "
                f"bounds_share={self.bounds_share:g} (it needs about "
                f"{math.ceil(n * _MIN_SEARCH_SNR / snr)} rows): the ball found "
                "may be far too large and the released model mostly noise. "
                "Give a public center and radius, or more budget.",
                UserWarning,
                stacklevel=5,  # the caller of fit (through its two decorators)
            )

    def _budget_split(self):
        """Multipliers of the bound-search rounds and of the release, and the total."""
        return split_gaussian_budget(
            self.epsilon,
            self.delta,
            [(N_BOUND_RELEASES, self.bounds_share), (1, 1.0 - self.bounds_share)],
            noise=self.noise,
        )

    def _ball(self, X, z_bounds, rng):
        """``(center, radius)``: given, or from private per-feature bounds."""
        n, d = X.shape
        if not self._finds_ball():
            return self._center(d), float(self.radius)
        lower, upper = private_bounds(
            X, data_range=float(self.data_range), noise_multiplier=z_bounds, rng=rng
        )
        # Post-processing of the released bounds from here on.
        center = lower / 2.0 + upper / 2.0 if _is_auto(self.center) else self._center(d)
        if _is_auto(self.center):
            # Data beyond the public range is clamped to it: a centre found
            # at its edge released a point mass there, silently (review).
            warn_if_near_range(
                center,
                float(self.data_range),
                "DPGaussianSampler",
                stacklevel=6,  # the caller of fit (_ball, _fit_bounded, fit)
                feature_names=getattr(self, "feature_names_in_", None),
            )
        if not _is_auto(self.radius):
            return center, float(self.radius)
        reach = np.maximum(np.abs(upper - center), np.abs(center - lower))
        lo, hi = _radius_range(n)
        return center, float(np.clip(np.linalg.norm(reach), lo, hi))

    def _fit_bounded(self, X):
        n, d = X.shape
        kappa = joint_sensitivity(d)
        rng = as_generator(self.random_state, self.noise)
        if self._finds_ball():
            (z_bounds, nm), nm_total = self._budget_split()
            n_iter = N_BOUND_RELEASES + 1
        else:
            # One Gaussian release of the stacked vector (mean/Δ_m,
            # second/Δ_S) (scaled units), of joint L2 sensitivity κ (Notes).
            z_bounds, n_iter = None, 1
            nm = gaussian_noise_multiplier(
                self.epsilon, self.delta, n_steps=1, noise=self.noise
            )
            if self.accounting == "paper":
                # Textbook calibration: (ε/2, δ/2) per release at its own
                # sensitivity. Only valid for ε/2 <= 1 and below the exact
                # multiplier from ε ≈ 45: never add less noise than needed.
                paper = classical_gaussian_noise_multiplier(self.epsilon, self.delta, 2)
                nm = max(nm, paper / kappa)
            nm_total = nm
        center, C = self._ball(X, z_bounds, rng)
        mean_sens, moment_sens = _release_sensitivities(C, n)
        mean, second = clipped_moments(X, center, C)
        z = nm * kappa  # noise std over each release's own sensitivity
        # The upper triangle with off-diagonal entries scaled by sqrt(2): its
        # L2 norm is the Frobenius norm of the symmetric matrix; i.i.d. noise
        # on it gives the off-diagonal entries std sigma_s/sqrt(2).
        rows, cols = np.triu_indices(d)
        weight = np.where(rows == cols, 1.0, math.sqrt(2.0))
        stacked = np.concatenate(
            [mean / mean_sens, second[rows, cols] * weight / moment_sens]
        )
        # One call: one release (the secure sampler's grid bound is per call).
        noisy = gaussian_mechanism(
            stacked, sensitivity=kappa, noise_multiplier=nm, rng=rng
        )
        noisy_mean = noisy[:d] * mean_sens
        sigma_s = z * moment_sens
        second = np.zeros((d, d))
        second[rows, cols] = noisy[d:] * moment_sens / weight
        second = second + np.triu(second, 1).T
        cov = second - np.outer(noisy_mean, noisy_mean)
        cov = 0.5 * (cov + cov.T)
        # A variance S_jj − m_j² carries the second moment's noise and, about
        # the centre, 2·|m_j| times the mean's (review: a ball whose centre is
        # far from the data made the second term the larger).
        noise = np.hypot(sigma_s, 2.0 * np.abs(noisy_mean) * z * mean_sens)
        self._warn_if_drowned(np.diag(cov), noise)
        floor = sigma_s if self.min_variance == "auto" else float(self.min_variance)
        floor = max(floor, np.finfo(float).tiny)
        evals, evecs = np.linalg.eigh(cov)
        cov = (evecs * np.maximum(evals, floor)) @ evecs.T
        self.mean_ = center + noisy_mean
        self.covariance_ = 0.5 * (cov + cov.T)
        self.center_, self.radius_ = center, C
        self.noise_multiplier_ = float(nm_total)
        self.n_iter_ = n_iter
        found = "4 noisy histograms (center, radius), then " if z_bounds else ""
        self.privacy_spent_ = gaussian_cost(
            nm_total,
            n_iter,
            noise=self.noise,
            delta=self.delta,
            adjacency=REPLACE_ONE,
            mechanism=(
                f"{found}Gaussian mechanism on the clipped mean and second "
                "moment (joint sensitivity)"
            ),
        )
        if self.verbose:
            print(
                f"[DPGaussianSampler] bounded: {self.privacy_spent_}; ball radius "
                f"{C:.4g}{' (found privately)' if z_bounds else ''}; noise std "
                f"{z * mean_sens:.3g} (mean), {sigma_s:.3g} (second moment)"
            )
        return self

    def _warn_if_drowned(self, variances, noise):
        """Warn of the features whose released variance is within two noise
        standard deviations of its own noise (``noise``, per feature:
        post-processing of the release): the ball is round, sized by the
        widest feature, so a feature on a much smaller scale keeps little but
        noise and the floor (NYSE's daily returns, sd 0.008 beside a log
        volatility's 0.75: their released sd 8 to 13 times the data's, with
        no warning)."""
        drowned = np.flatnonzero(variances < _DROWNED_SDS * noise)
        # Only beside a feature the release measures well: with every
        # variance near the noise, the data are too few for the budget (a
        # matter of n, not of the features' scales).
        if drowned.size and (variances > _MEASURED_SDS * noise).any():
            names = getattr(self, "feature_names_in_", None)
            warnings.warn(
                "DPGaussianSampler: the released variance of feature(s) "
                f"{_feature_list(drowned, names)} is within the noise of the "
                f"release (std up to {noise[drowned].max():.3g}): their spread "
                "and correlations are "
                "mostly noise. The ball is round, sized by the widest feature: "
                "put the features on one scale first (e.g. DPStandardScaler), "
                "or give more budget.",
                UserWarning,
                stacklevel=6,  # the caller of fit (_fit_bounded, fit, 2 decorators)
            )

    def _center(self, d):
        if self.center is None:
            return np.zeros(d)
        center = np.asarray(self.center, dtype=np.float64)
        if center.ndim == 0:
            center = np.full(d, float(center))
        if center.shape != (d,) or not np.all(np.isfinite(center)):
            raise ValueError(
                f"center must be a finite scalar or have shape ({d},); got "
                f"shape {center.shape}."
            )
        return center

    # -- unbounded ---------------------------------------------------------

    def _plan(self, X):
        """The certified plan of one chunk, from ``X.shape`` only."""
        n, d = _shape_of(X)
        chunk = n // self.n_draws
        try:
            plan = certified_plan(chunk, d, self.epsilon, self.delta, self.tv_error)
        except InsufficientSamplesError as exc:
            if self.n_draws > 1:
                raise InsufficientSamplesError(
                    f"n_draws={self.n_draws} splits the {n} rows into chunks of "
                    f"{chunk}: {exc}"
                ) from None
            raise
        return plan

    def _fit_unbounded(self, X, plan):
        d = X.shape[1]
        draws = [Z for Z in self._run_draws(X, plan) if Z is not None]
        n_failed = self.n_draws - len(draws)
        # Raised from a frame that holds neither the generator nor the
        # shuffle: the traceback keeps its frames' locals, and how many coins
        # a run drew tells whether its score hit k (no coin after the
        # shuffle where a neighbour drew the PTR's), where both Fail (review).
        if n_failed and self.on_fail == "raise":
            raise MechanismFailedError(
                _FAIL_MESSAGE.format(n_failed=n_failed, n_draws=self.n_draws)
            )
        self.samples_ = np.array(draws, dtype=np.float64).reshape(len(draws), d)
        self.n_failed_ = n_failed
        self.plan_ = plan
        self.privacy_spent_ = PrivacyCost(
            float(self.epsilon),
            float(self.delta),
            None,
            REPLACE_ONE,
            (
                f"{self.n_draws} run(s) of the certified unbounded Gaussian "
                "sampler on disjoint chunks (Iverson, Kamath & Mouzakis, Alg. 2)"
            ),
        )
        return self

    def _run_draws(self, X, plan):
        """The ``n_draws`` runs on disjoint chunks: each run's draw, or None
        where it Failed. The generator and the shuffle live in this frame
        only (see :meth:`_fit_unbounded`)."""
        n = X.shape[0]
        chunk = n // self.n_draws
        rng = as_generator(self.random_state, self.noise)
        if self.verbose:
            print(
                f"[DPGaussianSampler] unbounded: ({self.epsilon:g}, "
                f"{self.delta:g})-DP per chunk, {self.n_draws} chunk(s) of "
                f"{plan.n_samples} rows: n1={plan.n1}, n2={plan.n2}, "
                f"lambda0={plan.lambda0:.4g}, k={plan.k}, |R|={plan.reference_size}, "
                f"PTR epsilon={plan.epsilon_ptr:.4g}"
            )
        order = rng.permutation(n)  # data-independent shuffle
        results = []
        for i in range(self.n_draws):
            rows = order[i * chunk : i * chunk + plan.n_samples]
            Z = run_sampler(
                X,
                plan.n1,
                plan.n2,
                plan.lambda0,
                plan.k,
                plan.reference_size,
                plan.epsilon_ptr,
                plan.ptr_bound,
                rng,
                rows=rows,
            )
            results.append(Z)
            if self.verbose:
                # The status only: a draw's running time depends on the data
                # (how many rounds the stable estimators peel), and one record
                # can change it several-fold where both neighbours Fail.
                status = "released" if Z is not None else "Fail"
                print(f"[DPGaussianSampler] draw {i + 1}/{self.n_draws}: {status}")
        return results

    # -- sampling ----------------------------------------------------------

    def sample(self, n_samples=1, random_state=None):
        """Samples from the released model (bounded) or the released draws.

        Parameters
        ----------
        n_samples : int, default=1
            Number of points.
        random_state : int, RandomState instance, Generator or None, default=None
            ``"bounded"``: seeds the draws from N(``mean_``, ``covariance_``)
            (post-processing). None draws fresh entropy; a seed gives
            reproducible draws from a stream other than the noise stream of
            any fit given the same seed (an int, or a generator in the same
            state), so the draws do not reveal the noise of a fit seeded
            alike.
            ``"unbounded"``: ignored, no randomness is used.

        Returns
        -------
        X : ndarray of shape (n_samples, n_features)
            ``"bounded"``: fresh i.i.d. draws from the released Gaussian.
            ``"unbounded"``: the first ``n_samples`` released draws; the same
            points on every call (they are not fresh samples).
        """
        check_is_fitted(self)
        if (
            not isinstance(n_samples, Integral | np.integer)
            or isinstance(n_samples, bool)
            or n_samples < 1
        ):
            raise ValueError(f"n_samples must be a positive integer; got {n_samples}.")
        if hasattr(self, "samples_"):
            if n_samples > self.samples_.shape[0]:
                failed = (
                    f" ({self.n_failed_} of the {self.n_draws} run(s) Failed)"
                    if self.n_failed_
                    else ""
                )
                raise ValueError(
                    f"Only {self.samples_.shape[0]} draw(s) were released (and "
                    f"paid for){failed}; got n_samples={n_samples}. A refit "
                    f"spends a new (epsilon, delta): with n_draws >= {n_samples} "
                    f"on enough data, {self.plan_.n_required} rows per draw."
                )
            return self.samples_[:n_samples].copy()
        rng = _sampling_generator(random_state)
        evals, evecs = np.linalg.eigh(self.covariance_)
        factor = evecs * np.sqrt(np.maximum(evals, 0.0))
        g = rng.standard_normal((n_samples, self.mean_.shape[0]))
        return self.mean_ + g @ factor.T
