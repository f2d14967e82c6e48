"""PrivacyLedger.record on fitted pipelines, column transformers and searches."""

import itertools
import math
import pickle
import warnings
from dataclasses import replace

import _containers
import dp_accounting
import numpy as np
import pandas as pd
import pytest
from _warning_location import points_at
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.calibration import CalibratedClassifierCV
from sklearn.compose import ColumnTransformer, TransformedTargetRegressor
from sklearn.datasets import make_classification
from sklearn.ensemble import BaggingClassifier, StackingClassifier, VotingClassifier
from sklearn.exceptions import NotFittedError
from sklearn.feature_selection import RFE, SelectFromModel
from sklearn.impute import MissingIndicator, SimpleImputer
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import (
    GridSearchCV,
    GroupKFold,
    KFold,
    RandomizedSearchCV,
    RepeatedKFold,
    RepeatedStratifiedKFold,
    ShuffleSplit,
    StratifiedKFold,
    StratifiedShuffleSplit,
    cross_validate,
)
from sklearn.multiclass import OneVsRestClassifier
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
    rowwise,
)
from skdp._base import PUBLIC_LABELS
from skdp._ledger import _reads_only_shape
from skdp.accounting import (
    ADD_REMOVE,
    REPLACE_ONE,
    REPLACE_ONE_OUTCOME,
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
        DPStandardScaler(epsilon=eps_scaler, delta=DELTA),
        DPLogisticRegression(epsilon=eps_model, delta=DELTA, classes=[0, 1]),
    )


def record_quietly(ledger, obj, **kwargs):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ledger.record(obj, **kwargs)
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
        (
            OneHotEncoder(
                categories=[[0, 1]], handle_unknown="ignore", sparse_output=False
            ),
            True,
        ),
        (
            OrdinalEncoder(
                categories=[[0, 1]],
                handle_unknown="use_encoded_value",
                unknown_value=-1,
            ),
            True,
        ),
        (OneHotEncoder(sparse_output=False), False),
        (
            OneHotEncoder(categories=[[0, 1]], min_frequency=3, sparse_output=False),
            False,
        ),
        (OrdinalEncoder(), False),
        (SimpleImputer(), False),
        (SimpleImputer(strategy="constant", fill_value=0), False),
        (SimpleImputer(strategy="constant", keep_empty_features=True), True),
        (
            SimpleImputer(
                strategy="constant", keep_empty_features=True, add_indicator=True
            ),
            False,
        ),
        (SimpleImputer(keep_empty_features=True), False),
        (MissingIndicator(features="all"), True),
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
        # A row-wise FunctionTransformer is named for its check, not as a
        # step that learns from the data (new-user trial).
        if isinstance(step, FunctionTransformer):
            assert "check_inverse=True" in messages[0]
            assert "reads the training data" not in messages[0]
    if not isinstance(step, str):
        assert _reads_only_shape(step) is silent


@pytest.mark.parametrize(
    "encoder",
    [
        OneHotEncoder(categories=[[0, 1]], sparse_output=False),
        OneHotEncoder(
            categories=[[0, 1]],
            handle_unknown="ignore",
            drop="first",
            sparse_output=False,
        ),
        OrdinalEncoder(categories=[[0, 1]]),
        OrdinalEncoder(
            categories=[[0, 1]],
            handle_unknown="use_encoded_value",
            unknown_value=np.nan,
        ),
    ],
    ids=["onehot-error", "onehot-drop", "ordinal-error", "ordinal-nan"],
)
def test_an_encoder_that_raises_or_warns_on_one_record_is_named(encoder):
    """Declared categories read nothing of the data, but with
    handle_unknown="error" one record outside them makes the fit raise,
    quoting it, and a OneHotEncoder that drops a category warns on it
    (review, 2026-11-27): one record decides whether the fit succeeds."""
    X = np.array([[0.0], [1.0], [1.0], [0.0]] * 5)
    neighbour = X.copy()
    neighbour[0] = 7.0  # outside the declared categories
    pipe = Pipeline([("step", encoder), ("model", DPStandardScaler(bounds=(-2, 2)))])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises((ValueError, UserWarning), match=r"unknown categories|NaN"):
            clone(pipe).fit(neighbour)
    messages = record_quietly(PrivacyLedger(), pipe.fit(X))
    assert len(messages) == 1
    assert messages[0].startswith("Pipeline/step (") and "handle_unknown" in messages[0]
    assert _reads_only_shape(encoder)  # its output is still row-wise


def test_a_missing_indicator_keeps_the_columns_seen_missing():
    # The default features="missing-only" drops the columns without a NaN:
    # its output's width depends on the values.
    X = np.array([[np.nan, 0.0], [1.0, 1.0]])
    assert MissingIndicator().fit(X).transform(X).shape == (2, 1)
    assert not _reads_only_shape(MissingIndicator())
    assert _reads_only_shape(MissingIndicator(features="all"))


def test_the_pairs_encoder_reads_only_the_shape():
    # skdp's own first step of a ranking pipeline learns nothing (n_items is
    # a parameter): recording the pipeline warns of nothing.
    from skdp import DPBradleyTerry
    from skdp.datasets import make_btl_comparisons
    from skdp.ranking import PairsEncoder

    pairs, y, _ = make_btl_comparisons(10, 1.0, 2, random_state=0)
    pipe = make_pipeline(PairsEncoder(10), DPBradleyTerry(classes=[0, 1]))
    assert record_quietly(PrivacyLedger(), pipe.fit(pairs, y)) == []
    assert _reads_only_shape(PairsEncoder(10))


def test_column_transformer_feature_union_and_target_transformer(data):
    X, _ = data
    ct = ColumnTransformer(
        [
            ("dp", DPStandardScaler(epsilon=0.3, delta=DELTA, random_state=0), [0, 1]),
            ("plain", StandardScaler(), [2]),
        ],
        remainder="passthrough",
        sparse_threshold=0,  # the container is tested below
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
        transformer=DPStandardScaler(epsilon=0.4, delta=DELTA, random_state=1),
        check_inverse=False,
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
    with pytest.raises(TypeError, match="cv= is only"):
        PrivacyLedger().record(PrivacyCost.from_gdp(0.5, delta=DELTA), cv=3)


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
    cv = KFold(3, shuffle=True, random_state=0)
    search = GridSearchCV(
        dp_pipeline(), {"dplogisticregression__epsilon": [0.5, 2.0]}, cv=cv
    ).fit(X, y)
    ledger = PrivacyLedger(delta=DELTA)
    with pytest.warns(PrivacyLeakWarning, match="selection is not covered"):
        ledger.record(search)
    # By hand: each record is in 2 of the 3 training parts. Each training
    # part saw both candidates (scaler ε = 0.5 each time, model ε = 0.5 or
    # 2), then the refit saw
    # every record once more with the best candidate.
    uses = _uses_per_record(cv, X, y)
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
        DPStandardScaler(delta=DELTA),
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


def test_halving_search_over_epsilon_and_clip_is_totalled_from_its_fits(
    data, monkeypatch
):
    # HalvingGridSearchCV trains candidates on data-independent subsamples
    # of each training part, iteration after iteration. Count by hand what
    # every fit spent on every record (rows identified by their bytes), and
    # check that the ledger's total covers the worst-hit record and equals
    # its count: each cv_results_ row once per training part, plus the refit.
    from sklearn.experimental import enable_halving_search_cv  # noqa: F401
    from sklearn.model_selection import HalvingGridSearchCV

    X, y = data
    row_of = {row.tobytes(): i for i, row in enumerate(X)}
    spent = np.zeros(len(X))
    real_fit = DPLogisticRegression.fit

    def spy(self, X_fit, y_fit):
        fitted = real_fit(self, X_fit, y_fit)
        rows = [row_of[row.tobytes()] for row in np.asarray(X_fit)]
        spent[rows] += fitted.privacy_spent_.mu**2
        return fitted

    monkeypatch.setattr(DPLogisticRegression, "fit", spy)
    cv = KFold(3, shuffle=True, random_state=0)
    search = HalvingGridSearchCV(
        DPLogisticRegression(delta=DELTA, classes=[0, 1]),
        {"epsilon": [0.5, 1.0, 2.0], "clip_norm": [0.5, 2.0]},
        cv=cv,
        factor=2,
        min_resources=300,
        random_state=0,
    ).fit(X, y)
    assert len(search.n_resources_) > 1  # subsamples, then more data
    ledger = PrivacyLedger(delta=DELTA)
    record_quietly(ledger, search)
    total = ledger.total().mu ** 2
    assert total >= spent.max() * (1 - 1e-9)
    uses = _uses_per_record(cv, X, y)
    by_hand = uses * sum(mu(p["epsilon"]) ** 2 for p in search.cv_results_["params"])
    by_hand += mu(search.best_params_["epsilon"]) ** 2
    assert total == pytest.approx(by_hand, rel=1e-9)


@pytest.mark.parametrize("min_resources", ["smallest", "exhaust", 60])
def test_a_halving_schedule_from_the_classes_in_y_is_named(min_resources):
    # min_resources "smallest" (and "exhaust") multiplies the first
    # iteration's samples by the number of classes present in y: one record
    # relabelled to a third class changed min_resources_ and n_resources_
    # with classes declared, unnamed (review).
    from sklearn.experimental import enable_halving_search_cv  # noqa: F401
    from sklearn.model_selection import HalvingGridSearchCV

    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3))
    y = (X[:, 0] > 0).astype(int)
    y_third = y.copy()
    y_third[0] = 2
    schedules = []
    for labels in (y, y_third):
        search = HalvingGridSearchCV(
            DPLogisticRegression(delta=DELTA, classes=[0, 1, 2]),
            {"clip_norm": [0.5, 1.0, 2.0, 4.0]},
            cv=KFold(3),
            factor=2,
            min_resources=min_resources,
            random_state=0,
        ).fit(X, labels)
        schedules.append(search.min_resources_)
        messages = record_quietly(PrivacyLedger(delta=DELTA), search)
        named = [m for m in messages if "number of classes present in y" in m]
        assert len(named) == (min_resources != 60)
    if min_resources == "smallest":
        assert schedules[0] != schedules[1]  # what the message is about
    # a regressor's schedule reads no classes
    from skdp import DPLinearRegression

    regression = HalvingGridSearchCV(
        DPLinearRegression(delta=DELTA),
        {"clip_norm": [0.5, 1.0, 2.0, 4.0]},
        cv=KFold(3),
        factor=2,
        min_resources=min_resources,
        random_state=0,
    ).fit(X, X[:, 0])
    messages = record_quietly(PrivacyLedger(delta=DELTA), regression)
    assert not [m for m in messages if "number of classes present in y" in m]


