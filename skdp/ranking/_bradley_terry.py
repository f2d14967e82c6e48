"""DPBradleyTerry: differentially private Bradley–Terry–Luce scores."""

import functools
import math
import warnings
from numbers import Real

import numpy as np
import scipy.sparse as sp
from scipy.special import expit, log_expit
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.multiclass import type_of_target
from sklearn.utils.validation import check_is_fitted, validate_data

from .._base import (
    PRIVACY_CONSTRAINTS,
    DPEstimatorMixin,
    check_targets,
    declared_classes,
    private_fit,
    require_positive_delta,
    warn_if_delta_is_large,
)
from .._datafits import BinomialLogistic
from .._dpgd import NoiseBudget, auto_schedule, dpgd
from .._inputs import SPARSE_FIT_FORMATS
from ..accounting import (
    REPLACE_ONE,
    REPLACE_ONE_OUTCOME,
    classical_gaussian_noise_multiplier,
    gaussian_cost,
    mu_from_epsilon,
    sensitivity_factor,
)
from ..exceptions import MechanismFailedError, PrivacyLeakWarning
from ..mechanisms import as_generator, gaussian_mechanism
from ._solver import (
    clip_rows,
    collapse_duplicate_rows,
    penalised_mle,
    project_scores,
)

#: Every design row is clipped to this L2 norm, the norm of ``e_i − e_j``.
ROW_NORM_BOUND = math.sqrt(2.0)

#: L2 sensitivity of one noisy gradient step under ``privacy_unit="comparison"``
#: (replace one comparison; proof in the class Notes): ``sqrt(6)``, attained in
#: the limit by two comparisons that share one item.
COMPARISON_STEP_SENSITIVITY = math.sqrt(6.0)

#: Under ``privacy_unit="comparison"``, rows that are not of the form
#: ``e_i − e_j`` are clipped to this norm, so that with any other row their
#: gradients differ by at most ``sqrt(2) + (sqrt(6) − sqrt(2)) = sqrt(6)``.
OTHER_ROW_NORM_BOUND = COMPARISON_STEP_SENSITIVITY - ROW_NORM_BOUND

#: The caveat of a fit with ``classes=None``: outcomes 0/1 (False/True) are
#: the model's own declared labels; any other pair is read from y.
OUTCOME_LABELS = (
    "outcome labels other than 0 and 1 (False and True) are read from the "
    "training labels and are public"
)

# Decay of the moving average of the Adam iterates (privacy_unit="comparison").
_AVERAGE_DECAY = 0.9


def is_comparison_row(X):
    """Whether each row of ``X`` is exactly ``e_i − e_j`` for some ``i != j``.

    A row is one when it has exactly two non-zero entries whose sum is 0 and
    whose absolute values sum to 2, i.e. one ``+1`` and one ``−1`` (both
    tests are exact in floating point for such rows).

    Parameters
    ----------
    X : {ndarray, scipy.sparse.csr_matrix} of shape (n_rows, n_items)
        Canonical (duplicate sparse entries summed), finite.

    Returns
    -------
    mask : ndarray of bool, shape (n_rows,)
    """
    if sp.issparse(X):
        nonzero = np.diff(X.indptr) - np.bincount(
            np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))[X.data == 0],
            minlength=X.shape[0],
        )
        absolute = abs(X)
    else:
        nonzero = np.count_nonzero(X, axis=1)
        absolute = np.abs(X)
    row_sum = np.asarray(X.sum(axis=1)).ravel()
    abs_sum = np.asarray(absolute.sum(axis=1)).ravel()
    return (nonzero == 2) & (row_sum == 0.0) & (abs_sum == 2.0)


def comparison_rows(X):
    """The rows the ``"comparison"`` unit hands the DP-GD engine.

    Rows ``e_i − e_j`` pass unchanged; every other row is scaled down to L2
    norm at most ``OTHER_ROW_NORM_BOUND = sqrt(6) − sqrt(2)``. A per-record
    transformation that reads nothing but the record itself: it is what
    makes the step sensitivity ``sqrt(6)`` hold for every input (see the
    Notes of :class:`DPBradleyTerry`).

    Parameters
    ----------
    X : {ndarray, scipy.sparse.csr_matrix} of shape (n_rows, n_items)
        Rows already clipped to norm ``sqrt(2)`` (:func:`clip_rows`).

    Returns
    -------
    X_rows : ndarray or scipy.sparse.csr_matrix
    """
    bound = np.where(is_comparison_row(X), ROW_NORM_BOUND, OTHER_ROW_NORM_BOUND)
    return clip_rows(X, bound)


