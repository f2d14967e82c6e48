"""The one full-batch DP gradient-descent engine shared by gradient-based estimators.

Each step computes every record's gradient of the loss, clips it to L2 norm
``clip_norm``, sums, adds Gaussian noise of standard deviation
``noise_multiplier × sensitivity`` to the sum, and takes a gradient step:

.. math::

    \\beta^{t+1} = \\mathrm{post}\\Big(\\beta^{t} - \\eta\\Big[\\frac{1}{n}
        \\Big(\\sum_i \\mathrm{clip}_C(\\nabla \\ell_i(\\beta^t)) + w_t\\Big)
        + \\alpha \\beta^{t}\\Big]\\Big), \\qquad
    w_t \\sim N(0, (z \\Delta)^2 I).

Privacy (Bassily, Smith & Thakurta 2014; Cai, Wang & Zhang, Score Attack,
Algorithm 1, with per-record clipping in place of assumed bounds): replacing one
record changes the clipped sum by at most ``Δ = 2C``, whatever the data and
whatever ``β^t``; so each step is a Gaussian mechanism that is ``1/z``-GDP, and
``T`` adaptively chosen steps compose exactly to ``sqrt(T)/z``-GDP (Dong, Roth
& Su 2022, Cor. 3.3). The step size, the L2 penalty ``α β``, the division by the
public ``n`` and ``post`` read only the previous (already private) iterate:
post-processing, free. The engine runs exactly ``n_iter`` steps and never looks
at a loss value, so the guarantee holds whether or not it converges.

**Step rules.** The formula above is ``solver="gd"``. With ``solver="adam"``
the noisy mean gradient drives Adam steps instead, and ``average`` releases a
moving average of the iterates; both read only released values (the noisy
gradients and the public noise scale), so the guarantee is unchanged.
:func:`auto_schedule` gives default steps, horizon and clip from public sizes.

**Adjacency.** Only *replace one record* is implemented: the mean divides by n,
which is public under replacement but private under add/remove.

**Every finite input.** The bound "one record moves the sum by at most 2C" is
enforced by the code that runs, not assumed of the data:

* sparse input is put in canonical form first (duplicate entries summed), so
  the norm used for clipping is the norm of the row that enters ``X @ coef``;
* row norms are computed with per-row rescaling, so ``‖x‖ = 1e308`` neither
  overflows to inf nor (for tiny rows) underflows to 0; a record whose
  gradient norm still exceeds the float range is given weight 0;
* a record whose gradient is not finite (``X @ coef`` can be ``inf − inf``)
  contributes nothing, so every contribution is finite and of norm ≤ C;
* float32 data stay float32 in memory; the sums are accumulated in float64,
  a block of rows at a time. A dense float64 X is read in Fortran order
  (copied once if it is not; see :func:`canonical_design`).

**Dask.** X may be a Dask array chunked along rows: :func:`design_of`
then hands the loop a :class:`skdp._dask.DaskDesign`, whose gradient sum is
one reduction over the chunks, each reduced by :func:`sum_over_row_blocks`
(the in-memory code) where it lives. The loop, and so the noise (drawn on
the client, once per step, never per chunk), is the same: the sum that
receives the noise is the sum over all records, whose sensitivity is 2C
whatever the chunking.

**Audit hook.** :func:`injected_gradient` (used only by :mod:`skdp.audit`)
replaces one record's clipped gradient, at every step, by a gradient the
auditor chooses (a *gradient canary*, Nasr et al. 2023, §4), itself clipped
to ``C`` here. Whatever the hook asks, every record's contribution to the
sum still has norm ≤ C, so the guarantee of the run is unchanged; outside an
audit the hook is unset and costs one lookup per step.
"""

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ._base import check_cost_before_steps
from ._clipping import (  # noqa: F401  (re-exported: the engine's kernels)
    InjectedGradient,
    InMemoryDesign,
    canonical_design,
    clip_scale,
    in_memory_gradient_sum,
    injected_gradient,
    row_norms,
    sum_over_row_blocks,
)
from ._inputs import is_dask_array
from ._secure import SecureNoise
from .accounting import (
    REPLACE_ONE,
    format_dp,
    format_up,
    gaussian_cost,
    gaussian_noise_multiplier,
    sensitivity_factor,
)
from .exceptions import MechanismFailedError
from .mechanisms import add_gaussian_noise

