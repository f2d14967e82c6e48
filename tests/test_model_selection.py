"""DPRandomSearchCV: the whole search, selection included, is (ε, δ)-DP."""

import math
import pickle
import warnings

import _containers
import numpy as np
import pytest
from _sklearn_compat import parametrize_with_checks
from _spies import gaussian_noise_stds
from _warning_location import points_at
from dp_accounting import dp_event, rdp
from scipy import stats
from sklearn.base import BaseEstimator, ClassifierMixin, clone
from sklearn.compose import ColumnTransformer
from sklearn.datasets import make_classification
from sklearn.exceptions import NotFittedError
from sklearn.impute import SimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import ParameterGrid
from sklearn.pipeline import Pipeline, make_pipeline
from sklearn.preprocessing import (
    Binarizer,
    FunctionTransformer,
    Normalizer,
    PolynomialFeatures,
    StandardScaler,
)
from sklearn.utils._param_validation import InvalidParameterError

from skdp import (
    DPGaussianNB,
    DPLogisticRegression,
    DPRandomFeaturesRegressor,
    PrivacyLeakWarning,
    PrivacyLedger,
    _ledger,
)
from skdp._base import private_fit
from skdp.accounting import (
    REPLACE_ONE,
    REPLACE_ONE_OUTCOME,
    epsilon_of_private_selection,
    mu_from_epsilon,
    truncated_negative_binomial_gamma,
    zcdp_from_epsilon_tight,
    zcdp_of_private_selection,
)
from skdp.exceptions import MechanismFailedError
from skdp.mechanisms import SecureNoise, as_generator
from skdp.model_selection import DPRandomSearchCV, _search
from skdp.model_selection._search import _draw_truncated_negative_binomial
from skdp.preprocessing import DPStandardScaler
from skdp.ranking import DPBradleyTerry, PairsEncoder

DELTA = 1e-6
ORDERS = (
    [1 + x / 50 for x in range(1, 500)]
    + [11 + x / 5 for x in range(1000)]
    + list(range(212, 5000, 4))
)


@pytest.fixture(scope="module")
def data():
    X, y = make_classification(n_samples=600, n_features=4, random_state=0)
    return X, y


@pytest.fixture(scope="module")
def comparisons():
    from skdp.datasets import make_btl_comparisons

    pairs, y, _ = make_btl_comparisons(
        n_items=8, edge_probability=1.0, comparisons_per_edge=6, random_state=0
    )
    return pairs, y


def search(**params):
    defaults = dict(
        estimator=DPLogisticRegression(classes=[0, 1]),
        param_distributions={"clip_norm": [0.1, 1.0, 10.0]},
        n_iter=4,
        epsilon=2.0,
        delta=DELTA,
    )
    return DPRandomSearchCV(**{**defaults, **params})


def dp_accounting_epsilon(mu, mean, shape, delta):
    """Papernot & Steinke's Theorem 2 as dp-accounting implements it."""
    accountant = rdp.RdpAccountant(orders=ORDERS)
    event = dp_event.RepeatAndSelectDpEvent(
        dp_event.GaussianDpEvent(1.0 / mu), mean, shape
    )
    return accountant.compose(event).get_epsilon(delta)


@pytest.mark.parametrize(
    "epsilon, mean, shape", [(2.0, 4, 0.0), (1.0, 10, 1.0), (4.0, 3, 0.5)]
)
def test_total_matches_an_independent_accountant(data, epsilon, mean, shape):
    X, y = data
    fitted = search(epsilon=epsilon, n_iter=mean, n_iter_shape=shape).fit(X, y)
    # One run's μ, read off what the winner actually spent: its DP step's
    # budget is at most the run's share (the score uses the same μ on
    # disjoint rows).
    mu = fitted.candidate_budget_.mu
    assert fitted.best_estimator_.privacy_spent_.mu <= mu
    oracle = dp_accounting_epsilon(mu, mean, shape, DELTA)
    spent = fitted.privacy_spent_
    # dp-accounting optimises over a grid of orders: at most a hair above.
    assert spent.epsilon <= oracle * (1 + 1e-9)
    assert spent.epsilon == pytest.approx(oracle, rel=1e-4)
    assert spent.epsilon <= epsilon * (1 + 1e-9)
    assert spent.epsilon == pytest.approx(epsilon, rel=1e-6)  # the budget is used
    assert spent.delta == DELTA


def test_pipelines_split_the_run_equally_among_dp_steps(data):
    X, y = data
    pipe = make_pipeline(
        DPStandardScaler(bounds=(-5.0, 5.0)), DPLogisticRegression(classes=[0, 1])
    )
    fitted = search(
        estimator=pipe,
        param_distributions={"dplogisticregression__clip_norm": [0.5, 1.0]},
    ).fit(X, y)
    mus = [step.privacy_spent_.mu for step in fitted.best_estimator_]
    mu = fitted.candidate_budget_.mu
    assert math.hypot(*mus) <= mu
    assert math.hypot(*mus) == pytest.approx(mu, rel=1e-6)


def test_only_released_quantities_and_an_exact_ledger_entry(data):
    X, y = data
    fitted = search().fit(X, y)
    assert set(fitted.cv_results_) == {"params", "mean_test_score", "rank_test_score"}
    assert fitted.cv_results_["params"] == [fitted.best_params_]
    assert fitted.cv_results_["mean_test_score"][0] == fitted.best_score_
    assert not hasattr(fitted, "n_candidates_")
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # no selection warning
        ledger = PrivacyLedger(delta=DELTA).record(fitted)
    assert ledger.costs == (fitted.privacy_spent_,)
    assert ledger.total().epsilon == pytest.approx(fitted.privacy_spent_.epsilon)
    np.testing.assert_array_equal(fitted.predict(X), fitted.best_estimator_.predict(X))


def test_a_label_set_read_from_y_is_the_searchs_caveat(data):
    # The winner's classes_ is released: a label set its candidates read from
    # y is the search's assumption too, in its report and the ledger's total.
    from skdp._base import PUBLIC_LABELS

    X, y = data
    inferred = search(estimator=DPLogisticRegression()).fit(X, y)
    assert inferred.privacy_spent_.caveats == (PUBLIC_LABELS,)
    ledger = PrivacyLedger(delta=DELTA)
    with pytest.warns(PrivacyLeakWarning, match="label set"):
        ledger.record(inferred)
    assert ledger.total().caveats == (PUBLIC_LABELS,)
    assert search().fit(X, y).privacy_spent_.caveats == ()


@pytest.mark.parametrize("mean, shape", [(4.0, 0.0), (10.0, 1.0), (3.0, 0.5)])
def test_the_number_of_runs_has_the_theorems_law(mean, shape):
    # Independent pmf: scipy's logarithmic / negative binomial, truncated at 1.
    gamma = truncated_negative_binomial_gamma(mean, shape)
    if shape == 0.0:
        pmf = stats.logser(1.0 - gamma).pmf
    else:

        def pmf(k):
            return stats.nbinom(shape, gamma).pmf(k) / stats.nbinom(shape, gamma).sf(0)

    ks = np.arange(1, 400)
    assert np.sum(ks * pmf(ks)) == pytest.approx(mean, rel=1e-3)
    rng = np.random.default_rng(0)
    draws = np.array(
        [_draw_truncated_negative_binomial(rng, mean, shape) for _ in range(20000)]
    )
    assert draws.min() >= 1
    # Chi-square goodness of fit over cells k = 1..9 and k >= 10 (level 1e-3).
    cells = np.minimum(draws, 10)
    observed = np.bincount(cells, minlength=11)[1:]
    expected = np.append(pmf(np.arange(1, 10)), 1 - pmf(np.arange(1, 10)).sum())
    statistic = np.sum((observed - 20000 * expected) ** 2 / (20000 * expected))
    assert stats.chi2(9).sf(statistic) > 1e-3


def test_one_run_is_calibrated_as_one_fit(data):
    # n_iter=1 draws K = 1 always: nothing is selected, so the run gets the
    # whole budget as one mu-GDP release (the selection bound would give it
    # less: mu 0.2472 instead of 0.2681 at epsilon=1, delta=1e-5).
    X, y = data
    fitted = search(n_iter=1).fit(X, y)
    whole = mu_from_epsilon(2.0, DELTA)
    assert fitted.candidate_budget_.mu == pytest.approx(whole, rel=1e-12)
    assert fitted.privacy_spent_.mu == fitted.candidate_budget_.mu
    assert fitted.privacy_spent_.epsilon <= 2.0
    model = fitted.best_estimator_.privacy_spent_
    assert model.mu <= whole and model.mu == pytest.approx(whole, rel=1e-6)


def test_the_score_noise_has_the_calibrated_scale(data):
    # White box: n_iter=1 means one run; with the search's seed the split
    # can be replayed, so the noise of each released score is observable.
    X, y = data
    n, m = X.shape[0], round(0.2 * X.shape[0])
    residuals = []
    for seed in range(300):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            fitted = search(n_iter=1, random_state=seed).fit(X, y)
        valid = as_generator(seed).permutation(n)[:m]
        exact = np.mean(fitted.best_estimator_.predict(X[valid]) == y[valid])
        residuals.append(fitted.best_score_ - exact)
    expected = 1.0 / m / fitted.candidate_budget_.mu  # Δ = 1/m for accuracy
    # 300 draws: the sample sd is within ~12% (3 standard errors) of σ.
    assert np.std(residuals) == pytest.approx(expected, rel=0.12)
    assert abs(np.mean(residuals)) < 3 * expected / math.sqrt(300)


@pytest.mark.parametrize("n_iter", [1, 4])
def test_a_secure_search_is_zcdp_throughout(data, monkeypatch, n_iter):
    """noise="secure": every DP step of every candidate is secure, the score
    noise is drawn from the secure source with σ = Δ/(μ_c − 2^-16) (so its
    zCDP cost with the grid rounding, (Δ/σ + 2^-16)²/2, is the run's ρ_c),
    and the total is Papernot & Steinke's bound on that RDP curve."""
    X, y = data
    m = round(0.2 * X.shape[0])
    calls = []
    real = _search.add_gaussian_noise

    def spy(value, std, rng):
        calls.append((std, rng))
        return real(value, std, rng)

    monkeypatch.setattr(_search, "add_gaussian_noise", spy)
    pipe = make_pipeline(
        DPStandardScaler(bounds=(-5.0, 5.0)), DPLogisticRegression(classes=[0, 1])
    )
    fitted = search(
        estimator=pipe,
        param_distributions={"dplogisticregression__clip_norm": [0.5, 1.0]},
        n_iter=n_iter,
        noise="secure",
    ).fit(X, y)
    if n_iter == 1:
        rho = zcdp_from_epsilon_tight(2.0, DELTA)
    else:
        rho = zcdp_of_private_selection(2.0, DELTA, mean=n_iter, shape=1.0)
    budget = fitted.candidate_budget_
    assert budget.mu is None and budget.zcdp == pytest.approx(rho, rel=1e-9)
    steps = [step for _, step in fitted.best_estimator_.steps]
    assert all(step.noise == "secure" for step in steps)
    spent = [step.privacy_spent_ for step in steps]
    assert all(c.mu is None and "discrete Gaussian" in c.sampler for c in spent)
    assert sum(c.rho for c in spent) <= rho
    assert sum(c.rho for c in spent) == pytest.approx(rho, rel=1e-6)
    assert calls and all(isinstance(rng, SecureNoise) for _, rng in calls)
    for std, _ in calls:
        assert ((1.0 / m) / std + 2.0**-16) ** 2 / 2 == pytest.approx(rho, rel=1e-9)
    total = fitted.privacy_spent_
    assert total.epsilon <= 2.0 * (1 + 1e-9) and "discrete" in total.sampler
    if n_iter > 1:
        assert total.epsilon == pytest.approx(
            epsilon_of_private_selection(rho, DELTA, mean=n_iter, shape=1.0)
        )


def test_a_secure_search_refuses_a_seed_and_a_noise_grid(data):
    X, y = data
    with pytest.raises(ValueError, match="cannot be seeded"):
        search(noise="secure", random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="noise"):
        search(param_distributions={"noise": ["fast", "secure"]}).fit(X, y)


