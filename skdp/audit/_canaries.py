"""Canaries: neighbouring data sets under an estimator's adjacency, and a statistic.

A canary turns base data ``(X, y)`` into two data sets that are neighbours
under the adjacency the estimator's guarantee is stated for
(``privacy_spent_.adjacency``) and says how to score a fitted model: larger
scores should mean "fitted on the data set that holds the canary". Every
canary has

* ``build(estimator, X, y) -> ((X_in, y_in), (X_out, y_out))``;
* ``adjacencies``: the adjacencies under which the two data sets are
  neighbours (the audit refuses any other claim);
* ``statistic(fitted)``: a white-box score (it may read fitted parameters);
* ``loss(fitted)``: a black-box score, minus the canary record's loss under
  the fitted model (only ``predict``-type methods);
* ``expected_mu(fitted)``: the GDP parameter the two data sets are designed
  to attain with ``statistic``, when known (else None).

A new estimator needs one canary (often an existing one) registered with
:func:`register_canary`, and, for the score attack, a GLM view
(:func:`~skdp.audit.register_glm_view`).

**Worst-case canaries for DP-GD.** :class:`GradientCanary` (the default of
DPLogisticRegression and DPRandomFeaturesRegressor, which run the DP-GD
engine) is a *gradient canary* (Nasr et al. 2023, §4): one record's clipped
gradient is replaced, at every step, by a gradient of norm exactly the clip
norm C along a unit direction u of parameter space, ``−C·u`` with the
canary and ``+C·u`` without it; for logistic regression u is the
coefficient of an all-zero feature column appended to the data, which no
other record's gradient touches. The two transcripts of noisy gradients then
differ by ``2C`` along u at every step, which attains the replace-one
sensitivity whatever the step rule, the learning rate or the data, and the
released ``θ·u`` depends on nothing but the canary and the noise along u:
for plain gradient steps it is the likelihood-ratio statistic of the
release and measures the claimed μ exactly (for Adam with iterate
averaging, the default of DPLogisticRegression, about 90% of it,
measured).

**Record canaries.** :class:`GLMCanary` puts one record far
out along a fixed direction, so that its gradient is clipped to exactly the
clip norm C at every step, pointing along ``±x̃_c/||x̃_c||``; its neighbour
has the other label (or the opposite target), which flips the sign. The two
clipped gradient sums then differ by ``2C`` in a fixed direction at every
step: the replace-one sensitivity is attained. Run with plain gradient
steps and a small learning rate (the iterate then stays near its start, so
the canary stays clipped and the other records' gradients are the same in
both worlds), the projection of the released parameters on that direction
is Gaussian with means ``2C·T`` apart (times ``−η/n``) and standard
deviation ``sqrt(T)·z·2C`` (same factor): exactly the claimed
``μ = sqrt(T)/z``. The score attack on the canary record is that projection
up to an affine map, so its μ̂ estimates the claimed μ, and any shortfall of
noise shows up as a larger μ̂.
"""

import contextlib
import functools
import math
import numbers

import numpy as np
import scipy.sparse as sp
from scipy.special import expit
from sklearn.base import is_classifier
from sklearn.utils import check_array

from .._dpgd import injected_gradient
from ..accounting import REPLACE_ONE, REPLACE_ONE_OUTCOME, REPLACE_ONE_USER
from ._score import glm_view, registered_for, score_attack

__all__ = [
    "BallCanary",
    "Canary",
    "ClassRecordCanary",
    "GLMCanary",
    "GradientCanary",
    "GramCanary",
    "OutcomeCanary",
    "SearchCanary",
    "UnboundedCanary",
    "default_canary",
    "register_canary",
]

_DEFAULTS = {}
_ENGINE_PARAMETERS = {}


class Canary:
    """Base class: override :meth:`Canary.build` and :meth:`Canary.statistic`."""

    #: Adjacencies under which the two built data sets are neighbours.
    adjacencies = (REPLACE_ONE,)

    def build(self, estimator, X, y):
        """Return ``((X_in, y_in), (X_out, y_out))``.

        Each world may also carry keyword arguments for ``fit`` as a third
        item, ``(X, y, fit_params)`` (e.g. ``{"groups": ...}``).
        """
        raise NotImplementedError

    def statistic(self, fitted):
        """White-box score of a fitted model (larger: the canary is in)."""
        raise NotImplementedError

    def loss(self, fitted):
        """Black-box score: minus the canary record's loss under ``fitted``."""
        raise NotImplementedError(
            f"{type(self).__name__} has no black-box loss statistic."
        )

    def expected_mu(self, fitted):
        """GDP parameter the design attains with :meth:`statistic`, if known."""
        return None

    def __repr__(self):
        params = ", ".join(
            f"{k}={v!r}"
            for k, v in vars(self).items()
            if not k.endswith("_") and v is not None
        )
        return f"{type(self).__name__}({params})"


def _binary_labels(estimator, y):
    classes = getattr(estimator, "classes", None)
    labels = np.unique(np.asarray(classes if classes is not None else y))
    if labels.size != 2:
        raise ValueError(
            f"{type(estimator).__name__}: this canary needs a binary problem "
            f"(two labels); got {labels.size}."
        )
    return labels


def _replace_row(X, index, row):
    """A copy of X with row ``index`` replaced (dense or CSR)."""
    if sp.issparse(X):
        X = sp.lil_matrix(X, copy=True)
        X[index] = row
        return sp.csr_matrix(X)
    X = np.array(X, dtype=float, copy=True)
    X[index] = row
    return X