class DPBradleyTerry(DPEstimatorMixin, ClassifierMixin, BaseEstimator):
    """Differentially private Bradley–Terry–Luce scores from pairwise comparisons.

    Each comparison of items i and j is a design row ``x = e_i − e_j`` (see
    :func:`~skdp.ranking.pairs_to_design` and
    :class:`~skdp.ranking.PairsEncoder`) with outcome ``y = 1`` if i won,
    and the model is ``P(i beats j) = σ(θ_i − θ_j) = σ(x·θ)`` (Cai, Wang &
    Zhang, Score Attack, §4). The fitted scores θ̂ (``scores_``) are
    (``epsilon``, ``delta``)-DP. By default the pairs are public and one
    comparison's *outcome* is protected: the win-count vector is released
    once with the Gaussian mechanism and the L2-penalised maximum-likelihood
    scores are computed from it (post-processing).

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget ε > 0 of one fit.
    delta : float, default=1e-5
        Privacy parameter δ in (0, 1); should be well below
        ``1/n_comparisons`` (a :class:`~skdp.PrivacyLeakWarning` is raised
        at ``delta >= 1/n``).
    accounting : {"exact", "paper"}, default="exact"
        ``"exact"``: the smallest noise for which the release is (ε, δ)-DP
        (μ-GDP, tight). ``"paper"``: the calibration of Prop. 4.3 of Cai,
        Wang & Zhang, ``σ = Δ·sqrt(2·log(2/δ) + ε)/ε``, but with the correct
        sensitivity ``Δ = sqrt(2)`` in place of the paper's (see Notes);
        with ``privacy_unit="comparison"``, basic composition of classical
        Gaussian steps. Never less noise than ``"exact"``;
        ``privacy_spent_`` reports the exact guarantee of the noise used.
    privacy_unit : {"outcome", "comparison"}, default="outcome"
        What one neighbouring data set changes. ``"outcome"``: the outcome of
        one comparison; which pairs were compared (X) is public. This is the
        paper's setting (public comparison graph) at the level of one
        comparison. The release does not depend on a row's orientation
        (``e_i − e_j`` with outcome y, or ``e_j − e_i`` with ``1 − y``, give
        the same likelihood, the same noisy statistic and the same fit), so
        rows written winner first with y always 1 are protected as well:
        what must be public is which pairs were compared, not the oriented
        rows, which then show the winners (do not publish them).
        ``"comparison"``: one whole comparison, pair and outcome, is
        private; fitted by noisy gradient descent (the shared DP-GD engine),
        at a utility cost (see Notes).
    alpha : float or "auto", default="auto"
        L2 penalty ``(1/2)·Σ_i alpha_i·θ_i²`` added to the *summed* negative
        log-likelihood (γ of (4.4), one value per item). It keeps the
        estimate finite for items that won or lost every comparison and
        damps the noise on items with few comparisons. A float: the same
        penalty for every item. ``"auto"``: ``1 + (Δ/μ)²/I_i``, a
        unit-variance prior on each score plus the ratio of the noise
        variance ``(Δ/μ)²`` to the information ``I_i`` about the item (Δ:
        sensitivity, μ: GDP parameter of the fit); to first order this makes
        each score the posterior mean of a N(0, 1) prior given the noisy
        counts. With ``privacy_unit="outcome"`` the design is public and
        ``I_i = max(D_i, 1)/4`` per item, ``D_i`` the item's number of
        comparisons (``Σ_r x̃_ri²``, the diagonal of ``X̃ᵀX̃``; 1/4 bounds
        ``σ'(t)``), so that a rarely compared item, whose win count is mostly
        noise, is shrunk towards 0 instead of landing at the top of the
        ranking (issue 20, item 7). With ``"comparison"`` the design is
        private and ``I_i = n_comparisons/(2·n_items)``, the average over
        items, from public sizes only (see Notes). About 1.06 for every item
        of 100 items compared 2000 times each at ε = 1.
    score_bound : float or None, default=10.0
        After fitting, the scores are projected onto
        ``{θ : Σθ = 0, ||θ||∞ <= score_bound}`` (post-processing). The
        default is far beyond realistic spreads (scores drawn from N(0, 1)
        reach ``|θ| ≈ 3`` over 1000 items; a difference of 10 means odds of
        e¹⁰ ≈ 22000 to 1), so it does not bias them; it caps scores of items
        that noise pushes out. The paper's Θ uses 1, which would shrink
        realistic scores. None: centring only.
    classes : array-like of shape (2,), default=None
        The two outcome labels, declared in advance, in any order; the
        larger (``classes_[1]``, as in scikit-learn's binary classifiers)
        means "the first item of the pair won". Any other label in ``y`` is an error.
        None: the model's own outcomes, 0 and 1 (False and True for boolean
        ``y``; the coding of :func:`~skdp.datasets.make_btl_comparisons`),
        are declared, and nothing about the labels is read: a ``y`` with
        one outcome only (every first item lost) fits like its neighbours.
        Only if ``y`` holds other labels (e.g. strings, as scikit-learn's
        binary classifiers accept) are the two labels read from ``y``
        (the larger one means "the first item won"); they are then public:
        a :class:`~skdp.PrivacyLeakWarning` says so, and
        ``privacy_spent_.caveats`` states it for every fit with
        ``classes=None``. Multiclass, continuous or non-finite ``y`` is an
        error either way.
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
    scores_ : ndarray of shape (n_items,)
        Estimated scores θ̂, summing to zero.
    ranking_ : ndarray of shape (n_items,)
        Item indices from best (highest score) to worst.
    classes_ : ndarray of shape (2,)
        Outcome labels; ``classes_[1]`` means the first item won.
    alpha_ : float or ndarray of shape (n_items,)
        The penalty used (``"auto"`` resolved): one value per item with
        ``alpha="auto"`` and ``privacy_unit="outcome"``, else a float.
    n_iter_ : int
        Number of Gaussian releases composed: 1 for ``"outcome"`` (the win
        counts, released once; the solver only post-processes them), the
        number of noisy gradient steps for ``"comparison"``.
    noise_multiplier_ : float
        Noise standard deviation divided by the L2 sensitivity of one
        release: ``sqrt(2)`` for ``"outcome"``, ``sqrt(6)`` for
        ``"comparison"`` (replace one comparison; see Notes). To recompute
        the guarantee with dp-accounting, compose
        ``GaussianDpEvent(noise_multiplier_)`` ``n_iter_`` times.
        The composition stated here is that of ``noise="fast"``. Secure noise
        is composed in zCDP instead: each release is ``(1/z + 2^-16)²/2``-zCDP
        for its own multiplier z (the grid rounding's slack,
        :func:`~skdp.accounting.secure_noise_cost`), and
        ``privacy_spent_.zcdp`` is their sum; a GDP accountant given this
        multiplier understates it.
    privacy_spent_ : PrivacyCost
        The exact guarantee: ``epsilon``, ``delta``,
        ``mu = sqrt(n_iter_) / noise_multiplier_``, adjacency and mechanism.
    n_features_in_ : int
        Number of items (columns of X).
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    skdp.ranking.PairsEncoder : Turns ``(m, 2)`` item ids into design rows.
    skdp.datasets.make_btl_comparisons : Simulated comparisons.

    Notes
    -----
    **Guarantee, default unit** (``privacy_unit="outcome"``). Neighbouring
    data sets have the same design X (the pairs compared, public) and differ
    in one outcome ``y_r`` (adjacency ``"replace one comparison outcome"``).
    Every row is first clipped to L2 norm ``sqrt(2)``, giving rows
    ``x̃_r`` (rows ``e_i − e_j`` are unchanged). The negative log-likelihood
    is ``L(θ; y) = Σ_r log(1 + exp(x̃_r·θ)) − c(y)·θ`` with the win-count
    vector ``c(y) = Σ_r y_r x̃_r = X̃ᵀy``: the data enter only through
    ``c(y)``. Flipping ``y_r`` moves ``c`` by ``±x̃_r``, so the L2
    sensitivity of ``c`` is ``max_r ||x̃_r|| = sqrt(2)``, attained by every
    row ``e_i − e_j``, whatever X is. The release
    ``c̃ = c(y) + N(0, (noise_multiplier_·sqrt(2))² I)`` is therefore exactly
    μ-GDP with ``μ = 1/noise_multiplier_`` (Dong, Roth & Su 2022), i.e.
    (ε, δ)-DP for the reported pair; the noise is calibrated against
    ``δ·(1 − 1e-9)``. The scores solve
    ``min_θ Σ_r log(1 + exp(x̃_r·θ)) − c̃·θ + (1/2)·Σ_i alpha_i·θ_i²``, which is
    the objective-perturbation estimator (4.4) of the paper without its
    constraint set, then are centred and projected onto the ``score_bound``
    box: all post-processing of ``c̃``, so they are private whatever the
    solver or its tolerance (the review of the spec, §2b). The per-item
    penalties of ``alpha="auto"`` read only the design (public under this
    unit) and (ε, δ), never y, so they do not change the guarantee.

    **Guarantee, comparison unit** (``privacy_unit="comparison"``).
    Neighbours differ in one whole comparison (pair and outcome; adjacency
    ``"replace one record"``); only the number of comparisons and of items
    are public. Fitted by the shared DP-GD engine, whose every step releases
    the gradient sum ``Σ_r (σ(x_r·θ) − y_r)·x_r`` plus Gaussian noise of std
    ``noise_multiplier_·sqrt(6)``. Rows ``e_i − e_j`` are used as they are;
    every other row (after the ``sqrt(2)`` clip) is scaled down to norm
    ``sqrt(6) − sqrt(2)``, a transformation of each record alone. Replacing
    record ``(x, y)`` by ``(x', y')`` moves the sum by
    ``a·x − b·x'`` with ``a = σ(x·θ) − y`` and ``b = σ(x'·θ) − y'`` in
    ``[−1, 1]``, the same θ for both. Its norm is at most ``sqrt(6)``:

    * same pair, same order (``x' = x``): ``a − b = y' − y``, norm ≤ ``sqrt(2)``;
    * same pair, reversed (``x' = −x``): ``σ(−t) = 1 − σ(t)`` gives
      ``a·x − b·x' = (1 − y − y')·x``, norm ≤ ``sqrt(2)``;
    * one item shared (``x·x' = ±1``):
      ``||a·x − b·x'||² = 2a² + 2b² ∓ 2ab ≤ 6``;
    * no item shared (``x·x' = 0``): ``2a² + 2b² ≤ 4``;
    * a row not of the form ``e_i − e_j``: by the triangle inequality
      ``≤ sqrt(2) + (sqrt(6) − sqrt(2)) = sqrt(6)`` (two such rows: ≤ 2.07).

    The bound is tight: for items 0, 1, 2, records ``(e_0 − e_1, 0)`` and
    ``(e_0 − e_2, 1)`` at ``θ = t·(1, −1, 2)`` differ by ``sqrt(6)`` as
    ``t → ∞``. (The engine's generic bound, ``2·sqrt(2)``, would add 15%
    more noise than needed.) So each step is ``1/noise_multiplier_``-GDP and
    the ``n_iter_`` adaptively chosen steps compose exactly to
    ``μ = sqrt(n_iter_)/noise_multiplier_`` (replace-one adjacency).
    Utility cost: the budget is split over ``n_iter_`` releases instead of
    one, and ``sqrt(6)`` replaces ``sqrt(2)`` (each gradient sum gets about
    ``sqrt(3·n_iter_)`` times the noise of the default unit's single
    release), plus the optimisation error of a fixed number of Adam steps,
    which does not shrink as ε grows: at large ε it dominates, so the excess
    error over the default unit grows with ε (measured in
    ``benchmarks/bench_bradley_terry.py``; see ``docs/benchmarks.md``).

    **Why not the paper's calibration.** Prop. 4.3 calibrates σ to a
    sensitivity ``2·sqrt(n)`` under *item-level* adjacency, but replacing an
    item's outcomes moves ``c`` by up to ``sqrt(D_i·(D_i + 1))`` (``D_i``
    its number of comparisons), which exceeds ``2·sqrt(n)`` on dense graphs
    (spec erratum §2.4). And no item-level unit allows accurate per-item
    scores: two score vectors that differ only in θ_i generate data sets
    that can be coupled to be item-neighbours, so an (ε, δ)-DP output
    cannot tell them apart: for ε ≤ 1 and small δ the error on each item
    stays of order one (total squared error of order n_items, by a DP
    Assouad argument) however many comparisons there are. skdp therefore
    protects single comparisons.

    **Public.** Always: the number of comparisons and of items (columns of
    X), the label set (``classes``; with ``classes=None``, {0, 1}, or the
    labels in ``y`` if they are others, stated in
    ``privacy_spent_.caveats``). With
    ``"outcome"``: the design X itself. ``alpha="auto"`` reads only these
    (with ``"outcome"``, the number of comparisons of each item, a function
    of the public design) and (ε, δ). Error messages never quote values
    from the data.

    **Rarely compared items under** ``"comparison"``. There the design, and
    so each item's number of comparisons ``D_i``, is private, and the
    penalty can only use the average. What is possible: the degree vector
    ``(D_i)`` has L2 sensitivity 2 under replace-one (a replaced comparison
    ``(i, j) → (k, l)`` changes four degrees by one), so a share of the
    budget could release noisy degrees (μ_D² + μ_GD² = μ²) and set
    per-item penalties from them, at the price of more noise on the
    gradient steps; at ε = 1 and 200 items the noisy degrees have standard
    deviation ``2/μ_D`` ≈ 27 for a 10% share (δ = 1e-6), enough to tell an item
    compared 0-3 times from one compared 100 times, not from one compared
    20 times. This is not implemented: the comparison unit uses the
    average-information penalty for every item. Measured on the design of
    issue 20, item 7 (10 of 200 items compared 0-3 times, ε = 1;
    ``benchmarks/bench_bradley_terry_issue20.py``), no rarely compared item
    came first in 10 runs (precision@10 0.76, against 0.86 for the default
    unit): its gradient coordinate is pure noise, which the Adam step,
    scaled to the public noise level, turns into a random walk of small
    steps around its start 0, not into a large score.

    **Every input.** Any finite X, dense or CSR, is accepted; rows that are
    not of the form ``e_i − e_j`` (as in scikit-learn's checks) are clipped
    to norm ``sqrt(2)`` (norms computed without overflow, duplicate sparse
    entries summed first), so the sensitivity holds whatever X is. The
    scores are then those of a logistic regression without intercept on the
    clipped rows, centred.

    **Caveats.** With ``noise="fast"`` (the default) noise is drawn with
    numpy floating point, which is not hardened against the attacks of
    Mironov (2012); ``noise="secure"`` is. Every fit on the same
    data spends the budget again (compose with :class:`skdp.PrivacyLedger`;
    note that costs under different adjacencies do not compose).

    **Cost.** ``"outcome"``: one pass to form ``c``, then about 10 Newton
    steps over the distinct rows of X (repeated comparisons of a pair are
    merged), each O(nnz) plus, up to 300 items, a dense n_items × n_items
    Cholesky solve (memory O(nnz(X) + n_items²)); above 300 items, conjugate
    gradients in O(nnz(X)) memory. 10⁵ comparisons take about 30 ms on 100
    items and 0.2 s on 1000. ``"comparison"``: ``O(n_iter_ · nnz(X))``.

    References
    ----------
    .. [1] T. T. Cai, Y. Wang, L. Zhang. "Score Attack: A Lower Bound Technique
       for Optimal Differentially Private Learning", §4 (model, (4.4),
       Prop. 4.3, Theorem 4.2) and App. B.4.
    .. [2] J. Dong, A. Roth, W. J. Su. "Gaussian differential privacy",
       JRSS-B 2022.
    .. [3] R. A. Bradley, M. E. Terry. "Rank analysis of incomplete block
       designs: I. The method of paired comparisons", Biometrika 1952.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from skdp.datasets import make_btl_comparisons
    >>> from skdp.ranking import DPBradleyTerry, PairsEncoder
    >>> pairs, y, true_scores = make_btl_comparisons(
    ...     n_items=20, edge_probability=1.0, comparisons_per_edge=20, random_state=0
    ... )
    >>> model = make_pipeline(
    ...     PairsEncoder(n_items=20),
    ...     DPBradleyTerry(epsilon=1.0, delta=1e-6, classes=[0, 1]),
    ... ).fit(pairs, y)
    >>> bt = model[-1]
    >>> bt.scores_.shape, bt.n_iter_, bt.privacy_spent_.adjacency
    ((20,), 1, 'replace one comparison outcome')
    >>> round(bt.privacy_spent_.epsilon, 6)
    1.0
    >>> from scipy.stats import kendalltau
    >>> bool(kendalltau(bt.scores_, true_scores).statistic > 0.8)
    True
    >>> model.predict_proba([[3, 7]]).shape
    (1, 2)
    """

    _parameter_constraints = {
        **PRIVACY_CONSTRAINTS,
        "privacy_unit": [StrOptions({"outcome", "comparison"})],
        "alpha": [Interval(Real, 0, None, closed="neither"), StrOptions({"auto"})],
        "score_bound": [Interval(Real, 0, None, closed="neither"), None],
        "classes": ["array-like", None],
    }

    def __init__(
        self,
        *,
        epsilon=1.0,
        delta=1e-5,
        accounting="exact",
        privacy_unit="outcome",
        alpha="auto",
        score_bound=10.0,
        classes=None,
        random_state=None,
        noise="fast",
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.accounting = accounting
        self.privacy_unit = privacy_unit
        self.alpha = alpha
        self.score_bound = score_bound
        self.classes = classes
        self.random_state = random_state
        self.noise = noise

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        tags.classifier_tags.multi_class = False
        return tags

    def _budget_adjacency(self):
        return REPLACE_ONE_OUTCOME if self.privacy_unit == "outcome" else REPLACE_ONE

    def _budget_caveats(self):
        # classes=None declares {0, 1}; only other labels are read from y.
        return (OUTCOME_LABELS,) if self.classes is None else ()

    def _label_set_read_from(self, y):
        y = np.asarray(y)
        if self.classes is not None or np.isin(y, (0, 1)).all():
            return None  # declared, or the model's own outcomes {0, 1}
        return np.unique(y)

    def _audit_canary(self):
        """skdp.audit's default canary: one comparison's outcome flipped."""
        return "OutcomeCanary", {}

    def _audit_glm_view(self):
        """skdp.audit's score-attack view: design rows clipped as in fit."""

        def rows(X):
            X = clip_rows(
                X if sp.issparse(X) else np.asarray(X, dtype=float), ROW_NORM_BOUND
            )
            return X.toarray() if sp.issparse(X) else X

        positive = self.classes_[1]
        return dict(
            theta=self.scores_,
            features=rows,
            mean=expit,
            encode=lambda y: (y == positive) * 1.0,
        )

    @private_fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the scores with (``epsilon``, ``delta``)-DP.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_comparisons, n_items)
            Design rows, ``e_i − e_j`` for a comparison of item i with item j
            (:func:`~skdp.ranking.pairs_to_design`). Other rows are clipped
            to norm ``sqrt(2)``. Raw ``[i, j]`` id pairs (two columns of
            non-negative integers) are refused: encode them with
            :class:`~skdp.ranking.PairsEncoder`.
        y : array-like of shape (n_comparisons,)
            Outcomes: ``classes_[1]`` (1 for labels {0, 1}) if the first item
            (the ``+1`` entry) won.

        Returns
        -------
        self : DPBradleyTerry
            The fitted estimator.
        """
        require_positive_delta(self)
        X, y = validate_data(
            self, X, y, accept_sparse=SPARSE_FIT_FORMATS, dtype=np.float64
        )
        check_targets(self, y)
        # Declared outcomes: y is only checked against them (_encode_outcomes).
        target_type = None if self.classes is not None else type_of_target(y)
        if target_type not in (None, "binary"):
            raise ValueError(
                "Only binary classification is supported: y holds the outcome of "
                "each comparison (the first item won or lost). The type of the "
                f"target is {target_type}."
            )
        _refuse_raw_pairs(X, reads_values=self.privacy_unit == "outcome")
        warn_if_delta_is_large(self, X.shape[0])
        classes, won = self._encode_outcomes(y)
        X = clip_rows(X, ROW_NORM_BOUND)
        rng = as_generator(self.random_state, self.noise)
        if self.privacy_unit == "outcome":
            theta, n_iter, noise_multiplier, alpha, cost = self._fit_outcome(
                X, won, rng
            )
        else:
            theta, n_iter, noise_multiplier, alpha, cost = self._fit_comparison(
                X, won, rng
            )
        if not np.isfinite(theta).all():
            raise MechanismFailedError(
                "DPBradleyTerry produced non-finite scores. The noisy release "
                "ran: the budget of this fit is spent, and a refit on the same "
                "data spends it again."
            )
        self.classes_ = classes
        self.scores_ = project_scores(theta, self.score_bound)
        self.ranking_ = np.argsort(-self.scores_, kind="stable")
        self.alpha_ = alpha
        self.n_iter_ = n_iter
        self.noise_multiplier_ = noise_multiplier
        self.privacy_spent_ = cost
        return self

    def _fit_outcome(self, X, won, rng):
        """Release the win counts once, then solve the penalised MLE on them."""
        noise_multiplier = self._noise_budget().noise_multiplier(1)
        win_counts = X.T @ won
        noisy_counts = gaussian_mechanism(
            win_counts,
            sensitivity=sensitivity_factor(REPLACE_ONE_OUTCOME) * ROW_NORM_BOUND,
            noise_multiplier=noise_multiplier,
            rng=rng,
        )
        cost = gaussian_cost(
            noise_multiplier,
            1,
            noise=self.noise,
            delta=self.delta,
            adjacency=REPLACE_ONE_OUTCOME,
            mechanism=(
                "DPBradleyTerry: Gaussian mechanism on the win-count vector "
                f"(L2 sensitivity sqrt(2)), noise multiplier {noise_multiplier:.6g}"
            ),
        )
        # Post-processing of the public design and the released counts only.
        mu = cost.mu if cost.mu is not None else math.sqrt(2.0 * cost.rho)
        alpha = self._alpha(X.shape, ROW_NORM_BOUND, mu, design=X)
        distinct_rows, multiplicity = collapse_duplicate_rows(X)
        theta, _ = penalised_mle(distinct_rows, noisy_counts, alpha, multiplicity)
        return theta, 1, noise_multiplier, alpha, cost

    def _fit_comparison(self, X, won, rng):
        """Noisy gradient descent with every comparison's gradient clipped."""
        X = comparison_rows(X)
        n_comparisons, n_items = X.shape
        n_iter, horizon, _ = auto_schedule(
            n_comparisons, n_items, mu_from_epsilon(self.epsilon, self.delta)
        )
        noise_multiplier = self._noise_budget().noise_multiplier(n_iter)
        mu = math.sqrt(n_iter) / noise_multiplier
        alpha = self._alpha(X.shape, COMPARISON_STEP_SENSITIVITY, mu)
        coef, _, cost = dpgd(
            X,
            won,
            BinomialLogistic(),
            n_outputs=1,
            clip_norm=ROW_NORM_BOUND,
            noise_multiplier=noise_multiplier,
            n_iter=n_iter,
            learning_rate=horizon / n_iter,
            alpha=alpha / n_comparisons,  # the engine penalises the mean loss
            fit_intercept=False,
            solver="adam",
            average=_AVERAGE_DECAY,
            delta=self.delta,
            adjacency=REPLACE_ONE,
            sensitivity=COMPARISON_STEP_SENSITIVITY,
            rng=rng,
            mechanism="DPBradleyTerry noisy gradient descent",
        )
        return coef[:, 0], n_iter, noise_multiplier, alpha, cost

    def _noise_budget(self):
        """(ε, δ) as the engine calibrates it (:class:`skdp._dpgd.NoiseBudget`).

        ``accounting="paper"``: for one outcome, Prop. 4.3 / App. B.4 with
        the correct sensitivity, ``σ/Δ = sqrt(2·log(2/δ) + ε)/ε``; for one
        comparison, the classical calibration of the ``n`` releases. Never
        less noise than the exact calibration.
        """
        epsilon, delta = self.epsilon, self.delta
        if self.accounting == "exact":
            paper = None
        elif self.privacy_unit == "outcome":
            outcome = math.sqrt(2.0 * math.log(2.0 / delta) + epsilon) / epsilon
            paper = lambda n_releases: outcome  # noqa: E731
        else:
            paper = functools.partial(
                classical_gaussian_noise_multiplier, epsilon, delta
            )
        return NoiseBudget(epsilon, delta, self.noise, paper)

    def _alpha(self, shape, sensitivity, mu, design=None):
        """The penalty: the parameter, or the ``"auto"`` rule (see ``alpha``).

        ``design``: the public (clipped) design under ``"outcome"``, whose
        column sums of squares give each item's information; None under
        ``"comparison"``, where only the public sizes may be used.
        """
        if self.alpha != "auto":
            return float(self.alpha)
        n_comparisons, n_items = shape
        noise_variance = (sensitivity / mu) ** 2
        if design is None:
            information = n_comparisons / (2.0 * n_items)
            return 1.0 + noise_variance / information
        squares = design.multiply(design) if sp.issparse(design) else design**2
        comparisons = np.asarray(squares.sum(axis=0)).ravel()
        # An item seen less than once is shrunk as if seen once: the rule
        # stays finite (at most 1 + 4·noise_variance).
        information = np.maximum(comparisons, 1.0) / 4.0
        return 1.0 + noise_variance / information

    def _encode_outcomes(self, y):
        """The two outcome labels (declared or public) and y as 0/1."""
        if self.classes is None and np.isin(y, (0, 1)).all():
            # The model's own outcomes, declared: nothing about the labels is
            # read, so y = 0 everywhere fits like each of its neighbours.
            if y.dtype == bool:
                classes = np.array([False, True])
            else:
                classes = np.array([0, 1]).astype(y.dtype)
        elif self.classes is None:
            warnings.warn(
                "The label set was inferred from y and is treated as public (it "
                "is released in classes_). If which outcome labels occur is "
                "private, pass classes=[...] declared in advance.",
                PrivacyLeakWarning,
                stacklevel=5,  # the caller of fit (through two decorators)
            )
            classes = np.unique(y)
            if classes.size != 2:
                raise ValueError(
                    "DPBradleyTerry needs both outcomes in y when its labels are "
                    "not 0 and 1, but y contains only one class; code the "
                    "outcomes as 0/1 or declare them with classes=[...]."
                )
        else:
            classes = declared_classes(self.classes)
            if classes.size != 2:
                raise ValueError(
                    "classes must declare exactly two outcome labels; got "
                    f"{classes.size}."
                )
            # The message names no label: the labels in y are private.
            if not np.isin(y, classes).all():
                raise ValueError(
                    "y contains labels that are not in the declared classes."
                )
        return classes, (y == classes[1]).astype(np.float64)

    def decision_function(self, X):
        """Score difference ``x·scores_`` (``θ_i − θ_j`` for a row ``e_i − e_j``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_comparisons, n_items)
            Design rows.

        Returns
        -------
        decision : ndarray of shape (n_comparisons,)
            Positive when the first item is predicted to win.
        """
        check_is_fitted(self)
        X = validate_data(self, X, accept_sparse="csr", reset=False, dtype=np.float64)
        return np.asarray(X @ self.scores_).ravel()

    def predict(self, X):
        """Predicted outcome of each comparison.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_comparisons, n_items)
            Design rows.

        Returns
        -------
        y_pred : ndarray of shape (n_comparisons,)
            ``classes_[1]`` where the first item is predicted to win.
        """
        decision = self.decision_function(X)
        return self.classes_[(decision > 0).astype(int)]

    def predict_log_proba(self, X):
        """Log-probabilities of the two outcomes, columns ordered as ``classes_``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_comparisons, n_items)
            Design rows.

        Returns
        -------
        log_proba : ndarray of shape (n_comparisons, 2)
            ``[log σ(θ_j − θ_i), log σ(θ_i − θ_j)]`` for a row ``e_i − e_j``.
        """
        decision = self.decision_function(X)
        return np.column_stack([log_expit(-decision), log_expit(decision)])

    def predict_proba(self, X):
        """Probabilities of the two outcomes, columns ordered as ``classes_``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_comparisons, n_items)
            Design rows.

        Returns
        -------
        proba : ndarray of shape (n_comparisons, 2)
            ``[P(first item loses), P(first item wins)]``; rows sum to one.
        """
        return np.exp(self.predict_log_proba(X))


