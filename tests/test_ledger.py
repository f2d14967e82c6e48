"""PrivacyLedger.record on fitted pipelines, column transformers and searches."""

import math
import pickle
import warnings

import dp_accounting
import numpy as np
import pytest
from sklearn.base import clone
from sklearn.compose import ColumnTransformer, TransformedTargetRegressor
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import (
    GridSearchCV,
    KFold,
    RandomizedSearchCV,
    RepeatedKFold,
    ShuffleSplit,
    StratifiedKFold,
)
from sklearn.pipeline import FeatureUnion, Pipeline, make_pipeline
from sklearn.preprocessing import (
    Binarizer,
    FunctionTransformer,
    Normalizer,
    OneHotEncoder,
    OrdinalEncoder,
    PolynomialFeatures,
    StandardScaler,
)

from skdp import (
    DPLogisticRegression,
    DPRandomFeaturesRegressor,
    PrivacyCost,
    PrivacyLeakWarning,
    PrivacyLedger,
)
from skdp.accounting import (
    ADD_REMOVE,
    _reads_only_shape,
    compose,
    epsilon_from_mu,
    mu_from_epsilon,
)
from skdp.preprocessing import DPStandardScaler

DELTA = 1e-6


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=1500, n_features=4, random_state=0)
    return X * 10 + 50, y


def dp_pipeline(eps_scaler=0.5, eps_model=0.8):
    return make_pipeline(
        DPStandardScaler(epsilon=eps_scaler, delta=DELTA, random_state=0),
        DPLogisticRegression(
            epsilon=eps_model, delta=DELTA, classes=[0, 1], random_state=0
        ),
    )


def record_quietly(ledger, obj):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ledger.record(obj)
    return [str(w.message) for w in caught if w.category is PrivacyLeakWarning]


def mu(epsilon, delta=DELTA):
    return mu_from_epsilon(epsilon, delta)


# --------------------------------------------------------------------------
# Pipelines and other composites
# --------------------------------------------------------------------------


def test_two_step_pipeline_total_is_the_exact_composition(data):
    X, y = data
    pipe = dp_pipeline().fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a fully private pipeline is silent
        ledger = PrivacyLedger(delta=DELTA).record(pipe)
    scaler, model = pipe[0].privacy_spent_, pipe[-1].privacy_spent_
    assert ledger.costs == (scaler, model)
    total = ledger.total()
    assert total == compose([scaler, model], delta=DELTA)
    assert total.mu == pytest.approx(math.hypot(mu(0.5), mu(0.8)), rel=1e-9)
    # Independent oracle: dp-accounting's PLD accountant on the noise of
    # every release (multipliers already include the replace-one factor).
    accountant = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-4)
    for step in pipe:
        accountant.compose(
            dp_accounting.GaussianDpEvent(step.noise_multiplier_), step.n_iter_
        )
    assert accountant.get_epsilon(DELTA) == pytest.approx(total.epsilon, rel=2e-3)
    # Exact GDP composition is below the naive sum of the two budgets.
    assert total.epsilon < 0.5 + 0.8 - 0.25


def test_plain_scaler_warns_and_names_the_step(data):
    X, y = data
    pipe = make_pipeline(
        StandardScaler(),
        DPLogisticRegression(delta=DELTA, classes=[0, 1], random_state=0),
    ).fit(X, y)
    ledger = PrivacyLedger()
    with pytest.warns(PrivacyLeakWarning, match=r"Pipeline/standardscaler") as rec:
        ledger.record(pipe)
    assert len(rec) == 1 and "StandardScaler" in str(rec[0].message)
    assert ledger.costs == (pipe[-1].privacy_spent_,)


def test_non_private_final_model_warns(data):
    X, y = data
    pipe = make_pipeline(DPStandardScaler(random_state=0), LogisticRegression())
    messages = record_quietly(PrivacyLedger(), pipe.fit(X, y))
    assert len(messages) == 1 and "logisticregression" in messages[0]


@pytest.mark.parametrize(
    "step, silent",
    [
        (FunctionTransformer(np.log1p), True),
        (FunctionTransformer(np.log1p, inverse_func=np.expm1), False),
        (FunctionTransformer(np.log1p, np.expm1, check_inverse=False), True),
        (Normalizer(), True),
        (Binarizer(), True),
        (PolynomialFeatures(2), True),
        (OneHotEncoder(categories=[[0, 1]], sparse_output=False), True),
        (OrdinalEncoder(categories=[[0, 1]]), True),
        (OneHotEncoder(sparse_output=False), False),
        (
            OneHotEncoder(categories=[[0, 1]], min_frequency=3, sparse_output=False),
            False,
        ),
        (OrdinalEncoder(), False),
        (SimpleImputer(), False),
        (SimpleImputer(strategy="constant", fill_value=0), False),
        (StandardScaler(), False),
        ("passthrough", True),
    ],
)
def test_the_shape_only_list_is_explicit(step, silent):
    X = np.array([[0.0], [1.0], [1.0], [0.0]] * 5)
    pipe = Pipeline([("step", step), ("model", DPStandardScaler(random_state=0))])
    messages = record_quietly(PrivacyLedger(), pipe.fit(X))
    assert (messages == []) is silent
    if not silent:
        assert messages[0].startswith("Pipeline/step (")
    if not isinstance(step, str):
        assert _reads_only_shape(step) is silent