_DATAFIT_MEMBERS = ("raw_grad", "grad_bound", "inverse_link")

#: Adjacencies the engine implements (it divides by the public n).
SUPPORTED_ADJACENCIES = (REPLACE_ONE,)

_TINY = np.finfo(np.float64).tiny


def check_datafit(datafit):
    """Raise a TypeError naming every member the engine needs and ``datafit`` lacks."""
    missing = [m for m in _DATAFIT_MEMBERS if not hasattr(datafit, m)]
    if missing:
        raise TypeError(
            f"{type(datafit).__name__} cannot be used by the DP-GD engine: it has "
            f"no {', '.join(missing)}."
        )


def clipped_gradient_sum(X, y, datafit, coef, intercept, row_norm, clip_norm):
    """``Σ_i clip_C(∇ℓ_i)`` w.r.t. ``(coef, intercept)``, shape ``(d + 1, k)``.

    One pass over X, a block of rows at a time. ``row_norm`` must include the
    intercept's constant feature when an intercept is fitted; a scalar stands
    for the same norm on every row. Whatever X, every record's clipped
    contribution has norm ≤ ``clip_norm``; within :func:`injected_gradient`
    (audits only) one record's contribution is the auditor's gradient
    canary, clipped to ``clip_norm`` as well.

    A Dask array X (with y and a per-row ``row_norm`` chunked like it) is
    summed by :func:`skdp._dask.clipped_gradient_sum`: the same per-block
    function on every chunk, where the chunk lives, and one reduction of
    ``(d + 1)·k`` floats to the caller.
    """
    if is_dask_array(X):
        from . import _dask

        return _dask.clipped_gradient_sum(
            X, y, datafit, coef, intercept, row_norm, clip_norm
        )
    return in_memory_gradient_sum(X, y, datafit, coef, intercept, row_norm, clip_norm)


def design_of(X, y, *, fit_intercept):
    """The gradient-sum source of ``(X, y)``: in memory, or on a Dask array."""
    if is_dask_array(X):
        from . import _dask

        return _dask.DaskDesign(X, y, fit_intercept=fit_intercept)
    return InMemoryDesign(X, y, fit_intercept=fit_intercept)


class GradientDescent:
    """Plain steps ``β ← β − η·g`` (Cai, Wang & Zhang, Score Attack, Algorithm 1)."""

    def __init__(self, learning_rate):
        self.learning_rate = learning_rate

    def __call__(self, grad):
        return self.learning_rate * grad


class Adam:
    """Adam steps (Kingma & Ba 2015) on the noisy gradients, ε tied to the noise.

    ``m ← β₁m + (1−β₁)g``, ``v ← β₂v + (1−β₂)g²``, step
    ``η·m̂ / (sqrt(v̂) + noise_scale)`` with the usual bias corrections. Each
    coordinate moves at a speed set by its own gradient scale, so rarely seen
    features move as fast as common ones. ``noise_scale`` is the standard
    deviation of the noise on one coordinate of the mean gradient (public): a
    coordinate whose gradient is mostly noise gets ``sqrt(v̂) ≈ noise_scale``
    and moves at about half speed instead of being amplified to full speed.
    Reads only the released gradients: post-processing.
    """

    def __init__(self, learning_rate, noise_scale, beta1=0.9, beta2=0.999):
        self.learning_rate = learning_rate
        self.noise_scale = noise_scale
        self.beta1, self.beta2 = beta1, beta2
        self.t = 0
        self.m = self.v = 0.0

    def __call__(self, grad):
        self.t += 1
        self.m = self.beta1 * self.m + (1 - self.beta1) * grad
        self.v = self.beta2 * self.v + (1 - self.beta2) * grad**2
        m_hat = self.m / (1 - self.beta1**self.t)
        v_hat = self.v / (1 - self.beta2**self.t)
        # + tiny: a coordinate that never moves (0/0) without noise stays put.
        scale = np.sqrt(v_hat) + self.noise_scale + _TINY
        return self.learning_rate * m_hat / scale


