"""DPFedRep: Private FedRep (Snedeker, Zhou & Bassily, Algorithms 1 and 2).

Rows stay where they are; a sum over each user's rows (or over one half of
them) is one sparse-times-dense product with a ``(n_users, n_rows)`` indicator
matrix, and the users' k × k systems are solved as one stacked
eigendecomposition (closed form for k = 2): no Python loop over users, and
nothing of size ``n_users × d × k`` or ``n_users × d × d`` is ever built. With
``n_jobs > 1`` the users are split into shards of whole users that run in
threads; their clipped sums are added in a fixed order.

Privacy: every quantity that leaves a user is clipped *per user* (one user's
whole data moves one clipped term), and every global choice (step size, clip,
number of rounds, noise) is a parameter or a function of public sizes only.
Per-user numerical trouble (singular or overflowing local systems, non-finite
gradients) is handled per user, branch-free: it can only zero that user's own
term, never change another user's.
"""

import math
import warnings
from numbers import Integral, Real

import numpy as np
from joblib import effective_n_jobs
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    RegressorMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.metrics import r2_score
from sklearn.utils import assert_all_finite
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._base import (
    CLIP_CONSTRAINT,
    PRIVACY_CONSTRAINTS,
    DPEstimatorMixin,
    private_fit,
    private_transform,
    require_positive_delta,
    scaled_product,
    warn_if_delta_is_large,
)
from .._dpgd import NoiseBudget, _Progress
from .._inputs import finite_targets
from ..accounting import (
    REPLACE_ONE,
    REPLACE_ONE_USER,
    format_dp,
    format_up,
    gaussian_cost,
)
from ..exceptions import MechanismFailedError, PrivacyLeakWarning
from ..mechanisms import add_gaussian_noise, as_generator
from ._users import (
    _cold_start_sums,
    _haar,
    _heads,
    _over_shards,
    _public_init,
    _round_sum,
    _rows_are_finite,
    _shard,
    _spectral_sum,
    _split_halves,
    _top_eigenvectors,
    _Users,
)


