"""DPLogisticRegression: inputs, outputs, privacy report, utility, audit."""

import math
import tracemalloc
import warnings

import dp_accounting
import numpy as np
import pytest
import scipy.sparse as sp
from _spies import gaussian_noise_calls, gaussian_noise_stds
from sklearn.datasets import load_iris, load_wine, make_classification
from sklearn.exceptions import NotFittedError
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.model_selection import (
    GridSearchCV,
    KFold,
    cross_validate,
    train_test_split,
)
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.validation import check_is_fitted

from skdp import DPLogisticRegression, PrivacyLeakWarning, PrivacyLedger
from skdp._dpgd import auto_schedule
from skdp.accounting import (
    classical_gaussian_noise_multiplier,
    gaussian_noise_multiplier,
)
from skdp.audit import gdp_mu_estimate
from skdp.datasets import make_sparse_text_classification


@pytest.fixture(scope="module")
def binary_data():
    X, y = make_classification(
        n_samples=25000,
        n_features=20,
        n_informative=10,
        class_sep=2.0,
        random_state=0,
    )
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=5000, random_state=0
    )
    scaler = StandardScaler().fit(X_train)
    return scaler.transform(X_train), scaler.transform(X_test), y_train, y_test


@pytest.fixture(scope="module")
def iris():
    X, y = load_iris(return_X_y=True)
    return StandardScaler().fit_transform(X), y


# --------------------------------------------------------------------------
# Bad input: a clear error before any work, nothing half-fitted
# --------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_input_raises_value_error(bad):
    X = np.random.default_rng(0).normal(size=(20, 3))
    X[3, 1] = bad
    y = np.arange(20) % 2
    with pytest.raises(ValueError, match=r"NaN|infinity"):
        DPLogisticRegression().fit(X, y)


@pytest.mark.parametrize(
    "params",
    [
        {"epsilon": 0.0},
        {"epsilon": -1.0},
        {"delta": -1e-6},
        {"delta": 1.0},
        {"delta": 2.0},
        {"accounting": "rdp"},
        {"clip_norm": 0.0},
        {"max_iter": 0},
        {"learning_rate": -1.0},
    ],
)
def test_invalid_parameters_raise_invalid_parameter_error(params):
    X, y = np.ones((10, 2)), np.arange(10) % 2
    with pytest.raises(InvalidParameterError):
        DPLogisticRegression(**params).fit(X, y)


def test_delta_zero_is_refused_for_gaussian_noise():
    X, y = np.ones((10, 2)), np.arange(10) % 2
    with pytest.raises(ValueError, match="delta > 0"):
        DPLogisticRegression(delta=0.0).fit(X, y)


def test_one_class_raises_value_error():
    X = np.random.default_rng(0).normal(size=(20, 3))
    with pytest.raises(ValueError, match="class"):
        DPLogisticRegression().fit(X, np.zeros(20))


def test_failed_fit_leaves_nothing_fitted(iris):
    X, y = iris
    clf = DPLogisticRegression(random_state=0).fit(X, y)
    check_is_fitted(clf)
    with pytest.raises(ValueError):
        clf.fit(X, np.zeros(len(y)))  # one class
    with pytest.raises(NotFittedError):
        check_is_fitted(clf)
    assert not [k for k in vars(clf) if k.endswith("_")]
    with pytest.raises(NotFittedError):
        clf.predict(X)


def test_labels_outside_given_classes_raise_without_naming_them(iris):
    X, y = iris
    secret = np.where(y == 2, 987654, y)  # the private, undeclared label
    with pytest.raises(ValueError, match="not in the declared classes") as info:
        DPLogisticRegression(classes=[0, 1]).fit(X, secret)
    assert "987654" not in str(info.value)


def test_inferring_the_label_set_warns_once_and_declaring_it_does_not(iris):
    X, y = iris
    with pytest.warns(PrivacyLeakWarning, match="label set was inferred"):
        DPLogisticRegression(random_state=0).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DPLogisticRegression(classes=[0, 1, 2]).fit(X, y)


def test_delta_of_at_least_one_over_n_warns(iris):
    X, y = iris  # n = 150
    with pytest.warns(PrivacyLeakWarning, match="1/n_samples"):
        DPLogisticRegression(delta=1 / 150, classes=[0, 1, 2]).fit(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        DPLogisticRegression(delta=1e-3, classes=[0, 1, 2]).fit(X, y)


# --------------------------------------------------------------------------
# Outputs
# --------------------------------------------------------------------------


def test_binary_shapes_and_probabilities(binary_data):
    X_train, X_test, y_train, _ = binary_data
    clf = DPLogisticRegression(random_state=0).fit(X_train, y_train)
    assert clf.coef_.shape == (1, 20)
    assert clf.intercept_.shape == (1,)
    np.testing.assert_array_equal(clf.classes_, [0, 1])
    proba = clf.predict_proba(X_test)
    assert proba.shape == (len(X_test), 2)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(np.log(proba), clf.predict_log_proba(X_test), atol=1e-12)
    scores = clf.decision_function(X_test)
    np.testing.assert_array_equal(clf.predict(X_test), (scores > 0).astype(int))


def test_multinomial_shapes_and_accuracy_at_high_epsilon(iris):
    X, y = iris
    clf = DPLogisticRegression(epsilon=1e4, random_state=0).fit(X, y)
    assert clf.coef_.shape == (3, 4)
    assert clf.intercept_.shape == (3,)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0, rtol=1e-12)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[proba.argmax(axis=1)])
    # Noise-free limit of a 20-step fit; sklearn reaches 0.97 on this set.
    assert clf.score(X, y) >= 0.9