@pytest.mark.parametrize(
    "params, error, match",
    [
        ({"param_distributions": {}}, ValueError, "empty"),
        ({"param_distributions": [{}]}, ValueError, "empty"),
        ({"estimator": LogisticRegression()}, TypeError, "not a DP estimator"),
        (
            {
                "estimator": make_pipeline(
                    StandardScaler(), DPLogisticRegression(classes=[0, 1])
                ),
                "param_distributions": {"dplogisticregression__clip_norm": [1.0]},
            },
            TypeError,
            "StandardScaler",
        ),
        ({"param_distributions": {"epsilon": [1.0, 2.0]}}, ValueError, "epsilon"),
        ({"epsilon": 1e-9}, ValueError, "too small"),
        (
            {
                "estimator": DPRandomFeaturesRegressor(),
                "param_distributions": {"n_features": [10]},
            },
            ValueError,
            "score_bound",
        ),
    ],
    ids=[
        "empty",
        "empty-dict",
        "non-dp",
        "non-dp-step",
        "epsilon-grid",
        "tiny",
        "no-bound",
    ],
)
def test_bad_input_fails_before_any_fit(data, monkeypatch, params, error, match):
    X, y = data
    fits = []
    monkeypatch.setattr(
        DPLogisticRegression, "fit", lambda self, *a, **k: fits.append(1)
    )
    est = search(**params)
    with pytest.raises(error, match=match):
        est.fit(X, y)
    assert fits == []
    assert [k for k in vars(est) if k.endswith("_")] == []


@parametrize_with_checks(
    [
        DPRandomSearchCV(
            DPLogisticRegression(), {"clip_norm": [0.5, 1.0]}, n_iter=2, epsilon=1e4
        ),
        DPRandomSearchCV(
            DPRandomFeaturesRegressor(),
            {"clip_norm": [1.0, 2.0]},
            n_iter=2,
            epsilon=1e4,
            score_bound=100.0,
        ),
    ],
    expected_failed_checks=lambda est: (
        {
            "check_regressors_train": (
                "the winner is trained on the 80% training part only (no refit: "
                "it would cost another budget); on the check's n=200 a random-"
                "features model then scores training R² ~0.24 < 0.5 (alone, on "
                "all rows, ~0.49)."
            )
        }
        if type(est.estimator).__name__ == "DPRandomFeaturesRegressor"
        else {}
    ),
)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        check(estimator)


# --------------------------------------------------------------------------
# Issue 29, items 1-5: what a grid may change, what the winner carries, what
# the candidates may say.
# --------------------------------------------------------------------------


def scaled_pipeline(prep=None, **clf):
    """DP scaler, a shape-only step, DP logistic regression."""
    return Pipeline(
        [
            ("scale", DPStandardScaler(bounds=(-5.0, 5.0))),
            ("prep", Normalizer() if prep is None else prep),
            ("clf", DPLogisticRegression(**{"classes": [0, 1], **clf})),
        ]
    )


@pytest.fixture
def runs(monkeypatch):
    """The candidates the search fits, in order (a spy on its one fit helper)."""
    fitted = []
    real = _search._fit_and_score

    def spy(candidate, *args):
        fitted.append(candidate)
        return real(candidate, *args)

    monkeypatch.setattr(_search, "_fit_and_score", spy)
    return fitted