class DPFedRep(
    DPEstimatorMixin,
    RegressorMixin,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    BaseEstimator,
):
    """User-level differentially private FedRep: a shared linear representation.

    Every user i has a linear model ``w_i = U v_i`` with a representation
    ``U ∈ R^{d×k}`` (orthonormal columns) shared by all users and a personal
    head ``v_i ∈ R^k``. ``U`` is learned by Private FedRep (Algorithm 1 of
    [1]_) and released with **user-level** (ε, δ)-DP; each user's own ``v_i``
    is then fitted on that user's data on top of the public ``U`` (the
    *billboard model*): it is not differentially private and belongs to that
    user alone.

    Each of ``n_rounds`` rounds: every user solves a least-squares problem for
    ``v_i`` on one half of their rows (the v-half, ``ceil(m_i/2)`` rows drawn
    at random once per fit), computes the gradient of their squared loss
    w.r.t. ``U`` on the other half, and clips it to Frobenius norm
    ``clip_norm``; the server averages the clipped gradients, adds Gaussian
    noise, takes a step of size ``learning_rate`` and re-orthonormalises with
    a QR decomposition. The start ``U_0`` comes from the private spectral
    initialisation (Algorithm 2 of [1]_), or is drawn at random.

    Parameters
    ----------
    n_components : int, default=2
        Dimension ``k`` of the shared representation, ``1 <= k <= n_features``.
        At ``k = n_features`` it spans every direction and shares nothing
        (the fit warns): each user's head is then a per-user regression.
    epsilon : float, default=1.0
        Total privacy budget ε > 0 of one fit (initialisation, every round and
        the cold-start model together), at user level.
    delta : float, default=1e-5
        Privacy parameter δ in (0, 1); should be well below ``1/n_users``.
    accounting : {"exact", "paper"}, default="exact"
        ``"exact"``: the smallest noise for which all the Gaussian releases
        together are (ε, δ)-DP (μ-GDP, tight). ``"paper"``: the noise of the
        paper's experiments (App. B.4, ``Δ_{ε,δ} = sqrt(16 log(1.25/δ))/ε``,
        i.e. ``σ̂ = 4ψ·sqrt(T log(1.25/δ))/(nε)``), applied with ``T =
        n_iter_`` releases; never less noise than ``"exact"``. Either way
        ``privacy_spent_`` reports the exact guarantee of the noise used.
    n_rounds : int, default=10
        Number of rounds ``T`` of Algorithm 1 (the paper's experiment: 5).
    learning_rate : float, default=0.5
        Step size η. It must match the scale of y: with ``σ²_max`` the largest
        eigenvalue of ``(1/n)Σ v_i v_iᵀ`` (about ``E y²`` when one direction
        dominates), rounds contract the error by ``|1 − 2ησ²_max|``, so
        ``η ≈ 1/(2σ²_max)`` is best and ``η ≥ 1/σ²_max`` diverges ([1]_
        Lemma 9 asks ``η <= 1/(2σ²_max)``). 0.5 suits ``E y² ≈ 1``; put y on
        a public scale.
    clip_norm : float or "auto", default="auto"
        ψ: each user's gradient is clipped to this Frobenius norm each round.
        ``"auto"``: ``sqrt(d·k)``, the scale of [1]_ Lemma 7 for unit-scale
        data (10 at ``d = 50, k = 2``, the paper's value).
    init : {"private", "random"} or array-like of shape (n_features, n_components), \
            default="private"
        ``"private"``: Algorithm 2, a noisy clipped mean of the users'
        unbiased estimators of ``w_i w_iᵀ`` (the symmetrised product of the
        means of ``y_j x_j`` over the user's two halves; Notes), then its
        top-k eigenvectors; one Gaussian release paid from the budget.
        ``"random"``: a uniformly random ``U_0`` (free). An array: a public
        starting representation (e.g. learnt on public data), orthonormalised
        by QR (free; it must not be computed from the training data).
    init_clip_norm : float or "auto", default="auto"
        ψ_init, the Frobenius clip of each user's matrix in Algorithm 2.
        ``"auto"``: ``sqrt(d·k)`` as for ``clip_norm``.
    cold_start_clip_norm : float or "auto", default="auto"
        Joint clip of each user's sufficient statistics in the cold-start
        model (Notes). ``"auto"``: ``2d`` (rows of standardised data have
        squared norm about d).
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the within-user splits, the random start and the noise. None
        draws fresh operating-system entropy: use it in production, since a
        known seed makes the noise predictable.
    noise : {"fast", "secure"}, default="fast"
        Sampler of the privacy noise. ``"fast"``: numpy's floating-point
        sampler (PCG64), not hardened against floating-point attacks on the
        low-order bits of a release. ``"secure"``: every noisy value is rounded
        to a power-of-two grid and gets exact discrete Gaussian (or Laplace)
        noise drawn from the operating system's CSPRNG; the rounding is paid
        for in the calibration (6-11% more noise at the same ε) and each draw
        is 20-45 times slower than numpy's. Requires ``random_state=None``.
        See :ref:`secure_noise`.
    n_jobs : int, default=None
        Threads over which the users are split, each user with all their rows
        in one thread (numpy, scipy and BLAS release the GIL, so the threads
        use separate cores). The per-thread clipped sums are added in a fixed
        order: a seeded fit gives the same result for any ``n_jobs`` up to
        floating-point rounding. ``None`` means 1 unless in a
        :func:`joblib.parallel_config` context; ``-1`` means all processors.
        BLAS is limited to one thread during ``fit`` (as in
        :class:`~sklearn.cluster.KMeans`): its many small products run faster
        that way, and the threads do not oversubscribe the cores.
    verbose : int, default=0
        1: the guarantee being spent, progress and a summary; 2: every round.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        ``Uᵀ``, the shared representation: the differentially private release.
    init_components_ : ndarray of shape (n_components, n_features)
        ``U_0ᵀ`` (private or random; DP either way).
    cold_start_coef_ : ndarray of shape (n_features,)
        The cold-start model used for users without a personal head (DP).
    users_ : ndarray of shape (n_users,)
        The user ids seen in ``fit`` (and added by ``personalize``), sorted.
        **Not DP**: it reveals who took part. Empty after ``fit(X, y)``
        without ``groups`` (every row its own user): no head is kept then,
        as a row's head would give back its own target to any later id
        equal to its index.
    user_coef_ : ndarray of shape (n_users, n_components)
        Row i is ``v_i`` for user ``users_[i]``: least squares on all of that
        user's rows on top of ``components_`` (minimum-norm when the user has
        fewer than k independent rows, e.g. one row). **Not DP**: user i's
        head is computed from user i's raw data (billboard model).
    n_users_ : int
        Number of users in ``fit`` (public under replace-one-user adjacency).
    n_iter_ : int
        Number of Gaussian releases composed: the initialisation (1 if
        ``init="private"``), ``n_rounds`` rounds and the cold-start model (1).
    noise_multiplier_ : float
        Noise standard deviation divided by the L2 sensitivity of the release,
        the same for all ``n_iter_`` releases: per round ``2·clip_norm_/n`` on
        the mean gradient (the paper's ``σ̂ = noise_multiplier_ · 2ψ/n``); for
        the initialisation ``2·init_clip_norm_/n``; for the cold-start model
        ``2·cold_start_clip_norm_/n``. So ``n_iter_`` self-composed Gaussian
        mechanisms with this multiplier reproduce ``privacy_spent_``.
        The composition stated here is that of ``noise="fast"``. Secure noise
        is composed in zCDP instead: each release is ``(1/z + 2^-16)²/2``-zCDP
        for its own multiplier z (the grid rounding's slack,
        :func:`~skdp.accounting.secure_noise_cost`), and
        ``privacy_spent_.zcdp`` is their sum; a GDP accountant given this
        multiplier understates it.
    clip_norm_, init_clip_norm_, cold_start_clip_norm_ : float
        The clips used (``"auto"`` resolved).
    privacy_spent_ : PrivacyCost
        The exact guarantee, ``mu = sqrt(n_iter_) / noise_multiplier_``, with
        adjacency ``"replace one user"``.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    sklearn.decomposition.PCA : A non-private linear representation.

    Notes
    -----
    **Privacy unit: one user.** Neighbouring data sets differ by *replacing
    all the rows of one user* (Def. 3 of [1]_); the number of users n is
    public. Replacing one user changes each released mean by at most
    ``2ψ/n`` (ψ the clip of that release), whatever the data and however many
    rows the user has; each release adds Gaussian noise of standard deviation
    ``noise_multiplier_ · 2ψ/n``, so the ``n_iter_`` adaptively chosen releases
    compose exactly to ``μ = sqrt(n_iter_)/noise_multiplier_``-GDP (Dong, Roth
    & Su 2022), (ε, δ)-DP for the reported pair. ``components_``,
    ``init_components_``, ``cold_start_coef_``, every intermediate ``U_t`` and
    ``transform`` are DP; ``user_coef_``, ``users_`` and predictions for
    training users are **not** (each user's head reads their raw data, which
    is the billboard model of [1]_ Thm 8: publish only the DP attributes).

    **Public.** The number of users n, d, k, the clips, η and T. Nothing
    that the guarantee depends on is read from the data: clips and step size
    are parameters or functions of d and k; the within-user split is drawn
    from ``random_state`` and each user's row count shapes only that user's
    own term. A fit warns when each round's noise is at least half the
    largest possible mean gradient (``2·noise_multiplier_·sqrt(dk)/n ≥ 0.5``,
    public values): the released ``U`` is then likely no better than a random
    subspace. Each
    user's numerical difficulties (singular local systems, overflow,
    non-finite gradients) are handled inside that user's own clipped term.

    **Cold start.** ``predict`` without ``groups``, and for users not seen in
    ``fit``, uses ``cold_start_coef_``: a private pooled least-squares model
    in the original features, ``(Ĝ + τI)⁻¹ĥ`` from the noisy means of each
    user's clipped ``(X_iᵀX_i/m_i, X_iᵀy_i/m_i)``, with eigenvalues below
    ``τ = 4σ·sqrt(d)`` (σ the noise std, public) floored at τ. It is one
    Gaussian release paid from the same budget, never the average of the
    non-private heads. ``fit(X, y)`` without ``groups`` treats every row as
    its own user: such users cannot inform ``U`` (one row cannot be split
    between the two halves), so the cold-start model does the work there.
    The fit warns when the released ``ĥ`` is within its noise (its squared
    norm below ``d·σ² + 2σ²·sqrt(2d)``; read from the release only): the
    model then has at best as much noise as signal (too few users, little
    shared signal, or
    features far below the scale the automatic clip assumes: one-hot rows,
    ``||x||² = 1`` against ``2d``).

    **Deviations from [1]_.** Algorithm 1 draws two disjoint batches from
    the first half of each user's data and refits ``v_i`` on the second half;
    here the two halves of the user's data play the two batch roles every
    round (the review of the paper's batch sizes finds fresh batches
    impossible at the paper's m = 10), and the final ``v_i`` uses all of the
    user's rows (it is not DP either way). Local systems use the
    minimum-norm solution (pseudo-inverse) where the paper assumes
    invertibility. Algorithm 2 uses all of each user's rows, and its
    per-user matrix is Duchi et al.'s pairwise estimator restricted to the
    pairs that cross the user's two halves, ``Z_i = (a_i b_iᵀ + b_i a_iᵀ)/2``
    with ``a_i``, ``b_i`` the means of ``y_j x_j`` over the halves: like the
    paper's sum over all pairs ``j ≠ l`` (normalised by ``m(m−1)``) it has
    mean ``w_i w_iᵀ`` and the same leading-order variance, but it is rank
    two, so it is clipped by its exact Frobenius norm, and it costs
    ``O(m_i d)`` instead of a ``d × d`` Gram product per user. The noisy mean
    is symmetrised before the eigendecomposition (post-processing). The
    paper accounts Algorithms 1 and 2 separately; here one budget covers
    both.

    **Routing.** ``groups`` (one user id per row) is metadata: enable
    scikit-learn's metadata routing and call ``set_fit_request(groups=True)``
    (and ``set_predict_request``/``set_score_request``) to use the estimator
    in a ``Pipeline`` or ``GridSearchCV``. Without routing, scikit-learn
    passes ``groups`` only to the splitter and every fit runs with
    ``groups=None``: one user per row, a record-level guarantee, and a
    warning. ``GroupKFold`` holds out whole users, so it measures the
    cold-start model; within-user splits (e.g. ``KFold(shuffle=True)``)
    measure personalisation. Run such searches on public or synthetic
    users: on the private ones :class:`skdp.PrivacyLedger` refuses to total
    them (``GroupKFold`` assigns users to folds from their ids, a within-user
    split puts most users in every training part, and replacing one user
    may change the number of rows and so every fold). Then fit once on the
    private users, with ``groups``, and record that fit. Scores computed on
    the private data, and the choice among candidates, are not DP. Upstream
    steps fitted on the data (e.g. ``StandardScaler``) make each user's input
    depend on all users and void the per-user bound.

    **Caveats.** Noise is drawn with numpy floating point, which is not
    hardened against the attacks of Mironov (2012); seeded runs are for
    research only.

    **Cost.** ``O(N·d·k)`` time per round (N rows), ``O(N·d + n·d²)`` for
    the initialisation and ``O(N·d²)`` for the cold-start model; memory
    ``O(N·(d + k²) + n·d + d²)``. About 0.13 s at the paper's size (20000
    users × 10 rows, d = 50, T = 5) with ``n_jobs=2``, 23× faster than a
    per-user loop (``benchmarks/bench_fedrep.py``).

    References
    ----------
    .. [1] C. Snedeker, X. Zhou, R. Bassily. "Private Model Personalization
       Revisited", ICML 2025: §3, Algorithms 1 and 2, Theorem 8, §3.4.
    .. [2] L. Collins, H. Hassani, A. Mokhtari, S. Shakkottai. "Exploiting
       Shared Representations for Personalized Federated Learning", ICML 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.fedrep import DPFedRep
    >>> rng = np.random.default_rng(0)
    >>> n_users, m, d, k = 2000, 10, 10, 2
    >>> U_true = np.linalg.qr(rng.standard_normal((d, k)))[0]
    >>> V_true = rng.standard_normal((n_users, k))
    >>> V_true /= np.linalg.norm(V_true, axis=1, keepdims=True)
    >>> groups = np.repeat(np.arange(n_users), m)
    >>> X = rng.standard_normal((n_users * m, d))
    >>> y = np.einsum("ij,ij->i", X @ U_true, V_true[groups])
    >>> est = DPFedRep(n_components=k, epsilon=4.0, delta=1e-6,
    ...                learning_rate=1.0).fit(X, y, groups)
    >>> est.components_.shape, est.n_iter_, est.privacy_spent_.adjacency
    ((2, 10), 12, 'replace one user')
    >>> round(est.privacy_spent_.epsilon, 6)
    4.0
    >>> bool(est.score(X, y, groups) > 0.9)
    True
    """

    # Not covered by the guarantee (billboard model): PrivacyLedger names them.
    __skdp_not_private__ = ("users_", "user_coef_")

    _parameter_constraints = {
        **PRIVACY_CONSTRAINTS,
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "n_rounds": [Interval(Integral, 1, None, closed="left")],
        "learning_rate": [Interval(Real, 0, None, closed="neither")],
        "clip_norm": [CLIP_CONSTRAINT, StrOptions({"auto"})],
        "init": [StrOptions({"private", "random"}), "array-like"],
        "init_clip_norm": [
            CLIP_CONSTRAINT,
            StrOptions({"auto"}),
        ],
        "cold_start_clip_norm": [
            CLIP_CONSTRAINT,
            StrOptions({"auto"}),
        ],
        "n_jobs": [Integral, None],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        n_components=2,
        *,
        epsilon=1.0,
        delta=1e-5,
        accounting="exact",
        n_rounds=10,
        learning_rate=0.5,
        clip_norm="auto",
        init="private",
        init_clip_norm="auto",
        cold_start_clip_norm="auto",
        random_state=None,
        noise="fast",
        n_jobs=None,
        verbose=0,
    ):
        self.n_components = n_components
        self.epsilon = epsilon
        self.delta = delta
        self.accounting = accounting
        self.n_rounds = n_rounds
        self.learning_rate = learning_rate
        self.clip_norm = clip_norm
        self.init = init
        self.init_clip_norm = init_clip_norm
        self.cold_start_clip_norm = cold_start_clip_norm
        self.random_state = random_state
        self.noise = noise
        self.n_jobs = n_jobs
        self.verbose = verbose

    def _budget_adjacency(self):
        # Without user ids each row is its own user: the fit then reports
        # record-level adjacency, which private_fit accepts for this budget.
        return REPLACE_ONE_USER

    def _warn_without_users(self):
        warnings.warn(
            "DPFedRep.fit got no groups: every row is its own user, so the "
            "guarantee holds for one record ('replace one record'), not for one "
            "user. Pass fit(X, y, groups). In a Pipeline or a search, scikit-"
            "learn passes groups only to the splitter unless metadata routing is "
            "on: call sklearn.set_config(enable_metadata_routing=True) and "
            "estimator.set_fit_request(groups=True).",
            PrivacyLeakWarning,
            stacklevel=5,  # the caller of fit (through fit's two decorators)
        )

    @private_fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, groups=None):
        """Learn the shared representation with user-level (ε, δ)-DP.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training inputs (on a public scale, ideally isotropic).
        y : array-like of shape (n_samples,)
            Targets (on a public scale, centred by a public constant).
        groups : array-like of shape (n_samples,), default=None
            The user id of every row: the privacy unit. None makes every row
            its own user: the guarantee is then per record
            (``privacy_spent_.adjacency`` is "replace one record") and a
            :class:`~skdp.exceptions.PrivacyLeakWarning` says so, since a
            search or Pipeline drops ``groups`` silently without metadata
            routing.

        Returns
        -------
        self : DPFedRep
            The fitted estimator.
        """
        require_positive_delta(self)
        # X's finiteness is checked below, in the shards' first pass over X
        X, y = validate_data(
            self, X, y, dtype=np.float64, y_numeric=True, ensure_all_finite=False
        )
        y = finite_targets(y)  # text such as "1.5" or "nan" too
        n_rows, d = X.shape
        k = self.n_components
        if k > d:
            raise ValueError(
                f"n_components={k} must be <= n_features = {d}: the representation "
                "has at most as many directions as there are features."
            )
        if k == d:
            # Public: k and d. The representation spans every direction, so
            # it shares nothing; the predictions are those of the per-user
            # heads alone (review: R² 0.96 on Grunfeld, all from the heads).
            warnings.warn(
                f"DPFedRep: n_components={k} equals n_features: the shared "
                "representation spans the whole feature space and carries no "
                "information; each user's head is then a per-user regression "
                "on all the features. Choose n_components < n_features for a "
                "representation learnt across users.",
                UserWarning,
                stacklevel=4,  # the caller of fit (through its two decorators)
            )
        users, codes = _encode_groups(groups, n_rows)
        if groups is None:
            self._warn_without_users()
        n = len(users)
        warn_if_delta_is_large(self, n, unit="user" if groups is not None else "record")
        clip, init_clip, cold_clip = self._clips(d)
        private_init = isinstance(self.init, str) and self.init == "private"
        U_public = None if isinstance(self.init, str) else _public_init(self.init, d, k)
        n_iter = self.n_rounds + 1 + private_init
        z = self._noise_budget().noise_multiplier(n_iter)
        cost = gaussian_cost(
            z,
            n_iter,
            noise=self.noise,
            delta=self.delta,
            adjacency=REPLACE_ONE if groups is None else REPLACE_ONE_USER,
            mechanism=(
                f"Private FedRep: {n_iter} Gaussian releases (init="
                f"{self.init if isinstance(self.init, str) else 'public array'}, "
                f"{self.n_rounds} rounds, cold-start model), per-user clip "
                f"{clip:g}, noise multiplier {z:.6g}"
            ),
        )
        split_rng, init_rng, noise_rng = as_generator(
            self.random_state, self.noise
        ).spawn(3)
        v_half = _split_halves(codes, np.bincount(codes, minlength=n), split_rng)
        n_shards = min(effective_n_jobs(self.n_jobs), n)
        shards = _shard(X, y, codes, n, v_half, n_shards)

        progress = _Progress("DPFedRep", self.n_rounds, self.verbose)
        if self.verbose > 0:
            progress._print(
                f"spending {format_dp(cost.epsilon, cost.delta)} ("
                + (
                    f"rho = {format_up(cost.rho, 4)}"
                    if cost.mu is None
                    else f"mu = {format_up(cost.mu, 4)}"
                )
                + f", {cost.adjacency}) on {n_iter} releases over "
                f"n = {n} users, d = {d}; noise std {z * 2 * clip / n:.4g} on "
                "each mean gradient"
            )
        with _over_shards(shards) as total:
            if not all(total(_rows_are_finite, combine=False)):
                assert_all_finite(X, input_name="X")  # NaN or inf: the usual error
            # After the input checks: bad input is refused first (review).
            _warn_if_noise_dominates(n, d, k, z)
            if private_init:
                Z_mean = total(_spectral_sum, init_clip) / n
                Z_mean = add_gaussian_noise(Z_mean, z * 2.0 * init_clip / n, noise_rng)
                U = _top_eigenvectors(Z_mean, k)
            elif U_public is not None:
                U = U_public
            else:
                U = _haar(init_rng, d, k)
            U0 = U
            progress.phase("initialisation")

            step_std = z * 2.0 * clip / n
            for t in range(self.n_rounds):
                grad = total(_round_sum, U, clip) / n
                grad = add_gaussian_noise(grad, step_std, noise_rng)
                U = np.linalg.qr(U - self.learning_rate * grad)[0]
                progress.step(t)

            cold_std = z * 2.0 * cold_clip / n
            G_sum, h_sum = total(_cold_start_sums, cold_clip)
            # One release (one noise call): G and h share one sensitivity.
            Gh = add_gaussian_noise(
                np.concatenate([(G_sum / n).ravel(), h_sum / n]), cold_std, noise_rng
            )
            G, h = Gh[: d * d].reshape(d, d), Gh[d * d :]
            self.cold_start_coef_ = _floored_solve(G, h, 4.0 * cold_std * math.sqrt(d))
            _warn_if_cold_start_is_noise(h, cold_std, cold_clip)
            if not (np.isfinite(U).all() and np.isfinite(self.cold_start_coef_).all()):
                raise MechanismFailedError(
                    "Private FedRep produced a non-finite model; lower the learning "
                    "rate. The noisy rounds ran: the budget of this fit is spent, "
                    "and a refit on the same data spends it again."
                )
            # not DP, not summed: each user's own head on the released U. A
            # fit without groups keeps none: a row's head would only give
            # back its own target, to any later id equal to its index.
            if groups is None:
                self.user_coef_ = np.zeros((0, k))
            else:
                self.user_coef_ = np.concatenate(total(_heads, U, combine=False))
        progress.done(cost, f"{self.n_rounds} rounds ({n_iter} releases)")

        self.components_ = U.T.copy()
        self.init_components_ = U0.T.copy()
        self.users_ = users if groups is not None else users[:0]
        self.n_users_ = n
        self.n_iter_ = n_iter
        self.noise_multiplier_ = z
        self.clip_norm_ = clip
        self.init_clip_norm_ = init_clip
        self.cold_start_clip_norm_ = cold_clip
        self.privacy_spent_ = cost
        return self

    @property
    def _n_features_out(self):
        """Number of shared features (for ``get_feature_names_out``)."""
        return self.components_.shape[0]

    def _clips(self, d):
        """(clip, init clip, cold-start clip) from the parameters and public d, k."""
        auto = math.sqrt(d * self.n_components)
        clip = auto if self.clip_norm == "auto" else float(self.clip_norm)
        init_clip = (
            auto if self.init_clip_norm == "auto" else float(self.init_clip_norm)
        )
        cold = self.cold_start_clip_norm
        return clip, init_clip, 2.0 * d if cold == "auto" else float(cold)

    def _noise_budget(self):
        """(epsilon, delta) as the engine calibrates it, for all ``n_iter`` releases.

        ``accounting="paper"``: App. B.4's σ̂ = ψ·sqrt(T)·sqrt(16 log(1.25/δ))/(nε)
        on the mean, over the replace-one-user sensitivity 2ψ/n; never less
        noise than the exact calibration (:class:`skdp._dpgd.NoiseBudget`).
        """
        if self.accounting == "exact":
            return NoiseBudget(self.epsilon, self.delta, self.noise)
        epsilon, delta = self.epsilon, self.delta
        return NoiseBudget(
            epsilon,
            delta,
            self.noise,
            paper=lambda n: 2.0 * math.sqrt(n * math.log(1.25 / delta)) / epsilon,
        )

    def _heads(self, X, groups):
        """Each row's head in R^d: ``U v_i`` for known users, else cold start."""
        W = np.broadcast_to(self.cold_start_coef_, X.shape).copy()
        if groups is None:
            return W
        groups = _check_groups(groups, X.shape[0])
        if len(self.users_) and _id_kind(self.users_) != _id_kind(groups):
            # Every row would go to the cold start, silently (ids read back
            # from a CSV as text: R² 0.999 -> -0.04; bytes at fit, text at
            # predict: 0.92 -> -0.08; review).
            raise ValueError(
                f"groups holds user ids of another kind ({_id_kind(groups)}) "
                f"than those of fit ({_id_kind(self.users_)}): give them as "
                "fit got them."
            )
        idx, known = _lookup(self.users_, groups)
        W[known] = self.user_coef_[idx[known]] @ self.components_
        return W

    def predict(self, X, groups=None):
        """Predict ``⟨x, U v_i⟩`` with each row's user head (or the cold start).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.
        groups : array-like of shape (n_samples,), default=None
            User ids. Rows of users with a head (seen in ``fit`` or added by
            :meth:`personalize`) use it; other rows, and all rows when None,
            use the private cold-start model ``cold_start_coef_``.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predictions (not DP for training users: their heads are theirs).
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return np.einsum("ij,ij->i", X, self._heads(X, groups))

    def score(self, X, y, groups=None, sample_weight=None):
        """R² of :meth:`predict` (with ``groups`` routed like ``predict``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.
        y : array-like of shape (n_samples,)
            True targets.
        groups : array-like of shape (n_samples,), default=None
            User ids, as for :meth:`predict`.
        sample_weight : array-like of shape (n_samples,), default=None
            Weights of the rows in the score (``fit`` takes no weights). Kept
            so that ``Pipeline.score`` works with metadata routing enabled
            (scikit-learn passes it even when None).

        Returns
        -------
        score : float
            R² of the predictions (not DP when computed on private data).
        """
        return r2_score(y, self.predict(X, groups), sample_weight=sample_weight)

    @private_transform
    def transform(self, X):
        """Project X on the shared representation: ``X Uᵀ`` (DP, post-processing).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components)
            The k shared features of every row.
        """
        check_is_fitted(self)
        X = validate_data(self, X, reset=False, dtype=np.float64)
        return scaled_product(X, self.components_.T)

    def personalize(self, X, y, groups):
        """Fit heads ``v_i`` for the given users on top of the public ``U``.

        Least squares (minimum-norm) on all the given rows of each user, with
        ``components_`` fixed (Private FedRep, Cor. 11). Heads of users already known
        are replaced; new users are added to ``users_``. The DP release
        ``components_`` is unchanged, so this costs the training users no
        privacy; the new heads are not DP for their own users.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            The users' rows.
        y : array-like of shape (n_samples,)
            Their targets.
        groups : array-like of shape (n_samples,)
            Their user ids.

        Returns
        -------
        self : DPFedRep
            The estimator, with heads for these users.
        """
        check_is_fitted(self)
        X, y = validate_data(self, X, y, reset=False, dtype=np.float64, y_numeric=True)
        new_users, codes = _encode_groups(_check_groups(groups, X.shape[0]), len(y))
        U = self.components_.T
        heads = _heads(_Users(X, y, codes, len(new_users)), U)
        users = _merge_users(self.users_, new_users)
        coef = np.zeros((len(users), U.shape[1]))
        coef[np.searchsorted(users, self.users_)] = self.user_coef_
        coef[np.searchsorted(users, new_users)] = heads
        self.users_, self.user_coef_ = users, coef
        return self


# Above this ratio of a round's noise (Frobenius norm) to the largest mean
# gradient, the released representation was no closer to the true one than a
# random subspace (the paper's synthetic task, ε = 1, 4 seeds each: largest
# principal angle 79-86° at ratios 0.86-8.6, random 85-89°; 53° at d = 10 and
# ratio 0.39, 74° at d = 50 and ratio 0.26, 5-24° at ratios 0.04-0.09).
_NOISE_DOMINATES = 0.5


def _warn_if_noise_dominates(n_users, d, k, z):
    """Warn when each round's noise drowns any mean gradient (public values).

    A round releases the mean of per-user gradients clipped to ``ψ``, plus
    noise of standard deviation ``2zψ/n`` on each of its ``d·k`` entries:
    the noise's norm is about ``2z·sqrt(dk)/n`` times the largest possible
    signal, whatever the data and the clip. Reads n, d, k and the noise
    multiplier only.
    """
    ratio = 2.0 * z * math.sqrt(d * k) / n_users
    if ratio >= _NOISE_DOMINATES:
        needed = math.ceil(2.0 * z * math.sqrt(d * k) / _NOISE_DOMINATES)
        warnings.warn(
            f"DPFedRep: with {n_users} users, the noise of each round is "
            f"{ratio:.2g} times the largest possible mean gradient (n_users, "
            "n_features, n_components and the budget set this, not the data): "
            "the released representation is likely no closer to the users' "
            f"than a random one. At this budget it needs at least {needed} "
            "users, or a larger epsilon, fewer rounds or a smaller n_components.",
            UserWarning,
            stacklevel=5,  # the caller of fit (through fit's two decorators)
        )


def _warn_if_cold_start_is_noise(h, noise_std, cold_clip):
    """Warn when the released mean ``h`` of the users' ``X_iᵀy_i/m_i`` is
    within its noise (post-processing of the release): its squared norm
    below ``d·σ² + 2σ²·sqrt(2d)``, two standard deviations of the pure-noise
    χ²_d above its mean. The cold-start model ``(Ĝ + τI)⁻¹h`` then has at
    best as much noise as signal (a weak shared signal still helps it a
    little: R² 0.33 where the fits that did not warn got 0.45; review); on
    one-hot features (‖x‖² = 1 where
    ``cold_start_clip_norm="auto"`` assumes d) its R² was 0.00 at ε = 8
    where pooled OLS gets 0.48, silently (review). A first version judged
    ``Ĝ`` and fired where ``h`` still held the users' shared signal."""
    d = h.size
    if float(np.sum(np.square(h / noise_std))) < d + 2.0 * math.sqrt(2.0 * d):
        warnings.warn(
            "DPFedRep: the released correlation of x and y of the cold-start "
            "model is within its noise (two standard deviations of what the "
            "noise alone gives; read from the release only): "
            "cold_start_coef_, the model of new users, has at best as much "
            "noise as signal. Too few users for the budget, little signal "
            "shared across users, or features and targets far below the clip "
            f"(cold_start_clip_norm={cold_clip:g}; the default assumes "
            "standardised rows, ||x||² about d): scale them, or give a smaller "
            "cold_start_clip_norm.",
            UserWarning,
            stacklevel=5,  # the caller of fit (through its two decorators)
        )