def _with_label(y, index, label):
    y = np.array(y, copy=True)
    if y.dtype.kind in "iub" and not float(label).is_integer():
        y = y.astype(float)
    y[index] = label
    return y


def _unit(direction, d):
    if direction is None:
        u = np.zeros(d)
        u[0] = 1.0
        return u
    u = np.asarray(direction, dtype=float).ravel()
    if u.shape != (d,) or not np.isfinite(u).all() or not np.any(u):
        raise ValueError(f"direction must be a finite non-zero vector of length {d}.")
    return u / np.linalg.norm(u)


class GLMCanary(Canary):
    """Worst-case record canary for DP-GD on a generalised linear model.

    Record ``index`` of the base data becomes ``x_c = scale·direction``. In
    the "in" data set it has label ``classes[1]`` (classifiers) or target
    ``+target`` (regressors); in the "out" data set the same ``x_c`` has
    label ``classes[0]`` or target ``−target``. Flipping only the label
    keeps the feature vector, so the clipped gradient flips sign (a mirrored
    record ``(−x, 1 − y)`` would carry the same gradient and reveal nothing).
    Neighbours under *replace one record*.

    Parameters
    ----------
    index : int, default=0
        Which base record is replaced.
    scale : float, default=10.0
        Norm of ``x_c``: far enough that its gradient is clipped (for
        standardised features and the default clip norms).
    direction : array-like of shape (n_features,), optional
        Direction of ``x_c``; default the first coordinate axis.
    target : float, default=10.0
        Regressors: the canary's target is ``±target``.
    theta_ref : array-like, optional
        Reference parameter of the score attack (default zeros).

    Notes
    -----
    The white-box :meth:`statistic` is the score attack on the canary record
    (:func:`~skdp.audit.score_attack`). With ``θ_ref = 0`` it is a positive
    multiple of the model's linear predictor at ``x_c`` (times the sign of
    the canary's label), i.e. the projection of the parameters on the
    canary's gradient direction. :meth:`loss` is the negative log-loss
    (classifiers) or squared error (regressors) of the canary record.
    """

    def __init__(
        self, *, index=0, scale=10.0, direction=None, target=10.0, theta_ref=None
    ):
        self.index = index
        self.scale = scale
        self.direction = direction
        self.target = target
        self.theta_ref = theta_ref

    def build(self, estimator, X, y):
        X = check_array(X, accept_sparse="csr", dtype=np.float64)
        if y is None:
            raise ValueError("GLMCanary needs targets y.")
        y = np.asarray(y)
        x_c = self.scale * _unit(self.direction, X.shape[1])
        if is_classifier(estimator):
            labels = _binary_labels(estimator, y)
            self.label_in_, self.label_out_ = labels[1], labels[0]
            self.classifier_ = True
        else:
            self.label_in_, self.label_out_ = float(self.target), -float(self.target)
            self.classifier_ = False
        self.record_ = x_c
        X_c = _replace_row(X, self.index, x_c)
        return (
            (X_c, _with_label(y, self.index, self.label_in_)),
            (X_c, _with_label(y, self.index, self.label_out_)),
        )

    def statistic(self, fitted):
        x = self.record_[None, :]
        return float(score_attack(fitted, x, [self.label_in_], self.theta_ref)[0])

    def loss(self, fitted):
        x = self.record_[None, :]
        if self.classifier_:
            column = int(np.flatnonzero(fitted.classes_ == self.label_in_)[0])
            return float(fitted.predict_log_proba(x)[0, column])
        return -float((fitted.predict(x)[0] - self.label_in_) ** 2)


# Raw norm of a gradient canary before the engine clips it: above any clip
# norm a user could set, yet its square (1e300) is finite.
_CANARY_RAW_NORM = 1e150


def _least_used_direction(design, record):
    """Unit vector of feature space that the rows of ``design`` but one use least.

    ``λ(G + λI)⁻¹e₁`` normalised, with ``G`` the Gram matrix of the rows
    other than ``record`` and λ tiny: as λ → 0 this is the projection of the
    first axis on the null space of those rows when it has one (no other
    record's gradient moves the parameters along it), and otherwise leans to
    the directions of least curvature. It has no sign ambiguity, so the
    engine's hook and the statistic find the same vector.
    """
    design = design.toarray() if sp.issparse(design) else np.asarray(design)
    others = np.delete(np.asarray(design, dtype=float), record, axis=0)
    gram = others.T @ others
    lam = 1e-10 * max(np.trace(gram) / gram.shape[0], 1e-300)
    e1 = np.zeros(gram.shape[0])
    e1[0] = 1.0
    u = np.linalg.solve(gram + lam * np.eye(gram.shape[0]), e1)
    return u / np.linalg.norm(u)


def _canary_gradient(canary, sign, design, shape):
    """``sign · 1e150 · u`` on the first output in the engine's layout."""
    g = np.zeros(shape)
    g[:, 0] = sign * _CANARY_RAW_NORM * canary._direction(design, shape[0])
    return g


