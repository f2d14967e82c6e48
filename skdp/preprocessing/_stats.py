"""Private histograms and quantiles of columns: one budget in, values and a cost out.

:func:`dp_histogram` releases the histogram of every column on a public grid
(one Gaussian release). :func:`dp_quantiles` releases quantiles of every
column; they are read from a noisy CDF (:func:`release_cdf`), which the
quantile transformers (:class:`~skdp.preprocessing.DPQuantileTransformer`,
:class:`~skdp.preprocessing.DPRobustScaler`,
:class:`~skdp.preprocessing.DPMinMaxScaler`) share.

**Sensitivity of a histogram (replace one record).** Let ``h_j(D)`` be the
counts of column j of data set D on a grid of bins that partition the
(clipped) line: every record falls in exactly one bin per column, a function
of its own value only. Replacing record ``x`` by ``x'`` removes one from the
bin of ``x_j`` and adds one to the bin of ``x'_j``: ``h_j(D') - h_j(D)`` is
``e_b - e_a`` (zero if ``a = b``), of squared norm at most 2. Over the d
columns the ``d x bins`` count matrix moves by at most ``sqrt(2 d)`` in L2
norm, attained when every column's value changes bin. So the Gaussian
mechanism with noise std ``z·sqrt(2 d)`` is ``1/z``-GDP (Dong, Roth & Su
2022, Thm. 2.7; Dwork & Roth 2014, §3.3 for histograms), whatever the data,
the grid sizes or the number of empty bins. The grid must not depend on
the data except through earlier noisy releases (then the releases compose
adaptively, Dong, Roth & Su 2022, Cor. 3.3).
"""

import warnings
from dataclasses import dataclass, replace
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
from sklearn.utils import check_array
from sklearn.utils._param_validation import Interval, StrOptions, validate_params

from .._base import (
    always_validated,
    data_parameters_unquoted,
    is_dask_array,
    silent_release,
    sum_over_rows,
)
from ..accounting import (
    REPLACE_ONE,
    PrivacyCost,
    gaussian_cost,
    gaussian_noise_multiplier,
    split_gaussian_budget,
)
from ..exceptions import PrivacyLeakWarning
from ..mechanisms import (
    NOISE_SAMPLERS,
    as_generator,
    check_secure_seed,
    gaussian_mechanism,
    noise_seed_id,
)
from ._quantiles import (
    _COARSE_SIGNAL_SDS,
    _EQUAL_SIGNAL_SDS,
    N_BOUND_RELEASES,
    cdf_from_counts,
    connected_bins,
    equal_width_edges,
    grid_counts,
    histogram_sensitivity,
    inverse_cdf,
    located_bounds,
    n_equal_bins,
    private_bounds,
    private_signed_histogram,
    quantile_bins,
    search_grid,
    signed_grid,
)
from ._scaler import (
    _RESOLUTION,
    DATA_RANGE_CONSTRAINT,
    _check_bounds,
    bounds_schedule,
    warn_dropped,
    warn_if_near_range,
)

#: The noise standard deviations above which an equal bin of a located
#: interval weighs in the CDF. The bulk is known to lie there, and at the
#: sizes that take this schedule most bins hold fewer records than 2 noise
#: sds: dropping them compressed the quartiles onto the one or two largest
#: bins (scales 10-40 times too small on breast cancer).
_LOCATED_SIGNAL_SDS = 0.5

#: A bin weighs in the CDF only if its noisy count is also at least half a
#: record (counts are integers before the noise).
_MIN_COUNT = 0.5

__all__ = ["DPHistogram", "DPQuantiles", "dp_histogram", "dp_quantiles"]