def test_search_with_an_unknown_splitter_counts_every_split(data):
    # ShuffleSplit's training parts overlap arbitrarily: a record may be in
    # all of them.
    X, _ = data
    cv = ShuffleSplit(n_splits=4, test_size=0.5, random_state=0)
    search = RandomizedSearchCV(
        DPStandardScaler(delta=DELTA),
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


def test_search_candidates_inside_composites_are_charged(data):
    # Candidates are rebuilt from the parameters (unfitted): the DP steps
    # inside a TransformedTargetRegressor and a ColumnTransformer are found
    # and charged once per training part, plus the refit.
    X, y = data
    cv = KFold(3, shuffle=True, random_state=0)
    target = TransformedTargetRegressor(
        regressor=DPRandomFeaturesRegressor(50, delta=DELTA)
    )
    columns = make_pipeline(
        ColumnTransformer(
            [("dp", DPStandardScaler(delta=DELTA), [0, 1])], remainder="drop"
        ),
        DPLogisticRegression(delta=DELTA, classes=[0, 1]),
    )
    for estimator, grid in (
        (target, {"regressor__epsilon": [0.5, 1.0]}),
        (columns, {"columntransformer__dp__epsilon": [0.5, 1.0]}),
    ):
        target_y = y.astype(float) if estimator is target else y
        search = GridSearchCV(estimator, grid, cv=cv).fit(X, target_y)
        ledger = PrivacyLedger(delta=DELTA)
        record_quietly(ledger, search)
        best = next(iter(search.best_params_.values()))
        expected = 2 * (mu(0.5) ** 2 + mu(1.0) ** 2) + mu(best) ** 2
        if estimator is columns:  # the model's ε = 1 in every fit
            expected += 5 * mu(1.0) ** 2
        assert ledger.total().mu == pytest.approx(math.sqrt(expected), rel=1e-9)


def test_search_names_leaking_steps_once(data):
    X, y = data
    search = GridSearchCV(
        make_pipeline(
            StandardScaler(),
            DPLogisticRegression(delta=DELTA, classes=[0, 1]),
        ),
        {"dplogisticregression__epsilon": [0.5, 1.0]},
        cv=KFold(3),
    ).fit(X, y)
    messages = record_quietly(PrivacyLedger(), search)
    leaks = [m for m in messages if "standardscaler (StandardScaler)" in m]
    assert len(leaks) == 1
    assert any("selection is not covered" in m for m in messages)


def test_search_without_refit_is_charged_the_declared_budgets(data):
    # No refit: every fit is charged its budget from the parameters (GDP for
    # a scaler, whose releases are all Gaussian), and the total is reported
    # at any delta the user asks for.
    X, _ = data
    search = GridSearchCV(
        DPStandardScaler(delta=DELTA),
        {"epsilon": [0.5, 1.0]},
        cv=3,
        refit=False,
        scoring=lambda est, X, y=None: 0.0,
    ).fit(X)
    ledger = PrivacyLedger(delta=DELTA)
    record_quietly(ledger, search)
    total = ledger.total()
    assert len(ledger) == 4
    assert total.mu == pytest.approx(math.sqrt(2 * (mu(0.5) ** 2 + mu(1.0) ** 2)))
    assert total.delta == DELTA
    assert total.epsilon == pytest.approx(epsilon_from_mu(total.mu, DELTA))


def test_a_search_whose_estimator_changed_after_the_fit_is_refused_or_flagged(data):
    # GridSearchCV keeps the user's object: est.set_params(epsilon=0.01)
    # after the fit lowered the charge of every candidate (3.44 to 0.03
    # without a refit; review).
    X, y = data
    est = dp_pipeline()
    search = GridSearchCV(
        est,
        {"dplogisticregression__clip_norm": [0.5, 1.0]},
        cv=KFold(3, shuffle=True, random_state=0),
    )
    search.fit(X, y)
    with pytest.warns(PrivacyLeakWarning) as caught:
        PrivacyLedger(delta=DELTA).record(search)
    assert not any("cannot check" in str(w.message) for w in caught)
    est.set_params(dplogisticregression__epsilon=0.01)
    with pytest.raises(ValueError, match="changed after the fit"):
        PrivacyLedger(delta=DELTA).record(search)
    est.set_params(dplogisticregression__epsilon=0.8, dpstandardscaler="passthrough")
    with pytest.raises(ValueError, match="changed after the fit"):
        PrivacyLedger(delta=DELTA).record(search)  # a DP step gone
    # Without a refit, or where some candidates leave a parameter of
    # best_params_ at the estimator's value, nothing can be compared: the
    # record says so.
    grids = [
        {
            "dplogisticregression__epsilon": [0.5],
            "dplogisticregression__clip_norm": [1.0],
        },
        {"dplogisticregression__clip_norm": [0.5, 2.0]},
    ]

    def first(cv_results):  # refit the first candidate, whatever the scores
        return 0

    for grid, refit in [
        ({"dplogisticregression__clip_norm": [0.5, 2.0]}, False),
        (grids, first),
    ]:
        search = GridSearchCV(
            dp_pipeline(),
            grid,
            cv=KFold(3, shuffle=True, random_state=0),
            refit=refit,
            scoring="accuracy",
        ).fit(X, y)
        with pytest.warns(PrivacyLeakWarning, match="cannot check"):
            PrivacyLedger(delta=DELTA).record(search)


def test_a_search_whose_cv_or_grid_objects_changed_after_the_fit(data):
    # set_params(cv=[]) after the fit counted no candidate fit (3.43 down to
    # the refit's 0.70); a grid of estimator objects charged the losers as
    # they are now (review of the day's diff).
    X, y = data
    cv = ShuffleSplit(5, random_state=0)
    search = GridSearchCV(
        dp_pipeline(), {"dplogisticregression__clip_norm": [0.5, 1.0]}, cv=cv
    ).fit(X, y)
    record_quietly(PrivacyLedger(delta=DELTA), search)
    search.set_params(cv=[])
    with pytest.raises(ValueError, match="cv now gives 0 splits where the fit made 5"):
        PrivacyLedger(delta=DELTA).record(search)
    grid = {"dplogisticregression": [dp_model(0.5), dp_model(1.0)]}
    search = GridSearchCV(dp_pipeline(), grid, cv=KFold(3)).fit(X, y)
    with pytest.warns(PrivacyLeakWarning, match="the grid holds estimator objects"):
        PrivacyLedger(delta=DELTA).record(search)


def test_a_column_part_that_selects_nothing_is_no_change(data):
    # The refit's ColumnTransformer does not fit a part that selects no
    # column, while the same build unfitted holds it: an untouched search
    # was refused as changed (review of the day's diff).
    X, y = data
    columns = ColumnTransformer(
        [("a", DPStandardScaler(epsilon=0.5, delta=DELTA), [0, 1, 2, 3])],
        remainder=DPStandardScaler(epsilon=0.5, delta=DELTA),
    )
    search = GridSearchCV(
        make_pipeline(columns, dp_model()),
        {"dplogisticregression__clip_norm": [0.5, 1.0]},
        cv=KFold(3, shuffle=True, random_state=0),
    ).fit(X, y)
    record_quietly(PrivacyLedger(delta=DELTA), search)  # no refusal
    search.estimator.set_params(columntransformer__a__epsilon=0.01)
    with pytest.raises(ValueError, match="changed after the fit"):
        PrivacyLedger(delta=DELTA).record(search)


def test_search_without_refit_of_non_gaussian_fits_names_the_delta_to_pass():
    # A sparse GLM's guarantee with accounting="paper" is an (epsilon, delta)
    # pair: composing four of them spends 4 deltas, which a ledger at
    # delta=1e-6 cannot hold. The error names the delta to pass instead of
    # failing from deep inside.
    from sklearn.datasets import make_regression

    from skdp import DPSparseGLM

    X, y = make_regression(300, 10, random_state=0)
    search = GridSearchCV(
        DPSparseGLM(delta=1e-5, accounting="paper"),
        {"epsilon": [0.5, 1.0]},
        cv=KFold(3, shuffle=True, random_state=0),
        refit=False,
    ).fit(X, y)
    too_small = PrivacyLedger(delta=1e-6)
    record_quietly(too_small, search)
    with pytest.raises(ValueError, match=r"add up to 4e-05.*delta=0.0004\)"):
        too_small.total()
    ledger = PrivacyLedger(delta=4e-4)
    record_quietly(ledger, search)
    # each record is in 2 of the 3 training parts: 2 fits per candidate
    total = ledger.total()
    assert total.epsilon == pytest.approx(2 * (0.5 + 1.0), rel=1e-12)
    assert total.delta == pytest.approx(4e-5, rel=1e-12)


def test_search_refuses_a_refit_that_spent_more_than_declared(data):
    # The totals of a search rest on each candidate spending its declared
    # budget; the refit is the one fit that can be checked, and a refit that
    # reports more than its parameters declare must stop the recording.
    X, y = data
    search = GridSearchCV(
        dp_pipeline(), {"dplogisticregression__epsilon": [0.5, 2.0]}, cv=KFold(3)
    ).fit(X, y)
    model = search.best_estimator_[-1]
    model.privacy_spent_ = PrivacyCost.from_gdp(
        3 * model.privacy_spent_.mu,
        delta=model.privacy_spent_.delta,
        adjacency=model.privacy_spent_.adjacency,
    )
    with pytest.raises(ValueError, match="spent more"):
        PrivacyLedger(delta=DELTA).record(search)


def test_search_refuses_a_secure_refit_that_spent_more_than_declared(data):
    # The same check for zCDP costs (noise="secure"), which have no μ.
    X, y = data
    search = GridSearchCV(
        DPLogisticRegression(classes=[0, 1], noise="secure"),
        {"epsilon": [0.5, 2.0]},
        cv=KFold(3),
    ).fit(X, y)
    model = search.best_estimator_
    assert model.privacy_spent_.mu is None
    PrivacyLedger(delta=DELTA).record(search)  # as fitted: accepted
    model.privacy_spent_ = replace(
        model.privacy_spent_, zcdp=1.5 * model.privacy_spent_.zcdp
    )
    with pytest.raises(ValueError, match="spent more"):
        PrivacyLedger(delta=DELTA).record(search)


def test_search_refuses_an_epsilon_delta_refit_that_spent_more_than_declared(data):
    # The same check for steps whose budget is an (ε, δ) pair (DPSparseGLM's
    # with accounting="paper", which may take the paper's own route): its
    # search's estimator given a smaller ε after the search was charged 4.08
    # where the fits spent 36.
    from skdp.linear_model import DPSparseGLM

    X, y = data
    search = GridSearchCV(
        DPSparseGLM(epsilon=4.0, delta=1e-6, sparsity=2, accounting="paper"),
        {"sparsity": [1, 2]},
        cv=KFold(3),
    ).fit(X, y.astype(float))
    assert search.best_estimator_.privacy_spent_.rho is None
    PrivacyLedger(delta=1e-4).record(search)  # as fitted: accepted
    search.estimator.set_params(epsilon=0.01)
    with pytest.raises(ValueError, match="changed after the fit"):
        PrivacyLedger(delta=1e-4).record(search)


# --------------------------------------------------------------------------
# Data-dependent splitters are refused (issue 23, finding 2)
# --------------------------------------------------------------------------


def _fold_differences(cv, X, y, y_neighbour):
    """Σ over splits of (records in which the two training parts differ)².

    The neighbours differ in record 1. A record counts if it is in one
    training part and not the other, or if it is record 1 and in both.
    """
    total = 0
    splits = zip(cv.split(X, y), cv.split(X, y_neighbour), strict=True)
    for (train_a, _), (train_b, _) in splits:
        moved = len(np.setxor1d(train_a, train_b))
        changed = int(1 in train_a and 1 in train_b)
        total += (moved + changed) ** 2
    return total


@pytest.mark.parametrize(
    "cv, independent",
    [
        (StratifiedKFold(3), False),
        (StratifiedKFold(5, shuffle=True, random_state=0), False),
        (KFold(3), True),
        (KFold(5, shuffle=True, random_state=0), True),
    ],
    ids=repr,
)
def test_stratified_folds_move_records_between_neighbours(data, cv, independent):
    # Independent count: neighbours differ in record 1's label. A
    # data-independent splitter gives the same folds, so each training part
    # that holds record 1 differs in that one record: Σ = k − 1. Stratified
    # folds move other records too (here 14 for k = 3, as the issue measured).
    X, y = data
    y_neighbour = y.copy()
    y_neighbour[1] = 1 - y[1]
    total = _fold_differences(cv, X, y, y_neighbour)
    if independent:
        assert total == cv.get_n_splits() - 1
    else:
        assert total > cv.get_n_splits() - 1


@pytest.mark.parametrize(
    "cv",
    [
        3,
        None,
        StratifiedKFold(3),
        RepeatedStratifiedKFold(n_splits=3, n_repeats=2, random_state=0),
        StratifiedShuffleSplit(n_splits=3, random_state=0),
        GroupKFold(3),
    ],
    ids=repr,
)
def test_search_with_a_data_dependent_splitter_is_refused(data, cv):
    X, y = data
    groups = np.arange(X.shape[0]) % 7
    search = GridSearchCV(
        DPLogisticRegression(delta=DELTA, classes=[0, 1]),
        {"epsilon": [0.5, 1.0]},
        cv=cv,
    ).fit(X, y, groups=groups)
    ledger = PrivacyLedger(delta=DELTA)
    name = "StratifiedKFold" if cv in (3, None) else type(cv).__name__
    with pytest.raises(ValueError, match=rf"{name}.*KFold\(n_splits="):
        ledger.record(search)
    assert len(ledger) == 0


def test_cross_validate_results_are_recorded_with_their_splitter(data):
    X, y = data
    model = DPLogisticRegression(delta=DELTA, classes=[0, 1])
    kfold = KFold(3, shuffle=True, random_state=0)
    result = cross_validate(model, X, y, cv=kfold, return_estimator=True)
    # Without the indices the ledger cannot check that kfold made these
    # folds (StratifiedKFold's look the same): it says so (review,
    # 2026-11-27: record(result of cv=5, cv=KFold(5)) passed silently).
    with pytest.warns(PrivacyLeakWarning, match="return_indices=True") as caught:
        ledger = PrivacyLedger(delta=DELTA).record(result, cv=kfold)
    assert sum("return_indices" in str(w.message) for w in caught) == 1
    assert ledger.costs == tuple(e.privacy_spent_ for e in result["estimator"])
    result = cross_validate(
        model, X, y, cv=kfold, return_estimator=True, return_indices=True
    )
    said = record_quietly(PrivacyLedger(delta=DELTA), result, cv=kfold)
    assert [m[:36] for m in said] == ["cross_validate's scores (test_score)"]
    with pytest.raises(ValueError, match="record\\(result, cv=cv\\)"):
        PrivacyLedger().record(result)
    stratified = cross_validate(model, X, y, cv=3, return_estimator=True)
    for cv in (3, StratifiedKFold(3)):
        with pytest.raises(ValueError, match="StratifiedKFold"):
            PrivacyLedger().record(stratified, cv=cv)
    with pytest.raises(TypeError, match="return_estimator"):
        PrivacyLedger().record({"test_score": [0.5]}, cv=kfold)


def test_cross_validate_of_a_regressor_and_of_a_leaking_pipeline(data):
    # An integer cv is KFold for a regressor (not refused), and a plain
    # scaler in the fold pipelines is named once per fold model; the totals
    # honour the ledger's delta, per adjacency too.
    X, y = data
    reg = DPRandomFeaturesRegressor(50, delta=DELTA)
    folds = cross_validate(
        reg, X, y.astype(float), cv=3, return_estimator=True, return_indices=True
    )
    ledger = PrivacyLedger(delta=1e-6)
    # The one warning: the scores, exact on private rows, are not covered.
    with pytest.warns(PrivacyLeakWarning) as caught:
        ledger.record(folds, cv=3)
    assert [str(w.message)[:36] for w in caught] == [
        "cross_validate's scores (test_score)"
    ]
    assert len(ledger) == 3
    (total,) = ledger.totals().values()
    assert total.delta == 1e-6 == ledger.total().delta
    assert total.mu == pytest.approx(math.sqrt(3) * mu(1.0), rel=1e-9)
    leaky = make_pipeline(StandardScaler(), dp_model())
    kfold = KFold(3, shuffle=True, random_state=0)
    folds = cross_validate(leaky, X, y, cv=kfold, return_estimator=True)
    with pytest.warns(PrivacyLeakWarning) as record:
        PrivacyLedger().record(folds, cv=kfold)
    # Each fold's scaler is named by its own path, so none hides another.
    named = {
        str(w.message).split(" reads the training data")[0]
        for w in record
        if w.category is PrivacyLeakWarning and "reads the training" in str(w.message)
    }
    assert named == {
        f"cross_validate/estimator[{i}]/standardscaler (StandardScaler)"
        for i in range(3)
    }


# --------------------------------------------------------------------------
# Wrappers: every DP fit inside counted, or a refusal; never 0 (finding 3)
# --------------------------------------------------------------------------


def test_a_wrapper_that_learned_its_label_set_is_named(data):
    X, y = data
    voting = VotingClassifier([("a", dp_model()), ("b", dp_model(0.5))]).fit(X, y)
    with pytest.warns(PrivacyLeakWarning, match="learned its label set"):
        PrivacyLedger(delta=DELTA).record(voting)
    # A MultiOutputClassifier's classes_ are its sub-models' declared sets: no
    # leak of its own (it was named; review).
    from sklearn.multioutput import MultiOutputClassifier

    both = MultiOutputClassifier(dp_model()).fit(X, np.c_[y, 1 - y])
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        PrivacyLedger(delta=DELTA).record(both)
    assert not [w for w in record if "learned its label set" in str(w.message)]


def dp_model(epsilon=1.0):
    return DPLogisticRegression(epsilon=epsilon, delta=DELTA, classes=[0, 1])


def fitted_dp_models(obj):
    """Independent count: every object in obj's fitted state with privacy_spent_."""
    found, stack, seen = [], [obj], set()
    while stack:
        item = stack.pop()
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(getattr(item, "privacy_spent_", None), PrivacyCost):
            found.append(item)
            continue
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif hasattr(item, "__dict__") and not isinstance(item, np.ndarray):
            stack.extend(vars(item).values())
    return found


@pytest.mark.parametrize(
    "wrapper, n_classes, n_fits",
    [
        (lambda: VotingClassifier([("a", dp_model()), ("b", dp_model(0.5))]), 2, 2),
        (lambda: OneVsRestClassifier(dp_model()), 3, 3),
        (lambda: make_pipeline(SelectFromModel(dp_model()), dp_model()), 2, 2),
    ],
    ids=["voting", "one-vs-rest", "select-from-model"],
)
def test_known_wrappers_count_every_dp_fit(data, wrapper, n_classes, n_fits):
    X, y = data
    if n_classes == 3:
        y = y + (X[:, 0] > 60)
    fitted = wrapper().fit(X, y)
    models = fitted_dp_models(fitted)
    assert len(models) == n_fits
    ledger = PrivacyLedger(delta=DELTA)
    record_quietly(ledger, fitted)
    expected = math.sqrt(sum(m.privacy_spent_.mu**2 for m in models))
    assert ledger.total().mu == pytest.approx(expected, rel=1e-12)
    assert ledger.total().mu > 0


@pytest.mark.parametrize(
    "wrapper",
    [
        lambda: BaggingClassifier(dp_model(), n_estimators=3),  # bootstrap
        lambda: CalibratedClassifierCV(dp_model(), cv=KFold(3)),
        lambda: StackingClassifier(
            [("a", dp_model())], final_estimator=LogisticRegression(), cv=KFold(3)
        ),
        lambda: RFE(dp_model(), n_features_to_select=2),
    ],
    ids=["bagging-bootstrap", "calibrated", "stacking", "rfe"],
)
def test_wrappers_the_ledger_cannot_count_are_refused(data, wrapper):
    X, y = data
    fitted = wrapper().fit(X, y)
    assert fitted_dp_models(fitted)  # there are DP fits inside
    ledger = PrivacyLedger(delta=DELTA)
    with pytest.raises(ValueError, match=r"bootstrap|cannot count"):
        ledger.record(fitted)
    assert len(ledger) == 0


class _TwoFits(ClassifierMixin, BaseEstimator):
    """A user's own wrapper: two DP fits on halves of the data, kept in a list."""

    def __init__(self, estimator=None):
        self.estimator = estimator

    def fit(self, X, y):
        half = len(y) // 2
        self.fits_ = [
            clone(self.estimator).fit(X[:half], y[:half]),
            clone(self.estimator).fit(X[half:], y[half:]),
        ]
        self.classes_ = self.fits_[0].classes_
        return self


def test_a_users_own_wrapper_holding_dp_fits_is_refused(data):
    # Not a scikit-learn class: found by walking its fitted state, never
    # counted as zero.
    X, y = data
    fitted = _TwoFits(dp_model()).fit(X, y)
    with pytest.raises(ValueError, match="cannot count"):
        PrivacyLedger(delta=DELTA).record(fitted)


class _SpentWithoutBudget(ClassifierMixin, BaseEstimator):
    """A third-party DP model: reports what it spent, declares no budget."""

    def __init__(self, epsilon=1.0):
        self.epsilon = epsilon

    def fit(self, X, y):
        self.model_ = dp_model(self.epsilon).fit(X, y)
        self.privacy_spent_ = self.model_.privacy_spent_
        self.classes_ = self.model_.classes_
        return self

    def predict(self, X):
        return self.model_.predict(X)


def test_a_search_over_a_step_without_a_declared_budget_is_refused(data):
    # The search keeps only the refit: the other fits are charged from the
    # steps' declared budgets, so a step that reports a cost but declares
    # none leaves them unbounded. Refused, naming the step by its path.
    X, y = data
    search = GridSearchCV(
        Pipeline([("model", _SpentWithoutBudget())]),
        {"model__epsilon": [0.5, 1.0]},
        cv=KFold(3, shuffle=True, random_state=0),
    ).fit(X, y)
    ledger = PrivacyLedger(delta=DELTA)
    with pytest.raises(
        ValueError,
        match=r"^GridSearchCV/model \(_SpentWithoutBudget\) reports privacy_spent_ "
        r"but declares no privacy_budget\(\)",
    ):
        ledger.record(search)
    assert len(ledger) == 0


def test_searches_over_known_wrappers_are_charged_or_refused(data):
    # Unfitted candidates of a search: a VotingClassifier's two DP models and
    # SelectFromModel's one (plus its refit's second fit, recorded from the
    # fitted refit) are charged per training part; a OneVsRestClassifier's
    # model count depends on the labels, so the search is refused.
    X, y = data
    cv = KFold(3, shuffle=True, random_state=0)
    voting = GridSearchCV(
        VotingClassifier([("a", dp_model()), ("b", dp_model(0.5))]),
        {"a__epsilon": [0.5, 1.0]},
        cv=cv,
    ).fit(X, y)
    ledger = PrivacyLedger(delta=DELTA)
    record_quietly(ledger, voting)
    best = voting.best_params_["a__epsilon"]
    expected = 2 * (mu(0.5) ** 2 + mu(1.0) ** 2 + 2 * mu(0.5) ** 2)
    expected += mu(best) ** 2 + mu(0.5) ** 2
    assert ledger.total().mu == pytest.approx(math.sqrt(expected), rel=1e-9)

    select = GridSearchCV(
        make_pipeline(SelectFromModel(dp_model()), dp_model()),
        {"selectfrommodel__estimator__epsilon": [0.5, 1.0]},
        cv=cv,
    ).fit(X, y)
    ledger = PrivacyLedger(delta=DELTA)
    record_quietly(ledger, select)
    assert len(ledger) == 2 * 2 * 2 + 2  # 2 fits per candidate and part, refit
    refit = [c.mu for c in ledger.costs[8:]]
    expected = 2 * (mu(0.5) ** 2 + mu(1.0) ** 2 + 2 * mu(1.0) ** 2)
    expected += sum(m**2 for m in refit)
    assert ledger.total().mu == pytest.approx(math.sqrt(expected), rel=1e-9)

    ovr = GridSearchCV(
        OneVsRestClassifier(dp_model()), {"estimator__epsilon": [0.5, 1.0]}, cv=cv
    ).fit(X, y)
    with pytest.raises(ValueError, match="depends on the labels"):
        PrivacyLedger(delta=DELTA).record(ovr)


def test_search_over_bagging_is_refused(data):
    # Bagging seeds every sub-model's noise itself (the seeds stay in the
    # model), and with bootstrap one record may be drawn many times.
    X, y = data
    cv = KFold(3, shuffle=True, random_state=0)
    cases = ((False, "seeded the privacy noise"), (True, "bootstrap"))
    for bootstrap, refusal in cases:
        search = GridSearchCV(
            BaggingClassifier(dp_model(), n_estimators=2, bootstrap=bootstrap),
            {"estimator__epsilon": [0.5, 1.0]},
            cv=cv,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            search.fit(X, y)
        with pytest.raises(ValueError, match=refusal):
            PrivacyLedger(delta=DELTA).record(search)


class UserSubclass(DPLogisticRegression):
    """A user's own subclass, defined outside skdp."""


def test_a_user_subclass_is_charged_in_a_search(data):
    X, y = data
    assert UserSubclass.__module__ != "skdp"
    cv = KFold(3, shuffle=True, random_state=0)
    search = GridSearchCV(
        UserSubclass(delta=DELTA, classes=[0, 1]), {"epsilon": [0.5, 1.0]}, cv=cv
    ).fit(X, y)
    ledger = PrivacyLedger(delta=DELTA)
    record_quietly(ledger, search)
    best = search.best_params_["epsilon"]
    expected = 2 * (mu(0.5) ** 2 + mu(1.0) ** 2) + mu(best) ** 2
    assert ledger.total().mu == pytest.approx(math.sqrt(expected), rel=1e-9)


# --------------------------------------------------------------------------
# Adjacencies: each candidate's own; mixtures never composed as one (finding 5)
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def comparisons():
    from skdp.datasets import make_btl_comparisons

    pairs, y, _ = make_btl_comparisons(
        n_items=8, edge_probability=1.0, comparisons_per_edge=6, random_state=0
    )
    return pairs, y


def btl_pipeline(**params):
    from skdp.ranking import DPBradleyTerry, PairsEncoder

    return make_pipeline(
        PairsEncoder(n_items=8), DPBradleyTerry(delta=DELTA, classes=[0, 1], **params)
    )


def test_search_over_bradley_terry_keeps_the_outcome_adjacency(comparisons):
    pairs, y = comparisons
    cv = KFold(3, shuffle=True, random_state=0)
    search = GridSearchCV(
        btl_pipeline(), {"dpbradleyterry__epsilon": [0.5, 1.0]}, cv=cv
    ).fit(pairs, y)
    ledger = PrivacyLedger(delta=DELTA)
    record_quietly(ledger, search)
    assert {c.adjacency for c in ledger.costs} == {REPLACE_ONE_OUTCOME}
    assert ledger.total().adjacency == REPLACE_ONE_OUTCOME


def test_mixed_units_are_composed_only_where_one_guarantee_implies_another(
    comparisons,
):
    pairs, y = comparisons
    cv = KFold(3, shuffle=True, random_state=0)
    search = GridSearchCV(
        btl_pipeline(),
        {"dpbradleyterry__privacy_unit": ["outcome", "comparison"]},
        cv=cv,
    ).fit(pairs, y)
    ledger = PrivacyLedger(delta=DELTA)
    record_quietly(ledger, search)
    units = {c.adjacency for c in ledger.costs}
    assert units == {REPLACE_ONE_OUTCOME, REPLACE_ONE}
    assert not any("user-level" in u for u in ledger.uncovered)  # they compose
    # A record-level guarantee also holds for outcome neighbours: the total
    # is stated under the outcome adjacency, over every release.
    total = ledger.total()
    assert total.adjacency == REPLACE_ONE_OUTCOME
    assert total.mu == pytest.approx(
        math.sqrt(sum(c.mu**2 for c in ledger.costs)), rel=1e-12
    )
    separate = ledger.totals()
    assert set(separate) == units
    # Add/remove and replace-one: neither implies the other; no one total.
    mixed = PrivacyLedger(delta=DELTA)
    mixed.record(PrivacyCost.from_gdp(0.5, delta=DELTA))
    mixed.record(PrivacyCost.from_gdp(0.5, delta=DELTA, adjacency=ADD_REMOVE))
    with pytest.raises(ValueError, match="totals\\(\\)"):
        mixed.total()
    assert {t.mu for t in mixed.totals().values()} == {0.5}
    assert "under 'add or remove one record'" in repr(mixed)


# --------------------------------------------------------------------------
# A label set read from y is a stated assumption (finding 6)
# --------------------------------------------------------------------------


def test_an_inferred_label_set_is_visible_and_carried_by_the_ledger(data):
    X, y = data
    # Independent check of what the assumption hides: one record with a new
    # label changes the released label set and the schedule.
    y_new = y.copy()
    y_new[0] = 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        a = DPLogisticRegression(delta=DELTA).fit(X, y)
        b = DPLogisticRegression(delta=DELTA).fit(X, y_new)
    assert len(a.classes_) != len(b.classes_)
    assert (a.n_iter_, a.noise_multiplier_) != (b.n_iter_, b.noise_multiplier_)
    assert PUBLIC_LABELS in a.privacy_spent_.caveats
    assert PUBLIC_LABELS in str(a.privacy_spent_)
    declared = DPLogisticRegression(delta=DELTA, classes=[0, 1, 2]).fit(X, y_new)
    assert declared.privacy_spent_.caveats == ()
    ledger = PrivacyLedger(delta=DELTA)
    with pytest.warns(PrivacyLeakWarning, match="the guarantee assumes the label"):
        ledger.record(a)
    ledger.record(declared)
    assert ledger.total().caveats == (PUBLIC_LABELS,)
    assert "assuming the label set" in str(ledger.total())


# --------------------------------------------------------------------------
# A declared budget is never exceeded (finding 4)
# --------------------------------------------------------------------------


def test_a_search_over_the_paper_sampler_is_totalled_from_what_it_spends():
    # The sampler's paper mode used the classical multiplier alone, which
    # spends more than declared from ε ≈ 45 (ε = 100 spent 142.3). Recompute
    # the true total independently: fit every candidate on every fold by hand
    # and compose what each fit reports.
    from skdp import DPGaussianSampler

    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 2))
    cv = KFold(3, shuffle=True, random_state=0)
    sampler = DPGaussianSampler(
        center=None, accounting="paper", delta=DELTA, radius=4.0
    )
    search = GridSearchCV(
        sampler, {"epsilon": [1.0, 100.0]}, cv=cv, scoring=lambda *a: 0.0
    ).fit(X)
    ledger = PrivacyLedger(delta=DELTA)
    record_quietly(ledger, search)
    by_hand = []
    for epsilon in (1.0, 100.0):
        for train, _ in cv.split(X):
            fit = clone(sampler).set_params(epsilon=epsilon).fit(X[train])
            by_hand.append(fit.privacy_spent_)
            assert fit.privacy_spent_.mu <= mu(epsilon) * (1 + 1e-9)
    by_hand.append(search.best_estimator_.privacy_spent_)
    # Each record is in 2 of the 3 training parts: 2 fits per candidate (the
    # folds spend alike), plus the refit.
    true_mu = math.sqrt(
        2 * by_hand[0].mu ** 2 + 2 * by_hand[3].mu ** 2 + by_hand[-1].mu ** 2
    )
    assert ledger.total().mu >= true_mu * (1 - 1e-9)
    # At ε = 100 the guard binds: the fit spends exactly its budget; at ε = 1
    # the paper's classical multiplier adds more noise than needed.
    assert by_hand[3].mu == pytest.approx(mu(100.0), rel=1e-9)
    assert by_hand[0].mu < mu(1.0)