class _HookCheck:
    """Checks after a fit that the gradient canary entered every step."""

    def __init__(self, hook):
        self.hook = hook

    def check(self, fitted):
        n_iter = getattr(fitted, "n_iter_", None)
        calls = self.hook.n_calls
        if calls == 0 or (isinstance(n_iter, numbers.Integral) and calls < n_iter):
            raise ValueError(
                f"GradientCanary entered {calls} gradient sums of a "
                f"{type(fitted).__name__} fit of {n_iter} steps: this configuration "
                "does not run the DP-GD engine's clipped sum once per step (e.g. "
                "DPRandomFeaturesRegressor(solver='kernel')); audit it with a "
                "record canary such as GLMCanary()."
            )


def engine_parameters(fitted):
    """The fitted parameters in the DP-GD engine's layout, shape ``(d + 1, k)``.

    Rows are the engine's features (the intercept last, 0 if none), columns
    its outputs: the coordinates in which a :class:`GradientCanary` is put.
    """
    view = registered_for(_ENGINE_PARAMETERS, fitted)
    if view is None:
        raise TypeError(
            f"GradientCanary does not know where {type(fitted).__name__} keeps "
            "the parameters of its DP-GD run."
        )
    return np.asarray(view(fitted), dtype=float)


class GradientCanary(Canary):
    """Worst-case gradient canary for the DP-GD engine (Nasr et al. 2023, §4).

    At every step of the engine (``skdp._dpgd.clipped_gradient_sum``)
    record ``index``'s clipped gradient is replaced by a gradient of norm
    exactly the clip norm C along a unit direction u of parameter space:
    ``−C·u`` in the "in" world, ``+C·u`` in the "out" world (the engine
    clips it like any record's gradient, so it can never exceed C). Any
    sequence of per-step contributions of norm ≤ C is one the DP-GD proof
    covers (the adaptive composition of Gaussian steps of sensitivity 2C),
    so the two worlds are neighbours under *replace one record* for the
    guarantee that is claimed, and they attain its sensitivity at every
    step.

    Parameters
    ----------
    index : int, default=0
        The record whose gradient the canary replaces.
    direction : {"new_feature", "least_used"}, default="new_feature"
        ``"new_feature"``: an all-zero feature column is appended to the data
        and u is its coefficient (first output): no other record's gradient,
        and no penalty but its own, moves that coordinate. ``"least_used"``
        (for a design the estimator computes, e.g. random features): u is
        the direction of the engine's design that the other records use
        least, found in each fit (in their null space when there is one).

    Notes
    -----
    The white-box :meth:`statistic` is the released parameters' projection
    on u. When no other record's gradient moves that projection and the
    steps are plain gradient steps (``solver="gd"``), it is a fixed linear
    function of the noisy gradients' projections on u, all with the same
    mean shift, hence the likelihood-ratio statistic of the release: its μ̂
    measures the claimed ``μ = sqrt(n_iter_)/noise_multiplier_``. Adam
    (coordinate-wise) and iterate averaging keep it a function of those
    projections only, and lose about 10% of μ (measured for
    DPLogisticRegression's defaults, ``docs/benchmarks.md``). The canary
    audits the noise and the accounting of the engine; the clipping of
    data records is audited by :class:`GLMCanary`. It has no record, hence
    no black-box :meth:`~Canary.loss`.
    """

    def __init__(self, *, index=0, direction="new_feature"):
        self.index = index
        self.direction = direction

    def build(self, estimator, X, y):
        if self.direction not in ("new_feature", "least_used"):
            raise ValueError(
                "direction must be 'new_feature' or 'least_used'; got "
                f"{self.direction!r}."
            )
        X = check_array(X, accept_sparse="csr", dtype=np.float64)
        if y is None:
            raise ValueError("GradientCanary needs targets y.")
        n = X.shape[0]
        if not 0 <= self.index < n:
            raise ValueError(f"index must be in [0, {n}); got {self.index}.")
        if self.direction == "new_feature":
            zeros = np.zeros((n, 1))
            X = (
                sp.hstack([X, zeros], format="csr")
                if sp.issparse(X)
                else np.hstack([X, zeros])
            )
        self.X_ = X
        return (
            (X, y, {}, functools.partial(self._context, -1.0)),
            (X, y, {}, functools.partial(self._context, 1.0)),
        )

    def _direction(self, design, n_rows):
        """u in the engine's layout (``n_rows = d + 1``, intercept last)."""
        u = np.zeros(n_rows)
        if self.direction == "new_feature":
            u[n_rows - 2] = 1.0  # the appended column, before the intercept
        else:
            u[: n_rows - 1] = _least_used_direction(design, self.index)
        return u

    @contextlib.contextmanager
    def _context(self, sign, estimator):
        gradient = functools.partial(_canary_gradient, self, sign)
        with injected_gradient(self.index, gradient) as hook:
            yield _HookCheck(hook)

    def statistic(self, fitted):
        theta = engine_parameters(fitted)
        design = None
        if self.direction == "least_used":
            design = glm_view(fitted).features(self.X_)  # the engine's design
        return float(theta[:, 0] @ self._direction(design, theta.shape[0]))

    def expected_mu(self, fitted):
        """``sqrt(n_iter_)/noise_multiplier_``: the μ of the noisy gradients."""
        z = getattr(fitted, "noise_multiplier_", None)
        if z is None or not z > 0:
            return None
        return math.sqrt(fitted.n_iter_) / z