@dataclass(frozen=True)
class CDFRelease:
    """What :func:`release_cdf` released, and what it cost.

    ``counts`` is the noisy count matrix of the last release (the entries
    beyond a feature's own ``sizes[j]`` bins are set to 0: they are pure
    noise, never read); ``cdf`` and ``seen`` are post-processing of it
    (:func:`~skdp.preprocessing._quantiles.cdf_from_counts`). ``resolution``
    is the public scale up to which a spread is indistinguishable from 0:
    the width ``2·data_range·1e-12`` of the signed grid's zero bin when the
    grid was searched (two quantiles inside a spike in that bin are apart by
    at most that), 0 with given bounds. ``fine`` marks the equal-width bins
    (all of them with given bounds, the bins on the found bounds after a
    search, none on the logarithmic grid). ``reach`` is the public range the
    data was clipped to (the bounds, or ``±data_range``): the quantiles stay
    in it (margin and logarithmic bins reach past it, to 1.41 data_range;
    review).
    """

    edges: np.ndarray
    sizes: np.ndarray
    counts: np.ndarray
    cdf: np.ndarray
    seen: np.ndarray
    schedule: str
    n_iter: int
    noise_multiplier: float
    cost: PrivacyCost
    resolution: float
    fine: np.ndarray
    reach: tuple

    def quantiles(self, q):
        """``(values, widths)`` of shape (len(q), d): see ``inverse_cdf``;
        the values clipped to ``reach``."""
        values, widths = inverse_cdf(self.edges, self.cdf, q)
        return np.clip(values, *self.reach), widths

    def in_one_fine_bin(self, q_low, q_high):
        """Per feature, whether the quantiles ``q_low`` and ``q_high`` lie in
        one equal-width bin: their distance is then not resolved (inside a
        bin the CDF is interpolated linearly, so a spike there, a binary or
        integer-coded column's, gets a fraction of the bin's width)."""
        low, high = quantile_bins(self.cdf, [q_low, q_high])
        return (low == high) & np.take_along_axis(self.fine, low[:, None], 1)[:, 0]


def _connected(noisy, floor, noise_std, fine, edges, sizes):
    """The bins of a searched grid above their floor that the CDF reads
    (post-processing).

    A logarithmic bin just above its floor, decades from the bounds found,
    is most likely noise: read alone it put a column's 99th percentile at
    23 for data near −1000 (review). As in :func:`read_bins`, a bin is read
    only if connected to the bulk (``fine``: the equal-width bins on the
    bounds), to the bin that holds 0 (a spike of zeros is a bulk of its
    own: 2-4% of zeros beside data near 1000 were dropped; review), to the
    fullest bin or to a bin above ``_LONE_SIGNAL_SDS`` noise standard
    deviations. A real spike elsewhere, far from the bulk and below that,
    is dropped with the noise. (Not on the one-histogram grid: there a
    zero-inflated column's other values lie decades from its zero bin, and
    the rule dropped them; digits' pipelines lost 0.015 at ε = 1.)

    The fullest bin seeds too, even a logarithmic bin of pure noise where
    the bulk's equal bins each hold less than a noise standard deviation
    (at the located schedule's sizes: Hitters' 75th percentile of AtBat, 19
    to 687, at 340259 in about 2% of releases at ε = 1; review). Seeding it
    only where no equal bin is read halved that, but dropped real heavy
    tails that stand alone at 3.5-5 sds (Boston's crim: the 99th percentile
    below the data's 80th in 86% of releases against 76%; overall rank
    error +0.0014 ± 0.0002 on Hitters): not adopted.
    """
    seeds = fine.copy()
    for j in range(noisy.shape[0]):  # a loop over features, never over samples
        own = edges[j, : sizes[j] + 1]
        seeds[j, min(np.searchsorted(own, 0.0, side="right") - 1, sizes[j] - 1)] = True
    return connected_bins(noisy, noisy > floor, seeds, noise_std)


def _zero_bin_width(data_range):
    """Width ``2·data_range·1e-12`` of the zero bin of the signed grid: the
    resolution of a searched grid (a spread within it is indistinguishable
    from 0)."""
    return 2.0 * data_range * _RESOLUTION


def _located(X, data_range, noise_multiplier, rng):
    """Per-feature bounds from one noisy histogram on the signed grid.

    One Gaussian release (sensitivity ``sqrt(2d)``, see
    :func:`~skdp.preprocessing._quantiles.private_signed_histogram`); the
    rest is :func:`~skdp.preprocessing._quantiles.located_bounds`,
    post-processing. A feature it does not locate gets the zero bin as its
    bounds, so that the next release's grid (:func:`search_grid`) is the
    logarithmic grid beyond it, as the one-histogram schedule's. Returns
    ``lower, upper, located``.
    """
    noisy, edges, noise_std = private_signed_histogram(
        X, data_range=data_range, noise_multiplier=noise_multiplier, rng=rng
    )
    lower, upper, located, _ = located_bounds(
        noisy, edges, noise_std, n_samples=X.shape[0]
    )
    zero_bin = (edges.size - 1) // 2
    lower = np.where(located, lower, edges[zero_bin])
    upper = np.where(located, upper, edges[zero_bin + 1])
    return lower, upper, located


