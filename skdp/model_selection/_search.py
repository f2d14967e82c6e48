"""Private hyperparameter selection: the best of a random number of private runs."""

import cmath
import math
import re
import sys
import threading
import warnings
from copy import deepcopy
from dataclasses import replace
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from joblib import Parallel, delayed
from sklearn.base import BaseEstimator, MetaEstimatorMixin, clone, is_classifier
from sklearn.compose import ColumnTransformer, TransformedTargetRegressor
from sklearn.model_selection import ParameterGrid, ParameterSampler
from sklearn.pipeline import Pipeline
from sklearn.utils import _safe_indexing, get_tags
from sklearn.utils._param_validation import (
    Interval,
    InvalidParameterError,
    StrOptions,
)
from sklearn.utils.metaestimators import available_if
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import check_is_fitted, validate_data

from .._base import (
    CLIP_CONSTRAINT,
    PRIVACY_CONSTRAINTS,
    PUBLIC_LABELS,
    BudgetCheckError,
    DPEstimatorMixin,
    collect_fit_warnings,
    declared_classes,
    private_fit,
    require_positive_delta,
    stamp_release,
)
from .._clipping import csr_keeping_duplicates
from .._inputs import SPARSE_FIT_FORMATS
from .._ledger import (
    SEARCH_RELEASE,
    _common_adjacency,
    _dp_inside,
    _reads_only_shape,
    _reads_values,
    composite_parts,
    container_from_density,
    is_dp_estimator,
)
from ..accounting import (
    _SECURE_SLACK,
    REPLACE_ONE,
    REPLACE_ONE_OUTCOME,
    PrivacyCost,
    epsilon_from_mu,
    epsilon_from_zcdp_tight,
    epsilon_of_private_selection,
    mu_from_epsilon,
    unshared_memo,
    zcdp_from_epsilon_tight,
    zcdp_of_private_selection,
)
from ..exceptions import MechanismFailedError, PrivacyLeakWarning
from ..mechanisms import add_gaussian_noise, as_generator
from ..pipeline import _TARGET_WEIGHT

__all__ = ["DPRandomSearchCV"]

#: Below this, each candidate's release would be noise (ε ≈ 4e-4 at δ = 1e-5).
_MIN_CANDIDATE_MU = 1e-4
_PRIVACY_PARAMS = ("epsilon", "delta", "random_state", "noise")
#: Grids whose listed values make more combinations than this are checked
#: one listed value at a time (each against the estimator as given).
_MAX_CHECKED_COMBINATIONS = 256
_SKIPPED = ("passthrough", "drop", None)
#: A DP step's notice that its seed is fixed: the search gives each run's
#: steps their seeds, and a seeded search warns once, for itself.
_SEEDED = re.compile("random_state=.* seeds the privacy")


def _delegate(method):
    """Whether the winner (fitted) or the estimator searched (before the fit)
    has ``method``, as scikit-learn's searches decide (a StackingClassifier
    asks an unfitted search for predict_proba; review)."""

    def check(self):
        if hasattr(self, "best_estimator_"):
            return hasattr(self.best_estimator_, method)
        return hasattr(self.estimator, method)

    return check


def _refuse_callbacks(parts):
    """Refuse fit callbacks (scikit-learn's ``set_callbacks``) anywhere in the
    estimator: ``clone`` keeps them, so every run would call them, with its
    parameters and its fitted model, and the number of runs and the losers
    that the search keeps secret would reach the callback (and the released
    winner would still hold it)."""
    for prefix, part in parts:
        if getattr(part, "_skl_callbacks", None):
            where = f"{type(part).__name__} ({prefix.rstrip('_') or 'estimator'})"
            raise TypeError(
                f"{where} has fit callbacks (set_callbacks): every run of the "
                "search would call them with its parameters and fitted model, "
                "which the search keeps secret (as it silences verbose). Remove "
                "them from the estimator given to DPRandomSearchCV."
            )