def _fits_then_refuses_before_any_run(est, data, neighbour, runs, match):
    """The search fits ``data``; on ``neighbour`` it raises ``match`` before
    any run (``runs``: the spy). Returns the refusal."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        est.fit(*data)
        before = len(runs)
        with pytest.raises(ValueError, match=match) as error:
            est.fit(*neighbour)
    assert len(runs) == before
    return error.value


@pytest.mark.parametrize(
    "grid, match",
    [
        ({"prep": [Normalizer(), SimpleImputer()]}, "SimpleImputer"),
        ({"prep": [StandardScaler()]}, "StandardScaler"),
        (
            {"prep": [DPStandardScaler(epsilon=3.0)]},
            r"DP estimator \(DPStandardScaler\) at step 'prep'",
        ),
        (
            {"scale": ["passthrough", DPStandardScaler()]},
            "DP step DPStandardScaler at step 'scale' by 'passthrough'",
        ),
        ({"scale": [StandardScaler()]}, "StandardScaler"),
        ({"clf": [LogisticRegression()]}, "LogisticRegression"),
        (
            {"prep": [FunctionTransformer(kw_args={"s": DPStandardScaler()})]},
            "holds a DP estimator",
        ),
        ({"clf__classes": [[0, 1], None]}, "changes what DPLogisticRegression"),
        ({"clf": [DPLogisticRegression()]}, "changes what DPLogisticRegression"),
        (
            [{"clf__clip_norm": [1.0]}, {"steps": [[("clf", DPLogisticRegression())]]}],
            "steps of the pipeline",
        ),
    ],
    ids=[
        "imputer",
        "scaler",
        "new-dp-step",
        "dp-step-dropped",
        "dp-step-swapped",
        "non-dp-model",
        "hidden-dp",
        "label-set",
        "label-set-object",
        "steps",
    ],
)
def test_a_grid_that_changes_the_structure_is_refused_before_any_fit(
    data, runs, grid, match
):
    # Item 1: the candidate as built is checked, every listed value of the
    # grid before anything is drawn (n_iter=1: even the one run never fits).
    X, y = data
    est = search(estimator=scaled_pipeline(), param_distributions=grid, n_iter=1)
    with pytest.raises((TypeError, ValueError), match=match):
        est.fit(X, y)
    assert runs == []
    assert [k for k in vars(est) if k.endswith("_")] == []


def test_grid_values_are_cloned_and_their_dp_steps_calibrated_by_the_search(data, runs):
    # Item 1: a DP step passed in the grid gets the search's epsilon, delta,
    # noise and seed (its own ε = 3 and seed 5 are overridden), and no two
    # candidates share an object: the grid's own objects are never fitted.
    X, y = data
    given = DPStandardScaler(bounds=(-3.0, 3.0), epsilon=3.0, random_state=5)
    shape = Normalizer()
    fitted = search(
        estimator=scaled_pipeline(),
        param_distributions={"scale": [given], "prep": [shape]},
        n_iter=6,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        fitted.fit(X, y)
    assert len(runs) > 1
    objects = [id(step) for run in runs for _, step in run.steps]
    assert len(set(objects)) == len(objects)
    assert not hasattr(given, "privacy_spent_") and given.random_state == 5
    winner = fitted.best_estimator_
    scale, clf = winner.named_steps["scale"], winner.named_steps["clf"]
    assert winner.named_steps["prep"] is not shape
    assert scale is not given and scale.epsilon == clf.epsilon < 3.0
    assert scale.random_state not in (None, 5)
    assert scale.random_state != clf.random_state
    seeds = [run.named_steps["scale"].random_state for run in runs]
    assert len(set(seeds)) == len(seeds)  # no two candidates share noise
    mu = fitted.candidate_budget_.mu
    assert math.hypot(scale.privacy_spent_.mu, clf.privacy_spent_.mu) <= mu


def test_a_grid_cannot_change_what_a_step_protects(comparisons):
    # Item 2: DPBradleyTerry's privacy_unit decides its adjacency.
    pairs, y = comparisons
    pipe = make_pipeline(
        PairsEncoder(n_items=8),
        DPBradleyTerry(classes=[0, 1], privacy_unit="comparison"),
    )
    est = search(
        estimator=pipe,
        param_distributions={"dpbradleyterry__privacy_unit": ["comparison", "outcome"]},
    )
    with pytest.raises(ValueError, match="replace one comparison outcome"):
        est.fit(pairs, y)
    given = DPBradleyTerry(classes=[0, 1], privacy_unit="outcome")
    with pytest.raises(ValueError, match="changes what DPBradleyTerry"):
        search(estimator=pipe, param_distributions={"dpbradleyterry": [given]}).fit(
            pairs, y
        )


def test_the_claim_is_the_unit_every_dp_step_protects():
    # Item 2: a record-level step beside an outcome-level one protects one
    # outcome together, not one record.
    pipe = make_pipeline(DPStandardScaler(), DPBradleyTerry(classes=[0, 1]))
    claim = search(estimator=pipe, param_distributions={"dpbradleyterry__alpha": [1.0]})
    assert claim.privacy_budget().adjacency == REPLACE_ONE_OUTCOME
    alone = search(estimator=DPBradleyTerry(privacy_unit="comparison"))
    assert alone.privacy_budget().adjacency == REPLACE_ONE


@pytest.mark.parametrize("seeded", [False, True])
def test_the_released_model_carries_the_searchs_cost(data, seeded):
    # Item 3: recording what you release charges the whole search, whether
    # the winner, one of its DP steps or a pickled copy; a refitted winner
    # is charged the search and its new fits; a clone carries nothing.
    X, y = data
    fitted = search(
        estimator=scaled_pipeline(),
        param_distributions={"clf__clip_norm": [0.5, 1.0]},
        random_state=0 if seeded else None,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        fitted.fit(X, y)
    cost = fitted.privacy_spent_
    winner = fitted.best_estimator_
    copy = pickle.loads(pickle.dumps(winner))
    for released in (winner, winner.named_steps["clf"], copy, copy[0]):
        ledger = PrivacyLedger(delta=DELTA).record(released)
        assert ledger.costs == (cost,)
        assert ledger.total().epsilon == pytest.approx(cost.epsilon)
    both = PrivacyLedger(delta=DELTA).record(fitted).record(winner)
    assert both.costs == (cost, cost)  # counted twice, never refused
    assert not hasattr(clone(winner), _ledger.SEARCH_RELEASE)
    # Only the model refitted: its new fit is charged beside the search,
    # and the scaler's fit (in the search's cost already) is not again.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        winner.set_params(clf__random_state=None, scale__random_state=None)
        winner[-1].fit(winner[0].transform(X), y)
    for recorded in (winner, fitted):
        assert PrivacyLedger(delta=DELTA).record(recorded).costs == (
            cost,
            winner[-1].privacy_spent_,
        )
    # Refitted whole, the winner still has the hyperparameters the search
    # chose from the same data: the search is charged once (not once per
    # marked step), then the new fits; the search itself now predicts with
    # them.
    winner.fit(X, y)
    new_fits = (winner[0].privacy_spent_, winner[-1].privacy_spent_)
    assert PrivacyLedger(delta=DELTA).record(winner).costs == (cost, *new_fits)
    for step in (winner[0], winner[-1]):
        assert PrivacyLedger(delta=DELTA).record(step).costs == (
            cost,
            step.privacy_spent_,
        )
    assert PrivacyLedger(delta=DELTA).record(fitted).costs == (cost, *new_fits)


def test_the_label_set_is_read_once_from_all_of_y(runs):
    # Item 4: one label occurs once; for seed 1 that row is a validation
    # row, so a candidate reading its own training part would not see it.
    X, y = make_classification(
        n_samples=300,
        n_features=4,
        n_informative=3,
        n_redundant=0,
        n_classes=3,
        random_state=0,
    )
    rare = int(np.flatnonzero(y == 2)[0])
    y = np.where(y == 2, 1, y)
    y[rare] = 2
    seed = next(s for s in range(50) if rare in as_generator(s).permutation(300)[:60])
    est = search(
        estimator=DPLogisticRegression(),
        param_distributions={"clip_norm": [0.5, 1.0]},
        random_state=seed,
        n_iter=4,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    assert runs and all(np.array_equal(run.classes, [0, 1, 2]) for run in runs)
    np.testing.assert_array_equal(est.classes_, [0, 1, 2])
    labels = [w for w in caught if "label set" in str(w.message)]
    assert len(labels) == 1 and labels[0].category is PrivacyLeakWarning
    from skdp._base import PUBLIC_LABELS

    assert est.privacy_spent_.caveats == (PUBLIC_LABELS,)


def test_bradley_terry_outcome_labels_are_read_once_from_all_of_y(comparisons, runs):
    """DPBradleyTerry with classes=None declares {0, 1}; other outcome labels
    are read from y. In a search they are read once, from all of y, and
    declared to every candidate (one warning); with 0/1 outcomes nothing is
    read and the candidates keep classes=None."""
    from skdp.ranking import pairs_to_design

    pairs, y = comparisons
    X = pairs_to_design(pairs, 8)
    signed = np.where(y == 1, 1, -1)
    grid = {"alpha": [1e-3, 1e-2]}
    est = search(
        estimator=DPBradleyTerry(), param_distributions=grid, n_iter=4, random_state=0
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, signed)
    assert runs and all(np.array_equal(run.classes, [-1, 1]) for run in runs)
    np.testing.assert_array_equal(est.classes_, [-1, 1])
    labels = [w for w in caught if "label set" in str(w.message)]
    assert len(labels) == 1 and labels[0].category is PrivacyLeakWarning
    runs.clear()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search(
            estimator=DPBradleyTerry(),
            param_distributions=grid,
            n_iter=4,
            random_state=0,
        ).fit(X, y)
    assert runs and all(run.classes is None for run in runs)
    assert not [w for w in caught if "label set" in str(w.message)]


def test_a_grid_cannot_change_a_declared_label_set(data, runs):
    """``classes`` declares the labels of all of y. In the grid, one record
    labelled 2 made a candidate declaring [0, 1] fail, and the search with
    it: whether it failed showed which candidates ran. The grid may not
    change a declared label set: refused before any draw, with or without
    that record, whatever the seed."""
    X, y = data
    rare = y.copy()
    rare[0] = 2
    grid = {"classes": [[0, 1], [0, 1, 2]]}
    messages = set()
    for labels in (y, rare):
        for seed in range(3):
            est = search(
                estimator=DPLogisticRegression(classes=[0, 1, 2]),
                param_distributions=grid,
                random_state=seed,
            )
            with pytest.raises(ValueError, match="changes the label set") as error:
                est.fit(X, labels)
            messages.add(str(error.value))
    assert runs == [] and len(messages) == 1
    # The same set in another order is the same declaration.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        search(param_distributions={"classes": [[1, 0]]}, random_state=0).fit(X, y)


def test_a_label_outside_the_declared_classes_is_refused_before_any_draw(data, runs):
    """A label outside the declared classes failed only the runs whose
    training part held it: the search failed for one split and not for
    another. All of y is checked before any draw; the message names no label."""
    X, y = data
    rare = y.copy()
    rare[0] = 2
    m = round(0.2 * len(y))
    in_valid = [0 in as_generator(s).permutation(len(y))[:m] for s in range(20)]
    seeds = [in_valid.index(True), in_valid.index(False)]  # validation, training
    for seed in seeds:
        est = search(random_state=seed, n_iter=3)
        error = _fits_then_refuses_before_any_run(
            est, (X, y), (X, rare), runs, "not in the declared"
        )
        assert "2" not in str(error)
    assert all(np.array_equal(np.unique(run.classes), [0, 1]) for run in runs)


class _Chatty(DPLogisticRegression):
    """A DP estimator whose fit (a private_fit, whose warnings the search may
    re-emit) warns with its own parameter."""

    @private_fit
    def fit(self, X, y):
        warnings.warn(f"fitting with clip_norm={self.clip_norm}", stacklevel=2)
        warnings.warn("the same for every candidate", stacklevel=2)
        return DPLogisticRegression.fit.__wrapped__(self, X, y)


def test_candidates_run_silent_and_only_the_winner_speaks(data, runs, capsys):
    # Item 5: neither the number of runs nor the losers show in warnings or
    # output: the winner's warnings are re-emitted, each once; verbose is off.
    X, y = data
    est = search(
        estimator=_Chatty(classes=[0, 1], verbose=2),
        param_distributions={"clip_norm": [0.1, 0.2, 0.5, 1.0, 2.0, 5.0]},
        n_iter=20,
        random_state=3,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    assert len({run.clip_norm for run in runs}) > 1
    said = [str(w.message) for w in caught if w.category is UserWarning]
    assert said == [
        f"fitting with clip_norm={est.best_estimator_.clip_norm}",
        "the same for every candidate",
    ]
    assert capsys.readouterr().out == ""
    assert all(run.verbose == 0 for run in runs)
    # A seeded search warns once, for itself; its runs' seeds are its own.
    seeded = [str(w.message) for w in caught if "seeds the privacy" in str(w.message)]
    assert len(seeded) == 1 and "DPRandomSearchCV" in seeded[0]


@pytest.mark.parametrize("nested", [False, True])
def test_a_pipelines_runs_are_silent_at_every_level(data, runs, capsys, nested):
    # Nested, the model's verbose is "inner__clf__verbose" (mutation testing:
    # reading the name after the first "__" left it on, and no test noticed).
    X, y = data
    pipe = Pipeline(
        [
            ("scale", DPStandardScaler(bounds=(-5.0, 5.0))),
            ("clf", DPLogisticRegression(classes=[0, 1], verbose=2, max_iter=5)),
        ],
        verbose=True,
    )
    prefix = "inner__" if nested else ""
    search(
        estimator=Pipeline([("inner", pipe)], verbose=True) if nested else pipe,
        param_distributions={f"{prefix}clf__clip_norm": [0.5, 1.0]},
        n_iter=3,
    ).fit(X, y)
    assert capsys.readouterr().out == ""
    inner = [run[-1] if nested else run for run in runs]
    assert all(run.verbose is False for run in runs)
    assert all(run.verbose is False and run[-1].verbose == 0 for run in inner)


@pytest.mark.parametrize("nested", [False, True])
def test_fit_callbacks_are_refused_before_any_run(data, nested):
    # scikit-learn 1.9's callbacks survive clone: one set on the pipeline saw
    # every run's parameters and fitted model, and the number of runs, which
    # the search keeps secret (review).
    pytest.importorskip("sklearn.callback")

    class Spy:
        seen = 0

        def __getattr__(self, name):  # any hook: count the call
            def hook(*args, **kwargs):
                Spy.seen += 1

            return hook

    X, y = data
    pipe = make_pipeline(
        DPStandardScaler(bounds=(-5.0, 5.0)), DPLogisticRegression(classes=[0, 1])
    )
    pipe.set_callbacks(Spy())
    prefix = "inner__" if nested else ""
    searcher = DPRandomSearchCV(
        Pipeline([("inner", pipe)]) if nested else pipe,
        {f"{prefix}dplogisticregression__clip_norm": [0.5, 1.0]},
        n_iter=3,
    )
    with pytest.raises(TypeError, match="fit callbacks"):
        searcher.fit(X, y)
    assert Spy.seen == 0 and not hasattr(searcher, "best_estimator_")


@pytest.mark.parametrize("noise", ["fast", "secure"])
def test_a_step_accounted_in_zcdp_but_not_gaussian_is_refused(noise):
    # DPSparseGLM's budget is zCDP (Gumbel peels and Gaussian values), not
    # μ-GDP: calibrated as a μ-GDP step, its ε would let it spend more than
    # its share of the run's μ.
    from skdp import DPSparseGLM

    X = np.random.default_rng(0).normal(size=(200, 4))
    searcher = DPRandomSearchCV(
        DPSparseGLM(sparsity=2, noise=noise),
        {"x_bound": [1.0, 2.0]},
        n_iter=3,
        score_bound=10.0,
    )
    with pytest.raises(TypeError, match="not all-Gaussian"):
        searcher.fit(X, X[:, 0])


def test_a_delta_that_covers_a_step_alone_is_refused(data, runs):
    # At delta=0.9999 each step's epsilon rounded to 0 and the inner step's
    # parameter check refused it, naming a parameter the user never set.
    X, y = data
    searcher = search(param_distributions={"clip_norm": [0.5, 1.0]}, delta=0.9999)
    with pytest.raises(ValueError, match="Choose a smaller delta"):
        searcher.fit(X, y)
    assert runs == []


def test_verbose_speaks_of_the_search_only(data, runs, capsys):
    """Issue 32, item 5: two lines whatever the number of runs, none of them
    about a candidate (no count, no per-run progress, no time), and the
    candidates stay silent even when they are verbose themselves."""
    X, y = data
    outputs = {}
    for seed in range(6):
        runs.clear()
        fitted = search(
            estimator=DPLogisticRegression(classes=[0, 1], verbose=2, max_iter=5),
            n_iter=3,
            verbose=1,
            random_state=seed,
        ).fit(X, y)
        out = capsys.readouterr().out
        outputs[len(runs)] = out
        lines = out.strip().splitlines()
        assert len(lines) == 2 and all(
            line.startswith("[DPRandomSearchCV]") for line in lines
        )
        assert str(fitted.best_params_) in lines[1]
        assert "stays secret" in lines[0]
        assert all(run.verbose == 0 for run in runs)
    assert len(outputs) > 1  # the seeds drew different numbers of runs
    # The first line, printed before any fit, is the same for every K.
    assert len({out.splitlines()[0] for out in outputs.values()}) == 1


def test_runs_in_threads_let_no_warning_through(data):
    import joblib

    # parallel_config is joblib >= 1.3; the oldest supported joblib (1.2)
    # has parallel_backend.
    parallel_config = getattr(joblib, "parallel_config", joblib.parallel_backend)

    X, y = data
    est = search(
        estimator=_Chatty(classes=[0, 1]),
        param_distributions={"clip_norm": [0.1, 0.2, 0.5, 1.0, 2.0, 5.0]},
        n_iter=20,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with parallel_config(backend="threading", n_jobs=2):
            est.fit(X, y)
    assert [w for w in caught if w.category is UserWarning] == []


def test_candidates_warnings_come_back_from_worker_processes(data):
    X, y = data
    est = search(
        estimator=_Chatty(classes=[0, 1]),
        param_distributions={"clip_norm": [1.0]},
        n_iter=3,
        n_jobs=2,
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    said = [str(w.message) for w in caught if w.category is UserWarning]
    assert said == ["fitting with clip_norm=1.0", "the same for every candidate"]


def test_an_extreme_record_warns_the_same_for_any_n_jobs():
    """np.errstate(all="ignore") of the search's fit does not reach joblib's
    workers: with n_jobs=2 one validation record of 1e200 made scoring warn
    (overflow in the squared error), and the warning was re-emitted. Each
    run is silent wherever it runs: the same warnings (none) for n_jobs=None
    and 2, with or without that record."""
    from sklearn.datasets import make_regression

    from skdp import DPLinearRegression

    X, y = make_regression(n_samples=500, n_features=5, noise=1.0, random_state=0)
    X, y = X / np.abs(X).max(), y / np.abs(y).max()
    seed = 3
    valid = as_generator(seed).permutation(len(y))[: round(0.2 * len(y))]
    big_y, big_X = y.copy(), X.copy()
    big_y[valid[0]] = 1e200
    big_X[valid[1]] = 1.7e308
    said = set()
    for n_jobs in (None, 2):
        for features, labels in ((X, y), (X, big_y), (big_X, y)):
            est = DPRandomSearchCV(
                DPLinearRegression(),
                {"fit_intercept": [True, False]},
                n_iter=3,
                epsilon=1.0,
                delta=DELTA,
                score_bound=4.0,
                random_state=seed,
                n_jobs=n_jobs,
            )
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                est.fit(features, labels)
            said.add(
                tuple(
                    (w.category, str(w.message))
                    for w in caught
                    if "seeds the privacy" not in str(w.message)
                )
            )
    assert said == {()}


# The fuzz: random grids over step swaps, budget-shaping parameters and
# objects. Each listed option is either fine or breaks the structure; the
# oracle below says which from the options alone.
_OPTIONS = {
    "scale": [
        (lambda: DPStandardScaler(bounds=(-5.0, 5.0)), True),
        (
            lambda: DPStandardScaler(bounds=(-3.0, 3.0), epsilon=3.0, random_state=7),
            True,
        ),
        (lambda: StandardScaler(), False),
        (lambda: SimpleImputer(), False),
        (lambda: "passthrough", False),
        (lambda: Normalizer(), False),
    ],
    "prep": [
        (lambda: Normalizer(), True),
        (lambda: "passthrough", True),
        (lambda: PolynomialFeatures(degree=1), True),
        (lambda: FunctionTransformer(), True),
        (lambda: StandardScaler(), False),
        (lambda: DPStandardScaler(bounds=(-5.0, 5.0)), False),
    ],
    "clf": [
        (
            lambda: DPLogisticRegression(classes=[0, 1], epsilon=5.0, random_state=3),
            True,
        ),
        (lambda: DPLogisticRegression(classes=[0, 1], verbose=1, max_iter=20), True),
        (lambda: DPLogisticRegression(), False),  # reads the label set
        (lambda: LogisticRegression(), False),
    ],
    "clf__clip_norm": [(lambda: 0.5, True), (lambda: 2.0, True)],
    "clf__accounting": [(lambda: "exact", True), (lambda: "paper", True)],
    "clf__classes": [(lambda: [0, 1], True), (lambda: None, False)],
    "scale__bounds": [(lambda: (-5.0, 5.0), True), (lambda: (-2.0, 2.0), True)],
}


def _breaks(combination):
    """Whether one combination of options (key -> option) breaks the
    structure: a bad step, or a final model that reads its label set."""
    if not all(_OPTIONS[key][i][1] for key, i in combination.items()):
        return True
    if "clf" not in combination:
        return False
    model = _OPTIONS["clf"][combination["clf"]][0]()
    if not isinstance(model, DPLogisticRegression):
        return True
    return model.classes is None and "clf__classes" not in combination


def _random_grid(rng):
    """A grid (or list of grids) of random options, and whether the search
    must refuse it: some combination of listed values breaks the structure."""
    grids, refused = [], False
    for _ in range(rng.integers(1, 3)):
        keys = rng.choice(sorted(_OPTIONS), size=rng.integers(1, 4), replace=False)
        picks = {
            key: list(
                rng.choice(len(_OPTIONS[key]), size=rng.integers(1, 3), replace=False)
            )
            for key in keys
        }
        refused |= any(_breaks(c) for c in ParameterGrid(picks))
        grids.append(
            {key: [_OPTIONS[key][i][0]() for i in p] for key, p in picks.items()}
        )
    return (grids[0] if len(grids) == 1 else grids), refused


@pytest.mark.parametrize("seed", range(60))
def test_fuzz_random_grids_are_refused_or_released_as_claimed(data, runs, capsys, seed):
    X, y = data[0][:300], data[1][:300]
    grid, refused = _random_grid(np.random.default_rng(seed))
    listed = [grid] if isinstance(grid, dict) else grid
    given = [v for g in listed for values in g.values() for v in values]
    est = search(
        estimator=scaled_pipeline(),
        param_distributions=grid,
        n_iter=3,
        random_state=seed,
    )
    if refused:
        with pytest.raises(
            (TypeError, ValueError), match=r"param_distributions|Invalid parameter"
        ):
            est.fit(X, y)
        assert runs == []  # refused before any fit
        return
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        est.fit(X, y)
    assert capsys.readouterr().out == ""
    claim = est.privacy_spent_
    winner = est.best_estimator_
    # Structure: the same DP steps at the same places, a shape-only middle.
    assert [name for name, _ in winner.steps] == ["scale", "prep", "clf"]
    scale, prep, clf = (step for _, step in winner.steps)
    assert type(scale) is DPStandardScaler and type(clf) is DPLogisticRegression
    assert prep == "passthrough" or type(prep) in (
        Normalizer,
        PolynomialFeatures,
        FunctionTransformer,
    )
    # Every object in the winner is the search's own, never the grid's.
    assert all(step is not value for _, step in winner.steps for value in given)
    # Every DP step calibrated and seeded by the search, and silent.
    dp = (scale, clf)
    assert scale.epsilon == clf.epsilon and scale.delta == clf.delta == DELTA
    assert all(step.noise == est.noise for step in dp)
    assert scale.random_state != clf.random_state
    assert {scale.random_state, clf.random_state}.isdisjoint({None, 3, 7})
    assert clf.verbose == 0
    mu = est.candidate_budget_.mu
    assert math.hypot(*(step.privacy_spent_.mu for step in dp)) <= mu
    # Adjacency and the cost a ledger charges for what is released.
    assert all(step.privacy_spent_.adjacency == claim.adjacency for step in dp)
    assert claim.adjacency == REPLACE_ONE
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        assert PrivacyLedger(delta=DELTA).record(winner).costs == (claim,)
    assert claim.epsilon <= 2.0 * (1 + 1e-9)


def test_a_warning_that_escapes_a_run_is_dropped(data, monkeypatch):
    # Runs in threads share the process's warning filters: one run's
    # catch_warnings can be undone by another's exit, so a warning may
    # escape its run. The search catches (and drops) what escapes.
    X, y = data
    real = _search._fit_and_score

    def leaky(candidate, *args):
        warnings.warn("escaped from a run", UserWarning, stacklevel=1)
        return real(candidate, *args)

    monkeypatch.setattr(_search, "_fit_and_score", leaky)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search(n_iter=6).fit(X, y)
    assert [str(w.message) for w in caught] == []


class _Fixed:
    """A fitted model that predicts given values (for the score alone)."""

    def __init__(self, prediction):
        self.prediction = np.asarray(prediction)

    def predict(self, X):
        return self.prediction


def test_the_score_is_a_mean_of_per_record_terms_in_the_declared_range():
    # The score's sensitivity is range/m only if every record's term lies in
    # [0, 1] (accuracy) or [-bound, 0]: losses are clipped to the bound, and
    # a non-finite prediction costs the bound.
    y = np.array([1.0, 2.0, 0.0, 0.0, 5.0])
    model = _Fixed([0.0, 2.5, np.inf, np.nan, 5.0])
    mse = _search._score(model, None, y, "neg_mean_squared_error", 4.0)
    assert mse == pytest.approx(-(1.0 + 0.25 + 4.0 + 4.0 + 0.0) / 5)
    mae = _search._score(model, None, y, "neg_mean_absolute_error", 0.75)
    assert mae == pytest.approx(-(0.75 + 0.5 + 0.75 + 0.75 + 0.0) / 5)
    labels = _Fixed(["a", "b", "b"])
    assert _search._score(labels, None, np.array(["a", "a", "b"]), "accuracy", 1.0) == (
        pytest.approx(2 / 3)
    )


@pytest.mark.parametrize("scoring, bound", [("accuracy", 1.0), ("regression", 4.0)])
def test_each_score_gets_noise_of_exactly_its_sensitivity_over_mu(
    data, monkeypatch, scoring, bound
):
    """White box, noise="fast": every run's score gets Gaussian noise of std
    Δ/μ_c, Δ = (score range)/m, exactly (no secure-grid slack, no other
    factor); secure noise's Δ/(μ_c − 2^-16) is tested above."""
    X, y = data
    m = round(0.2 * X.shape[0])
    calls = gaussian_noise_stds(monkeypatch, _search)
    if scoring == "accuracy":
        fitted = search().fit(X, y)
    else:
        fitted = search(
            estimator=DPRandomFeaturesRegressor(),
            param_distributions={"clip_norm": [1.0, 2.0]},
            score_bound=bound,
        ).fit(X, y.astype(float))
    mu = fitted.candidate_budget_.mu
    assert calls
    for std in calls:
        assert std == pytest.approx(bound / m / mu, rel=1e-12)


