"""DPGaussianNB: Gaussian naive Bayes from one joint Gaussian release."""

import math
from numbers import Real

import numpy as np
from scipy.special import logsumexp
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted, validate_data

from .._base import (
    PRIVACY_CONSTRAINTS,
    DaskScoreMixin,
    DPEstimatorMixin,
    check_targets,
    class_indices,
    is_dask_array,
    label_set,
    labels_in,
    private_fit,
    require_positive_delta,
    sum_over_rows,
    warn_if_delta_is_large,
)
from ..accounting import REPLACE_ONE, gaussian_cost, split_gaussian_budget
from ..mechanisms import as_generator, gaussian_mechanism
from ..preprocessing._quantiles import (
    N_BOUND_RELEASES,
    private_bounds,
    private_histogram_scale,
    signed_grid,
)
from ..preprocessing._scaler import (
    _MIN_SNR,
    _QUANTILE_SEARCH_SNR,
    DATA_RANGE_CONSTRAINT,
    GAMMA,
    _center_half_width,
    _check_bounds,
    bounds_schedule,
    histogram_snr,
    normalise,
    warn_dropped,
    warn_if_near_range,
)

#: Shift of the squares in the release: ``z² - 1/8`` lies in ``[-1/8, 1/8]``
#: for ``z`` in ``[-1/2, 1/2]``, which is what lets a record that moves to
#: another class cost no more than one that stays (see
#: :func:`class_moment_sensitivity`).
SHIFT = 0.125
#: The bounds are found on every ``k``-th row, ``k = floor(snr/_BOUNDS_SNR)``
#: (``snr`` the public ratio ``n·μ/sqrt(2d)`` of the whole budget): ten
#: times the ratio from which the search runs is plenty for bounds, and the
#: four histograms then cost little next to the one pass of the release
#: (issue 31: a fit within 2× of scikit-learn's at n = 10⁶).
_BOUNDS_SNR = 10.0 * _QUANTILE_SEARCH_SNR
#: Share of μ² spent on the feature histogram of ``select_features=True``:
#: it only has to tell the features seen at 0 alone. Measured on digits at
#: ε = 1 with bounds (0, 16) (20 splits × 3 fits): 0.825 at 0.1, 0.826 at
#: 0.15, 0.822 at 0.2, 0.807 at 0.3, 0.796 at 0.4 (0.794 without selection).
_SELECT_SHARE = 0.15
#: Bins per decade of the one-histogram bounds (finer than the scaler's 2:
#: naive Bayes needs the extent of the data, not its scale), and below the
#: public ratio ``_MIN_SNR`` the scaler's 2, whose wider bins hold enough
#: records to stand out of the noise. Measured at ε = 1 (30 fits each):
#: digits (ratio 32) 0.75 at 4, 0.69 at 3, 0.59 at 2 per decade; wine
#: (ratio 7) 0.53 at 4, 0.60 at 2; breast cancer (ratio 15) 0.93 at 2-4.
_PER_DECADE = 4
_PER_DECADE_SMALL = 2


def count_weight(n_features):
    """Weight ``sqrt(d/8)`` of the class counts in the joint release."""
    return math.sqrt(n_features / 8.0)


def class_moment_sensitivity(n_features):
    """L2 sensitivity ``sqrt(d)`` of the joint release under replace-one.

    The release is, for every class k, the vector
    ``(w·n_k, Σ_{i∈k} z_i, γ·Σ_{i∈k} (z_i² − 1/8))`` with ``z`` in
    ``[-1/2, 1/2]^d``, ``γ = 2√2`` and ``w = sqrt(d/8)``. Replace a record
    ``(x, a)`` by ``(x', b)``:

    * ``a = b``: the counts do not move and the shifts cancel; per feature
      the change ``(z − z', γ(z² − z'²))`` has squared norm
      ``u²(1 + 8v²) <= 1`` (``u = |z − z'|``, ``v = |z + z'|``, ``u + v <=
      1``; see :func:`skdp.preprocessing._scaler.moment_sensitivity`), so at
      most ``d`` in all;
    * ``a != b``: class a loses the record's vector and class b gains the
      other's, disjoint coordinates: squared norm ``2w² + Σ_j f(z_j²) +
      Σ_j f(z'_j²)`` with ``f(t) = t + γ²(t − 1/8)²``, convex in ``t`` on
      ``[0, 1/4]``, so at most ``max(f(0), f(1/4)) = max(1/8, 3/8) = 3/8``:
      in all at most ``2·d/8 + 2·(3/8)·d = d``.

    Both cases reach ``d`` (every ``|z_j| = 1/2``), so ``sqrt(d)`` is exact.

    No other weighting gives the sums less noise: the sums alone already
    have sensitivity ``sqrt(d)`` (same class, every ``z_j`` from ``-1/2`` to
    ``1/2``, where the squares do not move), so the counts and squares ride
    free and a reweighting can only trade the noise of the counts against
    that of the squares (a shift of 3/16 instead of 1/8 would allow ``w² =
    7d/32``; measured on digits, breast cancer and wine at ε = 1, no change
    in accuracy).
    """
    return math.sqrt(n_features)