# --------------------------------------------------------------------------
# Budgets, parameter constraints and the budget helpers (skdp._base)
# --------------------------------------------------------------------------


def test_an_empty_ledger_totals_to_nothing():
    total = PrivacyLedger(delta=DELTA).total()
    assert total == PrivacyCost(0.0, 0.0, 0.0, REPLACE_ONE, "nothing released")
    assert repr(PrivacyLedger()) == "PrivacyLedger(empty)"


def test_privacy_budget_is_gdp_zcdp_or_a_pair_from_the_parameters():
    from skdp import DPSparseGLM
    from skdp.accounting import zcdp_from_epsilon_tight

    gdp = DPStandardScaler(epsilon=0.7, delta=DELTA).privacy_budget()
    assert (gdp.epsilon, gdp.delta, gdp.zcdp) == (0.7, DELTA, None)
    assert gdp.mu == mu(0.7) and gdp.adjacency == REPLACE_ONE
    assert gdp.caveats == ()
    secure = DPStandardScaler(epsilon=0.7, delta=DELTA, noise="secure")
    zcdp = secure.privacy_budget()
    assert zcdp.mu is None
    assert zcdp.zcdp == zcdp_from_epsilon_tight(0.7, DELTA)
    pair = DPSparseGLM(epsilon=0.7, delta=1e-5, accounting="paper").privacy_budget()
    assert (pair.epsilon, pair.delta, pair.mu, pair.zcdp) == (0.7, 1e-5, None, None)
    # Not Gaussian but accounted in zCDP (Gumbel peels and Gaussian values).
    peeled = DPSparseGLM(epsilon=0.7, delta=1e-5).privacy_budget()
    assert peeled.mu is None
    assert peeled.zcdp == zcdp_from_epsilon_tight(0.7, 1e-5)
    no_delta = DPSparseGLM(epsilon=0.7, delta=0.0).privacy_budget()
    assert (no_delta.mu, no_delta.zcdp) == (None, None)
    secure.set_params(delta=0.0)  # no Gaussian guarantee at δ = 0: the pair
    assert (secure.privacy_budget().mu, secure.privacy_budget().zcdp) == (None, None)
    labels = DPLogisticRegression(delta=DELTA).privacy_budget()
    assert labels.caveats == (PUBLIC_LABELS,)
    assert (
        DPLogisticRegression(delta=DELTA, classes=[0, 1]).privacy_budget().caveats == ()
    )