def test_string_labels_and_declared_label_set(iris):
    X, y = iris
    names = np.array(["setosa", "versicolor", "virginica"])[y]
    clf = DPLogisticRegression(epsilon=1e4, random_state=0).fit(X, names)
    assert set(clf.predict(X)) <= set(names)
    # A declared label set may contain a class absent from this sample.
    declared = ["setosa", "unseen", "versicolor", "virginica"]
    clf = DPLogisticRegression(classes=declared, random_state=0).fit(X, names)
    np.testing.assert_array_equal(clf.classes_, sorted(declared))
    assert clf.coef_.shape == (4, 4)


def test_sparse_input_matches_dense(binary_data):
    X_train, _, y_train, _ = binary_data
    X_small, y_small = X_train[:500], y_train[:500]
    # The "auto" clip and horizon depend on the container (sparse rows are
    # assumed to have norm ~1); with them fixed, the fits are the same.
    fixed = dict(clip_norm=1.0, learning_rate=0.05, random_state=3)
    dense = DPLogisticRegression(**fixed).fit(X_small, y_small)
    sparse = DPLogisticRegression(**fixed).fit(sp.csr_matrix(X_small), y_small)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-10, atol=1e-12)
    auto = DPLogisticRegression(random_state=3)
    assert auto.fit(X_small, y_small).clip_norm_ == 1.0
    assert auto.fit(sp.csr_matrix(X_small), y_small).clip_norm_ == 0.5


def test_float32_input_is_not_copied_to_float64():
    # 200000 x 50 float32 is 40 MB; a float64 copy would take 80 MB. The
    # engine reads float32 rows a block at a time (8 MB of float64).
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200_000, 50)).astype(np.float32)
    y = (X[:, 0] > 0).astype(int)
    clf = DPLogisticRegression(max_iter=2, delta=1e-7, classes=[0, 1], random_state=0)
    tracemalloc.start()
    try:
        clf.fit(X, y)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 0.5 * X.size * 8  # observed ~25 MB
    # Same values, same noise: the float64 fit agrees up to summation order.
    ref = DPLogisticRegression(max_iter=2, delta=1e-7, classes=[0, 1], random_state=0)
    ref.fit(X.astype(np.float64), y)
    np.testing.assert_allclose(clf.coef_, ref.coef_, rtol=0, atol=1e-10)


def test_numpy_generator_is_accepted_as_random_state(iris):
    X, y = iris
    a = DPLogisticRegression(random_state=np.random.default_rng(3)).fit(X, y)
    b = DPLogisticRegression(random_state=np.random.default_rng(3)).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    # A shared generator advances: two fits draw different noise.
    rng = np.random.default_rng(4)
    c = DPLogisticRegression(random_state=rng).fit(X, y).coef_
    d = DPLogisticRegression(random_state=rng).fit(X, y).coef_
    assert not np.allclose(c, d)


def test_random_state_reproduces_and_varies(iris):
    X, y = iris
    a = DPLogisticRegression(random_state=7).fit(X, y).coef_
    b = DPLogisticRegression(random_state=7).fit(X, y).coef_
    c = DPLogisticRegression(random_state=8).fit(X, y).coef_
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    # None draws fresh entropy: two fits differ.
    d = DPLogisticRegression().fit(X, y).coef_
    e = DPLogisticRegression().fit(X, y).coef_
    assert not np.allclose(d, e)


def test_verbose_reports_privacy_noise_progress_and_a_summary(iris, capsys):
    X, y = iris
    clf = DPLogisticRegression(max_iter=40, verbose=1, random_state=0).fit(X, y)
    lines = capsys.readouterr().out.splitlines()
    assert all(ln.startswith("[DPLogisticRegression] ") for ln in lines)
    header, *progress, summary = lines
    assert "(1, 1e-05)-DP" in header and "replace one record" in header
    noise_std = clf.noise_multiplier_ * 2 * clf.clip_norm_
    assert f"noise std {noise_std:.4g}" in header
    assert len(progress) == 10  # every 4th of 40 steps
    assert progress[-1].startswith("[DPLogisticRegression] step 40/40")
    assert summary.startswith("[DPLogisticRegression] done: 40 steps in")
    DPLogisticRegression(max_iter=7, verbose=2, random_state=0).fit(X, y)
    assert len(capsys.readouterr().out.splitlines()) == 7 + 2  # every step
    DPLogisticRegression(max_iter=7, random_state=0).fit(X, y)
    assert capsys.readouterr().out == ""