def test_column_transformer_feature_union_and_target_transformer(data):
    X, _ = data
    ct = ColumnTransformer(
        [
            ("dp", DPStandardScaler(epsilon=0.3, delta=DELTA, random_state=0), [0, 1]),
            ("plain", StandardScaler(), [2]),
        ],
        remainder="passthrough",
    )
    union = FeatureUnion(
        [
            ("a", DPStandardScaler(epsilon=0.2, delta=DELTA, random_state=1)),
            ("norm", Normalizer()),
        ]
    )
    pipe = make_pipeline(ct, union).fit(X)
    ledger = PrivacyLedger(delta=DELTA)
    messages = record_quietly(ledger, pipe)
    assert messages == [m for m in messages if "columntransformer/plain" in m]
    assert len(messages) == 1
    assert len(ledger) == 2
    assert ledger.total().mu == pytest.approx(math.hypot(mu(0.3), mu(0.2)), rel=1e-9)

    ttr = TransformedTargetRegressor(
        regressor=DPRandomFeaturesRegressor(epsilon=0.7, delta=DELTA, random_state=0),
        transformer=DPStandardScaler(epsilon=0.4, delta=DELTA, random_state=0),
    ).fit(X[:300], X[:300, 0])
    ledger = PrivacyLedger(delta=DELTA)
    assert record_quietly(ledger, ttr) == []
    assert ledger.total().mu == pytest.approx(math.hypot(mu(0.7), mu(0.4)), rel=1e-9)

    plain_ttr = TransformedTargetRegressor(
        regressor=LinearRegression(), func=np.log1p, inverse_func=np.expm1
    ).fit(np.abs(X[:50]), np.abs(X[:50, 0]))
    messages = record_quietly(PrivacyLedger(), plain_ttr)
    assert any("regressor (LinearRegression)" in m for m in messages)


def test_unfitted_and_junk_are_refused(data):
    with pytest.raises(NotFittedError):
        PrivacyLedger().record(dp_pipeline())
    with pytest.raises(TypeError):
        PrivacyLedger().record("a pipeline")
    X, y = data
    ledger = PrivacyLedger().record(PrivacyCost.from_gdp(0.5, delta=DELTA))
    ledger_add_remove = PrivacyCost.from_gdp(0.5, delta=DELTA, adjacency=ADD_REMOVE)
    ledger.record(dp_pipeline().fit(X, y))
    with pytest.raises(ValueError, match="adjacency"):
        ledger.record(ledger_add_remove)
    assert len(ledger) == 3  # the refused record left it as it was


def test_clone_and_pickle_keep_working(data):
    X, y = data
    pipe = dp_pipeline()
    fitted = clone(pipe).fit(X, y)
    assert pipe[0].get_params() == fitted[0].get_params()
    restored = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(restored.predict(X), fitted.predict(X))
    a = PrivacyLedger(delta=DELTA).record(fitted).total()
    b = PrivacyLedger(delta=DELTA).record(restored).total()
    assert a == b
    ledger = pickle.loads(pickle.dumps(PrivacyLedger(delta=DELTA).record(fitted)))
    assert ledger.total() == a


# --------------------------------------------------------------------------
# Searches: every candidate on every split that holds a record, plus refit
# --------------------------------------------------------------------------


def _uses_per_record(cv, X, y):
    """Hand count: most training parts one record appears in."""
    uses = np.zeros(X.shape[0], dtype=int)
    for train, _ in cv.split(X, y):
        uses[train] += 1
    return uses.max()