def auto_schedule(n_samples, n_params, mu, *, sparse=False):
    """Default ``(n_iter, horizon, clip_norm)`` for Adam-driven DP-GD.

    Reads only public quantities: ``n_samples``, ``n_params`` (the number of
    coordinates of the model, ``(d + 1)·k`` for a linear model with intercept
    and k outputs), ``mu`` (the GDP budget of the whole run) and whether the
    features come as a sparse matrix (a property of the container, not of
    the values, as long as the caller did not choose the container from the
    values: see :func:`skdp.pipeline.set_privacy_budget`). The learning
    rate is ``horizon / n_iter``.

    * Steps: ``n_iter = clip(764·sqrt(n_params / n_samples), 50, 200)``. More
      parameters per record need more (smaller) steps; many records per
      parameter converge in few, and each step costs O(n_samples·n_params).
      At n = 20000, d = 20 this is 50 steps.
    * Horizon ``η·T``: Adam moves a coordinate by at most about η per step, so
      the horizon bounds how far a weight can travel. Standardised dense
      features need weights of order one (horizon 5); sparse features
      (TF-IDF, one-hot rows of unit norm) have small entries and need large
      weights (horizon 20). Either grows as ``sqrt(ρ/100)``, up to 50, when
      the signal-to-noise ratio ``ρ = μ·n_samples / sqrt(n_params)`` is high:
      the noise on the mean gradient has norm about
      ``2C·sqrt(T·n_params)/(μ·n)``, and where it is small the optimum lies
      further out.
    * Clip: 1 for dense rows (standardised rows have norm ~sqrt(d), so most
      gradients are clipped anyway); 0.5 for sparse rows of norm ~1, so that
      most of them are clipped too, which halves the noise.

    The constants come from measurements (``benchmarks/bench_logistic_defaults.py``
    and the notes in ``docs/benchmarks.md``): bundled scikit-learn data sets
    and generated dense and sparse ones, n from 75 to 50000, d from 4 to
    20000, 2 to 10 classes, ε from 0.1 to 1e6.
    """
    n_iter = int(np.clip(round(764.0 * np.sqrt(n_params / n_samples)), 50, 200))
    rho = mu * n_samples / np.sqrt(n_params)
    base = 20.0 if sparse else 5.0
    horizon = float(np.clip(base * np.sqrt(rho / 100.0), base, 50.0))
    clip_norm = 0.5 if sparse else 1.0
    return n_iter, horizon, clip_norm


def check_step_size(learning_rate, alpha):
    """Refuse a step size for which the L2 penalty alone makes GD diverge.

    The penalty multiplies the iterate by ``1 - learning_rate·alpha`` each
    step; at ``learning_rate·alpha >= 2`` that factor has modulus ≥ 1 and the
    noise is amplified without bound, whatever the data.
    """
    if learning_rate * alpha >= 2.0:
        raise ValueError(
            f"learning_rate * alpha = {learning_rate * alpha:g} >= 2 makes gradient "
            "descent diverge whatever the data: lower the learning rate or alpha."
        )


