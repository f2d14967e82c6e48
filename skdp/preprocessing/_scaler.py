"""DPStandardScaler: per-feature mean and variance by the Gaussian mechanism."""

import math
import warnings
from numbers import Real

import numpy as np
from sklearn.base import (
    BaseEstimator,
    OneToOneFeatureMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from .._base import (
    PRIVACY_CONSTRAINTS,
    DPEstimatorMixin,
    is_dask_array,
    private_fit,
    private_transform,
    require_positive_delta,
    sum_over_rows,
    warn_if_delta_is_large,
)
from .._inputs import validated_copy
from ..accounting import (
    REPLACE_ONE,
    PrivacyCost,
    gaussian_cost,
    gaussian_noise_multiplier,
    split_gaussian_budget,
)
from ..mechanisms import as_generator, gaussian_mechanism
from ._quantiles import (
    N_BOUND_RELEASES,
    histogram_sensitivity,
    located_bounds,
    private_bounds,
    private_histogram_scale,
    private_signed_histogram,
)

#: Weight of the sums of squares in the joint release. With features
#: normalised to z in [-1/2, 1/2], replacing one record moves
#: ``(z, GAMMA·z²)`` by ``(a - b)²·(1 + 8(a + b)²) <= 1`` in squared norm per
#: feature (see ``moment_sensitivity``): the squares ride along at no cost.
GAMMA = 2.0 * math.sqrt(2.0)
#: Largest accepted half-width ``(upper − lower)/2`` of given bounds: the
#: variance of data spread over ``[lower, upper]`` is at most the squared
#: half-width, which must stay below the float64 maximum (1.8e308).
MAX_HALF_WIDTH = 1e154
#: Largest accepted ``data_range``: the private bounds lie within
#: ``1.5·data_range`` of 0 (the search's interval widened by a quarter of its
#: width on each side), so their half-width stays below ``MAX_HALF_WIDTH``.
_MAX_DATA_RANGE = MAX_HALF_WIDTH / 1.5
#: Smallest accepted half-width of given bounds: a variance within narrower
#: bounds, down to the release's noise floor (1e-12 of the squared
#: half-width), would fall below the smallest normal float64 (2.2e-308), and
#: its reciprocal (naive Bayes' likelihood) overflow.
MIN_HALF_WIDTH = 1e-140
#: Smallest accepted ``data_range``: the private bounds resolve magnitudes
#: down to ``data_range·1e-12``, so their half-width stays above
#: ``MIN_HALF_WIDTH``.
_MIN_DATA_RANGE = 1e-120
#: The ``data_range`` parameter's constraint, shared by every estimator that
#: searches bounds in it.
DATA_RANGE_CONSTRAINT = Interval(Real, _MIN_DATA_RANGE, _MAX_DATA_RANGE, closed="left")


def _feature_list(indices, feature_names=None):
    """``"0, 3, 7"``, or ``"0 ('age'), 3 ('debt')"`` with the column names
    (public: the schema), the first ten, for a warning."""
    more = ", ..." if len(indices) > 10 else ""
    if feature_names is None:
        return ", ".join(str(j) for j in indices[:10]) + more
    return ", ".join(f"{j} ({feature_names[j]!r})" for j in indices[:10]) + more


def warn_dropped(
    dropped, name, effect, stacklevel, feature_names=None, target_hint=True
):
    """Warn of the features a one-histogram schedule did not see (post-processing).

    ``dropped`` is a mask read from the noisy histogram only; ``effect``
    says what the estimator does with them. ``stacklevel`` as for
    :func:`warnings.warn` called by the caller; ``feature_names`` (the
    estimator's ``feature_names_in_``, if any) name the features;
    ``target_hint``: with one column, say what it means for the target of a
    TransformedTargetRegressor (not for :func:`dp_quantiles`).
    """
    features = _feature_list(np.flatnonzero(dropped), feature_names)
    # One column: perhaps a TransformedTargetRegressor's target (user trial:
    # predictions collapsed to 0, and "feature(s) 0" did not say why).
    target = (
        " (if this is the target of a TransformedTargetRegressor, the model "
        "will predict about its centre)"
        if dropped.size == 1 and target_hint
        else ""
    )
    warnings.warn(
        f"{name}: no bin of the private histogram of feature(s) "
        f"{features} stood out "
        f"of the noise: {effect}{target}. Give public bounds, fewer features "
        "or more budget.",
        UserWarning,
        stacklevel=stacklevel + 1,
    )


def warn_if_near_range(location, data_range, name, stacklevel, feature_names=None):
    """Warn of the features whose released location lies beyond ``data_range/2``.

    Values beyond the public range ``[-data_range, data_range]`` are clipped
    to it before anything is counted, so a feature whose bulk reaches it (a
    balance near 10⁶, a population of 10⁸ at the default ``data_range=1e6``)
    keeps little or nothing of its spread, silently. ``location`` is a
    released per-feature statistic (a noisy mean, a noisy median); reading
    it is post-processing. Noise alone moves a feature whose bulk lies near
    0 half-way to ``data_range`` only through a false bin far out in a tiny
    data set (a warning then is no harm). ``stacklevel`` as for
    :func:`warnings.warn` called by the caller; ``feature_names`` as for
    :func:`warn_dropped`.
    """
    far = np.flatnonzero(np.abs(location) > data_range / 2.0)
    if far.size:
        warnings.warn(
            f"{name}: the private centre of feature(s) "
            f"{_feature_list(far, feature_names)} lies "
            f"beyond data_range/2 = {data_range / 2.0:g}. Values beyond the public "
            "range [-data_range, data_range] are clipped to it, so a feature whose "
            "bulk reaches it loses its spread: pass a larger data_range (up to "
            f"{_MAX_DATA_RANGE:.3g}), or public bounds. On a data set too small "
            "for its features (see any warning about the records per feature) "
            "it is more likely a bin of noise read as data: give public bounds.",
            UserWarning,
            stacklevel=stacklevel + 1,
        )


#: Resolution of the private search, relative to ``data_range``: its
#: smallest magnitude bin is ``[0, data_range·1e-12]``. A spread below it is
#: indistinguishable from 0 and gets scikit-learn's zero-variance scale, 1.
_RESOLUTION = 1e-12
#: Public signal-to-noise ratio (see :func:`histogram_snr`) from which
#: DPStandardScaler's bounds search and moments (5 releases) beat one coarse
#: histogram: offset columns (a year, a balance) need the search at every
#: ratio measured, centred bundled tables tie with the histogram from ~30
#: (docs/benchmarks.md, "Which schedule, when").
_SEARCH_SNR = 30.0
#: The same switch for the quantile releases (skdp.preprocessing._stats) and
#: the base of GaussianNB's subsampling ratio: not re-measured at 30.
_QUANTILE_SEARCH_SNR = 100.0
#: Below this ratio, a feature's bulk must hold more than ~1/3 of the records
#: in one bin of the coarse grid to be seen at all: the fit warns.
_MIN_SNR = 8.0


def histogram_snr(n_samples, n_features, epsilon, delta):
    """``n / (z·sqrt(2 d))``: the records over the noise std of one histogram.

    ``z = 1/μ`` is the noise multiplier of one release that spends the whole
    (ε, δ) budget and ``sqrt(2 d)`` the histogram's sensitivity. Only public
    values enter, so the choices made from it are public too.
    """
    z = gaussian_noise_multiplier(epsilon, delta)
    return n_samples / (z * histogram_sensitivity(n_features))


def bounds_schedule(
    n_samples,
    n_features,
    epsilon,
    delta,
    *,
    given,
    name,
    unseen,
    stacklevel,
    search_snr=None,
    locate=False,
):
    """How a fit finds its bounds: "given", "search", "located" or "histogram".

    "given": the bounds are public, nothing is spent on them; "search": the
    four-round search of :func:`private_bounds`, when ``n·μ/sqrt(2d) >=
    search_snr`` (a public constant; None: ``_QUANTILE_SEARCH_SNR``, the
    quantile releases' switch); else, with ``locate`` and from ``_MIN_SNR``,
    "located": one coarse histogram locates each feature for a release
    within (:func:`~skdp.preprocessing._quantiles.located_bounds`); else
    "histogram": one coarse histogram. Below ``_MIN_SNR`` a feature's bulk
    is seen only if about a third of the records fall in one bin: a warning
    says so, ``unseen`` saying what the fit does with a feature it does not
    see. Public: depends on the
    given-ness of the bounds, n, d, ε and δ only, so neighbouring data sets
    get the same schedule (and the same warning). ``stacklevel`` as for
    :func:`warnings.warn` called by the caller.
    """
    if given:
        return "given"
    snr = histogram_snr(n_samples, n_features, epsilon, delta)
    if snr < _MIN_SNR:
        warnings.warn(
            f"{name}: n_samples={n_samples} is small for {n_features} features at "
            f"epsilon={epsilon:g}, delta={delta:g}: the private histogram of a "
            "feature sees its bulk only if more than about a third of the records "
            f"fall in one bin (a factor 3.2 wide); a feature not seen {unseen}. "
            "Give public bounds=(lower, upper), fewer features or more budget.",
            UserWarning,
            stacklevel=stacklevel + 1,
        )
    if search_snr is None:
        search_snr = _QUANTILE_SEARCH_SNR
    if snr >= search_snr:
        return "search"
    return "located" if locate and snr >= _MIN_SNR else "histogram"


def _variance_floor(noise_multiplier, n_samples, n_features):
    """The floor of a released normalised variance: the noise std of the
    mean of squares, at least 1e-12 (a constant or hidden spread gets a
    small positive scale)."""
    return max(
        noise_multiplier * moment_sensitivity(n_features) / (GAMMA * n_samples),
        1e-12,
    )


def moment_sensitivity(n_features):
    """L2 sensitivity ``sqrt(d)`` of ``(Σ z_i, GAMMA·Σ z_i²)`` under replace-one.

    Per feature, replacing a record with value ``a`` by one with value ``b``
    (both in [-1/2, 1/2]) moves the pair by ``(a - b, GAMMA (a² - b²))``, of
    squared norm ``u² (1 + 8 v²)`` with ``u = |a - b|``, ``v = |a + b|`` and
    ``u + v <= 1``. Along ``u = 1 - v`` this is ``g(v) = (1 - v)² (1 + 8 v²)``
    with ``g'(v) = -2 (1 - v)(1 - 4 v)² <= 0``, so the maximum is
    ``g(0) = 1``; the features add up to ``d``.
    """
    return math.sqrt(n_features)


def moment_sums(X, lower, upper):
    """The released vector ``(Σ_i z_ij, GAMMA·Σ_i z_ij²)_j`` of length 2d.

    A sum over rows: the fit calls it on X, or on every row chunk of a Dask
    X (see :func:`skdp._base.sum_over_rows`).

    ``z = (clip(x, lower, upper) - center) / width``, clipped once more to
    ``[-1/2, 1/2]`` so that rounding cannot push it out. Computed from
    halves (``(x/2 - center/2) / half_width``), which stay finite for all
    finite bounds, where ``upper - lower`` may overflow.
    """
    Z = normalise(X, lower, upper)
    return np.concatenate([Z.sum(axis=0), GAMMA * np.einsum("ij,ij->j", Z, Z)])


def normalise(X, lower, upper):
    """``z = (clip(x, lower, upper) - center) / width``, in ``[-1/2, 1/2]``.

    Clipped once more to ``[-1/2, 1/2]`` so that rounding cannot push it
    out; computed from halves, finite for all finite bounds (see
    :func:`moment_sums`).
    """
    center, half_width = _center_half_width(lower, upper)
    Z = np.clip(X, lower, upper)  # one n x d array, then in place
    Z /= 2.0
    Z -= center / 2.0
    Z /= half_width
    return np.clip(Z, -0.5, 0.5, out=Z)


def _center_half_width(lower, upper):
    """``(lower + upper)/2`` and ``(upper - lower)/2``, finite for finite bounds."""
    return lower / 2.0 + upper / 2.0, upper / 2.0 - lower / 2.0


def _check_bounds(bounds, n_features):
    """``bounds`` as two float arrays of shape (d,), or a clear ValueError."""
    if isinstance(bounds, str) or len(bounds) != 2:
        raise ValueError(
            "bounds must be a pair (lower, upper) of scalars or of arrays with "
            "one entry per feature."
        )
    out = []
    for name, value in zip(("lower", "upper"), bounds, strict=True):
        value = np.asarray(value, dtype=float)
        if value.ndim > 1 or (value.ndim == 1 and value.shape[0] != n_features):
            raise ValueError(
                f"The {name} bounds have shape {value.shape}; expected a scalar or "
                f"shape ({n_features},) for the {n_features} features of X."
            )
        if not np.all(np.isfinite(value)):
            raise ValueError(f"The {name} bounds must be finite.")
        out.append(np.broadcast_to(value, (n_features,)).copy())
    lower, upper = out
    if np.any(lower >= upper):
        bad = np.flatnonzero(lower >= upper)
        raise ValueError(
            f"bounds need lower < upper for every feature; not so for feature(s) "
            f"{bad.tolist()[:10]}."
        )
    _, half_width = _center_half_width(lower, upper)
    if np.any(half_width < MIN_HALF_WIDTH):
        bad = np.flatnonzero(half_width < MIN_HALF_WIDTH)
        raise ValueError(
            f"bounds narrower than upper - lower = {2 * MIN_HALF_WIDTH:g} cannot "
            "be represented: the variance of data within them underflows "
            f"float64. Not so for feature(s) {bad.tolist()[:10]}; rescale the "
            "data (and its bounds) by a public factor."
        )
    if np.any(half_width > MAX_HALF_WIDTH):
        bad = np.flatnonzero(half_width > MAX_HALF_WIDTH)
        raise ValueError(
            f"bounds wider than upper - lower = {2 * MAX_HALF_WIDTH:g} cannot be "
            "represented: the variance of data spread over them, up to "
            "((upper - lower)/2)², overflows float64. Not so for feature(s) "
            f"{bad.tolist()[:10]}; give narrower bounds or rescale the data."
        )
    return lower, upper


class DPStandardScaler(
    DPEstimatorMixin, OneToOneFeatureMixin, TransformerMixin, BaseEstimator
):
    """Standardise features with a differentially private mean and variance.

    Each feature is clipped to bounds ``[lower_j, upper_j]``; then the
    per-feature sums and sums of squares of the clipped data are released in
    one joint Gaussian release over all features (L2 sensitivity ``sqrt(d)``
    after normalising each feature to ``[-1/2, 1/2]``), and the mean and
    variance are computed from them. ``transform`` is then
    ``(clip(x) - mean_) / scale_``, as in
    :class:`sklearn.preprocessing.StandardScaler` but for the clip to the
    bounds (``clip=True``, the default: the statistics are those of the
    clipped data).

    The bounds are either given (public, e.g. the range of a sensor, and the
    whole budget goes to the mean and variance) or, by default, found
    privately: a share ``bounds_share`` of the budget is spent on four
    Gaussian-noised histograms per feature that locate the bulk of the data
    inside the public range ``[-data_range, data_range]`` (see Notes).

    With little data for the number of features at the budget (the public
    ratio ``n·μ/sqrt(2d)`` below 30, e.g. breast cancer at ε = 0.5-2 of a
    pipeline), five releases would each drown in noise: the fit then makes
    two, a coarse histogram of every feature that locates its bulk, then the
    mean and variance clipped to it; below a ratio of 8 it makes one, the
    histogram, reads the mean and scale from its bins and warns (see Notes).

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget ε > 0 of one fit (bounds, mean and variance together).
    delta : float, default=1e-5
        Privacy parameter δ in (0, 1); should be well below ``1/n_samples``
        (a :class:`~skdp.PrivacyLeakWarning` is raised at ``delta >= 1/n``).
    with_mean : bool, default=True
        Centre the data in ``transform``.
    with_std : bool, default=True
        Scale the data to unit variance in ``transform``.
    bounds : tuple (lower, upper) or None, default=None
        Public per-feature bounds: each a scalar or an array of length
        ``n_features``, with ``lower < upper``, both finite and
        ``2e-140 <= upper - lower <= 2e154`` (other bounds are refused before
        any work: the variance could not be represented in float64). Data outside
        them is clipped when the statistics are computed (and by
        ``transform``, see ``clip``). None: found privately with a share of
        the budget.
    data_range : float, default=1e6
        Used when ``bounds=None``: the public range ``[-data_range,
        data_range]`` in which the bounds are searched (values outside it are
        clipped to it); from ``1e-120`` to below ``1e154/1.5``, so that the
        variance within the bounds found stays representable. Its default
        does not depend on the data. The search resolves magnitudes down to
        ``data_range·1e-12``. A fit whose private mean of a feature lies
        beyond ``data_range/2`` warns (a column of 10⁸ at the default is
        clipped to 10⁶ and keeps nothing of its spread).
    bounds_share : float, default=0.5
        Used when ``bounds=None``: the share of the budget, in GDP terms
        (``μ_bounds² = bounds_share·μ²``), spent on finding the bounds (the
        search's four histograms, or the one locating histogram); the rest
        goes to the mean and variance. Not used below a ratio of 8 (one
        histogram spends the whole budget).
    clip : bool, default=True
        ``transform`` clips X to ``bounds_`` before standardising, as the
        released mean and variance describe the clipped data: a value far
        outside the bounds (a tail the private bounds did not reach, an
        outlier at prediction time) then maps to a standardised value of
        moderate size instead of one that dominates every row norm of the
        next DP step's input. False: scikit-learn's ``StandardScaler``
        semantics, ``(x - mean_) / scale_`` for any x.
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

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,) or None
        Private mean of the clipped data (None when ``with_mean`` and
        ``with_std`` are both False: nothing is released).
    var_ : ndarray of shape (n_features,) or None
        Private variance of the clipped data, at least the noise level of its
        release (see Notes); None when ``with_std=False``.
    scale_ : ndarray of shape (n_features,) or None
        ``sqrt(var_)``, always > 0; None when ``with_std=False``.
    bounds_ : ndarray of shape (2, n_features) or None
        The clipping bounds used (given, or private output of the search).
    dropped_features_ : ndarray of shape (n_features,) of bool or None
        Features that the one-histogram schedules did not see (no bin above
        the noise): mean 0 and scale ``data_range``; ``transform`` gives 0
        for them and ``inverse_transform`` their mean 0, with or without
        ``with_std`` (it never multiplies a model's output by
        ``data_range``: a target scaled in a TransformedTargetRegressor).
        The fit warns when there are any.
    n_samples_seen_ : int
        Number of records (public).
    n_iter_ : int
        Number of Gaussian releases: 1 with given bounds, 5 with
        ``bounds=None`` (4 histograms, then the moments), 2 with
        ``bounds=None`` when ``8 <= n·μ/sqrt(2d) < 30`` (one coarse
        histogram, then the moments), 1 below 8 (one coarse histogram), 0
        when nothing is released.
    noise_multiplier_ : float
        The releases compose exactly to ``μ = sqrt(n_iter_) /
        noise_multiplier_``-GDP: composing ``GaussianDpEvent(noise_multiplier_)``
        ``n_iter_`` times (add/remove relation; the replace-one factor is in
        the sensitivities) reproduces the guarantee. With the default
        ``bounds_share=0.5`` the moment release's own multiplier is
        ``noise_multiplier_ / sqrt(2.5)``, the first histogram's
        ``noise_multiplier_ / sqrt(5/4)`` and each zoom histogram's
        ``noise_multiplier_ / sqrt(5/12)``; with two releases (default
        share) both have ``noise_multiplier_``; the one coarse histogram's is
        ``noise_multiplier_``.
        The composition stated here is that of ``noise="fast"``. Secure noise
        is composed in zCDP instead: each release is ``(1/z + 2^-16)²/2``-zCDP
        for its own multiplier z (the grid rounding's slack,
        :func:`~skdp.accounting.secure_noise_cost`), and
        ``privacy_spent_.zcdp`` is their sum; a GDP accountant given this
        multiplier understates it.
    privacy_spent_ : PrivacyCost
        The exact guarantee of this fit (μ-GDP, replace-one adjacency).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    sklearn.preprocessing.StandardScaler : The non-private scaler.

    Notes
    -----
    **Guarantee.** ``mean_``, ``var_``, ``scale_`` and ``bounds_`` together
    are (ε, δ)-DP under *replace-one-record* adjacency (n is public): they
    come from ``n_iter_`` Gaussian releases that compose exactly to μ-GDP with
    ``μ = mu_from_epsilon(ε, δ)`` (Dong, Roth & Su 2022):

    * with normalised values ``z = (clip(x, l, u) - (l + u)/2) / (u - l)`` in
      ``[-1/2, 1/2]``, the vector ``(Σ_i z_i, 2√2·Σ_i z_i²)`` over all
      features (length 2d) has L2 sensitivity exactly ``sqrt(d)``: the sums
      of squares cost nothing beyond the sums;
    * with ``bounds=None``, each of 4 rounds releases a ``d x bins`` count
      matrix (L2 sensitivity ``sqrt(2d)``: a replaced record leaves one bin
      and enters another per feature). Round 1 is the located histogram
      of the two-release schedule below (the public signed grid, read by
      the same rule), with half of the rounds' μ²: a round 1 that misses a
      column leaves it the whole public range, which the zoom rounds cannot
      narrow to its spread; rounds 2-4 split the interval of the round
      before into 64
      equal bins (4096 after a round whose bulk fitted in 2 bins: a large
      offset with a small spread), plus one bin below and one above the
      interval, and keep the run of bins that holds about 96% of the data
      (grown from the fullest bin; computed from noisy counts only, so the
      grid sizes are post-processing too); a side whose bin beyond the
      interval holds more than 4% of n (beyond 3 noise standard deviations)
      returns to the interval of the round before, whose run had cut real
      mass off (a spike with values beyond it: a discrete, zero-inflated
      column); after round 1, to the extent round 1 read (the top of the
      folded bin beyond the highest one read; the public range if none
      was). Two neighbouring bins whose sum stands out at the same number
      of its noise's standard deviations are signal too (a bulk cut in two
      by a bin edge). In every zoom
      round, a fullest bin that visibly falls short of the round's target (96% of
      n; by 2 noise standard deviations) with neighbours
      under a quarter of it is a spike with nothing beside it (a point
      mass): its run grows over the bins above the round's signal
      threshold only, skipping the empty bins whose summed noise would
      otherwise close it on the spike, or keeps the whole interval if
      those bins cannot reach the target. The final interval is widened by
      a quarter of its width on each side. These four rounds get ``μ_b² =
      bounds_share·μ²`` (``μ_b²/2`` round 1, ``μ_b²/6`` each of the
      others), the moments the rest.
      If the first round's noisy counts of ``|x|`` (its bins folded) beyond
      the final interval add up to
      more than 2% of n (a spike at 0 with a heavy tail, which the zoom
      rounds would otherwise cut away), the interval is widened to the top
      of the highest such bin above the noise; where the interval is a
      spike (the search's resolution: no wider than ten zero bins or a
      thousandth of its reach), from 0.5% of n in the bins read as data
      (an indicator's 1s). Post-processing;
    * with ``bounds=None`` and ``n·μ/sqrt(2d) < 8`` (public: ``μ = 1/z``
      of the whole budget), one ``d x 49`` count matrix of x on a public
      signed grid (bins a factor ``sqrt(10)`` wide over
      ``[data_range·1e-12, data_range]`` on each side, and a zero bin
      ``[-data_range·1e-12, data_range·1e-12]``), L2 sensitivity
      ``sqrt(2d)``, with the whole budget: a histogram as in Dwork & Roth
      §3.3, used as Karwa & Vadhan (2018) use one to locate the data;
    * with ``bounds=None`` and ``8 <= n·μ/sqrt(2d) < 30``, the same count
      matrix with ``μ_b² = bounds_share·μ²``, then the moment release above
      with the rest, on bounds read from the noisy counts alone
      (post-processing, so the moments' sensitivity is still ``sqrt(d)``):
      the span of the bins above 3.5 noise standard deviations; where their
      noisy counts visibly fall short of n (a feature spread over more
      bins than stand out alone: centred on 0, or a spike at 0 with a
      thin tail), the span of the ``|x|`` bins read folded (a bin plus its
      mirror), on each sign that visibly holds data; then widened by a
      quarter of its width on each side. This is Karwa & Vadhan's
      histogram-then-clipped-mean, with a coarse public grid: the bins only
      have to hold the bulk, the moments measure it.

    **Which schedule.** Chosen from ``n``, ``d``, ε, δ and the given-ness of
    ``bounds`` only (the ratio ``n·μ/sqrt(2d)``), so neighbouring data sets
    get the same releases and the same warning. At a ratio ``n·μ/sqrt(2d)``
    below 30, the five releases of the search would each have noise
    ``sqrt(5)`` times larger, and the moment release alone then has a
    relative error on the variance near 100% (at breast cancer's n = 426,
    d = 30 and a pipeline's ε = 1, ratio 10, its features' bulk did not
    stand out of the noise, so the whole range was kept and the pipeline
    predicted the majority class). From 30 the search wins or ties on every
    table measured (each schedule forced, ``benchmarks/
    bench_scaler_schedules.py``: digits +0.03 accuracy at ratio 42, anes96
    −0.01 at 32, a mixed credit-like table +0.06 to +0.10 ROC AUC at every
    ratio from 16: a year or a balance, a large offset with a small spread,
    is beyond the one histogram's bins). From 8 to 30 two releases, the
    histogram then the moments, beat the one histogram, whose mean and
    scale are those of its bins' centres (a bulk at the low end of a bin a
    factor 3.2 wide comes out several standard deviations off). Each forced
    (20 splits, ``bench_scaler_schedules.py``): digits +0.20 and +0.08
    accuracy at ratios 12 and 23, iris +0.06 at 14, ISLP's Carseats +0.07
    ROC AUC at 11 and 20, College +0.02 at 19, the mixed table +0.08 at 16,
    the median R² of a private regression on diabetes +0.06 to +0.33;
    breast cancer, OJ and anes96 within 0.01; College −0.02 at 10 and wine
    −0.01 at 9, about one standard error (a zero-inflated or widely spread
    column that the histogram at half the budget fails to see is dropped).
    Below 8, a feature is seen only if
    more than about a third of the records fall in one bin (of the
    histogram at the whole budget; with half of it, hardly any): one
    histogram then, and a ``UserWarning`` says so, quoting only n, d, ε
    and δ.

    **Discrete, zero-inflated columns.** A spike (the zeros of a pixel)
    whose bin visibly holds less than the search's target and has nothing
    beside it is a point mass at every resolution; a run grown from it
    through the empty bins used to close on their summed noise long before
    the values beyond it (digits at ratio 43: 5-10 of 64 scales below 0.1,
    the smallest 4e-6). Its run now skips the empty bins (see
    ``skdp/preprocessing/_quantiles.py``): on digits at ε = 1, 1.9 scales
    below 0.1 per fit (10 seeds; 7.1 before), median scale/std 1.01. Values
    off the spike that the search's first histogram reads (a bin of their
    own above the noise, holding 0.5% of n or more: an indicator's 1s) widen
    the final bounds to them. What is left: a column whose other values
    the first histogram does not read (spread over bins each below the
    noise, 7% of n at ratio 43, or under 0.5% of n) keeps bounds on the
    spike; its spread is then below the resolution and its scale is 1
    (scikit-learn's constant column): ``transform`` maps it to about 0, its
    rare values clipped to the spike. Give ``bounds`` (``(0, 1)`` for an
    indicator) where such a column matters.

    **Public.** n, d, the given ``bounds`` and ``data_range``. Nothing read
    from the data is kept apart from the noisy statistics: not the number of
    clipped values, not the raw minimum or maximum. Error messages never
    quote data values.

    **Post-processing.** ``mean_ = (l + u)/2 + (u - l)·m`` with ``m`` the
    noisy mean of z clipped to ``[-1/2, 1/2]``; ``var_ = (u - l)²·max(s - m²,
    f)`` with ``s`` the noisy mean of z² clipped to ``[0, 1/4]`` and the floor
    ``f = σ/(2√2·n)`` (the noise std of ``s``, and at least 1e-12): a
    constant feature, or one whose variance the noise cannot resolve, gets a
    small positive variance instead of 0, so ``scale_`` is never 0 and
    ``transform`` never divides by 0. The arithmetic uses ``(l + u)/2`` and
    ``(u - l)/2`` computed from halves, so it neither overflows nor loses
    the result for any accepted bounds (``u - l <= 2e154``: the variance,
    at most ``((u - l)/2)²``, stays finite). After the search, a scale
    below its resolution ``data_range·1e-12`` is indistinguishable from 0
    and set to 1, scikit-learn's convention for a zero variance.

    *One histogram.* Only bins whose noisy count exceeds 3.5 noise standard
    deviations are read (an empty bin does with probability 2.3e-4; summing
    the noise of the many empty bins would swamp the data), as a histogram
    weighted by their noisy counts: ``mean_`` is the weighted mean of the bin
    centres, ``var_`` the weighted variance of the centres plus each bin's
    ``width²/12``, so a feature seen in one bin gets the bin's width over
    ``sqrt(12)`` (never near 0). A feature seen only in the zero bin, which
    holds all n records up to 3 noise standard deviations, gets mean 0 and
    scale 1 (scikit-learn's zero-variance convention: constant-zero pixels of
    digits). A feature with no bin above the noise, or seen only in a zero bin
    that visibly misses records (a spike at 0 whose tail no bin saw), gets
    mean 0 and scale ``data_range``: in effect dropped, rather than blown up
    by a guessed small scale (``dropped_features_``, with a warning; its
    ``inverse_transform`` is its mean, 0). ``bounds_`` spans the bins read.
    The scale is that of the grid: within a factor 2-3 of the standard deviation for a
    feature inside one decade, and up to 8 times too large for one with a
    small spread that straddles a bin edge. All of this is free
    post-processing.

    **Clipping bias and small data.** The statistics are those of the
    clipped data: with ``bounds=None`` little of a Gaussian feature's tails
    is clipped (its scale comes out within 3% at n = 50000, ε = 1), but a
    heavy tail is cut; with given bounds, only data outside them is clipped.
    The bounds need the bulk of each feature to stand out of the histogram
    noise. Measured at ε = 1 on Gaussian features with offsets up to 5e4 and
    scales down to 1e-2 (worst feature, median over seeds): d = 5 gives means
    within 0.15 standard deviations and scales within 15% from n = 10000, and
    errors of 20-50% at n = 3000; d = 30 needs n ≈ 50000 for the same. With
    less data, give public ``bounds`` or more budget. A large offset with a
    small spread is resolved by the fine grid: at n = 10⁴, offset 10⁵ and
    sd 10⁻³ the scale comes out within 1% (20 seeds, δ = 1e-5; with 64-bin
    rounds only it was off by a factor 28 at the median). The limit: the
    three zoom rounds narrow ``[-M, M]`` (``M ≈ 1.8·|offset|``) by at most
    ``64·4096²`` ≈ 10¹², less the bins the bulk spans; measured at n = 10⁴
    and offset 10⁵ (5 seeds), the scale is within 2% down to sd = 10⁻⁴
    (``sd/|offset|`` = 10⁻⁹), off by up to 32% at 10⁻⁵ and by a factor 7 at
    10⁻⁶. Beyond ``sd/|offset|`` ≈ 10⁻⁹, give ``bounds``. These numbers are
    for the search at ratios ``n·μ/sqrt(2d)`` above 100.

    **Small data.** In a pipeline with
    :class:`~skdp.linear_model.DPLogisticRegression` at total ε = 1
    (``make_private_pipeline``, equal split; 10 stratified splits), breast
    cancer (n = 426, d = 30, ratio 10: a histogram, then the moments)
    reaches a mean accuracy of 0.936 ± 0.006 (free, non-private scaling:
    0.952; the search forced: 0.66), digits (n = 1347, d = 64, ratio 23)
    0.807 ± 0.008 (free scaling: 0.868; one histogram: 0.73) and digits at
    ε = 2 (ratio 42: the search) 0.876 ± 0.005 (free scaling: 0.911). At
    ratio 11 (ISLP's Carseats: 300 training rows, 14 columns) the ROC AUC is
    0.69 against 0.87 with free scaling: give public ``bounds`` at that
    size. See ``benchmarks/bench_real_data.py`` for more tables.

    **Caveats.** Noise is drawn with numpy floating point, which is not
    hardened against the attacks of Mironov (2012). Fitting the same data
    again (another step of a pipeline, a cross-validation) spends budget
    again: compose with :class:`skdp.PrivacyLedger`, which accepts whole
    pipelines and searches. Dense input only.

    **Dask.** ``fit`` also takes a ``dask.array.Array`` (dense chunks along
    rows): each histogram of the bound search and the moment sums are one
    reduction over the chunks (counts and 2d floats); each grid is chosen
    and every noise is drawn on the client, so the guarantee is that of the
    in-memory fit. ``transform`` returns a Dask array. See :ref:`large_data`.

    **Cost.** Time O(n·d) per release (plus a binary search over a 49-bin
    grid), memory O(n·d + 4096·d) beyond X.

    References
    ----------
    .. [1] J. Dong, A. Roth, W. J. Su. "Gaussian differential privacy",
       JRSS-B 2022.
    .. [2] C. Dwork, A. Roth. "The algorithmic foundations of differential
       privacy", 2014, §3.5 (the Gaussian mechanism) and §3.3 (histograms).
    .. [3] V. Karwa, S. Vadhan. "Finite sample differentially private
       confidence intervals", ITCS 2018 (a private histogram to locate the
       data before estimating its mean and spread).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import DPStandardScaler
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(loc=[100.0, -3.0], scale=[5.0, 0.01], size=(20000, 2))
    >>> # seeded so that the example is reproducible; leave it None to release
    >>> scaler = DPStandardScaler(epsilon=1.0, delta=1e-6, random_state=0).fit(X)
    >>> np.round(scaler.mean_)
    array([100.,  -3.])
    >>> scaler.n_iter_, round(scaler.privacy_spent_.epsilon, 6)
    (5, 1.0)
    >>> bool(np.abs(scaler.transform(X).std(axis=0) - 1).max() < 0.1)
    True
    """

    _parameter_constraints = {
        **{k: v for k, v in PRIVACY_CONSTRAINTS.items() if k != "accounting"},
        "with_mean": ["boolean"],
        "with_std": ["boolean"],
        "bounds": ["array-like", None],
        "data_range": [DATA_RANGE_CONSTRAINT],
        "bounds_share": [Interval(Real, 0, 1, closed="neither")],
        "clip": ["boolean"],
    }

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = ["float64", "float32"]
        return tags

    def __init__(
        self,
        *,
        epsilon=1.0,
        delta=1e-5,
        with_mean=True,
        with_std=True,
        bounds=None,
        data_range=1e6,
        bounds_share=0.5,
        clip=True,
        random_state=None,
        noise="fast",
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.with_mean = with_mean
        self.with_std = with_std
        self.bounds = bounds
        self.data_range = data_range
        self.bounds_share = bounds_share
        self.clip = clip
        self.random_state = random_state
        self.noise = noise

    def _audit_canary(self):
        """skdp.audit's default canary: a record at the bounds' extremes;
        with given bounds, one of the two far out (bounds read from the data
        are seen)."""
        if self.bounds is None:
            return "ExtremeRecordCanary", {}
        return "FarExtremeRecordCanary", {}

    @private_fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Release the mean and variance with (``epsilon``, ``delta``)-DP.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (finite).
        y : None
            Ignored.

        Returns
        -------
        self : DPStandardScaler
            The fitted scaler.
        """
        require_positive_delta(self)
        if is_dask_array(X):  # map-reduce on the chunks; noise on the client
            from .. import _dask

            X, _ = _dask.validate(self, X, dtype=np.float64)
        else:
            X = validate_data(self, X, dtype=np.float64)
        n, d = X.shape
        bounds = None if self.bounds is None else _check_bounds(self.bounds, d)
        warn_if_delta_is_large(self, n)
        self.n_samples_seen_ = n
        if not (self.with_mean or self.with_std):  # nothing to release
            self.mean_ = self.var_ = self.scale_ = self.bounds_ = None
            self.dropped_features_ = None
            self.n_iter_, self.noise_multiplier_ = 0, math.inf
            self.privacy_spent_ = PrivacyCost(
                0.0, 0.0, 0.0, REPLACE_ONE, "DPStandardScaler: nothing released"
            )
            return self
        rng = as_generator(self.random_state, self.noise)
        schedule = bounds_schedule(
            n,
            d,
            self.epsilon,
            self.delta,
            given=bounds is not None,
            name="DPStandardScaler",
            unseen="is scaled by data_range (in effect dropped)",
            stacklevel=4,  # the caller of fit (through its two decorators)
            search_snr=_SEARCH_SNR,
            locate=True,  # one histogram locates, the moments measure
        )
        n_bound_releases = {"search": N_BOUND_RELEASES, "located": 1}.get(schedule, 0)
        n_iter = n_bound_releases + 1  # and the moments, or the one histogram
        if n_bound_releases:
            # μ_b² = share·μ² over the equal bound releases; μ_m² the rest.
            (z_bounds, z), z_total = split_gaussian_budget(
                self.epsilon,
                self.delta,
                [(n_bound_releases, self.bounds_share), (1, 1.0 - self.bounds_share)],
                noise=self.noise,
            )
        else:  # one release spends the whole budget
            (z,), z_total = split_gaussian_budget(
                self.epsilon, self.delta, [(1, 1.0)], noise=self.noise
            )
        dropped = np.zeros(d, dtype=bool)
        if schedule == "histogram":
            mean, scale, bounds, dropped = self._histogram_moments(X, z, rng)
            mechanism = "DPStandardScaler: one noisy histogram per feature"
        elif schedule == "located":
            mean, scale, bounds, dropped = self._located_moments(X, z_bounds, z, rng)
            mechanism = (
                "DPStandardScaler: one noisy histogram (bounds), then noisy "
                "clipped sums and sums of squares"
            )
        elif schedule == "search":
            bounds = private_bounds(
                X,
                data_range=self.data_range,
                noise_multiplier=z_bounds,
                rng=rng,
                first_round="bulk",  # a mean and a variance: the bulk
            )
            mean, scale = self._noisy_moments(X, bounds, z, rng)
            # scikit-learn's convention for a zero variance (scale 1), where
            # the spread is below the search's resolution (a public floor).
            scale = np.where(scale < self.data_range * _RESOLUTION, 1.0, scale)
            mechanism = (
                "DPStandardScaler: 4 noisy histograms (bounds), then noisy "
                "clipped sums and sums of squares"
            )
        else:
            mean, scale = self._noisy_moments(X, bounds, z, rng)
            mechanism = "DPStandardScaler: noisy clipped sums and sums of squares"
        if schedule != "given":
            warn_if_near_range(
                mean,
                self.data_range,
                "DPStandardScaler",
                stacklevel=4,
                feature_names=getattr(self, "feature_names_in_", None),
            )
        if dropped.any():
            warn_dropped(
                dropped,
                "DPStandardScaler",
                "they are dropped (mean 0, scale data_range)",
                stacklevel=4,
                feature_names=getattr(self, "feature_names_in_", None),
            )
        self.bounds_ = np.vstack(bounds)
        self.dropped_features_ = dropped
        self.mean_ = mean
        self.var_ = scale**2 if self.with_std else None
        self.scale_ = scale if self.with_std else None
        self.n_iter_ = n_iter
        # The releases' multipliers compose like n_iter steps of z_total.
        self.noise_multiplier_ = z_total
        self.privacy_spent_ = gaussian_cost(
            self.noise_multiplier_,
            n_iter,
            noise=self.noise,
            delta=self.delta,
            adjacency=REPLACE_ONE,
            mechanism=mechanism,
        )
        return self

    def _histogram_moments(self, X, noise_multiplier, rng):
        """Mean, scale and bounds from one noisy histogram (see Notes)."""
        mean, scale, lower, upper, seen, zero = private_histogram_scale(
            X, data_range=self.data_range, noise_multiplier=noise_multiplier, rng=rng
        )
        # scikit-learn's convention for a zero variance: a feature seen only
        # in the zero bin gets mean 0 and scale 1. A feature not seen at all
        # (no bin above the noise) is scaled by data_range: in effect dropped,
        # rather than blown up by a guessed small scale.
        mean = np.where(zero | ~seen, 0.0, mean)
        scale = np.where(zero, 1.0, np.where(seen, scale, self.data_range))
        lower = np.where(seen, lower, -self.data_range)
        upper = np.where(seen, upper, self.data_range)
        return mean, scale, (lower, upper), ~seen & ~zero

    def _located_moments(self, X, z_histogram, z_moments, rng):
        """Bounds from one noisy histogram, then the moments within them.

        The coarse histogram locates each feature's bulk to within its bins
        (a factor 3.2 wide; :func:`located_bounds`); the moment release,
        clipped to those bounds, measures the mean and the variance that the
        bins can only guess (a bulk at the edge of a wide bin). A feature no
        bin shows is dropped (scale ``data_range``) and one whose zero bin
        holds all the data gets mean 0 and scale 1, as after one histogram.
        """
        noisy, edges, noise_std = private_signed_histogram(
            X, data_range=self.data_range, noise_multiplier=z_histogram, rng=rng
        )
        lower, upper, located, zero = located_bounds(
            noisy, edges, noise_std, n_samples=X.shape[0]
        )
        mean, scale = self._noisy_moments(X, (lower, upper), z_moments, rng)
        mean = np.where(located, mean, 0.0)
        scale = np.where(located, scale, np.where(zero, 1.0, self.data_range))
        return mean, scale, (lower, upper), ~located & ~zero

    @staticmethod
    def _noisy_moments(X, bounds, noise_multiplier, rng):
        """Mean and scale from one joint Gaussian release (see Notes)."""
        lower, upper = bounds
        n, d = X.shape
        # Scale-safe: half-widths are finite for every finite pair of bounds
        # and the variance is at most half_width² <= MAX_HALF_WIDTH².
        center, half_width = _center_half_width(lower, upper)
        sums = sum_over_rows(moment_sums, X, (2 * d,), lower=lower, upper=upper)
        noisy = gaussian_mechanism(
            sums,
            sensitivity=moment_sensitivity(d),
            noise_multiplier=noise_multiplier,
            rng=rng,
        )
        m = np.clip(noisy[:d] / n, -0.5, 0.5)
        s = np.clip(noisy[d:] / (GAMMA * n), 0.0, 0.25)
        floor = _variance_floor(noise_multiplier, n, d)
        mean = np.clip(center + half_width * (2.0 * m), lower, upper)
        # At most 1/4 (a spread over the whole bounds): at a tiny n the floor
        # exceeds it, and var_ = scale_² overflowed to inf for bounds near
        # the widest accepted (review).
        variance = np.minimum(np.maximum(s - m * m, floor), 0.25)
        scale = half_width * (2.0 * np.sqrt(variance))
        return mean, scale

    def _audit_largest_scale(self):
        """The largest ``scale_`` a fit with given bounds can release, from
        the public bounds: their half-width, per feature
        (:class:`~skdp.audit.FarExtremeRecordCanary`)."""
        lower, upper = self.bounds_
        return upper / 2.0 - lower / 2.0

    @private_transform
    def transform(self, X):
        """Standardise ``X`` with the private ``mean_`` and ``scale_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data (clipped to ``bounds_`` here if ``clip``).

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_features)
            Standardised data (of X clipped to ``bounds_`` if ``clip``).
        """
        check_is_fitted(self)
        if is_dask_array(X):
            from .. import _dask

            return _dask.map_rows(self.transform, self, X)
        # float32 stays float32, as in scikit-learn (post-processing)
        X = validated_copy(self, X, dtype=[np.float64, np.float32])
        if self.clip and self.bounds_ is not None:
            np.clip(X, self.bounds_[0], self.bounds_[1], out=X)
        if self.with_mean:
            X -= self.mean_
        if self.with_std:
            X /= self.scale_
        if self.dropped_features_ is not None:
            X[:, self.dropped_features_] = 0.0  # seen as nothing: 0, any with_std
        return X

    @private_transform
    def inverse_transform(self, X):
        """Undo :meth:`transform`: ``X * scale_ + mean_``.

        A dropped feature (``dropped_features_``) gets its mean, 0, whatever
        its input: the scaler saw nothing of it, and ``data_range`` times a
        model's output (a TransformedTargetRegressor's prediction) would be
        noise magnified a millionfold.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Standardised data.

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
            Data on the original scale.
        """
        check_is_fitted(self)
        if is_dask_array(X):
            from .. import _dask

            return _dask.map_rows(self.inverse_transform, self, X)
        X = validated_copy(self, X, dtype=[np.float64, np.float32])
        if self.with_std:
            X *= self.scale_
        if self.with_mean:
            X += self.mean_
        if self.dropped_features_ is not None:
            X[:, self.dropped_features_] = 0.0  # their mean, any with_std
        return X