def test_works_in_pipeline_and_grid_search(binary_data):
    # scikit-learn compatibility only. The data are standardised already; a
    # StandardScaler fitted inside the pipeline would release non-private
    # statistics, and the search's choice of the best parameters reads
    # validation scores of the private data: neither is covered by ε.
    X_train, X_test, y_train, y_test = binary_data
    pipe = make_pipeline(DPLogisticRegression(random_state=0))
    search = GridSearchCV(
        pipe, {"dplogisticregression__clip_norm": [0.5, 1.0]}, cv=3
    ).fit(X_train[:3000], y_train[:3000])
    assert search.best_estimator_.score(X_test, y_test) > 0.85


def test_ledger_composes_every_fit_of_a_cross_validation(binary_data):
    # Every fit on (part of) the same data spends its own budget: 3 folds at
    # ε = 1 each are not ε = 1. The ledger composes the three releases
    # exactly (μ adds in quadrature; treating the overlapping folds as the
    # same data set is conservative). The folds must not depend on the data
    # (KFold, not the StratifiedKFold that cv=3 means for a classifier).
    X_train, _, y_train, _ = binary_data
    cv = KFold(3, shuffle=True, random_state=0)
    result = cross_validate(
        DPLogisticRegression(epsilon=1.0, classes=[0, 1]),
        X_train[:3000],
        y_train[:3000],
        cv=cv,
        return_estimator=True,
    )
    ledger = PrivacyLedger().record(result, cv=cv)
    one = result["estimator"][0].privacy_spent_
    total = ledger.total()
    assert len(ledger) == 3
    assert total.mu == pytest.approx(math.sqrt(3) * one.mu, rel=1e-12)
    assert total.epsilon > 1.5  # three fits cost far more than one


# --------------------------------------------------------------------------
# The privacy report
# --------------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 8.0])
@pytest.mark.parametrize("max_iter", [1, 20, 200])
def test_exact_accounting_spends_exactly_epsilon(iris, epsilon, max_iter):
    X, y = iris
    clf = DPLogisticRegression(
        epsilon=epsilon, delta=1e-6, max_iter=max_iter, random_state=0
    ).fit(X, y)
    spent = clf.privacy_spent_
    assert clf.n_iter_ == max_iter
    # An independent oracle recomputes ε from the published noise multiplier
    # and step count: dp-accounting's analytic Gaussian mechanism (T steps
    # with multiplier z are one Gaussian mechanism with multiplier z/√T).
    oracle = dp_accounting.get_epsilon_gaussian(
        clf.noise_multiplier_ / math.sqrt(clf.n_iter_), 1e-6
    )
    assert oracle == pytest.approx(epsilon, rel=1e-6)  # the oracle's precision
    assert spent.epsilon == pytest.approx(oracle, rel=1e-6)
    assert spent.epsilon <= epsilon * (1 + 1e-12)
    assert spent.delta == 1e-6
    assert spent.adjacency == "replace one record"


def test_privacy_report_matches_dp_accounting_pld(iris):
    dp_accounting = pytest.importorskip("dp_accounting")
    X, y = iris
    clf = DPLogisticRegression(epsilon=1.0, delta=1e-5, random_state=0).fit(X, y)
    # dp-accounting's GaussianDpEvent takes sigma / C under add/remove with
    # sensitivity C; our replace-one step has sensitivity 2C, so its sigma
    # over the sensitivity, noise_multiplier_, is the same dimensionless ratio.
    accountant = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-4)
    event = dp_accounting.SelfComposedDpEvent(
        dp_accounting.GaussianDpEvent(clf.noise_multiplier_), clf.n_iter_
    )
    pld_epsilon = accountant.compose(event).get_epsilon(1e-5)
    # PLD discretisation (interval 1e-4) is pessimistic by at most ~1e-3 here;
    # skdp's calibration aims at δ·(1 − 1e-9), so its ε may sit up to ~1e-10
    # above the exact one (on the safe side) and hence above PLD's.
    assert clf.privacy_spent_.epsilon <= pld_epsilon * (1 + 1e-9)
    assert pld_epsilon == pytest.approx(clf.privacy_spent_.epsilon, rel=2e-3)


def test_paper_accounting_uses_algorithm_1_noise(iris):
    X, y = iris
    clf = DPLogisticRegression(
        epsilon=0.5, delta=1e-5, accounting="paper", random_state=0
    ).fit(X, y)
    paper = 4.0 * classical_gaussian_noise_multiplier(0.5, 1e-5, clf.n_iter_)
    assert clf.noise_multiplier_ == paper
    assert clf.noise_multiplier_ > gaussian_noise_multiplier(0.5, 1e-5, clf.n_iter_)
    # The report states the exact (smaller) epsilon of the noise actually used.
    assert clf.privacy_spent_.epsilon < 0.5


def test_paper_accounting_never_adds_less_noise_than_exact(iris):
    # At large epsilon the textbook per-step calibration is invalid; the
    # estimator falls back to the exact calibration, never below it.
    X, y = iris
    clf = DPLogisticRegression(
        epsilon=1e3, accounting="paper", max_iter=1, random_state=0
    ).fit(X, y)
    assert clf.noise_multiplier_ >= gaussian_noise_multiplier(1e3, 1e-5, 1)
    assert clf.privacy_spent_.epsilon <= 1e3 * (1 + 1e-12)