def _floored_solve(G, h, floor):
    """``(G_sym)⁻¹ h`` with the symmetric part's eigenvalues floored at ``floor``."""
    vals, vecs = np.linalg.eigh((G + G.T) / 2.0)
    vals = np.maximum(vals, max(floor, 1e-12 * max(vals.max(initial=0.0), 1e-300)))
    return vecs @ ((vecs.T @ h) / vals)


def _check_groups(groups, n_rows):
    """User ids as an array of one numpy type (numbers or text), none missing.

    One user's rows must get one code: ``np.unique`` on an object array
    holding a NaN (a missing id in a pandas column of objects) split them
    among several codes, each piece clipped as a user of its own, so the
    release moved by as many times its sensitivity as there were pieces
    (review). Ids that are not a numpy array yet (a list, a pandas column
    of objects) are converted to numpy's common type of the ids (numbers,
    or text), which can only merge ids that Python holds equal (``7`` and
    ``7.0``, ``True`` and ``1``) or that the common type rounds together
    (integers beyond 2**53 beside floats): a merged user is still clipped
    as one, which the guarantee allows. A column with a numpy dtype of
    numbers or text (a pandas column of uint64 ids) is taken as it is.
    Refused: missing ids, ids of no common type, and text mixed with
    numbers, which numpy writes each in its own way (``7`` and ``7.0``
    became the two users ``"7"`` and ``"7.0"``, review).
    """
    dtype = getattr(groups, "dtype", None)
    if isinstance(dtype, np.dtype) and dtype.kind == "T":
        # numpy's variable-width strings: text, as fixed-width unicode
        groups = np.asarray(groups)
        width = int(np.strings.str_len(groups).max(initial=1))
        groups = groups.astype(f"U{width}")
        dtype = groups.dtype
    if isinstance(dtype, np.dtype) and dtype.kind in "biufUS":
        # A pandas column of numbers keeps its dtype: through Python ints,
        # uint64 ids beyond 2**63 became floats, and distinct users merged.
        groups = np.asarray(groups)
    if not isinstance(groups, np.ndarray) or groups.dtype == object:
        groups = np.asarray(groups, dtype=object)
        if _any_missing(groups):
            raise ValueError("groups contains missing user ids (None or NaN).")
        ids = groups
        groups = np.asarray(ids.tolist())
        if groups.dtype.kind in "US" and groups.shape == ids.shape:
            if not np.all(groups.astype(object) == ids):
                raise ValueError(
                    "groups mixes text with numbers (or holds text numpy "
                    "changes): give every user id as text, or every one as "
                    "a number."
                )
    if groups.shape != (n_rows,):  # after converting: ids that are tuples
        raise ValueError(
            f"groups must hold one user id per row: expected shape ({n_rows},), "
            f"got {groups.shape}."
        )
    if groups.dtype.kind not in "biufUS":
        raise ValueError(
            "groups must hold user ids that are all numbers or all text, "
            f"got ids of dtype {groups.dtype}."
        )
    if groups.dtype.kind == "f" and not np.isfinite(groups).all():
        raise ValueError("groups contains NaN or infinity; user ids must be finite.")
    return groups


