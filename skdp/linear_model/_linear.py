"""DPLinearRegression: sufficient-statistics perturbation, adaptive ridge (AdaSSP)."""

import math
import warnings
from numbers import Real

import numpy as np
import scipy.linalg
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_array, check_is_fitted, validate_data

from .._base import (
    MIN_CLIP,
    PRIVACY_CONSTRAINTS,
    DaskScoreMixin,
    DPEstimatorMixin,
    dense_float_rows,
    is_dask_array,
    private_fit,
    require_positive_delta,
    warn_if_delta_is_large,
    with_ones_column,
)
from .._gram import (
    clipped_gram,
    clipped_rows,
    gram_noise_norm_bound,
    row_norm_bound,
    warn_if_rows_point_one_way,
)
from .._inputs import finite_targets
from ..accounting import REPLACE_ONE, gaussian_cost, split_gaussian_budget
from ..mechanisms import (
    as_generator,
    gaussian_mechanism,
    gram_mechanism,
    gram_sensitivity,
)

#: Share of the budget (in GDP terms, ``μ_λ² = share·μ²``) spent on the
#: smallest eigenvalue that sets AdaSSP's ridge with ``alpha="auto"``. Wang
#: (2018) spends a third; the eigenvalue only needs to be known to within the
#: noise of the Gram matrix, which is ``sqrt(2d)`` times larger than its own
#: noise at equal shares (see ``benchmarks/bench_linear_regression.py``).
_EIGENVALUE_SHARE = 0.1
#: Failure probability ρ of AdaSSP's two high-probability bounds (Wang 2018,
#: Algorithm 2, uses 0.05).
_RHO = 0.05
#: The intercept column's constant, as a fraction of the feature clip.
_INTERCEPT_SHARE = 0.5

#: Range of ``clip_norm`` and ``target_clip``: the solve forms products of
#: the released sums (``sx·sxᵀ/n``, of order ``(n·clip)²``), which overflowed
#: float64 from clips of about 1e75 (1e60 with a target clip of 1e100) and
#: failed every fit (a public failure, not a leak). Every pair up to 1e50
#: fits.
_GRAM_CLIP = Interval(Real, MIN_CLIP, 1e50, closed="both")


def _intercept_constant(clip):
    """``clip/2``: the value of the intercept column (public: from the clip).

    The intercept is not penalised, so its noise, ``σ/(c·β·n)`` from the
    released ``c·β·Σy``, shifts every prediction, while the ridge shrinks
    the coefficients' noise; ``c = 1`` (the scale of one standardised
    feature) left it at 0.5-1 standard deviation of y at a few hundred rows
    (ISLP's Hitters, 147 rows, d = 22: R² −0.55). A constant of half the
    row clip costs ``clip²/4`` in the squared row bound (the Gram noise up
    by 10-25%) and divides the intercept's noise by about ``clip/2``:
    measured on eight real tables (20 seeded splits, total ε = 1, private
    scalers), mean R² +0.06 to +0.22 where n is a few hundred (Hitters
    −4.4 → −0.3), within 0.01 from 3000 rows, where ``c = clip`` loses
    0.01-0.02 (docs/benchmarks.md, DPLinearRegression).
    """
    return _INTERCEPT_SHARE * float(clip)


def _auto_clip_norm(n_features):
    """``sqrt(d)``: the root-mean-square row norm of d standardised features."""
    return math.sqrt(n_features)


def _auto_target_clip(n_targets):
    """``2·sqrt(k)``: two standard deviations of k standardised targets."""
    return 2.0 * math.sqrt(n_targets)


def _target_weight(x_bound, target_clip, n_features, n_targets, fit_intercept):
    """``β = (R_x/C_y)·sqrt(C°_y/R°_x)``: the weight of the clipped target.

    ``R_x`` bounds a feature row (intercept included), ``C_y`` is the
    target clip, and ``R°_x``, ``C°_y`` are their defaults for this d and k
    (public). The weighted target's bound ``β·C_y`` is then a fixed
    fraction, ``sqrt(C°_y/R°_x)``, of the features' ``R_x``: X, y and the
    clips given in other units give the same fit, up to those units. (The
    weight ``sqrt(R_x/C_y)`` it equals at the default clips made ``β·y``
    grow as ``sqrt(s)`` with y and its clip in units ×s, and the target
    drowned the features' blocks in noise or was drowned by them: R²
    0.604 in standardised units, −0.06 at ×1000, −150 at ×10⁶; review.)
    The fraction was measured on standardised data: ``β = R_x/C_y``
    instead lost at d = 20 (R² 0.650 → 0.574, ε = 1).
    """
    x_default = _auto_clip_norm(n_features)
    default_bound = row_norm_bound(
        x_default, _intercept_constant(x_default) if fit_intercept else 0.0
    )
    relative = math.sqrt(_auto_target_clip(n_targets) / default_bound)
    return x_bound / target_clip * relative


