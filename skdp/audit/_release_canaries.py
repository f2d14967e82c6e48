"""Canaries of the one-shot releases: the Gaussian sampler (:class:`BallCanary`,
:class:`UnboundedCanary`), moments and histograms of bounded columns
(:class:`ExtremeRecordCanary`, :class:`ClassRecordCanary`,
:class:`HistogramCanary`) and Gram matrices (:class:`GramCanary`).
"""

import math

import numpy as np
from sklearn.utils import check_array

from ._canary import Canary, _replace_row, _unit

#: Every record canary below sits this many times as far out as the bound
#: its design needs (a clip radius, a clip norm, the bounds of a column):
#: clipped back onto it when the estimator clips, so the design keeps its
#: μ, and far out of it when it does not. On the bound itself, a canary
#: could not tell an estimator whose clipping was removed (the review of
#: the audits: DPGaussianSampler without its clip passed BallCanary).
OUTSIDE = 3.0


def _beyond(lower, upper):
    """Points ``OUTSIDE`` times as far from the centre of ``[lower, upper]``
    as its ends: ``(high, low)``, finite for the bounds the estimators take."""
    center, half = lower / 2.0 + upper / 2.0, upper / 2.0 - lower / 2.0
    return center + OUTSIDE * half, center - OUTSIDE * half


def _base_sums(base, fitted_lower, fitted_upper):
    """Column sums of the base records normalised to the fitted bounds:
    ``Σ_i (clip(x_i, l, u) - c)/w``, what the release holds of them."""
    width = fitted_upper - fitted_lower
    center = fitted_lower + width / 2.0
    return ((np.clip(base, fitted_lower, fitted_upper) - center) / width).sum(axis=0)


def _bounds_or_range(estimator, d):
    """Per-feature ``(lower, upper)``: a scaler's public bounds, or its
    public search range ``±data_range`` when it finds them privately."""
    if estimator.bounds is None:
        lower = np.full(d, -float(estimator.data_range))
        return lower, -lower
    return tuple(
        np.broadcast_to(np.asarray(b, dtype=float), (d,)) for b in estimator.bounds
    )