# --------------------------------------------------------------------------
# Utility: defaults work untuned on standardised data
# --------------------------------------------------------------------------


def test_auto_schedule_reads_only_public_sizes(iris):
    # Two data sets of the same shape and label set get the same steps, step
    # size, penalty and clip, whatever their values.
    X, y = iris
    other = np.random.default_rng(0).normal(scale=100.0, size=X.shape)
    a = DPLogisticRegression(classes=[0, 1, 2], random_state=0).fit(X, y)
    b = DPLogisticRegression(classes=[0, 1, 2], random_state=0).fit(other, y[::-1])
    for name in ("n_iter_", "learning_rate_", "alpha_", "clip_norm_"):
        assert getattr(a, name) == getattr(b, name)
    # n = 150, 3 classes, 4 features: (d + 1)·k / n = 0.1, so 764·sqrt(0.1)
    # = 242 steps, capped at 200; horizon 5 at this small n; alpha = 1/n.
    assert (a.n_iter_, a.clip_norm_, a.alpha_) == (200, 1.0, 1 / 150)
    assert a.learning_rate_ == pytest.approx(5 / 200)
    # Given parameters are used as given.
    c = DPLogisticRegression(
        max_iter=7, learning_rate=0.3, alpha=0.0, clip_norm=2.0, random_state=0
    ).fit(X, y)
    assert (c.n_iter_, c.learning_rate_, c.alpha_, c.clip_norm_) == (7, 0.3, 0.0, 2.0)


@pytest.mark.parametrize(
    ("n", "n_params", "mu", "sparse", "expected"),
    [
        (
            20000,
            21,
            0.27,
            False,
            (50, 5.0 * math.sqrt(0.27 * 20000 / 21**0.5 / 100), 1.0),
        ),
        (150, 15, 0.27, False, (200, 5.0, 1.0)),
        (7500, 5001, 0.27, True, (200, 20.0, 0.5)),
        (37500, 20001, 1e4, True, (200, 50.0, 0.5)),
    ],
)
def test_auto_schedule_rule(n, n_params, mu, sparse, expected):
    n_iter, horizon, clip = auto_schedule(n, n_params, mu, sparse=sparse)
    assert (n_iter, clip) == (expected[0], expected[2])
    assert horizon == pytest.approx(expected[1], rel=1e-12)


def test_default_utility_on_small_multiclass_data():
    # wine: 178 records, 13 features, 3 classes. The old defaults (plain GD,
    # 50 steps at rate 3) reached 0.76 at ε = 1; the best of a small grid
    # 0.92. Mean over 5 fixed splits; the rule's measured mean is 0.91.
    X, y = load_wine(return_X_y=True)
    accuracies = []
    for seed in range(5):
        X_tr, X_te, y_tr, y_te = train_test_split(
            X, y, test_size=0.25, stratify=y, random_state=seed
        )
        scaler = StandardScaler().fit(X_tr)
        clf = DPLogisticRegression(epsilon=1.0, classes=[0, 1, 2], random_state=seed)
        clf.fit(scaler.transform(X_tr), y_tr)
        accuracies.append(clf.score(scaler.transform(X_te), y_te))
    assert np.mean(accuracies) >= 0.87


def test_sparse_text_near_scikit_learn_at_huge_epsilon():
    # TF-IDF rows with Zipf word frequencies. At ε = 1e6 the noise is
    # negligible and the default fit must match scikit-learn within 3 points
    # (measured: 0.749 vs 0.747) and be as well calibrated (log loss within
    # 0.02; measured 0.556 vs 0.566). The old fixed-step GD defaults barely
    # moved the weights: log loss 0.676 here, which fails.
    X, y = make_sparse_text_classification(6000, 3000, random_state=0)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.25, random_state=0)
    ref = LogisticRegression().fit(X_tr, y_tr)
    clf = DPLogisticRegression(epsilon=1e6, delta=1e-6, classes=[0, 1], random_state=0)
    clf.fit(X_tr, y_tr)
    assert clf.score(X_te, y_te) >= ref.score(X_te, y_te) - 0.03
    assert log_loss(y_te, clf.predict_proba(X_te)) <= (
        log_loss(y_te, ref.predict_proba(X_te)) + 0.02
    )


@pytest.mark.parametrize(("epsilon", "min_accuracy"), [(0.5, 0.88), (1.0, 0.89)])
def test_default_utility_close_to_non_private(binary_data, epsilon, min_accuracy):
    X_train, X_test, y_train, y_test = binary_data
    baseline = LogisticRegression().fit(X_train, y_train).score(X_test, y_test)
    accuracies = [
        DPLogisticRegression(epsilon=epsilon, random_state=seed)
        .fit(X_train, y_train)
        .score(X_test, y_test)
        for seed in range(5)
    ]
    # sklearn's non-private model scores 0.908 here; 5 seeds, fixed.
    assert baseline == pytest.approx(0.908, abs=0.005)
    assert np.mean(accuracies) >= min_accuracy