_ENCODE_PAIRS = (
    "Encode the pairs first: make_pipeline(PairsEncoder(n_items), "
    "DPBradleyTerry()), or skdp.ranking.pairs_to_design(pairs, n_items)."
)


def _refuse_raw_pairs(X, *, reads_values):
    """Raise if ``X`` looks like ``[i, j]`` item ids rather than design rows.

    A design row ``e_i − e_j`` sums to 0; a pair of ids is two non-negative
    integers. Two columns of non-negative integers would otherwise fit a
    meaningless two-item model without complaint. Only where the design is
    public (``privacy_unit="outcome"``, ``reads_values``): under
    ``"comparison"`` the pairs are private, and whether one record's row is
    a pair of ids must not decide whether the fit raises; a two-column X
    then gets a warning read from the shape alone. The message never quotes
    the data.
    """
    if X.shape[1] != 2:
        return
    if not reads_values:
        warnings.warn(
            "X has two columns: if its rows are pairs of item ids [i, j] "
            "rather than Bradley-Terry design rows e_i - e_j, the model is "
            "meaningless (under privacy_unit='comparison' the rows are "
            "private and are not inspected). " + _ENCODE_PAIRS,
            UserWarning,
            stacklevel=5,  # the caller of fit (through two decorators)
        )
        return
    values = X.data if sp.issparse(X) else X
    if values.size and np.all(values >= 0) and np.all(values == np.floor(values)):
        raise ValueError(
            "X has two columns of non-negative integers: it looks like pairs of "
            "item ids [i, j], not Bradley-Terry design rows e_i - e_j. " + _ENCODE_PAIRS
        )