def _any_missing(ids):
    """Whether an object array holds None, NaN or (with pandas) pd.NA or NaT."""
    try:
        import pandas
    except ImportError:
        return bool(np.any(np.equal(ids, None) | (ids != ids)))
    return bool(pandas.isna(ids).any())


def _encode_groups(groups, n_rows):
    """Sorted user ids and each row's user index; None: one user per row."""
    if groups is None:
        return np.arange(n_rows), np.arange(n_rows)
    groups = _check_groups(groups, n_rows)
    users, codes = np.unique(groups, return_inverse=True)
    return users, codes.ravel()


def _same_ids(a, b):
    """Elementwise ``a == b`` compared exactly, as Python values.

    numpy compares an int64 id with a float64 one (or with a uint64 one) as
    floats, which holds 2**53 + 1 equal to 2**53: another user's head.
    """
    if a.dtype.kind == b.dtype.kind:
        return np.asarray(a == b, dtype=bool)
    return np.asarray(a.astype(object) == b.astype(object), dtype=bool)


def _lookup(users, groups):
    """Index of each id in ``users`` and whether it is there (exactly)."""
    none = np.zeros(len(groups), dtype=int), np.zeros(len(groups), dtype=bool)
    if len(users) == 0:
        return none
    try:
        idx = _clipped_search(users, groups)
        return idx, _same_ids(users[idx], groups)
    except (TypeError, ValueError):  # ids of another type: none known
        return none