def test_utility_improves_with_epsilon(binary_data):
    X_train, X_test, y_train, y_test = binary_data
    X_small, y_small = X_train[:400], y_train[:400]

    def mean_accuracy(eps):
        return np.mean(
            [
                DPLogisticRegression(epsilon=eps, random_state=s)
                .fit(X_small, y_small)
                .score(X_test, y_test)
                for s in range(10)
            ]
        )

    assert mean_accuracy(0.05) < mean_accuracy(0.5) < mean_accuracy(5.0)


# --------------------------------------------------------------------------
# Statistical audits: the measured mu equals the claimed mu
# --------------------------------------------------------------------------
#
# Each audit fits many times on two neighbouring data sets (one record
# replaced by a canary whose clipped gradient is known exactly), with
# independent seeds, and projects each released model on a fixed direction.
# The designs make the two output laws Gaussians with equal covariance whose
# means differ along that direction, so the projections are exactly
# μ_design-GDP apart and μ̂ = |difference of means| / pooled std estimates
# μ_design. The standard error of μ̂ is sqrt(2/m + μ²/(4m)) for m fits per
# side; each audit asserts |μ̂ − μ_design| ≤ 4 s.e., two-sided, so that too
# little noise (a leak) and too much (a wasted budget) both fail. With
# m = 2000 and μ ≈ 0.5–1, 4 s.e. ≈ 0.13–0.15.
#
# The audits run solver="gd", for which the release is a linear function of
# the noisy gradient sums, so the designed μ is attained exactly. The default
# Adam steps and iterate averaging are a further post-processing of the same
# Gaussian releases and can only lose information.

N_AUDIT_FITS = 2000


def _released_vector(clf):
    return np.concatenate([clf.coef_.ravel(), clf.intercept_])


def _measured_mu(make_estimator, data, neighbour, direction, n_fits=N_AUDIT_FITS):
    """μ̂ and its standard error from ``n_fits`` seeded fits per data set."""

    def projections(X, y, seeds):
        return np.array(
            [
                _released_vector(make_estimator(int(s)).fit(X, y)) @ direction
                for s in seeds
            ]
        )

    a = projections(*data, range(n_fits))
    b = projections(*neighbour, range(n_fits, 2 * n_fits))
    mu_hat, se = gdp_mu_estimate(a, b)
    return abs(mu_hat), se


def _assert_mu(mu_hat, se, mu_design):
    print(f"design mu = {mu_design:.4f}, measured mu = {mu_hat:.4f} ± {se:.4f}")
    assert abs(mu_hat - mu_design) <= 4 * se


def _far_canary_data(n=30, d=3, value=20.0):
    """n records, record 0 at ``value·e_0``; its neighbour flips its label.

    At coef = 0 record 0's gradient ``(0.5 ∓ ...)·(x_0, 1)`` has norm
    ``0.5·sqrt(value² + 1) > C = 1``: clipped, it flips from ``+C u`` to
    ``-C u`` with ``u = (x_0, 1)/||(x_0, 1)||``, the worst case 2C.
    """
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    y = np.arange(n) % 2
    X[0] = 0.0
    X[0, 0] = value
    y_neighbour = y.copy()
    y_neighbour[0] = 1 - y[0]
    u = np.zeros(d + 1)
    u[0], u[d] = value, 1.0
    u /= value  # first, so that the norm cannot overflow
    return X, y, y_neighbour, u / np.linalg.norm(u)


def _one_step(seed, **params):
    return DPLogisticRegression(
        epsilon=4.0,
        max_iter=1,
        alpha=0.0,
        solver="gd",
        learning_rate=3.0,
        random_state=seed,
        **params,
    )


def test_one_step_audit_measures_the_claimed_mu():
    """With ``max_iter=1`` the release is ``-lr/n (Σ clip(g_i) + w)``: the
    canary moves its mean by ``lr·2C/n`` along ``u``, the noise has std
    ``lr·z·2C/n``, so the projections are exactly ``1/z``-GDP apart."""
    X, y, y_neighbour, u = _far_canary_data()
    mu_hat, se = _measured_mu(_one_step, (X, y), (X, y_neighbour), u)
    _assert_mu(mu_hat, se, _one_step(0).fit(X, y).privacy_spent_.mu)


def test_one_step_audit_with_sparse_duplicate_entries():
    # The canary's value 20 is stored as 400 duplicate entries of 0.05; the
    # engine must clip the merged row (before the fix, μ̂ ≈ 20·μ).
    X, y, y_neighbour, u = _far_canary_data()
    dense = X.copy()
    dense[0, 0] = 0.0
    X = sp.csr_matrix(dense)
    n_dup = 400
    indptr = X.indptr.copy()
    indptr[1:] += n_dup
    X = sp.csr_matrix(
        (
            np.concatenate([np.full(n_dup, 0.05), X.data]),
            np.concatenate([np.zeros(n_dup, dtype=X.indices.dtype), X.indices]),
            indptr,
        ),
        shape=X.shape,
    )
    assert not X.has_canonical_format
    np.testing.assert_allclose(X.toarray()[0], [20.0, 0.0, 0.0], rtol=1e-12)
    mu_hat, se = _measured_mu(_one_step, (X, y), (X, y_neighbour), u)
    _assert_mu(mu_hat, se, _one_step(0).fit(X, y).privacy_spent_.mu)