@pytest.mark.parametrize(
    "n, fraction, ok",
    [(10, 0.01, False), (3, 0.5, False), (5, 0.2, True), (3, 0.34, True)],
)
def test_the_split_needs_one_validation_and_two_training_rows(n, fraction, ok):
    # m = round(fraction·n) validation rows (the score's sensitivity is 1/m)
    # and n − m >= 2 training rows: refused below, fitted at the edge.
    X = np.tile([[0.0, 1.0], [1.0, 0.0]], (3, 1))[:n]
    y = np.array([0, 1, 0, 1, 0, 1])[:n]
    est = search(validation_fraction=fraction, n_iter=1)
    if ok:
        assert est.fit(X, y).best_estimator_.n_features_in_ == 2
    else:
        with pytest.raises(ValueError, match="is too few"):
            est.fit(X, y)


@pytest.mark.parametrize("n_iter", [1, 3])
def test_the_released_cost_states_the_unit_the_steps_protect(comparisons, n_iter):
    # A DPBradleyTerry that protects one comparison's outcome: the search's
    # cost (n_iter = 1 is one run, stated as the run's cost) claims that
    # unit, not one record, in privacy_spent_ and in candidate_budget_.
    pairs, y = comparisons
    pipe = make_pipeline(
        PairsEncoder(n_items=8),
        DPBradleyTerry(classes=[0, 1], privacy_unit="outcome"),
    )
    est = search(
        estimator=pipe,
        param_distributions={"dpbradleyterry__alpha": [0.5, 1.0]},
        n_iter=n_iter,
    )
    fitted = est.fit(pairs, y)
    assert fitted.privacy_spent_.adjacency == REPLACE_ONE_OUTCOME
    assert fitted.candidate_budget_.adjacency == REPLACE_ONE_OUTCOME


@pytest.mark.parametrize("skipped", ["passthrough", "drop", None])
def test_every_step_after_a_skipped_one_is_checked(data, monkeypatch, skipped):
    """A skipped step ("passthrough", "drop", None) ends nothing: the steps
    after it are checked too, so a non-DP step that reads values
    (SimpleImputer) behind it is refused before any fit."""
    X, y = data
    fits = []
    monkeypatch.setattr(
        DPLogisticRegression, "fit", lambda self, *a, **k: fits.append(1)
    )
    estimator = Pipeline(
        [
            ("skip", skipped),
            ("impute", SimpleImputer()),
            ("clf", DPLogisticRegression(classes=[0, 1])),
        ]
    )
    with pytest.raises(TypeError, match=r"SimpleImputer .*not a DP estimator"):
        search(estimator=estimator).fit(X, y)
    assert fits == []


@pytest.mark.parametrize(
    "scoring", [None, "neg_mean_squared_error", "neg_mean_absolute_error"]
)
def test_the_released_score_is_the_declared_scoring(scoring):
    """A regression search releases the mean clipped loss it declares
    (squared error by default and for "neg_mean_squared_error", absolute
    error for "neg_mean_absolute_error"), replayed on the validation rows of
    a seeded one-run search; the score noise is ~1e-6 at epsilon=1e4, far
    below the gap between the two losses."""
    from sklearn.datasets import make_regression

    X, y = make_regression(n_samples=600, n_features=4, noise=5.0, random_state=0)
    y = y / np.std(y)
    n, m, bound = X.shape[0], round(0.2 * X.shape[0]), 4.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        fitted = DPRandomSearchCV(
            DPRandomFeaturesRegressor(),
            {"clip_norm": [1.0]},
            n_iter=1,
            epsilon=1e4,
            delta=DELTA,
            scoring=scoring,
            score_bound=bound,
            random_state=0,
        ).fit(X, y)
    valid = as_generator(0).permutation(n)[:m]
    error = fitted.best_estimator_.predict(X[valid]) - y[valid]
    squared = -np.mean(np.minimum(error**2, bound))
    absolute = -np.mean(np.minimum(np.abs(error), bound))
    noise_std = bound / m / fitted.candidate_budget_.mu
    assert abs(squared - absolute) > 100 * noise_std
    expected = absolute if scoring == "neg_mean_absolute_error" else squared
    assert abs(fitted.best_score_ - expected) < 5 * noise_std


def test_a_grid_with_distributions_is_searched(data):
    """Values drawn from distributions (objects with ``rvs``) are not listed
    values: they are drawn per run and checked as drawn."""
    X, y = data
    fitted = search(param_distributions={"clip_norm": stats.uniform(0.5, 1.0)}).fit(
        X, y
    )
    assert 0.5 <= fitted.best_params_["clip_norm"] <= 1.5


@pytest.mark.parametrize(
    "grid",
    [
        [{"clip_norm": stats.uniform(0.5, 1.0)}, {"classes": [None]}],
        # 400 combinations: past 256, checked one listed value at a time.
        {"clip_norm": list(np.linspace(0.5, 2.0, 200)), "classes": [[0, 1], None]},
    ],
    ids=["second-grid", "many-combinations"],
)
def test_listed_values_are_refused_whatever_is_drawn(data, monkeypatch, grid):
    """A listed value that changes what a step declares (``classes=None``
    reads the label set) is refused before anything is drawn: with one run,
    whatever that run would draw, in every grid of a list and also when the
    grid has too many combinations to build them all."""
    X, y = data
    fits = []
    monkeypatch.setattr(
        DPLogisticRegression, "fit", lambda self, *a, **k: fits.append(1)
    )
    for seed in range(4):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            est = search(param_distributions=grid, n_iter=1, random_state=seed)
            with pytest.raises(ValueError, match="changes what DPLogisticRegression"):
                est.fit(X, y)
    assert fits == []


def test_the_label_set_warning_names_the_remedy_at_the_callers_line(data):
    """The warning is the only thing telling the user that the label set was
    read from y: it says so, says what to do, and points at the line that
    called fit (not at skdp's internals), once."""
    X, y = data
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        search(estimator=DPLogisticRegression()).fit(X, y)
    leaks = [w for w in caught if issubclass(w.category, PrivacyLeakWarning)]
    assert len(leaks) == 1
    message = str(leaks[0].message)
    assert "label set was read from y and is treated as public" in message
    assert "If which labels occur is private, pass classes=[...] declared" in message
    assert points_at(leaks[0], __file__)


@pytest.mark.parametrize("shape", [0.0, 0.5, 1.0, 2.0])
def test_n_iter_one_runs_exactly_one_candidate(data, monkeypatch, shape):
    """n_iter=1 is calibrated as one fit with the whole budget (no selection
    to pay for): K must be 1 for every draw, never a second candidate."""
    rng = np.random.default_rng(0)
    assert {_draw_truncated_negative_binomial(rng, 1.0, shape) for _ in range(200)} == {
        1
    }
    X, y = data
    fits = []
    real = DPLogisticRegression.fit

    def counting(self, *args, **kwargs):
        fits.append(1)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(DPLogisticRegression, "fit", counting)
    search(n_iter=1, n_iter_shape=shape).fit(X, y)
    assert len(fits) == 1