class DPRandomSearchCV(DPEstimatorMixin, MetaEstimatorMixin, BaseEstimator):
    """Random search whose whole run, selection included, is (ε, δ)-DP.

    Private selection with a random number of runs (Papernot & Steinke 2022,
    Theorem 2; Liu & Talwar 2019): the number of candidates ``K`` is drawn
    from a truncated negative binomial distribution with mean ``n_iter``,
    independently of the data. Each run draws one candidate from
    ``param_distributions``, trains it with its own private budget on a
    training part, and scores it on a disjoint validation part with Gaussian
    noise; only the best run (its model, parameters and noisy score) is
    released. Each candidate's budget is calibrated from the total
    (``epsilon``, ``delta``) so that the whole run spends at most that.

    Parameters
    ----------
    estimator : estimator
        A DP estimator (a classifier or regressor with ``privacy_budget``), or
        a :class:`~sklearn.pipeline.Pipeline` of DP steps and steps that read
        only the shape of the data, through any nesting of pipelines,
        :class:`~sklearn.compose.ColumnTransformer`,
        :class:`~sklearn.pipeline.FeatureUnion` and
        :class:`~sklearn.compose.TransformedTargetRegressor` (a DataFrame is
        kept as one, so columns may be selected by name). Its DP steps' ``epsilon``,
        ``delta``, ``random_state`` and ``noise`` are set by the search: the
        grid must not contain them.
    param_distributions : dict or list of dicts
        As :class:`~sklearn.model_selection.RandomizedSearchCV`: lists are
        sampled uniformly, distributions with ``rvs``. Each run draws one
        candidate independently (with replacement).
    n_iter : float, default=10
        Expected number of candidates, ``E[K] >= 1``. ``n_iter=1`` runs one
        candidate, calibrated as one fit (μ_c-GDP at (ε, δ), nothing to
        select).
    n_iter_shape : float, default=1.0
        Shape η of the truncated negative binomial (0: logarithmic
        distribution, 1: geometric). Smaller is cheaper for the same mean
        but stops after one candidate more often: P(K = 1) is 0.27 at η = 0
        and 0.10 at η = 1 for ``n_iter=10``, and a single candidate is
        released whatever it is. The default, 1, was the more reliable
        setting in ``benchmarks/bench_model_selection.py``.
    epsilon : float, default=1.0
        Total privacy budget ε of the whole search.
    delta : float, default=1e-5
        Total δ of the whole search (and of each candidate's calibration).
    scoring : {"accuracy", "neg_mean_squared_error", \
            "neg_mean_absolute_error"} or None, default=None
        Per-record score averaged over the validation part; None means
        ``"accuracy"`` for classifiers, ``"neg_mean_squared_error"`` for
        regressors. Only bounded per-record scores have a known sensitivity.
    score_bound : float or None, default=None
        Regression only, required there: a public bound ``b`` on one
        record's loss. Each record's squared (or absolute) error is clipped
        to ``b`` before averaging, so replacing one validation record moves
        the mean by at most ``b/m``.
    validation_fraction : float, default=0.2
        Share of the rows (chosen at random, independently of the data) that
        score the candidates; the rest trains them.
    n_jobs : int or None, default=None
        Candidates fitted in parallel, through :class:`joblib.Parallel`
        (None: one at a time, unless a :func:`joblib.parallel_config`
        context says otherwise; -1: all processors). Under
        ``joblib.parallel_config(backend="dask")`` the candidates are fitted
        on the workers of a ``dask.distributed`` cluster. The candidates
        and their seeds are drawn here, in one stream, before any fit, and
        the scores' noise after the fits in the order of the runs: a seeded
        search gives the same result for any ``n_jobs`` and backend. Inside
        a run, a composite's own ``n_jobs`` (ColumnTransformer,
        FeatureUnion) is overridden: its parts are fitted one after the
        other, in the run's process, where its warnings are captured. Do
        not run two searches at once in threads of one process: Python's
        warning capture is process-wide, and one search's may let the
        other's runs' warnings through.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the split, the number of runs, the candidates, the score noise
        and (with a distinct seed each) the candidates' own noise. Use None
        for anything released (see :func:`skdp.mechanisms.as_generator`):
        every draw is then fresh. A seeded search is not private once
        released: from the seed (which the fitted object keeps) one can
        replay its draws, the number of runs, the losers and the noise.
    noise : {"fast", "secure"}, default="fast"
        Sampler of every privacy noise draw of the search: the search sets it
        on every DP step of the candidates and draws the validation scores'
        noise with it. ``"secure"``: exact discrete Gaussian noise on a grid
        from the operating system's CSPRNG (see :ref:`secure_noise`), each
        run then accounted in zCDP with the grid rounding included; it
        requires ``random_state=None``.
    verbose : int, default=0
        1: two lines about the search, never about its candidates: the
        calibration (each run's budget, the score's noise, the law of the
        number of runs) before any fit, and the released winner and total
        after the selection. The number of runs, the losers, per-candidate
        progress and the run time stay secret (see Notes); the candidates
        always run silent, whatever their own ``verbose``.

    Attributes
    ----------
    best_estimator_ : estimator
        The winning candidate, trained on the training part only.
    best_params_ : dict
        Its parameters from ``param_distributions``.
    best_score_ : float
        Its noisy validation score (released), clipped to the score's range
        (``[0, 1]`` for accuracy, ``[-score_bound, 0]`` for a loss). The
        largest of the runs' noisy scores, so biased upwards: by about
        ``σ·sqrt(2 log K)`` where the scores' noise σ (``verbose`` prints it;
        public) is comparable to their spread, and K runs. A regression's σ scales with
        ``score_bound``: on ISLP's Wage (total ε = 1, ``score_bound`` 200²)
        σ was 682 on mean squared errors near 2000, the choice near random
        and ``best_score_`` (−482) far above the winner's test error (2056).
        Score a winner on data of its own before trusting the score.
    cv_results_ : dict
        Only what is released: ``params``, ``mean_test_score`` and
        ``rank_test_score`` of the winner. The number of runs and the other
        candidates stay secret: revealing them would void the bound.
    best_index_ : int
        0: the winner's index in ``cv_results_``, which holds it alone (as
        in scikit-learn's searches, where it indexes every candidate).
    candidate_budget_ : PrivacyCost
        What each run spends (μ-GDP, or ρ-zCDP with ``noise="secure"``;
        training and scoring use disjoint rows).
    privacy_spent_ : PrivacyCost
        The guarantee of the whole search: (``epsilon``, ``delta``)-DP or
        less, under the adjacency of the estimator's DP steps.

    Notes
    -----
    **Guarantee.** The split is a uniformly random permutation of the rows
    (n is public). A record is in exactly one part, and under replace-one
    adjacency it moves either the training (the model, and the score as its
    post-processing) or one term of the validation mean, never both: so each
    run is μ_c-GDP, with the DP steps' budgets composing to μ_c and the score
    released with noise ``Δ/μ_c``, ``Δ = (score range)/m``. A μ_c-GDP run is
    (λ, λμ_c²/2)-RDP; Papernot & Steinke's Theorem 2 bounds the release of
    the best of K runs in RDP, which :func:`skdp.accounting.epsilon_from_rdp`
    converts to (ε, δ). μ_c is the largest with that ε at most ``epsilon``
    (:func:`skdp.accounting.zcdp_of_private_selection`). Pipelines split
    μ_c² among their DP steps as :func:`skdp.pipeline.set_privacy_budget`
    does by default: equally, but for the DP ``transformer`` of a
    TransformedTargetRegressor, at half weight.

    With ``noise="secure"`` the same argument runs in zCDP: each run must be
    ρ_c-zCDP, ρ_c = μ_c²/2 from the same function, i.e. (λ, λρ_c)-RDP, the
    RDP curve the theorem is applied to. The DP steps split ρ_c by the same weights
    (each is calibrated to the ε whose zCDP conversion is its share; a
    secure fit is ρ-zCDP with ρ at most that share), and the score, a
    release of sensitivity Δ rounded to the grid and given discrete Gaussian
    noise of std σ, is ``(Δ/σ + 2^-16)²/2``-zCDP: σ = Δ/(μ_c − 2^-16) makes
    it exactly ρ_c.

    **What the grid may change.** The guarantee is calibrated for the
    estimator as given, so every candidate is checked as built (after
    ``set_params``), before any fit, and refused with a ValueError or
    TypeError unless it has the same steps at the same places; each DP step
    of the same type, declaring the same budget once the search has set its
    privacy parameters (adjacency, e.g. DPBradleyTerry's ``privacy_unit``;
    GDP or not; assumptions, e.g. ``classes=None``) and the same label set
    (``classes``, a declaration about all of y); every other step reading
    only the shape of the data; no DP estimator hidden inside a step; and no
    ColumnTransformer that reads the values (a callable column selector not
    marked with :func:`skdp.rowwise`, or ``sparse_threshold > 0`` with a
    part that may return a sparse matrix, whose sparse-or-dense choice reads
    the share of stored values: set ``sparse_threshold=0``), nor a
    TransformedTargetRegressor that checks its round trip on y (set
    ``check_inverse=False``). A
    step the grid adds, drops or swaps for a non-private one would be
    released uncharged. Every combination of the listed values is checked
    before anything is drawn (one value at a time past 256 combinations); a
    candidate refused as drawn (a value from a distribution, or a combination
    refused only jointly past 256) is a failed run. Grid values are
    cloned for each candidate (as scikit-learn's searches do): no two
    candidates share an object, and a DP step passed in the grid gets the
    search's ``epsilon``, ``delta``, ``noise`` and seed, whatever it held.

    **Failed runs.** Which candidates ran must not show in whether the
    search fails. Every candidate the grid can build must accept the data,
    and what can be checked is refused before anything is drawn: missing
    (None, NaN) and infinite values in every column of any type (a DataFrame
    with a string column, an object array), X that is not numbers for a
    plain DP estimator, a label outside a declared label set. A run that
    fails anyway, in its fit or its score, is a failed run whatever the
    reason: its own noisy release
    (:class:`~skdp.exceptions.MechanismFailedError`: a non-finite model) or
    the data (a transformation in the grid that makes a value infinite, an
    encoder meeting a category it was not given). It scores the worst of
    the range and is selected like any other (raising would reveal a
    loser); if it wins, the search raises a MechanismFailedError that names
    the error's type, never its message (which may quote a value), and
    releases nothing. Only a bug read from the parameters (an invalid
    parameter value, a fit beyond its declared budget) stops the search
    at once. A failure on the data is not covered by the guarantee, which
    is for data every candidate accepts.

    **The label set.** A classifier whose DP steps would read their label set
    from y (``classes=None``) gets it once, from all of y, under the caveat
    its budget states (the search's too): a candidate never reads the label
    set of its own training part. A declared label set is checked against
    all of y before anything is drawn (a label outside it refuses the
    search, with a message that names no label).

    **Silent candidates.** The number of runs and the losers stay secret, so
    the candidates run with ``verbose`` off and numpy's floating-point
    events off (in every run, in joblib's workers too), their warnings are
    caught, and only those the winner's DP steps raised in their fits (about
    public values: parameters, sizes, a declared label set) are re-emitted,
    each once, after the selection. A warning only a loser gave is dropped,
    and so are a plain step's (a OneHotEncoder meeting an unknown category),
    those of the scoring on the validation rows, which may depend on one
    record, and every warning of runs fitted in threads, which cannot be
    told apart. The runs' calibrations are memoised apart and forgotten
    (:func:`skdp.accounting.unshared_memo`): skdp's process-wide caches count
    their calls.

    **The released model carries the search's cost.** Recording
    ``best_estimator_`` (or one of its DP steps) in a
    :class:`~skdp.PrivacyLedger` charges ``privacy_spent_``, the whole
    search, not one candidate's fit; a winner fitted again is charged the
    search and its new fits (its hyperparameters are still the search's
    choice), and so is the search, which then predicts with them.

    **Deviations.** There is no refit on all the data (it would cost another
    budget): the released model is the winner as trained. Run time depends on
    K, which is random and independent of the data, but the bound assumes K
    stays secret: do not publish the run time or a log of the runs. The
    process that ran the search is not a release either: its memory, other
    libraries' caches (narwhals counts scikit-learn's input checks), the
    version counter of Python's warning filters (every ``catch_warnings``
    advances it) and timings reflect the work of K runs; release the fitted
    search, not access to the session that fitted it.

    References
    ----------
    .. [1] N. Papernot, T. Steinke. "Hyperparameter tuning with Renyi
       differential privacy". ICLR 2022.
    .. [2] J. Liu, K. Talwar. "Private selection from private candidates".
       STOC 2019.

    Examples
    --------
    >>> from sklearn.datasets import make_classification
    >>> from skdp import DPLogisticRegression
    >>> from skdp.model_selection import DPRandomSearchCV
    >>> X, y = make_classification(n_samples=3000, random_state=0)
    >>> search = DPRandomSearchCV(
    ...     DPLogisticRegression(classes=[0, 1]),
    ...     {"clip_norm": [0.1, 1.0, 10.0]},
    ...     n_iter=5, epsilon=2.0, delta=1e-5,
    ... ).fit(X, y)
    >>> round(search.privacy_spent_.epsilon, 6) <= 2.0
    True
    >>> sorted(search.cv_results_)
    ['mean_test_score', 'params', 'rank_test_score']
    """

    _parameter_constraints = {
        "estimator": [object],
        "param_distributions": [dict, list],
        "n_iter": [Interval(Real, 1, None, closed="left")],
        "n_iter_shape": [Interval(Real, 0, None, closed="left")],
        "epsilon": [Interval(Real, 0, None, closed="neither")],
        "delta": [Interval(Real, 0, 1, closed="neither")],
        "noise": PRIVACY_CONSTRAINTS["noise"],
        "scoring": [
            StrOptions(
                {"accuracy", "neg_mean_squared_error", "neg_mean_absolute_error"}
            ),
            None,
        ],
        "score_bound": [CLIP_CONSTRAINT, None],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        # 0 passed here and failed in joblib, after the draws (review)
        "n_jobs": [
            Interval(Integral, None, -1, closed="right"),
            Interval(Integral, 1, None, closed="left"),
            None,
        ],
        "random_state": ["random_state", np.random.Generator],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        estimator,
        param_distributions,
        *,
        n_iter=10,
        n_iter_shape=1.0,
        epsilon=1.0,
        delta=1e-5,
        scoring=None,
        score_bound=None,
        validation_fraction=0.2,
        n_jobs=None,
        random_state=None,
        noise="fast",
        verbose=0,
    ):
        self.estimator = estimator
        self.param_distributions = param_distributions
        self.n_iter = n_iter
        self.n_iter_shape = n_iter_shape
        self.epsilon = epsilon
        self.delta = delta
        self.scoring = scoring
        self.score_bound = score_bound
        self.validation_fraction = validation_fraction
        self.n_jobs = n_jobs
        self.random_state = random_state
        self.noise = noise
        self.verbose = verbose

    # -- the contract ------------------------------------------------------

    def _budget_is_gdp(self):
        return False

    def _budget_adjacency(self):
        # The unit every DP step protects (a record-level step also protects
        # one comparison's outcome); the search's split and score protect both.
        adjacencies = {s.privacy_budget().adjacency for _, s in self._dp_steps()}
        return _common_adjacency(sorted(adjacencies)) or REPLACE_ONE

    def privacy_budget(self):
        budget = super().privacy_budget()
        # The winner's assumptions are the search's (a label set read from y
        # shows in the released model's classes_).
        inner = (c for _, s in self._dp_steps() for c in s.privacy_budget().caveats)
        return replace(budget, caveats=tuple(dict.fromkeys((*budget.caveats, *inner))))

    privacy_budget.__doc__ = DPEstimatorMixin.privacy_budget.__doc__

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        inner = get_tags(self.estimator)
        tags.estimator_type = inner.estimator_type
        tags.classifier_tags = deepcopy(inner.classifier_tags)
        tags.regressor_tags = deepcopy(inner.regressor_tags)
        tags.input_tags.sparse = inner.input_tags.sparse
        return tags

    # -- checks before any fit ---------------------------------------------

    def _steps(self):
        return _steps_of(self.estimator)

    def _dp_steps(self):
        return [(p, s) for p, s in self._steps() if is_dp_estimator(s)]

    def _check_estimator(self, estimator):
        """The structure of ``estimator`` (given, or a candidate as built):
        DP steps only, Gaussian, one record or outcome, nothing hidden."""
        for prefix, composite in _composites_of(estimator):
            _check_composite(prefix, composite)
        steps = _steps_of(estimator)
        _refuse_callbacks([("", estimator), *_composites_of(estimator), *steps])
        for prefix, step in steps:
            where = f"{type(step).__name__} ({prefix.rstrip('_') or 'estimator'})"
            if isinstance(step, str) or step is None:
                if step not in _SKIPPED:
                    raise TypeError(f"{prefix.rstrip('_')}: unknown step {step!r}.")
                continue
            if not is_dp_estimator(step) and not _reads_only_shape(step):
                raise TypeError(
                    f"{where} is not a DP estimator: it would read the data "
                    "without a guarantee. DPRandomSearchCV takes DP estimators, "
                    "or a Pipeline (ColumnTransformer, FeatureUnion, "
                    "TransformedTargetRegressor and nested pipelines included) "
                    "of DP steps and steps that read only the shape."
                )
            inner = _dp_inside(step)
            if inner is not None:
                raise TypeError(
                    f"{where} holds a DP estimator ({type(inner).__name__}) that "
                    "the search would neither calibrate nor charge."
                )
        dp_steps = [(p, s) for p, s in steps if is_dp_estimator(s)]
        if not dp_steps:
            raise TypeError("The estimator contains no DP estimator.")
        final = estimator.steps[-1][1] if isinstance(estimator, Pipeline) else estimator
        if not hasattr(final, "predict"):
            raise TypeError(
                f"The last step ({type(final).__name__}) must predict: the "
                "search scores candidates on held-out rows."
            )
        for _, step in dp_steps:
            if "noise" not in step.get_params(deep=False):
                raise TypeError(
                    f"{type(step).__name__} has no 'noise' parameter: the search "
                    "cannot set its sampler."
                )
            budget = clone(step).set_params(noise=self.noise).privacy_budget()
            # The runs are calibrated as μ-GDP (zCDP with secure noise): a
            # step accounted in zCDP alone (DPSparseGLM's peeling) would
            # spend more than its μ at the ε the calibration gives it.
            gaussian = budget.mu if self.noise == "fast" else budget.rho
            declared = getattr(step, "_budget_is_gdp", lambda: True)()
            if gaussian is None or not declared:
                raise TypeError(
                    f"{type(step).__name__} is not all-Gaussian (its budget is "
                    "not μ-GDP, or zCDP from discrete Gaussian noise); the "
                    "private search composes Gaussian candidates."
                )
            if budget.adjacency not in (REPLACE_ONE, REPLACE_ONE_OUTCOME):
                raise TypeError(
                    f"{type(step).__name__} protects '{budget.adjacency}'; the "
                    "search's split and score protect one record."
                )
        return dp_steps

    def _check_grid(self, dp_steps):
        grids = self.param_distributions
        grids = [grids] if isinstance(grids, dict) else list(grids)
        if not grids or any(not g for g in grids):
            raise ValueError("param_distributions is empty: nothing to search.")
        reserved = {p + name for p, _ in dp_steps for name in _PRIVACY_PARAMS}
        for grid in grids:
            taken = reserved.intersection(grid)
            if taken:
                raise ValueError(
                    f"param_distributions sets {sorted(taken)}, which the search "
                    "sets itself from its total budget (and fresh noise)."
                )
        return grids

    def _build(self, params, privacy, expected):
        """The candidate for ``params``, as it will be fitted, or a refusal.

        Grid values are cloned (no two candidates share an object); the
        search's privacy parameters are then set on the DP steps of the
        candidate as built, and the candidate must have the estimator's
        structure: the same steps at the same places, each DP step of the
        same type with the same declared budget (adjacency, accounting,
        assumptions, and μ or ρ), every other step reading only the shape.
        """
        params = {key: clone(value, safe=False) for key, value in params.items()}
        try:
            candidate = clone(self.estimator).set_params(**params)
        except (AttributeError, TypeError, ValueError) as error:
            raise ValueError(
                f"param_distributions sets {sorted(params)}, which the estimator "
                f"does not take: {error}"
            ) from None
        try:
            self._check_estimator(candidate)
        except TypeError as error:
            raise TypeError(
                f"A candidate that param_distributions builds (setting "
                f"{sorted(params)}) is refused: {error}"
            ) from None
        shape = _structure(candidate, privacy)
        if [e[0] for e in expected] != [c[0] for c in shape]:
            raise ValueError(
                "param_distributions changes the steps of the pipeline (their "
                "number or names): the search's budget is calibrated for the "
                "estimator's steps."
            )
        steps = dict(_steps_of(candidate))
        for (prefix, kind, budget, labels), (_, c_kind, c_budget, c_labels) in zip(
            expected, shape, strict=True
        ):
            where = f"step '{prefix[:-2]}'" if prefix else "the estimator"
            if kind is None and c_kind is not None:
                raise ValueError(
                    f"param_distributions puts a DP estimator ({c_kind.__name__}) "
                    f"at {where}, where the estimator has none: the search "
                    "calibrates and charges only the DP steps of the estimator it "
                    "is given. Put it in the estimator instead."
                )
            if kind is not None and c_kind is not kind:
                step = steps[prefix]
                plain = isinstance(step, str) or step is None
                got = repr(step) if plain else type(step).__name__
                raise ValueError(
                    f"param_distributions replaces the DP step {kind.__name__} "
                    f"at {where} by {got}: the search's budget is calibrated for "
                    "the estimator's DP steps. Search over their parameters "
                    "instead."
                )
            if budget != c_budget:
                raise ValueError(
                    f"param_distributions changes what {kind.__name__} at {where} "
                    f"declares ({c_budget} instead of {budget}): its adjacency, "
                    "accounting or assumptions would differ from the search's "
                    "claim. Set that parameter on the estimator, not in the grid."
                )
            if labels != c_labels:
                raise ValueError(
                    f"param_distributions changes the label set {kind.__name__} at "
                    f"{where} declares (classes={list(c_labels)} instead of "
                    f"{list(labels)}): classes is a declaration about all of y, "
                    "not a hyperparameter, and one record's label would decide "
                    "which candidates fail. Set it on the estimator, not in the "
                    "grid."
                )
        candidate.set_params(**privacy)
        _validate_every_parameter(candidate)
        return candidate

    def _check_listed(self, grids, privacy, expected):
        """Build every combination of the listed values before anything is
        drawn (past 256 combinations, every listed value alone), so that a
        grid is refused whatever the number of runs. A candidate refused as
        drawn (a value from a distribution, or a combination refused only
        jointly past 256) is a failed run instead, never a refusal after
        some runs."""
        for grid in grids:
            listed = {k: v for k, v in grid.items() if not hasattr(v, "rvs")}
            if not listed:
                continue
            if len(ParameterGrid(listed)) <= _MAX_CHECKED_COMBINATIONS:
                for params in ParameterGrid(listed):
                    self._build(params, privacy, expected)
                continue
            for key, values in listed.items():
                for value in values:
                    self._build({key: value}, privacy, expected)

    def _scorer(self):
        scoring = self.scoring
        classifier = is_classifier(self.estimator)
        if scoring is None:
            scoring = "accuracy" if classifier else "neg_mean_squared_error"
        if scoring == "accuracy":
            return scoring, 1.0
        if self.score_bound is None:
            raise ValueError(
                f"scoring={scoring!r} needs score_bound: a public bound on one "
                "record's loss (e.g. the squared range of y), so that the score's "
                "sensitivity is known."
            )
        return scoring, float(self.score_bound)

    def _label_set(self, y, dp_steps):
        """``classes`` for every DP step that would read its label set from
        its own training part: read once, from all of y, under the caveat the
        step states (the search's too, see ``privacy_budget``)."""
        if not is_classifier(self.estimator):
            return {}
        reading = {p: _label_set_read_from(s, y) for p, s in dp_steps}
        reading = {p: labels for p, labels in reading.items() if labels is not None}
        if not reading:
            return {}
        # Read from y, the labels are public (the caveat): y is typed as each
        # step's fit would type it, and refused before any run.
        check_classification_targets(y)
        if any(len(labels) < 2 for labels in reading.values()):
            raise ValueError(
                f"{type(self.estimator).__name__} needs at least 2 classes; y "
                "contains only one class."
            )
        warnings.warn(
            "The label set was read from y and is treated as public (it is "
            "released in classes_). If which labels occur is private, pass "
            "classes=[...] declared in advance to the estimator.",
            PrivacyLeakWarning,
            stacklevel=4,  # the caller of fit (through private_fit)
        )
        return {p + "classes": labels for p, labels in reading.items()}

    def _calibrate(self, weights):
        """(μ of one run, each DP step's ε) for the total budget.

        Step ``i`` gets ``μ_i = μ·sqrt(w_i/W)`` (``W = Σ w``), so that the
        steps compose to μ (``Σ μ_i² = μ²``); with ``noise="secure"`` μ is
        ``sqrt(2ρ_c)`` for the run's zCDP ρ_c, and each step's ε is the one
        whose zCDP conversion is its share ``ρ_c·w_i/W``.
        """
        secure = self.noise == "secure"
        if self.n_iter == 1 and secure:  # one run, accounted in zCDP
            mu = math.sqrt(2.0 * zcdp_from_epsilon_tight(self.epsilon, self.delta))
        elif self.n_iter == 1:  # K = 1 always: one run, nothing to select
            mu = mu_from_epsilon(self.epsilon, self.delta)
        else:
            rho = zcdp_of_private_selection(
                self.epsilon, self.delta, mean=self.n_iter, shape=self.n_iter_shape
            )
            mu = math.sqrt(2.0 * rho)
        if mu < _MIN_CANDIDATE_MU:
            raise ValueError(
                f"The budget (epsilon={self.epsilon:g}, delta={self.delta:g}) is "
                f"too small for a private search with n_iter={self.n_iter:g}: "
                f"each candidate would get mu={mu:.3g}, a release of pure noise. "
                "Raise epsilon or lower n_iter."
            )
        total = math.fsum(weights)
        epsilons = []
        for weight in weights:
            # Err low by 1e-9 so that each step's calibrated μ stays below
            # its share.
            step_mu = mu * math.sqrt(weight / total) * (1.0 - 1e-9)
            if secure:
                epsilons.append(epsilon_from_zcdp_tight(step_mu**2 / 2.0, self.delta))
            else:
                epsilons.append(epsilon_from_mu(step_mu, self.delta))
        if not min(epsilons) > 0:
            raise ValueError(
                f"At delta={self.delta:g} a DP step's share of the budget is "
                f"epsilon={min(epsilons):g}: delta is so large that it alone "
                "covers the step. Choose a smaller delta (well below 1/n)."
            )
        return mu, epsilons

    # -- fit ---------------------------------------------------------------

    def __setattr__(self, name, value):
        super().__setattr__(name, value)
        # The released model carries the search's cost, in the final form
        # that private_fit sets last: recording it alone charges the search.
        if name == "privacy_spent_" and "best_estimator_" in vars(self):
            _mark_release(self.best_estimator_, value)

    def _audit_canary(self):
        """Default canary (for :mod:`skdp.audit`): the search's own."""
        return "SearchCanary", {}

    @private_fit
    def fit(self, X, y):
        """Run the private search.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : DPRandomSearchCV
        """
        self._validate_params()
        require_positive_delta(self)
        dp_steps = self._check_estimator(self.estimator)
        grids = self._check_grid(dp_steps)
        scoring, score_range = self._scorer()
        mu, step_epsilons = self._calibrate(_step_weights(self.estimator, dp_steps))
        privacy = {
            p + name: value
            for (p, _), step_epsilon in zip(dp_steps, step_epsilons, strict=True)
            for name, value in (
                ("epsilon", step_epsilon),
                ("delta", float(self.delta)),
                ("noise", self.noise),
            )
        }
        expected = _structure(self.estimator, privacy)
        self._check_listed(grids, privacy, expected)
        frame = X if hasattr(X, "iloc") else None
        # Missing values first: scikit-learn's check raises a TypeError on
        # pd.NA in an object column ("boolean value of NA is ambiguous").
        if frame is not None:
            _refuse_missing_or_infinite(np.zeros(0), "X", frame)  # isna() only
        elif isinstance(X, np.ndarray) and X.dtype.kind in "OUSfc":
            _refuse_missing_or_infinite(X, "X")  # (scikit-learn's message
            # would advise the imputer in the pipeline that cannot help here)
        elif isinstance(X, (list, tuple)):
            _refuse_missing_or_infinite(np.asarray(X, dtype=object), "X")
        X, y = validate_data(
            self,
            X,
            y,
            accept_sparse=SPARSE_FIT_FORMATS,
            dtype=None,
            reset=True,
        )
        if sp.issparse(X):
            X = csr_keeping_duplicates(X)  # rows to split; candidates merge them
        if composite_parts(self.estimator) is None:
            # Every candidate is a DP estimator of this type, which takes
            # numbers: X is converted once, before any draw, as each would.
            X = _as_numbers(X, type(self.estimator).__name__)
        _check_declared_labels(y, dp_steps)
        # Every column, of any kind, is checked (a candidate that fails where
        # another would not reveals the draws); a DataFrame is then kept: a
        # ColumnTransformer may select its columns by name.
        _refuse_missing_or_infinite(X, "X", frame)
        _refuse_missing_or_infinite(y, "y")
        labels = self._label_set(y, dp_steps)
        if frame is not None:
            X = frame
        n = X.shape[0]
        m = round(self.validation_fraction * n)
        if m < 1 or n - m < 2:
            raise ValueError(
                f"n_samples={n} is too few: validation_fraction="
                f"{self.validation_fraction} leaves {m} validation and {n - m} "
                "training rows."
            )
        secure = self.noise == "secure"

        def select():
            # The runs, their exact scores and K live in this frame only: an
            # exception leaves with its traceback cut to fit's frame (below),
            # so no traceback printer that shows locals (Sentry, pytest
            # --showlocals, IPython's verbose mode) can reach them.
            rng = as_generator(self.random_state, self.noise)
            order = rng.permutation(n)  # data-independent: n is public
            valid, train = order[:m], order[m:]
            n_runs = _draw_truncated_negative_binomial(
                rng, self.n_iter, self.n_iter_shape
            )
            # A seeded search (reproducible on request, and it warned) seeds each
            # candidate from its own stream: distinct seeds, so no two fits of
            # one search share noise. Unseeded, every candidate draws fresh noise.
            seeded = self.random_state is not None
            # The score's sensitivity is score_range/m; secure noise's rounding
            # adds 2^-16 noise stds to it (see the Notes).
            noise_std = score_range / m / (mu - _SECURE_SLACK if secure else mu)
            if self.verbose:
                # Public values only: the budget, n, m and the law of K.
                each = f"rho={mu * mu / 2:.4g}-zCDP" if secure else f"mu={mu:.4g}-GDP"
                print(
                    f"[DPRandomSearchCV] each run {each} ({len(dp_steps)} DP step(s) "
                    f"at epsilon={', '.join(f'{e:.4g}' for e in step_epsilons)}); "
                    f"{n - m} training and {m} "
                    f"validation rows; score noise std {noise_std:.3g}; the number "
                    f"of runs K ~ TNB(mean={self.n_iter:g}, "
                    f"shape={self.n_iter_shape:g}) stays secret"
                )
            # The candidates and their seeds are drawn first, in the order of the
            # stream, none of which reads the data; then the fits, through joblib
            # (in parallel when n_jobs or the joblib context asks); then each
            # score's noise, in the order of the runs. A seeded search gives the
            # same result for any n_jobs and backend.
            runs = []
            # Building a candidate calibrates it: the shared caches' hit counts
            # would count the runs (their fits calibrate in _fit_and_score).
            with unshared_memo():
                for _ in range(n_runs):  # a loop over candidates, never over records
                    params = next(
                        iter(
                            ParameterSampler(
                                self.param_distributions, 1, random_state=_seed(rng)
                            )
                        )
                    )
                    seeds = {
                        p + "random_state": _seed(rng) if seeded else None
                        for p, _ in dp_steps
                    }
                    try:
                        candidate = self._build(params, privacy, expected)
                    except (InvalidParameterError, TypeError, ValueError) as error:
                        # A candidate refused as built that the check before any draw
                        # could not build: a value drawn from a distribution, or past
                        # 256 combinations a combination refused only jointly. A
                        # failed run (never fitted), as raising now would show how
                        # many runs were drawn. (Read from the parameters only.)
                        runs.append(
                            (params, _Failure(type(error).__name__, str(error)))
                        )
                        continue
                    candidate.set_params(**seeds, **labels, **_silenced(candidate))
                    runs.append((params, candidate))
            X_train, X_valid = _safe_indexing(X, train), _safe_indexing(X, valid)
            y_train, y_valid = y[train], y[valid]
            # Each run catches its own warnings; this catches any that a run in a
            # thread lets through (catch_warnings is process-wide), and drops it.
            with warnings.catch_warnings(record=True):
                warnings.simplefilter("always")
                # verbose=0 whatever the joblib default: its progress lines count
                # the runs (K, which must stay secret)
                fitted = Parallel(n_jobs=self.n_jobs, verbose=0)(
                    delayed(_fit_and_score)(
                        candidate,
                        X_train,
                        y_train,
                        X_valid,
                        y_valid,
                        scoring,
                        score_range,
                    )
                    for _, candidate in runs
                )
            best = None
            for (params, _), (score, candidate, caught) in zip(
                runs, fitted, strict=True
            ):
                noisy = float(add_gaussian_noise(score, noise_std, rng))
                if best is None or noisy > best[0]:
                    best = (noisy, params, candidate, caught)
            if isinstance(best[2], _Failure):
                # The winner failed: releasing that is releasing the winner (the
                # losers' failures stay secret), with no value of the data.
                kind, message = best[2]
                if message is None:
                    message = (
                        f"{kind} on the data (its message is not shown: it may "
                        "quote a value). Every candidate the grid can build must "
                        "accept every value a record may hold."
                    )
                raise MechanismFailedError(
                    f"The selected run failed: {message} No model is released, but "
                    "the search's budget is spent: which run won came from noisy "
                    "scores of the data, and this failure is the search's output. "
                    "Record search.privacy_budget() with PrivacyLedger before "
                    "searching the same data again."
                )
            return best

        try:
            best = select()
        except BaseException as error:
            raise error.with_traceback(None) from None
        self.best_score_, self.best_params_, self.best_estimator_, caught = best
        # Into the score's own range (post-processing of the released score):
        # noise took a mean squared error's negative to +718 (review).
        low, high = (0.0, 1.0) if scoring == "accuracy" else (-score_range, 0.0)
        self.best_score_ = float(np.clip(self.best_score_, low, high))
        # The runs were not stamped (a counter or a clock would count them):
        # the released model's DP steps are stamped now, in their order.
        stamp_release(
            [
                s
                for _, s in _steps_of(self.best_estimator_, fitted=True)
                if is_dp_estimator(s)
            ]
        )
        # Only the winner's warnings, each once: the losers' (and how many
        # runs warned) would reveal the number of runs and the losers.
        for category, message in caught:
            warnings.warn(message, category, stacklevel=3)  # the caller of fit
        self.cv_results_ = {
            "params": [self.best_params_],
            "mean_test_score": np.array([self.best_score_]),
            "rank_test_score": np.array([1], dtype=np.int32),
        }
        self.best_index_ = 0  # the winner's row: cv_results_ holds it alone
        if is_classifier(self.estimator):
            self.classes_ = self.best_estimator_.classes_
        adjacency = self._budget_adjacency()
        run = "one run: training and a noisy validation score on disjoint rows"
        if secure:
            rho = mu * mu / 2.0
            self.candidate_budget_ = PrivacyCost(
                epsilon_from_zcdp_tight(rho, self.delta),
                float(self.delta),
                None,
                adjacency,
                run,
                zcdp=rho,
            )
        else:
            self.candidate_budget_ = PrivacyCost.from_gdp(
                mu, delta=self.delta, adjacency=adjacency, mechanism=run
            )
        if self.n_iter == 1:
            self.privacy_spent_ = replace(
                self.candidate_budget_, mechanism="DPRandomSearchCV: one run"
            )
        else:
            self.privacy_spent_ = self._selection_cost(mu, adjacency, secure)
        # A seeded search seeds its winner's steps, and the released model
        # keeps those seeds: a refit of a clone of it would draw the same
        # noise. Their fingerprints join the search's, so that the ledger
        # refuses to total the search with such a refit.
        winner_seeds = tuple(
            seed
            for _, step in _steps_of(self.best_estimator_, fitted=True)
            if is_dp_estimator(step)
            for seed in step.privacy_spent_.noise_seeds
        )
        self.privacy_spent_ = replace(self.privacy_spent_, noise_seeds=winner_seeds)
        if self.verbose:
            print(
                f"[DPRandomSearchCV] released {self.best_params_} with noisy "
                f"score {self.best_score_:.4g}; search total {self.privacy_spent_}"
            )
        return self

    def _selection_cost(self, mu, adjacency, secure):
        """Papernot & Steinke's Theorem 2 bound of the whole search."""
        epsilon = epsilon_of_private_selection(
            mu * mu / 2.0, self.delta, mean=self.n_iter, shape=self.n_iter_shape
        )
        return PrivacyCost(
            epsilon,
            float(self.delta),
            None,
            adjacency,
            f"DPRandomSearchCV: the best of K ~ TNB(mean={self.n_iter:g}, "
            f"shape={self.n_iter_shape:g}) runs of a "
            + (f"rho={mu * mu / 2:.4g}-zCDP" if secure else f"mu={mu:.4g}-GDP")
            + " candidate (Papernot & Steinke 2022, Thm. 2)",
        )

    # -- delegation ----------------------------------------------------------

    @available_if(_delegate("predict"))
    def predict(self, X):
        """Predict with the winning candidate."""
        check_is_fitted(self)
        return self.best_estimator_.predict(X)

    @available_if(_delegate("predict_proba"))
    def predict_proba(self, X):
        """Class probabilities of the winning candidate."""
        check_is_fitted(self)
        return self.best_estimator_.predict_proba(X)

    @available_if(_delegate("predict_log_proba"))
    def predict_log_proba(self, X):
        """Log class probabilities of the winning candidate."""
        check_is_fitted(self)
        return self.best_estimator_.predict_log_proba(X)

    @available_if(_delegate("decision_function"))
    def decision_function(self, X):
        """Decision function of the winning candidate."""
        check_is_fitted(self)
        return self.best_estimator_.decision_function(X)

    @available_if(_delegate("transform"))
    def transform(self, X):
        """Transform with the winning candidate."""
        check_is_fitted(self)
        return self.best_estimator_.transform(X)

    def score(self, X, y):
        """The winning candidate's ``score`` on (X, y)."""
        check_is_fitted(self)
        return self.best_estimator_.score(X, y)


