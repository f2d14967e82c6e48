"""Transformers built on private quantiles: DPQuantileTransformer,
DPRobustScaler, DPMinMaxScaler.

Each ``fit`` makes one private release of every feature's noisy CDF
(:func:`skdp.preprocessing._stats.release_cdf`: noisy histograms on grids
that read the data only through earlier noisy histograms) and reads the
quantiles it needs from it; everything after the release is post-processing.
"""

import math
import warnings
from numbers import Integral, Real

import numpy as np
from scipy.special import ndtr, ndtri
from sklearn.base import (
    BaseEstimator,
    OneToOneFeatureMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._base import (
    PRIVACY_CONSTRAINTS,
    DPEstimatorMixin,
    is_dask_array,
    private_fit,
    private_transform,
    require_positive_delta,
    warn_if_delta_is_large,
)
from .._inputs import validated_copy
from ..accounting import REPLACE_ONE, PrivacyCost
from ..mechanisms import as_generator
from ._scaler import DATA_RANGE_CONSTRAINT, _check_bounds, _feature_list, warn_dropped
from ._stats import release_cdf

#: The output of ``output_distribution="normal"`` is clipped to the normal
#: quantiles of ``1e-7`` and ``1 - 1e-7`` (about ±5.2), as scikit-learn's,
#: and of ``1/(2n)`` (see :meth:`_DPHistogramQuantiles._map`).
_NORMAL_CLIP = 1e-7


class _DPHistogramQuantiles(
    DPEstimatorMixin, OneToOneFeatureMixin, TransformerMixin, BaseEstimator
):
    """Shared fit of the transformers whose statistics are private quantiles."""

    _parameter_constraints = {
        **{k: v for k, v in PRIVACY_CONSTRAINTS.items() if k != "accounting"},
        "bounds": ["array-like", None],
        "data_range": [DATA_RANGE_CONSTRAINT],
        "bounds_share": [Interval(Real, 0, 1, closed="neither")],
    }

    def _audit_canary(self):
        """skdp.audit's default canary: a record moved between histogram bins."""
        return "HistogramCanary", {}

    def _validate_fit_data(self, X):
        require_positive_delta(self)
        if is_dask_array(X):  # map-reduce on the chunks; noise on the client
            from .. import _dask

            X, _ = _dask.validate(self, X, dtype=np.float64)
        else:
            X = validate_data(self, X, dtype=np.float64)
        n, d = X.shape
        bounds = None if self.bounds is None else _check_bounds(self.bounds, d)
        # The caller of fit: through this helper and fit's two decorators.
        warn_if_delta_is_large(self, n, stacklevel=6)
        return X, bounds

    def _release(self, X, bounds):
        """One private CDF release; sets the privacy attributes."""
        rng = as_generator(self.random_state, self.noise)
        release = release_cdf(
            X,
            epsilon=self.epsilon,
            delta=self.delta,
            bounds=bounds,
            data_range=self.data_range,
            bounds_share=self.bounds_share,
            noise=self.noise,
            rng=rng,
            name=type(self).__name__,
            stacklevel=5,  # the caller of fit (through fit's two decorators)
            feature_names=getattr(self, "feature_names_in_", None),
        )
        self.n_samples_seen_ = X.shape[0]
        # A searched grid on which no bin stood out for a feature leaves it
        # uniform over the public range: dropped (post-processing).
        dropped = np.zeros(X.shape[1], dtype=bool)
        if release.schedule != "given":
            dropped = ~release.seen
        if dropped.any():
            warn_dropped(
                dropped,
                type(self).__name__,
                "they are dropped (spread over the public range; inverse_transform "
                "gives their centre)",
                stacklevel=5,
                feature_names=getattr(self, "feature_names_in_", None),
            )
        self.dropped_features_ = dropped
        self.bin_edges_ = release.edges
        self.n_bins_ = release.sizes
        self.histogram_ = release.counts
        self.n_iter_ = release.n_iter
        self.noise_multiplier_ = release.noise_multiplier
        self.privacy_spent_ = release.cost
        return release

    def _nothing_released(self, n):
        self.n_samples_seen_ = n
        self.dropped_features_ = None
        self.bin_edges_ = self.n_bins_ = self.histogram_ = None
        self.n_iter_, self.noise_multiplier_ = 0, math.inf
        self.privacy_spent_ = PrivacyCost(
            0.0, 0.0, 0.0, REPLACE_ONE, f"{type(self).__name__}: nothing released"
        )

    def _check_transform_input(self, X):
        return validated_copy(self, X, dtype=np.float64)

    def _centre_dropped(self, X, centre):
        """``inverse_transform``'s output for the dropped features: ``centre``.

        Their statistics are spread over the whole public range, and mapping
        a model's output back through them (a TransformedTargetRegressor's
        prediction) would magnify its noise up to ``data_range``; the fit
        saw nothing of them, so every input maps to the centre.
        """
        if self.dropped_features_ is not None and self.dropped_features_.any():
            X[:, self.dropped_features_] = np.broadcast_to(centre, X.shape[1:])[
                self.dropped_features_
            ]
        return X


def _check_fraction_pair(pair, name, low, high):
    """``pair`` as two floats with ``low <= a < b <= high``, or a ValueError."""
    try:
        a, b = (float(v) for v in pair)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a pair of numbers; got {pair!r}.") from None
    if not (low <= a < b <= high):
        raise ValueError(
            f"{name} must satisfy {low} <= min < max <= {high}; got {pair!r}."
        )
    return a, b


def _warn_unresolved(spike, release, feature_names):
    """Warn of quantile ranges inside one bin of a grid on given bounds
    (post-processing of the release).

    On a searched grid the bins lie on the bulk found (±25% of its width),
    so a range inside one bin is a spike. On given bounds a narrow
    continuous column's range can be too (N(0.5, 0.01) on (0, 1) with 30
    bins); its scale is then 1 like a spike's, in the column's own units.
    """
    features = _feature_list(np.flatnonzero(spike), feature_names)
    widths = (release.edges[:, 1] - release.edges[:, 0])[spike]
    warnings.warn(
        f"DPRobustScaler: the quantile range of feature(s) {features} lies "
        f"inside one bin of the released histogram on the given bounds (bin "
        f"width {np.min(widths):.3g} or more): a spike (its range is 0, as "
        "scikit-learn finds for a binary column) or a spread narrower than a "
        "bin. Its scale is 1. Narrower bounds or more budget (more bins) "
        "resolve a narrow spread.",
        UserWarning,
        stacklevel=5,  # the caller of fit (through fit's two decorators)
    )


def _floor_scale(scale, resolution):
    """scikit-learn's zero-variance convention: a scale that is not above the
    public resolution (or not positive) becomes 1."""
    return np.where((scale > resolution) & (scale > 0), scale, 1.0)


_BOUNDS_DOC = """bounds : tuple (lower, upper) or None, default=None
        Public per-feature bounds (scalars or arrays of length
        ``n_features``, ``lower < upper``, ``2e-140 <= upper - lower <=
        2e154``); the
        data is clipped to them when the histogram is counted. None: the
        grid is searched privately inside ``[-data_range, data_range]``.
    data_range : float, default=1e6
        Used when ``bounds=None``: the public range searched (values outside
        it are clipped to it); it resolves spreads down to
        ``data_range·1e-12``; from ``1e-120`` to below ``1e154/1.5``. Its
        default does not depend on the data. A fit whose private median of a
        feature lies beyond ``data_range/2`` warns (a column of 10⁸ at the
        default is clipped to 10⁶ and keeps nothing of its spread).
    bounds_share : float, default=0.5
        Used when the bounds are searched: the share of the budget, in GDP
        terms (``μ_bounds² = bounds_share·μ²``), spent on them; the final
        histogram gets the rest."""

_PRIVACY_ATTRIBUTES_DOC = """n_samples_seen_ : int
        Number of records (public).
    bin_edges_ : ndarray of shape (n_features, K + 1)
        Each feature's grid of the final release (public: chosen from public
        values and earlier noisy counts); entries beyond ``n_bins_[j] + 1``
        repeat the last edge.
    n_bins_ : ndarray of shape (n_features,)
        Each feature's number of bins.
    histogram_ : ndarray of shape (n_features, K)
        The noisy counts of the final release (0 beyond ``n_bins_[j]``):
        everything else is post-processing of them.
    n_iter_ : int
        Gaussian releases: 1 (given bounds, or the one coarse histogram) or
        5 (the bounds search, then the final histogram).
    noise_multiplier_ : float
        The releases compose exactly to ``μ = sqrt(n_iter_) /
        noise_multiplier_``-GDP (replace one record; the sensitivity
        ``sqrt(2·n_features)`` of a count matrix is in the noise).
        The composition stated here is that of ``noise="fast"``. Secure noise
        is composed in zCDP instead: each release is ``(1/z + 2^-16)²/2``-zCDP
        for its own multiplier z (the grid rounding's slack,
        :func:`~skdp.accounting.secure_noise_cost`), and
        ``privacy_spent_.zcdp`` is their sum; a GDP accountant given this
        multiplier understates it.
    privacy_spent_ : PrivacyCost
        The exact guarantee of this fit.
    dropped_features_ : ndarray of shape (n_features,) of bool or None
        Features of a searched grid that no bin showed above the noise: their
        statistics span the public range (``transform`` gives about the
        middle of its output), ``inverse_transform`` gives their centre
        whatever its input, and the fit warns. None when nothing is released.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names."""

_GUARANTEE_DOC = """**Guarantee.** The fitted statistics are (ε, δ)-DP under
    *replace-one-record* adjacency (n is public). Every release is a ``d x
    K`` count matrix of the features on a grid; a replaced record leaves
    one bin and enters another in every feature, so its L2 sensitivity is
    exactly ``sqrt(2d)``, whatever the data and the grid; it gets i.i.d.
    Gaussian noise of std ``z_i·sqrt(2d)``. With given ``bounds``, one
    histogram of ``B = clip(n/(8·z_f·sqrt(2d)), 8, 1024)`` equal bins on
    them (public; ``z_f`` is the multiplier of the final release).
    Without, the grid is found by the bounds search of
    :class:`~skdp.preprocessing.DPStandardScaler` in its *extent* variant
    (round 1 counts ``|x|`` on a logarithmic grid, and the four rounds
    share the bounds' budget equally: a quantile grid needs a column's
    extent, not its bulk): when
    ``n·μ/sqrt(2d) >= 100``, the four histograms of that search, then
    one histogram with ``B`` equal bins on the bounds found, two margin
    bins of an eighth of their width on each side and the bins of the
    signed logarithmic grid (a factor ``sqrt(10)`` wide) beyond them (a
    heavy tail is still seen); with less data, one histogram on the
    signed logarithmic grid alone (with a ``UserWarning`` below a ratio of
    8). The releases compose exactly to μ-GDP with ``μ =
    mu_from_epsilon(ε, δ)`` (Dong, Roth & Su 2022), i.e. ``Σ 1/z_i² =
    1/z²``. See :func:`~skdp.preprocessing.dp_quantiles`.

    **Post-processing.** A bin weighs its noisy count where that exceeds 2
    noise standard deviations (3.5 for a logarithmic or margin bin, which
    on a searched grid must also be connected to the bulk, the fullest bin
    or a bin above 5 noise standard deviations), else 0; the CDF
    is the cumulative weight over the total, linear within a bin: monotone
    by construction. Quantiles are its generalised inverse. Nothing is read
    from the raw data outside the releases: not the minimum or maximum,
    not the number of clipped values. A feature with no bin above the noise
    is treated as spread evenly over its grid (in effect dropped)."""


class DPQuantileTransformer(_DPHistogramQuantiles):
    """Transform features to a uniform or normal distribution with private quantiles.

    As :class:`sklearn.preprocessing.QuantileTransformer`: each feature is
    mapped through an estimate of its CDF, so that its values spread evenly
    over [0, 1] (``output_distribution="uniform"``) or follow a standard
    normal (``"normal"``). The CDF is released privately: Gaussian-noised
    histograms of every feature, on grids that never read the raw data (see
    Notes). A monotone map robust to outliers and zero inflation, whatever
    the scale of the feature. A tail spanning decades is seen at the
    resolution of equal bins on the bounds found: most of a log-normal
    column with σ ≥ 3 falls in their first bins, and the map is coarse there
    (Kolmogorov distance of the uniform output 0.35-0.5 at n = 20000, d = 10,
    ε = 1); a row-wise log first, ``FunctionTransformer(np.log1p)`` on such
    columns, brings it to 0.03-0.1. Before a DP linear model
    use ``output_distribution="normal"``: the uniform output is not centred
    (on breast cancer, DPLogisticRegression at total ε = 1 scored 0.639
    after the uniform output, 0.921 after the normal one; see the
    preprocessing guide).

    Parameters
    ----------
    n_quantiles : int, default=1000
        Number of quantiles stored in ``quantiles_`` (the landmarks of the
        map); at most ``n_samples`` are used. More cost no privacy: they
        are read from the same release; the resolution is the histogram's.
    output_distribution : {{"uniform", "normal"}}, default="uniform"
        Marginal distribution of the transformed data.
    epsilon : float, default=1.0
        Privacy budget ε > 0 of one fit.
    delta : float, default=1e-5
        δ in (0, 1), well below ``1/n_samples`` (a
        :class:`~skdp.PrivacyLeakWarning` is raised at ``delta >= 1/n``).
    {bounds}
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the noise; use None in production (a known seed makes the
        noise predictable). Every fit given a seed draws the same noise: the
        fit warns, and :class:`~skdp.PrivacyLedger` refuses to total fits
        that share a seed.
    noise : {{"fast", "secure"}}, default="fast"
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
    n_quantiles_ : int
        ``min(n_quantiles, n_samples)``.
    quantiles_ : ndarray of shape (`n_quantiles_`, n_features)
        Private quantiles at ``references_`` (non-decreasing).
    references_ : ndarray of shape (`n_quantiles_`,)
        Quantile levels, evenly spaced on [0, 1].
    {attributes}

    See Also
    --------
    sklearn.preprocessing.QuantileTransformer : The non-private transformer.
    skdp.preprocessing.dp_quantiles : The quantiles alone.

    Notes
    -----
    {guarantee}

    **Transform.** As scikit-learn's: a value is mapped by linear
    interpolation between the landmarks (the average of the interpolations
    from the left and from the right, so that tied landmarks map to their
    middle), values beyond the first or last landmark to 0 or 1; with
    ``output_distribution="normal"`` then through the normal quantile
    function, clipped to the normal quantiles of ``1/(2n)`` and ``1 −
    1/(2n)`` (the middle of the extreme rank: about ±3.0 at n = 426, ±3.7
    at n = 5000; scikit-learn clips at about ±5.2, where it puts one
    value, and a noisy CDF can put a lump of a column). ``quantiles_[0]`` and
    ``quantiles_[-1]`` are the ends of the support seen through the noise,
    not the raw minimum and maximum.

    **Dask.** ``fit`` takes a ``dask.array.Array`` (dense row chunks): each
    histogram is one reduction over the chunks; ``transform`` returns a
    Dask array.

    **Cost.** Time O(n·d·log K) per release, memory O(n·d + d·K) beyond X
    (K ≤ 1024 + 49 bins; a zoom round of the search counts at most 4098).

    References
    ----------
    .. [1] J. Dong, A. Roth, W. J. Su. "Gaussian differential privacy",
       JRSS-B 2022.
    .. [2] C. Dwork, A. Roth. "The algorithmic foundations of differential
       privacy", 2014, §3.3 (histograms).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import DPQuantileTransformer
    >>> rng = np.random.default_rng(0)
    >>> X = np.column_stack([rng.lognormal(3, 1, 20000), rng.normal(-5, 0.1, 20000)])
    >>> qt = DPQuantileTransformer(epsilon=1.0, delta=1e-6, random_state=0).fit(X)
    >>> qt.quantiles_.shape, qt.n_iter_, round(qt.privacy_spent_.epsilon, 6)
    ((1000, 2), 5, 1.0)
    >>> np.round(np.median(qt.transform(X), axis=0), 1)
    array([0.5, 0.5])
    """

    _parameter_constraints = {
        **_DPHistogramQuantiles._parameter_constraints,
        "n_quantiles": [Interval(Integral, 1, None, closed="left")],
        "output_distribution": [StrOptions({"uniform", "normal"})],
    }

    def __init__(
        self,
        *,
        n_quantiles=1000,
        output_distribution="uniform",
        epsilon=1.0,
        delta=1e-5,
        bounds=None,
        data_range=1e6,
        bounds_share=0.5,
        random_state=None,
        noise="fast",
    ):
        self.n_quantiles = n_quantiles
        self.output_distribution = output_distribution
        self.epsilon = epsilon
        self.delta = delta
        self.bounds = bounds
        self.data_range = data_range
        self.bounds_share = bounds_share
        self.random_state = random_state
        self.noise = noise

    @private_fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Release the private quantiles with (``epsilon``, ``delta``)-DP.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (finite).
        y : None
            Ignored.

        Returns
        -------
        self : DPQuantileTransformer
            The fitted transformer.
        """
        X, bounds = self._validate_fit_data(X)
        release = self._release(X, bounds)
        self.n_quantiles_ = max(1, min(int(self.n_quantiles), X.shape[0]))
        self.references_ = np.linspace(0.0, 1.0, self.n_quantiles_)
        quantiles, _ = release.quantiles(self.references_)
        self.quantiles_ = np.maximum.accumulate(quantiles, axis=0)
        return self

    def _map(self, X, inverse):
        check_is_fitted(self)
        if is_dask_array(X):
            from .. import _dask

            method = self.inverse_transform if inverse else self.transform
            return _dask.map_rows(method, self, X)
        X = self._check_transform_input(X)
        normal = self.output_distribution == "normal"
        refs = self.references_
        # The normal output's ends (see below), which the inverse maps back
        # to the support's ends.
        level = max(_NORMAL_CLIP, 0.5 / self.n_samples_seen_)
        for j in range(X.shape[1]):  # a loop over features, never over samples
            landmarks = self.quantiles_[:, j]
            column = X[:, j]
            if inverse:
                if normal:
                    column = ndtr(column)
                    column = np.where(column >= 1 - level, 1.0, column)
                    column = np.where(column <= level, 0.0, column)
                X[:, j] = np.interp(column, refs, landmarks)
                continue
            # Average of the interpolations from the left and from the right,
            # so that tied landmarks (a spike) map to the middle of their
            # levels; beyond the ends np.interp gives 0 and 1.
            up = np.interp(column, landmarks, refs)
            down = -np.interp(-column, -landmarks[::-1], -refs[::-1])
            out = 0.5 * (up + down)
            out = np.where(column <= landmarks[0], 0.0, out)
            out = np.where(column >= landmarks[-1], 1.0, out)
            if landmarks[0] == landmarks[-1]:  # one point: its middle
                out = np.where(column == landmarks[0], 0.5, out)
            if normal:
                # The released CDF resolves ranks to 1/n at best, and can put
                # a lump of a column at 0 or 1 (the part its histogram did
                # not resolve: 64% of breast cancer's mean concave points at
                # ε = 0.7, where scikit-learn puts one value): the ends are
                # the middle of the extreme rank, 1/(2n) (n public), about
                # ±3.0 at n = 426 and ±3.7 at 5000 instead of ±5.2. The
                # private pipeline (ε = 1 / 2, 10 seeded splits, paired):
                # digits +0.043 / +0.025 accuracy, College +0.015 / +0.007
                # AUC, Carseats +0.017 / +0.043, breast cancer +0.003 /
                # +0.001, wine −0.002 / +0.038.
                out = ndtri(np.clip(out, level, 1 - level))
            X[:, j] = out
        return X

    @private_transform
    def transform(self, X):
        """Map ``X`` through the private CDF of each feature.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data.

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_features)
            Values in [0, 1] (``"uniform"``) or within the normal quantiles
            of ``1/(2n)`` and ``1 − 1/(2n)`` (``"normal"``).
        """
        return self._map(X, inverse=False)

    @private_transform
    def inverse_transform(self, X):
        """Map transformed values back through the private quantiles.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Transformed data.

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
            Values between ``quantiles_[0]`` and ``quantiles_[-1]``.
        """
        X = self._map(X, inverse=True)
        if is_dask_array(X):
            return X
        middle = self.quantiles_[0] / 2.0 + self.quantiles_[-1] / 2.0
        return self._centre_dropped(X, middle)


class DPRobustScaler(_DPHistogramQuantiles):
    """Scale features with a private median and interquartile range.

    As :class:`sklearn.preprocessing.RobustScaler`: ``transform`` is
    ``(x - center_) / scale_`` with ``center_`` the median and ``scale_``
    the range between the quantiles ``quantile_range`` (the interquartile
    range by default), statistics that outliers barely move. Both are read
    from one private release of every feature's CDF (see Notes).

    Parameters
    ----------
    with_centering : bool, default=True
        Subtract the median in ``transform``.
    with_scaling : bool, default=True
        Divide by the quantile range in ``transform``.
    quantile_range : tuple (q_min, q_max), default=(25.0, 75.0)
        Percentiles ``0 <= q_min < q_max <= 100`` of the range.
    unit_variance : bool, default=False
        Divide the scale by the range of the same quantiles of a standard
        normal, so that normal data gets unit variance. Needs ``0 < q_min``
        and ``q_max < 100`` (the normal's ends are infinite).
    epsilon : float, default=1.0
        Privacy budget ε > 0 of one fit.
    delta : float, default=1e-5
        δ in (0, 1), well below ``1/n_samples``.
    {bounds}
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the noise; use None in production (a known seed makes the
        noise predictable). Every fit given a seed draws the same noise: the
        fit warns, and :class:`~skdp.PrivacyLedger` refuses to total fits
        that share a seed.
    noise : {{"fast", "secure"}}, default="fast"
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
    center_ : ndarray of shape (n_features,) or None
        Private median (None when ``with_centering=False``).
    scale_ : ndarray of shape (n_features,) or None
        Private quantile range, always > 0 (None when
        ``with_scaling=False``); 1 where the range is not resolved (both of
        its ends in one equal-width bin of the released grid: on a searched
        grid, a spike, whose range scikit-learn finds 0; on given bounds,
        a spike or a spread narrower than a bin, with a warning), divided by
        the normal range with ``unit_variance=True`` as in scikit-learn.
    {attributes}

    See Also
    --------
    sklearn.preprocessing.RobustScaler : The non-private scaler.
    skdp.preprocessing.dp_quantiles : The quantiles alone.

    Notes
    -----
    {guarantee}

    **Zero range.** Within a bin the CDF is linear, so two quantiles in one
    bin would be apart by a share of its width (a scale of 0.009 for a
    binary column made its 1s 100). A range whose two ends fall in one
    equal-width bin, or that is not above the public resolution
    ``2·data_range·1e-12`` (searched grids: the width of the signed grid's
    zero bin, within which a spike at 0 falls; 0 with given bounds), is set
    to 1, scikit-learn's convention for a zero range (a constant feature,
    or a spike that holds both quantiles). On a searched grid the bins lie
    on the bulk found, so two quartiles in one bin are a spike; on given
    bounds a narrow continuous column's may be too, and the fit warns. At
    small budgets on loose given bounds that is most continuous columns
    (the noise lets one bin alone stand out): breast cancer with bounds at
    the training data's range ±10% and a DPLogisticRegression after it, at
    ε = 1 in total, 0.835 against 0.929 without the rule and 0.911 with
    ``bounds=None`` (20 splits; a review); give tight bounds or more
    budget, or leave ``bounds=None``. (A test of the bin's share of the
    records did not tell the two apart: 0.863.) With neither centering nor
    scaling nothing is released and nothing is spent.

    **Dask.** ``fit`` takes a ``dask.array.Array`` (dense row chunks); each
    histogram is one reduction over the chunks.

    References
    ----------
    .. [1] J. Dong, A. Roth, W. J. Su. "Gaussian differential privacy",
       JRSS-B 2022.
    .. [2] C. Dwork, A. Roth. "The algorithmic foundations of differential
       privacy", 2014, §3.3 (histograms).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import DPRobustScaler
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_cauchy((20000, 2)) * [1.0, 100.0] + [0.0, 5000.0]
    >>> scaler = DPRobustScaler(epsilon=1.0, delta=1e-6, random_state=0).fit(X)
    >>> np.round(scaler.center_ / [1, 100]) + 0.0  # medians 0 and 5000
    array([ 0., 50.])
    >>> np.round(scaler.scale_ / [1, 100])  # interquartile ranges 2 and 200
    array([2., 2.])
    """

    _parameter_constraints = {
        **_DPHistogramQuantiles._parameter_constraints,
        "with_centering": ["boolean"],
        "with_scaling": ["boolean"],
        "quantile_range": [tuple],
        "unit_variance": ["boolean"],
    }

    def __init__(
        self,
        *,
        with_centering=True,
        with_scaling=True,
        quantile_range=(25.0, 75.0),
        unit_variance=False,
        epsilon=1.0,
        delta=1e-5,
        bounds=None,
        data_range=1e6,
        bounds_share=0.5,
        random_state=None,
        noise="fast",
    ):
        self.with_centering = with_centering
        self.with_scaling = with_scaling
        self.quantile_range = quantile_range
        self.unit_variance = unit_variance
        self.epsilon = epsilon
        self.delta = delta
        self.bounds = bounds
        self.data_range = data_range
        self.bounds_share = bounds_share
        self.random_state = random_state
        self.noise = noise

    @private_fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Release the median and quantile range with (``epsilon``, ``delta``)-DP.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (finite).
        y : None
            Ignored.

        Returns
        -------
        self : DPRobustScaler
            The fitted scaler.
        """
        q_min, q_max = _check_fraction_pair(
            self.quantile_range, "quantile_range", 0.0, 100.0
        )
        normal_range = ndtri(q_max / 100.0) - ndtri(q_min / 100.0)
        if self.unit_variance and self.with_scaling and not np.isfinite(normal_range):
            # A standard normal's 0th and 100th percentiles are infinite (and
            # 1e-322/100 underflows to 0): the scale would be 0 (scikit-learn's
            # RobustScaler does that).
            raise ValueError(
                "unit_variance=True needs a quantile_range strictly inside "
                f"(0, 100); got {self.quantile_range!r}."
            )
        X, bounds = self._validate_fit_data(X)
        if not (self.with_centering or self.with_scaling):
            self.center_ = self.scale_ = None
            self._nothing_released(X.shape[0])
            return self
        release = self._release(X, bounds)
        values, _ = release.quantiles([0.5, q_min / 100.0, q_max / 100.0])
        median, low, high = values
        self.center_ = median if self.with_centering else None
        if self.with_scaling:
            # Both ends of the range inside one equal-width bin: a spike (a
            # binary, integer-coded or zero-inflated column) whose range is
            # 0 for scikit-learn, interpolated a fraction of the bin apart (a
            # scale of 0.009 for a binary column made its 1s 100). It gets
            # scikit-learn's range of 1. (On the coarse logarithmic bins a
            # narrow continuous column's range is also inside one bin, and
            # the interpolation is the better estimate there.)
            spike = release.in_one_fine_bin(q_min / 100.0, q_max / 100.0)
            if release.schedule == "given" and spike.any():
                _warn_unresolved(
                    spike, release, getattr(self, "feature_names_in_", None)
                )
            scale = _floor_scale(np.where(spike, 0.0, high - low), release.resolution)
            if self.unit_variance:  # as scikit-learn, after the zero-range rule
                scale = scale / normal_range
            self.scale_ = scale
        else:
            self.scale_ = None
        return self

    @private_transform
    def transform(self, X):
        """Centre and scale ``X`` with the private ``center_`` and ``scale_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data (not clipped).

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        if is_dask_array(X):
            from .. import _dask

            return _dask.map_rows(self.transform, self, X)
        X = self._check_transform_input(X)
        if self.with_centering:
            X -= self.center_
        if self.with_scaling:
            X /= self.scale_
        return X

    @private_transform
    def inverse_transform(self, X):
        """Undo :meth:`transform`: ``X * scale_ + center_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Scaled data.

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        if is_dask_array(X):
            from .. import _dask

            return _dask.map_rows(self.inverse_transform, self, X)
        X = self._check_transform_input(X)
        if self.with_scaling:
            X *= self.scale_
        if self.with_centering:
            X += self.center_
        return self._centre_dropped(X, self.center_ if self.with_centering else 0.0)