@pytest.mark.parametrize("noise", ["fast", "secure"])
def test_the_total_names_its_theorem_and_each_runs_budget(data, noise):
    """privacy_spent_ says what the bound is: the best of K ~ TNB(mean,
    shape) runs, each at the released candidate budget (μ, or ρ with
    noise="secure"), by Papernot & Steinke's Theorem 2."""
    X, y = data
    fitted = search(noise=noise, n_iter=3.0, n_iter_shape=0.5).fit(X, y)
    run = fitted.candidate_budget_
    each = f"rho={run.zcdp:.4g}-zCDP" if noise == "secure" else f"mu={run.mu:.4g}-GDP"
    assert fitted.privacy_spent_.mechanism == (
        f"DPRandomSearchCV: the best of K ~ TNB(mean=3, shape=0.5) runs of a "
        f"{each} candidate (Papernot & Steinke 2022, Thm. 2)"
    )


class _ThirdPartyDP(ClassifierMixin, BaseEstimator):
    """A DP classifier without skdp's mixin: it declares its budget (that of
    the DPLogisticRegression it fits), nothing else."""

    def __init__(
        self,
        classes=None,
        epsilon=1.0,
        delta=1e-5,
        random_state=None,
        noise="fast",
        verbose=0,
    ):
        self.classes = classes
        self.epsilon = epsilon
        self.delta = delta
        self.random_state = random_state
        self.noise = noise
        self.verbose = verbose

    def _inner(self):
        return DPLogisticRegression(**self.get_params())

    def privacy_budget(self):
        return self._inner().privacy_budget()

    def fit(self, X, y):
        self.model_ = self._inner().fit(X, y)
        self.classes_ = self.model_.classes_
        self.privacy_spent_ = self.model_.privacy_spent_
        return self

    def predict(self, X):
        return self.model_.predict(X)


@pytest.mark.parametrize("classes", [None, [0, 1]])
def test_a_third_party_dp_step_gets_the_label_set_read_once(data, classes):
    """A DP step without skdp's mixin reads its label set iff its budget
    says so (PUBLIC_LABELS): then the search reads it once from all of y,
    warns, and gives it to every candidate; with declared classes nothing
    is read and nothing is said."""
    X, y = data
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fitted = search(
            estimator=_ThirdPartyDP(classes=classes),
            param_distributions={"verbose": [0]},
        ).fit(X, y)
    leaks = [w for w in caught if issubclass(w.category, PrivacyLeakWarning)]
    assert len(leaks) == (1 if classes is None else 0)
    np.testing.assert_array_equal(fitted.best_estimator_.classes, [0, 1])


def test_score_is_the_winners_score(data):
    """``score`` is the released winner's own ``score`` (post-processing of
    what is released), and needs a fitted search."""
    X, y = data
    est = search()
    with pytest.raises(NotFittedError):
        est.score(X, y)
    est.fit(X, y)
    assert est.score(X[:100], y[:100]) == est.best_estimator_.score(X[:100], y[:100])


def test_defaults_are_the_documented_ones():
    """The budget a user gets by default is the one the docstring states
    (epsilon=1.0, delta=1e-5, n_iter=10), and every parameter given is kept."""
    params = DPRandomSearchCV(DPLogisticRegression(), {"clip_norm": [1.0]}).get_params(
        deep=False
    )
    assert (params["epsilon"], params["delta"], params["n_iter"]) == (1.0, 1e-5, 10)
    assert params["n_iter_shape"] == 1.0 and params["noise"] == "fast"
    given = dict(n_iter=3, epsilon=0.5, delta=1e-7, n_jobs=2, verbose=1)
    kept = DPRandomSearchCV(DPLogisticRegression(), {}, **given).get_params(deep=False)
    assert {key: kept[key] for key in given} == given


def test_the_search_has_its_estimators_kind():
    """A search is a classifier or a regressor as its estimator is (scikit-
    learn's tools, e.g. stratified splits, read that from the tags)."""
    from sklearn.base import is_classifier, is_regressor
    from sklearn.utils import get_tags

    assert is_classifier(DPRandomSearchCV(DPLogisticRegression(), {"clip_norm": [1]}))
    regressor = DPRandomFeaturesRegressor()
    reg = DPRandomSearchCV(regressor, {"clip_norm": [1.0]}, score_bound=1.0)
    assert is_regressor(reg) and not is_classifier(reg)
    assert get_tags(reg).regressor_tags == get_tags(regressor).regressor_tags


class _Leaky(DPLogisticRegression):
    """A DP estimator whose fit (a private_fit) warns of a leak."""

    @private_fit
    def fit(self, X, y):
        warnings.warn(
            "a leak only this warning reports", PrivacyLeakWarning, stacklevel=2
        )
        return DPLogisticRegression.fit.__wrapped__(self, X, y)


def test_the_winners_warnings_keep_their_category(data):
    """The winner's warnings are re-emitted with their own category: a
    PrivacyLeakWarning stays one (filters and pytest.warns select on it),
    at the line that called fit."""
    X, y = data
    with pytest.warns(PrivacyLeakWarning, match="a leak only this warning") as rec:
        search(estimator=_Leaky(classes=[0, 1]), n_iter=2).fit(X, y)
    [leak] = [w for w in rec if "a leak only" in str(w.message)]
    assert leak.category is PrivacyLeakWarning and points_at(leak, __file__)


def test_a_seeded_search_is_reproducible_and_seeds_matter(data):
    # random_state fixes everything the search draws (the number of runs,
    # the candidates, each run's split, the noise of every fit and score):
    # two fits agree to the last bit of the released model; another seed
    # draws other noise.
    X, y = data

    def released(seed):
        fitted = search(random_state=seed).fit(X, y)
        winner = fitted.best_estimator_
        return fitted.best_params_, winner.coef_.copy(), winner.intercept_.copy()

    params, coef, intercept = released(3)
    again = released(3)
    assert again[0] == params
    np.testing.assert_array_equal(again[1], coef)
    np.testing.assert_array_equal(again[2], intercept)
    assert not np.array_equal(released(4)[1], coef)


def test_a_refit_of_a_seeded_winner_is_refused_by_the_ledger(data):
    # The winner of a seeded search keeps the seeds its run drew; a refit of
    # a clone of it draws the same noise, and the two releases together
    # cancel it. The ledger totalled them as independent (review).
    X, y = data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        fitted = search(random_state=0).fit(X, y)
        refit = clone(fitted.best_estimator_).fit(X, y)
    assert fitted.best_estimator_.random_state is not None
    assert set(refit.privacy_spent_.noise_seeds) <= set(
        fitted.privacy_spent_.noise_seeds
    )
    with pytest.raises(ValueError, match="same seeded stream"):
        PrivacyLedger().record(fitted).record(refit)
    # An unseeded search's winner draws fresh noise: nothing to refuse.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        fresh = search().fit(X, y)
    assert fresh.privacy_spent_.noise_seeds == ()
    PrivacyLedger().record(fresh).record(clone(fresh.best_estimator_).fit(X, y))


# --------------------------------------------------------------------------
# Composites: ColumnTransformer, FeatureUnion and nested pipelines
# --------------------------------------------------------------------------


def _table(n=600):
    """A DataFrame with two numeric columns and one categorical, by name."""
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "age": rng.normal(45.0, 12.0, n),
            "income": rng.lognormal(10.0, 0.8, n),
            "region": rng.choice(list("nsew"), n),
        }
    )
    signal = (frame.age - 45.0) / 12.0 + (frame.region == "n") + rng.normal(size=n)
    return frame, (signal > 0.5).to_numpy(int)


def _columns(num=None, cat=None, sparse_threshold=0.0, **params):
    # sparse_threshold=0: a sparse encoder may return a sparse matrix, so
    # the default threshold would be refused (the old rule accepted it for
    # an encoder storing one value per row).
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder

    num = DPStandardScaler() if num is None else num
    cat = OneHotEncoder(categories=[list("nsew")]) if cat is None else cat
    return ColumnTransformer(
        [("num", num, ["age", "income"]), ("cat", cat, ["region"])],
        sparse_threshold=sparse_threshold,
        **params,
    )


def test_a_column_transformer_is_searched_step_by_step(runs):
    # The search walks into a ColumnTransformer (selecting columns of a
    # DataFrame by name): its DP scaler and the model split each run's μ
    # equally, every candidate is checked as built, and the released winner,
    # recorded alone, is charged the whole search.
    from sklearn.pipeline import FeatureUnion

    X, y = _table(2000)
    estimator = make_pipeline(_columns(), DPLogisticRegression(classes=[0, 1]))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        fitted = search(
            estimator=estimator,
            param_distributions={"columntransformer__num": [DPStandardScaler()]},
            n_iter=3,
            epsilon=1.0,
            random_state=0,
        ).fit(X, y)
    # The seeded search's own notice only: nothing read without a guarantee.
    leaks = [w for w in caught if w.category is PrivacyLeakWarning]
    assert [str(w.message).split(" seeds ")[0] for w in leaks] == ["random_state=0"]
    assert len(runs) >= 1
    steps = dict(_search._steps_of(fitted.best_estimator_, fitted=True))
    scaler = steps["columntransformer__num__"]
    model = steps["dplogisticregression__"]
    assert scaler is fitted.best_estimator_[0].named_transformers_["num"]
    mu_c = fitted.candidate_budget_.mu
    for step in (scaler, model):
        assert step.privacy_spent_.mu == pytest.approx(mu_c / math.sqrt(2), rel=1e-6)
    assert fitted.score(X, y) > 0.65
    ledger = PrivacyLedger(delta=DELTA)
    ledger.record(fitted.best_estimator_)
    assert ledger.total().epsilon == pytest.approx(1.0, rel=1e-9)
    # FeatureUnion and nested pipelines are walked the same way.
    union = make_pipeline(
        FeatureUnion(
            [("a", make_pipeline(DPStandardScaler())), ("b", DPStandardScaler())]
        ),
        DPLogisticRegression(classes=[0, 1]),
    )
    prefixes = [p for p, s in _search._steps_of(union) if _search.is_dp_estimator(s)]
    assert prefixes == [
        "featureunion__a__dpstandardscaler__",
        "featureunion__b__",
        "dplogisticregression__",
    ]


@pytest.mark.parametrize(
    "columns, grid, match",
    [
        (dict(num=StandardScaler()), {}, r"StandardScaler \(columntransformer__num\)"),
        (
            {},
            {"columntransformer__num": [StandardScaler()]},
            r"StandardScaler \(columntransformer__num\) is not a DP estimator",
        ),
        (
            dict(cat=FunctionTransformer()),
            {"columntransformer__cat": [SimpleImputer()]},
            "SimpleImputer",
        ),
        (
            dict(sparse_threshold=0.3),
            {"columntransformer__cat__handle_unknown": ["ignore"]},
            "sparse_threshold=0",
        ),
    ],
    ids=["non-dp-part", "dp-part-swapped", "reads-values", "container"],
)
def test_a_column_transformer_that_reads_values_is_refused(runs, columns, grid, match):
    X, y = _table()
    estimator = make_pipeline(_columns(**columns), DPLogisticRegression(classes=[0, 1]))
    grid = grid or {"dplogisticregression__clip_norm": [1.0]}
    est = search(estimator=estimator, param_distributions=grid, n_iter=1)
    with pytest.raises((TypeError, ValueError), match=match):
        est.fit(X, y)
    assert runs == []


def test_a_column_selector_or_a_density_that_reads_values_is_refused(runs):
    # A callable column selector may choose from the values, and a sparse
    # one-hot encoding that ignores unknown categories makes the sparse-or-
    # dense choice read them: both refused before any fit; the same
    # encoder with sparse_threshold=0 (always dense) is searched.
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder

    X, y = _table()

    def chosen(frame):
        return [c for c in frame.columns if frame[c].dtype.kind == "f"]

    picky = ColumnTransformer([("num", DPStandardScaler(), chosen)])
    estimator = make_pipeline(picky, DPLogisticRegression(classes=[0, 1]))
    with pytest.raises(TypeError, match="selects the columns of 'num' with a"):
        search(estimator=estimator, n_iter=1).fit(X, y)
    ignoring = OneHotEncoder(categories=[list("nsew")], handle_unknown="ignore")
    for threshold, refused in ((0.3, True), (0.0, False)):
        estimator = make_pipeline(
            _columns(cat=ignoring, sparse_threshold=threshold),
            DPLogisticRegression(classes=[0, 1]),
        )
        est = search(
            estimator=estimator,
            param_distributions={"dplogisticregression__clip_norm": [1.0]},
            n_iter=1,
        )
        if refused:
            with pytest.raises(TypeError, match=r"through|'cat'"):
                est.fit(X, y)
        else:
            est.fit(X, y)
    assert len(runs) == 1


