"""AuditReport: what one audit measured, printable and plottable."""

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import ndtr, ndtri

from ._stats import roc_curve

__all__ = ["AuditReport"]


@dataclass(frozen=True, repr=False)
class AuditReport:
    """The outcome of :func:`~skdp.audit.audit_estimator`.

    An audit gives **lower bounds**: it can refute a privacy claim (when
    ``epsilon_lower_bound > claimed_epsilon``), never certify one.

    Attributes
    ----------
    estimator : str
        Class name of the audited estimator.
    adjacency, mechanism : str
        From the estimator's ``privacy_spent_``.
    claimed_epsilon, claimed_delta : float
        The claim audited.
    claimed_mu : float or None
        The claimed GDP parameter (None if the estimator is not GDP).
    canary, statistic : str
        What was inserted and how fits were scored.
    n_trials : int
        Independent fits on each of the two data sets.
    confidence : float
        ``1 − alpha``: the verdict :attr:`refuted` is wrong with probability
        at most ``alpha``. The ε bound and the total-variation bound are
        each valid at ``1 − alpha/2`` (two tests of one claim).
    epsilon_lower_bound : float
        Clopper–Pearson lower bound on ε at ``claimed_delta``, with the
        threshold chosen on the first fits (``selection_split``) and the
        bound evaluated on the others, held out.
    mu_hat, mu_hat_se : float
        Point estimate of the GDP parameter (separation of the two score
        laws in pooled standard deviations) and its standard error.
    epsilon_from_mu_hat : float
        ε at ``claimed_delta`` of a ``mu_hat``-GDP mechanism (Nasr et al.
        2023); a point estimate, not a bound.
    mu_lower_bound, epsilon_from_mu_lower_bound : float
        Lower confidence bound on μ if the mechanism is GDP (the paired
        total-variation test, :func:`~skdp.audit.gdp_mu_lower_bound_paired`),
        and its ε.
    total_variation_lower_bound : float
        The same paired test's lower bound on the total variation between
        the two worlds' laws of the statistic (``2Φ(μ/2) − 1`` of
        ``mu_lower_bound``).
    claimed_total_variation : float
        The largest total variation the claim allows, whatever its kind
        (GDP, zCDP or (ε, δ): the smallest bound that applies, see the audit guide).
    expected_mu : float or None
        The μ the canary's design attains with its statistic, when known.
    auroc : float
        Area under the ROC curve of the statistic.
    tpr_at_fpr : dict
        Empirical TPR at empirical FPR ≤ 10%, 1% and 0.1%.
    scores_in, scores_out : ndarray
        The statistic on every fit with and without the canary.
    """

    estimator: str
    adjacency: str
    mechanism: str
    claimed_epsilon: float
    claimed_delta: float
    claimed_mu: float | None
    canary: str
    statistic: str
    n_trials: int
    confidence: float
    epsilon_lower_bound: float
    mu_hat: float
    mu_hat_se: float
    epsilon_from_mu_hat: float
    mu_lower_bound: float
    epsilon_from_mu_lower_bound: float
    total_variation_lower_bound: float
    claimed_total_variation: float
    expected_mu: float | None
    auroc: float
    tpr_at_fpr: dict
    scores_in: np.ndarray = field(compare=False)
    scores_out: np.ndarray = field(compare=False)

    @property
    def refuted(self):
        """True when the audit proves the claim false (at ``confidence``).

        The ε lower bound exceeds the claimed ε, or the total-variation
        lower bound exceeds what the claim allows (for a GDP claim: the μ
        lower bound exceeds the claimed μ). The second test has the power: a
        zCDP claim (secure noise) or an (ε, δ) one was tested on ε alone
        before, which missed a quarter of the noise at 500 fits. It has less
        for secure noise than for fast: with half the noise, 500 fits refuted
        DPGaussianSampler's claim in 12 of 12 audits with fast noise and in 2
        of 12 with secure noise (its fits cannot be seeded, so the test is
        unpaired, and a zCDP claim allows a larger total variation than the
        GDP claim of the same noise; review): audit secure noise with several
        times more ``n_trials``.
        """
        if self.epsilon_lower_bound > self.claimed_epsilon:
            return True
        return self.total_variation_lower_bound > self.claimed_total_variation

    def __repr__(self):
        mu = "None" if self.claimed_mu is None else f"{self.claimed_mu:.4g}"
        return (
            f"AuditReport(estimator={self.estimator!r}, "
            f"claimed_epsilon={self.claimed_epsilon:.4g}, "
            f"claimed_delta={self.claimed_delta:.3g}, claimed_mu={mu}, "
            f"epsilon_lower_bound={self.epsilon_lower_bound:.4g}, "
            f"mu_hat={self.mu_hat:.4g}, auroc={self.auroc:.3f}, "
            f"n_trials={self.n_trials}, refuted={self.refuted})"
        )

    def __str__(self):
        pct = f"{100 * self.confidence:g}%"
        claimed_mu = "" if self.claimed_mu is None else f", mu = {self.claimed_mu:.4g}"
        expected = (
            ""
            if self.expected_mu is None
            else f" (design of the canary: {self.expected_mu:.4g})"
        )
        tpr = ", ".join(
            f"{v:.3f} at {100 * k:g}%" for k, v in sorted(self.tpr_at_fpr.items())
        )
        verdict = (
            "REFUTED: the estimator leaks more than it claims"
            if self.refuted
            else "not refuted (an audit can refute a claim, never certify it)"
        )
        rows = [
            (
                "claimed",
                f"(epsilon = {self.claimed_epsilon:.4g}, delta = "
                f"{self.claimed_delta:.3g}){claimed_mu}",
            ),
            ("adjacency", self.adjacency),
            ("canary", self.canary),
            ("statistic", self.statistic),
            ("fits", f"{self.n_trials} with the canary, {self.n_trials} without"),
            (
                "epsilon lower bound",
                f"{self.epsilon_lower_bound:.4g} (Clopper-Pearson, threshold "
                "chosen on the selection fits, bound on the held-out ones; "
                f"verdict at {pct} confidence)",
            ),
            (
                "GDP estimate",
                f"mu_hat = {self.mu_hat:.4g} +/- {self.mu_hat_se:.2g}"
                f"{expected}, i.e. epsilon = {self.epsilon_from_mu_hat:.4g}",
            ),
            (
                "total variation",
                f">= {self.total_variation_lower_bound:.4g} (paired test); the "
                f"claim allows <= {self.claimed_total_variation:.4g}",
            ),
            (
                "GDP lower bound",
                f"mu >= {self.mu_lower_bound:.4g} (the same test), "
                f"i.e. epsilon >= {self.epsilon_from_mu_lower_bound:.4g} if GDP",
            ),
            ("AUROC", f"{self.auroc:.4f}"),
            ("TPR at low FPR", tpr),
            ("verdict", verdict),
        ]
        width = max(len(k) for k, _ in rows)
        lines = [f"Privacy audit of {self.estimator}"]
        lines += [f"  {k.ljust(width)} : {v}" for k, v in rows]
        return "\n".join(lines)

    def plot(self, ax=None):
        """ROC of the statistic against the claimed and estimated trade-offs.

        Log-log axes: the empirical ROC curve, the largest TPR the claim
        allows at each FPR (``min(1, e^ε·FPR + δ)``, and
        ``Φ(Φ⁻¹(FPR) + μ)`` for a GDP claim) and the GDP curve of ``mu_hat``.
        A curve above the claimed limits (beyond sampling noise) would refute
        the claim. Needs matplotlib (imported only here).

        Parameters
        ----------
        ax : matplotlib.axes.Axes, optional
            Where to draw; default a new figure's axes.

        Returns
        -------
        ax : matplotlib.axes.Axes
        """
        import matplotlib.pyplot as plt

        if ax is None:
            _, ax = plt.subplots(figsize=(5, 4.5))
        fpr, tpr = roc_curve(self.scores_in, self.scores_out)
        floor = 0.5 / self.n_trials
        grid = np.logspace(math.log10(floor), 0, 200)
        ax.step(
            np.maximum(fpr, floor),
            np.maximum(tpr, floor),
            where="post",
            label=f"empirical ROC (AUROC {self.auroc:.3f})",
        )
        ax.plot(
            grid,
            np.minimum(1.0, math.exp(self.claimed_epsilon) * grid + self.claimed_delta),
            "k--",
            label=f"claimed ({self.claimed_epsilon:.3g}, {self.claimed_delta:.2g})-DP",
        )
        if self.claimed_mu is not None:
            ax.plot(
                grid,
                ndtr(ndtri(grid) + self.claimed_mu),
                "k:",
                label=f"claimed {self.claimed_mu:.3g}-GDP",
            )
        if np.isfinite(self.mu_hat):
            ax.plot(
                grid,
                ndtr(ndtri(grid) + self.mu_hat),
                "C1-",
                alpha=0.7,
                label=f"estimated {self.mu_hat:.3g}-GDP",
            )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(floor, 1.0)
        ax.set_ylim(floor, 1.05)
        ax.set_xlabel("false positive rate")
        ax.set_ylabel("true positive rate")
        ax.set_title(
            f"{self.estimator}: epsilon >= {self.epsilon_lower_bound:.3g} "
            f"(claimed {self.claimed_epsilon:.3g})"
        )
        ax.legend(loc="lower right", fontsize="small")
        return ax