class OutcomeCanary(Canary):
    """Flip the 0/1 outcome of one comparison, the pair fixed (DPBradleyTerry).

    Row ``index`` of the design (a comparison of items i and j, public) keeps
    its pair; its outcome is ``classes[1]`` (i won) in the "in" data set and
    ``classes[0]`` in the "out" one. Neighbours under *replace one comparison
    outcome*, and a fortiori under *replace one record*.

    Parameters
    ----------
    index : int, default=0
        Which comparison's outcome is flipped.
    theta_ref : array-like of shape (n_items,), optional
        Reference scores of the score attack (default zeros).
    kind : {"score", "win_counts"}, default="score"
        What :meth:`statistic` computes (see Notes).

    Notes
    -----
    ``kind="score"``: the comparison-level score attack of paper 003
    (§4.1, §2.2), ``(1 − σ(x_rᵀθ_ref))·x_rᵀ(θ̂ − θ_ref)``; with θ_ref = 0 a
    multiple of ``θ̂_i − θ̂_j``. ``kind="win_counts"`` (for
    ``privacy_unit="outcome"``): the released noisy win counts, recovered
    from the fitted scores by the optimality condition of the penalised
    likelihood, ``c̃ = X̃ᵀσ(X̃θ̂) + α⊙θ̂`` (exact up to the solver's
    tolerance, unless ``score_bound`` clipped a score), projected on the
    canary's row ``x_r``. The released scores are θ̂ less its (unreleased)
    mean m, which moves the recovered c̃ by ``m·α``: orthogonal to ``x_r``
    for one penalty for every item; with per-item penalties (``alpha_`` an
    array) the projection is on ``x_r`` made orthogonal to ``α``, which
    removes ``m`` and keeps ``(x_r·v)/||v||`` of the shift (all of it when
    the two items' penalties are equal). It is the likelihood-ratio
    statistic of the Gaussian release, so its μ̂ measures the claimed
    ``1/noise_multiplier_`` (times that factor, ≤ 1). :meth:`loss` is the
    log-probability of the canary outcome under the fitted model.
    """

    adjacencies = (REPLACE_ONE_OUTCOME, REPLACE_ONE)

    def __init__(self, *, index=0, theta_ref=None, kind="score"):
        if kind not in ("score", "win_counts"):
            raise ValueError(f"kind must be 'score' or 'win_counts'; got {kind!r}.")
        self.index = index
        self.theta_ref = theta_ref
        self.kind = kind

    def build(self, estimator, X, y):
        X = check_array(X, accept_sparse="csr", dtype=np.float64)
        if y is None:
            raise ValueError("OutcomeCanary needs outcomes y.")
        y = np.asarray(y)
        labels = _binary_labels(estimator, y)
        self.label_in_, self.label_out_ = labels[1], labels[0]
        row = X[self.index]
        self.record_ = row.toarray() if sp.issparse(row) else row[None, :]
        self.X_, self.design_ = X, None
        return (
            (X, _with_label(y, self.index, self.label_in_)),
            (X, _with_label(y, self.index, self.label_out_)),
        )

    def statistic(self, fitted):
        if self.kind == "win_counts":
            if self.design_ is None:
                self.design_ = glm_view(fitted).features(self.X_)  # clipped rows
            scores = fitted.scores_
            counts = self.design_.T @ expit(self.design_ @ scores)
            alpha = np.broadcast_to(np.asarray(fitted.alpha_, float), scores.shape)
            direction = self.record_[0]
            if np.ptp(alpha) > 0:  # the unknown mean of θ̂ moves c̃ along α
                direction = direction - (direction @ alpha) / (alpha @ alpha) * alpha
            return float((counts + alpha * scores) @ direction)
        return float(
            score_attack(fitted, self.record_, [self.label_in_], self.theta_ref)[0]
        )

    def loss(self, fitted):
        column = int(np.flatnonzero(fitted.classes_ == self.label_in_)[0])
        return float(fitted.predict_log_proba(self.record_)[0, column])