def release_cdf(
    X,
    *,
    epsilon,
    delta,
    bounds,
    data_range,
    bounds_share,
    noise,
    rng,
    name,
    stacklevel=2,
    locate=False,
    feature_names=None,
):
    """Release a noisy CDF of every column of X with (ε, δ)-DP.

    Parameters
    ----------
    X : ndarray or Dask array of shape (n_samples, n_features)
        Finite data.
    epsilon, delta : float
        The budget of the whole release (δ > 0).
    bounds : tuple of two ndarrays of shape (n_features,), or None
        Public bounds (checked); data is clipped to them.
    data_range : float
        Used when ``bounds`` is None: the public range searched.
    bounds_share : float
        Used by the search: the share of μ² spent on the bounds.
    noise : {"fast", "secure"}
    rng : numpy.random.Generator or SecureNoise
    name : str
        Who releases (for the mechanism string and the warning).
    stacklevel : int, default=2
        Of the small-data warning, counted from the caller of this function.
    locate : bool, default=False
        Whether a release below the search's ratio locates the bulk first
        (``"located"`` below): :func:`dp_quantiles`, whose values are the
        point. The transformers keep the one histogram: on their pipelines
        (digits, wine, breast cancer at ε = 1 and 2, 10 splits) the located
        grid's more, noisier bins lost up to 0.2 accuracy with
        ``DPQuantileTransformer`` on digits and 0.03-0.05 on wine.
    feature_names : ndarray of str, optional
        The columns' names (public), for the warnings.

    Returns
    -------
    CDFRelease

    Notes
    -----
    Schedules (chosen by ``_scaler.bounds_schedule`` from public values):

    * ``"given"``: one histogram with ``B`` equal bins on the bounds (``B``
      from :func:`~skdp.preprocessing._quantiles.n_equal_bins`: n, d and the
      noise multiplier, all public);
    * ``"search"``: the four histograms of
      :func:`~skdp.preprocessing._quantiles.private_bounds` (share
      ``bounds_share`` of μ²), then one histogram with ``B`` equal bins on
      the bounds found, two margin bins on each side and the signed
      logarithmic bins beyond them (the rest of μ²; see
      :func:`~skdp.preprocessing._quantiles.search_grid`): a heavy tail or
      a spike beyond the bulk is still seen;
    * ``"located"`` (less data, with ``locate``): as ``"search"``, with the
      one histogram on the signed logarithmic grid that
      :func:`~skdp.preprocessing._quantiles.located_bounds` reads in place
      of the four (DPStandardScaler's schedule at that size). A quantile
      read from one logarithmic bin, a factor ``sqrt(10)`` wide, was off by
      most of a bin: the median of breast cancer's mean radius (13.4, in
      the bin [10, 31.6]) came out near 20, the data's 92nd percentile
      (new-user trial). A feature the first histogram does not locate gets
      the logarithmic grid in the second;
    * ``"histogram"`` (below a public ratio of 8): one histogram on the
      signed logarithmic grid (49 bins a factor ``sqrt(10)`` wide).

    Every release is a ``d x K`` count matrix of L2 sensitivity
    ``sqrt(2 d)`` (module docstring) with noise std ``z_i·sqrt(2 d)``; the
    multipliers come from :func:`skdp.accounting.split_gaussian_budget`
    (``Σ 1/z_i² = 1/z²`` with ``z`` the multiplier of one release that
    spends the whole budget), so the releases compose to exactly
    ``1/z``-GDP, i.e. (ε, δ)-DP (with secure noise, the zCDP bound stated
    there). The CDF is
    post-processing of the last release
    (:func:`~skdp.preprocessing._quantiles.cdf_from_counts`: bins below
    2 noise standard deviations, 3.5 for logarithmic and margin bins, or
    below half a record, weigh 0; on a searched grid so does a
    logarithmic bin connected to no other that weighs, see
    :func:`_connected`).
    """
    n, d = X.shape
    schedule = bounds_schedule(
        n,
        d,
        epsilon,
        delta,
        given=bounds is not None,
        name=name,
        unseen="is treated as spread evenly over [-data_range, data_range] (in "
        "effect dropped)",
        stacklevel=stacklevel + 1,
        locate=locate,
    )
    n_first = {"search": N_BOUND_RELEASES, "located": 1}.get(schedule, 0)
    n_iter = n_first + 1
    if n_first:  # μ_b² = share·μ² over the first releases; the rest last
        (z_bounds, z_final), noise_multiplier = split_gaussian_budget(
            epsilon,
            delta,
            [(n_first, bounds_share), (1, 1.0 - bounds_share)],
            noise=noise,
        )
    else:  # one release spends the whole budget
        (z_final,), noise_multiplier = split_gaussian_budget(
            epsilon, delta, [(1, 1.0)], noise=noise
        )
    sensitivity = histogram_sensitivity(d)
    if schedule == "given":
        lower, upper = bounds
        n_bins = n_equal_bins(n, d, z_final)
        edges = equal_width_edges(lower, upper, n_bins)
        sizes = np.full(d, n_bins)
        thresholds = np.full((d, n_bins), _EQUAL_SIGNAL_SDS)
        clip = (lower, upper)
        resolution = 0.0
        fine = np.ones((d, n_bins), dtype=bool)
        mechanism = f"{name}: one noisy histogram per feature on the given bounds"
    elif schedule in ("search", "located"):
        if schedule == "search":
            lower, upper = private_bounds(
                X, data_range=data_range, noise_multiplier=z_bounds, rng=rng
            )
            located = np.ones(d, dtype=bool)
            first = "4 noisy histograms (bounds)"
        else:
            lower, upper, located = _located(X, data_range, z_bounds, rng)
            first = "one noisy histogram (location)"
        n_bins = n_equal_bins(n, d, z_final)
        edges, sizes, equal = search_grid(lower, upper, n_bins, data_range)
        fine = equal.copy()
        # An equal bin is read at 2 noise sds: the bulk is known to be there.
        # Inside the zero bin of a feature not located, it is not: noise
        # read there (2.3% of bins) put a column's quartiles 1e-6 apart
        # (breast cancer's mean concave points, 0 to 0.2).
        equal &= located[:, None]
        inner = _EQUAL_SIGNAL_SDS if schedule == "search" else _LOCATED_SIGNAL_SDS
        thresholds = np.where(equal, inner, _COARSE_SIGNAL_SDS)
        clip = (-data_range, data_range)
        resolution = _zero_bin_width(data_range)
        mechanism = f"{name}: {first}, then one noisy histogram per feature"
    else:
        grid = signed_grid(data_range)
        edges = np.broadcast_to(grid, (d, grid.size)).copy()
        sizes = np.full(d, grid.size - 1)
        thresholds = np.full((d, grid.size - 1), _COARSE_SIGNAL_SDS)
        clip = (-data_range, data_range)
        resolution = _zero_bin_width(data_range)
        fine = np.zeros((d, grid.size - 1), dtype=bool)
        mechanism = f"{name}: one noisy histogram per feature (logarithmic grid)"
    counts = sum_over_rows(
        grid_counts,
        X,
        (d, edges.shape[1] - 1),
        edges=edges,
        sizes=sizes,
        lower=clip[0],
        upper=clip[1],
    )
    noisy = gaussian_mechanism(
        counts, sensitivity=sensitivity, noise_multiplier=z_final, rng=rng
    )
    # Post-processing from here on.
    valid = np.arange(noisy.shape[1])[None, :] < sizes[:, None]
    noisy = np.where(valid, noisy, 0.0)
    noise_std = z_final * sensitivity
    # A bin must also hold half a record: at a large budget (tiny noise) no
    # empty bin then weighs anything.
    floor = np.maximum(thresholds * noise_std, _MIN_COUNT)
    if schedule in ("search", "located"):
        read = _connected(noisy, floor, noise_std, fine, edges, sizes)
        floor = np.where(read, floor, np.inf)
    cdf, seen = cdf_from_counts(noisy, edges, sizes, floor)
    if schedule != "given":
        median = np.where(seen, inverse_cdf(edges, cdf, [0.5])[0][0], 0.0)
        warn_if_near_range(
            median,
            data_range,
            name,
            stacklevel=stacklevel + 1,
            feature_names=feature_names,
        )
    cost = gaussian_cost(
        noise_multiplier,
        n_iter,
        noise=noise,
        delta=delta,
        adjacency=REPLACE_ONE,
        mechanism=mechanism,
    )
    return CDFRelease(
        edges=edges,
        sizes=sizes,
        counts=noisy,
        cdf=cdf,
        seen=seen,
        schedule=schedule,
        n_iter=n_iter,
        noise_multiplier=noise_multiplier,
        cost=cost,
        resolution=resolution,
        fine=fine,
        reach=clip,
    )


