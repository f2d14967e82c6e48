"""skdp: scikit-learn-compatible differentially private estimators.

Every estimator takes ``epsilon`` and ``delta``, calibrates its noise with the
exact accountant in :mod:`skdp.accounting`, and reports what one fit spent in
``privacy_spent_`` (a :class:`PrivacyCost`). Compose several fits on the same
data with a :class:`PrivacyLedger`.
"""

from ._ledger import PrivacyLedger, rowwise
from .accounting import PrivacyCost
from .decomposition import DPPCA
from .exceptions import (
    InsufficientSamplesError,
    MechanismFailedError,
    PrivacyLeakWarning,
)
from .fedrep import DPFedRep
from .gaussian import DPGaussianSampler
from .linear_model import DPLinearRegression, DPLogisticRegression, DPSparseGLM
from .naive_bayes import DPGaussianNB
from .preprocessing import (
    DPMinMaxScaler,
    DPQuantileTransformer,
    DPRobustScaler,
    DPStandardScaler,
)
from .random_features import DPRandomFeaturesRegressor
from .ranking import DPBradleyTerry

__version__ = "0.1.0.dev0"

__all__ = [
    "DPPCA",
    "DPBradleyTerry",
    "DPFedRep",
    "DPGaussianNB",
    "DPGaussianSampler",
    "DPLinearRegression",
    "DPLogisticRegression",
    "DPMinMaxScaler",
    "DPQuantileTransformer",
    "DPRandomFeaturesRegressor",
    "DPRobustScaler",
    "DPSparseGLM",
    "DPStandardScaler",
    "InsufficientSamplesError",
    "MechanismFailedError",
    "PrivacyCost",
    "PrivacyLeakWarning",
    "PrivacyLedger",
    "__version__",
    "rowwise",
]