class BallCanary(Canary):
    """Worst-case canary for a clipped mean and second moment (DPGaussianSampler).

    For ``method="bounded"``: record ``index`` becomes ``a = c + R·u`` in
    the "in" data set and ``b = c + R·v`` in the "out" one, with c the
    public ``center``, R the ``radius`` (both points on the clipping sphere),
    u a unit ``direction`` and v a unit vector with ``uᵀv = cosine``.

    The release is the clipped mean and second moment with Gaussian noise
    of ``κ·noise_multiplier_`` times their own sensitivities (``2R/n`` and
    ``sqrt(2)·R²/n``), κ their joint sensitivity
    (:func:`skdp.gaussian.joint_sensitivity`). The two records move them by
    ``R(u − v)/n`` and ``R²(uuᵀ − vvᵀ)/n``, so the likelihood-ratio
    statistic (computed by :meth:`statistic` from ``mean_`` and
    ``covariance_``) separates the worlds by
    ``μ = sqrt((1 − γ)/2 + 1 − γ²)/(κ·noise_multiplier_)`` for
    ``γ = cosine``. The default γ = −1/4 maximises it at ``5/4``: the pair
    attains κ, hence the claimed ``μ = 1/noise_multiplier_``. For one
    feature, ``v = −u`` and again the claim (κ = 1). Neighbours under
    *replace one record*.

    Parameters
    ----------
    index : int, default=0
        Which base record is replaced.
    cosine : float, default=-0.25
        ``uᵀv``, in [−1, 1).
    direction : array-like of shape (n_features,), optional
        u; default the first coordinate axis. v lies in the plane of u and
        the coordinate axis least aligned with u.
    """

    def __init__(self, *, index=0, cosine=-0.25, direction=None):
        self.index = index
        self.cosine = cosine
        self.direction = direction

    def build(self, estimator, X, y=None):
        if getattr(estimator, "method", "bounded") != "bounded":
            raise ValueError("BallCanary audits DPGaussianSampler(method='bounded').")
        X = check_array(X, dtype=np.float64)
        n, d = X.shape
        u = _unit(self.direction, d)
        if d == 1:
            v = -u
        else:
            if not -1.0 <= self.cosine < 1.0:
                raise ValueError(f"cosine must be in [-1, 1); got {self.cosine}.")
            w = np.zeros(d)
            w[np.argmin(np.abs(u))] = 1.0  # the axis least aligned with u
            w = w - (w @ u) * u
            w /= np.linalg.norm(w)
            v = self.cosine * u + math.sqrt(1.0 - self.cosine**2) * w
        center = estimator.center
        if isinstance(center, str) or isinstance(estimator.radius, str):
            raise ValueError(
                "BallCanary needs the sampler's ball before the fit: give "
                "DPGaussianSampler a center and radius (not 'auto'). The 'auto' "
                "search is DPStandardScaler's, audited there."
            )
        center = (
            np.zeros(d)
            if center is None
            else np.broadcast_to(np.asarray(center, dtype=float), (d,))
        )
        radius = float(estimator.radius)
        self.center_, self.radius_, self.n_samples_ = center, radius, n
        self.u_, self.v_ = u, v
        self.record_ = center + radius * u
        return (
            (_replace_row(X, self.index, center + radius * u), y),
            (_replace_row(X, self.index, center + radius * v), y),
        )

    def _design(self, fitted):
        from ..gaussian import joint_sensitivity

        n, R = self.n_samples_, self.radius_
        z = fitted.noise_multiplier_ * joint_sensitivity(self.u_.shape[0])
        d_mean = R * (self.u_ - self.v_) / n
        d_second = R**2 * (np.outer(self.u_, self.u_) - np.outer(self.v_, self.v_)) / n
        return d_mean, d_second, z * 2.0 * R / n, z * math.sqrt(2.0) * R**2 / n

    def statistic(self, fitted):
        d_mean, d_second, sd_mean, sd_second = self._design(fitted)
        mean = fitted.mean_ - self.center_
        second = fitted.covariance_ + np.outer(mean, mean)
        return float(
            mean @ d_mean / sd_mean**2 + np.sum(second * d_second) / sd_second**2
        )

    def expected_mu(self, fitted):
        d_mean, d_second, sd_mean, sd_second = self._design(fitted)
        return math.sqrt(
            (np.linalg.norm(d_mean) / sd_mean) ** 2
            + (np.linalg.norm(d_second) / sd_second) ** 2
        )

    def loss(self, fitted):
        from scipy.stats import multivariate_normal

        return float(
            multivariate_normal(fitted.mean_, fitted.covariance_).logpdf(self.record_)
        )


class UnboundedCanary(Canary):
    """Extreme-record canary for DPGaussianSampler(method="unbounded").

    Record ``index`` becomes ``a = c + distance·s·u`` in the "in" data set
    and keeps its base value in the "out" one (*replace one record*), with c
    the coordinate-wise median of the base data, u a unit ``direction`` and
    s the median absolute deviation of the base data along u (1 if it is
    0). The unbounded sampler must treat such a row as an outlier: in the
    covariance half it gets weight 0 in Σ̂ and W (one Y-pair is removed), in
    the mean half weight 0 in μ̂, and the PTR score moves by at most 2
    (Lemma 3.5), also in float64 (issue 29, item 10). A mechanism that lets
    the row into μ̂ or Σ̂ moves the released draw along u by about
    ``distance·s/n1`` or ``distance·s/sqrt(n2)``, which the statistic sees.

    :meth:`statistic` scores a fit by the largest ``|uᵀ(Z - c)|/s`` over its
    released draws Z, and a fit with a Fail by ``fail_score`` (default
    ``2·distance``, above any draw that ignores the canary): Fail is an
    output, and a canary that makes the PTR fail more often is detected as
    well. The estimator must use ``on_fail="ignore"`` (with ``"raise"`` a
    Fail would stop the audit). No GDP parameter is claimed (the mechanism
    is not Gaussian), so the audit tests the (ε, δ) claim only.

    Parameters
    ----------
    index : int, default=0
        Which base record is replaced (the sampler shuffles the rows, so it
        lands in either half).
    distance : float, default=1e6
        How far out the canary is, in units of s.
    direction : array-like of shape (n_features,), optional
        u; default the first coordinate axis.
    fail_score : float, optional
        Score of a fit whose draw failed (default ``2·distance``).
    """

    def __init__(self, *, index=0, distance=1e6, direction=None, fail_score=None):
        self.index = index
        self.distance = distance
        self.direction = direction
        self.fail_score = fail_score

    def build(self, estimator, X, y=None):
        if getattr(estimator, "method", None) != "unbounded":
            raise ValueError(
                "UnboundedCanary audits DPGaussianSampler(method='unbounded')."
            )
        if getattr(estimator, "on_fail", "ignore") != "ignore":
            raise ValueError(
                "UnboundedCanary needs on_fail='ignore': a Fail is an output the "
                "audit scores, and on_fail='raise' would stop it."
            )
        if not (self.distance > 0 and math.isfinite(self.distance)):
            raise ValueError(f"distance must be positive; got {self.distance}.")
        X = check_array(X, dtype=np.float64)
        u = _unit(self.direction, X.shape[1])
        center = np.median(X, axis=0)
        along = X @ u
        spread = float(np.median(np.abs(along - np.median(along))))
        self.center_, self.u_ = center, u
        self.scale_ = spread if spread > 0 else 1.0
        self.record_ = center + self.distance * self.scale_ * u
        return (_replace_row(X, self.index, self.record_), y), (X, y)

    def statistic(self, fitted):
        fail = 2.0 * self.distance if self.fail_score is None else self.fail_score
        if fitted.n_failed_ > 0 or fitted.samples_.shape[0] == 0:
            return float(fail)
        along = np.abs((fitted.samples_ - self.center_) @ self.u_) / self.scale_
        return float(along.max())