def test_one_step_audit_with_a_huge_record():
    # ||x_0|| = 1e200: its squared norm overflows. The canary must still move
    # the model by exactly C along e_0 (before the fix its weight was 0, so
    # μ̂ ≈ 0, and a later zero gradient made the model NaN).
    X, y, y_neighbour, u = _far_canary_data(value=1e200)
    mu_hat, se = _measured_mu(_one_step, (X, y), (X, y_neighbour), u)
    _assert_mu(mu_hat, se, _one_step(0).fit(X, y).privacy_spent_.mu)


def test_huge_finite_records_give_a_finite_model():
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3))
    X[:4] = [[1e308, 1e308, 1e308], [1e308, -1e308, 0], [1e200, 0, 0], [1e-320, 0, 0]]
    y = np.arange(40) % 2
    for X_in in (X, sp.csr_matrix(X)):
        clf = DPLogisticRegression(max_iter=20, random_state=0).fit(X_in, y)
        assert np.isfinite(clf.coef_).all() and np.isfinite(clf.intercept_).all()


def _intercept_canary_data(n, n_classes, canary_labels):
    """n records with x = 0 (one feature): only the intercepts carry signal.

    The n − 1 base records are balanced over the classes, so their clipped
    gradients cancel whenever all are clipped; the canary (record 0) takes
    ``canary_labels[0]`` in one data set and ``canary_labels[1]`` in the other.
    """
    X = np.zeros((n, 1))
    y = np.concatenate([[canary_labels[0]], np.arange(n - 1) % n_classes])
    y_neighbour = y.copy()
    y_neighbour[0] = canary_labels[1]
    return X, y, y_neighbour


def test_multi_step_audit_of_an_intercept_only_canary():
    """T = 10 steps; every record is x = 0, so gradients act on the intercept
    only. With clip C = 0.1 and |σ(b) − y| ≥ 0.1 (the intercept stays in
    [−2.2, 2.2]: its drift is ≤ T·lr·C/n = 0.033 and its noise std 0.04),
    every gradient is clipped to ±C: the 30 balanced base records cancel,
    the canary adds +C (y = 0) or −C (y = 1) at every step, and the final
    intercept is ``-lr/n (±T·C + Σ_t w_t)``. The means differ by 2TC·lr/n and
    the std is sqrt(T)·z·2C·lr/n: exactly the claimed μ = sqrt(T)/z. This
    fails if the intercept gets no noise (μ̂ = ∞), if the intercept is left
    out of the clipped norm (x = 0 would not be clipped: μ̂ ≈ 5μ), if
    clipping is removed, or if one noise draw is reused across steps
    (std T·z·2C: μ̂ = μ/sqrt(T))."""
    X, y, y_neighbour = _intercept_canary_data(31, 2, (0, 1))

    def make(seed):
        return DPLogisticRegression(
            epsilon=2.0,
            max_iter=10,
            clip_norm=0.1,
            learning_rate=1.0,
            alpha=0.0,
            solver="gd",
            random_state=seed,
        )

    direction = np.array([0.0, 1.0])  # (coef, intercept): the intercept
    mu_hat, se = _measured_mu(make, (X, y), (X, y_neighbour), direction)
    claimed = make(0).fit(X, y).privacy_spent_.mu
    _assert_mu(mu_hat, se, claimed)


def test_one_step_multinomial_audit():
    """Three classes, x = 0, clip C = 0.1 < ||softmax(0) − e_y|| = sqrt(2/3).
    At step 1 the base records (balanced) cancel; the canary's clipped
    gradient is C·(p − e_y)/sqrt(2/3) with p uniform, so label 0 vs 1 moves
    the intercepts by C·(e_1 − e_0)/sqrt(2/3), of norm C·sqrt(3) = 0.866·2C:
    the measured μ is 0.866·μ (a per-class clip would give more, a class
    without noise infinitely more)."""
    X, y, y_neighbour = _intercept_canary_data(31, 3, (0, 1))

    def make(seed):
        return DPLogisticRegression(
            epsilon=4.0,
            max_iter=1,
            clip_norm=0.1,
            alpha=0.0,
            solver="gd",
            random_state=seed,
        )

    direction = np.array([0.0, 0.0, 0.0, -1.0, 1.0, 0.0]) / math.sqrt(2)
    mu_hat, se = _measured_mu(make, (X, y), (X, y_neighbour), direction)
    claimed = make(0).fit(X, y).privacy_spent_.mu
    _assert_mu(mu_hat, se, math.sqrt(3) / 2 * claimed)


# --------------------------------------------------------------------------
# The intercept's start: noisy class counts, paid from the same budget
# --------------------------------------------------------------------------