@dataclass(frozen=True)
class NoiseBudget:
    """A DP-GD estimator's (ε, δ) budget: what it hands the engine.

    The one place that turns a budget into a noise multiplier for every
    estimator built on the engine (and for their other Gaussian releases):
    :meth:`noise_multiplier` gives ``z`` such that ``n`` Gaussian releases,
    each of noise ``z`` times its L2 sensitivity, are (ε, δ)-DP exactly
    (``sqrt(n)/z``-GDP, or the secure sampler's zCDP; see
    :func:`skdp.accounting.gaussian_noise_multiplier`).

    Parameters
    ----------
    epsilon, delta : float
        The estimator's budget.
    noise : {"fast", "secure"}, default="fast"
        The noise sampler (the secure one is calibrated in zCDP).
    paper : callable, optional
        ``accounting="paper"``: the paper's noise multiplier for ``n``
        releases. It is used only when it is larger than the exact one:
        never less noise than the exact calibration needs.
    """

    epsilon: float
    delta: float
    noise: str = "fast"
    paper: Callable[[int], float] | None = None

    def noise_multiplier(self, n_releases):
        """Noise std over sensitivity for ``n_releases`` releases at (ε, δ)."""
        exact = gaussian_noise_multiplier(
            self.epsilon, self.delta, n_releases, noise=self.noise
        )
        if self.paper is None:
            return exact
        return max(self.paper(n_releases), exact)


def calibrated_dpgd(X, y, datafit, *, budget, n_iter, **run):
    """:func:`dpgd` run on a budget: calibrate ``n_iter`` steps, run, report.

    The engine's entry point for estimators: ``budget`` (a
    :class:`NoiseBudget`) gives the noise multiplier for ``n_iter`` steps and
    the δ at which the cost is stated; ``run`` holds the rest of
    :func:`dpgd`'s arguments (the schedule, the clip, the noise source).
    Returns ``(coef, intercept, cost, noise_multiplier)``.
    """
    noise_multiplier = budget.noise_multiplier(n_iter)
    coef, intercept, cost = dpgd(
        X,
        y,
        datafit,
        noise_multiplier=noise_multiplier,
        n_iter=n_iter,
        delta=budget.delta,
        **run,
    )
    return coef, intercept, cost, noise_multiplier