class DPMinMaxScaler(_DPHistogramQuantiles):
    """Scale features to a range with private low and high quantiles.

    As :class:`sklearn.preprocessing.MinMaxScaler`: ``transform`` maps
    ``data_min_`` to ``feature_range[0]`` and ``data_max_`` to
    ``feature_range[1]``, linearly. The raw minimum and maximum are as
    sensitive as a statistic can be (one record sets them), so no DP
    mechanism releases them: ``data_min_`` and ``data_max_`` are the private
    quantiles ``quantile_range`` (the 1st and 99th percentiles by default),
    read from one private release of every feature's CDF (see Notes).

    **Before a DP linear model**, prefer
    :class:`~skdp.preprocessing.DPStandardScaler`: the models' clips and
    step sizes are set for standardised features, and features in [0, 1]
    are neither centred nor of unit spread (on breast
    cancer, DPLogisticRegression at total ε = 1 scored 0.876 after
    ``DPMinMaxScaler()``, 0.939 with ``feature_range=(-1, 1)`` and 0.941
    after DPStandardScaler; see the preprocessing guide).

    Parameters
    ----------
    feature_range : tuple (min, max), default=(0, 1)
        Desired range of the transformed data, ``min < max``, finite.
    clip : bool, default=False
        Clip transformed values to ``feature_range`` (values beyond the
        quantiles fall outside it otherwise). With little data for the
        budget (one histogram on the logarithmic grid), a column that is 0
        in about 99% of rows can get both quantiles from bins next to 0,
        one of them a bin of noise: a range near 1e-5, and a 1 transformed
        to 1e5 (ISLP Caravan at ε = 0.7, a user trial). Give such columns
        public ``bounds``, or ``clip=True`` with ``feature_range=(-1, 1)``
        (on breast cancer at total ε = 1 that scored 0.933 against 0.930
        unclipped; with ``(0, 1)`` clipping cost 0.16).
    quantile_range : tuple (q_min, q_max), default=(1.0, 99.0)
        Percentiles ``0 <= q_min < q_max <= 100`` that stand in for the
        minimum and maximum. ``(0, 100)`` gives the ends of the support
        seen through the noise, which a bin of noise alone above the
        threshold can stretch; a margin of a percent keeps them in the bulk.
    epsilon : float, default=1.0
        Privacy budget ε > 0 of one fit.
    delta : float, default=1e-5
        δ in (0, 1), well below ``1/n_samples``.
    {bounds}
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the noise; use None in production (a known seed makes the
        noise predictable). Every fit given a seed draws the same noise: the
        fit warns, and :class:`~skdp.PrivacyLedger` refuses to total fits
        that share a seed.
    noise : {{"fast", "secure"}}, default="fast"
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
    min_ : ndarray of shape (n_features,)
        ``feature_range[0] - data_min_ * scale_``.
    scale_ : ndarray of shape (n_features,)
        ``(feature_range[1] - feature_range[0]) / data_range_``.
    data_min_ : ndarray of shape (n_features,)
        Private quantile ``quantile_range[0]``.
    data_max_ : ndarray of shape (n_features,)
        Private quantile ``quantile_range[1]``.
    data_range_ : ndarray of shape (n_features,)
        ``data_max_ - data_min_``, set to 1 where it is not above the public
        resolution ``2·data_range·1e-12`` (searched grids; 0 with given
        bounds): scikit-learn's convention for a constant feature. Not
        the ``data_range`` parameter (the public range searched).
    {attributes}

    See Also
    --------
    sklearn.preprocessing.MinMaxScaler : The non-private scaler.
    skdp.preprocessing.dp_quantiles : The quantiles alone.

    Notes
    -----
    {guarantee}

    **Dask.** ``fit`` takes a ``dask.array.Array`` (dense row chunks); each
    histogram is one reduction over the chunks.

    References
    ----------
    .. [1] J. Dong, A. Roth, W. J. Su. "Gaussian differential privacy",
       JRSS-B 2022.
    .. [2] C. Dwork, A. Roth. "The algorithmic foundations of differential
       privacy", 2014, §3.3 (histograms).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import DPMinMaxScaler
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform([0.0, -1e4], [1.0, 1e4], size=(20000, 2))
    >>> scaler = DPMinMaxScaler(epsilon=1.0, delta=1e-6, random_state=0).fit(X)
    >>> np.round(scaler.data_min_ / [1, 1e4], 1)
    array([ 0., -1.])
    >>> np.round(scaler.data_max_ / [1, 1e4], 1)
    array([1., 1.])
    >>> Xt = scaler.transform(X)
    >>> bool(Xt.min() > -0.05 and Xt.max() < 1.05)
    True
    """

    _parameter_constraints = {
        **_DPHistogramQuantiles._parameter_constraints,
        "feature_range": [tuple],
        "clip": ["boolean"],
        "quantile_range": [tuple],
    }

    def __init__(
        self,
        *,
        feature_range=(0, 1),
        clip=False,
        quantile_range=(1.0, 99.0),
        epsilon=1.0,
        delta=1e-5,
        bounds=None,
        data_range=1e6,
        bounds_share=0.5,
        random_state=None,
        noise="fast",
    ):
        self.feature_range = feature_range
        self.clip = clip
        self.quantile_range = quantile_range
        self.epsilon = epsilon
        self.delta = delta
        self.bounds = bounds
        self.data_range = data_range
        self.bounds_share = bounds_share
        self.random_state = random_state
        self.noise = noise

    @private_fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Release the low and high quantiles with (``epsilon``, ``delta``)-DP.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (finite).
        y : None
            Ignored.

        Returns
        -------
        self : DPMinMaxScaler
            The fitted scaler.
        """
        low, high = _check_fraction_pair(
            self.feature_range, "feature_range", -math.inf, math.inf
        )
        if not math.isfinite(high - low):
            raise ValueError(
                "feature_range must be finite, with a width below the largest "
                f"float; got {self.feature_range!r}."
            )
        q_min, q_max = _check_fraction_pair(
            self.quantile_range, "quantile_range", 0.0, 100.0
        )
        X, bounds = self._validate_fit_data(X)
        release = self._release(X, bounds)
        (data_min, data_max), _ = release.quantiles([q_min / 100.0, q_max / 100.0])
        self.data_min_, self.data_max_ = data_min, data_max
        self.data_range_ = _floor_scale(data_max - data_min, release.resolution)
        self.scale_ = (high - low) / self.data_range_
        self.min_ = low - data_min * self.scale_
        return self

    @private_transform
    def transform(self, X):
        """Scale ``X`` to ``feature_range``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data.

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        if is_dask_array(X):
            from .. import _dask

            return _dask.map_rows(self.transform, self, X)
        X = self._check_transform_input(X)
        X *= self.scale_
        X += self.min_
        if self.clip:
            np.clip(X, self.feature_range[0], self.feature_range[1], out=X)
        return X

    @private_transform
    def inverse_transform(self, X):
        """Undo :meth:`transform` (up to clipping).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Scaled data.

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self)
        if is_dask_array(X):
            from .. import _dask

            return _dask.map_rows(self.inverse_transform, self, X)
        X = self._check_transform_input(X)
        X -= self.min_
        X /= self.scale_
        return self._centre_dropped(X, self.data_min_ / 2.0 + self.data_max_ / 2.0)


for _cls in (DPQuantileTransformer, DPRobustScaler, DPMinMaxScaler):
    _cls.__doc__ = _cls.__doc__.format(
        bounds=_BOUNDS_DOC,
        attributes=_PRIVACY_ATTRIBUTES_DOC,
        guarantee=_GUARANTEE_DOC,
    )