def _imbalanced(n, weights, seed=0):
    X, y = make_classification(
        n_samples=n,
        n_features=4,
        n_informative=2,
        n_classes=len(weights),
        n_clusters_per_class=1,
        weights=weights,
        flip_y=0.0,
        random_state=seed,
    )
    return StandardScaler().fit_transform(X), y


def test_the_intercept_start_releases_the_class_counts_with_its_share(monkeypatch):
    """White-box: one release of the exact class counts, noise std sqrt(2)·z_s
    (replacing a record moves two counts by 1), before the steps; the steps'
    noise and the counts' compose to the fit's ε (dp-accounting's PLD, each
    release its own event). Fails if the counts' sensitivity, their share or
    their composition is wrong, or if the steps keep the whole budget."""
    import skdp._dpgd as dpgd_module
    import skdp.mechanisms as mechanisms_module

    X, y = _imbalanced(6000, [0.7, 0.2, 0.1])
    counts = gaussian_noise_calls(monkeypatch, mechanisms_module)
    steps = gaussian_noise_stds(monkeypatch, dpgd_module)
    clf = DPLogisticRegression(epsilon=1.0, delta=1e-5, classes=[0, 1, 2]).fit(X, y)
    z_s, z = clf.start_noise_multiplier_, clf.noise_multiplier_
    assert len(counts) == 1
    value, std, _ = counts[0]
    np.testing.assert_array_equal(value, np.bincount(y, minlength=3))
    assert std == pytest.approx(math.sqrt(2.0) * z_s, rel=1e-12)
    assert steps == [pytest.approx(2.0 * clf.clip_norm_ * z, rel=1e-12)] * clf.n_iter_
    # The share: 2% of μ² on the counts.
    mu = clf.privacy_spent_.mu
    assert 1.0 / z_s**2 == pytest.approx(0.02 * mu**2, rel=1e-9)
    accountant = dp_accounting.pld.PLDAccountant(value_discretization_interval=1e-4)
    event = dp_accounting.ComposedDpEvent(
        [
            dp_accounting.GaussianDpEvent(z_s),
            dp_accounting.SelfComposedDpEvent(
                dp_accounting.GaussianDpEvent(z), clf.n_iter_
            ),
        ]
    )
    pld_epsilon = accountant.compose(event).get_epsilon(1e-5)
    assert clf.privacy_spent_.epsilon <= 1.0 * (1 + 1e-12)
    assert clf.privacy_spent_.epsilon <= pld_epsilon * (1 + 1e-9)
    assert pld_epsilon == pytest.approx(1.0, rel=2e-3)
    assert "class counts" in clf.privacy_spent_.mechanism


@pytest.mark.parametrize("weights", [[0.95, 0.05], [0.7, 0.2, 0.1]])
def test_the_intercept_starts_at_the_log_odds_of_the_classes(weights):
    """With one tiny step the released intercept is the start: the log odds
    (binary) or centred log frequencies of the noisy counts, within 5 noise
    standard deviations of the data's (frequency noise z_s/n = 0.0013)."""
    X, y = _imbalanced(20000, weights)
    clf = DPLogisticRegression(
        max_iter=1, learning_rate=1e-12, classes=np.arange(len(weights))
    ).fit(X, y)
    log_p = np.log(np.bincount(y) / y.size)
    expected = [log_p[1] - log_p[0]] if len(weights) == 2 else log_p - log_p.mean()
    tolerance = 5 * clf.start_noise_multiplier_ / y.size / np.min(weights)
    np.testing.assert_allclose(clf.intercept_, expected, rtol=0, atol=tolerance)


def test_no_intercept_start_below_the_gate_or_without_an_intercept(monkeypatch):
    """Public rules: no count release where its frequency noise z_s/n would
    exceed 0.01 (n = 2000 at ε = 1: z_s = 26.4), without an intercept, or
    with the paper's accounting; the steps then spend the whole budget."""
    import skdp.mechanisms as mechanisms_module

    X, y = _imbalanced(6000, [0.9, 0.1])
    calls = gaussian_noise_calls(monkeypatch, mechanisms_module)
    for params, n in [
        (dict(), 2000),
        (dict(fit_intercept=False), 6000),
        (dict(accounting="paper"), 6000),
    ]:
        clf = DPLogisticRegression(classes=[0, 1], max_iter=5, **params)
        clf.fit(X[:n], y[:n])
        assert clf.start_noise_multiplier_ == math.inf
        mu = math.sqrt(clf.n_iter_) / clf.noise_multiplier_
        assert clf.privacy_spent_.mu == pytest.approx(mu, rel=1e-12)
    assert calls == []
    clf = DPLogisticRegression(classes=[0, 1], max_iter=5).fit(X[:3000], y[:3000])
    assert math.isfinite(clf.start_noise_multiplier_) and len(calls) == 1