def _label_set_read_from(step, y):
    """What a DP step's fit would read as its label set (None: nothing); a
    step without skdp's mixin reads ``np.unique(y)`` iff it says so."""
    reader = getattr(step, "_label_set_read_from", None)
    if reader is not None:
        return reader(y)
    return np.unique(y) if PUBLIC_LABELS in step.privacy_budget().caveats else None


def _seed(rng):
    return int(rng.integers(2**32))


def _steps_of(estimator, prefix="", fitted=False):
    """``(parameter prefix, step)`` of every step, through nested composites
    (:func:`skdp._ledger.composite_parts`), in order; ``[("", estimator)]``
    for a single step."""
    parts = composite_parts(estimator, fitted)
    if parts is None:
        return [(prefix, estimator)]
    steps = []
    for name, part in parts:
        if isinstance(part, str) or part is None:
            steps.append((f"{prefix}{name}__", part))
        else:
            steps += _steps_of(part, f"{prefix}{name}__", fitted)
    return steps


def _step_weights(estimator, dp_steps):
    """Each DP step's weight in a run's μ², as :func:`skdp.pipeline.
    set_privacy_budget` weighs them by default: 1, and ``_TARGET_WEIGHT``
    for a step inside a TransformedTargetRegressor's ``transformer`` (it
    releases statistics of the target alone)."""
    targets = [
        prefix + "transformer__"
        for prefix, composite in _composites_of(estimator)
        if isinstance(composite, TransformedTargetRegressor)
    ]
    return [
        _TARGET_WEIGHT if any(p.startswith(t) for t in targets) else 1.0
        for p, _ in dp_steps
    ]


