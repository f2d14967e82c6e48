"""DPLogisticRegression: noisy gradient descent for logistic regression."""

import dataclasses
import functools
import math
from numbers import Integral, Real

import numpy as np
from scipy.special import expit
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._base import (
    CLIP_CONSTRAINT,
    PRIVACY_CONSTRAINTS,
    DaskScoreMixin,
    DPEstimatorMixin,
    check_cost_before_steps,
    check_targets,
    class_indices,
    dense_float_rows,
    is_dask_array,
    is_sparse_input,
    label_set,
    private_fit,
    require_positive_delta,
    sum_over_rows,
    warn_if_delta_is_large,
    with_ones_column,
)
from .._base import labels_in as _labels_in
from .._datafits import BinomialLogistic, MultinomialLogistic
from .._dpgd import NoiseBudget, auto_schedule, calibrated_dpgd, dpgd
from .._inputs import SPARSE_FIT_FORMATS
from ..accounting import (
    REPLACE_ONE,
    classical_gaussian_noise_multiplier,
    format_dp,
    gaussian_cost,
    gaussian_noise_multiplier,
    mu_from_epsilon,
    split_gaussian_budget,
)
from ..mechanisms import as_generator, gaussian_mechanism

# Paper 003 (Prop. 3.3) calibrates to B = 4(R + c1)σ_x, i.e. a per-step
# sensitivity of 4(R + c1) = 8 bounds on the row norm for logistic (R = c1 = 1),
# where replace-one clipping needs only 2 (a gradient |σ(z) - y|·||x|| ≤ ||x||).
_PAPER_SENSITIVITY_RATIO = 4.0

# Decay of the moving average of the Adam iterates that is released.
_AVERAGE_DECAY = 0.9
# Step size of solver="gd" when learning_rate="auto" (benchmarked with 50 steps
# on standardised data).
_GD_LEARNING_RATE = 3.0

# The intercept's start (``intercept_start``): the share of μ² spent on the
# noisy class counts, and the largest noise of the released class frequency
# (std z/n, public) at which the fit uses it. From a start at 0, Adam moves
# the intercept by at most the horizon (5), in small noisy steps: on an
# imbalanced table (ISLP Caravan, 6% positives, private pipeline at ε = 1,
# 20 splits) the intercept ended near -2 against the data's -2.8, and the
# weights, fitted against the wrong intercept, ranked worse: ROC AUC 0.576
# from 0, 0.619 from the released start (free scaling 0.620). fair, Wage and
# Default (3% positives): AUC within ±0.002. Below the gate the noisy
# frequency could be further from the data's than 0 is.
_START_SHARE = 0.02
_START_MAX_NOISE = 0.01


def _map_rows(method, estimator, X):
    """``method`` on every row chunk of a Dask X: a lazy Dask array."""
    from .. import _dask

    check_is_fitted(estimator)
    return _dask.map_rows(method, estimator, X, accept_sparse=True)


def _encode(y, classes):
    """Labels as indices into the sorted ``classes`` (or one chunk of a Dask y).

    Two classes give float64 0/1, the target of the one-output logistic
    datafit (subtracting integers from its float residuals at every step
    costs 3× more); more classes give integers, which index the columns.
    """
    indices = class_indices(y, classes)
    return indices.astype(np.float64) if classes.size == 2 else indices


def _encoded(y, classes):
    """y as indices into ``classes``: a Dask y chunk by chunk, lazily."""
    if is_dask_array(y):
        dtype = np.float64 if classes.size == 2 else np.intp
        return y.map_blocks(_encode, classes, dtype=dtype)
    return _encode(y, classes)


def _class_counts(X, y, *, n_classes):
    """Counts of the encoded labels: a sum over rows (Dask chunk by chunk)."""
    return np.bincount(np.asarray(y, dtype=np.intp), minlength=n_classes).astype(
        np.float64
    )