@pytest.mark.parametrize("variant", sorted(_containers.VARIANTS))
def test_every_part_that_may_return_a_sparse_matrix_is_refused(runs, variant):
    # Each way a part can hand a sparse matrix to the stacking (a pass-
    # through, the remainder passed through, an encoder one level down or
    # in a FeatureUnion, a sparse MissingIndicator, a row-wise function
    # returning CSR) makes the sparse-or-dense choice read the data: refused
    # before any draw, in the estimator given and in a candidate the grid
    # builds, naming the parts; with sparse_threshold=0 the search runs.
    make, parts = _containers.VARIANTS[variant]
    X, y = _containers.table(600)
    grid = {"dplogisticregression__clip_norm": [1.0]}

    def estimator(pre):
        return make_pipeline(pre, DPLogisticRegression(classes=[0, 1]))

    names = ", ".join(repr(p) for p in parts)
    message = rf"sparse matrix \({names}\).*Set sparse_threshold=0"
    with pytest.raises(TypeError, match=message):
        search(estimator=estimator(make()), param_distributions=grid).fit(X, y)
    dense = estimator(make().set_params(sparse_threshold=0))
    flip = {"columntransformer__sparse_threshold": [0.0, 0.3]}
    with pytest.raises(TypeError, match=r"A candidate .* sparse_threshold=0\.3"):
        search(estimator=dense, param_distributions=flip, n_iter=1).fit(X, y)
    assert runs == []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)  # unseeded
        fitted = search(estimator=dense, param_distributions=grid, n_iter=1).fit(X, y)
    assert not fitted.best_estimator_[0].sparse_output_
    assert len(runs) >= 1


def test_a_sparse_input_passed_through_is_refused_whatever_its_share(runs):
    # A sparse input passed through at the threshold (stored share exactly
    # 0.3, and a neighbour just below): both refused, with the same message,
    # before any draw.
    from sklearn.compose import ColumnTransformer

    X, neighbour, y = _containers.boundary_sparse()
    pre = ColumnTransformer([("keep", "passthrough", list(range(10)))])
    messages = []
    for data in (X, neighbour):
        est = search(
            estimator=make_pipeline(clone(pre), DPLogisticRegression(classes=[0, 1])),
            param_distributions={"dplogisticregression__clip_norm": [1.0]},
        )
        with pytest.raises(TypeError, match="Set sparse_threshold=0") as caught:
            est.fit(data, y)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert runs == []


def test_a_private_target_scaler_is_searched_and_its_round_trip_refused(runs):
    # A TransformedTargetRegressor is walked too: its DP transformer (fitted
    # on y) and its DP regressor each get a share of a run's μ², weighted as
    # make_private_pipeline weighs them. Its round-trip check on y (check_inverse,
    # scikit-learn's default) would warn on a mismatch one record can cause:
    # refused before any fit.
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.datasets import load_diabetes

    from skdp import DPLinearRegression

    X, y = load_diabetes(return_X_y=True)

    def pipeline(check_inverse):
        return make_pipeline(
            DPStandardScaler(),
            TransformedTargetRegressor(
                regressor=DPLinearRegression(),
                transformer=DPStandardScaler(),
                check_inverse=check_inverse,
            ),
        )

    grid = {"transformedtargetregressor__regressor__alpha": [1.0, 10.0]}
    params = dict(param_distributions=grid, score_bound=4e4, n_iter=2, epsilon=2.0)
    with pytest.raises(TypeError, match="check_inverse=True"):
        search(estimator=pipeline(True), **params).fit(X, y)
    # A func/inverse_func pair is checked on y the same way.
    logged = TransformedTargetRegressor(
        regressor=DPLinearRegression(), func=np.arcsinh, inverse_func=np.sinh
    )
    grid_alpha = {"regressor__alpha": [1.0]}
    with pytest.raises(TypeError, match="check_inverse=True"):
        search(estimator=logged, param_distributions=grid_alpha, score_bound=4e4).fit(
            X, y
        )
    assert runs == []
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        fitted = search(estimator=pipeline(False), **params).fit(X, y)
    prefixes = [
        p
        for p, s in _search._steps_of(fitted.best_estimator_, fitted=True)
        if _search.is_dp_estimator(s)
    ]
    assert prefixes == [  # in the order of their fits
        "dpstandardscaler__",
        "transformedtargetregressor__transformer__",
        "transformedtargetregressor__regressor__",
    ]
    # The target's scaler at half weight, as make_private_pipeline weighs it:
    # μ² shares 1 : 1/2 : 1 of the run's.
    steps = dict(_search._steps_of(fitted.best_estimator_, fitted=True))
    mu_c = fitted.candidate_budget_.mu
    for prefix, weight in zip(prefixes, (1.0, 0.5, 1.0), strict=True):
        assert steps[prefix].privacy_spent_.mu == pytest.approx(
            mu_c * math.sqrt(weight / 2.5), rel=1e-6
        )
    ledger = PrivacyLedger(delta=DELTA)
    ledger.record(fitted.best_estimator_)
    assert ledger.total().epsilon == pytest.approx(2.0, rel=1e-9)


def test_a_column_transformers_remainder_is_a_step_like_the_others(runs):
    # The remainder is fitted on the columns no transformer names: a non-DP
    # remainder that reads values is refused, a DP one gets its share of the
    # run's μ like every other DP step (never its own epsilon, uncharged).
    from sklearn.compose import ColumnTransformer

    X, y = _table(1000)
    X = X.assign(tenure=np.random.default_rng(1).normal(10.0, 3.0, len(X)))

    def estimator(remainder):
        pre = ColumnTransformer(
            [
                ("num", DPStandardScaler(), ["age", "income"]),
                ("cat", "drop", ["region"]),
            ],
            remainder=remainder,
            sparse_threshold=0,  # a plain remainder may return a sparse matrix
        )
        return make_pipeline(pre, DPLogisticRegression(classes=[0, 1]))

    grid = {"dplogisticregression__clip_norm": [1.0]}
    with pytest.raises(
        TypeError, match=r"StandardScaler \(columntransformer__remainder"
    ):
        search(estimator=estimator(StandardScaler()), param_distributions=grid).fit(
            X, y
        )
    assert runs == []
    fitted = search(
        estimator=estimator(DPStandardScaler(epsilon=50.0)),
        param_distributions=grid,
        n_iter=1,
        random_state=0,
    ).fit(X, y)
    rest = fitted.best_estimator_[0].named_transformers_["remainder"]
    mu_c = fitted.candidate_budget_.mu
    assert rest.privacy_spent_.mu == pytest.approx(mu_c / math.sqrt(3), rel=1e-6)


def test_a_frame_with_missing_values_is_refused_before_any_draw(runs):
    # A candidate that fails on the data where another would not would show
    # which candidates were drawn: a DataFrame is checked like an array
    # (no missing or non-finite values) before anything is drawn.
    X, y = _table()
    X.loc[3, "region"] = None
    estimator = make_pipeline(_columns(), DPLogisticRegression(classes=[0, 1]))
    est = search(
        estimator=estimator,
        param_distributions={"dplogisticregression__clip_norm": [1.0]},
    )
    with pytest.raises(ValueError, match="NaN"):
        est.fit(X, y)
    assert runs == []


def test_missing_values_are_refused_with_the_way_to_impute_them(runs):
    # Even with the guides' constant imputer first in the pipeline: the
    # search cannot tell that every candidate accepts NaN. For a numeric
    # array scikit-learn's own message advised that very imputer (new-user
    # trial); the search's says to impute before it.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] > 0).astype(int)
    X[5, 1] = np.nan
    imputer = SimpleImputer(
        strategy="constant", fill_value=0.0, keep_empty_features=True
    )
    estimator = make_pipeline(imputer, DPLogisticRegression(classes=[0, 1]))
    est = search(
        estimator=estimator,
        param_distributions={"dplogisticregression__clip_norm": [1.0]},
    )
    for given in (X, X.tolist()):
        with pytest.raises(ValueError, match="Impute before the search"):
            est.fit(given, y)
    assert runs == []


@pytest.mark.parametrize("kind", ["frame", "object-array"])
@pytest.mark.parametrize(
    "value",
    # "1e999" is a number written as text, infinite once a candidate converts
    # it; pd.NA is missing (mutation testing: both passed unchecked)
    [np.inf, -np.inf, None, np.nan, 10**400, "1e999", "-inf", "pd.NA"],
)
def test_missing_or_infinite_values_in_any_column_are_refused_before_any_draw(
    runs, kind, value
):
    """A string column makes scikit-learn's check of X look for NaN only: an
    infinity (or None in an object array) in another column reached the
    candidates, and only those passing that column through failed. Every
    column of any input is checked before anything is drawn, the same
    refusal whatever the seed; the message names no value."""
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OrdinalEncoder

    X, y = _table()
    X = X.assign(extra=np.random.default_rng(1).normal(size=len(X)))
    columns = ["age", "income", "region", "extra"]
    if kind == "object-array":
        X, columns = X.to_numpy(dtype=object), [[0, 1], [2], [3]]
    else:
        columns = [columns[:2], columns[2:3], columns[3:]]
    pre = ColumnTransformer(
        [
            ("num", DPStandardScaler(), columns[0]),
            ("cat", OrdinalEncoder(categories=[list("nsew")]), columns[1]),
            ("extra", "drop", columns[2]),
        ],
        sparse_threshold=0,
    )
    estimator = make_pipeline(pre, DPLogisticRegression(classes=[0, 1]))
    grid = {"columntransformer__extra": ["drop", "passthrough"]}
    if value == "pd.NA":
        import pandas as pd

        value = pd.NA
    neighbour = X.copy()
    if kind == "object-array":
        neighbour[5, 3] = value
    else:
        neighbour = neighbour.astype({"extra": object})
        neighbour.loc[5, "extra"] = value
    for seed in range(3):
        est = search(estimator=estimator, param_distributions=grid, random_state=seed)
        error = _fits_then_refuses_before_any_run(
            est, (X, y), (neighbour, y), runs, "contains NaN"
        )
        assert not any(c.isdigit() for c in str(error))


def test_a_plain_dp_estimator_takes_numbers_checked_before_any_draw(data, runs):
    """Every candidate of a plain DP estimator converts X to numbers: X is
    converted once, before any draw, refused with a message that quotes no
    value (numpy's would), and checked for infinities once converted."""
    X, y = data
    X = X.astype(object)
    search().fit(X, y)
    before = len(runs)
    X[3, 1] = "patient-4711"
    with pytest.raises(ValueError, match="not a number") as error:
        search().fit(X, y)
    assert "patient" not in str(error.value) and _digitless(str(error.value))
    X[3, 1] = "inf"
    with pytest.raises(ValueError, match="infinity"):
        search().fit(X, y)
    assert len(runs) == before


def _digitless(message):
    return not any(c.isdigit() for c in message)


