"""Far-record canaries: neighbours of different size, to see a bound read from the data.

The record canaries of :mod:`skdp.audit._release_canaries` put a record of
the same size in both data sets (``c ± 3R·u``, ``3·x_a`` against
``3·x_b``). An estimator that wrongly reads its clip, radius or bounds from
the data then sees the same bound in both worlds and passes: a sampler whose
radius was the largest distance to the centre (ε infinite) was not refuted
at 500 trials (review). Here the two worlds differ in size:

* "in": record ``index`` lies ``far`` (default 1e6) times the public bound
  out, in a direction the release sees; a correct estimator clips it back
  onto the bound, exactly where the record canary's "in" record lands;
* "out": record ``index`` is the record canary's "out" partner placed *on*
  the bound (it needs no clipping, so a bound read from the data stays
  ordinary there).

A correct estimator therefore sees the very pair of clipped records the
record canary designs, and attains its μ. The two data sets differ in one
row: neighbours under *replace one record* whatever the estimator does.

What they see: a bound that follows the most extreme record (the largest
norm, the columns' extremes). A bound tightened to the data (the smaller
of the public bound and the data's extreme) or set by a quantile moves
little with one record, and one far record cannot show it (review: not
refuted at 500 trials).

**Statistic.** The record canary's likelihood-ratio statistic, divided by
its standard deviation under the claim, *guarded*: when the release is
larger than any release of data clipped to the public bound can be (its
clipped signal at most, plus the claimed noise's norm 12 standard
deviations beyond its mean, probability below 1e-30, times ``slack = 2``),
the score is ``GUARD + log10(excess)`` instead. A correct fit never reaches
the guard, so its score is the likelihood ratio and μ̂ means what it means
for the record canary. A bound that grows with the data multiplies the
release by about ``far`` in the "in" world only: every "in" score is above
the guard, every "out" score below, and the audit refutes with the largest
bounds its trials allow. Either way the score is a fixed function of the
released model and of constants the auditor knows, so the audit's tests
stay valid.
"""

import math

import numpy as np
from sklearn.utils import check_array

from ._canary import _replace_row
from ._release_canaries import (
    BallCanary,
    ExtremeRecordCanary,
    GramCanary,
    _base_sums,
    _bounds_or_range,
)

#: Score of a release no fit of data clipped to the public bound can give
#: (plus log10 of its excess): above every likelihood-ratio score.
GUARD = 1e6
#: Standard deviations of a Gaussian vector's norm beyond its mean in the
#: envelopes: P(||N(0, s²I_k)|| > s·(sqrt(k) + 12)) <= exp(-72) < 1e-31.
_TAIL = 12.0


def _guarded(excess, score):
    """``GUARD + log10(excess)`` beyond the envelope, else the LR score.

    A non-finite excess or score (a release on a scale whose squares leave
    float64, e.g. a clip of 1e100) raises: scoring it alike in both worlds
    would give an audit without power, silently (review).
    """
    if not (math.isfinite(excess) and math.isfinite(score)):
        raise ValueError(
            "The canary's statistic is not finite: the release's scale leaves "
            "float64 in its arithmetic (a bound beyond about 1e75 or below "
            "1e-75); audit on data and bounds of a moderate scale."
        )
    if excess > 1.0:
        return GUARD + math.log10(excess)
    return float(score)


class _Far:
    """``far`` and ``slack``, checked; :meth:`statistic` guarded."""

    def __init__(self, *, index=0, far=1e6, slack=2.0):
        super().__init__(index=index)
        self.far = far
        self.slack = slack

    def _check_far(self):
        if not (math.isfinite(self.far) and self.far >= 10):
            raise ValueError(f"far must be a finite factor >= 10; got {self.far}.")
        if not self.slack >= 1:
            raise ValueError(f"slack must be >= 1; got {self.slack}.")

    def statistic(self, fitted):
        return _guarded(self.release_excess(fitted), self.likelihood_ratio(fitted))