def _composites_of(estimator, prefix=""):
    """``(prefix, composite)`` of every composite inside
    (:func:`skdp._ledger.composite_parts`)."""
    parts = composite_parts(estimator)
    if parts is None:
        return []
    found = [(prefix, estimator)]
    for name, part in parts:
        if not (isinstance(part, str) or part is None):
            found += _composites_of(part, f"{prefix}{name}__")
    return found


def _check_composite(prefix, composite):
    """Refuse a Pipeline's cache (``memory``), and what a composite reads
    from the values outside its steps: a
    ColumnTransformer's column selector that may choose from them, and its
    sparse-or-dense choice unless its structure fixes it
    (:func:`skdp._ledger.container_from_density`); a
    TransformedTargetRegressor's round-trip check on y (see
    :class:`~skdp.PrivacyLedger`)."""
    if isinstance(composite, Pipeline) and composite.memory is not None:
        raise TypeError(
            f"The Pipeline ({prefix.rstrip('_') or 'estimator'}) has memory="
            f"{composite.memory!r}: its cache keeps every run's fitted steps "
            "on disk (the losers' noisy releases) and lets runs share one "
            "noisy fit, which the selection's guarantee does not cover. Set "
            "memory=None."
        )
    if isinstance(composite, TransformedTargetRegressor):
        if composite.check_inverse and (
            composite.transformer is not None or composite.func is not None
        ):
            raise TypeError(
                f"The TransformedTargetRegressor ({prefix.rstrip('_') or 'estimator'})"
                " has check_inverse=True: its fit compares inverse_transform("
                "transform(y)) with y and warns on a mismatch that one record can "
                "cause. Set check_inverse=False."
            )
        return
    if not isinstance(composite, ColumnTransformer):
        return
    where = f"The ColumnTransformer ({prefix.rstrip('_') or 'estimator'})"
    for name, _, columns in composite.transformers:
        if _reads_values(columns):
            raise TypeError(
                f"{where} selects the columns of '{name}' with a callable "
                f"({columns!r}) not marked as reading only names, dtypes and "
                "the shape: the columns it picks could depend on the values. "
                "Use column names, indices or make_column_selector, or mark "
                "it with skdp.rowwise."
            )
    varying = container_from_density(composite)
    if varying:
        raise TypeError(
            f"{where} has sparse_threshold={composite.sparse_threshold:g} and "
            f"parts that may return a sparse matrix "
            f"({', '.join(repr(v) for v in varying)}): it would choose between "
            "a sparse and a dense output from the share of stored values, "
            "which depends on the data. Set sparse_threshold=0 (always dense)."
        )


