"""DPRandomFeaturesRegressor: DP gradient descent on random features (paper 002)."""

import functools
from numbers import Integral, Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._base import (
    CLIP_CONSTRAINT,
    PRIVACY_CONSTRAINTS,
    DaskScoreMixin,
    DPEstimatorMixin,
    dense_float_rows,
    is_dask_array,
    private_fit,
    require_positive_delta,
    warn_if_delta_is_large,
)
from .._clipping import canonical_design, row_norms
from .._datafits import Quadratic
from .._dpgd import NoiseBudget, dpgd
from .._inputs import SPARSE_FIT_FORMATS, finite_targets
from ..accounting import (
    REPLACE_ONE,
    gaussian_cost,
    mu_from_epsilon,
)
from ..mechanisms import as_generator
from ._features import (
    ACTIVATIONS,
    check_activation_widths,
    column_blocks,
    draw_weights,
    features,
    predict_linear,
    resolve_activation,
    zero_tiny_rows,
)
from ._kernel import kernel_dpgd

# Defaults of Bombari & Mondelli, §5 and Figure 3: clip C = 0.5·sqrt(p) and
# training time η·T·p/d = 5 (the optimum of Figure 3, third panel).
_CLIP_PER_ROOT_P = 0.5
_TIME_SCALE = 5.0
# Below this signal-to-noise ratio ρ = μn/d the training time shrinks in
# proportion (noise accumulates over time faster than the fit improves):
# measured on Figure 3's task, n from 500 to 2000, d from 10 to 50, ε from 0.1
# to 4 (the best time fell from ηTp/d = 5 at ρ ≥ 6.5 to 2 at ρ ≈ 4 and 0.5-1
# at ρ ≈ 1.5).
_FULL_TIME_RHO = 8.0
# η = 1/p keeps gradient descent stable for activations bounded by 1
# (λ_max((2/n)ΦᵀΦ) ≤ 2p); steps beyond this many raise η instead.
_MAX_AUTO_ITER = 1000