def test_grid_search_over_two_epsilons_cv3_hand_count(data):
    X, y = data
    search = GridSearchCV(
        dp_pipeline(), {"dplogisticregression__epsilon": [0.5, 2.0]}, cv=3
    ).fit(X, y)
    ledger = PrivacyLedger(delta=DELTA)
    with pytest.warns(PrivacyLeakWarning, match="selection is not covered"):
        ledger.record(search)
    # By hand: cv=3 on a classifier is StratifiedKFold(3): each record is in
    # 2 of the 3 training parts. Each training part saw both candidates
    # (scaler ε = 0.5 each time, model ε = 0.5 or 2), then the refit saw
    # every record once more with the best candidate.
    uses = _uses_per_record(StratifiedKFold(3), X, y)
    assert uses == 2
    best = search.best_params_["dplogisticregression__epsilon"]
    mu_sq = uses * (2 * mu(0.5) ** 2 + mu(0.5) ** 2 + mu(2.0) ** 2)
    mu_sq += mu(0.5) ** 2 + mu(best) ** 2
    total = ledger.total()
    assert len(ledger) == 2 * 2 * 2 + 2
    assert total.mu == pytest.approx(math.sqrt(mu_sq), rel=1e-9)
    assert total.epsilon == pytest.approx(epsilon_from_mu(math.sqrt(mu_sq), DELTA))
    # The refit's entries are what best_estimator_ reports.
    assert ledger.costs[-2:] == tuple(s.privacy_spent_ for s in search.best_estimator_)


@pytest.mark.parametrize(
    "cv", [KFold(4), RepeatedKFold(n_splits=3, n_repeats=2, random_state=0)]
)
def test_search_counts_follow_the_splitter(data, cv):
    X, y = data
    search = GridSearchCV(
        DPStandardScaler(delta=DELTA, random_state=0),
        {"epsilon": [0.5, 1.0]},
        cv=cv,
        scoring=lambda est, X, y=None: 0.0,
    ).fit(X)
    ledger = PrivacyLedger(delta=DELTA)
    record_quietly(ledger, search)
    uses = _uses_per_record(cv, X, y)
    best = search.best_params_["epsilon"]
    expected = uses * (mu(0.5) ** 2 + mu(1.0) ** 2) + mu(best) ** 2
    assert ledger.total().mu == pytest.approx(math.sqrt(expected), rel=1e-9)


def test_search_with_an_unknown_splitter_counts_every_split(data):
    # ShuffleSplit's training parts overlap arbitrarily: a record may be in
    # all of them.
    X, _ = data
    cv = ShuffleSplit(n_splits=4, test_size=0.5, random_state=0)
    search = RandomizedSearchCV(
        DPStandardScaler(delta=DELTA, random_state=0),
        {"epsilon": [0.25, 0.5, 1.0]},
        n_iter=2,
        cv=cv,
        random_state=0,
        scoring=lambda est, X, y=None: 0.0,
    ).fit(X)
    ledger = PrivacyLedger(delta=DELTA)
    record_quietly(ledger, search)
    eps = [p["epsilon"] for p in search.cv_results_["params"]]
    expected = (
        4 * sum(mu(e) ** 2 for e in eps) + mu(search.best_params_["epsilon"]) ** 2
    )
    assert ledger.total().mu == pytest.approx(math.sqrt(expected), rel=1e-9)


def test_search_names_leaking_steps_once(data):
    X, y = data
    search = GridSearchCV(
        make_pipeline(
            StandardScaler(),
            DPLogisticRegression(delta=DELTA, classes=[0, 1], random_state=0),
        ),
        {"dplogisticregression__epsilon": [0.5, 1.0]},
        cv=3,
    ).fit(X, y)
    messages = record_quietly(PrivacyLedger(), search)
    leaks = [m for m in messages if "standardscaler (StandardScaler)" in m]
    assert len(leaks) == 1
    assert any("selection is not covered" in m for m in messages)


def test_search_without_refit_is_charged_basic_composition(data):
    X, _ = data
    search = GridSearchCV(
        DPStandardScaler(delta=DELTA, random_state=0),
        {"epsilon": [0.5, 1.0]},
        cv=3,
        refit=False,
        scoring=lambda est, X, y=None: 0.0,
    ).fit(X)
    ledger = PrivacyLedger()
    record_quietly(ledger, search)
    total = ledger.total()
    assert total.mu is None
    assert total.epsilon == pytest.approx(2 * (0.5 + 1.0))
    assert total.delta == pytest.approx(4 * DELTA)


def test_search_refuses_a_refit_that_spent_more_than_declared(data):
    # The totals of a search rest on each candidate spending its declared
    # budget; the refit is the one fit that can be checked, and a refit that
    # reports more than its parameters declare must stop the recording.
    X, y = data
    search = GridSearchCV(
        dp_pipeline(), {"dplogisticregression__epsilon": [0.5, 2.0]}, cv=3
    ).fit(X, y)
    model = search.best_estimator_[-1]
    model.privacy_spent_ = PrivacyCost.from_gdp(
        3 * model.privacy_spent_.mu,
        delta=model.privacy_spent_.delta,
        adjacency=model.privacy_spent_.adjacency,
    )
    with pytest.raises(ValueError, match="spent more"):
        PrivacyLedger(delta=DELTA).record(search)