# --------------------------------------------------------------------------
# The public functions
# --------------------------------------------------------------------------


class DPHistogram(NamedTuple):
    """The result of :func:`dp_histogram` (a named tuple)."""

    #: Noisy counts, shape (n_features, n_bins), or (n_bins,) for 1-D X.
    counts: np.ndarray
    #: Bin edges, shape (n_features, n_bins + 1), or (n_bins + 1,).
    edges: np.ndarray
    #: What the release cost (record it with :class:`~skdp.PrivacyLedger`).
    privacy_spent: PrivacyCost


class DPQuantiles(NamedTuple):
    """The result of :func:`dp_quantiles` (a named tuple)."""

    #: Quantiles, shape (len(q), n_features); the axes of a scalar q or a
    #: 1-D X are dropped, as :func:`numpy.quantile` does.
    quantiles: np.ndarray
    #: What the release cost (record it with :class:`~skdp.PrivacyLedger`).
    privacy_spent: PrivacyCost


def _check_data(X):
    """``(X as 2-D, was_1d)``; Dask arrays stay lazy (2-D only)."""
    if is_dask_array(X):
        from types import SimpleNamespace

        from .. import _dask

        X, _ = _dask.validate(SimpleNamespace(), X, dtype=np.float64)
        return X, False
    X = check_array(X, dtype=np.float64, ensure_2d=False, input_name="X")
    if X.ndim == 1:
        return X[:, None], True
    return X, False


