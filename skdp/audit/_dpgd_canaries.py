"""Canaries of the GLM-type estimators: a worst-case record (:class:`GLMCanary`),
a worst-case gradient in the DP-GD engine (:class:`GradientCanary`) and one
comparison's outcome (:class:`OutcomeCanary`). See :mod:`skdp.audit._canaries`.
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
from ..accounting import REPLACE_ONE, REPLACE_ONE_OUTCOME
from ._canary import Canary, _binary_labels, _replace_row, _unit, _with_label
from ._score import glm_view, score_attack


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
    view = getattr(fitted, "_audit_engine_parameters", None)
    if view is None:
        raise TypeError(
            f"GradientCanary does not know where {type(fitted).__name__} keeps "
            "the parameters of its DP-GD run: it defines no "
            "_audit_engine_parameters()."
        )
    return np.asarray(view(), dtype=float)


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