@pytest.mark.parametrize(
    "params, ok",
    [
        ({"epsilon": 1e-9}, True),
        ({"epsilon": 0.0}, False),
        ({"epsilon": -1.0}, False),
        ({"delta": 0.999}, True),
        ({"delta": 1.0}, False),
        ({"delta": -1e-12}, False),
        ({"noise": "secure"}, True),
        ({"noise": "exact"}, False),
        ({"accounting": "paper"}, True),
        ({"accounting": "fast"}, False),
        ({"random_state": np.random.default_rng(0)}, True),
        ({"random_state": "0"}, False),
    ],
    # repr of a Generator holds its address: ids must be the same in every
    # process (pytest-xdist collects in each worker).
    ids=lambda value: repr(value).split(" at 0x")[0],
)
def test_privacy_parameters_are_validated(params, ok):
    from sklearn.utils._param_validation import validate_parameter_constraints

    from skdp._base import PRIVACY_CONSTRAINTS

    values = {"epsilon": 1.0, "delta": DELTA, "accounting": "exact"}
    values |= {"random_state": None, "noise": "fast", **params}
    if ok:
        validate_parameter_constraints(PRIVACY_CONSTRAINTS, values, caller_name="t")
    else:
        with pytest.raises(ValueError, match=f"'{next(iter(params))}'"):
            validate_parameter_constraints(PRIVACY_CONSTRAINTS, values, caller_name="t")
    # δ = 0 passes the constraints; a Gaussian mechanism refuses it itself.
    zero = {**values, "delta": 0.0, **params} if "delta" not in params else None
    if ok and zero is not None:
        validate_parameter_constraints(PRIVACY_CONSTRAINTS, zero, caller_name="t")


def test_gaussian_fits_refuse_delta_zero_and_warn_from_delta_one_over_n():
    X = np.random.default_rng(0).uniform(0, 1, size=(40, 2))
    with pytest.raises(ValueError, match=r"cannot be\s*\(epsilon, 0\)-DP"):
        DPStandardScaler(delta=0.0, bounds=(0, 1)).fit(X)
    # δ ≥ 1/n may publish a record: warned at exactly 1/n, not just below.
    with pytest.warns(PrivacyLeakWarning, match="at least 1/n_samples") as rec:
        DPStandardScaler(delta=1 / 40, bounds=(0, 1)).fit(X)
    assert points_at(rec[0], __file__)  # the caller of fit
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        DPStandardScaler(delta=np.nextafter(1 / 40, 0), bounds=(0, 1)).fit(X)