def _finish(cost, seed, random_state, noise, name):
    """Stamp the seed and the sampler on the cost, as ``private_fit`` does.

    ``seed`` is ``noise_seed_id(random_state)`` taken *before* the release
    drew from ``random_state``: a seeded Generator or RandomState has moved
    on by now, and its fingerprint would no longer match a copy of it given
    to another release (which would share this noise).
    """
    if seed is not None:
        warnings.warn(
            f"random_state={random_state!r} seeds the privacy noise of {name}: "
            "every call given this seed draws the same noise, and releases that "
            "share noise can be combined to cancel it. Leave random_state=None "
            "for anything you release; PrivacyLedger refuses to total releases "
            "that share a seed.",
            PrivacyLeakWarning,
            stacklevel=7,  # the caller of dp_* (through four decorators)
        )
    return replace(
        cost,
        noise_seeds=cost.noise_seeds + ((seed,) if seed else ()),
        sampler=NOISE_SAMPLERS[noise],
    )


#: The most counts dp_histogram releases (n_features x n_bins, every one
#: noised): 10**12 bins asked numpy for 7.3 TiB (review).
_MAX_COUNTS = 10**8

_BUDGET = {
    "epsilon": [Interval(Real, 0, None, closed="neither")],
    "delta": [Interval(Real, 0, 1, closed="neither")],
    "random_state": ["random_state", np.random.Generator],
    "noise": [StrOptions({"fast", "secure"})],
}