def _structure(estimator, privacy):
    """Each step's prefix and, for a DP step, its type and the budget it
    declares once the search's ``privacy`` parameters are set (on a copy)."""
    shape = []
    for prefix, step in _steps_of(estimator):
        if not is_dp_estimator(step):
            shape.append((prefix, None, None, None))
            continue
        own = {
            key[len(prefix) :]: value
            for key, value in privacy.items()
            if key.startswith(prefix) and "__" not in key[len(prefix) :]
        }
        budget = clone(step).set_params(**own).privacy_budget()
        shape.append((prefix, type(step), budget, _declared_labels(step)))
    return shape


def _declared_labels(step):
    """A DP step's declared label set (``classes``), sorted, or None: a
    declaration about all of y, the same for every candidate."""
    classes = step.get_params(deep=False).get("classes")
    if classes is None:
        return None
    try:
        return tuple(np.unique(np.asarray(classes)).tolist())
    except TypeError:  # labels that do not sort: compared as given
        return tuple(np.asarray(classes, dtype=object).ravel().tolist())


def _validate_every_parameter(candidate):
    """Check the parameters of the candidate and of every estimator inside it
    against their constraints (scikit-learn checks them only when each is
    fitted, inside a run): a listed value a step refuses is then refused
    before any draw, whatever the number of runs."""
    from sklearn.base import BaseEstimator

    inner = candidate.get_params(deep=True).values()
    for estimator in [candidate, *inner]:
        # Only those that declare constraints (not every estimator does).
        if isinstance(estimator, BaseEstimator) and hasattr(
            estimator, "_parameter_constraints"
        ):
            estimator._validate_params()