class ExtremeRecordCanary(Canary):
    """Worst-case record canary for clipped sums (DPStandardScaler).

    Record ``index`` becomes the vector of upper clipping bounds in the "in"
    data set and of lower bounds in the "out" one (``bounds`` when given,
    else ``±data_range``). Each normalised value moves from +1/2 to −1/2, so
    the released sums move by 1 per feature and the sums of squares not at
    all: the pair attains the release's L2 sensitivity ``sqrt(d)``. The
    white-box :meth:`statistic` ``Σ_j n·(mean_j − c_j)/w_j`` (c, w the centre
    and width of the bounds) is the likelihood-ratio direction, so with
    ``bounds`` given (one Gaussian release) the design attains the claimed
    ``μ = 1/noise_multiplier_`` (while no released mean is clipped to its
    bounds). Neighbours under *replace one record*.

    Parameters
    ----------
    index : int, default=0
        Which base record is replaced.
    """

    def __init__(self, *, index=0):
        self.index = index

    def build(self, estimator, X, y=None):
        X = check_array(X, dtype=np.float64)
        d = X.shape[1]
        if estimator.bounds is None:
            lower = np.full(d, -float(estimator.data_range))
            upper = -lower
        else:
            lower, upper = (
                np.broadcast_to(np.asarray(b, dtype=float), (d,))
                for b in estimator.bounds
            )
        self.n_samples_ = X.shape[0]
        return (
            (_replace_row(X, self.index, upper), y),
            (_replace_row(X, self.index, lower), y),
        )

    def statistic(self, fitted):
        lower, upper = fitted.bounds_
        width = upper - lower
        shift = (fitted.mean_ - (lower + width / 2.0)) / width
        return float(self.n_samples_ * np.sum(shift))

    def expected_mu(self, fitted):
        if fitted.n_iter_ != 1:  # bounds found privately: several releases
            return None
        return 1.0 / fitted.noise_multiplier_


class ClassRecordCanary(ExtremeRecordCanary):
    """Worst-case record canary for per-class clipped sums (DPGaussianNB).

    As :class:`ExtremeRecordCanary`: record ``index`` keeps its label and
    sits at the upper bounds in the "in" data set and at the lower bounds in
    the "out" one, so the released sums of its class move by 1 per
    normalised feature (the counts and the shifted squares not at all): the
    pair attains the release's L2 sensitivity ``sqrt(d)``. The white-box
    :meth:`statistic` recovers the noisy sums of that class from ``theta_``
    and ``class_count_`` (``Σ_j max(n_k, 1)·(theta_kj − c_j)/w_j``, exact
    while no mean is clipped to its bounds), the likelihood-ratio direction:
    with ``bounds`` given (one release) the design attains the claimed
    ``μ = 1/noise_multiplier_``. Neighbours under *replace one record*.
    """

    def build(self, estimator, X, y=None):
        self.label_ = np.asarray(y)[self.index]
        return super().build(estimator, X, y)

    def statistic(self, fitted):
        lower, upper = fitted.bounds_
        width = upper - lower
        k = int(np.searchsorted(fitted.classes_, self.label_))
        keep = ~fitted.dropped_features_
        shift = (fitted.theta_[k] - (lower + width / 2.0)) / width
        n_k = max(float(fitted.class_count_[k]), 1.0)
        return float(n_k * np.sum(shift[keep]))


class HistogramCanary(Canary):
    """Worst-case record canary for noisy histograms (the quantile transformers).

    Record ``index`` becomes the vector of upper bounds in the "in" data set
    and of lower bounds in the "out" one (``bounds`` when given, else
    ``±data_range``, to which the data is clipped): in every feature it
    moves from the first bin of the grid to the last, so the count matrix
    moves by ``e_last - e_first`` per feature, of L2 norm ``sqrt(2d)``, the
    release's sensitivity. The white-box :meth:`statistic`
    ``Σ_j (h_j,last - h_j,first)`` of the released noisy counts
    ``histogram_`` is the likelihood-ratio direction: with one release
    (given bounds, or the one coarse histogram) the design attains the
    claimed ``μ = 1/noise_multiplier_``. Neighbours under *replace one
    record*.

    Parameters
    ----------
    index : int, default=0
        Which base record is replaced.
    """

    def __init__(self, *, index=0):
        self.index = index

    def build(self, estimator, X, y=None):
        X = check_array(X, dtype=np.float64)
        d = X.shape[1]
        if estimator.bounds is None:
            lower = np.full(d, -float(estimator.data_range))
            upper = -lower
        else:
            lower, upper = (
                np.broadcast_to(np.asarray(b, dtype=float), (d,))
                for b in estimator.bounds
            )
        return (
            (_replace_row(X, self.index, upper), y),
            (_replace_row(X, self.index, lower), y),
        )

    def statistic(self, fitted):
        if fitted.histogram_ is None:  # nothing released
            return 0.0
        rows = np.arange(fitted.histogram_.shape[0])
        last = fitted.histogram_[rows, fitted.n_bins_ - 1]
        return float(np.sum(last - fitted.histogram_[:, 0]))

    def expected_mu(self, fitted):
        if fitted.n_iter_ != 1:  # the bounds search: several releases
            return None
        return 1.0 / fitted.noise_multiplier_