class DPRandomFeaturesRegressor(
    DaskScoreMixin, DPEstimatorMixin, RegressorMixin, BaseEstimator
):
    """Differentially private regression on random features by noisy GD.

    The model is ``f(x) = ϕ(Vx)ᵀθ`` with random weights ``V ∈ R^{p×d}``,
    ``V_ij ~ N(0, 1/d)``, drawn once and independently of the data, and an
    odd activation ``ϕ`` (tanh by default). Only ``θ`` is trained, by
    full-batch DP gradient descent on the squared loss ``(φ(x)ᵀθ − y)²``,
    exactly Algorithm 1 of Bombari & Mondelli [1]_: each step clips every
    record's gradient to L2 norm ``clip_norm``, averages, adds Gaussian
    noise, and the last iterate ``θ_T`` is released. In the overparameterised
    regime (``p`` much larger than ``n``) more features cost no extra privacy
    and no utility ("privacy for free", [1]_ Theorem 1).

    Parameters
    ----------
    n_components : int, default=1000
        Number of random features ``p`` (also the number of trained
        parameters). Larger is better for utility ([1]_ Figure 3) and costs
        time ``O(n²p)`` with the kernel solver.
    activation : {"tanh", "erf", "sin"} or callable, default="tanh"
        The activation ``ϕ``. The named ones are odd and 1-Lipschitz, as [1]_
        Assumption 2 asks. A callable maps an array of pre-activations to
        an array of the same shape. A NumPy ufunc without core dimensions
        (``np.arctan``, ``scipy.special.expit``) is applied to whole blocks;
        any other callable (e.g. ``lambda z: np.maximum(z, 0)``) to one
        record's row at a time, so that a record's features depend on that
        record alone whatever the function does (one call per row: slower
        on large data; pass a ufunc where speed matters). The guarantee
        holds for any pure function (one with no state kept between
        calls); a record on which it raises, or returns another shape,
        gets features 0 (a rule of that record alone).
    epsilon : float, default=1.0
        Privacy budget ε > 0 of one fit.
    delta : float, default=1e-5
        Privacy parameter δ in (0, 1); should be well below ``1/n_samples``.
    accounting : {"exact", "paper"}, default="exact"
        ``"exact"``: the smallest noise for which the ``T`` steps are (ε,
        δ)-DP (μ-GDP, tight). ``"paper"``: [1]_ Proposition 3.2,
        ``σ = sqrt(ηT)·sqrt(8 log(1/δ))/ε`` (valid for ε < 8 log(1/δ)), about
        2–3× more noise. Either way ``privacy_spent_`` reports the exact
        guarantee of the noise used.
    clip_norm : float or "auto", default="auto"
        Each record's gradient is clipped to this L2 norm. It bounds one
        record's influence and so sets the noise scale; it never depends on
        the data. ``"auto"``: ``0.5·sqrt(n_components)``, the best value of
        [1]_ §5 (features have norm about ``0.63·sqrt(p)`` for tanh).
    learning_rate : float or "auto", default="auto"
        Step size η. ``"auto"``: ``1/n_components`` (stable for activations
        bounded by 1), raised to ``5d/(p·max_iter)`` if ``max_iter`` is set
        lower than ``5d`` or capped at 1000 steps.
    max_iter : int or "auto", default="auto"
        Number of noisy steps ``T``. Privacy depends on η and T only through
        the training time ``ηT``. ``"auto"``: ``ηT·p/d = 5``, the optimum of
        [1]_ Figure 3 (at ε = 4), shortened in proportion when the
        signal-to-noise ratio ``ρ = μ·n/d`` is below 8 (small ε or n), where
        training longer accumulates more noise than signal:
        ``ηT·p/d = 5·min(1, ρ/8)``. With ``η = 1/p`` this is ``T = 5d`` steps
        (at most 1000) when ρ ≥ 8.
    solver : {"auto", "primal", "kernel"}, default="auto"
        How Algorithm 1 is run. ``"primal"``: on the ``n × p`` feature matrix,
        ``O(Tnp)`` time and ``8np`` bytes. ``"kernel"``: the exact kernel form
        (Notes), ``O(n²p + n³ + Tn²)`` time and ``O(n²)`` memory. Both give
        θ_T the same distribution (so the same guarantee), but not the same
        draw for a given seed. ``"auto"`` picks the one predicted to be
        faster from the public sizes n, d, p and T (the kernel form wins when
        ``p ≳ n`` and ``T ≳ n/40``).
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the random weights and, through an independent stream, the
        noise; use None in production (a known seed makes the noise
        predictable). The rule
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
        1: the guarantee being spent, about ten progress lines and a summary;
        2: one line per step.

    Attributes
    ----------
    coef_ : ndarray of shape (n_components,)
        θ_T, the private output.
    random_weights_ : ndarray of shape (n_features, n_components)
        ``Vᵀ``; drawn independently of the data (free of privacy cost).
    n_iter_ : int
        Number of noisy steps run (``max_iter``, resolved).
    learning_rate_, clip_norm_ : float
        The step size and the clip used (``"auto"`` resolved).
    solver_ : str
        The solver that ran (``"primal"`` or ``"kernel"``).
    noise_multiplier_ : float
        Noise standard deviation divided by the L2 sensitivity
        ``2 * clip_norm_`` of one step's gradient sum. Algorithm 1's ``σ`` is
        ``sqrt(learning_rate_) * noise_multiplier_``.
        The composition stated here is that of ``noise="fast"``. Secure noise
        is composed in zCDP instead: each release is ``(1/z + 2^-16)²/2``-zCDP
        for its own multiplier z (the grid rounding's slack,
        :func:`~skdp.accounting.secure_noise_cost`), and
        ``privacy_spent_.zcdp`` is their sum; a GDP accountant given this
        multiplier understates it.
    privacy_spent_ : PrivacyCost
        The exact guarantee: ``mu = sqrt(n_iter_) / noise_multiplier_``,
        adjacency and mechanism.
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    sklearn.kernel_approximation.RBFSampler : Random Fourier features.
    sklearn.linear_model.Ridge : A non-private linear model on such features.

    Notes
    -----
    **Guarantee.** ``coef_`` (and every intermediate iterate) is (ε, δ)-DP
    under *replace-one-record* adjacency. Replacing one record changes the
    sum of clipped gradients by at most ``2C`` ([1]_ Lemma B.1), whatever the
    data; each step adds noise of standard deviation
    ``noise_multiplier_ · 2C`` to that sum, so the ``T`` steps compose exactly
    to ``μ = sqrt(T)/noise_multiplier_``-GDP (Dong, Roth & Su 2022), which is
    (ε, δ)-DP for the reported pair. In [1]_'s notation the noise on θ per step
    is ``sqrt(η)·(2C/n)·σ`` with ``σ = sqrt(η)·noise_multiplier_``. The noise
    is calibrated against ``δ·(1 − 1e-9)`` to absorb floating-point error.

    **Public.** n, d and the random weights ``V`` (drawn from
    ``random_state``, not from the data). The ``"auto"`` rules read only n,
    d, p and (ε, δ). Nothing else is read from the data outside the noisy
    gradients; predictions are post-processing.

    **Every input.** X and y may be any finite values (dense or sparse X):
    feature values are made finite entry by entry (NaN → 0, clipped to
    ±1e100; the named activations are bounded by 1), and a record whose
    gradient is not finite contributes nothing, so every record's
    contribution has norm at most C.

    **Kernel solver.** With ``θ_0 = 0`` every iterate is ``Φᵀa_t`` plus the
    accumulated noise, so the loop runs on the n predictions
    ``u_t = u_{t−1} − K v_t + s·w_t`` with ``K = ΦΦᵀ`` and ``w_t = Φz_t``.
    The noise is drawn backwards: first the sum ``Z = Σ_t z_t`` (which θ_T
    carries), then the steps' ``w_t`` as a Gaussian bridge in R^n that ends
    at ``ΦZ``. The joint law of the run and θ_T is that of Algorithm 1, to
    rounding in every direction of K, small eigenvalues included (nothing
    is solved with K; the module states the rounding), so the guarantee is
    the same; only θ_T is released, never the n-indexed
    coefficients. The proof is in ``skdp/random_features/_kernel.py``.

    **Utility.** [1]_ assumes inputs of norm about ``sqrt(d)`` (standardised
    features) and bounded labels; then the pre-activations are of order one.
    There is no intercept (as in [1]_): centre y with a public constant.
    Labels of large magnitude make most gradients clipped and learning slow.

    **Caveats.** Noise is drawn with numpy floating point, which is not
    hardened against the attacks of Mironov (2012). Fitting the same data
    several times (e.g. in ``GridSearchCV``) spends the budget each time:
    compose with :class:`skdp.PrivacyLedger`.

    **Dask.** ``fit`` also takes a ``dask.array.Array`` with the primal
    solver (``solver="auto"`` picks it; ``"kernel"`` is refused): each chunk
    computes its random features and clipped gradient sum where it lives,
    anew at every step (Φ is never stored; time ``O(T·n·p·d)``), and the
    noise is added on the client once per step: the guarantee is that of the
    in-memory fit. ``predict`` returns a Dask array. See :ref:`large_data`.

    **Cost.** Primal: ``O(T·n·p + n·p·d)`` time, ``8np`` bytes for the
    features. Kernel: ``O(n²p + n·p·d + n³ + T·n²)`` time, ``8n²`` bytes plus
    a block of 2²² features. Both store ``V`` (``8dp`` bytes).

    References
    ----------
    .. [1] S. Bombari, M. Mondelli. "Privacy for Free in the Overparameterized
       Regime", 2025: Algorithm 1, Proposition 3.2, eq. (4.3), §5 Figure 3.
    .. [2] J. Dong, A. Roth, W. J. Su. "Gaussian differential privacy",
       JRSS-B 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import DPRandomFeaturesRegressor
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((1000, 20))
    >>> y = np.sign(X @ rng.standard_normal(20))
    >>> reg = DPRandomFeaturesRegressor(
    ...     n_components=4000, epsilon=2.0, delta=1e-6
    ... ).fit(X, y)
    >>> reg.coef_.shape, reg.n_iter_, reg.solver_
    ((4000,), 100, 'kernel')
    >>> round(reg.privacy_spent_.epsilon, 6), reg.privacy_spent_.adjacency
    (2.0, 'replace one record')
    >>> bool(reg.score(X, y) > 0.5)
    True
    """

    _parameter_constraints = {
        **PRIVACY_CONSTRAINTS,
        "n_components": [Interval(Integral, 1, None, closed="left")],
        "activation": [StrOptions(set(ACTIVATIONS)), callable],
        "clip_norm": [CLIP_CONSTRAINT, StrOptions({"auto"})],
        "learning_rate": [
            Interval(Real, 0, None, closed="neither"),
            StrOptions({"auto"}),
        ],
        "max_iter": [Interval(Integral, 1, None, closed="left"), StrOptions({"auto"})],
        "solver": [StrOptions({"auto", "primal", "kernel"})],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        n_components=1000,
        *,
        activation="tanh",
        epsilon=1.0,
        delta=1e-5,
        accounting="exact",
        clip_norm="auto",
        learning_rate="auto",
        max_iter="auto",
        solver="auto",
        random_state=None,
        noise="fast",
        verbose=0,
    ):
        self.n_components = n_components
        self.activation = activation
        self.epsilon = epsilon
        self.delta = delta
        self.accounting = accounting
        self.clip_norm = clip_norm
        self.learning_rate = learning_rate
        self.max_iter = max_iter
        self.solver = solver
        self.random_state = random_state
        self.noise = noise
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags

    def _audit_canary(self):
        """Default canary (for :mod:`skdp.audit`).

        The kernel solver (which "auto" picks for large n_components)
        computes the iterates without the engine's clipped sum, so the
        gradient canary cannot enter it: those fits keep the record canary.
        """
        if self.solver == "primal":
            return "GradientCanary", {"direction": "least_used"}
        return "GLMCanary", {}

    def _audit_engine_parameters(self):
        """The fitted parameters in the DP-GD engine's layout ``(d + 1, 1)``."""
        return np.append(self.coef_, 0.0)[:, None]  # no intercept: its row is 0

    def _audit_glm_view(self):
        """skdp.audit's score-attack view: the random features of the rows."""
        activation = resolve_activation(self.activation)
        weights = self.random_weights_
        return dict(
            theta=self.coef_,
            features=lambda X: features(dense_float_rows(X), weights, activation),
            mean=lambda z: z,
            encode=lambda y: y * 1.0,
        )

    @private_fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit θ with (``epsilon``, ``delta``)-DP.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training inputs (standardised, ideally).
        y : array-like of shape (n_samples,)
            Targets (bounded and centred by a public constant, ideally).

        Returns
        -------
        self : DPRandomFeaturesRegressor
            The fitted estimator.
        """
        require_positive_delta(self)
        activation = resolve_activation(self.activation)
        dask_input = is_dask_array(X)
        if dask_input:  # map-reduce on the chunks; noise on the client
            X, y = self._validate_dask(X, y)
        else:
            X, y = validate_data(
                self,
                X,
                y,
                accept_sparse=SPARSE_FIT_FORMATS,
                dtype=np.float64,
                y_numeric=True,
            )
            # y_numeric converts objects only: text ("1.5", "a") is converted
            # here, or refused with the message that names no value.
            y = finite_targets(y)
            if sp.issparse(X):
                # Duplicates merged (a sum that overflows read as ±largest), as
                # every estimator reads a record: not by scipy inside X @ V.
                X = canonical_design(X)
        n, d = X.shape
        check_activation_widths(activation, n, self.n_components)
        warn_if_delta_is_large(self, n)
        n_iter, learning_rate, clip_norm = self._schedule(n, d)
        noise_multiplier = self._noise_budget().noise_multiplier(n_iter)
        solver = "primal" if dask_input else self._resolve_solver(n, d, n_iter)
        weights_rng, noise_rng = as_generator(self.random_state, self.noise).spawn(2)
        weights = draw_weights(weights_rng, d, self.n_components)
        run = dict(
            clip_norm=clip_norm,
            noise_multiplier=noise_multiplier,
            n_iter=n_iter,
            learning_rate=learning_rate,
            rng=noise_rng,
            mechanism="DPRandomFeaturesRegressor noisy gradient descent",
            verbose=self.verbose,
        )
        if solver == "kernel":
            cost = gaussian_cost(
                noise_multiplier,
                n_iter,
                noise=self.noise,
                delta=self.delta,
                adjacency=REPLACE_ONE,
                mechanism=(
                    f"{run['mechanism']}: {n_iter} steps, per-record clip "
                    f"{clip_norm:g}, noise multiplier {noise_multiplier:.6g}"
                ),
            )
            coef = kernel_dpgd(X, y, weights, activation, Quadratic(), cost=cost, **run)
        else:
            coef, _, cost = dpgd(
                _feature_matrix(X, weights, activation),
                y,
                Quadratic(),
                n_outputs=1,
                delta=self.delta,
                fit_intercept=False,
                solver="gd",
                adjacency=REPLACE_ONE,
                **run,
            )
            coef = coef[:, 0]
        self.coef_ = coef
        self.random_weights_ = weights
        self.n_iter_ = n_iter
        self.learning_rate_ = learning_rate
        self.clip_norm_ = clip_norm
        self.solver_ = solver
        self.noise_multiplier_ = noise_multiplier
        self.privacy_spent_ = cost
        return self

    def _validate_dask(self, X, y):
        """Dask (X, y): the primal solver only; one pass checks that values are finite.

        The kernel solver needs the n × n Gram matrix in one place, which is
        what a Dask array is meant to avoid: it is refused, before any data
        is read.
        """
        from .. import _dask

        if self.solver == "kernel":
            raise ValueError(
                "solver='kernel' needs the n x n Gram matrix in memory and does "
                "not accept a Dask array; use solver='primal' (or 'auto', which "
                "picks 'primal' for Dask input)."
            )
        return _dask.validate(
            self, X, y, dtype=np.float64, accept_sparse=True, y_numeric=True
        )

    def _schedule(self, n_samples, n_features):
        """Steps, step size and clip: the parameters, or the paper's scaling.

        ``"auto"`` reads only n, d, p and (ε, δ): training time
        ``ηT = h·d/p`` with ``h = 5·min(1, ρ/8)``, ``ρ = μn/d`` (μ the GDP
        budget), reached with ``η = 1/p`` (``T = h·d``, at most 1000), and
        ``C = 0.5·sqrt(p)``.
        """
        p = self.n_components
        rho = self._mu() * n_samples / n_features
        time_scale = _TIME_SCALE * min(1.0, rho / _FULL_TIME_RHO)
        horizon = time_scale * n_features / p  # ηT
        if self.max_iter != "auto":
            n_iter = self.max_iter
        elif self.learning_rate != "auto":
            n_iter = max(1, round(horizon / self.learning_rate))
        else:
            n_iter = max(1, min(round(time_scale * n_features), _MAX_AUTO_ITER))
        if self.learning_rate != "auto":
            learning_rate = float(self.learning_rate)
        else:
            learning_rate = max(1.0 / p, horizon / n_iter)
        if self.clip_norm != "auto":
            clip_norm = float(self.clip_norm)
        else:
            clip_norm = _CLIP_PER_ROOT_P * np.sqrt(p)
        return n_iter, learning_rate, clip_norm

    def _mu(self):
        """The GDP budget the noise will spend (public: from ε, δ, accounting)."""
        exact = mu_from_epsilon(self.epsilon, self.delta)
        if self.accounting == "exact":
            return exact
        return min(exact, self.epsilon / np.sqrt(8.0 * np.log(1.0 / self.delta)))

    def _noise_budget(self):
        """(ε, δ) as the engine calibrates it (:class:`skdp._dpgd.NoiseBudget`).

        ``accounting="paper"``: Proposition 3.2's ``sqrt(8·T·log(1/δ))/ε``,
        valid for ε < 8 log(1/δ); never less noise than the exact calibration.
        """
        if self.accounting == "exact":
            return NoiseBudget(self.epsilon, self.delta, self.noise)
        log_inv_delta = np.log(1.0 / self.delta)
        if self.epsilon >= 8.0 * log_inv_delta:
            raise ValueError(
                "accounting='paper' (Proposition 3.2) needs epsilon < "
                f"8 log(1/delta) = {8.0 * log_inv_delta:.4g}."
            )
        epsilon = self.epsilon
        return NoiseBudget(
            epsilon,
            self.delta,
            self.noise,
            paper=lambda n_iter: np.sqrt(8.0 * n_iter * log_inv_delta) / epsilon,
        )

    def _resolve_solver(self, n_samples, n_features, n_iter):
        """``"auto"``: whichever form :func:`_solver_seconds` predicts faster."""
        if self.noise == "secure":
            if self.solver == "kernel":
                raise ValueError(
                    "solver='kernel' draws its noise in the kernel form and has no "
                    "secure sampler: use solver='primal' (or 'auto') with "
                    "noise='secure'."
                )
            return "primal"  # the engine rounds and noises each gradient sum
        if self.solver != "auto":
            return self.solver
        primal, kernel = _solver_seconds(
            n_samples, n_features, self.n_components, n_iter
        )
        return "kernel" if kernel < primal else "primal"

    def predict(self, X):
        """Predict ``φ(x)ᵀ coef_`` (post-processing of the private model).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Samples.

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
            Predicted values.
        """
        check_is_fitted(self)
        if is_dask_array(X):
            from .. import _dask

            return _dask.map_rows(self.predict, self, X, accept_sparse=True)
        X = validate_data(self, X, accept_sparse="csr", reset=False, dtype=np.float64)
        activation = resolve_activation(self.activation)
        return predict_linear(X, self.random_weights_, activation, self.coef_)


def _chunk_features(block, weights, activation):
    """φ of one Dask chunk, a sparse one read as the in-memory fit reads X
    (duplicates merged, a sum that overflows read as ±largest)."""
    if sp.issparse(block):
        block = canonical_design(block)
    A = features(block, weights, activation)
    return zero_tiny_rows(A, row_norms(A))


def _feature_matrix(X, weights, activation):
    """The ``n × p`` feature matrix Φ, filled a block of columns at a time.

    In Fortran order, the order the DP-GD engine reads (it would copy a
    row-major Φ once more). For a Dask X, Φ is a lazy Dask array computed
    chunk by chunk where X's chunks live (the same per-entry function): it
    is never held whole, and each step of the engine computes it anew from
    X (time ``O(n·p·d)`` per step instead of ``O(n·p)``, memory one chunk
    of Φ per worker task).
    """
    if is_dask_array(X):
        return X.map_blocks(
            functools.partial(_chunk_features, weights=weights, activation=activation),
            chunks=(X.chunks[0], (weights.shape[1],)),
            dtype=np.float64,
            meta=np.empty((0, 0)),
        )
    Phi = np.empty((X.shape[0], weights.shape[1]), order="F")
    norms = np.zeros(X.shape[0])
    for cols in column_blocks(X.shape[0], weights.shape[1]):
        Phi[:, cols] = features(X, weights, activation, cols)
        norms = np.hypot(norms, row_norms(Phi[:, cols]))
    return zero_tiny_rows(Phi, norms)  # as the kernel solver's zero rows


# Throughputs of the operations each solver is made of, measured on a 2-core
# machine with OpenBLAS (`python benchmarks/bench_random_features.py
# --calibrate`, 2026-11-23); only their ratios matter for the choice. Units:
# n·p·d per second for X @ V, entries per second for the activation, n²·p per
# second for the Gram product and other BLAS-3 products, entries per second
# for a memory-bound matrix-vector pass (over Φ, or over the n × n K), n³ per
# second for the Cholesky factorisation of K.
_RATE_PROJECT = 5.3e10
_RATE_ACTIVATION = 2.37e8
_RATE_GEMM = 1.53e11
_RATE_MATVEC = 4.2e9
_RATE_CHOLESKY = 1.14e11


def _solver_seconds(n, d, p, n_iter):
    """Predicted fit times ``(primal, kernel)`` from public sizes only.

    Primal: one feature pass, then two passes over Φ per step. Kernel: two
    feature passes, the Gram product, one square root of K (the Cholesky
    factor of K + λI, whatever p), one product with the n × n Gram matrix per
    step, and the noise ``F g_t`` (BLAS-3, F of n × n).
    """
    feature_pass = n * p * d / _RATE_PROJECT + n * p / _RATE_ACTIVATION
    primal = feature_pass + 2 * n_iter * n * p / _RATE_MATVEC
    kernel = (
        2 * feature_pass
        + n * n * p / _RATE_GEMM
        + n**3 / _RATE_CHOLESKY
        + n_iter * n * n / _RATE_MATVEC
        + n_iter * n * n / _RATE_GEMM
    )
    return primal, kernel