def dpgd(
    X,
    y,
    datafit,
    *,
    n_outputs,
    clip_norm,
    noise_multiplier,
    n_iter,
    learning_rate,
    delta,
    rng,
    alpha=0.0,
    fit_intercept=True,
    solver="gd",
    average=None,
    adjacency=REPLACE_ONE,
    sensitivity=None,
    post=None,
    intercept_start=None,
    total_cost=None,
    mechanism="full-batch DP gradient descent",
    verbose=0,
):
    """Run ``n_iter`` steps of clipped, noised full-batch gradient descent.

    Parameters
    ----------
    X : {ndarray, sparse matrix, dask array} of shape (n_samples, n_features)
        Finite features of any magnitude (clipping bounds each record's
        influence), float64 or float32. A Dask array (chunked along rows,
        with y chunked like it; see :mod:`skdp._dask`) is read by one
        reduction per step.
    y : ndarray of shape (n_samples,)
        Targets, in whatever encoding ``datafit.raw_grad`` expects.
    datafit : object
        Has ``raw_grad``, ``grad_bound`` and ``inverse_link`` (see
        :mod:`skdp._datafits`).
    n_outputs : int
        Number of columns ``k`` of the linear predictor.
    clip_norm : float
        Every record's gradient w.r.t. ``(coef, intercept)`` is clipped to this
        L2 norm.
    noise_multiplier : float
        Noise std divided by the L2 sensitivity of one step's gradient sum.
        0 turns noise off (tests only: the result is then not private).
    n_iter : int
        Number of steps; each one is paid for.
    learning_rate : float
        Step size η of the step rule.
    delta : float
        δ at which the returned cost states ε.
    rng : numpy.random.Generator or SecureNoise
        Source of the noise (:func:`skdp.mechanisms.as_generator`). A
        secure source rounds each step's gradient sum to its grid and adds
        discrete Gaussian noise; the returned cost is then the zCDP one of
        :func:`skdp.accounting.secure_noise_cost`.
    alpha : float, default=0.0
        L2 penalty ``alpha/2 · ||coef||²`` on the mean loss (not on the
        intercept). ``learning_rate * alpha`` must be below 2.
    fit_intercept : bool, default=True
        Whether to fit an intercept (a constant feature 1 inside the clip).
    solver : {"gd", "adam"}, default="gd"
        How each noisy mean gradient (plus the penalty's gradient) becomes a
        step: :class:`GradientDescent` or :class:`Adam`. Both read only
        released values (post-processing).
    average : float in [0, 1), optional
        If given, return the exponential moving average of the iterates with
        this decay (bias-corrected) instead of the last iterate; it smooths
        out the noise of the last steps (post-processing).
    adjacency : str, default=REPLACE_ONE
        Neighbouring relation; only ``REPLACE_ONE`` is implemented (the mean
        divides by n, which must be public).
    sensitivity : float, optional
        L2 sensitivity of one step's clipped gradient sum, the unit of
        ``noise_multiplier``. None (the default): ``2·clip_norm`` under
        replace-one, which holds for any records. A caller may pass a
        smaller value only when it has proved, for every pair of records it
        can hand the engine (after its own transformation of them) and every
        iterate, that their clipped gradients differ by at most this much;
        :class:`~skdp.ranking.DPBradleyTerry` does so (``sqrt(6)`` for
        Bradley–Terry comparison rows).
    post : callable, optional
        ``post(coef, intercept) -> (coef, intercept)`` applied after each step;
        it must not read the data (e.g. a projection onto a ball).
    intercept_start : array-like of shape (n_outputs,), optional
        The intercept the steps start from (default 0; ignored without an
        intercept). It must be public or released by the caller, who pays
        for it: the returned cost is that of the steps alone.
    total_cost : PrivacyCost, optional
        The cost of the whole fit, when the caller released more than the
        steps (the start): what the progress output's last line states.
    mechanism : str
        Description stored in the returned cost and used in progress output.
    verbose : int, default=0
        1: a header (privacy, noise scale), about ten progress lines and a
        summary; 2 or more: one line per step.

    Returns
    -------
    coef : ndarray of shape (n_features, n_outputs)
    intercept : ndarray of shape (n_outputs,)
    cost : PrivacyCost
        ``sqrt(n_iter)/noise_multiplier``-GDP under ``adjacency`` (fast
        source), or ``n_iter·(1/noise_multiplier + 2^-16)²/2``-zCDP (secure).

    Raises
    ------
    ValueError
        For an adjacency the engine does not implement or a diverging step
        size. (A sparse X whose duplicate entries sum past float64 is
        clipped like any other large value, see
        ``skdp._clipping.canonical_design``.)
    MechanismFailedError
        If the released iterate is not finite (checked on the private output
        only, so raising is post-processing).
    """
    check_datafit(datafit)
    if adjacency not in SUPPORTED_ADJACENCIES:
        raise ValueError(
            f"The DP-GD engine implements {SUPPORTED_ADJACENCIES} adjacency only; "
            f"got {adjacency!r} (it divides by n, which must be public)."
        )
    if solver == "gd":
        check_step_size(learning_rate, alpha)
    design = design_of(X, y, fit_intercept=fit_intercept)
    n, d = design.shape
    if sensitivity is None:
        sensitivity = sensitivity_factor(adjacency) * clip_norm
    noise_std = noise_multiplier * sensitivity
    cost = gaussian_cost(
        noise_multiplier,
        n_iter,
        delta=delta,
        adjacency=adjacency,
        mechanism=(
            f"{mechanism}: {n_iter} steps, per-record clip {clip_norm:g}, "
            f"step sensitivity {sensitivity:.6g}, "
            f"noise multiplier {noise_multiplier:.6g}"
        ),
        noise="secure" if isinstance(rng, SecureNoise) else "fast",
    )
    check_cost_before_steps(cost)
    progress = _Progress(mechanism, n_iter, verbose)
    progress.start(cost, noise_std, n, d)
    step = _make_step_rule(solver, learning_rate, noise_std / n)
    coef = np.zeros((d, n_outputs))
    intercept = np.zeros(n_outputs)
    if fit_intercept and intercept_start is not None:
        intercept[:] = intercept_start
    mean_coef, mean_intercept = np.zeros_like(coef), np.zeros_like(intercept)
    for t in range(n_iter):
        grad_sum = design.gradient_sum(datafit, coef, intercept, clip_norm)
        if not fit_intercept:
            # The slot is discarded, but it sums the unclipped g_i of rows of
            # norm 0 (their gradient g_i·0 needs no clip): keep it out of the
            # sampler (secure noise refuses the NaN of +inf and −inf rows).
            grad_sum[d] = 0.0
        grad = add_gaussian_noise(grad_sum, noise_std, rng) / n
        grad[:d] += alpha * coef
        if not fit_intercept:
            grad[d] = 0.0
        update = step(grad)
        coef, intercept = coef - update[:d], intercept - update[d]
        if post is not None:
            coef, intercept = post(coef, intercept)
        if average is not None:
            mean_coef = average * mean_coef + (1 - average) * coef
            mean_intercept = average * mean_intercept + (1 - average) * intercept
        progress.step(t, coef)
    if average is not None:
        coef = mean_coef / (1 - average**n_iter)
        intercept = mean_intercept / (1 - average**n_iter)
    if not (np.isfinite(coef).all() and np.isfinite(intercept).all()):
        raise MechanismFailedError(
            f"{mechanism} produced a non-finite model; lower the learning rate. "
            "The noisy steps ran: the budget of this fit is spent, and a "
            "refit on the same data spends it again."
        )
    progress.done(cost if total_cost is None else total_cost)
    return coef, intercept, cost