def _missing_or_infinite(value):
    """Whether one entry of an object array is missing (None, NaN, NaT,
    ``pd.NA``) or infinite in any numeric type (an integer beyond float64
    too, a number written as text); other text is neither."""
    if value is None:
        return True
    if isinstance(value, (str, bytes)):
        # A number written as text ('1e999', 'inf', 'nan') becomes one when a
        # candidate passes the column on to a step that takes numbers.
        try:
            return not math.isfinite(float(value))
        except ValueError:
            return False  # text: a category, neither missing nor infinite
    try:
        return bool(value != value) or cmath.isinf(value)
    except OverflowError:
        return True  # an integer beyond float64: infinite once converted
    except (TypeError, ValueError):  # not a number (pd.NA: not a truth value)
        return value is getattr(sys.modules.get("pandas"), "NA", None)


def _as_numbers(X, name):
    """X as numbers (an object or string array converted to float64), or a
    refusal that quotes no value (numpy's would: "could not convert string
    to float: 'x'"); a TypeError names the type of the entry only."""
    if sp.issparse(X) or X.dtype.kind not in "OUS":
        return X
    try:
        return X.astype(np.float64)
    except ValueError:
        pass
    # Outside the except clause: numpy's error (quoting the value) is not
    # kept as this one's __context__.
    raise ValueError(
        f"Input X holds a value that is not a number, and {name} takes "
        "numbers (the value is not shown: it is one record's)."
    )