@data_parameters_unquoted("X")
@always_validated
@validate_params(
    {
        "X": ["array-like"],
        "bins": [Interval(Integral, 1, None, closed="left"), "array-like"],
        "bounds": ["array-like", None],
        **_BUDGET,
    },
    prefer_skip_nested_validation=True,
)
@silent_release
def dp_histogram(
    X, bins, *, bounds=None, epsilon=1.0, delta=1e-5, random_state=None, noise="fast"
):
    """Histogram of every column of X on a public grid, with (ε, δ)-DP.

    One Gaussian release of the ``n_features x n_bins`` count matrix. The
    grid is public: ``bins`` equal bins on ``bounds``, or given edges.
    Values outside the grid are counted in its end bins (clipped), so the
    counts of a column add up to n before the noise.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features) or (n_samples,)
        Finite data (or a 2-D Dask array: one reduction over its chunks).
    bins : int or array-like of shape (n_bins + 1,)
        Number of equal bins on ``bounds``, or the increasing edges shared
        by all columns (then ``bounds`` must be None).
    bounds : tuple (lower, upper) or None, default=None
        Public range of the equal bins: scalars or one value per column,
        ``lower < upper``. Required when ``bins`` is an int (a range read
        from the data would not be private).
    epsilon : float, default=1.0
        Privacy budget ε > 0 of the release.
    delta : float, default=1e-5
        δ in (0, 1), well below ``1/n_samples``.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the noise; use None for anything you release (a seeded call
        warns, and :class:`~skdp.PrivacyLedger` refuses releases that share
        a seed).
    noise : {"fast", "secure"}, default="fast"
        The noise sampler (see :ref:`secure_noise`).

    Returns
    -------
    result : DPHistogram
        ``(counts, edges, privacy_spent)``: noisy float counts (may be
        negative; post-process as you like, e.g. ``np.maximum(counts, 0)``),
        the edges, and the :class:`~skdp.PrivacyCost` of the release.

    Notes
    -----
    **Guarantee.** (ε, δ)-DP under replace-one-record adjacency, i.e.
    ``μ``-GDP with ``μ = 1/z``: the count matrix has L2 sensitivity exactly
    ``sqrt(2·n_features)`` (a replaced record leaves one bin and enters
    another in every column; proof in the module docstring) and gets i.i.d.
    noise of std ``z·sqrt(2·n_features)``, ``z =
    gaussian_noise_multiplier(ε, δ)`` (Dong, Roth & Su 2022, Thm. 2.7).
    Public: n, the number of columns, the grid. Nothing else is read.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import dp_histogram
    >>> X = np.random.default_rng(0).uniform(0, 10, size=(100000, 1))
    >>> hist = dp_histogram(X[:, 0], 5, bounds=(0, 10), epsilon=1.0, delta=1e-6)
    >>> hist.edges
    array([ 0.,  2.,  4.,  6.,  8., 10.])
    >>> np.round(hist.counts / 1000)
    array([20., 20., 20., 20., 20.])
    >>> round(hist.privacy_spent.epsilon, 6)
    1.0
    """
    X, one_d = _check_data(X)
    n, d = X.shape
    if delta >= 1.0 / n:
        warnings.warn(
            f"delta={delta:g} is at least 1/n_samples = {1.0 / n:.3g}: use delta "
            "well below 1/n_samples.",
            PrivacyLeakWarning,
            stacklevel=6,  # the caller (through four decorators)
        )
    if isinstance(bins, bool):  # an Integral: True was one bin (review)
        raise ValueError("bins must be an int or an array of edges, not a bool.")
    n_bins = int(bins) if isinstance(bins, Integral) else np.size(bins) - 1
    if n_bins * d > _MAX_COUNTS:
        raise ValueError(
            f"bins={n_bins} for {d} column(s) asks for {n_bins * d:.3g} counts "
            f"(a dense matrix of noise); at most {_MAX_COUNTS:.0e} are released."
        )
    if isinstance(bins, Integral):
        if bounds is None:
            raise ValueError(
                "dp_histogram needs public bounds=(lower, upper) with an int bins: "
                "a range read from the data would not be private."
            )
        lower, upper = _check_bounds(bounds, d)
        edges = equal_width_edges(lower, upper, int(bins))
    else:
        if bounds is not None:
            raise ValueError("Give either edges in bins or bounds, not both.")
        grid = np.asarray(bins, dtype=float)
        if grid.ndim != 1 or grid.size < 2 or not np.all(np.isfinite(grid)):
            raise ValueError("bins must be an int or a 1-D array of >= 2 finite edges.")
        if np.any(np.diff(grid) <= 0):
            raise ValueError("The edges in bins must be strictly increasing.")
        edges = np.broadcast_to(grid, (d, grid.size)).copy()
        lower, upper = edges[:, 0], edges[:, -1]
    check_secure_seed(random_state, noise)
    seed = noise_seed_id(random_state)
    rng = as_generator(random_state, noise)
    n_bins = edges.shape[1] - 1
    counts = sum_over_rows(
        grid_counts,
        X,
        (d, n_bins),
        edges=edges,
        sizes=np.full(d, n_bins),
        lower=lower,
        upper=upper,
    )
    z = gaussian_noise_multiplier(epsilon, delta, noise=noise)
    noisy = gaussian_mechanism(
        counts, sensitivity=histogram_sensitivity(d), noise_multiplier=z, rng=rng
    )
    cost = gaussian_cost(
        z,
        1,
        noise=noise,
        delta=delta,
        adjacency=REPLACE_ONE,
        mechanism="dp_histogram: one noisy histogram per column",
    )
    cost = _finish(cost, seed, random_state, noise, "dp_histogram")
    if one_d:
        return DPHistogram(noisy[0], edges[0], cost)
    return DPHistogram(noisy, edges, cost)