def released_class_counts(X, y, n_classes, noise_multiplier, rng):
    """Noisy counts of each class, L2 sensitivity ``sqrt(2)``.

    Replacing one record moves one record from its class to another: two
    counts by 1 each (one under add/remove, which this does not use).
    """
    counts = sum_over_rows(
        _class_counts, X, (n_classes,), rows=(y,), n_classes=n_classes
    )
    return gaussian_mechanism(
        counts, sensitivity=np.sqrt(2.0), noise_multiplier=noise_multiplier, rng=rng
    )


def intercept_from_counts(noisy_counts, n_samples, noise_multiplier):
    """The intercept of the intercept-only model at the noisy class counts.

    Post-processing: the counts are shifted equally to add up to n (public),
    and each is floored at its noise standard deviation (a class the noise
    hides is taken as about that rare, not as absent). Two classes: the log
    odds of the second; more: the centred log frequencies (softmax ignores a
    common shift).
    """
    k = noisy_counts.size
    counts = noisy_counts - (noisy_counts.sum() - n_samples) / k
    noise_std = noise_multiplier * np.sqrt(2.0 * (k - 1) / k)
    log_counts = np.log(np.maximum(counts, noise_std))
    if k == 2:
        return np.array([log_counts[1] - log_counts[0]])
    return log_counts - log_counts.mean()


def _paper_noise_multiplier(epsilon, delta, n_iter):
    """The textbook calibration of ``n_iter`` steps, per unit of exact sensitivity."""
    return _PAPER_SENSITIVITY_RATIO * classical_gaussian_noise_multiplier(
        epsilon, delta, n_iter
    )