class BallCanary(Canary):
    """Worst-case canary for a clipped mean and second moment (DPGaussianSampler).

    For ``method="bounded"``: record ``index`` becomes ``a = c + 3R·u`` in
    the "in" data set and ``b = c + 3R·v`` in the "out" one, with c the
    public ``center``, R the ``radius`` (both points three times as far as
    the clipping sphere, onto which the clip brings them back to ``c + R·u``
    and ``c + R·v``: a sampler that does not clip is seen), u a unit
    ``direction`` and v a unit vector with ``uᵀv = cosine``.

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
        far = OUTSIDE * radius  # clipped back onto the sphere (see OUTSIDE)
        return (
            (_replace_row(X, self.index, center + far * u), y),
            (_replace_row(X, self.index, center + far * v), y),
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

    Record ``index`` lies beyond the upper clipping bounds in the "in" data
    set and beyond the lower ones in the "out" one (three times as far from
    their centre: ``bounds`` when given, else ``±data_range``; the clip
    brings it back onto them, and an estimator that does not clip is seen).
    Each normalised value moves from +1/2 to −1/2, so the released sums move
    by 1 per feature and the sums of squares not at all: the pair attains
    the release's L2 sensitivity ``sqrt(d)``. The white-box
    :meth:`statistic` ``Σ_j [n·(mean_j − c_j)/w_j − Σ_{i≠index} z_ij]`` (c,
    w the centre and width of the fitted ``bounds_``, z the other records
    normalised to them, which the auditor knows) is the likelihood-ratio
    direction; subtracting the other records keeps privately found bounds,
    which move from fit to fit, from drowning the record (without it, a
    scaler with a third of its noise passed at its defaults). With
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
        high, low = _beyond(*_bounds_or_range(estimator, d))
        self.n_samples_ = X.shape[0]
        self.base_ = self._other_records(X, y)
        return (
            (_replace_row(X, self.index, high), y),
            (_replace_row(X, self.index, low), y),
        )

    def _other_records(self, X, y):
        return np.delete(X, self.index, axis=0)

    def statistic(self, fitted):
        lower, upper = fitted.bounds_
        width = upper - lower
        shift = (fitted.mean_ - (lower + width / 2.0)) / width
        own = self.n_samples_ * shift - _base_sums(self.base_, lower, upper)
        return float(np.sum(own))

    def expected_mu(self, fitted):
        if fitted.n_iter_ != 1:  # bounds found privately: several releases
            return None
        return 1.0 / fitted.noise_multiplier_


class ClassRecordCanary(ExtremeRecordCanary):
    """Worst-case record canary for per-class clipped sums (DPGaussianNB).

    As :class:`ExtremeRecordCanary`: record ``index`` keeps its label and
    lies beyond the upper bounds in the "in" data set and beyond the lower
    bounds in the "out" one (clipped back onto them), so the released sums
    of its class move by 1 per normalised feature (the counts and the
    shifted squares not at all): the pair attains the release's L2
    sensitivity ``sqrt(d)``. The white-box :meth:`statistic` recovers the
    noisy sums of that class from ``theta_`` and ``class_count_``
    (``max(n_k, 1)·(theta_kj − c_j)/w_j``, exact while no mean is clipped to
    its bounds) and subtracts the other records of the class, normalised to
    the fitted bounds (the auditor knows them), summed over the kept
    features: the likelihood-ratio direction. With ``bounds`` given (one
    release) the design attains the claimed ``μ = 1/noise_multiplier_``.
    Neighbours under *replace one record*.
    """

    def build(self, estimator, X, y=None):
        self.label_ = np.asarray(y)[self.index]
        return super().build(estimator, X, y)

    def _other_records(self, X, y):
        others = (np.arange(X.shape[0]) != self.index) & (np.asarray(y) == self.label_)
        return X[others]

    def statistic(self, fitted):
        lower, upper = fitted.bounds_
        width = upper - lower
        k = int(np.searchsorted(fitted.classes_, self.label_))
        keep = ~fitted.dropped_features_
        shift = (fitted.theta_[k] - (lower + width / 2.0)) / width
        n_k = max(float(fitted.class_count_[k]), 1.0)
        own = n_k * shift - _base_sums(self.base_, lower, upper)
        return float(np.sum(own[keep]))


class HistogramCanary(Canary):
    """Worst-case record canary for noisy histograms (the quantile transformers).

    Record ``index`` lies beyond the upper bounds in the "in" data set and
    beyond the lower ones in the "out" one (``bounds`` when given, else
    ``±data_range``, to which the data is clipped; three times as far from
    their centre, so that an estimator that does not clip is seen): in every
    feature it moves from the first bin of the grid to the last, so the count matrix
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
        high, low = _beyond(*_bounds_or_range(estimator, d))
        return (
            (_replace_row(X, self.index, high), y),
            (_replace_row(X, self.index, low), y),
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

    Record ``index`` becomes ``3·x_a`` in the "in" data set and ``3·x_b``
    in the "out" one, which the clip brings back to ``x_a = C·e₁`` and
    ``x_b``, both of norm C (the estimator's clip; an estimator that does
    not clip is seen): ``x_b``
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
        X = check_array(X, dtype=np.float64)
        n, d = X.shape
        if d < 2:
            raise ValueError("GramCanary needs at least 2 features.")
        clip, constant = estimator._audit_record_bounds(d)
        x_a = np.zeros(d)
        x_a[0] = clip
        x_b = np.zeros(d)
        x_b[0] = -(constant**2) / clip
        x_b[1] = math.sqrt(clip**2 - x_b[0] ** 2)
        w_a, w_b = np.append(x_a, constant), np.append(x_b, constant)
        self.delta_ = np.outer(w_a, w_a) - np.outer(w_b, w_b)
        self.constant_, self.n_samples_ = constant, n
        self.record_ = x_a
        # Three times the clip norm: the clip brings them back (see OUTSIDE).
        return (_replace_row(X, self.index, OUTSIDE * x_a), y), (
            _replace_row(X, self.index, OUTSIDE * x_b),
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