def _clipped_search(users, ids):
    """Where each id would sit in the sorted ``users`` (an index into it).

    Searched in ``users``' own dtype: numpy searches int64 ids among uint64
    ones (or floats among ints) as floats, where 2**53 and 2**53 + 1 are
    one value, and a known user landed on its neighbour (review). An id the
    cast changes (2.5 among ints, a negative uint) lands anywhere and is
    told apart by the exact comparison (:func:`_same_ids`).
    """
    if ids.dtype.kind != users.dtype.kind and users.dtype.kind in "iuf":
        with np.errstate(all="ignore"):
            ids = ids.astype(users.dtype)
    return np.clip(np.searchsorted(users, ids), 0, len(users) - 1)


def _id_kind(ids):
    """Text, bytes or numbers: ids of two kinds never compare equal (b"3"
    is not "3", which is not 3), so a mismatch is refused, never looked up."""
    return {"U": "text", "S": "bytes"}.get(ids.dtype.kind, "numbers")


def _merge_users(users, new_users):
    """The sorted union of ``fit``'s ids and ``personalize``'s, every id kept.

    Refused: text beside numbers (numpy would turn the numbers into text,
    and ``predict`` with the original ids would find none), and numbers
    that numpy's common type changes (int ids beyond 2**53 beside float
    ones): both would send known users to the cold start, or one user to
    another's head.
    """
    if len(users) == 0:
        return new_users
    if _id_kind(users) != _id_kind(new_users):
        raise ValueError(
            f"personalize got user ids of another kind ({_id_kind(new_users)}) "
            f"than those of fit ({_id_kind(users)}): give them as fit got them."
        )
    try:
        merged = np.union1d(users, new_users)
        exact = all(
            _same_ids(merged[_clipped_search(merged, ids)], ids).all()
            for ids in (users, new_users)
        )
    except (TypeError, ValueError):
        exact = False
    if not exact:
        raise ValueError(
            "personalize got user ids that cannot be stored beside those of fit "
            f"without changing some (dtypes {users.dtype} and {new_users.dtype}): "
            "give them as fit got them."
        )
    return merged