def test_a_run_that_fails_on_the_data_loses_like_a_failed_release(runs):
    """np.log1p in the grid turns one record's -1 into -inf, which the DP
    scaler refuses: the search failed whenever such a candidate ran, so
    whether it failed showed a loser. A run that fails on the data scores
    the worst of the range and is selected like any other: the search fails
    only when every run failed (then the winner did), with a message that
    quotes nothing of the error's."""
    rng = np.random.default_rng(0)
    X = rng.lognormal(size=(2000, 5))
    y = (X[:, 0] > 1).astype(int)
    neighbour = X.copy()
    neighbour[0, 0] = -1.0
    pipe = Pipeline(
        [
            ("f", FunctionTransformer()),
            ("s", DPStandardScaler(bounds=(-5.0, 5.0))),
            ("clf", DPLogisticRegression(classes=[0, 1])),
        ]
    )
    grid = {"f__func": [None, np.log1p]}
    mixed = 0
    for seed in range(8):
        est = search(
            estimator=pipe, param_distributions=grid, n_iter=3, random_state=seed
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            est.fit(X, y)
            runs.clear()
            try:
                est.fit(neighbour, y)
                failed = None
            except MechanismFailedError as error:
                failed = str(error)
        ran = {run.named_steps["f"].func for run in runs}
        mixed += ran == {None, np.log1p}
        assert (failed is not None) == (ran == {np.log1p})
        if failed is None:
            assert est.best_params_ == {"f__func": None}
        else:
            assert "ValueError on the data" in failed and _digitless(failed)
            assert "infinity" not in failed
    assert mixed  # a seed where a failing candidate ran and lost


def _encoded(handle_unknown, **search_params):
    from sklearn.compose import ColumnTransformer
    from sklearn.preprocessing import OneHotEncoder

    pre = ColumnTransformer(
        [
            ("num", DPStandardScaler(bounds=(0.0, 100.0)), ["age"]),
            (
                "cat",
                OneHotEncoder(
                    categories=[list("nsew")],
                    handle_unknown=handle_unknown,
                    sparse_output=False,
                ),
                ["region"],
            ),
        ],
        sparse_threshold=0,
    )
    return search(
        estimator=make_pipeline(pre, DPLogisticRegression(classes=[0, 1])),
        param_distributions={"dplogisticregression__clip_norm": [0.5, 1.0]},
        n_iter=3,
        epsilon=1.0,
        **search_params,
    )


def _private_category(value, row=0, n=2000):
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {"age": rng.normal(40, 10, n), "region": rng.choice(list("nsew"), n)}
    )
    y = (frame.age > 40).to_numpy(int)
    if value is not None:
        frame.loc[row, "region"] = value
    return frame, y


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_a_plain_steps_warning_about_one_record_is_not_re_emitted(n_jobs):
    """A OneHotEncoder with fixed categories and handle_unknown="warn" warns
    of an unknown category in one record (while fitting on a training row,
    or scoring a validation row); re-emitted as the winner's warning, it
    told that the record held one. Only warnings raised inside the DP steps'
    fits (about public values) come back: the same (none) with or without it."""
    order = as_generator(0).permutation(2000)  # the seeded search's split
    said = set()
    for row in (order[0], order[-1]):  # a validation row, a training row
        for value in (None, "patient-4711-HIV+"):
            X, y = _private_category(value, row)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                _encoded("warn", random_state=0, n_jobs=n_jobs).fit(X, y)
            said.add(
                tuple(
                    str(w.message)
                    for w in caught
                    if "seeds the privacy" not in str(w.message)
                )
            )
    assert said == {()}


def test_an_error_on_one_records_value_never_quotes_it():
    """With handle_unknown="error", scikit-learn's error quotes the category
    ("Found unknown categories ['x'] in column 0"). Every run fails on such
    a record, so the search fails, with a message that quotes nothing of the
    error's: the same for two neighbours holding different values."""
    messages = set()
    for value in ("patient-4711-HIV+", "patient-0815"):
        X, y = _private_category(value)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            with pytest.raises(MechanismFailedError, match="on the data") as error:
                _encoded("error", random_state=0).fit(X, y)
        messages.add(str(error.value))
        assert "patient" not in str(error.value) and _digitless(str(error.value))
        assert error.value.__cause__ is None and error.value.__context__ is None
    assert len(messages) == 1
    X, y = _private_category(None)
    _encoded("error", random_state=0).fit(X, y)


def test_a_run_that_fails_on_its_own_release_loses_instead_of_raising(
    data, monkeypatch
):
    # A run whose fit fails on its own noisy release (MechanismFailedError:
    # a non-finite model) must not stop the search: that would reveal a
    # loser. It scores the worst of the range and is selected like any
    # other; only when it wins is its failure the release (and raised).
    from skdp.exceptions import MechanismFailedError

    X, y = data
    real = DPLogisticRegression.fit

    def fit(self, X, y):
        if self.clip_norm == 0.123:
            raise MechanismFailedError("this run's model was not finite.")
        return real(self, X, y)

    monkeypatch.setattr(DPLogisticRegression, "fit", fit)
    grid = {"clip_norm": [0.123, 1.0]}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        fitted = search(param_distributions=grid, n_iter=20, random_state=0).fit(X, y)
    assert fitted.best_params_ == {"clip_norm": 1.0}
    assert fitted.best_score_ > 0.5
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(MechanismFailedError, match="The selected run failed") as e:
            search(param_distributions={"clip_norm": [0.123]}, random_state=0).fit(X, y)
    # The failure is the search's output: its budget is spent.
    assert "budget is spent" in str(e.value)
    # A fit beyond its declared budget is a bug read from the parameters,
    # not a failed release: it stops the search.
    from skdp._base import BudgetCheckError

    def overspend(self, X, y):
        if self.clip_norm == 0.123:
            raise BudgetCheckError("would release more than its declared budget")
        return real(self, X, y)

    monkeypatch.setattr(DPLogisticRegression, "fit", overspend)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        with pytest.raises(BudgetCheckError, match="declared budget"):
            search(param_distributions=grid, n_iter=20, random_state=0).fit(X, y)


def test_a_listed_value_a_step_refuses_is_refused_before_any_draw(data):
    # scikit-learn validates a parameter only when the step is fitted, inside
    # a run: a listed clip_norm beyond MAX_CLIP made the search raise only for
    # seeds whose runs drew it (the number of runs showed).
    X, y = data
    for seed in range(4):
        grid = search(
            param_distributions={"clip_norm": [1.0, 1e200]}, n_iter=1, random_state=seed
        )
        with pytest.raises(InvalidParameterError, match="clip_norm"):
            grid.fit(X, y)
    # A value drawn from a distribution is checked as drawn: a run it builds
    # is a failed run (worst score), so the search does not stop on it.
    drawn = search(
        param_distributions={"clip_norm": stats.loguniform(1e-2, 1e120)},
        n_iter=6,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        drawn.fit(X, y)
    assert drawn.best_params_["clip_norm"] <= 1e100


@pytest.mark.parametrize("text", ["1e999", "inf", "nan"])
def test_a_number_written_as_text_is_checked_like_a_number(text):
    # An object column of numbers as text passes to a step that takes
    # numbers: '1e999' becomes inf there. Refused before any draw, like inf.
    pd = pytest.importorskip("pandas")
    rng = np.random.default_rng(0)
    numbers = rng.normal(size=200)
    column = np.array([f"{v:.3f}" for v in numbers], dtype=object)
    column[5] = text
    frame = pd.DataFrame({"a": column, "b": rng.normal(size=200)})
    pre = ColumnTransformer([("p", "passthrough", ["a", "b"])], sparse_threshold=0)
    grid = search(
        estimator=make_pipeline(pre, DPLogisticRegression(classes=[0, 1])),
        param_distributions={"dplogisticregression__clip_norm": [0.5, 1.0]},
    )
    with pytest.raises(ValueError, match="NaN, None or infinity"):
        grid.fit(frame, (numbers > 0).astype(int))


def test_the_released_stamps_do_not_count_the_runs(monkeypatch):
    """Every DP fit is stamped (wall clock, then a per-process counter), and
    the runs of a search were too: the counters of the winner's steps and of
    the search told how many runs followed the winner, and in a fresh
    process K itself (a review). The runs are not stamped; the released
    winner's steps are, in order, when the search releases them: the same
    stamps whatever K."""
    from sklearn.pipeline import make_pipeline

    from skdp import DPStandardScaler
    from skdp._base import FIT_STAMP
    from skdp.model_selection import _search

    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3))
    y = (X[:, 0] > 0).astype(int)
    pipe = make_pipeline(
        DPStandardScaler(bounds=(-5, 5)), DPLogisticRegression(classes=[0, 1])
    )
    advances = []
    for runs in (2, 9):
        monkeypatch.setattr(
            _search, "_draw_truncated_negative_binomial", lambda *a, k=runs: k
        )
        before = getattr(DPStandardScaler(bounds=(-5, 5)).fit(X), FIT_STAMP)
        search = DPRandomSearchCV(
            pipe, {"dplogisticregression__alpha": [1e-3, 1e-2]}, n_iter=4
        ).fit(X, y)
        steps = [getattr(s, FIT_STAMP) for s in search.best_estimator_]
        mine = getattr(search, FIT_STAMP)
        counts = [s.when[1] - before.when[1] for s in [*steps, mine]]
        advances.append(counts)
        # Their runs were not stamped: where their inputs came from is not
        # invented (a review: a chain across a FeatureUnion's branches).
        assert all(s.input_from is None for s in steps)
    assert advances[0] == advances[1] == [1, 2, 3]
    # No clock: a stamp is (process, counter), so that the time between two
    # stamps (around a search: its runs' work) is not kept in the model.
    from skdp import _base

    assert all(s.when[0] == _base._PROCESS for s in steps)
    assert all(len(s.when) == 2 for s in steps)


def test_a_combination_refused_only_jointly_past_256_is_a_failed_run(monkeypatch):
    """Past 256 listed combinations each value is checked alone before any
    draw, so a combination refused only jointly (a sparse OneHotEncoder with
    sparse_threshold 0.3) was found as drawn and raised on the seeds that drew
    it (a review): whether the search raised told how many runs were drawn.
    It is a failed run: never fitted, the worst score."""
    from sklearn.compose import ColumnTransformer
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder

    from skdp.model_selection import _search

    rng = np.random.default_rng(0)
    X = np.column_stack([rng.integers(0, 3, 2000), rng.normal(size=2000)])
    y = (X[:, 1] > 0).astype(int)
    columns = ColumnTransformer(
        [("a", OrdinalEncoder(categories=[[0, 1, 2]]), [0])], sparse_threshold=0.0
    )
    pipe = Pipeline([("ct", columns), ("m", DPLogisticRegression(classes=[0, 1]))])
    grid = {
        "ct__a": [
            OrdinalEncoder(categories=[[0, 1, 2]]),
            OneHotEncoder(categories=[[0, 1, 2]]),
        ],
        "ct__sparse_threshold": [0.0, 0.3],
        "m__clip_norm": list(np.linspace(0.5, 2.0, 100)),
    }
    failed = []
    real = _search._fit_and_score

    def spy(candidate, *args):
        if isinstance(candidate, _search._Failure):
            failed.append(candidate.kind)
        return real(candidate, *args)

    monkeypatch.setattr(_search, "_fit_and_score", spy)
    for seed in range(6):
        DPRandomSearchCV(pipe, grid, n_iter=3, random_state=seed).fit(X, y)
    assert "TypeError" in failed  # drawn, refused as built, never fitted


def test_each_record_is_in_the_training_or_the_validation_part_never_both(monkeypatch):
    """A run is μ-GDP by parallel composition only if a record enters either
    the candidate's fit or its noisy score: in both it would be sqrt(2)·μ.
    White box: the rows every run receives (ids in the first column); a
    hand mutation that trained on all rows survived every other test."""
    from skdp.model_selection import _search

    seen = []
    real = _search._fit_and_score

    def spy(candidate, X_train, y_train, X_valid, y_valid, *args):
        seen.append((np.asarray(X_train)[:, 0], np.asarray(X_valid)[:, 0]))
        return real(candidate, X_train, y_train, X_valid, y_valid, *args)

    monkeypatch.setattr(_search, "_fit_and_score", spy)
    rng = np.random.default_rng(0)
    n = 500
    X = np.column_stack([np.arange(n), rng.normal(size=n)])
    y = (X[:, 1] > 0).astype(int)
    search = DPRandomSearchCV(
        DPLogisticRegression(classes=[0, 1]),
        {"alpha": [1e-3, 1e-2]},
        validation_fraction=0.2,
    ).fit(X, y)
    assert seen
    for train, valid in seen:
        assert len(valid) == round(0.2 * n) and len(train) == n - len(valid)
        assert not set(train) & set(valid)
        assert set(train) | set(valid) == set(range(n))
    assert search.best_estimator_ is not None


def _lru_caches():
    """Every functools.lru_cache of skdp: (hits + misses, size) each."""
    import functools
    import gc

    return {
        id(obj): (getattr(obj, "__qualname__", "?"), obj.cache_info())
        for obj in gc.get_objects()
        if isinstance(obj, functools._lru_cache_wrapper)
        and getattr(obj, "__module__", "").startswith("skdp")
    }


