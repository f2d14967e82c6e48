"""DPRandomSearchCV: the whole search, selection included, is (ε, δ)-DP."""

import math
import warnings

import numpy as np
import pytest
from _sklearn_compat import parametrize_with_checks
from dp_accounting import dp_event, rdp
from scipy import stats
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skdp import (
    DPLogisticRegression,
    DPRandomFeaturesRegressor,
    PrivacyLeakWarning,
    PrivacyLedger,
)
from skdp.accounting import (
    epsilon_of_private_selection,
    mu_from_epsilon,
    truncated_negative_binomial_gamma,
    zcdp_from_epsilon_tight,
    zcdp_of_private_selection,
)
from skdp.mechanisms import SecureNoise, as_generator
from skdp.model_selection import DPRandomSearchCV, _search
from skdp.model_selection._search import _draw_truncated_negative_binomial
from skdp.preprocessing import DPStandardScaler

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