class FarBallCanary(_Far, BallCanary):
    """:class:`BallCanary`'s pair, the "in" record ``far·R`` from the centre
    and its partner on the sphere (DPGaussianSampler with a given ball).

    "in": ``c + far·R·u``, clipped to ``c + R·u``; "out": ``c + R·v``
    (``uᵀv = cosine``). Statistic: BallCanary's likelihood ratio over its
    standard deviation, guarded by the envelopes of ``||mean_ − c||`` and of
    the top eigenvalue of ``covariance_`` for the public radius.

    Parameters
    ----------
    index, cosine, direction
        As :class:`BallCanary`.
    far : float, default=1e6
        How many radii out the "in" record lies.
    slack : float, default=2.0
        Factor on the guard's envelope.
    """

    def __init__(self, *, index=0, cosine=-0.25, direction=None, far=1e6, slack=2.0):
        BallCanary.__init__(self, index=index, cosine=cosine, direction=direction)
        self.far = far
        self.slack = slack

    def build(self, estimator, X, y=None):
        self._check_far()
        super().build(estimator, X, y)  # u_, v_, center_, radius_, n_samples_
        X = check_array(X, dtype=np.float64)
        c, R = self.center_, self.radius_
        self.min_variance_ = estimator.min_variance
        return (
            (_replace_row(X, self.index, c + self.far * R * self.u_), y),
            (_replace_row(X, self.index, c + R * self.v_), y),
        )

    def likelihood_ratio(self, fitted):
        return BallCanary.statistic(self, fitted) / self.expected_mu(fitted)

    def release_excess(self, fitted):
        _, _, sd_mean, sd_second = self._design(fitted)
        R, d = self.radius_, self.u_.shape[0]
        floor = sd_second if self.min_variance_ == "auto" else self.min_variance_
        # Clipped rows: ||mean|| <= R and ||second moment||_op <= R²; the
        # released covariance is (second − m mᵀ) with its eigenvalues raised
        # to the floor, and subtracting m mᵀ (PSD) only lowers the top one.
        mean_envelope = R + sd_mean * (math.sqrt(d) + _TAIL)
        top_envelope = max(
            float(floor), R**2 + sd_second * (math.sqrt(d * (d + 1) / 2.0) + _TAIL)
        )
        # In units of R (and R²), so that a large or small radius stays
        # within float64 (review: 1e100 overflowed).
        mean = np.linalg.norm((fitted.mean_ - self.center_) / R)
        top = float(np.linalg.eigvalsh(fitted.covariance_ / R / R)[-1])
        return (
            max(mean / (mean_envelope / R), top / (top_envelope / R / R)) / self.slack
        )


class FarGramCanary(_Far, GramCanary):
    """:class:`GramCanary`'s pair, the "in" record ``far·x_a`` and its partner
    ``x_b`` on the clip sphere (DPPCA).

    Statistic: ``⟨Ĝ, Δ⟩/(σ·||Δ||_F)``, the likelihood ratio over its
    standard deviation, guarded by the envelope of the released Gram blocks
    ``n(covariance_ + mean_ mean_ᵀ)`` and ``c·n·mean_`` for the public clip.

    Parameters
    ----------
    index
        As :class:`GramCanary`.
    far : float, default=1e6
        How many clip norms out the "in" record lies.
    slack : float, default=2.0
        Factor on the guard's envelope.
    """

    def build(self, estimator, X, y=None):
        self._check_far()
        super().build(estimator, X, y)  # delta_, constant_, record_ (x_a)
        X = check_array(X, dtype=np.float64)
        d = X.shape[1]
        self.clip_, _ = estimator._audit_record_bounds(d)
        x_b = np.zeros(d)  # GramCanary's partner, on the sphere
        x_b[0] = -(self.constant_**2) / self.clip_
        x_b[1] = math.sqrt(self.clip_**2 - x_b[0] ** 2)
        return (
            (_replace_row(X, self.index, self.far * self.record_), y),
            (_replace_row(X, self.index, x_b), y),
        )

    def _sigma(self, fitted):
        from ..mechanisms import gram_sensitivity

        bound = math.sqrt(self.clip_**2 + self.constant_**2)
        return fitted.noise_multiplier_ * gram_sensitivity(bound)

    def likelihood_ratio(self, fitted):
        return GramCanary.statistic(self, fitted) / (
            self._sigma(fitted) * np.linalg.norm(self.delta_)
        )

    def release_excess(self, fitted):
        n, c, C = self.n_samples_, self.constant_, self.clip_
        d = fitted.mean_.shape[0]
        sigma = self._sigma(fitted)
        # ||Σ x xᵀ||_F <= n·C² for clipped rows; symmetric noise of std σ on
        # the diagonal and σ/sqrt(2) off it: a norm within σ·sqrt(d(d+1)/2).
        # In units of C² (and C·c), so that a large or small clip stays
        # within float64 (review: 1e100 overflowed).
        mean = fitted.mean_ / C
        gram = n * (fitted.covariance_ / C / C + np.outer(mean, mean))
        ratio = np.linalg.norm(gram) / (
            n + sigma / C / C * (math.sqrt(d * (d + 1) / 2.0) + _TAIL)
        )
        if c > 0:
            column = np.linalg.norm(n * mean)
            spread = sigma / (c * C) / math.sqrt(2.0) * (math.sqrt(d) + _TAIL)
            ratio = max(ratio, column / (n + spread))
        return float(ratio) / self.slack