class GramCanary(Canary):
    """Worst-case record canary for a released Gram matrix (DPPCA).

    Record ``index`` becomes ``x_a = C·e₁`` in the "in" data set and
    ``x_b`` in the "out" one, both of norm C (the estimator's clip): ``x_b``
    is chosen so that the augmented rows ``w = (x, c)`` (c the constant
    coordinate of the centring, if any) are orthogonal, ``x_aᵀx_b = -c²``.
    Replacing ``w_a`` by ``w_b`` then moves the Gram matrix by
    ``Δ = w_a w_aᵀ - w_b w_bᵀ`` with ``||Δ||_F = sqrt(2)·R²``: the pair
    attains the release's sensitivity (:func:`skdp.mechanisms.gram_sensitivity`).
    The white-box :meth:`statistic` is ``⟨Ĝ, Δ⟩_F`` with Ĝ rebuilt from the
    released ``covariance_`` and ``mean_`` (exactly, as
    ``n·(covariance_ + mean_ mean_ᵀ)`` and ``c·n·mean_``): the
    likelihood-ratio statistic of the Gaussian release, so its μ̂ measures
    the claimed ``1/noise_multiplier_``. Needs ``n_features >= 2``.
    Neighbours under *replace one record*.

    Parameters
    ----------
    index : int, default=0
        Which base record is replaced.
    """

    def __init__(self, *, index=0):
        self.index = index

    def build(self, estimator, X, y=None):
        from ..decomposition._pca import _CENTRING_SHARE, _auto_clip_norm

        X = check_array(X, dtype=np.float64)
        n, d = X.shape
        if d < 2:
            raise ValueError("GramCanary needs at least 2 features.")
        clip = estimator.clip_norm
        clip = _auto_clip_norm(d) if clip == "auto" else float(clip)
        constant = _CENTRING_SHARE * clip if estimator.with_mean else 0.0
        x_a = np.zeros(d)
        x_a[0] = clip
        x_b = np.zeros(d)
        x_b[0] = -(constant**2) / clip
        x_b[1] = math.sqrt(clip**2 - x_b[0] ** 2)
        w_a, w_b = np.append(x_a, constant), np.append(x_b, constant)
        self.delta_ = np.outer(w_a, w_a) - np.outer(w_b, w_b)
        self.constant_, self.n_samples_ = constant, n
        self.record_ = x_a
        return (_replace_row(X, self.index, x_a), y), (
            _replace_row(X, self.index, x_b),
            y,
        )

    def _gram(self, fitted):
        n, c = self.n_samples_, self.constant_
        mean = fitted.mean_
        d = mean.shape[0]
        gram = np.zeros((d + 1, d + 1))
        gram[:d, :d] = n * (fitted.covariance_ + np.outer(mean, mean))
        gram[:d, d] = gram[d, :d] = c * n * mean
        gram[d, d] = n * c * c
        return gram

    def statistic(self, fitted):
        return float(np.sum(self._gram(fitted) * self.delta_))

    def expected_mu(self, fitted):
        from ..mechanisms import gram_sensitivity

        bound = math.sqrt(fitted.clip_norm_**2 + self.constant_**2)
        sigma = fitted.noise_multiplier_ * gram_sensitivity(bound)
        return float(np.linalg.norm(self.delta_) / sigma)


class UserCanary(Canary):
    """Replace one user's whole data by a canary user (DPFedRep).

    The base data's user ``user`` (ids in ``groups``) is replaced, in the
    "in" data set, by ``n_rows`` rows ``x ~ N(0, I)`` with targets
    ``scale·⟨x, direction⟩``: many rows that all push the shared
    representation toward ``direction``. In the "out" data set the user
    keeps its own rows, or, with ``out_direction``, is replaced by the same
    rows with targets ``scale·⟨x, out_direction⟩`` (a user pushing another
    way, so that the two worlds can differ by up to twice the clip).
    Neighbours under *replace one user*. The white-box :meth:`statistic` is
    the squared norm of the projection of ``components_`` on ``direction``.

    Parameters
    ----------
    groups : array-like of shape (n_samples,)
        The base data's user ids.
    user : object
        Which user is replaced (one of ``groups``).
    n_rows : int, default=400
        Rows of the canary user.
    scale : float, default=10.0
        Size of the canary's targets.
    direction : array-like of shape (n_features,), optional
        Default: the first coordinate axis.
    out_direction : array-like of shape (n_features,), optional
        Direction of the "out" world's canary user (default: no canary, the
        user keeps its rows).
    seed : int, default=0
        Seeds the canary's rows (the same in every fit).
    """

    adjacencies = (REPLACE_ONE_USER,)

    def __init__(
        self,
        groups,
        user,
        *,
        n_rows=400,
        scale=10.0,
        direction=None,
        out_direction=None,
        seed=0,
    ):
        self.groups = groups
        self.user = user
        self.n_rows = n_rows
        self.scale = scale
        self.direction = direction
        self.out_direction = out_direction
        self.seed = seed

    def build(self, estimator, X, y):
        X = check_array(X, dtype=np.float64)
        groups = np.asarray(self.groups)
        if groups.shape != (X.shape[0],) or not np.any(groups == self.user):
            raise ValueError("groups must give a user id per row and contain user.")
        d = X.shape[1]
        rows = np.random.default_rng(self.seed).standard_normal((self.n_rows, d))
        keep = groups != self.user

        def with_canary(direction):
            X_c = np.vstack([X[keep], rows])
            y_c = np.concatenate(
                [np.asarray(y, dtype=float)[keep], self.scale * rows @ direction]
            )
            groups_c = np.concatenate([groups[keep], np.full(self.n_rows, self.user)])
            return X_c, y_c, {"groups": groups_c}

        self.direction_ = _unit(self.direction, d)
        if self.out_direction is None:
            return with_canary(self.direction_), (X, y, {"groups": groups})
        return with_canary(self.direction_), with_canary(_unit(self.out_direction, d))

    def statistic(self, fitted):
        return float(np.sum((fitted.components_ @ self.direction_) ** 2))