def test_a_target_round_trip_check_is_named_as_a_release(data):
    # scikit-learn's TransformedTargetRegressor(check_inverse=True), its
    # default, compares inverse_transform(transform(y)) with y on every
    # tenth target and warns on a mismatch: neighbours that differ in one
    # target (beyond the bounds the private scaler clips to) differ in
    # whether the fit warns. The ledger names it; unchecked, or with no
    # transform of y at all, it does not.
    X, _ = data
    y = np.clip((X[:, 0] - 50.0) / 10.0, -2.0, 2.0)  # within the bounds

    def ttr(**params):
        return TransformedTargetRegressor(
            regressor=DPRandomFeaturesRegressor(50, delta=DELTA),
            transformer=DPStandardScaler(delta=DELTA, bounds=(-3.0, 3.0)),
            **params,
        )

    outlier = y.copy()
    outlier[0] = 100.0  # row 0 is among those checked (every n // 10-th)
    for target, warns in ((y, False), (outlier, True)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fitted = ttr().fit(X, target)
        mismatch = [w for w in caught if "not strictly inverse" in str(w.message)]
        assert len(mismatch) == warns
    messages = record_quietly(PrivacyLedger(delta=DELTA), fitted)
    assert len(messages) == 1
    assert messages[0].startswith(
        "TransformedTargetRegressor (TransformedTargetRegressor) has "
        "check_inverse=True: its fit compares inverse_transform(transform(y)) "
        "with y on every tenth training target"
    )
    # Inside a pipeline, by its path; declared (a search's candidates) too.
    with pytest.warns(UserWarning, match="not strictly inverse"):
        piped = make_pipeline(StandardScaler(), ttr()).fit(X, outlier)
    messages = record_quietly(PrivacyLedger(delta=DELTA), piped)
    assert any(
        m.startswith("Pipeline/transformedtargetregressor (TransformedTarget")
        and "check_inverse=True" in m
        for m in messages
    )
    search = GridSearchCV(
        ttr(), {"regressor__epsilon": [0.5]}, cv=KFold(2), refit=False
    ).fit(X, y)
    messages = record_quietly(PrivacyLedger(), search)
    assert any("check_inverse=True" in m for m in messages)
    # Unchecked: nothing named.
    quiet = ttr(check_inverse=False).fit(X, outlier)
    assert record_quietly(PrivacyLedger(delta=DELTA), quiet) == []
    # No transform of y: the check compares y with itself.
    identity = TransformedTargetRegressor(
        regressor=DPRandomFeaturesRegressor(50, delta=DELTA)
    ).fit(X, y)
    assert record_quietly(PrivacyLedger(delta=DELTA), identity) == []


def _categorical_table(n_unknown, n=100):
    """One numeric column and one of five known categories, ``n_unknown`` rows
    of an unknown one: with a sparse one-hot encoding (handle_unknown="ignore")
    the share of stored values is (2n - n_unknown) / 6n, 0.3 at 20 of 100."""
    rng = np.random.default_rng(0)
    X = np.empty((n, 2), dtype=object)
    X[:, 0] = rng.normal(size=n)
    X[:, 1] = rng.choice(list("abcde"), size=n)
    X[:n_unknown, 1] = "z"
    return X, np.arange(n) % 2


def _one_hot_pipeline(sparse_threshold=0.3, in_pipeline=False, **encoder):
    encoder = {"categories": [list("abcde")], **encoder}
    cat = OneHotEncoder(**encoder)
    if in_pipeline:  # the usual imputer, then the encoder
        fill = SimpleImputer(
            strategy="constant", fill_value="a", keep_empty_features=True
        )
        cat = make_pipeline(fill, cat)
    pre = ColumnTransformer(
        [
            ("num", DPStandardScaler(delta=DELTA, bounds=(-5.0, 5.0)), [0]),
            ("cat", cat, [1]),
        ],
        sparse_threshold=sparse_threshold,
    )
    return make_pipeline(pre, DPLogisticRegression(delta=DELTA, classes=[0, 1]))


def test_a_sparse_or_dense_choice_read_from_the_values_is_named():
    # ColumnTransformer stacks sparse when the share of stored values is
    # below sparse_threshold. An encoder that ignores unknown categories
    # stores nothing for them, so neighbours (one more unknown) flip the
    # choice, and DPLogisticRegression's automatic schedule follows the
    # container: its clip differs between them. The ledger names it on
    # both sides, with the same message; with sparse_threshold=0 the choice
    # is fixed and silent.
    fits = [
        _one_hot_pipeline(handle_unknown="ignore").fit(*_categorical_table(k))
        for k in (20, 21)
    ]
    assert [f[0].sparse_output_ for f in fits] == [False, True]
    assert [f[-1].clip_norm_ for f in fits] == [1.0, 0.5]
    named = []
    for fitted in fits:
        messages = record_quietly(PrivacyLedger(delta=DELTA), fitted)
        named.append([m for m in messages if "sparse_threshold=0.3" in m])
        assert len(named[-1]) == 1
        # The DP scaler's output is always dense: not named.
        assert named[-1][0].startswith(
            "Pipeline/columntransformer (ColumnTransformer) has "
            "sparse_threshold=0.3 and parts that may return a sparse matrix "
            "('cat'):"
        )
    assert named[0] == named[1]
    fixed = _one_hot_pipeline(0.0, handle_unknown="ignore")
    assert record_quietly(
        PrivacyLedger(delta=DELTA), fixed.fit(*_categorical_table(21))
    ) == [m for m in messages if "sparse_threshold" not in m]


@pytest.mark.parametrize(
    "encoder, sparse_threshold, varies",
    [
        # A sparse encoder may return a sparse matrix, whatever it drops or
        # ignores (scikit-learn decides from the stored share): the rule
        # reads the structure only. (The old rule let a sparse encoder that
        # stores one value per row keep the threshold.)
        ({}, 0.3, True),
        ({"handle_unknown": "ignore"}, 0.3, True),
        ({"drop": "first"}, 0.3, True),
        ({"drop": "first", "sparse_output": False}, 0.3, False),  # dense
        ({"drop": "first"}, 0.0, False),  # always dense
        ({"handle_unknown": "ignore"}, 1.0, True),
        ({"handle_unknown": "ignore", "in_pipeline": True}, 0.3, True),
        ({"in_pipeline": True, "sparse_output": False}, 0.3, False),
    ],
)
def test_which_encoders_make_the_container_depend_on_the_values(
    encoder, sparse_threshold, varies
):
    from skdp._ledger import container_from_density

    pre = _one_hot_pipeline(sparse_threshold, **encoder)[0]
    assert container_from_density(pre) == (["cat"] if varies else [])
    # A search's candidates (walked unfitted) are named the same way.
    search = GridSearchCV(
        _one_hot_pipeline(sparse_threshold, **encoder),
        {"dplogisticregression__epsilon": [1.0]},
        cv=KFold(2),
        refit=False,
    )
    X, y = _categorical_table(0)
    X[:, 1] = np.resize(["a", "b"], 100)  # known to every encoder above
    messages = record_quietly(PrivacyLedger(), search.fit(X, y))
    assert any("may return a sparse matrix" in m for m in messages) == varies


def test_a_passed_through_input_is_named_whichever_container_the_fit_chose():
    # A sparse input passed through at the threshold: one record flips the
    # container (dense, then sparse), and the clip follows it. The ledger
    # names the ColumnTransformer on both sides with the same message: its
    # warning reads the parameters, never the outcome (the old check named
    # only a sparse outcome, so its silence told the container).
    from _containers import boundary_sparse

    X, neighbour, y = boundary_sparse()
    pre = ColumnTransformer([("keep", "passthrough", list(range(10)))])
    named = []
    for data, sparse in ((X, False), (neighbour, True)):
        model = DPLogisticRegression(delta=DELTA, classes=[0, 1])
        fitted = make_pipeline(clone(pre), model)
        fitted.fit(data, y)
        assert fitted[0].sparse_output_ is sparse
        messages = record_quietly(PrivacyLedger(delta=DELTA), fitted)
        named.append([m for m in messages if "(ColumnTransformer) has" in m])
    assert named[0] == named[1]
    assert len(named[0]) == 1 and "('keep')" in named[0][0]
    # A dense input passed through is named too: the ledger cannot see it.
    dense = make_pipeline(clone(pre), DPLogisticRegression(delta=DELTA, classes=[0, 1]))
    messages = record_quietly(PrivacyLedger(delta=DELTA), dense.fit(X.toarray(), y))
    assert named[0][0] in messages


@pytest.mark.parametrize("variant", sorted(_containers.VARIANTS))
def test_every_part_that_may_return_a_sparse_matrix_is_named(variant):
    # Each way a part can hand a sparse matrix to the stacking (a pass-
    # through, the remainder passed through, an encoder one level down or
    # in a FeatureUnion, a sparse MissingIndicator, a row-wise function
    # returning CSR) is named on a fit whose output was dense, and on a
    # search's candidates; with sparse_threshold=0 nothing is.
    make, parts = _containers.VARIANTS[variant]
    X, y = _containers.table()

    def fitted(**params):
        pre = make().set_params(**params)
        model = DPLogisticRegression(delta=DELTA, classes=[0, 1])
        return make_pipeline(pre, model).fit(X, y)

    pipe = fitted()
    assert not pipe[0].sparse_output_  # dense this time
    messages = record_quietly(PrivacyLedger(delta=DELTA), pipe)
    named = [m for m in messages if "may return a sparse matrix" in m]
    assert len(named) == 1
    assert f"({', '.join(repr(p) for p in parts)})" in named[0]
    search = GridSearchCV(
        make_pipeline(make(), DPLogisticRegression(delta=DELTA, classes=[0, 1])),
        {"dplogisticregression__epsilon": [1.0]},
        cv=KFold(2),
        refit=False,
    )
    messages = record_quietly(PrivacyLedger(), search.fit(X, y))
    assert any("may return a sparse matrix" in m for m in messages)
    messages = record_quietly(PrivacyLedger(delta=DELTA), fitted(sparse_threshold=0))
    assert not any("sparse" in m for m in messages), messages


def test_search_over_a_target_transformer_charges_its_dp_transformer(data):
    # An unfitted TransformedTargetRegressor candidate fits its transformer
    # too: a DP transformer is charged once per training part, like the
    # regressor. Without a refit, the default LinearRegression and a checked
    # func/inverse_func pair are named as leaks from the parameters alone.
    X, _ = data
    cv = KFold(3, shuffle=True, random_state=0)
    ttr = TransformedTargetRegressor(
        regressor=DPRandomFeaturesRegressor(50, delta=DELTA),
        transformer=DPStandardScaler(epsilon=0.4, delta=DELTA),
    )
    search = GridSearchCV(ttr, {"regressor__epsilon": [0.5, 1.0]}, cv=cv)
    search.fit(X, X[:, 0])
    ledger = PrivacyLedger(delta=DELTA)
    record_quietly(ledger, search)
    best = search.best_params_["regressor__epsilon"]
    expected = 2 * (mu(0.5) ** 2 + mu(1.0) ** 2 + 2 * mu(0.4) ** 2)
    expected += mu(best) ** 2 + mu(0.4) ** 2
    assert len(ledger) == 2 * 2 * 2 + 2
    assert ledger.total().mu == pytest.approx(math.sqrt(expected), rel=1e-9)

    plain = TransformedTargetRegressor(func=np.log1p, inverse_func=np.expm1)
    for check_inverse in (True, False):
        search = GridSearchCV(
            plain, {"check_inverse": [check_inverse]}, cv=cv, refit=False
        ).fit(np.abs(X[:60]), np.abs(X[:60, 0]))
        messages = record_quietly(PrivacyLedger(), search)
        assert any("/regressor (LinearRegression)" in m for m in messages)
        # Unchecked, the pair is applied to nothing of the data: no leak.
        leaks = [m for m in messages if "/transformer (FunctionTransformer)" in m]
        assert len(leaks) == check_inverse


def test_a_fit_is_checked_against_its_budget_in_the_budgets_own_terms():
    # skdp._base._check_within_budget, branch by branch, at the edge of its
    # 1e-9 relative slack: μ against a GDP budget, ρ against a zCDP budget,
    # a GDP report against a pair budget (its ε at the budget's δ), a pair
    # against a pair; and the adjacency a fit may report.
    from skdp._base import _check_within_budget
    from skdp.accounting import REPLACE_ONE_USER
    from skdp.exceptions import MechanismFailedError

    def ok(spent, budget):
        _check_within_budget(spent, budget, "Est")

    def refused(spent, budget):
        with pytest.raises(MechanismFailedError):
            _check_within_budget(spent, budget, "Est")

    gdp = PrivacyCost.from_gdp(0.5, delta=DELTA)
    ok(PrivacyCost.from_gdp(0.5 * (1 + 5e-10), delta=DELTA), gdp)
    refused(PrivacyCost.from_gdp(0.5 * (1 + 2e-9), delta=DELTA), gdp)
    refused(PrivacyCost(0.1, DELTA), gdp)  # no μ: cannot be checked in μ
    zcdp = PrivacyCost(1.0, DELTA, zcdp=0.02)
    ok(PrivacyCost(5.0, DELTA, zcdp=0.02 * (1 + 5e-10)), zcdp)
    ok(PrivacyCost.from_gdp(0.2, delta=DELTA), zcdp)  # ρ = μ²/2 = 0.02
    refused(PrivacyCost(0.1, DELTA, zcdp=0.02 * (1 + 2e-9)), zcdp)
    refused(PrivacyCost(0.1, DELTA), zcdp)  # no ρ
    pair = PrivacyCost(1.0, 1e-5)
    at_budget = mu_from_epsilon(1.0, 1e-5)
    ok(PrivacyCost.from_gdp(at_budget * (1 - 1e-10), delta=1e-9), pair)
    refused(PrivacyCost.from_gdp(at_budget * (1 + 1e-6), delta=1e-9), pair)
    ok(PrivacyCost(1.0 * (1 + 5e-10), 1e-5 * (1 + 5e-10)), pair)
    refused(PrivacyCost(1.0 * (1 + 2e-9), 1e-5), pair)
    refused(PrivacyCost(1.0, 1e-5 * (1 + 2e-9)), pair)
    # A user-level budget may be met at the record level (a DPFedRep fit
    # without user ids), never the other way round.
    user = replace(gdp, adjacency=REPLACE_ONE_USER)
    ok(gdp, user)
    refused(replace(gdp, adjacency=REPLACE_ONE_USER), gdp)
    refused(replace(gdp, adjacency=ADD_REMOVE), gdp)
    with pytest.raises(MechanismFailedError, match="Est would release more"):
        _check_within_budget(PrivacyCost.from_gdp(1.0, delta=DELTA), gdp, "Est")


class _HelperHolder(ClassifierMixin, BaseEstimator):
    """A user's wrapper whose DP fit sits only inside a scikit-learn helper
    object (not an estimator), as CalibratedClassifierCV keeps its fits."""

    def __init__(self, epsilon=1.0):
        self.epsilon = epsilon

    def fit(self, X, y):
        from sklearn.calibration import _CalibratedClassifier

        model = dp_model(self.epsilon).fit(X, y)
        self.calibrated_ = [_CalibratedClassifier(model, [], classes=model.classes_)]
        self.classes_ = model.classes_
        return self


def test_a_dp_fit_held_by_a_scikit_learn_helper_object_is_found(data):
    # The walk that refuses unknown wrappers looks inside scikit-learn's
    # helper objects too; missing it would count the DP fit as zero and only
    # warn of a non-private step.
    X, y = data
    fitted = _HelperHolder().fit(X, y)
    ledger = PrivacyLedger(delta=DELTA)
    with pytest.raises(ValueError, match=r"_HelperHolder\).*LogisticRegression"):
        ledger.record(fitted)
    assert len(ledger) == 0


class _DeepHolder(ClassifierMixin, BaseEstimator):
    """A user's wrapper that keeps its DP fit under many levels of lists."""

    def __init__(self, levels=12):
        self.levels = levels

    def fit(self, X, y):
        model = dp_model().fit(X, y)
        held = model
        for _ in range(self.levels):
            held = [held]
        self.held_ = held
        self.classes_ = model.classes_
        return self


@pytest.mark.parametrize("levels", [1, 12, 200])
def test_a_dp_fit_nested_at_any_depth_in_an_unknown_wrapper_is_refused(data, levels):
    # The walk used to stop at depth 8: a DP fit nested deeper was not found,
    # so the wrapper was recorded as a non-private step (a leak warning, a
    # total of 0) instead of being refused.
    X, y = data
    fitted = _DeepHolder(levels).fit(X, y)
    ledger = PrivacyLedger(delta=DELTA)
    with pytest.raises(ValueError, match=r"_DeepHolder\).*LogisticRegression"):
        ledger.record(fitted)
    assert len(ledger) == 0


def test_repr_and_leak_warnings_point_at_what_was_recorded(data):
    gdp = PrivacyLedger(delta=1e-5).record(PrivacyCost.from_gdp(0.5, delta=1e-5))
    eps = epsilon_from_mu(0.5, 1e-5)  # 1.9930918...: printed rounded up
    assert f"{eps:.6g}" == "1.99309"
    assert repr(gdp) == "PrivacyLedger(1 releases: (1.9931, 1e-05)-DP, mu=0.5)"
    pair = PrivacyLedger().record(PrivacyCost(1.0, 1e-5)).record(PrivacyCost(1.0, 0))
    assert repr(pair) == "PrivacyLedger(2 releases: (2, 1e-05)-DP)"
    # A leak warning is attributed to the line that called record().
    X, y = data
    pipe = make_pipeline(StandardScaler(), dp_model()).fit(X, y)
    with pytest.warns(PrivacyLeakWarning, match="standardscaler") as rec:
        PrivacyLedger(delta=DELTA).record(pipe)
    assert rec and all(points_at(w, __file__) for w in rec)


# --------------------------------------------------------------------------
# Issue 29, item 6: explicit splits are counted by multiplicity or refused
# --------------------------------------------------------------------------


def _quiet_scaler(epsilon=1.0):
    return DPStandardScaler(epsilon=epsilon, bounds=(0.0, 1.0), delta=DELTA)


def _zero_score(estimator, X, y=None):
    return 0.0


@pytest.fixture(scope="module")
def small():
    return np.random.default_rng(0).uniform(size=(30, 2))


def _multiplicity(splits, n):
    """Independent count: m[p, i] = how often record i is in training part p.

    Masks select rows; negative indices name row n + i, as numpy's do.
    """
    m = np.zeros((len(splits), n), dtype=int)
    for p, (train, _) in enumerate(splits):
        train = np.asarray(train)
        if train.dtype == bool:
            train = np.flatnonzero(train)
        np.add.at(m[p], train.astype(int) % n, 1)
    return m


def test_a_bootstrap_split_is_refused_not_counted_once(small):
    # Two training parts, each holding record 0 three times: a fit sees a
    # group of three copies (3μ under μ-GDP), so record 0 spends
    # sqrt(2·9)·μ over the two, not sqrt(2)·μ. Today's count read each part
    # as a set.
    splits = [
        (np.array([0, 0, 0, 1, 2, 3]), np.array([4, 5])),
        (np.array([0, 0, 0, 4, 5, 6]), np.array([1, 2])),
    ]
    search = GridSearchCV(
        _quiet_scaler(), {"epsilon": [1.0]}, cv=splits, scoring=_zero_score
    ).fit(small)
    ledger = PrivacyLedger(delta=DELTA)
    with pytest.raises(ValueError, match="repeats rows"):
        record_quietly(ledger, search)
    assert len(ledger) == 0
    result = cross_validate(
        _quiet_scaler(), small, cv=splits, scoring=_zero_score, return_estimator=True
    )
    with pytest.raises(ValueError, match="split 0 repeats rows"):
        ledger.record(result, cv=splits)
    assert len(ledger) == 0


def test_negative_indices_and_masks_in_explicit_splits(small):
    n = len(small)
    # -1 is row n - 1: in both training parts, not once in each of two rows.
    negative = [
        (np.array([-1, 1, 2]), np.array([3])),
        (np.array([n - 1, 4, 5]), np.array([6])),
    ]
    search = GridSearchCV(
        _quiet_scaler(), {"epsilon": [1.0]}, cv=negative, scoring=_zero_score
    ).fit(small)
    with pytest.raises(ValueError, match="negative row indices"):
        record_quietly(PrivacyLedger(), search)
    # A boolean mask selects rows: counted as the rows it selects.
    masks = [np.arange(n) < n // 2, np.arange(n) >= n // 3, np.arange(n) >= n // 3]
    splits = [(mask, ~mask) for mask in masks]
    search = GridSearchCV(
        _quiet_scaler(), {"epsilon": [1.0]}, cv=splits, scoring=_zero_score
    ).fit(small)
    ledger = PrivacyLedger(delta=DELTA)
    record_quietly(ledger, search)
    assert len(ledger) == 3 + 1  # rows n/3..n/2 are in all three parts; refit
    # A generator of splits is used up by the fit: refused, with the fix.
    search = GridSearchCV(
        _quiet_scaler(), {"epsilon": [1.0]}, cv=iter(splits), scoring=_zero_score
    ).fit(small)
    with pytest.raises(ValueError, match="Pass a list"):
        record_quietly(PrivacyLedger(), search)


def _random_splits(seed, n):
    """Explicit splits of many kinds: repeats, overlaps, masks, PredefinedSplit."""
    from sklearn.model_selection import PredefinedSplit

    rng = np.random.default_rng(seed)
    kind = ("repeats", "overlaps", "masks", "predefined", "negative", "tuple")[seed % 6]
    k = int(rng.integers(1, 6))
    if kind == "predefined":
        cv = PredefinedSplit(rng.integers(-1, k, n))
        return cv, list(cv.split())
    splits = []
    for _ in range(k):
        size = int(rng.integers(2, n))
        if kind == "repeats" or (kind == "overlaps" and rng.random() < 0.2):
            train = rng.integers(0, n, size)  # with replacement
        else:
            train = rng.choice(n, size, replace=False)
        if kind == "negative" and rng.random() < 0.7:
            train = train - n * (rng.random(size) < 0.5)
        test = np.setdiff1d(np.arange(n), train % n)[:3]
        if test.size == 0:
            test = np.array([int(rng.integers(0, n))])
        if kind == "masks":
            mask = np.zeros(n, dtype=bool)
            mask[train] = True
            train = mask
        splits.append((train, test))
    return (tuple(splits) if kind == "tuple" else splits), splits


@pytest.mark.parametrize("seed", range(36))
def test_fuzz_explicit_splits_never_undercount(small, seed):
    # The truth, by group privacy: record i, present m times in training
    # part p, is a group of m for that fit (m·μ under μ-GDP), so it spends
    # sum_p m[p, i]² μ² over the fits. The ledger's total must cover the
    # worst record, or the ledger must refuse and stay empty.
    n = len(small)
    cv, splits = _random_splits(seed, n)
    m = _multiplicity(splits, n)
    m_sq = (m**2).sum(axis=0)
    # Splits of distinct non-negative rows are countable: never refused.
    countable = m.max() <= 1 and not any(
        np.asarray(tr).dtype != bool and (np.asarray(tr) < 0).any() for tr, _ in splits
    )
    epsilons = [0.5, 1.0]
    search = GridSearchCV(
        _quiet_scaler(), {"epsilon": epsilons}, cv=cv, scoring=_zero_score
    ).fit(small)
    candidates = sum(mu(e) ** 2 for e in epsilons)
    refit = mu(search.best_params_["epsilon"]) ** 2
    truth = (m_sq * candidates).max() + refit
    ledger = PrivacyLedger(delta=DELTA)
    try:
        record_quietly(ledger, search)
    except ValueError:
        assert len(ledger) == 0
        assert not countable
    else:
        assert ledger.total().mu ** 2 >= truth * (1 - 1e-12)
        # Exact for distinct rows: the worst record's count, no more.
        assert ledger.total().mu ** 2 == pytest.approx(truth, rel=1e-9)

    result = cross_validate(
        _quiet_scaler(),
        small,
        cv=cv,
        scoring=_zero_score,
        return_estimator=True,
        return_indices=(seed // 6) % 2 == 0,
    )
    truth = (m_sq * mu(1.0) ** 2).max()
    ledger = PrivacyLedger(delta=DELTA)
    try:
        ledger.record(result, cv=cv)
    except ValueError:
        assert len(ledger) == 0
        assert not countable
    else:
        assert ledger.total().mu ** 2 >= truth * (1 - 1e-12)


def test_the_fuzz_covers_every_kind_of_split(small):
    # Accepted and refused cases both occur, so the fuzz tests both paths.
    outcomes = set()
    for seed in range(36):
        _, splits = _random_splits(seed, len(small))
        repeats = (_multiplicity(splits, len(small)) > 1).any()
        outcomes.add((seed % 6, bool(repeats)))
    assert {kind for kind, _ in outcomes} == set(range(6))
    assert (0, True) in outcomes and (1, True) in outcomes and (1, False) in outcomes


def test_every_fold_model_of_cross_validate_is_charged(data):
    # A record is in k - 1 of KFold's training parts, but the ledger cannot
    # check that each fold model is still the fit on its own fold: one
    # refitted on all rows holds the test fold's records too (review: a
    # charge of k - 1 undercounted it, and a result missing fold models).
    X, y = data
    kfold = KFold(5, shuffle=True, random_state=0)
    model = DPLogisticRegression(delta=DELTA, classes=[0, 1])
    result = cross_validate(
        model, X, y, cv=kfold, return_estimator=True, return_indices=True
    )
    result["estimator"][0].fit(X, y)
    ledger = PrivacyLedger(delta=DELTA)
    record_quietly(ledger, result, cv=kfold)
    assert len(ledger) == 5
    assert ledger.total().mu == pytest.approx(math.sqrt(5) * mu(1.0), rel=1e-9)
    short = {"estimator": result["estimator"][:3]}
    ledger = PrivacyLedger(delta=DELTA)
    record_quietly(ledger, short, cv=kfold)
    assert ledger.total().mu == pytest.approx(math.sqrt(3) * mu(1.0), rel=1e-9)


def test_a_cross_validate_result_is_checked_against_the_cv_given(data):
    X, y = data
    model = DPLogisticRegression(delta=DELTA, classes=[0, 1])
    stratified = cross_validate(
        model, X, y, cv=StratifiedKFold(3), return_estimator=True, return_indices=True
    )
    # The folds came from StratifiedKFold; claiming KFold is caught.
    with pytest.raises(ValueError, match="does not make the folds"):
        PrivacyLedger().record(stratified, cv=KFold(3))
    kfold = KFold(3, shuffle=True, random_state=0)
    folds = cross_validate(
        model, X, y, cv=kfold, return_estimator=True, return_indices=True
    )
    ledger = PrivacyLedger(delta=DELTA).record(folds, cv=kfold)
    assert len(ledger) == 3
    with pytest.raises(ValueError, match="does not make the folds"):
        PrivacyLedger().record(folds, cv=KFold(3, shuffle=True, random_state=1))
    with pytest.raises(ValueError, match="integer random_state"):
        PrivacyLedger().record(folds, cv=KFold(3, shuffle=True))
    with pytest.raises(ValueError, match="does not make the folds"):
        PrivacyLedger().record(folds, cv=KFold(4, shuffle=True, random_state=0))
    with pytest.raises(ValueError, match="does not make the folds"):
        PrivacyLedger().record(folds, cv=KFold(len(X) + 1))  # cannot split n
    # A fold model left out of the result is not a fold that cost nothing.
    short = {**folds, "estimator": folds["estimator"][:2]}
    with pytest.raises(ValueError, match="does not make the folds"):
        PrivacyLedger().record(short, cv=kfold)
    # An explicit list is compared split by split, in any order within a part.
    splits = [(np.sort(tr)[::-1], te) for tr, te in kfold.split(X)]
    folds = cross_validate(
        model, X, y, cv=splits, return_estimator=True, return_indices=True
    )
    PrivacyLedger().record(folds, cv=[(np.sort(tr), te) for tr, te in splits])
    with pytest.raises(ValueError, match="does not make the folds"):
        PrivacyLedger().record(folds, cv=[*splits[:2], splits[0]])


# --------------------------------------------------------------------------
# Issue 29, item 7: a FunctionTransformer's func must be row-wise
# --------------------------------------------------------------------------


def test_a_function_that_mixes_rows_moves_every_row():
    # Why the mark matters: after sklearn.preprocessing.scale, neighbouring
    # data sets (one record replaced) differ in every row, not one.
    from sklearn.preprocessing import scale

    X = np.random.default_rng(0).normal(size=(20, 2))
    X_neighbour = X.copy()
    X_neighbour[0] = [10.0, -10.0]
    moved = np.any(scale(X) != scale(X_neighbour), axis=1)
    assert moved.all()
    moved = np.any(np.log1p(np.abs(X)) != np.log1p(np.abs(X_neighbour)), axis=1)
    assert moved.sum() == 1


@pytest.mark.parametrize(
    "func, silent",
    [
        (None, True),
        (np.log1p, True),
        (np.abs, True),
        (rowwise(lambda X: np.clip(X, 0, 1)), True),
        (lambda X: np.clip(X, 0, 1), False),
        ("scale", False),
    ],
    ids=["identity", "log1p", "abs", "marked", "unmarked", "scale"],
)
def test_function_transformer_funcs_must_be_marked_rowwise(func, silent):
    from sklearn.preprocessing import scale

    if func == "scale":
        func = scale
    X = np.abs(np.random.default_rng(0).normal(size=(40, 2)))
    step = FunctionTransformer(func)
    pipe = Pipeline([("step", step), ("model", _quiet_scaler())]).fit(X)
    messages = record_quietly(PrivacyLedger(), pipe)
    assert (messages == []) is silent
    assert _reads_only_shape(step) is silent
    if not silent:
        assert "not marked row-wise" in messages[0]
        assert "skdp.rowwise" in messages[0]
        # The private search refuses it through the same list.
        from skdp.model_selection import DPRandomSearchCV

        search = DPRandomSearchCV(
            make_pipeline(step, dp_model()), {"dplogisticregression__clip_norm": [1.0]}
        )
        with pytest.raises(TypeError, match="not a DP estimator"):
            search.fit(X, (X[:, 0] > 0.5).astype(int))


def test_only_element_wise_ufuncs_pass_as_rowwise():
    # A generalized ufunc has core dimensions and works on whole sub-arrays,
    # which may mix rows (a review: any ufunc passed): np.matmul.
    from skdp._ledger import _is_rowwise

    assert np.matmul.signature is not None
    assert not _is_rowwise(np.matmul)
    assert _is_rowwise(np.log1p) and _is_rowwise(np.add)


def test_rowwise_marks_and_keeps_the_function_picklable():
    def first_column(X):
        return X[:, :1]

    assert rowwise(first_column) is first_column
    assert first_column.__skdp_rowwise__ is True
    wrapped = rowwise(max)  # a builtin cannot carry the mark
    assert wrapped is not max and wrapped(1, 3) == 3
    assert wrapped(1, 3, key=lambda v: -v) == 1
    assert pickle.loads(pickle.dumps(wrapped))(2, 5) == 5
    assert "rowwise(" in repr(wrapped)
    import operator

    step = FunctionTransformer(rowwise(operator.abs))  # a builtin, wrapped
    assert _reads_only_shape(step) and _reads_only_shape(clone(step))
    assert not _reads_only_shape(FunctionTransformer(operator.abs))
    with pytest.raises(TypeError, match="marks a callable; got int"):
        rowwise(3)
    import skdp

    assert skdp.rowwise is rowwise and "rowwise" in skdp.__all__


def test_a_column_selector_that_reads_values_warns():
    import pandas as pd
    from sklearn.compose import make_column_selector

    X = (
        pd.DataFrame(
            np.abs(np.random.default_rng(0).normal(size=(40, 3))), columns=list("abc")
        )
        / 4
    )

    def by_mean(frame):  # reads every record's values
        return [c for c in frame.columns if frame[c].mean() > 0.2]

    def first_two(frame):
        return list(frame.columns[:2])

    cases = [
        (["a", "b"], True),
        (make_column_selector(pattern="[ab]"), True),  # names only
        (rowwise(first_two), True),
        (by_mean, False),
    ]
    for columns, silent in cases:
        ct = ColumnTransformer([("dp", _quiet_scaler(), columns)])
        messages = record_quietly(PrivacyLedger(), ct.fit(X))
        assert (messages == []) is silent, columns
        if not silent:
            assert "column selector of 'dp'" in messages[0]
            assert "by_mean" in messages[0]
    # A dtype selector reads no value, but pandas infers dtypes from values:
    # the guarantee assumes them public, and the ledger says so (review,
    # 2026-11-27: one record of "unknown" made a numeric column str, and
    # the model's shape showed it).
    neighbour = X.astype(object)
    neighbour.loc[0, "a"] = "unknown"
    neighbour = pd.DataFrame({c: pd.Series(list(neighbour[c])) for c in "abc"})
    by_dtype = make_column_selector(dtype_include=np.number)
    assert by_dtype(X) == ["a", "b", "c"] and by_dtype(neighbour) == ["b", "c"]
    for selector in (by_dtype, make_column_selector(dtype_exclude=object)):
        ct = ColumnTransformer([("dp", _quiet_scaler(), selector)])
        messages = record_quietly(PrivacyLedger(), ct.fit(X))
        assert len(messages) == 1
        assert messages[0].startswith("ColumnTransformer: the guarantee assumes")
        assert "read_csv(dtype=...)" in messages[0]
    # SelectFromModel's max_features may be a function of X too.
    for max_features, silent in ((lambda X: 1, False), (rowwise(lambda X: 1), True)):
        selector = SelectFromModel(dp_model(), max_features=max_features)
        y = (X["a"] > X["a"].median()).astype(int)
        messages = record_quietly(PrivacyLedger(), selector.fit(X, y))
        assert any("max_features" in m for m in messages) is not silent


# --------------------------------------------------------------------------
# Issue 29, item 8: a noise seed the user did not give is named
# --------------------------------------------------------------------------


def test_bagging_that_seeds_its_dp_models_is_refused(data):
    # The seeds stay in the fitted model: whoever holds it can regenerate the
    # noise and subtract it. Named and refused (a review: only a warning, and
    # a total that cannot hold).
    X, y = data

    def refusal(bagging):
        with pytest.warns(PrivacyLeakWarning):  # each seeded fit warns
            bagging.fit(X, y)
        with pytest.raises(ValueError, match="seeded the privacy noise") as raised:
            PrivacyLedger(delta=DELTA).record(bagging)
        return str(raised.value)

    message = refusal(
        BaggingClassifier(dp_model(), n_estimators=3, bootstrap=False, max_samples=0.5)
    )
    assert "3 DP fit(s)" in message and "global random state" in message
    assert "estimators_[2] (DPLogisticRegression)) from NumPy's" in message
    assert "no total covers it" in message
    # More than three seeded fits: the first three are named, then "...".
    message = refusal(BaggingClassifier(dp_model(), n_estimators=4, bootstrap=False))
    shown = ", ".join(f"estimators_[{i}] (DPLogisticRegression)" for i in range(3))
    assert (
        f"seeded the privacy noise of 4 DP fit(s) it holds ({shown}, ...) from "
        "NumPy's global random state" in message
    )
    # A seed given to the bagging is still not one given to the DP models.
    message = refusal(
        BaggingClassifier(dp_model(), n_estimators=2, bootstrap=False, random_state=0)
    )
    assert "its own random_state=0" in message
    # A pipeline inside the bagging: the seeded step is named by its key.
    message = refusal(
        BaggingClassifier(
            make_pipeline(StandardScaler(), dp_model()), n_estimators=2, bootstrap=False
        )
    )
    assert "dplogisticregression__random_state" in message


def test_wrappers_that_keep_the_users_seeds_are_not_named(data):
    X, y = data
    seeded = [
        ("a", DPLogisticRegression(delta=DELTA, classes=[0, 1], random_state=1)),
        ("b", DPLogisticRegression(delta=DELTA, classes=[0, 1], random_state=2)),
    ]
    for wrapper in (
        VotingClassifier([("a", dp_model()), ("b", dp_model(0.5))]),
        VotingClassifier(seeded),
        OneVsRestClassifier(seeded[0][1]),
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            wrapper.fit(X, y)
        messages = record_quietly(PrivacyLedger(delta=DELTA), wrapper)
        assert not any("seeded the privacy noise" in m for m in messages)


# --------------------------------------------------------------------------
# Issue 29, item 9: what can never be recorded says so
# --------------------------------------------------------------------------


def test_results_that_keep_no_models_are_refused_by_name(data):
    from sklearn.inspection import permutation_importance
    from sklearn.model_selection import cross_val_predict, learning_curve

    X, y = data
    X, y = X[:300], y[:300]
    model = dp_model()
    kfold = KFold(3, shuffle=True, random_state=0)
    predictions = cross_val_predict(model, X, y, cv=kfold)
    curve = learning_curve(model, X, y, cv=kfold, train_sizes=[0.5, 1.0])
    importance = permutation_importance(
        model.fit(X, y), X, y, n_repeats=2, random_state=0
    )
    for result, name in (
        (predictions, "cross_val_predict"),
        (curve, "learning_curve"),
        (importance, "permutation_importance"),
    ):
        ledger = PrivacyLedger()
        with pytest.raises(TypeError, match=name):
            ledger.record(result)
        assert len(ledger) == 0


def test_explicit_split_lists_at_their_edges():
    from skdp._ledger import training_parts_per_record

    def count(splits):
        return training_parts_per_record(
            splits, len(splits), classifier=True, owner="test"
        )

    # An empty list, an empty training part (a plain list, as floats), masks.
    assert count([]) == 0
    assert count([([], [0]), ([1, 2], [0]), (np.array([1]), [0])]) == 2
    assert count(((np.array([True, False, True]), [1]), ([2], [0]))) == 2
    for bad, match in (
        ([(np.array([0.0, 1.0]), [2])], "not a 1-d array"),
        ([(np.array([[0, 1]]), [2])], "not a 1-d array"),
        ([([0, 1, 1], [2])], "repeats rows"),
        ([([0, -2], [1])], "negative row indices"),
    ):
        with pytest.raises(ValueError, match=match):
            count(bad)


# --------------------------------------------------------------------------
# Mutation testing of the ledger (issue 29's acceptance)
# --------------------------------------------------------------------------


def test_a_skipped_step_hides_no_dp_step_after_it(data):
    X, y = data
    X = (X - X.min(axis=0)) / np.ptp(X, axis=0)
    for skip in ("passthrough", None):
        pipe = Pipeline(
            [("skip", skip), ("scale", _quiet_scaler()), ("clf", dp_model())]
        )
        ledger = PrivacyLedger(delta=DELTA).record(pipe.fit(X, y))
        assert ledger.costs == (pipe[1].privacy_spent_, pipe[2].privacy_spent_)
    union = FeatureUnion([("skip", "drop"), ("scale", _quiet_scaler())]).fit(X)
    columns = ColumnTransformer(
        [("skip", "drop", [0]), ("scale", _quiet_scaler(), [1, 2])]
    ).fit(X)
    for composite, scaler in (
        (union, union.transformer_list[1][1]),
        (columns, columns.named_transformers_["scale"]),
    ):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # a fully private composite is silent
            ledger = PrivacyLedger(delta=DELTA).record(composite)
        assert ledger.costs == (scaler.privacy_spent_,)


def _fitted_private_search(data):
    """(X scaled to [0, 1], y, a DPRandomSearchCV fitted on a pipeline of a
    scaler, a Normalizer and a DP model)."""
    from skdp.model_selection import DPRandomSearchCV

    X, y = data
    X = (X - X.min(axis=0)) / np.ptp(X, axis=0)
    pipe = Pipeline(
        [("scale", _quiet_scaler()), ("prep", Normalizer()), ("clf", dp_model())]
    )
    search = DPRandomSearchCV(
        pipe, {"clf__clip_norm": [0.5, 1.0]}, n_iter=2, epsilon=1.0, delta=DELTA
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        search.fit(X, y)
    return X, y, search


def test_a_released_winner_is_charged_the_search_wherever_it_is_recorded(data):
    # Issue 29, item 3: inside a composite too; and a non-private step
    # swapped into the winner since its release is still named.

    X, y, search = _fitted_private_search(data)
    cost = search.privacy_spent_
    outer = Pipeline(
        [("id", FunctionTransformer().fit(X)), ("model", search.best_estimator_)]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert PrivacyLedger(delta=DELTA).record(outer).costs == (cost,)
    winner = pickle.loads(pickle.dumps(search.best_estimator_))
    winner.steps[1] = ("prep", StandardScaler().fit(X))
    ledger = PrivacyLedger(delta=DELTA)
    messages = record_quietly(ledger, winner)
    assert ledger.costs == (cost,)
    assert len(messages) == 1
    assert messages[0].startswith("Pipeline/prep (StandardScaler) reads the training")
    # ... and says that the DP step after it loses its own guarantee (it said
    # only that the scaler's statistics were not covered; review).
    assert "that step's guarantee does not hold for the data set" in messages[0]
    # The search's caveat (a label set read from y) is named at the winner.
    search.set_params(
        estimator=DPLogisticRegression(), param_distributions={"clip_norm": [1.0]}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        search.fit(X, y)
    ledger = PrivacyLedger(delta=DELTA)
    messages = record_quietly(ledger, search.best_estimator_)
    assert ledger.costs == (search.privacy_spent_,)
    assert messages == [f"DPLogisticRegression: the guarantee assumes {PUBLIC_LABELS}."]


def test_a_search_recorded_names_its_winners_new_steps_and_charges_a_new_winner(
    data,
):
    # Recorded through the search (not its winner), a non-private step swapped
    # into the winner was not named, and a winner replaced by another fitted
    # model (which the search then predicts with) was not charged (review).

    X, y, search = _fitted_private_search(data)
    cost = search.privacy_spent_
    swapped = pickle.loads(pickle.dumps(search))
    swapped.best_estimator_.steps[1] = ("prep", StandardScaler().fit(X))
    ledger = PrivacyLedger(delta=DELTA)
    messages = record_quietly(ledger, swapped)
    assert ledger.costs == (cost,)
    assert len(messages) == 1 and "(StandardScaler) reads the training" in messages[0]
    replaced = pickle.loads(pickle.dumps(search))
    new = clone(search.best_estimator_).set_params(clf__epsilon=5.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        replaced.best_estimator_ = new.fit(X, y)
    ledger = PrivacyLedger(delta=DELTA)
    record_quietly(ledger, replaced)
    assert ledger.costs == (cost, *(step.privacy_spent_ for step in (new[0], new[2])))
    # Another private search's winner put in: that search is charged too
    # (it carries that search's mark, which hid it).
    other = clone(search).set_params(epsilon=3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        other.fit(X, y)
    holding = pickle.loads(pickle.dumps(search))
    holding.best_estimator_ = other.best_estimator_
    ledger = PrivacyLedger(delta=DELTA)
    record_quietly(ledger, holding)
    assert ledger.costs == (cost, other.privacy_spent_)


def test_warnings_and_refusals_name_the_step_by_its_path(data):
    # The warning is all that tells the user which step the total does not
    # cover: it names the step by its path from what was recorded.
    X, y = data
    X = (X - X.min(axis=0)) / np.ptp(X, axis=0)
    assumed = f"the guarantee assumes {PUBLIC_LABELS}."
    caveated = replace(PrivacyCost.from_gdp(0.5, delta=DELTA), caveats=(PUBLIC_LABELS,))
    ledger = PrivacyLedger()
    assert record_quietly(ledger, caveated) == [f"PrivacyCost: {assumed}"]
    assert ledger.costs == (caveated,)
    inferred = Pipeline([("clf", DPLogisticRegression(delta=DELTA))])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        inferred.fit(X, y)
    assert record_quietly(PrivacyLedger(), inferred) == [f"Pipeline/clf: {assumed}"]
    # A scikit-learn search: candidates charged their declared budgets.
    search = GridSearchCV(inferred, {"clf__epsilon": [0.5, 1.0]}, cv=KFold(3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        search.fit(X, y)
    ledger = PrivacyLedger(delta=DELTA)
    messages = record_quietly(ledger, search)
    assert messages[0] == f"GridSearchCV/clf: {assumed}"
    assert messages[1].startswith("GridSearchCV (GridSearchCV) chose its best")
    assert len(messages) == 2
    assert ledger.costs[0].mechanism == (
        "declared budget of DPLogisticRegression (GridSearchCV/clf)"
    )
    # Wrappers and callables, one level down.
    selector = rowwise(lambda Z: [0, 1])
    cases = [
        (OneVsRestClassifier(dp_model()), "(OneVsRestClassifier) learned its label"),
        (
            ColumnTransformer([("dp", _quiet_scaler(), lambda Z: [0, 1])]),
            "(ColumnTransformer) calls the column selector of 'dp'",
        ),
        (ColumnTransformer([("dp", _quiet_scaler(), selector)]), None),
        (VotingClassifier([("a", LogisticRegression())]), None),
    ]
    for step, message in cases:
        pipe = Pipeline([("step", step)])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            pipe.fit(X, y)
        messages = record_quietly(PrivacyLedger(delta=DELTA), pipe)
        named = [m for m in messages if not m.startswith("Pipeline/step/")]
        if message is None:
            assert named == []
        else:
            assert any(m.startswith(f"Pipeline/step {message}") for m in named)
    select = SelectFromModel(LogisticRegression()).fit(X, y)
    assert record_quietly(PrivacyLedger(), select)[0].startswith(
        "SelectFromModel/estimator_ (LogisticRegression) reads the training data"
    )
    target = TransformedTargetRegressor(
        regressor=DPRandomFeaturesRegressor(50, delta=DELTA),
        transformer=StandardScaler(),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        target.fit(X, y.astype(float))
    assert any(
        m.startswith("TransformedTargetRegressor/transformer (StandardScaler) reads")
        for m in record_quietly(PrivacyLedger(), target)
    )
    for bootstrap, refusal in ((True, "draws"), (False, "seeded the privacy noise")):
        bag = BaggingClassifier(dp_model(), n_estimators=2, bootstrap=bootstrap)
        pipe = Pipeline([("bag", bag)])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            pipe.fit(X, y)
        with pytest.raises(
            ValueError, match=rf"^Pipeline/bag \(BaggingClassifier\) {refusal}"
        ):
            PrivacyLedger().record(pipe)


def test_a_search_over_a_composite_is_charged_what_its_fitted_refit_achieved():
    # The adjacency a user-level step achieved is read from the fitted
    # refit's parts (regressor_, named_estimators_), not from its templates.
    from sklearn.ensemble import VotingRegressor

    from skdp.fedrep import DPFedRep

    rng = np.random.default_rng(0)
    X = rng.normal(size=(240, 4))
    y = X @ [1.0, -1.0, 0.5, 0.0] + 0.1 * rng.normal(size=240)
    for estimator, grid in (
        (
            TransformedTargetRegressor(regressor=DPFedRep(2)),
            {"regressor__learning_rate": [0.5, 1.0]},
        ),
        (VotingRegressor([("f", DPFedRep(2))]), {"f__learning_rate": [0.5, 1.0]}),
    ):
        search = GridSearchCV(
            estimator, grid, cv=KFold(3, shuffle=True, random_state=0)
        )
        with pytest.warns(PrivacyLeakWarning, match="no groups"):
            search.fit(X, y)
        ledger = PrivacyLedger(delta=1e-5)
        said = record_quietly(ledger, search)
        assert len(said) == 2 and sum("holds users_, user_coef_" in m for m in said)
        assert len(ledger) == 2 * 2 + 1
        assert {c.adjacency for c in ledger.costs} == {REPLACE_ONE}


def test_bagging_seeds_are_found_behind_any_step_and_named_exactly(data):
    from sklearn.decomposition import PCA

    X, y = data
    X = (X - X.min(axis=0)) / np.ptp(X, axis=0)
    # PCA's random_state comes first in the sub-model's parameters and
    # belongs to no DP fit: the DP step after it is still named.
    for bagging, shown in (
        (
            BaggingClassifier(dp_model(), n_estimators=2, bootstrap=False),
            "(estimators_[0] (DPLogisticRegression), estimators_[1] ",
        ),
        (
            BaggingClassifier(
                make_pipeline(PCA(2, random_state=0), dp_model()),
                n_estimators=2,
                bootstrap=False,
            ),
            "(estimators_[0].dplogisticregression__random_state "
            "(DPLogisticRegression), ",
        ),
    ):
        with pytest.warns(PrivacyLeakWarning):
            bagging.fit(X, y)
        with pytest.raises(ValueError, match="seeded the privacy noise") as raised:
            PrivacyLedger(delta=DELTA).record(bagging)
        assert f"of 2 DP fit(s) it holds {shown}" in str(raised.value)
    # A seed the user gave a DP step inside a pipeline is the user's.
    given = make_pipeline(
        StandardScaler(),
        DPLogisticRegression(delta=DELTA, classes=[0, 1], random_state=1),
    )
    wrapper = OneVsRestClassifier(given)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        wrapper.fit(X, y)
    messages = record_quietly(PrivacyLedger(delta=DELTA), wrapper)
    assert messages and not any("seeded the privacy noise" in m for m in messages)


class _KeepsItself(BaseEstimator):
    """A user's estimator whose fitted state refers back to itself."""

    def fit(self, X, y=None):
        self.itself_ = [self, {"again": self}]
        return self


def test_a_fitted_object_that_refers_to_itself_is_walked_once(data):
    X, _ = data
    ledger = PrivacyLedger()
    messages = record_quietly(ledger, _KeepsItself().fit(X))
    assert len(ledger) == 0
    assert (
        messages
        and "_KeepsItself (_KeepsItself) reads the training data" in messages[0]
    )


def test_splits_with_empty_training_parts_hold_no_record():
    from skdp._ledger import training_parts_per_record

    for splits in ([([], [0, 1])], [([], [0]), (np.zeros(0, dtype=int), [1])]):
        parts = training_parts_per_record(
            splits, len(splits), classifier=False, owner="test"
        )
        assert parts == 0


def test_the_missing_values_recipe_is_silent_and_totals_its_budget():
    # The pipelines guide's recipe for a table with NaN: a constant fill
    # that keeps every column, an indicator of every column, then DP steps.
    from sklearn.pipeline import make_union

    from skdp.pipeline import make_private_pipeline

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    X[rng.random(X.shape) < 0.2] = np.nan
    X[:, 2] = np.nan  # a column entirely missing is kept, not dropped
    y = (rng.random(400) < 0.5).astype(int)
    fill = make_union(
        SimpleImputer(strategy="constant", fill_value=0.0, keep_empty_features=True),
        MissingIndicator(features="all"),
    )
    model = make_private_pipeline(
        fill,
        DPStandardScaler(),
        DPLogisticRegression(classes=[0, 1]),
        epsilon=1.0,
        delta=DELTA,
    ).fit(X, y)
    assert model[0].transform(X).shape == (400, 6)
    ledger = PrivacyLedger()
    assert record_quietly(ledger, model) == []
    epsilon = ledger.total().epsilon
    assert epsilon <= 1.0 and epsilon == pytest.approx(1.0, rel=1e-6)


def test_which_parts_are_known_to_be_dense():
    # The list is short and explicit: "drop", a DP step, a dense
    # OneHotEncoder, an OrdinalEncoder, a Pipeline ending in one of these
    # (skipped steps aside). Everything else may return a sparse matrix.
    from sklearn.pipeline import make_pipeline

    from skdp._ledger import _always_dense

    scaler = DPStandardScaler()
    dense = [
        "drop",
        scaler,
        OneHotEncoder(sparse_output=False),
        OrdinalEncoder(),
        make_pipeline(FunctionTransformer(), scaler),
        make_pipeline(StandardScaler(), OneHotEncoder(sparse_output=False)),
        Pipeline([("s", scaler), ("skip", "passthrough"), ("none", None)]),
        make_pipeline(make_pipeline(OrdinalEncoder())),
    ]
    maybe_sparse = [
        "passthrough",
        None,
        OneHotEncoder(),
        OneHotEncoder(categories=[["a", "b"]]),  # one value per row, still
        FunctionTransformer(),
        StandardScaler(),
        SimpleImputer(),
        MissingIndicator(),  # sparse="auto": its input's container
        Normalizer(),
        FeatureUnion([("s", scaler)]),
        ColumnTransformer([("s", scaler, [0])], sparse_threshold=0),
        make_pipeline(scaler, FunctionTransformer()),
        Pipeline([("skip", "passthrough")]),  # passes its input through
        make_pipeline(OneHotEncoder(drop="first"), FunctionTransformer()),
    ]
    assert [_always_dense(p) for p in dense] == [True] * len(dense)
    assert [_always_dense(p) for p in maybe_sparse] == [False] * len(maybe_sparse)


def test_skdp_dp_transformers_return_dense_arrays():
    # _always_dense counts every DP step as dense: each DP transformer skdp
    # exports refuses a sparse input and returns an ndarray.
    import scipy.sparse as sp
    from sklearn.base import BaseEstimator

    import skdp

    X, y = make_classification(n_samples=300, n_features=4, random_state=0)
    found = []
    for name in sorted(skdp.__all__):
        cls = getattr(skdp, name)
        if not (isinstance(cls, type) and issubclass(cls, BaseEstimator)):
            continue
        if not hasattr(cls, "transform"):
            continue
        found.append(name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fitted = cls().fit(X, y.astype(float))
            assert type(fitted.transform(X)) is np.ndarray, name
            with pytest.raises(TypeError):
                fitted.transform(sp.csr_matrix(X))
            with pytest.raises(TypeError):
                cls().fit(sp.csr_matrix(X), y.astype(float))
    assert {"DPStandardScaler", "DPPCA", "DPFedRep"} <= set(found)


class _ThirdPartyDPStep(DPStandardScaler):
    """A DP step from outside skdp: it may return a sparse matrix."""


def test_only_skdps_own_dp_steps_count_as_always_dense():
    # Any object with privacy_budget() passed as always dense: a DP step of
    # another library returning CSR would have let the density choose.
    from sklearn.compose import ColumnTransformer

    from skdp._ledger import container_from_density

    own = ColumnTransformer([("s", DPStandardScaler(), [0])])
    other = ColumnTransformer([("s", _ThirdPartyDPStep(), [0])])
    assert container_from_density(own) == []
    assert container_from_density(other) == ["s"]


def test_cross_validate_scores_are_named_as_not_covered(data):
    # With one record per test fold (LeaveOneOut) each test_score is that
    # record's exact loss, beside the fold model that scored it: the scores
    # are named, whatever the splitter, and the train scores too.
    from sklearn.model_selection import LeaveOneOut

    X, y = data
    X, y = X[:12], y[:12].astype(float)
    folds = cross_validate(
        DPRandomFeaturesRegressor(20, delta=DELTA),
        X,
        y,
        cv=LeaveOneOut(),
        return_estimator=True,
        return_train_score=True,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        PrivacyLedger(delta=1e-3).record(folds, cv=LeaveOneOut())
    (named,) = [str(w.message) for w in caught if "scores" in str(w.message)]
    assert "(test_score, train_score)" in named and "not the scores" in named


def test_a_step_refitted_under_a_search_or_a_target_regressor_is_refused(data):
    # Missed (review): a scikit-learn search as a later step (its refit was
    # not read), and a TransformedTargetRegressor whose target scaler was
    # fitted again after its regressor (not a Pipeline: never checked).
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.model_selection import GridSearchCV

    from skdp import DPLinearRegression

    X, y = data
    search = GridSearchCV(
        DPLogisticRegression(delta=DELTA, classes=[0, 1]),
        {"clip_norm": [0.5, 1.0]},
        cv=KFold(2),
    )
    pipe = make_pipeline(DPStandardScaler(delta=DELTA, bounds=(-5, 5)), search)
    pipe.fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        PrivacyLedger(delta=1e-3).record(pipe)  # as fitted: accepted
        pipe[:-1].fit_transform(X)
        with pytest.raises(ValueError, match="was fitted again after step"):
            PrivacyLedger(delta=1e-3).record(pipe)
    # A private search's released model refitted in place on another DP
    # release's output (its stamps were not read through the search).
    from skdp.model_selection import DPRandomSearchCV

    private = DPRandomSearchCV(
        DPLogisticRegression(classes=[0, 1]),
        {"clip_norm": [0.5, 1.0]},
        n_iter=2,
        delta=DELTA,
    )
    pipe = make_pipeline(DPStandardScaler(delta=DELTA, bounds=(-5, 5)), private)
    pipe.fit(X, y)
    assert len(PrivacyLedger(delta=1e-3).record(pipe)) == 2
    other = DPStandardScaler(delta=DELTA, epsilon=5.0, bounds=(-5, 5)).fit(X)
    private.best_estimator_.fit(other.transform(X), y)
    with pytest.raises(ValueError, match="output of another DP release"):
        PrivacyLedger(delta=1e-3).record(pipe)
    target = TransformedTargetRegressor(
        regressor=DPLinearRegression(delta=DELTA),
        transformer=DPStandardScaler(delta=DELTA, bounds=(-5, 5)),
        check_inverse=False,
    )
    y_real = X[:, 0] + 0.1 * np.arange(len(X)) / len(X)
    target.fit(X, y_real)
    assert len(PrivacyLedger(delta=DELTA).record(target)) == 2
    # Behind a DP scaler the regressor's X is that scaler's output, which
    # the target regressor does not hold: only the order is its to check.
    behind = make_pipeline(DPStandardScaler(delta=DELTA, bounds=(-5, 5)), target)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(PrivacyLedger(delta=1e-3).record(behind.fit(X, y_real))) == 3
    target.transformer_.fit(y_real.reshape(-1, 1))
    with pytest.raises(ValueError, match="'transformer_' was fitted again after"):
        PrivacyLedger(delta=DELTA).record(target)


def test_a_step_fitted_again_after_the_steps_fitted_on_its_output_is_refused(data):
    # The model was fitted on the first scaler release; a refit of the scaler
    # (through a slice, which shares the steps, or in a second pipeline that
    # holds the same object) replaces that release in the pipeline, and the
    # fits it holds no longer add up to what it spent.
    X, y = data

    def scaler():
        return DPStandardScaler(delta=DELTA, bounds=(-5, 5))

    def model():
        return DPLogisticRegression(delta=DELTA, classes=[0, 1])

    pipe = make_pipeline(scaler(), model()).fit(X, y)
    assert len(PrivacyLedger(delta=DELTA).record(pipe)) == 2
    pipe[-1].fit(pipe[0].transform(X), y)  # a later step again: fine
    assert len(PrivacyLedger(delta=DELTA).record(pipe)) == 2
    pipe[:-1].fit_transform(X)
    with pytest.raises(ValueError, match="was fitted again after step"):
        PrivacyLedger(delta=DELTA).record(pipe)
    pipe.fit(X, y)  # as a whole again: fine
    assert len(PrivacyLedger(delta=DELTA).record(pipe)) == 2
    shared = scaler()
    first = make_pipeline(shared, model()).fit(X, y)
    second = make_pipeline(shared, model()).fit(X, y)
    with pytest.raises(ValueError, match="was fitted again after step"):
        PrivacyLedger(delta=DELTA).record(first)
    assert len(PrivacyLedger(delta=DELTA).record(second)) == 2
    # A later step shared and fitted last in another pipeline, on another
    # DP release (a review: charged as if fitted on this one's scaler).
    shared_model = model()
    cheap = make_pipeline(scaler().set_params(epsilon=0.5), shared_model).fit(X, y)
    costly = make_pipeline(scaler().set_params(epsilon=8.0), shared_model).fit(X, y)
    with pytest.raises(ValueError, match="fitted on the output of another"):
        PrivacyLedger(delta=DELTA).record(cheap)
    assert len(PrivacyLedger(delta=DELTA).record(costly)) == 2
    # An older fitted scaler put in by set_params: the model was fitted on
    # the replaced one's output.
    older = scaler().fit(X)
    pipe = make_pipeline(scaler(), model()).fit(X, y)
    pipe.set_params(dpstandardscaler=older)
    with pytest.raises(ValueError, match="fitted on the output of another"):
        PrivacyLedger(delta=DELTA).record(pipe)
    # The same with pandas output: the next step reads a frame around the
    # scaler's array (a review: its provenance was lost, and the shared step
    # accepted again).
    shared_model = model()
    cheap = make_pipeline(scaler(), shared_model).set_output(transform="pandas")
    costly = make_pipeline(scaler(), shared_model).set_output(transform="pandas")
    frame = pd.DataFrame(X, columns=[f"x{i}" for i in range(X.shape[1])])
    cheap.fit(frame, y)
    costly.fit(frame, y)
    with pytest.raises(ValueError, match="fitted on the output of another"):
        PrivacyLedger(delta=DELTA).record(cheap)
    assert len(PrivacyLedger(delta=DELTA).record(costly)) == 2
    # A first step fitted on a release the pipeline does not hold: named.
    outside = scaler().fit(X)
    first = make_pipeline(model().fit(X=outside.transform(X), y=y))
    messages = record_quietly(PrivacyLedger(delta=DELTA), first)
    assert any("a DP release that the pipeline does not hold" in m for m in messages)
    # A prefit SelectFromModel after a DP step: its model was fitted apart,
    # and says nothing of the pipeline's order (a review: refused).
    chosen = model().fit(X, y)
    selecting = make_pipeline(
        scaler(), SelectFromModel(chosen, prefit=True), model()
    ).fit(X, y)
    assert len(PrivacyLedger(delta=DELTA).record(selecting)) == 3
    # A prefit SelectFromModel whose model was fitted on an outside release:
    # the order of its fit says nothing, where its input came from does.
    outside = scaler().fit(X)
    chosen = model().fit(outside.transform(X), y)
    with pytest.raises(ValueError, match="fitted on the output of another"):
        PrivacyLedger(delta=DELTA).record(
            make_pipeline(
                scaler().fit(X), SelectFromModel(chosen, prefit=True), model()
            ).fit(X, y)
        )
    # Fitted by hand, each on the other's output: as a pipeline's fit.
    first_step = scaler().fit(X)
    by_hand = make_pipeline(first_step, model().fit(first_step.transform(X), y))
    assert len(PrivacyLedger(delta=DELTA).record(by_hand)) == 2
    # A step inside a ColumnTransformer counts as the ColumnTransformer's.
    columns = ColumnTransformer([("s", scaler(), [0, 1])], remainder="passthrough")
    nested = make_pipeline(columns, model()).fit(X, y)
    nested[0].named_transformers_["s"].fit(X[:, :2])
    with pytest.raises(ValueError, match="step 'columntransformer' was fitted"):
        PrivacyLedger(delta=DELTA).record(nested)


def test_usable_fitted_objects_with_an_unfitted_part_are_recorded(data):
    """A ColumnTransformer part whose selector matched no column is never
    fitted (it released nothing), and SelectFromModel(prefit=True) used for
    transform alone holds the fitted model, not estimator_: both raised
    NotFittedError (a review)."""
    import pandas as pd
    from sklearn.compose import make_column_selector
    from sklearn.preprocessing import OneHotEncoder

    X, y = data
    frame = pd.DataFrame({"c": np.random.default_rng(0).choice(["a", "b"], 200)})
    columns = ColumnTransformer(
        [
            ("num", _quiet_scaler(), make_column_selector(dtype_include="number")),
            ("cat", OneHotEncoder(categories=[["a", "b"]]), ["c"]),
        ],
        sparse_threshold=0,
    ).fit(frame)
    ledger = PrivacyLedger(delta=DELTA)
    ledger.record(columns)
    assert len(ledger) == 0
    model = dp_model()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        model.fit(X, y)
    selector = SelectFromModel(model, prefit=True)
    selector.transform(X)
    ledger = PrivacyLedger(delta=DELTA).record(selector)
    assert ledger.costs == (model.privacy_spent_,)


_SELECTIONS = {  # (selects column "a", selects nothing), in every form
    "slice": (slice(0, 1), None),  # (a scalar name gives 1-D columns)
    "names": (["a"], []),
    "positions": ([0], []),
    "list mask": ([True, False], [False, False]),
    "int array": (np.array([0]), np.array([], dtype=int)),
    "bool array": (np.array([True, False]), np.array([False, False])),
    "callable": (lambda frame: ["a"], lambda frame: []),
}


@pytest.mark.parametrize("form", list(_SELECTIONS))
@pytest.mark.parametrize("empty", [False, True])
def test_a_fitted_column_part_is_charged_whatever_selects_its_columns(form, empty):
    """The fitted ColumnTransformer's parts are read from ``transformers_``,
    skipping those whose selection matched no column (never fitted). A DP
    part selected by a slice, a list, a mask or a callable was fitted and
    is charged; an empty selection of the same form
    is not. (Mutation testing: a part selected by a slice or a mask could be
    skipped, its cost dropped, and no test noticed.)"""
    columns = _SELECTIONS[form][empty]
    if columns is None:
        pytest.skip("no empty selection of this form")
    frame = pd.DataFrame(
        np.random.default_rng(0).uniform(size=(200, 2)), columns=["a", "b"]
    )
    fitted = ColumnTransformer(
        [("dp", _quiet_scaler(), columns)], remainder="drop"
    ).fit(frame)
    ledger = PrivacyLedger(delta=DELTA).record(fitted)
    if empty:
        assert len(ledger) == 0
    else:
        assert ledger.costs == (fitted.named_transformers_["dp"].privacy_spent_,)


@pytest.mark.parametrize("column", [0, "text"])
def test_a_part_on_one_scalar_column_is_walked(column):
    """A scalar selector (a position or a name) gives its part one 1-D
    column, which text vectorizers take: such a part was fitted, so the
    ledger walks it and warns that it reads the data (mutation testing: a
    scalar position read as "selects nothing" dropped the warning)."""
    from sklearn.feature_extraction.text import CountVectorizer

    rng = np.random.default_rng(0)
    text = rng.choice(["red apple", "green pear"], 200)
    frame = pd.DataFrame({"text": text, "x": rng.uniform(size=200)})
    fitted = ColumnTransformer(
        [("words", CountVectorizer(), column), ("dp", _quiet_scaler(), ["x"])],
        sparse_threshold=0,
    ).fit(frame)
    with pytest.warns(PrivacyLeakWarning, match=r"words \(CountVectorizer\) reads"):
        ledger = PrivacyLedger(delta=DELTA).record(fitted)
    assert len(ledger) == 1


def test_stamps_of_two_processes_are_never_ordered(monkeypatch):
    """A stamp's process is a random token, not its id: process ids repeat
    (pid 1 in every container), and a scaler stamped (1, 2) in one run then
    made a model stamped (1, 0) in the next look older (a review: a false
    refusal of a pipeline fitted by hand on a saved step)."""
    from skdp import _base

    X = np.random.default_rng(0).normal(size=(500, 2))
    y = (X[:, 0] > 0).astype(int)
    kept = DPStandardScaler(delta=DELTA, bounds=(-5, 5)).fit(X)
    monkeypatch.setattr(_base, "_FIT_COUNTER", itertools.count())  # a new run
    monkeypatch.setattr(_base, "_PROCESS", "another-process")
    later = DPLogisticRegression(delta=DELTA, classes=[0, 1]).fit(kept.transform(X), y)
    assert (
        getattr(later, _base.FIT_STAMP).when[1] < getattr(kept, _base.FIT_STAMP).when[1]
    )
    assert len(PrivacyLedger(delta=DELTA).record(make_pipeline(kept, later))) == 2


def test_the_ledger_keeps_what_its_total_does_not_cover(data):
    """A total read later without the warnings looked complete (review,
    2026-11-27): the ledger keeps every warning's message, once each."""
    X, y = data
    leaky = make_pipeline(StandardScaler(), dp_model()).fit(X, y)
    ledger = PrivacyLedger(delta=DELTA)
    said = record_quietly(ledger, leaky)
    assert len(said) == 1 and ledger.uncovered == tuple(said)
    record_quietly(ledger, leaky)
    assert ledger.uncovered == tuple(said) and len(ledger) == 2
    assert repr(ledger).endswith("; 1 warnings, see .uncovered)")
    clean = PrivacyLedger(delta=DELTA).record(dp_model().fit(X, y))
    assert clean.uncovered == () and "warnings" not in repr(clean)


@pytest.mark.parametrize(
    "middle",
    ["passthrough", "plain", "prefit-select"],
)
def test_a_refit_is_found_past_steps_that_hold_no_fit_of_their_own(data, middle):
    """The fit-order check walks every step: a "passthrough", a plain step
    (no stamp) or a prefit SelectFromModel (fitted apart) between the DP
    steps must not end or reset the walk (mutation testing: `continue` made
    `break`, and `earlier +=` made `=`, passed every test)."""
    X, y = data
    scaler = DPStandardScaler(delta=DELTA, bounds=(-5, 5))
    model = DPLogisticRegression(delta=DELTA, classes=[0, 1])
    step = {
        "passthrough": "passthrough",
        "plain": FunctionTransformer(),
        "prefit-select": SelectFromModel(
            DPLogisticRegression(delta=DELTA, classes=[0, 1]).fit(X, y), prefit=True
        ),
    }[middle]
    pipe = Pipeline([("scale", scaler), ("middle", step), ("model", model)])
    pipe.fit(X, y)
    assert len(PrivacyLedger(delta=DELTA).record(pipe)) == 2 + (
        middle == "prefit-select"
    )
    scaler.fit(X)  # again, after the model was fitted on its output
    with pytest.raises(ValueError, match="'scale' was fitted again after step 'model'"):
        PrivacyLedger(delta=DELTA).record(pipe)


def test_recording_one_fit_twice_says_so():
    """A notebook cell run again recorded the same fit twice: counted twice,
    conservative but silent (new-user trial). It warns; a new fit does not."""
    from skdp import DPPCA, DPStandardScaler

    X = np.random.default_rng(0).normal(size=(300, 2))
    scaler = DPStandardScaler(bounds=(-3, 3)).fit(X)
    pipe = make_pipeline(DPStandardScaler(bounds=(-3, 3)), DPPCA(2)).fit(X)
    ledger = PrivacyLedger().record(scaler).record(pipe)
    with pytest.warns(UserWarning, match="recorded again"):
        ledger.record(scaler)
    with pytest.warns(UserWarning, match="recorded again"):
        ledger.record(pipe[-1])  # a part of a pipeline recorded before
    assert len(ledger) == 5  # still counted: the total stays an upper bound
    labels = np.arange(len(X)) % 2
    model = DPLogisticRegression(classes=[0, 1], max_iter=5)
    folds = KFold(n_splits=3)
    result = cross_validate(model, X, labels, cv=folds, return_estimator=True)
    ledger.record(result, cv=folds)
    with pytest.warns(UserWarning, match="recorded again"):
        ledger.record(result["estimator"][1])
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        ledger.record(DPStandardScaler(bounds=(-3, 3)).fit(X))
    # A seeded fit recorded twice is one release counted twice, not two
    # releases sharing a seed: total() raised (review).
    seeded = DPStandardScaler(bounds=(-3, 3), random_state=0)
    with pytest.warns(UserWarning, match="seed"):
        seeded.fit(X)
    twice = PrivacyLedger(delta=DELTA).record(seeded)
    with pytest.warns(UserWarning, match="recorded again"):
        twice.record(seeded)
    mu = seeded.privacy_spent_.mu
    assert twice.total().mu == pytest.approx(math.sqrt(2) * mu, rel=1e-12)
    assert twice.totals()[REPLACE_ONE].mu == pytest.approx(math.sqrt(2) * mu)


def test_a_multilabel_one_vs_rest_names_its_noiseless_constant_labels():
    # On multilabel y, OneVsRestClassifier fits a constant predictor (no
    # noise) for a label in no row: neighbours that differ in the one row
    # holding label 2 give three DP fits or two plus a constant. classes_
    # is y's width there, so the label-set caveat named the wrong leak
    # (review); the ledger names this one in both worlds.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    Y = np.c_[X[:, 0] > 0, X[:, 1] > 0, np.zeros(400)].astype(int)
    Y_once = Y.copy()
    Y_once[0, 2] = 1
    for labels, dp_fits in ((Y_once, 3), (Y, 2)):
        ovr = OneVsRestClassifier(dp_model()).fit(X, labels)
        ledger = PrivacyLedger(delta=DELTA)
        messages = record_quietly(ledger, ovr)
        assert len(ledger) == dp_fits
        assert any(
            m.startswith("OneVsRestClassifier (OneVsRestClassifier) on multilabel y")
            for m in messages
        )
        assert not any("learned its label set" in m for m in messages)
    # MultiOutputClassifier fits every label with noise: nothing to name
    from sklearn.multioutput import MultiOutputClassifier

    multi = MultiOutputClassifier(dp_model()).fit(X, Y)
    ledger = PrivacyLedger(delta=DELTA)
    assert record_quietly(ledger, multi) == [] and len(ledger) == 3