def _make_step_rule(solver, learning_rate, noise_scale):
    if solver == "adam":
        return Adam(learning_rate, noise_scale)
    if solver == "gd":
        return GradientDescent(learning_rate)
    raise ValueError(f"Unknown solver {solver!r}; expected 'gd' or 'adam'.")


class _Progress:
    """Progress output of one engine run (stdout, scikit-learn style)."""

    def __init__(self, mechanism, n_iter, verbose):
        self.name = mechanism.split(" ")[0]
        self.verbose = verbose
        self.set_steps(n_iter)
        self.started = time.perf_counter()

    def set_steps(self, n_iter):
        """The number of steps, once known (a released schedule's T)."""
        self.n_iter = n_iter
        every = 1 if self.verbose >= 2 else max(1, n_iter // 10)
        self.report_at = set(range(every - 1, n_iter, every)) | {n_iter - 1}

    def _print(self, message):
        print(f"[{self.name}] {message}", flush=True)

    def start(self, cost, noise_std, n, d):
        if self.verbose > 0:
            mu = "" if cost.mu is None else f"mu = {format_up(cost.mu, 4)}, "
            self._print(
                f"spending {format_dp(cost.epsilon, cost.delta)} ({mu}"
                f"{cost.adjacency}) on {self.n_iter} noisy steps over n = {n} "
                f"records of {d} features; noise std {noise_std:.4g} on each "
                "gradient sum"
            )

    def step(self, t, coef=None):
        """Report step ``t``; ``coef`` (a private iterate) only if given."""
        if self.verbose > 0 and t in self.report_at:
            norm = "" if coef is None else f"||coef|| = {np.linalg.norm(coef):.4g}, "
            self._print(
                f"step {t + 1}/{self.n_iter}: {norm}"
                f"{time.perf_counter() - self.started:.2f} s"
            )

    def phase(self, message):
        """Report a stage of the run (its text must not depend on the data)."""
        if self.verbose > 0:
            self._print(f"{message}, {time.perf_counter() - self.started:.2f} s")

    def done(self, cost, work=None):
        """Report the end; ``work`` says what ran (default: the steps)."""
        if self.verbose > 0:
            self._print(
                f"done: {work or f'{self.n_iter} steps'} in "
                f"{time.perf_counter() - self.started:.2f} s; released a model "
                f"that is {format_dp(cost.epsilon, cost.delta)}"
            )