@pytest.mark.parametrize("noise", ["fast", "secure"])
def test_no_cache_in_the_process_counts_the_runs(monkeypatch, noise):
    """K must stay secret, but skdp.accounting's lru_caches counted calls
    made by each run: their hit and miss counts gave K exactly (review,
    2026-11-27). Searches of 2 and 9 runs must leave every lru_cache of skdp
    in the same state. (Other libraries' caches are the process's, not a
    release: narwhals counts scikit-learn's input checks; see the Notes.)"""
    from skdp.model_selection import _search

    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 3))
    y = (X[:, 0] > 0).astype(int)

    def run(k):
        monkeypatch.setattr(_search, "_draw_truncated_negative_binomial", lambda *a: k)
        est = DPRandomSearchCV(
            DPLogisticRegression(classes=[0, 1], max_iter=5, noise=noise),
            {"clip_norm": [0.1, 1.0, 10.0]},
            n_iter=4,
            noise=noise,
        )
        before = _lru_caches()
        est.fit(X, y)
        after = _lru_caches()
        changes = {}
        for key, (name, now) in after.items():
            if key in before:
                then = before[key][1]
                calls = now.hits + now.misses - then.hits - then.misses
                changes[key] = (name, calls, now.currsize - then.currsize)
        return changes

    run(3)  # warm every cache first: later fits see the same state
    two, nine = run(2), run(9)
    assert two.keys() == nine.keys()
    counted = {key: (two[key], nine[key]) for key in two if two[key] != nine[key]}
    assert not counted, counted


def test_text_infinity_in_a_string_array_is_refused_before_any_draw(runs):
    """A list of lists (or a '<U' array) holding the text "inf" reached the
    runs (review, 2026-11-27): only object arrays and frames were checked."""
    from sklearn.compose import ColumnTransformer

    rng = np.random.default_rng(2)
    X = rng.normal(size=(200, 3)).astype(str)
    y = (X[:, 0].astype(float) > 0).astype(int)
    pre = ColumnTransformer(
        [("num", DPStandardScaler(), [0, 1]), ("extra", "drop", [2])],
        sparse_threshold=0,
    )
    estimator = make_pipeline(pre, DPLogisticRegression(classes=[0, 1]))
    grid = {"columntransformer__extra": ["drop", "passthrough"]}
    X[7, 2] = "inf"
    for given in (X, X.tolist()):
        with pytest.raises(ValueError, match="contains NaN, None or infinity"):
            search(estimator=estimator, param_distributions=grid).fit(given, y)
    assert runs == []


class _FailingFit(DPLogisticRegression):
    """A candidate whose fit fails with the given error."""

    def __init__(self, error=None, classes=None):
        super().__init__(classes=classes)
        self.error = error

    def fit(self, X, y):
        raise self.error


@pytest.mark.parametrize(
    ("scoring", "worst"), [("accuracy", 0.0), ("neg_mean_squared_error", -4.0)]
)
def test_a_failed_run_scores_the_worst_of_its_range(scoring, worst):
    """A run that fails scores the worst value of the score's range: the
    selection's sensitivity assumes every score in it (mutation testing: a
    failed run scoring 0 for a loss, +bound or -bound for accuracy,
    survived). A failure on the data keeps its kind only, its own noisy
    release (MechanismFailedError) its message too."""
    from skdp.exceptions import MechanismFailedError
    from skdp.model_selection._search import _fit_and_score

    X, y = np.zeros((4, 2)), np.array([0, 1, 0, 1])
    for error, message in (
        (ValueError("Found unknown categories ['secret']"), None),
        (MechanismFailedError("the model is not finite"), "the model is not finite"),
    ):
        candidate = _FailingFit(error, classes=[0, 1])
        score, failure, said = _fit_and_score(candidate, X, y, X, y, scoring, 4.0)
        assert score == worst and said == []
        assert failure.kind == type(error).__name__ and failure.message == message


def test_a_listed_value_a_nested_step_refuses_is_refused_before_any_draw(data, runs):
    """Every estimator inside a candidate has its parameters checked before
    any draw (mutation testing: checking only the candidate's own, a
    pipeline's, survived): a refusal raised inside a run would depend on
    whether that value was drawn."""
    from sklearn.utils._param_validation import InvalidParameterError

    X, y = data
    pipe = make_pipeline(
        DPStandardScaler(bounds=(-5, 5)), DPLogisticRegression(classes=[0, 1])
    )
    est = search(
        estimator=pipe, param_distributions={"dplogisticregression__max_iter": [5, -1]}
    )
    with pytest.raises(InvalidParameterError, match="max_iter"):
        est.fit(X, y)
    assert runs == []


# --------------------------------------------------------------------------
# What a run could let out (review of the search's internals)
# --------------------------------------------------------------------------


def test_a_composites_own_n_jobs_runs_inside_the_run(data, monkeypatch):
    # FeatureUnion(n_jobs=2) fitted its parts in joblib workers, outside the
    # run's warning capture: every run's warnings reached stderr (2K lines).
    # Its parts now run in the run's own process, one after the other.
    import joblib
    from sklearn.pipeline import FeatureUnion

    X, y = data
    seen = []
    real = DPStandardScaler.fit

    def fit(self, *args, **kwargs):
        seen.append(type(joblib.parallel.get_active_backend()[0]).__name__)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(DPStandardScaler, "fit", fit)
    monkeypatch.setattr(_search, "_draw_truncated_negative_binomial", lambda *a: 3)
    union = FeatureUnion(
        [("a", DPStandardScaler()), ("b", DPStandardScaler())], n_jobs=2
    )
    estimator = make_pipeline(union, DPLogisticRegression(classes=[0, 1]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search(
            estimator=estimator,
            param_distributions={"dplogisticregression__clip_norm": [0.5, 1.0]},
        ).fit(X, y)
    assert seen == ["SequentialBackend"] * 6  # 3 runs × 2 parts, all here


def test_joblibs_progress_lines_do_not_count_the_runs(data, capfd):
    import joblib

    if not hasattr(joblib, "parallel_config"):
        pytest.skip("joblib < 1.3 has no default verbosity")
    X, y = data
    with joblib.parallel_config(backend="threading", verbose=10):
        search(n_jobs=2).fit(X, y)
    out, err = capfd.readouterr()
    assert "Done" not in out + err


def test_a_failed_winners_traceback_holds_no_run(data):
    # The error of a failed winner is the search's output; its traceback
    # held fit's frame, whose locals gave K, every exact score and the
    # losers' models to any printer of locals (Sentry, --showlocals).
    from sklearn.preprocessing import FunctionTransformer

    X, y = data
    estimator = Pipeline(
        [
            ("f", FunctionTransformer(np.log)),
            ("c", DPLogisticRegression(classes=[0, 1])),
        ]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(MechanismFailedError, match="selected run failed") as info:
            search(
                estimator=estimator, param_distributions={"c__clip_norm": [1.0]}
            ).fit(X, y)
    tb = info.value.__traceback__
    while tb is not None:
        assert not {"runs", "fitted", "n_runs", "best"} & set(tb.tb_frame.f_locals)
        tb = tb.tb_next


def test_a_pipeline_cache_is_refused(data, tmp_path):
    # Pipeline(memory=...) kept every run's fitted steps on disk (the
    # losers' noisy releases) and let runs share one noisy fit.
    X, y = data
    estimator = Pipeline(
        [("s", DPStandardScaler()), ("c", DPLogisticRegression(classes=[0, 1]))],
        memory=str(tmp_path),
    )
    with pytest.raises(TypeError, match="memory="):
        search(estimator=estimator, param_distributions={"c__clip_norm": [1.0]}).fit(
            X, y
        )


@pytest.mark.parametrize("shape", [1e-7, 0.05])
def test_the_number_of_runs_follows_its_law_at_any_shape(shape):
    # A shape near 0 made the rejection sampler loop ~1/(1 - γ^η) times
    # (35 s for 20 draws at 1e-7); the CDF is inverted there instead.
    from scipy import stats

    from skdp.accounting import truncated_negative_binomial_gamma

    rng = np.random.default_rng(0)
    gamma = truncated_negative_binomial_gamma(10, shape)
    draws = np.array(
        [
            _search._draw_truncated_negative_binomial(rng, 10, shape)
            for _ in range(20000)
        ]
    )
    pmf = stats.nbinom.pmf(np.arange(1, 6), shape, gamma) / (1 - gamma**shape)
    observed = np.array([(draws == k).mean() for k in range(1, 6)])
    # binomial standard errors below 0.0031 at 20000 draws: 4 of them
    np.testing.assert_allclose(observed, pmf, atol=0.0125)


def test_released_best_score_lies_in_the_scores_range():
    # The largest of noisy scores, with a score noise far above the errors:
    # a negative mean squared error came out +718 (review). Clipped to
    # [-score_bound, 0] for a loss, [0, 1] for accuracy (post-processing).
    from skdp import DPLinearRegression

    rng = np.random.default_rng(0)
    X = rng.standard_normal((300, 4))
    y = X @ np.array([1.0, -1.0, 0.5, 0.0]) + rng.standard_normal(300)
    scores = []
    for seed in range(8):
        search = DPRandomSearchCV(
            DPLinearRegression(),
            {"alpha": [0.1, 1.0, 10.0]},
            n_iter=3,
            epsilon=0.3,
            score_bound=1e4,
            random_state=seed,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            search.fit(X, y)
        scores.append(search.best_score_)
        assert -1e4 <= search.best_score_ <= 0.0
        assert search.cv_results_["mean_test_score"][0] == search.best_score_
    assert max(scores) == 0.0  # the noise (σ in the thousands) went above 0
    clf = DPRandomSearchCV(
        DPLogisticRegression(classes=[0, 1]),
        {"clip_norm": [0.5, 1.0]},
        n_iter=2,
        epsilon=0.05,
        random_state=0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, (y > 0).astype(int))
    assert 0.0 <= clf.best_score_ <= 1.0


def test_a_step_that_transforms_in_place_does_not_reach_the_next_run():
    """Binarizer(copy=False) transformed the runs' shared arrays: run 2 saw
    data binarized once more, and a seeded search's winner depended on
    n_jobs (review). Each run gets its own copy: the same result as copy=True."""
    rng = np.random.default_rng(0)
    X = rng.normal(0, 1, (2000, 4))
    y = (X[:, 0] > 0).astype(int)
    results = []
    for copy in (True, False):
        search = DPRandomSearchCV(
            make_pipeline(
                Binarizer(threshold=-0.5, copy=copy),
                DPLogisticRegression(classes=[0, 1]),
            ),
            {"dplogisticregression__clip_norm": [0.5, 1.0, 2.0]},
            n_iter=6,
            random_state=3,
        )
        with pytest.warns(PrivacyLeakWarning):
            search.fit(X.copy(), y)
        results.append((search.best_score_, search.best_params_))
    assert results[0] == results[1]


def test_the_search_delegates_as_scikit_learns_searches_do():
    """Before its fit, a search says what the estimator searched can do (a
    StackingClassifier asks it for predict_proba); predict_log_proba and
    best_index_ as in scikit-learn's searches (review)."""
    from sklearn.ensemble import StackingClassifier
    from sklearn.exceptions import NotFittedError

    rng = np.random.default_rng(0)
    X = rng.normal(0, 1, (600, 4))
    y = (X[:, 0] > 0).astype(int)
    search = DPRandomSearchCV(
        DPGaussianNB(classes=[0, 1]), {"var_smoothing": [1e-9, 1e-3]}, n_iter=2
    )
    assert hasattr(search, "predict_proba") and hasattr(search, "predict_log_proba")
    assert not hasattr(search, "decision_function")  # GaussianNB has none
    with pytest.raises(NotFittedError):
        search.predict_proba(X)
    search.fit(X, y)
    np.testing.assert_allclose(
        search.predict_log_proba(X), search.best_estimator_.predict_log_proba(X)
    )
    assert search.cv_results_["params"][search.best_index_] == search.best_params_
    stack = StackingClassifier([("s", clone(search))], stack_method="predict_proba")
    stack.fit(X, y)  # it refused: "does not implement the method predict_proba"
    assert stack.predict_proba(X).shape == (600, 2)


def test_refusals_that_need_no_data_come_before_any_draw():
    # n_jobs=0 failed in joblib after the draws; an epsilon of 1e50 with
    # several runs raised ZeroDivisionError, 1e155 OverflowError (review).
    X = np.random.default_rng(0).normal(size=(200, 2))
    y = (X[:, 0] > 0).astype(int)
    est = DPLogisticRegression(classes=[0, 1])
    with pytest.raises(InvalidParameterError, match="n_jobs"):
        DPRandomSearchCV(est, {"clip_norm": [1.0]}, n_jobs=0).fit(X, y)
    for epsilon in (1e50, 1e155):
        with pytest.raises(MechanismFailedError, match="too large"):
            DPRandomSearchCV(est, {"clip_norm": [1.0]}, epsilon=epsilon).fit(X, y)