def test_a_start_whose_total_exceeds_the_budget_is_refused_before_any_noise(
    monkeypatch,
):
    """The whole fit's cost (counts and steps) is checked before the counts
    are released: an accounting bug in the split (here, a total claimed at
    half its noise) raises before any noise is drawn (review)."""
    import skdp.linear_model._logistic as module
    import skdp.mechanisms as mechanisms_module
    from skdp.exceptions import MechanismFailedError

    real = module.split_gaussian_budget

    def wrong(*args, **kwargs):
        parts, total = real(*args, **kwargs)
        return parts, total / 2.0

    monkeypatch.setattr(module, "split_gaussian_budget", wrong)
    calls = gaussian_noise_calls(monkeypatch, mechanisms_module)
    X, y = _imbalanced(6000, [0.9, 0.1])
    with pytest.raises(MechanismFailedError):
        DPLogisticRegression(classes=[0, 1], max_iter=5).fit(X, y)
    assert calls == []


def test_the_secure_start_is_accounted_in_zcdp_with_the_grid_slack():
    """noise="secure": the counts and the steps are two secure releases
    whose zCDP, with each one's grid slack (1/z + 2^-16)²/2, adds up to no
    more than the reported ρ, and ε stays within the budget."""
    X, y = _imbalanced(6000, [0.9, 0.1])
    clf = DPLogisticRegression(
        epsilon=1.0, classes=[0, 1], max_iter=5, noise="secure"
    ).fit(X, y)
    z_s, z = clf.start_noise_multiplier_, clf.noise_multiplier_
    assert math.isfinite(z_s)
    slack = 2.0**-16
    rho = (1 / z_s + slack) ** 2 / 2 + clf.n_iter_ * (1 / z + slack) ** 2 / 2
    assert clf.privacy_spent_.zcdp is not None
    assert rho <= clf.privacy_spent_.zcdp * (1 + 1e-12)
    assert clf.privacy_spent_.epsilon <= 1.0 * (1 + 1e-12)


def test_the_start_says_what_it_spends_only_when_verbose(capsys):
    X, y = _imbalanced(6000, [0.9, 0.1])
    DPLogisticRegression(classes=[0, 1], max_iter=5, random_state=0).fit(X, y)
    assert capsys.readouterr().out == ""
    clf = DPLogisticRegression(classes=[0, 1], max_iter=5, verbose=1).fit(X, y)
    lines = capsys.readouterr().out.splitlines()
    assert "in all: noisy class counts" in lines[0]
    total = f"released a model that is (1, {clf.delta:g})-DP"
    assert lines[-1].endswith(total), lines[-1]  # the whole fit's, not the steps'


def test_intercept_from_counts_projects_and_floors():
    from skdp.linear_model._logistic import intercept_from_counts

    # Counts adding up to 1100 for n = 1000: shifted equally to 950 - 50, 150 - 50.
    start = intercept_from_counts(np.array([950.0, 150.0]), 1000, 1.0)
    np.testing.assert_allclose(start, [math.log(100 / 900)])
    # A class below its noise std (z·sqrt(2(k − 1)/k) = 10 for k = 2) is
    # floored there: log(10/1000), not log of a negative count.
    start = intercept_from_counts(np.array([1000.0, -40.0]), 960, 10.0)
    np.testing.assert_allclose(start, [math.log(10 / 1000)])
    # Three classes: centred log frequencies; the floor z·sqrt(4/3).
    start = intercept_from_counts(np.array([600.0, 400.0, -5.0]), 995, 3.0)
    floor = 3.0 * math.sqrt(4 / 3)
    logs = np.log([600.0, 400.0, floor])
    np.testing.assert_allclose(start, logs - logs.mean())


def test_the_start_of_a_declared_class_absent_from_y():
    """Its count is noise around 0, floored: the start ranks it rarest."""
    X, y = _imbalanced(6000, [0.8, 0.2])
    clf = DPLogisticRegression(
        classes=[0, 1, 2], max_iter=1, learning_rate=1e-12, random_state=0
    ).fit(X, y)
    assert clf.intercept_.shape == (3,)
    # 4800, 1200 and about 0 records: log counts centred, far apart.
    assert np.diff(clf.intercept_[::-1]).min() > 1.0


def test_the_start_composes_through_a_search_in_the_ledger():
    """Clones in a KFold grid search (seeded folds, fresh noise): every fold
    fit and the refit release their class counts and their steps; each
    record is in 2 x 2 fold fits and the refit, and the ledger's total is
    sqrt(5) times one fit's μ recomputed from its two multipliers (never
    less: the counts' share left out would give sqrt(0.98) of it)."""
    X, y = _imbalanced(9000, [0.9, 0.1])
    cv = KFold(3, shuffle=True, random_state=0)
    search = GridSearchCV(
        DPLogisticRegression(classes=[0, 1], max_iter=5),
        {"clip_norm": [0.5, 1.0]},
        cv=cv,
    ).fit(X, y)
    refit = search.best_estimator_
    assert math.isfinite(refit.start_noise_multiplier_)  # folds of 6000: open too
    one = math.sqrt(
        refit.n_iter_ / refit.noise_multiplier_**2
        + 1 / refit.start_noise_multiplier_**2
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        total = PrivacyLedger().record(search).total()
    assert total.mu >= math.sqrt(5) * one * (1 - 1e-12)
    assert total.mu == pytest.approx(math.sqrt(5) * one, rel=1e-9)
