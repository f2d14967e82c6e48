"""scikit-learn's estimator checks on every estimator that ``skdp`` exports.

Estimators are discovered from ``skdp.__all__``, so a new estimator is covered
as soon as it is exported. Each is checked twice:

* at its defaults (a realistic ε), where only the utility checks listed in
  ``DEFAULT_EPSILON_XFAILS`` may fail, because DP noise at small n and ε can
  push accuracy under scikit-learn's fixed thresholds (utility is tested
  separately, at sizes where it must hold);
* at ``epsilon=1e4``, where nothing may fail.

``xfail_strict`` is on: an expected failure that starts passing is an error,
so the lists stay honest.
"""

import inspect

from sklearn.base import BaseEstimator
from sklearn.utils.estimator_checks import parametrize_with_checks

import skdp

HIGH_EPSILON = 1e4

# Checks that may fail at the default epsilon, per estimator, and why.
# (DPRandomFeaturesRegressor passes check_regressors_train at ε = 1 with
# training R² 0.51 for the check's seed 0; 0.43-0.65 over seeds 0-7.)
DEFAULT_EPSILON_XFAILS = {
    "DPFedRep": {
        "check_regressors_train": (
            "fit(X, y) makes each row its own user, so only the private "
            "cold-start model predicts; at ε=1 on the check's n=200 it scores R² "
            "−0.02 to −0.10 over seeds 0-3. The ε=1e4 instance passes (R² 0.81); "
            "utility is tested in tests/test_fedrep.py."
        ),
    },
    "DPSparseGLM": {
        "check_regressors_train": (
            "DP noise at ε=1 on the check's n=200, d=10 (R² −60 to −160 over "
            "seeds 0-3); utility is tested in tests/test_sparse_glm.py at "
            "n=20000, and the ε=1e4 instance passes this check (R² 0.81)."
        ),
    },
}


def exported_estimators():
    """Every estimator class in ``skdp.__all__``, sorted by name."""
    classes = (getattr(skdp, name) for name in sorted(skdp.__all__))
    return [
        cls
        for cls in classes
        if inspect.isclass(cls) and issubclass(cls, BaseEstimator)
    ]


def instances():
    for cls in exported_estimators():
        yield cls()
        yield cls(epsilon=HIGH_EPSILON)


def expected_failed_checks(estimator):
    if estimator.epsilon >= HIGH_EPSILON:
        return {}
    return DEFAULT_EPSILON_XFAILS.get(type(estimator).__name__, {})


def test_every_estimator_is_discovered():
    # Guards the discovery itself: an empty list would make the checks vacuous.
    assert "DPLogisticRegression" in {c.__name__ for c in exported_estimators()}


@parametrize_with_checks(
    list(instances()),
    expected_failed_checks=expected_failed_checks,
    xfail_strict=True,
)
def test_sklearn_compatible(estimator, check):
    check(estimator)