@data_parameters_unquoted("X")
@always_validated
@validate_params(
    {
        "X": ["array-like"],
        "q": ["array-like", Interval(Real, 0, 1, closed="both")],
        "bounds": ["array-like", None],
        "data_range": [DATA_RANGE_CONSTRAINT],
        "bounds_share": [Interval(Real, 0, 1, closed="neither")],
        **_BUDGET,
    },
    prefer_skip_nested_validation=True,
)
@silent_release
def dp_quantiles(
    X,
    q,
    *,
    epsilon=1.0,
    delta=1e-5,
    bounds=None,
    data_range=1e6,
    bounds_share=0.5,
    random_state=None,
    noise="fast",
):
    """Quantiles of every column of X, with (ε, δ)-DP.

    The quantiles are read from a noisy CDF of each column, post-processing
    of Gaussian-noised histograms (:func:`dp_histogram`'s mechanism) on a
    grid that never reads the raw data: with public ``bounds``, one
    histogram on them; without, the grid is searched privately inside
    ``[-data_range, data_range]`` by :class:`DPStandardScaler`'s bounds
    search in its *extent* variant (see Notes). All quantiles of all
    columns come from one release (or five), so asking for more of them
    costs nothing more.

    Parameters
    ----------
    X : array-like of shape (n_samples, n_features) or (n_samples,)
        Finite data (or a 2-D Dask array: each histogram is one reduction
        over its chunks).
    q : float or array-like of floats in [0, 1]
        Quantile levels, as :func:`numpy.quantile`.
    epsilon : float, default=1.0
        Privacy budget ε > 0 of the whole release.
    delta : float, default=1e-5
        δ in (0, 1), well below ``1/n_samples``.
    bounds : tuple (lower, upper) or None, default=None
        Public bounds (scalars or per column, ``lower < upper``); data
        outside them is clipped. None: searched privately.
    data_range : float, default=1e6
        Used when ``bounds=None``: the public range ``[-data_range,
        data_range]`` searched (values outside it are clipped to it), from
        ``1e-120`` to below ``1e154/1.5``. A release whose private median of
        a feature lies beyond ``data_range/2`` warns.
    bounds_share : float, default=0.5
        Used when the bounds are searched: the share of μ² spent on them.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the noise; use None for anything you release.
    noise : {"fast", "secure"}, default="fast"
        The noise sampler (see :ref:`secure_noise`).

    Returns
    -------
    result : DPQuantiles
        ``(quantiles, privacy_spent)``.

    Notes
    -----
    **Guarantee.** (ε, δ)-DP under replace-one-record adjacency: every
    release is a ``d x K`` count matrix of L2 sensitivity ``sqrt(2 d)``
    (a replaced record leaves one bin and enters another in every column),
    with Gaussian noise; the releases compose exactly to μ-GDP with ``μ =
    mu_from_epsilon(ε, δ)`` (Dong, Roth & Su 2022). Public: n, d, the
    bounds or ``data_range``, the grids (chosen from public values and
    earlier noisy counts only).

    **Schedules.** With ``bounds``: one histogram with ``B`` equal bins on
    them, ``B = clip(n/(8·z_f·sqrt(2d)), 8, 1024)`` (public; ``z_f`` is the
    multiplier of the final release). Without, when
    ``n·μ/sqrt(2d) >= 100``: the four histograms of DPStandardScaler's
    bounds search (half of μ² by default), then one histogram with ``B``
    equal bins on the bounds found, two margin bins of an eighth of their
    width on each side, and the signed logarithmic bins (a factor
    ``sqrt(10)`` wide) beyond them, so a heavy tail is still seen; with
    less data, down to a ratio of 8, one histogram on the signed
    logarithmic grid locates each column (``bounds_share`` of μ²),
    then the same final histogram on the located bulk, whose equal bins
    weigh above half a noise standard deviation; below a ratio of 8, one
    histogram on the signed logarithmic grid alone (with a
    ``UserWarning``). On breast cancer's first two columns at ε = 1 the
    quartiles' ranks are within 0.11 of their levels in 90% of releases
    (one logarithmic bin gave the median at the 92nd percentile). A column
    far from 0 against its spread (a year) is located in one logarithmic
    bin only, and below the search's ratio its quantiles are off by
    hundreds of years (2001 to 2005 on 300 rows at ε = 1: 124 at the
    median): subtract a public offset first (``year - 2000``: 0.3), or give
    ``bounds``.

    **From counts to quantiles** (post-processing). A bin weighs its noisy
    count where that exceeds 2 noise standard deviations (0.5 for an equal bin
    of a located bulk, 3.5 for a logarithmic bin), else 0; the CDF is the
    cumulative weight over the total, linear within a bin, so it is monotone by
    construction and the quantiles are non-decreasing in q. ``q = 0`` and
    ``q = 1`` give the ends of the support seen through the noise, not the
    raw minimum and maximum (which no DP mechanism can release). A column with no
    bin above the noise is treated as spread evenly over its grid.

    **Accuracy.** The resolution is a bin: at most ``(upper - lower)/B``
    within the bounds; a quantile in the tails, where bins fall below the
    noise, is pulled toward the bulk. Bins have ``~8`` noise standard
    deviations of records each when the data fill the bounds evenly.

    References
    ----------
    .. [1] J. Dong, A. Roth, W. J. Su. "Gaussian differential privacy",
       JRSS-B 2022.
    .. [2] C. Dwork, A. Roth. "The algorithmic foundations of differential
       privacy", 2014, §3.3 (histograms).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import dp_quantiles
    >>> X = np.random.default_rng(0).normal([10.0, -500.0], [1.0, 50.0], (20000, 2))
    >>> result = dp_quantiles(X, [0.25, 0.5, 0.75], epsilon=1.0, delta=1e-6)
    >>> np.round(result.quantiles[1] / [1, 100])  # the medians, 10 and -500
    array([10., -5.])
    >>> round(result.privacy_spent.epsilon, 6)
    1.0
    """
    X, one_d = _check_data(X)
    n, d = X.shape
    q_arr = np.asarray(q, dtype=float)
    if q_arr.ndim > 1 or np.any(~(q_arr >= 0) | ~(q_arr <= 1)):
        raise ValueError("q must be a float or a 1-D array of floats in [0, 1].")
    if delta >= 1.0 / n:
        warnings.warn(
            f"delta={delta:g} is at least 1/n_samples = {1.0 / n:.3g}: use delta "
            "well below 1/n_samples.",
            PrivacyLeakWarning,
            stacklevel=6,  # the caller (through four decorators)
        )
    checked = None if bounds is None else _check_bounds(bounds, d)
    check_secure_seed(random_state, noise)
    seed = noise_seed_id(random_state)
    rng = as_generator(random_state, noise)
    release = release_cdf(
        X,
        epsilon=epsilon,
        delta=delta,
        bounds=checked,
        data_range=data_range,
        bounds_share=bounds_share,
        noise=noise,
        rng=rng,
        name="dp_quantiles",
        stacklevel=6,  # the caller of dp_quantiles (through four decorators)
        locate=True,
    )
    values, _ = release.quantiles(np.atleast_1d(q_arr))
    # (Below the search's smallest ratio the small-data warning says so.)
    if release.schedule not in ("given", "histogram") and not release.seen.all():
        warn_dropped(
            ~release.seen,
            "dp_quantiles",
            "their quantiles are those of a spread even over the public "
            "range [-data_range, data_range]",
            stacklevel=6,  # the caller of dp_quantiles (four decorators)
            target_hint=False,
        )
    if one_d:
        values = values[:, 0]
    if q_arr.ndim == 0:
        values = values[0]
    return DPQuantiles(
        values, _finish(release.cost, seed, random_state, noise, "dp_quantiles")
    )