class FarExtremeRecordCanary(_Far, ExtremeRecordCanary):
    """:class:`ExtremeRecordCanary`'s pair, the "in" record ``far``
    half-widths beyond the centre of given bounds and its partner on the
    lower bounds (DPStandardScaler with ``bounds``).

    Statistic: ``Σ_j (n·shift_j − Σ_{i≠index} z_ij)`` normalised to the
    *public* bounds, over its standard deviation ``z·d``; guarded by
    ``|mean_ − c| <= w/2`` and ``scale_ <= w/2``, which
    every correct fit meets exactly (the release is clipped to the bounds).

    Parameters
    ----------
    index
        As :class:`ExtremeRecordCanary`.
    far : float, default=1e6
        How many half-widths out the "in" record lies.
    slack : float, default=2.0
        Factor on the guard's envelope.
    """

    def build(self, estimator, X, y=None):
        self._check_far()
        if estimator.bounds is None:
            raise ValueError(
                "FarExtremeRecordCanary audits DPStandardScaler with given bounds."
            )
        if not (estimator.with_mean or estimator.with_std):
            raise ValueError(
                "DPStandardScaler(with_mean=False, with_std=False) releases "
                "nothing: there is nothing to audit."
            )
        X = check_array(X, dtype=np.float64)
        lower, upper = _bounds_or_range(estimator, X.shape[1])
        self.lower_, self.upper_ = lower, upper
        self.n_samples_ = X.shape[0]
        self.base_ = self._other_records(X, y)
        center, half = lower / 2.0 + upper / 2.0, upper / 2.0 - lower / 2.0
        self.center_, self.half_ = center, half
        return (
            (_replace_row(X, self.index, center + self.far * half), y),
            (_replace_row(X, self.index, lower), y),
        )

    def likelihood_ratio(self, fitted):
        width = self.upper_ - self.lower_
        shift = (fitted.mean_ - (self.lower_ + width / 2.0)) / width
        own = self.n_samples_ * shift - _base_sums(self.base_, self.lower_, self.upper_)
        return float(np.sum(own)) / (fitted.noise_multiplier_ * width.shape[0])

    def release_excess(self, fitted):
        # A fit of data clipped to the bounds releases a mean within them and
        # a scale of at most w/2, the half-width of the bounds, which the scaler
        # computes from public values.
        ratio = np.max(np.abs(fitted.mean_ - self.center_) / self.half_)
        if fitted.scale_ is not None:
            largest = fitted._audit_largest_scale()
            ratio = max(ratio, float(np.max(fitted.scale_ / largest)))
        return float(ratio) / self.slack