#: Share of ``target_clip²`` above which the released mean of ``||clip(y)||²``
#: says the targets are far from standardised (see
#: :func:`_warn_if_far_from_standardised`).
_CLIPPED_SHARE = 0.5


def _warn_if_far_from_standardised(
    gram, n, d, constant, weight, clip, target_clip, sigma, stacklevel
):
    """Warn where the noisy Gram matrix shows X or y far from standardised.

    Post-processing of the release. ``mean ||clip(y_i)||²`` (from ``yᵀy``)
    is at most ``target_clip²``: about ``0.23·target_clip²`` for
    standardised targets at the default clip of two standard deviations,
    ``0.58·target_clip²`` for a target twice as wide, about 1 for a raw one
    (a price, a count). Above ``_CLIPPED_SHARE`` of it by more than three
    noise standard deviations, a warning names the remedy. The features'
    column sums (with an intercept) are read by
    :func:`skdp._gram.warn_if_rows_point_one_way`.
    """
    k = gram.shape[0] - d - (constant is not None)
    y_part = gram[d + (constant is not None) :, d + (constant is not None) :]
    mean_square = np.trace(y_part) / (weight**2 * n)
    noise = 3.0 * sigma * math.sqrt(k) / (weight**2 * n)
    if mean_square - noise > _CLIPPED_SHARE * target_clip**2:
        warnings.warn(
            "DPLinearRegression: most target rows reach target_clip="
            f"{target_clip:g} (the released mean of ||clip(y)||² is "
            f"{mean_square / target_clip**2:.2f} of target_clip²): y is far from "
            "standardised, and the fit sees little of it. Standardise y "
            "(TransformedTargetRegressor(regressor=..., transformer="
            "DPStandardScaler(), check_inverse=False), which the ledger counts) "
            "or give target_clip.",
            UserWarning,
            stacklevel=stacklevel + 1,
        )
    if constant is not None:
        warn_if_rows_point_one_way(
            gram,
            n,
            d,
            constant,
            clip,
            sigma,
            name="DPLinearRegression",
            remedy="Standardise X first (DPStandardScaler in a pipeline) or give "
            "clip_norm.",
            stacklevel=stacklevel + 1,
        )


