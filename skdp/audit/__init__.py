"""Empirical privacy auditing: canaries, ε lower bounds, GDP estimates, score attack.

:func:`audit_estimator` fits an estimator many times on two data sets that are
neighbours under the adjacency it claims (one record, or one comparison
outcome, replaced by a canary), scores every fit and returns an
:class:`AuditReport`: a Clopper–Pearson lower bound on ε (as in Jagielski
et al. [1]_), the Gaussian-DP estimate μ̂ of Nasr et al. [2]_, AUROC and TPR
at low FPR. The score attack of Cai, Wang & Zhang [3]_ gives the white-box
statistic of the GLM and Bradley–Terry estimators. An audit can refute a
privacy claim; it can never certify one.

References
----------
.. [1] M. Jagielski, J. Ullman, A. Oprea. "Auditing differentially private
   machine learning: how private is private SGD?", NeurIPS 2020.
.. [2] M. Nasr, J. Hayes, T. Steinke, B. Balle, F. Tramèr, M. Jagielski, et al.
   "Tight auditing of differentially private machine learning", USENIX
   Security 2023.
.. [3] T. T. Cai, Y. Wang, L. Zhang. "Score Attack: A Lower Bound Technique
   for Optimal Differentially Private Learning", §2.2.
"""

from ._audit import audit_estimator
from ._canaries import (
    BallCanary,
    Canary,
    ClassRecordCanary,
    ExtremeRecordCanary,
    GLMCanary,
    GradientCanary,
    GramCanary,
    HistogramCanary,
    OutcomeCanary,
    SearchCanary,
    UnboundedCanary,
    UserCanary,
    default_canary,
    register_canary,
)
from ._far_canaries import FarBallCanary, FarExtremeRecordCanary, FarGramCanary
from ._report import AuditReport
from ._score import GLMView, glm_view, register_glm_view, score_attack
from ._stats import (
    ThresholdTest,
    auroc,
    clopper_pearson_lower,
    clopper_pearson_upper,
    epsilon_lower_bound,
    gdp_mu_estimate,
    gdp_mu_lower_bound,
    gdp_mu_lower_bound_paired,
    tpr_at_fpr,
)

__all__ = [
    "AuditReport",
    "BallCanary",
    "Canary",
    "ClassRecordCanary",
    "ExtremeRecordCanary",
    "FarBallCanary",
    "FarExtremeRecordCanary",
    "FarGramCanary",
    "GLMCanary",
    "GLMView",
    "GradientCanary",
    "GramCanary",
    "HistogramCanary",
    "OutcomeCanary",
    "SearchCanary",
    "ThresholdTest",
    "UnboundedCanary",
    "UserCanary",
    "audit_estimator",
    "auroc",
    "clopper_pearson_lower",
    "clopper_pearson_upper",
    "default_canary",
    "epsilon_lower_bound",
    "gdp_mu_estimate",
    "gdp_mu_lower_bound",
    "gdp_mu_lower_bound_paired",
    "glm_view",
    "register_canary",
    "register_glm_view",
    "score_attack",
    "tpr_at_fpr",
]