def _refuse_missing_or_infinite(values, name, frame=None):
    """Refuse missing and infinite values in every column, before any draw.

    ``validate_data`` checks a numeric array; an object array (a DataFrame
    with a string column becomes one) only for NaN, so None and ±inf in
    another column would reach the candidates that pass it through. The
    message names no value and no row.
    """
    bad = frame is not None and bool(np.asarray(frame.isna()).any())
    data = values.data if sp.issparse(values) else values
    if not bad and data.dtype.kind in "OUS":  # objects, or text ("inf")
        bad = bool(np.frompyfunc(_missing_or_infinite, 1, 1)(data).any())
    elif not bad and data.dtype.kind in "fc":  # also X converted to numbers
        bad = not np.isfinite(data).all()
    if bad:
        raise ValueError(
            f"Input {name} contains NaN, None or infinity: the search cannot "
            "tell that every candidate the grid can build accepts them, so "
            "missing and non-finite values are refused, in columns of any "
            "type, before any run, even with an imputer in the pipeline. "
            "Impute before the search with a public constant, which reads "
            "nothing but the shape: X = SimpleImputer(strategy='constant', "
            "fill_value=..., keep_empty_features=True).fit_transform(X)."
        )


def _check_declared_labels(y, dp_steps):
    """Refuse y, before any draw, if a label is outside the ``classes`` a DP
    step declares: every candidate declares the estimator's (the grid may not
    change them), so the verdict is read from all of y, whatever the split
    and the candidates drawn. The message names no label."""
    for prefix, step in dp_steps:
        classes = step.get_params(deep=False).get("classes")
        if classes is not None and not np.isin(y, declared_classes(classes)).all():
            where = prefix.rstrip("_") or "estimator"
            raise ValueError(
                "y contains labels that are not in the declared classes of "
                f"{type(step).__name__} ({where}): the search refuses it before "
                "any run (a candidate failing on one record's label would show "
                "which candidates ran). Declare every label y may hold."
            )