class DPLinearRegression(
    DaskScoreMixin, DPEstimatorMixin, RegressorMixin, BaseEstimator
):
    """Differentially private least squares / ridge by sufficient statistics.

    Every feature row is clipped to L2 norm ``clip_norm`` and every target
    row to ``target_clip``; the Gram matrix of the augmented rows
    ``(x, c, β·y)`` (``c = clip_norm/2``; the Gram holds ``XᵀX``, ``Xᵀy``,
    the column sums and ``yᵀy``) is released once with symmetric Gaussian
    noise
    (:func:`skdp.mechanisms.gram_mechanism`), and the ridge solution is
    computed from it. With ``alpha="auto"`` the ridge is AdaSSP's (Wang
    2018, Algorithm 2): just enough to keep the noisy ``XᵀX`` positive
    definite with high probability, chosen from a private release of the
    smallest eigenvalue of ``XᵀX``.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget ε > 0 of one fit.
    delta : float, default=1e-5
        Privacy parameter δ in (0, 1); should be well below ``1/n_samples``
        (a :class:`~skdp.PrivacyLeakWarning` is raised at ``delta >= 1/n``).
    alpha : float or "auto", default="auto"
        Ridge penalty ``alpha·||coef||²`` added to the sum of squared errors
        (as :class:`sklearn.linear_model.Ridge`; the intercept is not
        penalised). ``"auto"``: AdaSSP's private choice (see Notes), which
        spends 10% of the budget (in GDP terms) on one eigenvalue; a number:
        that penalty, and the whole budget goes to the Gram matrix. With a
        small fixed ``alpha`` the noisy ``XᵀX`` may be indefinite and the
        solution wild; ``"auto"`` guards against it.
    fit_intercept : bool, default=True
        Fit an intercept: a constant column of value ``clip_norm/2`` joins
        the features (it is part of the clipped row, at the cost of
        ``clip_norm²/4`` in the squared row bound), so the column sums come
        with the same release. Half the clip rather than 1: the intercept is
        not penalised, and its noise shifts every prediction.
    clip_norm : float or "auto", default="auto"
        Each feature row is scaled down to this L2 norm. It never depends on
        the data. ``"auto"``: ``sqrt(n_features)``, the root-mean-square
        norm of standardised features (standardise X, e.g. with
        :class:`~skdp.preprocessing.DPStandardScaler`). In ``[1e-100,
        1e50]``, as ``target_clip`` (the solve multiplies released sums,
        past float64's range beyond about 1e75).
    target_clip : float or "auto", default="auto"
        Each target row (a scalar, or the vector of outputs) is scaled down
        to this L2 norm. ``"auto"``: ``2·sqrt(n_targets)``, two standard
        deviations of standardised targets. For targets on another scale,
        give the bound, or standardise y (e.g.
        ``TransformedTargetRegressor(transformer=DPStandardScaler(),
        check_inverse=False)``, which :class:`~skdp.PrivacyLedger` counts).
        A fit whose released ``yᵀy`` shows most targets at the clip, or whose
        released column sums show the clipped feature rows pointing one way
        (raw, uncentred columns), warns (post-processing of the release).
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
        1: a line stating the guarantee and the noise scales.

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,) or (n_targets, n_features)
        Coefficients (one row per output for a 2-D y).
    intercept_ : float or ndarray of shape (n_targets,)
        Intercept (0.0 when ``fit_intercept=False``).
    alpha_ : float
        The ridge penalty used (AdaSSP's with ``alpha="auto"``).
    clip_norm_, target_clip_ : float
        The clips used (``"auto"`` resolved).
    n_iter_ : int
        Number of Gaussian releases: 2 with ``alpha="auto"`` (the eigenvalue,
        then the Gram matrix), 1 otherwise.
    noise_multiplier_ : float
        The releases compose exactly to ``μ = sqrt(n_iter_) /
        noise_multiplier_``-GDP: composing ``GaussianDpEvent(noise_multiplier_)``
        ``n_iter_`` times (add/remove relation; the replace-one factor is in
        the sensitivities) reproduces the guarantee. With ``alpha="auto"``
        the eigenvalue's own multiplier is ``noise_multiplier_ /
        sqrt(2·0.1)`` and the Gram matrix's ``noise_multiplier_ /
        sqrt(2·0.9)``.
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
    sklearn.linear_model.LinearRegression : The non-private model.
    sklearn.linear_model.Ridge : The non-private ridge regression.

    Notes
    -----
    **Guarantee.** ``coef_``, ``intercept_`` and ``alpha_`` are (ε, δ)-DP
    under *replace-one-record* adjacency (n is public): they are computed
    from ``n_iter_`` Gaussian releases that compose exactly to μ-GDP with
    ``μ = mu_from_epsilon(ε, δ)`` (Dong, Roth & Su 2022):

    * the Gram matrix ``G = Σ_i w_i w_iᵀ`` of the rows
      ``w_i = (clip(x_i, C_x), c, β·clip(y_i, C_y))`` (the constant
      ``c = C_x/2`` only with ``fit_intercept``), whose norm is at most
      ``R = sqrt(C_x² + c² + β²C_y²)`` whatever the data. Replacing one row
      moves G by at most ``sqrt(2)·R²`` in Frobenius norm
      (:func:`skdp.mechanisms.gram_sensitivity`), and that is also the
      exact sensitivity of the part the fit needs (``XᵀX``, ``Xᵀy`` and the
      column sums, without ``yᵀy``) whenever ``β·C_y <= R_x =
      sqrt(C_x² + c²)``: for d >= 2 it is attained by two rows with feature
      parts of norm ``R_x`` and inner product ``β²C_y²`` and opposite
      targets of norm ``C_y``, so releasing ``yᵀy`` as well costs nothing.
      Released by
      :func:`skdp.mechanisms.gram_mechanism`: noise std ``σ = z·sqrt(2)·R²``
      on the diagonal and ``σ/sqrt(2)`` off it, mirrored;
    * with ``alpha="auto"``, the smallest eigenvalue of ``Σ_i x̃_i x̃_iᵀ``
      (``x̃`` the clipped features), of sensitivity ``C_x²`` under
      replace-one (Weyl: adding ``x̃x̃ᵀ`` raises it by at most ``C_x²``,
      removing one lowers it by at most ``C_x²``), with 10% of ``μ²``.

    β is ``(R_x/C_y)·sqrt(C°_y/R°_x)`` with ``R_x = sqrt(C_x² + c²)`` and
    ``R°_x``, ``C°_y`` the default bounds for this d and k: the target's
    bound is a fixed fraction of the features', so X, y and the clips in
    other units give the same model up to those units (``sqrt(R_x/C_y)`` at
    the default clips). It is a function of public constants.

    **Ridge (AdaSSP).** With the released eigenvalue ``λ̃`` lowered by
    ``σ_λ·sqrt(2 log(1/ρ))`` (a lower confidence bound with probability
    ``1 - ρ``, ρ = 0.05) and ``B = σ·(sqrt(2d) + sqrt(2 log(1/ρ)))`` (the
    noise matrix's operator norm is below B with probability ``1 - ρ``: its
    expectation is at most ``σ·sqrt(2d)`` for a GOE matrix of this scale,
    and it is σ-Lipschitz in the Gaussian vector), the ridge is
    ``alpha_ = max(0, B - λ̃)``: zero when the data's own curvature
    dominates the noise, and otherwise just enough to keep the noisy,
    centred ``XᵀX + alpha_·I`` positive definite (Wang 2018, Algorithm 2,
    with the exact noise of this release in place of the paper's union
    bound). With ``fit_intercept``, the matrix solved is centred, and λ̃
    estimates its curvature as the largest of: the released uncentred
    eigenvalue less ``||s||²/n`` (Weyl on the centring; ``||s||`` estimated
    from the noisy column sums); the smallest eigenvalue of the released
    centred matrix less a high-probability bound on its noise (Weyl on the
    noise); and the released eigenvalue less the drop that centring brings
    to the released matrix's smallest eigenvalue. The first keeps a feature
    far from 0 with a small spread, whose uncentred eigenvalue is large,
    from going without its ridge; the others keep features that are merely
    off-centre from getting one. The typical size of the error that the
    noisy column sums bring into the centring is added to B (see
    ``_adassp_ridge``). All of this is post-processing.

    **Solution.** With ``fit_intercept``, the noisy ``XᵀX`` and ``Xᵀy``
    are centred with the noisy column sums (n is public):
    ``coef_ = (S_xx + alpha_·I)⁻¹ S_xy`` and ``intercept_ = (Σy - coef_ᵀΣx)/n``,
    the ridge solution of the clipped data when the noise is 0. If the noisy
    system is singular, the least-squares solution is used.

    **Public.** n, d, the number of outputs, the clips. Nothing else is read
    from the data outside the releases; no bound is computed from the data.
    Error messages never quote values from the data.

    **Clipping.** The statistics are those of the clipped rows: a feature
    row longer than ``clip_norm_`` is shrunk while its target is not, which
    inflates the coefficients (measured: by about 15% for 3 standard normal
    features at the default ``sqrt(3)``, where many rows are shrunk; the
    relative spread of row norms, hence the effect, falls as
    ``1/sqrt(2d)``); a target beyond ``target_clip_`` is shrunk, which
    attenuates them. The predictions suffer less than the coefficients
    (R² within 0.01 of OLS at d = 20, see the benchmarks). For unbiased
    coefficients give clips above almost every row, at the price of more
    noise (it grows with ``R²``).

    **Every input.** The bound holds for every finite X and y, float64 or
    float32, with entries up to 1e308: norms are computed without overflow
    and a row whose norm exceeds the float64 range contributes nothing.

    **Caveats.** Fitting again (a cross-validation, a search) spends the
    budget again: compose with :class:`skdp.PrivacyLedger`. Dense input
    only.

    **Dask.** ``fit`` also takes a ``dask.array.Array`` X (dense chunks along
    rows) and y (a numpy y or a Dask y chunked like X's rows): the Gram
    matrix is one reduction over the chunks (``(d + 1 + k)²`` floats each,
    k the number of targets), after one pass that checks the values, and
    the noise is added on the client, so the guarantee is that of the in-memory fit. See
    :ref:`large_data`.

    **Cost.** One pass over the data: time ``O(n·m²)`` (BLAS-3 ``syrk`` on
    blocks of clipped rows) plus ``O(m³)``, memory ``O(m²)`` plus one block
    of ``2²⁰`` values beyond X, for ``m = d + 1 + n_targets``.

    References
    ----------
    .. [1] Y.-X. Wang. "Revisiting differentially private linear regression:
       optimal and adaptive prediction & estimation in unbounded domain",
       UAI 2018, Algorithm 2 (AdaSSP).
    .. [2] C. Dwork, K. Talwar, A. Thakurta, L. Zhang. "Analyze Gauss: optimal
       bounds for privacy-preserving principal component analysis", STOC
       2014, Algorithm 1.
    .. [3] J. Dong, A. Roth, W. J. Su. "Gaussian differential privacy",
       JRSS-B 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import DPLinearRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((20000, 5))
    >>> y = X @ np.array([0.5, -0.3, 0.2, 0.0, 0.1]) + 0.5 * rng.standard_normal(20000)
    >>> reg = DPLinearRegression(epsilon=1.0, delta=1e-6, random_state=0).fit(X, y)
    >>> reg.coef_.shape, reg.n_iter_, round(reg.privacy_spent_.epsilon, 6)
    ((5,), 2, 1.0)
    >>> bool(reg.score(X, y) > 0.5)
    True
    """

    _parameter_constraints = {
        **{k: v for k, v in PRIVACY_CONSTRAINTS.items() if k != "accounting"},
        "alpha": [Interval(Real, 0, None, closed="left"), StrOptions({"auto"})],
        "fit_intercept": ["boolean"],
        "clip_norm": [_GRAM_CLIP, StrOptions({"auto"})],
        "target_clip": [
            _GRAM_CLIP,
            StrOptions({"auto"}),
        ],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        *,
        epsilon=1.0,
        delta=1e-5,
        alpha="auto",
        fit_intercept=True,
        clip_norm="auto",
        target_clip="auto",
        random_state=None,
        noise="fast",
        verbose=0,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.alpha = alpha
        self.fit_intercept = fit_intercept
        self.clip_norm = clip_norm
        self.target_clip = target_clip
        self.random_state = random_state
        self.noise = noise
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.target_tags.multi_output = True
        return tags

    def _audit_canary(self):
        """Default canary (for :mod:`skdp.audit`): a worst-case record."""
        return "GLMCanary", {}

    def _audit_glm_view(self):
        """skdp.audit's score-attack view of a one-output fit: clipped rows.

        The intercept's column is in the fitted row only with
        ``fit_intercept``; its coefficient (``intercept_``) is 0 otherwise.
        """
        coef = np.asarray(self.coef_, dtype=float)
        if coef.ndim != 1:
            raise ValueError(
                "The score attack view of DPLinearRegression is one-output."
            )
        clip = self.clip_norm_
        return dict(
            theta=np.append(coef, self.intercept_),
            features=lambda X: with_ones_column(
                clipped_rows(dense_float_rows(X), clip)
            ),
            mean=lambda z: z,
            encode=lambda y: y * 1.0,
        )

    @private_fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the model with (``epsilon``, ``delta``)-DP.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training features (standardised, ideally), or a Dask array.
        y : array-like of shape (n_samples,) or (n_samples, n_targets)
            Targets (standardised, ideally).

        Returns
        -------
        self : DPLinearRegression
            The fitted estimator.
        """
        require_positive_delta(self)
        X, Y, one_output = self._validate(X, y)
        n, d = X.shape
        k = len(Y) if isinstance(Y, tuple) else Y.shape[1]
        warn_if_delta_is_large(self, n)
        clip = _auto_clip_norm(d) if self.clip_norm == "auto" else self.clip_norm
        target_clip = (
            _auto_target_clip(k) if self.target_clip == "auto" else self.target_clip
        )
        constant = _intercept_constant(clip) if self.fit_intercept else None
        x_bound = row_norm_bound(clip, constant or 0.0)
        weight = _target_weight(x_bound, target_clip, d, k, self.fit_intercept)
        bound = row_norm_bound(clip, constant or 0.0, target_clip, weight)
        adaptive = self.alpha == "auto"
        n_iter = 2 if adaptive else 1
        # μ_λ² = share·μ² for the eigenvalue, the rest for the Gram matrix.
        parts = [(1, 1.0)]
        if adaptive:
            parts = [(1, _EIGENVALUE_SHARE), (1, 1.0 - _EIGENVALUE_SHARE)]
        (*z_eigenvalue, z_gram), z_total = split_gaussian_budget(
            self.epsilon, self.delta, parts, noise=self.noise
        )
        rng = as_generator(self.random_state, self.noise)
        gram = clipped_gram(
            X, Y, x_clip=clip, constant=constant, y_clip=target_clip, y_weight=weight
        )
        if adaptive:  # the eigenvalue's release, then the Gram matrix's
            lower = _private_eigenvalue_lower_bound(
                gram[:d, :d], clip, z_eigenvalue[0], rng
            )
        noisy = gram_mechanism(
            gram, row_norm_bound=bound, noise_multiplier=z_gram, rng=rng
        )
        alpha = self.alpha
        if adaptive:
            sigma = z_gram * gram_sensitivity(bound)
            alpha = _adassp_ridge(noisy, n, d, constant, sigma, lower)
        coef, intercept = _solve(noisy, n, d, constant, weight, alpha)
        _warn_if_far_from_standardised(
            noisy,
            n,
            d,
            constant,
            weight,
            clip,
            target_clip,
            z_gram * gram_sensitivity(bound),
            stacklevel=4,  # the caller of fit (through its two decorators)
        )
        self.coef_ = coef[0] if one_output else coef
        self.intercept_ = float(intercept[0]) if one_output else intercept
        self.alpha_ = float(alpha)
        self.clip_norm_ = float(clip)
        self.target_clip_ = float(target_clip)
        self.n_iter_ = n_iter
        self.noise_multiplier_ = z_total  # n_iter releases of it cost the same
        self.privacy_spent_ = gaussian_cost(
            self.noise_multiplier_,
            n_iter,
            noise=self.noise,
            delta=self.delta,
            adjacency=REPLACE_ONE,
            mechanism=(
                "DPLinearRegression: noisy Gram matrix of clipped "
                + ("(x, 1, y)" if self.fit_intercept else "(x, y)")
                + " rows"
                + (" and noisy smallest eigenvalue (AdaSSP)" if adaptive else "")
            ),
        )
        if self.verbose:
            print(
                f"[DPLinearRegression] {self.privacy_spent_}; Gram noise std "
                f"{z_gram * gram_sensitivity(bound):.4g} (row bound {bound:.4g}); "
                f"ridge alpha_={self.alpha_:.4g}"
            )
        return self

    def _validate(self, X, y):
        """X (numpy or Dask), the targets as 2-D rows (or Dask columns), 1-D?"""
        if not is_dask_array(X) and not is_dask_array(y):
            X, y = validate_data(
                self,
                X,
                y,
                dtype=[np.float64, np.float32],
                multi_output=True,
                y_numeric=True,
            )
            y = finite_targets(y)
            one_output = y.ndim == 1
            return X, (y[:, None] if one_output else y), one_output
        from .. import _dask

        if not is_dask_array(y):
            # Finiteness is checked with X's, in the one pass over the chunks.
            y = check_array(
                y,
                ensure_2d=False,
                dtype=np.float64,
                ensure_all_finite=False,
                input_name="y",
            )
        if not is_dask_array(X):
            X = validate_data(self, X, dtype=[np.float64, np.float32])
            import dask.array as da

            # Chunked as a Dask y is (its rows are the user's), else one chunk.
            if is_dask_array(y) and any(np.isnan(c) for c in y.chunks[0]):
                raise ValueError(
                    "The Dask array y has unknown chunk sizes (nan in y.chunks): "
                    "call y.compute_chunk_sizes() first (it reads only the "
                    "number of rows of each chunk)."
                )
            rows = y.chunks[0] if is_dask_array(y) else X.shape[0]
            X = da.from_array(X, chunks=(rows, X.shape[1]))
        if y.ndim == 1:
            X, y = _dask.validate(
                self, X, y, dtype=(np.float64, np.float32), y_numeric=True
            )
            return X, (y,), True
        X, _ = _dask.validate(self, X, dtype=(np.float64, np.float32))
        return X, _dask_columns(X, y), False

    def predict(self, X):
        """Predict with the private linear model.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Samples (or a Dask array: the result is then a Dask array).

        Returns
        -------
        y_pred : ndarray of shape (n_samples,) or (n_samples, n_targets)
            Predictions.
        """
        check_is_fitted(self)
        if is_dask_array(X):
            from .. import _dask

            return _dask.map_rows(self.predict, self, X)
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        return X @ self.coef_.T + self.intercept_


def _dask_columns(X, y):
    """A 2-D y (numpy or Dask) as 1-D Dask columns chunked like X's rows."""
    import dask.array as da

    from .. import _dask

    if not is_dask_array(y):
        y = check_array(y, dtype=np.float64, ensure_all_finite=False)
        if y.shape[0] != X.shape[0]:
            raise ValueError(
                f"y has {y.shape[0]} rows; expected {X.shape[0]} to match X."
            )
        y = da.from_array(y, chunks=(X.chunks[0], y.shape[1]))
    if y.ndim != 2:
        raise ValueError(f"y must be 1-D or 2-D; got {y.ndim} dimension(s).")
    if y.shape[1] == 0:  # as scikit-learn refuses an in-memory one
        raise ValueError("y has 0 columns: a 2-D y needs at least one target.")
    if np.dtype(y.dtype).kind == "c":  # astype would drop the imaginary part
        raise ValueError("Complex data not supported.")
    # Every chunk, as in _dask.validate: one declared float64 may hold long
    # doubles (1e400, finite there) or objects.
    y = y.map_blocks(_dense_numbers, dtype=np.float64)
    columns = tuple(_dask._as_rows(y[:, j], X) for j in range(y.shape[1]))
    # Each chunk's rows against its chunk of X's, as for a 1-D y: a chunk
    # with a row too many paired x_i with y_(i-1), one record in two rows
    # of the Gram matrix (1.12 times its bound; review).
    _dask.check_target_columns(X, columns)
    return columns


def _dense_numbers(block):
    """One chunk of a 2-D y as dense float64 (a chunk may be a scipy sparse
    matrix: numpy's isfinite refused it with a TypeError; review)."""
    from .. import _dask

    return _dask._as_numbers(_dask.dense_block(block), np.float64)


def _private_eigenvalue_lower_bound(gram_xx, clip, noise_multiplier, rng):
    """A private lower confidence bound on ``λ_min(Σ x̃x̃ᵀ)`` (Wang 2018, Alg. 2).

    Releases the smallest eigenvalue (sensitivity ``C_x²`` under replace-one:
    by Weyl, adding ``x̃x̃ᵀ`` raises it by at most ``||x̃||² <= C_x²`` and
    removing one lowers it by at most as much) with noise std
    ``noise_multiplier·C_x²``, then lowers it by ``sqrt(2 log(1/ρ))`` noise
    standard deviations (post-processing): below the true value with
    probability ``1 - ρ``.
    """
    lam_min = float(scipy.linalg.eigvalsh(gram_xx, subset_by_index=[0, 0])[0])
    noisy = float(
        gaussian_mechanism(
            np.array([lam_min]),
            sensitivity=clip * clip,
            noise_multiplier=noise_multiplier,
            rng=rng,
        )[0]
    )
    tail = math.sqrt(2.0 * math.log(1.0 / _RHO))
    return max(0.0, noisy - noise_multiplier * clip * clip * tail)


def _adassp_ridge(noisy, n, d, constant, sigma, lower):
    """AdaSSP's ridge: a high-probability bound on the noise of the (centred)
    ``XᵀX`` the solution uses, less the private lower bound on its curvature.

    Post-processing of the releases. The noise ``E`` of the Gram matrix's
    feature block (diagonal std σ, off-diagonal ``σ/sqrt(2)``: a GOE matrix
    times ``σ/sqrt(2)``) has ``||E|| <= σ·(sqrt(2d) + sqrt(2 log(1/ρ)))``
    with probability ``1 - ρ`` (expectation at most ``σ·sqrt(2d)``; the
    norm is σ-Lipschitz in the Gaussian vector). With an intercept, the
    centring subtracts ``ĉĉᵀ/(n·c²)`` for the noisy column ``ĉ = c·Σx̃ + e``
    (``e`` of std ``σ/sqrt(2)`` per entry), which differs from the centring
    with the exact column by ``(c eᵀ + e cᵀ + e eᵀ)/(n·c²)``; its typical
    size ``(2·||c||·||e|| + ||e||²)/(n·c²)``, with ``||e||² ≈ dσ²/2`` and
    ``||c||² ≈ ||ĉ||² - dσ²/2``, is added to the bound. Without it the
    centred noisy matrix was often indefinite at small n·μ (diabetes at
    ε = 0.5: mean R² −4.8 over 30 fits; with it 0.03).
    """
    bound = gram_noise_norm_bound(sigma, d, _RHO)
    if constant is not None:
        e_typ = sigma * math.sqrt(d / 2.0)  # sqrt(E||e||²)
        column = float(np.linalg.norm(noisy[:d, d]))  # scaled: no overflow
        # ||c||² = E||ĉ||² - E||e||², as a product (squares overflow at the
        # largest clips the constraints accept)
        c_est = math.sqrt(max(0.0, column - e_typ) * (column + e_typ))
        bound += (e_typ / constant) * ((2.0 * c_est + e_typ) / constant) / n
        lower = _centred_curvature(lower, noisy, n, d, constant, sigma, c_est)
    return max(0.0, bound - lower)


def _centred_curvature(lower, noisy, n, d, constant, sigma, c_est):
    """An estimate of the centred ``λ_min(XᵀX - ssᵀ/n)`` the solve depends on
    (post-processing of the releases), at least 0.

    ``lower`` bounds the uncentred ``λ_min(XᵀX)`` (the eigenvalue's scalar
    release); ``Ĝ`` and ``ŝ`` are the released feature block and column
    sums, ``Ĝ - ŝŝᵀ/n`` the matrix the solve centres. The largest of:

    * ``lower - ||s||²/n``, Weyl on the centring, with ``||c·s|| ≈ c_est``
      (the noisy column's expected square less the noise's). Without a
      centred estimate the ridge was read from the uncentred matrix: a
      feature of mean 0.65 and sd 0.01 (a large uncentred eigenvalue, a
      tiny centred one) got ``alpha_ = 0`` and an indefinite solved matrix
      in half the fits (review). A high-probability bound on ``||s||``
      instead cost centred data at small ε (R² 0.566 → 0.530 at ε = 0.3).
    * ``λ_min(Ĝ - ŝŝᵀ/n)`` less ``B + e·(2·||s|| + e)/n``, Weyl on the
      noise: with probability about ``1 - 2ρ`` the feature block's noise has
      norm at most B (:func:`skdp._gram.gram_noise_norm_bound`) and the
      sums' noise at most e, which bound the solved matrix's distance from
      the true centred one. Weyl on the centring alone forced the full
      ridge on merely off-centre features (R² 0.963 → 0.904 at ε = 1).
    * ``lower`` less the drop ``λ_min(Ĝ) - λ_min(Ĝ - ŝŝᵀ/n)`` that centring
      brings to the released matrix (an estimate: most of the noise cancels
      in the difference, and ``lower`` has a scalar's small noise). Where
      the mean points away from the smallest axis it barely moves: features
      of mean 0.5 at ε = 0.3, R² 0.711 with the two bounds alone, 0.859 with
      it (0.874 before the centring was read at all).
    """
    tail = math.sqrt(2.0 * math.log(1.0 / _RHO))
    block = noisy[:d, :d]
    sums = noisy[:d, d] / constant
    centred = float(
        scipy.linalg.eigvalsh(block - np.outer(sums, sums) / n, subset_by_index=[0, 0])[
            0
        ]
    )
    uncentred = float(scipy.linalg.eigvalsh(block, subset_by_index=[0, 0])[0])
    s_est = c_est / constant
    weyl_on_centring = lower - s_est * (s_est / n)
    e_bound = sigma / math.sqrt(2.0) * (math.sqrt(d) + tail) / constant
    s_bound = float(np.linalg.norm(sums)) + e_bound  # >= ||s||
    noise = (
        gram_noise_norm_bound(sigma, d, _RHO) + e_bound * (2.0 * s_bound + e_bound) / n
    )
    weyl_on_noise = centred - noise
    after_drop = lower - max(0.0, uncentred - centred)
    return max(0.0, weyl_on_centring, weyl_on_noise, after_drop)


def _solve(gram, n, d, constant, weight, alpha):
    """Ridge coefficients and intercepts from a (noisy) augmented Gram matrix."""
    xx = gram[:d, :d]
    if constant is None:
        xy = gram[:d, d:] / weight
        sx = sy = None
    else:
        xy = gram[:d, d + 1 :] / weight
        sx = gram[:d, d] / constant
        sy = gram[d, d + 1 :] / (constant * weight)
        xx = xx - np.outer(sx, sx) / n
        xy = xy - np.outer(sx, sy) / n
    lhs = xx + alpha * np.eye(d)
    try:
        coef = scipy.linalg.solve(lhs, xy, assume_a="sym", check_finite=False)
    except (np.linalg.LinAlgError, scipy.linalg.LinAlgError):
        coef = np.linalg.lstsq(lhs, xy, rcond=None)[0]
    if not np.all(np.isfinite(coef)):
        coef = np.linalg.lstsq(lhs, xy, rcond=None)[0]
    coef = coef.T  # (k, d)
    if sx is None:
        return coef, np.zeros(coef.shape[0])
    return coef, (sy - coef @ sx) / n