class DPLogisticRegression(
    DaskScoreMixin, DPEstimatorMixin, ClassifierMixin, BaseEstimator
):
    """Differentially private logistic regression by noisy gradient descent.

    Binary or multinomial (softmax) logistic regression fitted by full-batch
    gradient descent in which every record's gradient is clipped to L2 norm
    ``clip_norm`` and Gaussian noise is added to each step's gradient sum
    (Cai, Wang & Zhang, Score Attack, §3.2, Algorithm 1; Bassily, Smith &
    Thakurta 2014). The noise is calibrated by exact Gaussian-DP accounting so
    that the fitted coefficients are (``epsilon``, ``delta``)-DP. By default
    the noisy gradients drive Adam steps and the released model is the
    average of the last iterates: post-processing, free of privacy cost.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget ε > 0 of one fit.
    delta : float, default=1e-5
        Privacy parameter δ in (0, 1); should be well below ``1/n_samples``
        (a :class:`~skdp.PrivacyLeakWarning` is raised at ``delta >= 1/n``).
    accounting : {"exact", "paper"}, default="exact"
        ``"exact"`` uses the smallest noise for which the steps are (ε, δ)-DP
        (μ-GDP, tight). ``"paper"`` reproduces Algorithm 1 of Cai, Wang &
        Zhang (Score Attack): basic composition of classical Gaussian
        mechanisms with the paper's sensitivity constant (about 40× more noise
        at 50 steps, 5× at one step). Either way ``privacy_spent_`` reports
        the exact guarantee of the noise used.
    clip_norm : float or "auto", default="auto"
        Each record's gradient w.r.t. ``(coef_, intercept_)`` is clipped to this
        L2 norm. It bounds one record's influence, so it sets the noise scale;
        it never depends on the data. ``"auto"``: 1 for dense X (meant to be
        standardised), 0.5 for sparse X (rows of norm about 1, e.g. TF-IDF).
    alpha : float or "auto", default="auto"
        L2 penalty ``alpha/2 · ||coef||²`` added to the mean logistic loss.
        ``"auto"``: ``1/n_samples``, the penalty of scikit-learn's
        ``LogisticRegression(C=1.0)``.
    fit_intercept : bool, default=True
        Whether to fit an intercept (it shares the clipping of the record's
        gradient, at no extra privacy cost). Where n is large enough (public
        rule, Notes), 2% of the budget releases the class counts, and the
        intercept starts at their log odds instead of 0.
    max_iter : int or "auto", default="auto"
        Number of noisy gradient steps; each is paid for, so more steps mean
        more noise per step. The model is private whether or not it has
        converged. ``"auto"``: ``clip(764·sqrt((d + 1)·k / n), 50, 200)`` for
        ``k`` outputs (50 at n = 20000, d = 20; 200 for small or
        high-dimensional data).
    learning_rate : float or "auto", default="auto"
        Step size. With ``solver="adam"``, ``"auto"`` is ``horizon / n_iter_``
        where the horizon (how far Adam may move a weight) is 5 for dense and
        20 for sparse X, growing as ``sqrt(ρ/100)`` up to 50 when
        ``ρ = μ·n / sqrt((d + 1)·k)`` is large (little noise); with
        ``solver="gd"`` it is 3.
    solver : {"adam", "gd"}, default="adam"
        How the noisy mean gradients become steps. ``"adam"``: Adam with its
        ε set to the (public) noise standard deviation of one coordinate, and
        the released model is a moving average (decay 0.9) of the iterates;
        it handles sparse, rarely active and badly scaled features.
        ``"gd"``: plain steps and the last iterate, as in the paper. The
        guarantee is the same: both only post-process the noisy gradients.
    classes : array-like of shape (n_classes,), default=None
        The label set, declared in advance. If None it is inferred from ``y``
        and counts as public (a :class:`~skdp.PrivacyLeakWarning` says so).
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
        1: a line stating the guarantee being spent and the noise scale,
        about ten progress lines and a summary; 2: one line per step.

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
        Class labels.
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        Coefficients (one row for binary problems).
    intercept_ : ndarray of shape (1,) or (n_classes,)
        Intercepts.
    n_iter_ : int
        Number of noisy gradient steps run (``max_iter``, resolved).
    learning_rate_, alpha_, clip_norm_ : float
        The step size, penalty and clip used (``"auto"`` resolved).
    noise_multiplier_ : float
        Noise standard deviation divided by the L2 sensitivity
        ``2 * clip_norm_`` of one step's gradient sum. To recompute the
        guarantee with dp-accounting, compose
        ``GaussianDpEvent(noise_multiplier_)`` ``n_iter_`` times in an
        accountant with the default add/remove relation (the factor 2 of
        replace-one is already inside this ratio); a replace-one accountant
        needs ``2 * noise_multiplier_``.
        The composition stated here is that of ``noise="fast"``. Secure noise
        is composed in zCDP instead: each release is ``(1/z + 2^-16)²/2``-zCDP
        for its own multiplier z (the grid rounding's slack,
        :func:`~skdp.accounting.secure_noise_cost`), and
        ``privacy_spent_.zcdp`` is their sum; a GDP accountant given this
        multiplier understates it.
    start_noise_multiplier_ : float
        Noise standard deviation divided by the L2 sensitivity ``sqrt(2)``
        of the class counts released for the intercept's start (Notes);
        ``inf`` when there was no such release. With dp-accounting, compose
        ``GaussianDpEvent(start_noise_multiplier_)`` once more.
    privacy_spent_ : PrivacyCost
        The exact guarantee of this fit: ``epsilon``, ``delta``, ``mu =
        sqrt(n_iter_ / noise_multiplier_² + 1 / start_noise_multiplier_²)``,
        adjacency and mechanism.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    sklearn.linear_model.LogisticRegression : The non-private model.

    Notes
    -----
    **Guarantee.** ``coef_`` and ``intercept_`` (and every intermediate iterate)
    are (ε, δ)-DP under *replace-one-record* adjacency: ``n_iter_`` Gaussian
    steps, each with L2 sensitivity ``2 * clip_norm_`` and noise standard
    deviation ``noise_multiplier_ * 2 * clip_norm_``, and, where the
    intercept starts from them (below), the noisy class counts before the
    steps, compose exactly to μ-GDP with ``μ = sqrt(n_iter_ /
    noise_multiplier_² + 1 / start_noise_multiplier_²)`` (``sqrt(n_iter_) /
    noise_multiplier_`` without a start; Dong, Roth & Su 2022), which is
    (ε, δ)-DP for the reported pair. The noise is calibrated against
    ``δ·(1 − 1e-9)``, which absorbs floating-point error in the accounting.
    Adam, the averaging, the penalty, the start's arithmetic and the
    division by n only post-process the noisy releases.

    **The intercept's start.** With ``fit_intercept=True`` and the exact
    accounting, where the released class frequencies' noise
    ``z_s/n`` is at most 0.01 (public: n, ε and δ; n ≥ 2638 at ε = 1 and
    δ = 1e-5, 2988 at δ = 1e-6; with k classes each frequency's noise is up
    to ``sqrt(2(k − 1)/k)`` times that), one
    more Gaussian release comes first: the class counts (L2 sensitivity
    ``sqrt(2)``: a replaced record leaves one class for another), with
    ``1/z_s² = 0.02·μ²``; the steps get the rest, ``n_iter_/z² = 0.98·μ²``,
    and the releases compose to μ exactly. The intercept starts at the log
    odds of the counts (more classes: their centred log frequencies), each
    count shifted so that they add up to n and floored at its noise
    standard deviation: post-processing. From 0, Adam moves the intercept
    by at most the horizon, in small noisy steps, and on imbalanced classes
    the weights were fitted against an intercept far from the data's: on
    ISLP's Caravan (6% positives, private pipeline at ε = 1, 20 splits)
    ROC AUC 0.576 from 0, 0.619 from the released start; fair, Wage and
    Default within 0.002. ``accounting="paper"`` starts at 0, as Algorithm 1.
    The start helps the ranking, not the calibration: with a rare class,
    clipping every record's gradient to the same norm weighs the many
    against the few, and the fit's optimum lies below the data's log odds
    (``predict_proba`` 2-4 times below the rare class's rate on fair with
    2% positives, at the default clip); from 0 Adam stopped short of it by
    chance, from the start it gets there (log loss +0.008 on that table,
    paired over 20 splits). Calibrate on public data where probabilities
    matter.

    **Public.** The number of records n, the number of features d, whether X
    is sparse (a choice of the caller: a ``ColumnTransformer`` makes it from
    the share of stored values unless ``sparse_threshold=0`` or all its
    parts always return dense arrays; the budget helpers set
    ``sparse_threshold=0`` otherwise, see
    :func:`skdp.pipeline.set_privacy_budget`),
    and the label set (``classes`` or, if not given, the labels present in
    ``y``) are treated as public. The ``"auto"`` rules read only
    these and (ε, δ); nothing else is read from the data outside the noisy
    gradients. Error messages never quote values from the data.

    **Every input.** The bound on one record's influence is enforced for
    every finite X, dense or CSR (duplicate entries are summed first),
    float64 or float32 (kept as float32 in memory, summed in float64), with
    entries up to 1e308: norms are computed without overflow and a record
    whose gradient is not finite contributes nothing.

    **Clipping.** Features are not bounded; each record's gradient
    ``(softmax(z) - e_y) ⊗ (x, 1)`` is scaled down to norm ``clip_norm_`` when
    larger. Standardise dense features: with d standardised features a
    gradient typically has norm about ``sqrt(d)``, so the default clip of 1
    clips most records (a robust loss) and keeps the noise small. Unscaled
    columns fail silently (the fit sees nothing but released values, so it
    cannot tell): on raw wine at ε = 2 the accuracy was 0.52 where the
    standardised columns gave 0.96, since the largest column sets every
    clipped gradient's direction. Put a
    :class:`~skdp.preprocessing.DPStandardScaler` in front
    (:func:`~skdp.pipeline.make_private_pipeline`). Centring matters too:
    clipped gradients do not average to the true gradient, and a column
    off-centre by a fraction of its spread can move the fixed point a long
    way (statsmodels' modechoice, 630 training rows, ε = 0.72 for the
    model: the terminal-time column shifted by +1 sd turned its coefficient
    from −0.58 to +0.29 and the AUC from 0.70 to 0.44; a private scaler at
    that size leaves centring errors of 0.2-0.4 sd; review). Larger data or
    more of the budget on the scaler shrink them.

    **Caveats.** With ``noise="fast"`` (the default) noise is drawn with
    numpy floating point, which is not hardened against the attacks of
    Mironov (2012); ``noise="secure"`` is. Fitting the same data
    several times (e.g. in ``GridSearchCV``) spends the budget each time, and
    choosing among the fits by their scores on the private data is not
    covered: compose with :class:`skdp.PrivacyLedger`.

    **Dask.** ``fit`` also takes a ``dask.array.Array`` (dense or CSR
    chunks along rows): each step's clipped gradient sum is computed chunk
    by chunk where the chunks live, by the same per-block code, and summed;
    the noise is added on the client, once per step, so the guarantee and
    ``privacy_spent_`` are those of the in-memory fit, and a seeded fit
    gives the same model up to rounding. One extra pass checks the values
    (finite, labels in ``classes``) before any noise. ``predict`` and the
    other methods return Dask arrays. See :ref:`large_data`.

    **Cost.** Time ``O(n_iter_ · nnz(X) · k)``, memory O(n · k + d · k) beyond X
    (float32 X: plus one block of 2²⁰ values in float64).

    References
    ----------
    .. [1] T. T. Cai, Y. Wang, L. Zhang. "Score Attack: A Lower Bound Technique
       for Optimal Differentially Private Learning", §3.2, Algorithm 1,
       Prop. 3.3.
    .. [2] R. Bassily, A. Smith, A. Thakurta. "Private empirical risk
       minimization: efficient algorithms and tight error bounds", FOCS 2014.
    .. [3] J. Dong, A. Roth, W. J. Su. "Gaussian differential privacy",
       JRSS-B 2022.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from sklearn.preprocessing import StandardScaler
    >>> from skdp import DPLogisticRegression
    >>> X, y = make_classification(n_samples=5000, n_features=5, random_state=0)
    >>> X = StandardScaler().fit_transform(X)
    >>> clf = DPLogisticRegression(
    ...     epsilon=1.0, delta=1e-6, classes=[0, 1]
    ... ).fit(X, y)
    >>> clf.coef_.shape, clf.n_iter_
    ((1, 5), 50)
    >>> round(clf.privacy_spent_.epsilon, 6), clf.privacy_spent_.adjacency
    (1.0, 'replace one record')
    >>> clf.score(X, y) > 0.9
    True
    """

    _parameter_constraints = {
        **PRIVACY_CONSTRAINTS,
        "clip_norm": [CLIP_CONSTRAINT, StrOptions({"auto"})],
        "alpha": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "fit_intercept": ["boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "learning_rate": [
            Interval(Real, 0, None, closed="neither"),
            StrOptions({"auto"}),
        ],
        "solver": [StrOptions({"adam", "gd"})],
        "classes": ["array-like", None],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        *,
        epsilon=1.0,
        delta=1e-5,
        accounting="exact",
        clip_norm="auto",
        alpha="auto",
        fit_intercept=True,
        max_iter="auto",
        learning_rate="auto",
        solver="adam",
        classes=None,
        random_state=None,
        noise="fast",
        verbose=0,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.accounting = accounting
        self.clip_norm = clip_norm
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.solver = solver
        self.classes = classes
        self.random_state = random_state
        self.noise = noise
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _audit_canary(self):
        """skdp.audit's default canary: the engine's gradient canary."""
        return "GradientCanary", {}

    def _audit_engine_parameters(self):
        """The fitted parameters in the DP-GD engine's layout ``(d + 1, k)``."""
        return np.vstack([self.coef_.T, self.intercept_[None, :]])

    def _audit_glm_view(self):
        """The score attack's view (for :mod:`skdp.audit`) of a binary fit."""
        if self.classes_.size != 2:
            raise ValueError("The score attack view of DPLogisticRegression is binary.")
        theta = np.concatenate([self.coef_.ravel(), self.intercept_])
        positive = self.classes_[1]
        return dict(
            theta=theta,
            features=lambda X: with_ones_column(dense_float_rows(X)),
            mean=expit,
            encode=lambda y: (y == positive) * 1.0,
        )

    @private_fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the model with (``epsilon``, ``delta``)-DP.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training features (standardised, ideally). A dense float64 X
            that is not in Fortran order is copied once into it (each step
            reads X twice, and ``X.T @ g`` is up to 3× faster in that order):
            pass ``np.asfortranarray(X)`` to save the copy's memory.
        y : array-like of shape (n_samples,)
            Class labels.

        Returns
        -------
        self : DPLogisticRegression
            The fitted estimator.
        """
        require_positive_delta(self)
        if is_dask_array(X):  # map-reduce on the chunks; noise on the client
            X, y = self._validate_dask(X, y)
        else:
            X, y = validate_data(
                self,
                X,
                y,
                accept_sparse=SPARSE_FIT_FORMATS,
                dtype=[np.float64, np.float32],
            )
            check_targets(self, y)
        warn_if_delta_is_large(self, X.shape[0])
        classes = label_set(self, y, shapes="coef_")
        y_encoded = _encoded(y, classes)
        datafit = BinomialLogistic() if classes.size == 2 else MultinomialLogistic()
        n_outputs = 1 if classes.size == 2 else classes.size
        n_iter, learning_rate, alpha, clip_norm = self._schedule(X, n_outputs)
        run = dict(
            n_outputs=n_outputs,
            clip_norm=clip_norm,
            n_iter=n_iter,
            learning_rate=learning_rate,
            alpha=alpha,
            fit_intercept=self.fit_intercept,
            solver=self.solver,
            average=_AVERAGE_DECAY if self.solver == "adam" else None,
            adjacency=REPLACE_ONE,
            rng=as_generator(self.random_state, self.noise),
            mechanism="DPLogisticRegression noisy gradient descent",
            verbose=self.verbose,
        )
        z_start = math.inf
        if self._starts_intercept(X.shape[0]):
            coef, intercept, cost, noise_multiplier, z_start = self._started_dpgd(
                X, y_encoded, datafit, classes.size, run
            )
        else:
            coef, intercept, cost, noise_multiplier = calibrated_dpgd(
                X, y_encoded, datafit, budget=self._noise_budget(), **run
            )
        self.classes_ = classes
        self.coef_, self.intercept_ = coef.T, intercept
        self.n_iter_ = n_iter
        self.learning_rate_ = learning_rate
        self.alpha_ = alpha
        self.clip_norm_ = clip_norm
        self.noise_multiplier_ = noise_multiplier
        self.start_noise_multiplier_ = z_start
        self.privacy_spent_ = cost
        return self

    def _starts_intercept(self, n_samples):
        """Whether the fit releases class counts to start the intercept.

        Public: ``fit_intercept``, the accounting, n, ε and δ only. Not
        with ``accounting="paper"`` (Algorithm 1 starts at 0).
        """
        if not self.fit_intercept or self.accounting != "exact":
            return False
        z = gaussian_noise_multiplier(self.epsilon, self.delta, noise=self.noise)
        return z / math.sqrt(_START_SHARE) <= _START_MAX_NOISE * n_samples

    def _started_dpgd(self, X, y_encoded, datafit, n_classes, run):
        """The engine's steps from the intercept of the noisy class counts.

        ``_START_SHARE`` of the budget (GDP terms) on one release of the
        class counts, the rest on the steps: ``n_iter + 1`` Gaussian
        releases that compose to the fit's (ε, δ) exactly
        (:func:`~skdp.accounting.split_gaussian_budget`).
        """
        n_iter = run["n_iter"]
        (z_start, z_steps), z_total = split_gaussian_budget(
            self.epsilon,
            self.delta,
            [(1, _START_SHARE), (n_iter, 1.0 - _START_SHARE)],
            noise=self.noise,
        )
        cost = gaussian_cost(
            z_total,
            n_iter + 1,
            noise=self.noise,
            delta=self.delta,
            adjacency=REPLACE_ONE,
        )
        check_cost_before_steps(cost)  # the whole fit's, before the counts
        n = X.shape[0]
        counts = released_class_counts(X, y_encoded, n_classes, z_start, run["rng"])
        start = intercept_from_counts(counts, n, z_start)
        if self.verbose > 0:
            print(
                f"[DPLogisticRegression] spending {format_dp(cost.epsilon, self.delta)}"
                f" in all: noisy class counts (noise std {z_start * math.sqrt(2):.4g})"
                " start the intercept, then the steps:",
                flush=True,
            )
        coef, intercept, steps = dpgd(
            X,
            y_encoded,
            datafit,
            noise_multiplier=z_steps,
            delta=self.delta,
            intercept_start=start,
            total_cost=cost,
            **run,
        )
        cost = dataclasses.replace(
            cost,
            mechanism=f"{steps.mechanism}, after noisy class counts (the "
            f"intercept's start, noise multiplier {z_start:.6g})",
        )
        return coef, intercept, cost, z_steps, z_start

    def _validate_dask(self, X, y):
        """Dask (X, y): shapes and chunks, then one pass that checks values.

        The pass releases only whether X and y are finite and, with declared
        ``classes``, whether every label is one of them (as the in-memory
        checks raise or not); nothing else is read before the noisy steps.
        """
        from .. import _dask

        declared = None if self.classes is None else np.unique(self.classes)
        return _dask.validate(
            self,
            X,
            y,
            accept_sparse=True,
            y_check=None if declared is None else _labels_in(declared),
            y_message="y contains labels that are not in the declared classes.",
        )

    def _schedule(self, X, n_outputs):
        """Steps, step size, penalty and clip: the parameters, or public rules.

        ``"auto"`` reads only n, d, the number of outputs, (ε, δ) and whether
        X is sparse (see :func:`skdp._dpgd.auto_schedule`); ``alpha="auto"``
        is ``1/n``, the penalty of scikit-learn's ``LogisticRegression(C=1.0)``.
        """
        n, d = X.shape
        n_iter, horizon, clip_norm = auto_schedule(
            n,
            (d + 1) * n_outputs,
            mu_from_epsilon(self.epsilon, self.delta),
            sparse=is_sparse_input(X),
        )
        if self.max_iter != "auto":
            n_iter = self.max_iter
        if self.learning_rate != "auto":
            learning_rate = self.learning_rate
        elif self.solver == "adam":
            learning_rate = horizon / n_iter
        else:
            learning_rate = _GD_LEARNING_RATE
        alpha = 1.0 / n if self.alpha == "auto" else self.alpha
        if self.clip_norm != "auto":
            clip_norm = self.clip_norm
        return n_iter, learning_rate, alpha, clip_norm

    def _noise_budget(self):
        """(epsilon, delta) for the engine; ``accounting="paper"``: the textbook rule.

        The textbook calibration is only valid for per-step ε/T ≤ 1; the
        engine never adds less noise than the exact calibration needs.
        """
        paper = None
        if self.accounting == "paper":
            paper = functools.partial(_paper_noise_multiplier, self.epsilon, self.delta)
        return NoiseBudget(self.epsilon, self.delta, self.noise, paper)

    def decision_function(self, X):
        """Linear predictor: shape (n_samples,) if binary, else (n_samples, n_classes).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        scores : ndarray
            Signed distance to the decision boundary (binary: positive means
            ``classes_[1]``).
        """
        check_is_fitted(self)
        if is_dask_array(X):
            return _map_rows(self.decision_function, self, X)
        X = validate_data(self, X, accept_sparse="csr", reset=False, dtype=np.float64)
        scores = X @ self.coef_.T + self.intercept_
        return scores[:, 0] if scores.shape[1] == 1 else scores

    def predict(self, X):
        """Predict class labels.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted labels.
        """
        if is_dask_array(X):
            return _map_rows(self.predict, self, X)
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]

    def predict_log_proba(self, X):
        """Log class probabilities, columns ordered as ``classes_``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
            Log-probabilities.
        """
        if is_dask_array(X):
            return _map_rows(self.predict_log_proba, self, X)
        scores = self.decision_function(X)
        if scores.ndim == 1:
            return BinomialLogistic().log_proba(scores)
        return MultinomialLogistic().log_proba(scores)

    def predict_proba(self, X):
        """Class probabilities, columns ordered as ``classes_``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
            Probabilities; rows sum to one.
        """
        if is_dask_array(X):
            return _map_rows(self.predict_proba, self, X)
        return np.exp(self.predict_log_proba(X))