def _silenced(candidate):
    """``verbose`` off wherever the candidate has it: a candidate's progress
    output would reveal the number of runs and the losers' iterates."""
    return {
        key: False if isinstance(value, bool) else 0
        for key, value in candidate.get_params(deep=True).items()
        if key.rsplit("__", 1)[-1] == "verbose" and value
    }


def _mark_release(winner, cost):
    """Let the released model carry the search's cost.

    The winner and each of its DP steps hold ``(cost, the costs they report
    now)`` under :data:`skdp._ledger.SEARCH_RELEASE`: recorded alone in a
    :class:`~skdp.PrivacyLedger`, they are charged the whole search, and
    once refitted the search and their new fits. The attribute survives
    pickling; ``clone`` (an unfitted copy) drops it.
    """
    steps = _steps_of(winner, fitted=True)
    parts = [winner] + [s for p, s in steps if p and is_dp_estimator(s)]
    for part in parts:
        reported = tuple(
            s.privacy_spent_
            for _, s in _steps_of(part, fitted=True)
            if is_dp_estimator(s)
        )
        setattr(part, SEARCH_RELEASE, (cost, reported))


class _Failure(NamedTuple):
    """A failed run, in the place of its candidate: the error's type, and
    its message only for a failure of the run's own noisy release (skdp's
    MechanismFailedError, about the release); any other error's message may
    quote the data (scikit-learn's "Found unknown categories ['x']")."""

    kind: str
    message: str | None


def _in_this_process():
    """joblib's sequential backend, silent: a composite's own ``n_jobs`` then
    fits its parts here, one after the other (see :func:`_fit_and_score`)."""
    try:
        from joblib import parallel_config
    except ImportError:  # joblib < 1.3: no default verbosity to silence
        from joblib import parallel_backend

        return parallel_backend("sequential")
    return parallel_config(backend="sequential", verbose=0)


def _own_copy(part):
    """A copy of one part of the data that no other run shares."""
    return part.copy() if hasattr(part, "copy") else deepcopy(part)


def _fit_and_score(candidate, X_train, y_train, X_valid, y_valid, scoring, bound):
    """One run: the candidate fitted on the training part, and its exact score.

    The score is released only with the noise the search adds to it. A run
    that fails, in its fit or its score, returns the worst score of the
    range and a :class:`_Failure` in the candidate's place: on its own noisy
    release (MechanismFailedError), or on the data (a value a transformation
    of the grid makes infinite, an unknown category). Only a bug read from
    the parameters (BudgetCheckError, InvalidParameterError) is raised.

    The run is silent: numpy's floating-point events are off, and of its
    warnings only those raised inside its DP steps' fits (about public
    values, see :func:`skdp._base.collect_fit_warnings`) are returned, each
    once, as (category, message) pairs (a worker process's warnings would
    not reach the caller); the search re-emits only the winner's. The others
    (a plain step's, the score's on the validation rows) may depend on one
    record and are dropped, as are all of a run in a thread (a thread-based
    joblib backend).
    """
    worst = 0.0 if scoring == "accuracy" else -bound
    if isinstance(candidate, _Failure):  # refused as built (a drawn value)
        return worst, candidate, []
    # Its own copy of the data: a step with copy=False (Binarizer,
    # Normalizer, an in-place rowwise function) transformed the shared
    # arrays, so each later run saw data transformed once more, and the
    # winner's model told which run it was (review).
    X_train, y_train, X_valid, y_valid = (
        _own_copy(part) for part in (X_train, y_train, X_valid, y_valid)
    )
    # numpy's floating-point events depend on the data (one validation
    # record of 1e200 overflows its squared error): silent here, as in any
    # DP fit (private_fit). The search's fit is silent too, but a joblib
    # worker (process or thread) does not inherit its np.errstate.
    with (
        warnings.catch_warnings(record=True),
        np.errstate(all="ignore"),
        collect_fit_warnings() as said,
        unshared_memo(),  # the shared caches' hit counts would count the runs
        # A composite's own n_jobs (ColumnTransformer, FeatureUnion) would fit
        # its parts in joblib workers, outside this run's warning capture,
        # errstate and caches: every run's warnings reached the console, and
        # their count gave K. Its parts are fitted here, one after the other,
        # and silently (joblib's progress lines count the runs too).
        _in_this_process(),
    ):
        warnings.simplefilter("always")
        try:
            candidate.fit(X_train, y_train)
            score = _score(candidate, X_valid, y_valid, scoring, bound)
        except (BudgetCheckError, InvalidParameterError):
            raise  # a bug, read from the parameters only: never a loss
        except MechanismFailedError as failure:
            # A failure read from the run's own noisy release (a non-finite
            # model): the run scores the worst its range allows and takes
            # part in the selection like any other; raising here would
            # reveal a loser.
            return worst, _Failure(type(failure).__name__, str(failure)), []
        except Exception as error:
            # A failure on the data (one record can cause it): raising would
            # reveal a loser, and the message may quote the value.
            return worst, _Failure(type(error).__name__, None), []
    if threading.current_thread() is not threading.main_thread():
        # catch_warnings is process-wide: beside other runs in threads it may
        # have caught theirs, which must not pass for the winner's.
        return score, candidate, []
    distinct = dict.fromkeys(
        (w.category, str(w.message))
        for w in said
        if not _SEEDED.match(str(w.message))  # the search warns once itself
    )
    return score, candidate, list(distinct)


def _score(candidate, X, y, scoring, bound):
    """Mean bounded per-record score: its range is [0, 1] or [-bound, 0]."""
    prediction = candidate.predict(X)
    if scoring == "accuracy":
        return float(np.mean(prediction == y))
    error = np.asarray(prediction, dtype=float) - np.asarray(y, dtype=float)
    loss = error**2 if scoring == "neg_mean_squared_error" else np.abs(error)
    loss = np.where(np.isfinite(loss), loss, bound)
    return -float(np.mean(np.minimum(loss, bound)))


def _draw_truncated_negative_binomial(rng, mean, shape):
    """K >= 1 with Papernot & Steinke's truncated negative binomial law."""
    from ..accounting import truncated_negative_binomial_gamma

    gamma = truncated_negative_binomial_gamma(mean, shape)
    if gamma >= 1.0:
        return 1
    if shape == 0.0:
        return int(rng.logseries(1.0 - gamma))
    if gamma**shape <= 0.5:
        while True:  # NB(η, γ) conditioned on K >= 1: P(reject) = γ^η
            k = int(rng.negative_binomial(shape, gamma))
            if k >= 1:
                return k
    # Rejection would loop about 1/(1 - γ^η) times (35 s for 20 draws at
    # η = 1e-7): invert the law's CDF instead. P(K = k) ∝ t_k with
    # t_1 = η(1 - γ), t_{k+1} = t_k·(k + η)/(k + 1)·(1 - γ), whose sum over
    # k >= 1 is γ^-η - 1; the loop runs K times (about the public mean).
    u = float(rng.random()) * math.expm1(-shape * math.log(gamma))
    k, term, total = 1, shape * (1.0 - gamma), 0.0
    while True:
        total += term
        if total >= u or term == 0.0:
            return k
        term *= (k + shape) / (k + 1) * (1.0 - gamma)
        k += 1