def class_moment_sums(X, y, *, classes, lower, upper):
    """The joint release before noise: length ``K + 2·K·d``, see Notes of DPGaussianNB.

    ``(w·n_k)_k``, then ``(Σ_{i∈k} z_ij)_{k,j}``, then
    ``(γ·Σ_{i∈k} (z_ij² − 1/8))_{k,j}`` (row-major, k outer). A sum over
    rows: the fit calls it on (X, y), or on every row chunk of a Dask X and y
    (see :func:`skdp._base.sum_over_rows`).
    """
    n_classes, d = classes.size, X.shape[1]
    index = class_indices(y, classes)
    Z = normalise(X, lower, upper)
    counts = np.bincount(index, minlength=n_classes).astype(np.float64)
    onehot = np.zeros((Z.shape[0], n_classes))
    onehot[np.arange(Z.shape[0]), index] = 1.0
    sums = onehot.T @ Z
    squares = onehot.T @ np.square(Z, out=Z) - SHIFT * counts[:, None]
    return np.concatenate(
        [count_weight(d) * counts, sums.ravel(), GAMMA * squares.ravel()]
    )


class DPGaussianNB(DaskScoreMixin, DPEstimatorMixin, ClassifierMixin, BaseEstimator):
    """Gaussian naive Bayes with differentially private counts, means and variances.

    The class counts and the per-class sums and sums of squares of the
    clipped features are released together in one Gaussian release of L2
    sensitivity ``sqrt(d)`` (replace one record, which may change its
    class); the class priors, means ``theta_`` and variances ``var_`` are
    computed from it, and prediction is that of
    :class:`sklearn.naive_bayes.GaussianNB` on features clipped to the
    same bounds.

    The bounds are either given (public, and the whole budget goes to the
    release) or found privately, as :class:`~skdp.preprocessing.DPStandardScaler`
    finds them: a share ``bounds_share`` of the budget is spent on noisy
    histograms of every feature (one histogram when the public ratio
    ``n·μ/sqrt(2d)`` is below 100, four rounds of a search above it).

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget ε > 0 of one fit (bounds, counts, means and variances
        together).
    delta : float, default=1e-5
        Privacy parameter δ in (0, 1); should be well below ``1/n_samples``
        (a :class:`~skdp.PrivacyLeakWarning` is raised at ``delta >= 1/n``).
    classes : array-like of shape (n_classes,), default=None
        The label set, declared in advance. If None it is read from ``y``
        and treated as public (a :class:`~skdp.PrivacyLeakWarning` says so,
        and ``privacy_spent_.caveats`` records it).
    priors : array-like of shape (n_classes,), default=None
        Prior probabilities of the classes (ordered as the sorted
        ``classes_``), public. None: the private class frequencies.
    var_smoothing : float, default=1e-9
        As in scikit-learn: ``var_smoothing`` times the largest (private)
        variance of a feature is added to every variance.
    bounds : tuple (lower, upper) or None, default=None
        Public per-feature bounds: each a scalar or an array of length
        ``n_features``, ``lower < upper``, both finite and ``2e-140 <=
        upper - lower <= 2e154``. Data outside them is clipped (in ``fit`` and in
        ``predict``). None: found privately with a share of the budget.
        Only bounds known without looking at the data are public: e.g.
        ``(0, 16)`` for :func:`sklearn.datasets.load_digits`, whose pixels
        count the set bits of 4x4 blocks (by the data set's construction).
    data_range : float, default=1e6
        Used when ``bounds=None``: the public range ``[-data_range,
        data_range]`` in which the bounds are searched (as in
        :class:`~skdp.preprocessing.DPStandardScaler`), from ``1e-120`` to
        below ``1e154/1.5``. A fit whose private mean of a feature (in any
        class) lies beyond ``data_range/2`` warns.
    bounds_share : float, default=0.4
        Used when ``bounds=None``: the share of the budget, in GDP terms
        (``μ_bounds² = bounds_share·μ²``), spent on finding the bounds.
    select_features : bool, default=False
        Used with given ``bounds``: if True, 15% of the budget (GDP terms,
        ``μ_select² = 0.15·μ²``) pays for one noisy histogram of every
        feature clipped to the bounds (the one ``bounds=None`` uses on small
        data), and the features it sees only at 0 (blank pixels: constant 0,
        or 0 but for a tail the noise hides) are left out of the release, as
        with ``bounds=None``. The release's sensitivity is the square root of
        the number of features kept, so the others get less noise: on digits
        at ε = 1 with ``bounds=(0, 16)``, 0.79 without and 0.82 with it (see
        Notes, Utility). Features the histogram does not see at all (spread
        too thin for the noise) are kept.
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
    classes_ : ndarray of shape (n_classes,)
        Class labels (the declared ``classes``, sorted, or those in y).
    class_count_ : ndarray of shape (n_classes,)
        Private number of training records per class (post-processed: shifted
        equally to add up to n, then floored at 0, so they may add up to a
        little more than n).
    class_prior_ : ndarray of shape (n_classes,)
        ``priors``, or the private class frequencies.
    theta_ : ndarray of shape (n_classes, n_features)
        Private mean of each feature per class (of the clipped data).
    var_ : ndarray of shape (n_classes, n_features)
        Private variance of each feature per class, at least the noise level
        of its release, plus ``epsilon_``.
    epsilon_ : float
        The variance added for stability: ``var_smoothing`` times the
        largest private variance of a feature (all classes together).
    bounds_ : ndarray of shape (2, n_features)
        The clipping bounds (given, or private output of the search).
    dropped_features_ : ndarray of shape (n_features,), dtype bool
        Features left out of the release because the private histogram saw
        them as constant or not at all (public by post-processing); they get
        the same mean and variance in every class, so they do not affect
        predictions. The fit warns of those it did not see at all.
    n_iter_ : int
        Number of Gaussian releases: 1 with given bounds (2 with
        ``select_features=True``: one histogram, then the moments); 2 with
        ``bounds=None`` and ``n·μ/sqrt(2d) < 100`` (one histogram, then the
        moments); 5 above (four histograms, then the moments).
    noise_multiplier_ : float
        The releases compose exactly to ``μ = sqrt(n_iter_) /
        noise_multiplier_``-GDP: composing ``GaussianDpEvent(noise_multiplier_)``
        ``n_iter_`` times (add/remove relation; the replace-one factor is in
        the sensitivities) reproduces the guarantee.
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
    sklearn.naive_bayes.GaussianNB : The non-private model.
    skdp.preprocessing.DPStandardScaler : The same bounds and moments, one class.

    Notes
    -----
    **Guarantee.** ``theta_``, ``var_``, ``class_count_``, ``class_prior_``,
    ``epsilon_``, ``bounds_`` and ``dropped_features_`` together are (ε, δ)-DP
    under *replace-one-record* adjacency (a replaced record may change its
    label as well as its features; n is public): they come from
    ``n_iter_`` Gaussian releases that compose exactly to μ-GDP with ``μ =
    mu_from_epsilon(ε, δ)`` (Dong, Roth & Su 2022, Cor. 3.3), the bounds
    releases with ``μ_b² = bounds_share·μ²`` (with given bounds and
    ``select_features=True``, the feature histogram with ``0.15·μ²``) and
    the moments with the rest.

    **The joint release.** With features normalised to
    ``z = (clip(x, l, u) − (l + u)/2) / (u − l)`` in ``[-1/2, 1/2]``, the fit
    releases, for every class k, ``w·n_k``, the d sums ``Σ_{i∈k} z_ij`` and the
    d shifted sums of squares ``γ·Σ_{i∈k} (z_ij² − 1/8)``, with ``γ = 2√2`` and
    ``w = sqrt(d/8)``: ``K·(2d + 1)`` numbers with Gaussian noise of standard
    deviation ``σ = z_m·sqrt(d)``, where ``sqrt(d)`` is their exact L2
    sensitivity under replace-one and ``z_m`` the release's noise multiplier
    (``z = 1/μ`` with given bounds, ``z/sqrt(1 − bounds_share)`` after private
    ones, ``z/sqrt(0.85)`` after the feature histogram). *Proof.* Replace
    ``(x, a)`` by ``(x', b)``. If ``a = b`` the counts stay and the shift
    cancels: per feature the change ``(z − z', γ(z² − z'²))`` has squared norm
    ``u²(1 + 8v²)`` with ``u = |z − z'|``, ``v = |z + z'|``, ``u + v <= 1``; on
    ``u = 1 − v`` it is ``g(v) = (1 − v)²(1 + 8v²)``,
    ``g'(v) = −2(1 − v)(1 − 4v)² <= 0``, so at most ``g(0) = 1``: ``d`` over the
    features. If ``a != b`` the record's vector leaves class a and the new one
    enters class b (disjoint coordinates): ``2w² + Σ_j [f(z_j²) + f(z'_j²)]``
    with ``f(t) = t + 8(t − 1/8)²``, convex, so ``f <= max(f(0), f(1/4)) = 3/8``
    on ``[0, 1/4]``: at most ``d/4 + 3d/4 = d``. Both bounds are reached (all
    ``|z_j| = 1/2``). The weights make the counts and squares free: without the
    shift a record changing class would cost ``3d/2 + 2w²``. ∎

    **The bounds.** Given: public, no budget. ``bounds=None``: as in
    :class:`~skdp.preprocessing.DPStandardScaler` (see its Notes). At a
    public ratio ``n·μ/sqrt(2d)`` of at least 100, the four-round search,
    run on every ``k``-th row with ``k = floor(n·μ/(1000·sqrt(2d)))`` when
    that is 2 or more (a fixed subset chosen from public values: a replaced
    record moves its histograms by at most ``sqrt(2d)``, as on all rows, and
    the bounds need no more records than that; at n = 10⁶ this is what keeps
    the fit near scikit-learn's speed);
    below it, one ``d x 97`` histogram of every feature on a public signed
    grid (4 bins per decade over ``[data_range·1e-12, data_range]`` on each
    side, and a zero bin; 2 per decade, ``d x 49``, below a ratio of 8, so
    that a bin holds enough records to stand out of the noise), L2
    sensitivity ``sqrt(2d)``; the bounds span the
    bins whose noisy count exceeds 3.5 noise standard deviations. A feature
    the histogram sees only in the zero bin (constant 0 up to the noise: the
    blank pixels of digits) or not at all is dropped: left out of the moment
    release (so ``d`` above counts the kept features only: a choice made
    from the histogram's noisy output, so the two releases compose
    adaptively), and given mean 0 and variance ``data_range²`` in every
    class. Below a ratio of 8 the fit warns.

    **Selecting features with given bounds** (``select_features=True``).
    The same one histogram, of X clipped to the bounds, on the signed grid
    over ``[-r, r]`` with ``r = max(|l_j|, |u_j|)`` (public), with
    ``μ_s² = 0.15·μ²``; a feature whose only significant bin is the zero bin
    is dropped as above (a feature with no significant bin at all is kept:
    its bounds are given). Then the moments on the kept features, with the
    rest of the budget: two releases, composed as above. Worth it when many
    features are blank (digits: about 25 of 64 pixels), so that the
    release's ``sqrt(d)`` shrinks.

    **Post-processing.** ``class_count_``: the noisy counts, shifted
    equally to add up to n and floored at 0. Per class and feature, with
    ``n_k = max(class_count_k, 1)``: ``m`` the noisy mean of z clipped to
    ``[-1/2, 1/2]``, ``s`` the noisy mean of z² clipped to ``[0, 1/4]``;
    ``theta_ = (l + u)/2 + (u − l)·m``, ``var_ = (u − l)²·max(s − m², f_k) +
    epsilon_`` with the floor ``f_k = σ/(γ·n_k)`` (the noise standard
    deviation of ``s``, at least 1e-12), DPStandardScaler's convention: a
    constant feature, or one whose variance the noise hides, gets a small
    positive variance. ``epsilon_`` is ``var_smoothing`` times the largest
    variance of a feature computed from the noisy totals over classes.
    ``predict`` clips X to ``bounds_`` (the model describes the clipped data:
    a value beyond the bounds would otherwise be scored against variances
    that never saw it) and then scores as scikit-learn's ``GaussianNB``.

    **Public.** n, d, the label set (``classes``, or the labels present in
    y: the caveat), ``priors``, the given ``bounds`` and ``data_range``.
    Nothing else read from the data is kept: not the number of clipped
    values, not a minimum or maximum. Error messages never quote data
    values.

    **Utility.** Default parameters, ε = 1, 25% held out (60 fits,
    ``benchmarks/bench_naive_bayes.py``): breast cancer 0.93 (scikit-learn
    0.94), digits 0.75 (0.85; 0.85 at ε = 2), wine 0.57 (0.97);
    diffprivlib's GaussianNB, handed the data's own bounds, 0.56, 0.17 and
    0.47. On digits with its public pixel range, ``bounds=(0, 16)``: 0.79,
    and 0.82 with ``select_features=True``. The means stand out of the noise
    when ``n_k·μ`` is well above ``sqrt(d)`` for every class; the noise of
    the means, not of the variances, limits the accuracy (on digits, the
    same noisy means with any constant variance score the same).

    **Caveats.** Noise is drawn with numpy floating point, which is not
    hardened against the attacks of Mironov (2012) (``noise="secure"`` is).
    Fitting the same data again spends budget again: compose with
    :class:`skdp.PrivacyLedger`. Dense input only.

    **Dask.** ``fit`` also takes a ``dask.array.Array`` X (dense chunks
    along rows) with y chunked alike: the histograms and the class moment
    sums are each one reduction over the chunks (a few floats per chunk);
    the noise is drawn on the client, so the guarantee is that of the
    in-memory fit. ``predict`` and the other methods return Dask arrays.

    **Cost.** Time O(n·d·K) for the release (one matrix product), plus
    O(n·d) per histogram; memory O(n·(d + K)) beyond X.

    References
    ----------
    .. [1] J. Dong, A. Roth, W. J. Su. "Gaussian differential privacy",
       JRSS-B 2022 (Cor. 3.3: composition of Gaussian mechanisms).
    .. [2] C. Dwork, A. Roth. "The algorithmic foundations of differential
       privacy", 2014, §3.5 (the Gaussian mechanism) and §3.3 (histograms).
    .. [3] J. Vaidya, B. Shafiq, A. Basu, Y. Hong. "Differentially private
       naive Bayes classification", WI-IAT 2013 (per-class noisy counts,
       means and variances; Laplace noise, one budget per statistic).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.naive_bayes import DPGaussianNB
    >>> rng = np.random.default_rng(0)
    >>> y = rng.integers(0, 2, size=20000)
    >>> X = rng.normal(size=(20000, 3)) + 2.0 * y[:, None]
    >>> clf = DPGaussianNB(
    ...     epsilon=1.0, delta=1e-6, classes=[0, 1], random_state=0
    ... ).fit(X, y)
    >>> np.round(clf.theta_) + 0.0  # + 0.0: no signed zeros
    array([[0., 0., 0.],
           [2., 2., 2.]])
    >>> clf.n_iter_, round(clf.privacy_spent_.epsilon, 6)
    (5, 1.0)
    >>> bool(clf.score(X, y) > 0.9)
    True
    """

    _parameter_constraints = {
        **{k: v for k, v in PRIVACY_CONSTRAINTS.items() if k != "accounting"},
        "classes": ["array-like", None],
        "priors": ["array-like", None],
        "var_smoothing": [Interval(Real, 0, None, closed="left")],
        "bounds": ["array-like", None],
        "data_range": [DATA_RANGE_CONSTRAINT],
        "bounds_share": [Interval(Real, 0, 1, closed="neither")],
        "select_features": ["boolean"],
    }

    def __init__(
        self,
        *,
        epsilon=1.0,
        delta=1e-5,
        classes=None,
        priors=None,
        var_smoothing=1e-9,
        bounds=None,
        data_range=1e6,
        bounds_share=0.4,
        select_features=False,
        random_state=None,
        noise="fast",
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.classes = classes
        self.priors = priors
        self.var_smoothing = var_smoothing
        self.bounds = bounds
        self.data_range = data_range
        self.bounds_share = bounds_share
        self.select_features = select_features
        self.random_state = random_state
        self.noise = noise

    def _audit_canary(self):
        """skdp.audit's default canary: a record that changes its class."""
        return "ClassRecordCanary", {}

    @private_fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Release the class counts, means and variances with (ε, δ)-DP.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training features (finite).
        y : array-like of shape (n_samples,)
            Class labels.

        Returns
        -------
        self : DPGaussianNB
            The fitted classifier.
        """
        require_positive_delta(self)
        X, y = self._validate(X, y)
        n, d = X.shape
        warn_if_delta_is_large(self, n)
        classes = label_set(self, y, shapes="theta_")
        priors = self._check_priors(classes.size)
        bounds = None if self.bounds is None else _check_bounds(self.bounds, d)
        schedule = bounds_schedule(
            n,
            d,
            self.epsilon,
            self.delta,
            given=bounds is not None,
            name="DPGaussianNB",
            unseen="is dropped",
            stacklevel=4,  # the caller of fit (through its two decorators)
        )
        # μ_bounds² = bounds_share·μ² over the bound releases, the rest on
        # the moments (accounting.split_gaussian_budget).
        # With given bounds and select_features, one histogram (of the
        # clipped data) picks the features, then the moments.
        select = schedule == "given" and self.select_features
        n_bound_releases = {"given": 0, "histogram": 1, "search": N_BOUND_RELEASES}[
            schedule
        ] + int(select)
        share = _SELECT_SHARE if select else self.bounds_share
        parts = [(n_bound_releases, share), (1, 1.0 - share)]
        if n_bound_releases == 0:
            parts = [(1, 1.0)]
        (*z_bounds, z_moments), z_total = split_gaussian_budget(
            self.epsilon, self.delta, parts, noise=self.noise
        )
        rng = as_generator(self.random_state, self.noise)
        keep = np.ones(d, dtype=bool)
        if bounds is None:
            bounds, keep = self._private_bounds(X, schedule, z_bounds[0], rng)
        elif select:
            keep = self._select_features(X, bounds, z_bounds[0], rng)
        stats = self._release(X, y, classes, bounds, keep, z_moments, rng)
        self._store(stats, classes, priors, bounds, keep, n)
        if schedule != "given":
            centre = np.where(keep, np.max(np.abs(self.theta_), axis=0), 0.0)
            warn_if_near_range(
                centre,
                self.data_range,
                "DPGaussianNB",
                stacklevel=4,
                feature_names=getattr(self, "feature_names_in_", None),
            )
        self.n_iter_ = n_bound_releases + 1
        self.noise_multiplier_ = z_total  # n_iter_ releases of it cost the same
        self.privacy_spent_ = gaussian_cost(
            self.noise_multiplier_,
            self.n_iter_,
            noise=self.noise,
            delta=self.delta,
            adjacency=REPLACE_ONE,
            mechanism="DPGaussianNB: noisy class counts, sums and sums of squares"
            + {
                "given": ", after a noisy histogram (features)" if select else "",
                "histogram": ", after noisy histograms (bounds)",
                "search": ", after noisy histograms (bounds)",
            }[schedule],
        )
        return self

    # ------------------------------------------------------------------
    # fit, step by step
    # ------------------------------------------------------------------

    def _validate(self, X, y):
        """(X, y) checked before any work; a Dask pair in one values pass."""
        if is_dask_array(X):
            from .. import _dask

            declared = None if self.classes is None else np.unique(self.classes)
            return _dask.validate(
                self,
                X,
                y,
                dtype=np.float64,
                y_check=None if declared is None else labels_in(declared),
                y_message="y contains labels that are not in the declared classes.",
            )
        X, y = validate_data(self, X, y, dtype=np.float64)
        check_targets(self, y)
        return X, y

    def _check_priors(self, n_classes):
        if self.priors is None:
            return None
        priors = np.asarray(self.priors, dtype=np.float64)
        if priors.shape != (n_classes,):
            raise ValueError("Number of priors must match number of classes.")
        if not np.isclose(priors.sum(), 1.0):
            raise ValueError("The sum of the priors should be 1.")
        if (priors < 0).any():
            raise ValueError("Priors must be non-negative.")
        return priors

    def _bounds_rows(self, X):
        """A fixed subset of rows for the histograms, and the public ratio.

        Every stride-th row, the stride public: one replaced record moves the
        subset's histograms by at most what it moves the full data's
        (sqrt(2d), or 0 if its row is not read).
        """
        n, d = X.shape
        snr = histogram_snr(n, d, self.epsilon, self.delta)
        stride = max(1, int(snr // _BOUNDS_SNR))
        return (X[::stride] if stride > 1 else X), snr

    def _select_features(self, X, bounds, z_bounds, rng):
        """The features kept with given bounds: not seen only at 0 by one
        noisy histogram of X clipped to the bounds (noise multiplier
        ``z_bounds``, sensitivity sqrt(2d) as for ``bounds=None``)."""
        X, snr = self._bounds_rows(X)
        lower, upper = bounds
        per_decade = _PER_DECADE if snr >= _MIN_SNR else _PER_DECADE_SMALL
        if is_dask_array(X):
            X = X.clip(lower, upper)
        else:
            X = np.clip(X, lower, upper)
        # The grid covers the clipped data (a public range).
        data_range = float(np.max(np.abs(np.concatenate([lower, upper]))))
        _, _, low, high, _, _ = private_histogram_scale(
            X,
            data_range=data_range,
            noise_multiplier=z_bounds,
            rng=rng,
            per_decade=per_decade,
        )
        # Post-processing: a feature whose significant bins span exactly the
        # zero bin is seen only at 0 (all of it there, or a tail the noise
        # hides); one with no significant bin spans the whole grid and stays.
        edges = signed_grid(data_range, per_decade)
        zero_bin = (edges.size - 1) // 2
        only_zero = (low == edges[zero_bin]) & (high == edges[zero_bin + 1])
        return ~only_zero

    def _private_bounds(self, X, schedule, z_bounds, rng):
        """Bounds (and the features kept) from noisy histograms, each with
        noise multiplier ``z_bounds``."""
        d = X.shape[1]
        X, snr = self._bounds_rows(X)
        if schedule == "search":
            bounds = private_bounds(
                X,
                data_range=self.data_range,
                noise_multiplier=z_bounds,
                rng=rng,
            )
            return bounds, np.ones(d, dtype=bool)
        _, _, lower, upper, seen, zero = private_histogram_scale(
            X,
            data_range=self.data_range,
            noise_multiplier=z_bounds,
            rng=rng,
            per_decade=_PER_DECADE if snr >= _MIN_SNR else _PER_DECADE_SMALL,
        )
        keep = seen & ~zero
        if (~seen & ~zero).any():  # a feature all zero is left out silently
            warn_dropped(
                ~seen & ~zero,
                "DPGaussianNB",
                "they are left out of the model (dropped_features_)",
                stacklevel=5,
                feature_names=getattr(self, "feature_names_in_", None),
            )
        lower = np.where(keep, lower, -self.data_range)
        upper = np.where(keep, upper, self.data_range)
        return (lower, upper), keep

    @staticmethod
    def _release(X, y, classes, bounds, keep, noise_multiplier, rng):
        """The joint release on the kept features: noisy (counts, sums, squares)."""
        lower, upper = bounds[0][keep], bounds[1][keep]
        d, n_classes = int(keep.sum()), classes.size
        size = n_classes * (2 * d + 1)
        Xk = X[:, keep] if not keep.all() else X
        if d == 0:  # nothing kept: the counts, and feature 0 clipped to
            # [-1, 1] to keep the release's shape (sensitivity still sqrt(1))
            Xk = X[:, :1]
            lower, upper = np.array([-1.0]), np.array([1.0])
            d = 1
            size = n_classes * 3
        sums = sum_over_rows(
            class_moment_sums,
            Xk,
            (size,),
            rows=(y,),
            classes=classes,
            lower=lower,
            upper=upper,
        )
        sensitivity = class_moment_sensitivity(d)
        noisy = gaussian_mechanism(
            sums, sensitivity=sensitivity, noise_multiplier=noise_multiplier, rng=rng
        )
        counts = noisy[:n_classes] / count_weight(d)
        sums = noisy[n_classes : n_classes * (d + 1)].reshape(n_classes, d)
        squares = noisy[n_classes * (d + 1) :].reshape(n_classes, d) / GAMMA
        return counts, sums, squares, noise_multiplier * sensitivity

    def _store(self, stats, classes, priors, bounds, keep, n):
        """Fitted attributes from the noisy statistics (post-processing)."""
        counts, sums, squares, noise_std = stats
        lower, upper = bounds
        n_classes, d = classes.size, keep.size
        counts = counts + (n - counts.sum()) / n_classes
        class_count = np.maximum(counts, 0.0)
        n_k = np.maximum(counts, 1.0)[:, None]
        kept_lower, kept_upper = lower[keep], upper[keep]
        center, half_width = _center_half_width(kept_lower, kept_upper)
        theta = np.zeros((n_classes, d))
        var = np.full((n_classes, d), float(self.data_range) ** 2)
        if keep.any():
            m = np.clip(sums / n_k, -0.5, 0.5)
            s = np.clip(squares / n_k + SHIFT, 0.0, 0.25)
            floor = np.maximum(noise_std / (GAMMA * n_k), 1e-12)
            v = np.maximum(s - m * m, floor)
            theta[:, keep] = np.clip(
                center + half_width * (2.0 * m), kept_lower, kept_upper
            )
            var[:, keep] = (half_width * (2.0 * np.sqrt(v))) ** 2
            # The largest variance of a feature over all classes together,
            # from the noisy totals (as scikit-learn's np.var(X).max()).
            total = max(float(n), 1.0)
            m_all = np.clip(sums.sum(axis=0) / total, -0.5, 0.5)
            s_all = np.clip(squares.sum(axis=0) / total + SHIFT, 0.0, 0.25)
            v_all = np.maximum(s_all - m_all**2, 0.0)
            self.epsilon_ = self.var_smoothing * float(
                np.max((half_width * (2.0 * np.sqrt(v_all))) ** 2)
            )
        else:
            self.epsilon_ = 0.0
        var[:, keep] += self.epsilon_
        if priors is None:
            priors = np.maximum(class_count, 1.0)
            priors = priors / priors.sum()
        self.classes_ = classes
        self.class_count_ = class_count
        self.class_prior_ = priors
        self.theta_ = theta
        self.var_ = var
        self.bounds_ = np.vstack([lower, upper])
        self.dropped_features_ = ~keep

    # ------------------------------------------------------------------
    # prediction
    # ------------------------------------------------------------------

    def _joint_log_likelihood(self, X):
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        lower, upper = self.bounds_
        X = np.clip(X, lower, upper)
        log_prior = np.log(self.class_prior_)
        # Σ_j log(2π var) - Σ_j (x - θ)²/var, without an (n, K, d) temporary.
        # Expanded in units of the bounds' half-width about their centre: in
        # raw units x² - 2xθ + θ² cancelled to noise for a feature far from
        # 0 (chance accuracy at an offset of 1e9 with a spread of 1) and x²
        # overflowed at bounds near 1e160 (review).
        center, half_width = _center_half_width(lower, upper)
        Z = (X - center) / half_width
        mean = (self.theta_ - center) / half_width
        inv = half_width**2 / self.var_
        quad = (
            (Z * Z) @ inv.T
            - 2.0 * Z @ (mean * inv).T
            + np.sum(mean * mean * inv, axis=1)
        )
        # log(2π) apart: 2π·var_ overflowed past var_ = 2.9e307 (given bounds
        # near 1e154, or a dropped feature at a data_range near it), and every
        # predict_proba was NaN, every prediction classes_[0] (review).
        norm = self.var_.shape[1] * math.log(2.0 * math.pi) + np.sum(
            np.log(self.var_), axis=1
        )
        return log_prior - 0.5 * norm - 0.5 * quad

    def predict(self, X):
        """Predict class labels.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples (clipped to ``bounds_`` before scoring).

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted labels.
        """
        if is_dask_array(X):
            return self._map_rows(self.predict, X)
        jll = self._joint_log_likelihood(X)  # checks that the model is fitted
        return self.classes_[np.argmax(jll, axis=1)]

    def predict_log_proba(self, X):
        """Log class probabilities, columns ordered as ``classes_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples (clipped to ``bounds_`` before scoring).

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            Log-probabilities.
        """
        if is_dask_array(X):
            return self._map_rows(self.predict_log_proba, X)
        jll = self._joint_log_likelihood(X)
        return jll - logsumexp(jll, axis=1, keepdims=True)

    def predict_proba(self, X):
        """Class probabilities, columns ordered as ``classes_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples (clipped to ``bounds_`` before scoring).

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probabilities; rows sum to one.
        """
        if is_dask_array(X):
            return self._map_rows(self.predict_proba, X)
        return np.exp(self.predict_log_proba(X))

    def _map_rows(self, method, X):
        from .. import _dask

        check_is_fitted(self)
        return _dask.map_rows(method, self, X)