class SearchCanary(Canary):
    """The canary of a private search's estimator, scored on its winner.

    Audits :class:`~skdp.model_selection.DPRandomSearchCV` as a whole: the
    neighbouring data sets are those of ``canary`` (default: the canary
    registered for the search's estimator), every trial runs the whole
    search (its random split, number of runs, candidates and noisy scores),
    and the statistic scores the released ``best_estimator_``. The record
    lands in the training part or the validation part as the search's split
    falls; the claim tested is the search's total.

    Parameters
    ----------
    canary : Canary, optional
        The canary of the search's estimator.
    """

    def __init__(self, canary=None):
        self.canary = canary

    @property
    def adjacencies(self):
        inner = getattr(self, "canary_", self.canary)
        return (REPLACE_ONE,) if inner is None else inner.adjacencies

    def build(self, estimator, X, y):
        inner = estimator.estimator
        self.canary_ = self.canary if self.canary is not None else default_canary(inner)
        return self.canary_.build(inner, X, y)

    def statistic(self, fitted):
        return self.canary_.statistic(fitted.best_estimator_)

    def loss(self, fitted):
        return self.canary_.loss(fitted.best_estimator_)


def register_canary(estimator_class, factory):
    """Make ``factory(estimator) -> Canary`` the default canary of a class."""
    _DEFAULTS[estimator_class] = factory
    return factory


def default_canary(estimator):
    """The registered default canary for ``estimator`` (by class or parent)."""
    factory = registered_for(_DEFAULTS, estimator)
    if factory is None:
        raise TypeError(
            f"No default canary is registered for {type(estimator).__name__}: pass "
            "canary=... or register one with skdp.audit.register_canary."
        )
    return factory(estimator)


def _logistic_parameters(est):
    return np.vstack([est.coef_.T, est.intercept_[None, :]])


def _random_features_parameters(est):
    return np.append(est.coef_, 0.0)[:, None]  # no intercept: its row is 0


def _register_landed():
    from ..decomposition import DPPCA
    from ..gaussian import DPGaussianSampler
    from ..linear_model import DPLinearRegression, DPLogisticRegression, DPSparseGLM
    from ..model_selection import DPRandomSearchCV
    from ..naive_bayes import DPGaussianNB
    from ..preprocessing import (
        DPMinMaxScaler,
        DPQuantileTransformer,
        DPRobustScaler,
        DPStandardScaler,
    )
    from ..random_features import DPRandomFeaturesRegressor
    from ..ranking import DPBradleyTerry

    register_canary(DPLogisticRegression, lambda est: GradientCanary())
    # The kernel solver (which "auto" picks for large n_components) computes
    # the iterates without the engine's clipped sum, so the gradient canary
    # cannot enter it: those fits keep the record canary.
    register_canary(
        DPRandomFeaturesRegressor,
        lambda est: (
            GradientCanary(direction="least_used")
            if est.solver == "primal"
            else GLMCanary()
        ),
    )
    _ENGINE_PARAMETERS[DPLogisticRegression] = _logistic_parameters
    _ENGINE_PARAMETERS[DPRandomFeaturesRegressor] = _random_features_parameters
    register_canary(DPBradleyTerry, lambda est: OutcomeCanary())
    register_canary(
        DPGaussianSampler,
        lambda est: (
            UnboundedCanary()
            if getattr(est, "method", "bounded") == "unbounded"
            else BallCanary()
        ),
    )
    register_canary(DPSparseGLM, lambda est: GLMCanary())
    register_canary(DPStandardScaler, lambda est: ExtremeRecordCanary())
    register_canary(DPGaussianNB, lambda est: ClassRecordCanary())
    for cls in (DPQuantileTransformer, DPRobustScaler, DPMinMaxScaler):
        register_canary(cls, lambda est: HistogramCanary())
    register_canary(DPRandomSearchCV, lambda est: SearchCanary())
    register_canary(DPLinearRegression, lambda est: GLMCanary())
    register_canary(DPPCA, lambda est: GramCanary())


_register_landed()
