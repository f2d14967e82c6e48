"""DPGaussianNB: the joint release's sensitivity, noise, budget, labels, utility."""

import itertools
import math
import sys
import warnings
from collections import namedtuple

import numpy as np
import pytest
from _warning_location import points_at
from sklearn.base import clone
from sklearn.naive_bayes import GaussianNB
from sklearn.pipeline import make_pipeline

import skdp.naive_bayes._gaussian as nb_module
from skdp import DPGaussianNB, DPStandardScaler, PrivacyLeakWarning, PrivacyLedger
from skdp.accounting import (
    REPLACE_ONE,
    gaussian_cost,
    gaussian_noise_multiplier,
    mu_from_epsilon,
)
from skdp.mechanisms import gaussian_mechanism
from skdp.naive_bayes._gaussian import (
    class_moment_sensitivity,
    class_moment_sums,
)

DELTA = 1e-6


def exact_release(X, y, classes, lower, upper):
    """The joint release before noise, written out record by record (oracle)."""
    n, d = X.shape
    K = len(classes)
    counts = np.zeros(K)
    sums = np.zeros((K, d))
    squares = np.zeros((K, d))
    for i in range(n):
        k = list(classes).index(y[i])
        for j in range(d):
            x = min(max(X[i, j], lower[j]), upper[j])
            z = (x - (lower[j] + upper[j]) / 2) / (upper[j] - lower[j])
            sums[k, j] += z
            squares[k, j] += z * z - 1 / 8
        counts[k] += 1
    return np.concatenate(
        [math.sqrt(d / 8) * counts, sums.ravel(), 2 * math.sqrt(2) * squares.ravel()]
    )


def test_class_moment_sums_match_the_oracle():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)) * [1.0, 10.0, 0.1] + [0.0, 5.0, -1.0]
    y = rng.choice([2, 5, 7], size=40)
    lower, upper = np.array([-1.0, 0.0, -1.1]), np.array([1.0, 20.0, -0.9])
    classes = np.array([2, 5, 7])
    got = class_moment_sums(X, y, classes=classes, lower=lower, upper=upper)
    np.testing.assert_allclose(
        got, exact_release(X, y, classes, lower, upper), rtol=1e-12, atol=1e-12
    )


@pytest.mark.parametrize("d", [1, 2, 5])
def test_sensitivity_is_sqrt_d_and_attained_within_and_across_classes(d):
    """Every replace-one pair with corner records (the extremes of a convex
    objective) moves the release by at most sqrt(d), and both a same-class and
    a class-changing replacement reach it."""
    rng = np.random.default_rng(1)
    classes = np.array([0, 1, 2])
    lower, upper = -np.ones(d), np.ones(d)
    base = rng.uniform(-1, 1, size=(7, d))
    y = rng.integers(0, 3, size=7)
    bound = class_moment_sensitivity(d)
    values = [-1.0, 0.0, 1.0]  # z = -1/2, 0, 1/2: the extremes of f and g
    largest = {"same": 0.0, "across": 0.0}
    for a_row, b_row in itertools.product(
        itertools.product(values, repeat=d), repeat=2
    ):
        for label in (0, 1):
            X1, X2 = base.copy(), base.copy()
            y1, y2 = y.copy(), y.copy()
            X1[0], y1[0] = a_row, 0
            X2[0], y2[0] = b_row, label
            move = np.linalg.norm(
                class_moment_sums(X1, y1, classes=classes, lower=lower, upper=upper)
                - class_moment_sums(X2, y2, classes=classes, lower=lower, upper=upper)
            )
            assert move <= bound * (1 + 1e-12)
            kind = "same" if label == 0 else "across"
            largest[kind] = max(largest[kind], move)
    assert largest["same"] == pytest.approx(bound, rel=1e-12)
    assert largest["across"] == pytest.approx(bound, rel=1e-12)


def test_random_replacements_never_exceed_the_sensitivity():
    rng = np.random.default_rng(2)
    d, classes = 4, np.array([0, 1])
    lower, upper = np.full(d, -2.0), np.full(d, 3.0)
    X = rng.normal(size=(20, d))
    y = rng.integers(0, 2, size=20)
    base = class_moment_sums(X, y, classes=classes, lower=lower, upper=upper)
    for _ in range(2000):
        X2, y2 = X.copy(), y.copy()
        X2[3] = rng.normal(scale=10.0, size=d)  # often clipped
        y2[3] = rng.integers(0, 2)
        other = class_moment_sums(X2, y2, classes=classes, lower=lower, upper=upper)
        assert np.linalg.norm(other - base) <= math.sqrt(d) * (1 + 1e-12)


Release = namedtuple("Release", "value out sensitivity noise_multiplier rng")


def _recording(monkeypatch, histograms=False):
    """Every Gaussian release of DPGaussianNB's moments (and, with
    ``histograms``, of its bounds' histograms) as a :class:`Release`."""
    import skdp.preprocessing._quantiles as quantiles

    calls = []

    def record(value, *, sensitivity, noise_multiplier, rng):
        value = np.array(value, dtype=float)
        out = gaussian_mechanism(
            value, sensitivity=sensitivity, noise_multiplier=noise_multiplier, rng=rng
        )
        calls.append(Release(value, out, sensitivity, noise_multiplier, rng))
        return out

    monkeypatch.setattr(nb_module, "gaussian_mechanism", record)
    if histograms:
        monkeypatch.setattr(quantiles, "gaussian_mechanism", record)
    return calls


def test_noise_of_the_release_has_the_calibrated_std(monkeypatch):
    """Released minus exact statistic, over seeded fits: std = z·sqrt(d) with z
    computed independently from (ε, δ); the value noised is the oracle's."""
    calls = _recording(monkeypatch)
    rng = np.random.default_rng(3)
    X = rng.normal(size=(30, 3))
    y = rng.integers(0, 2, size=30)
    epsilon = 2.0
    model = DPGaussianNB(
        epsilon=epsilon, delta=DELTA, bounds=(-2.0, 2.0), classes=[0, 1]
    )
    for seed in range(300):
        clone(model).set_params(random_state=seed).fit(X, y)
    z = gaussian_noise_multiplier(epsilon, DELTA)
    assert {round(c.sensitivity, 12) for c in calls} == {round(math.sqrt(3), 12)}
    assert {c.noise_multiplier for c in calls} == {z}
    oracle = exact_release(X, y, [0, 1], np.full(3, -2.0), np.full(3, 2.0))
    for value, *_ in calls:
        np.testing.assert_allclose(value, oracle, rtol=1e-12, atol=1e-12)
    noise = np.concatenate([out - value for value, out, *_ in calls])
    # 300 × 14 draws: the std's relative s.e. is about 1/sqrt(2·4200) = 1.1%.
    assert np.std(noise) == pytest.approx(z * math.sqrt(3), rel=0.05)


# Strides 1 (one histogram), 2 (the smallest that subsamples) and 7.
@pytest.mark.parametrize("n_samples, n_iter", [(300, 2), (20000, 5), (60000, 5)])
def test_private_bounds_and_moments_share_the_budget_exactly(
    monkeypatch, n_samples, n_iter
):
    """Σ_i 1/z_i² over every release = μ², whatever the schedule."""
    calls = _recording(monkeypatch, histograms=True)
    rng = np.random.default_rng(4)
    y = rng.integers(0, 2, size=n_samples)
    X = rng.normal(size=(n_samples, 2)) + y[:, None]
    model = DPGaussianNB(delta=DELTA, classes=[0, 1], random_state=0).fit(X, y)
    multipliers = [call.noise_multiplier for call in calls]
    assert model.n_iter_ == len(multipliers) == n_iter
    mu = mu_from_epsilon(1.0, DELTA)
    assert sum(1 / z**2 for z in multipliers) == pytest.approx(mu**2, rel=1e-9)
    assert model.privacy_spent_.mu == pytest.approx(mu, rel=1e-9)
    assert math.sqrt(model.n_iter_) / model.noise_multiplier_ == pytest.approx(
        mu, rel=1e-9
    )
    # The bounds read every k-th row, k = floor(n·μ/(1000·sqrt(2d))) (public).
    snr = n_samples * mu / math.sqrt(2 * 2)
    stride = max(1, int(snr // 1000))
    assert (stride > 1) == (n_iter == 5)
    assert stride == {300: 1, 20000: 2, 60000: 7}[n_samples]
    rows_read = len(range(0, n_samples, stride))
    np.testing.assert_array_equal(calls[0].value.sum(axis=1), rows_read)


def test_guarantee_reproduced_by_dp_accounting():
    dp_accounting = pytest.importorskip("dp_accounting")
    X, y = _two_blobs(5000)
    model = DPGaussianNB(epsilon=1.0, delta=DELTA, classes=[0, 1]).fit(X, y)
    # noise_multiplier_ is σ over the replace-one sensitivity itself, so the
    # release is dp-accounting's Gaussian event under its add/remove relation.
    accountant = dp_accounting.pld.PLDAccountant()
    accountant.compose(
        dp_accounting.GaussianDpEvent(model.noise_multiplier_), model.n_iter_
    )
    assert accountant.get_epsilon(DELTA) == pytest.approx(1.0, rel=1e-3)


def _two_blobs(n, d=3, seed=0):
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n)
    X = rng.normal(size=(n, d)) * [1.0, 2.0, 0.5][:d] + 2.0 * y[:, None] + 100.0
    return X, y


def test_matches_sklearn_at_high_epsilon_with_given_bounds():
    X, y = _two_blobs(4000)
    model = DPGaussianNB(
        epsilon=1e6, delta=DELTA, bounds=(80.0, 120.0), classes=[0, 1]
    ).fit(X, y)
    reference = GaussianNB().fit(X, y)
    np.testing.assert_allclose(model.theta_, reference.theta_, rtol=1e-4)
    np.testing.assert_allclose(model.var_, reference.var_, rtol=1e-2)
    np.testing.assert_allclose(model.class_prior_, reference.class_prior_, atol=1e-3)
    np.testing.assert_allclose(
        model.predict_proba(X), reference.predict_proba(X), atol=1e-2
    )
    np.testing.assert_allclose(
        np.exp(model.predict_log_proba(X)).sum(axis=1), 1.0, rtol=1e-12
    )


def test_default_bounds_give_a_useful_model_at_epsilon_one():
    X, y = _two_blobs(20000, seed=1)
    X_test, y_test = _two_blobs(5000, seed=2)
    model = DPGaussianNB(delta=DELTA, classes=[0, 1], random_state=0).fit(X, y)
    reference = GaussianNB().fit(X, y).score(X_test, y_test)
    assert model.score(X_test, y_test) >= reference - 0.02
    np.testing.assert_allclose(model.theta_, GaussianNB().fit(X, y).theta_, atol=0.2)


def test_constant_and_unseen_features_are_dropped_and_do_not_vote():
    rng = np.random.default_rng(5)
    y = rng.integers(0, 2, size=600)
    X = np.column_stack(
        [rng.normal(size=600) + 3 * y, np.zeros(600), rng.normal(size=600)]
    )
    model = DPGaussianNB(epsilon=1.0, delta=DELTA, classes=[0, 1], random_state=0)
    model.fit(X, y)
    assert model.n_iter_ == 2  # one histogram, then the moments
    assert model.dropped_features_[1]
    assert np.ptp(model.theta_[:, 1]) == 0 and np.ptp(model.var_[:, 1]) == 0
    # A dropped feature's bounds are the public search range.
    np.testing.assert_array_equal(model.bounds_[:, 1], [-1e6, 1e6])
    assert model.score(X, y) > 0.9


def test_label_set_read_from_y_warns_and_is_a_caveat():
    X, y = _two_blobs(500)
    with pytest.warns(PrivacyLeakWarning, match="label set was inferred") as record:
        model = DPGaussianNB(delta=DELTA, bounds=(80, 120)).fit(X, y)
    # The one notice of the leak: what is public, the fix, and the caller's line.
    (warning,) = [w for w in record if w.category is PrivacyLeakWarning]
    message = str(warning.message)
    assert message.startswith("The label set was inferred from y and is treated")
    assert "(it is released in classes_ and shapes theta_). If which" in message
    assert message.endswith("pass classes=[...] declared in advance.")
    assert points_at(warning, __file__)
    assert any("label set" in c for c in model.privacy_spent_.caveats)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        declared = DPGaussianNB(delta=DELTA, bounds=(80, 120), classes=[0, 1, 2])
        declared.fit(X, y)
    assert declared.classes_.tolist() == [0, 1, 2]
    assert not declared.privacy_spent_.caveats
    assert declared.predict_proba(X).shape == (500, 3)


def test_bad_labels_priors_and_bounds_raise_before_any_work():
    X, y = _two_blobs(100)
    # The messages name no label (the labels in y are private).
    with pytest.raises(
        ValueError, match=r"^y contains labels that are not in the declared classes\.$"
    ):
        DPGaussianNB(delta=DELTA, classes=[0, 5]).fit(X, y)
    with pytest.raises(
        ValueError,
        match=r"^DPGaussianNB needs at least 2 classes; classes declares only one",
    ):
        DPGaussianNB(delta=DELTA, classes=[0]).fit(X, np.zeros(100, dtype=int))
    with pytest.raises(
        ValueError, match=r"^DPGaussianNB needs at least 2 classes; y contains only one"
    ):
        DPGaussianNB(delta=DELTA).fit(X, np.zeros(100, dtype=int))
    with pytest.raises(ValueError, match=r"^The sum of the priors should be 1\.$"):
        DPGaussianNB(delta=DELTA, classes=[0, 1], priors=[0.5, 0.6]).fit(X, y)
    with pytest.raises(
        ValueError, match=r"^Number of priors must match number of classes\.$"
    ):
        DPGaussianNB(delta=DELTA, classes=[0, 1], priors=[1.0]).fit(X, y)
    with pytest.raises(ValueError, match=r"^Priors must be non-negative\.$"):
        DPGaussianNB(delta=DELTA, classes=[0, 1], priors=[1.5, -0.5]).fit(X, y)
    with pytest.raises(ValueError, match="lower < upper"):
        DPGaussianNB(delta=DELTA, classes=[0, 1], bounds=(1, 0)).fit(X, y)
    with pytest.raises(ValueError, match="delta > 0"):
        DPGaussianNB(delta=0.0, classes=[0, 1]).fit(X, y)
    model = DPGaussianNB(delta=DELTA, classes=[0, 1])
    with pytest.raises(TypeError, match="sample_weight"):
        model.fit(X, y, sample_weight=np.ones(100))
    assert not hasattr(model, "theta_")


def test_priors_and_var_smoothing_are_used():
    X, y = _two_blobs(3000)
    model = DPGaussianNB(
        epsilon=1e6,
        delta=DELTA,
        classes=[0, 1],
        bounds=(80.0, 120.0),
        priors=[0.9, 0.1],
        var_smoothing=0.1,
    ).fit(X, y)
    np.testing.assert_array_equal(model.class_prior_, [0.9, 0.1])
    largest = X.var(axis=0).max()
    assert model.epsilon_ == pytest.approx(0.1 * largest, rel=1e-3)
    reference = GaussianNB(priors=[0.9, 0.1], var_smoothing=0.1).fit(X, y)
    np.testing.assert_allclose(model.var_, reference.var_, rtol=1e-2)


def test_predict_clips_to_the_bounds():
    X, y = _two_blobs(2000)
    model = DPGaussianNB(
        epsilon=5.0, delta=DELTA, classes=[0, 1], bounds=(90.0, 110.0), random_state=0
    ).fit(X, y)
    far = np.array([[1e9, 1e9, 1e9]])
    np.testing.assert_array_equal(
        model.predict_proba(far), model.predict_proba([[110.0, 110.0, 110.0]])
    )


def test_ledger_counts_it_alone_and_in_a_pipeline():
    X, y = _two_blobs(3000)
    model = DPGaussianNB(epsilon=0.5, delta=DELTA, classes=[0, 1]).fit(X, y)
    ledger = PrivacyLedger().record(model)
    assert ledger.total().mu == pytest.approx(mu_from_epsilon(0.5, DELTA), rel=1e-9)
    pipe = make_pipeline(
        DPStandardScaler(epsilon=0.5, delta=DELTA, bounds=(80.0, 120.0)),
        DPGaussianNB(epsilon=0.5, delta=DELTA, classes=[0, 1]),
    ).fit(X, y)
    total = PrivacyLedger().record(pipe).total()
    assert total.mu == pytest.approx(
        math.sqrt(2) * mu_from_epsilon(0.5, DELTA), rel=1e-9
    )


def test_secure_noise():
    X, y = _two_blobs(3000)
    model = DPGaussianNB(epsilon=1.0, delta=DELTA, classes=[0, 1], noise="secure")
    model.fit(X, y)
    assert "secure" in model.privacy_spent_.sampler.lower() or (
        "discrete" in model.privacy_spent_.sampler.lower()
    )
    assert model.privacy_spent_.epsilon <= 1.0 * (1 + 1e-9)
    assert model.score(X, y) > 0.8
    with pytest.raises(ValueError):
        clone(model).set_params(random_state=0).fit(X, y)


def test_dask_input_matches_in_memory():
    da = pytest.importorskip("dask.array")
    X, y = _two_blobs(3000)
    model = DPGaussianNB(epsilon=1.0, delta=DELTA, classes=[0, 1], random_state=7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        memory = clone(model).fit(X, y)
        lazy = clone(model).fit(
            da.from_array(X, chunks=(700, 3)), da.from_array(y, 700)
        )
    np.testing.assert_allclose(lazy.theta_, memory.theta_, rtol=1e-9)
    np.testing.assert_allclose(lazy.var_, memory.var_, rtol=1e-9)
    assert lazy.privacy_spent_.mu == memory.privacy_spent_.mu
    predicted = lazy.predict(da.from_array(X, chunks=(700, 3))).compute()
    np.testing.assert_array_equal(predicted, memory.predict(X))
    with pytest.raises(
        ValueError, match=r"^y contains labels that are not in the declared classes\.$"
    ):
        clone(model).set_params(classes=[0, 5]).fit(
            da.from_array(X, chunks=(700, 3)), da.from_array(y, 700)
        )


# --------------------------------------------------------------------------
# Audit (skdp.audit, ClassRecordCanary): not refuted, tight, and with power
# --------------------------------------------------------------------------


def _audit_data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    return X, (X[:, 0] > 0).astype(int)


def _audited(epsilon=1.0, **params):
    return DPGaussianNB(
        epsilon=epsilon, delta=1e-5, bounds=(-3.0, 3.0), classes=[0, 1], **params
    )


def test_audit_does_not_refute_the_claim_and_mu_hat_is_tight():
    from skdp.audit import ClassRecordCanary, audit_estimator, default_canary

    X, y = _audit_data()
    assert isinstance(default_canary(_audited()), ClassRecordCanary)
    report = audit_estimator(_audited(), X, y, n_trials=1000, random_state=0)
    assert report.claimed_epsilon == pytest.approx(1.0)
    assert not report.refuted
    assert report.expected_mu == pytest.approx(report.claimed_mu, rel=1e-9)
    assert abs(report.mu_hat - report.claimed_mu) <= 4 * report.mu_hat_se


def test_audit_catches_a_tenth_of_the_noise(monkeypatch):
    from skdp.audit import audit_estimator

    X, y = _audit_data()

    def weak(value, *, sensitivity, noise_multiplier, rng):
        return gaussian_mechanism(
            value,
            sensitivity=sensitivity,
            noise_multiplier=noise_multiplier / 10,
            rng=rng,
        )

    monkeypatch.setattr(nb_module, "gaussian_mechanism", weak)
    broken = audit_estimator(_audited(), X, y, n_trials=500, random_state=3)
    assert broken.refuted
    assert broken.mu_hat > 3 * broken.claimed_mu


def test_audit_catches_a_sensitivity_three_times_too_small(monkeypatch):
    """Noise calibrated to a third of the sensitivity: caught."""
    from skdp.audit import audit_estimator

    X, y = _audit_data()
    monkeypatch.setattr(
        nb_module, "class_moment_sensitivity", lambda d: math.sqrt(d) / 3
    )
    broken = audit_estimator(_audited(), X, y, n_trials=500, random_state=3)
    assert broken.refuted


def test_audit_with_private_bounds_does_not_refute():
    from skdp.audit import audit_estimator

    X = np.random.default_rng(0).normal(size=(300, 3))
    y = (X[:, 0] > 0).astype(int)
    model = DPGaussianNB(epsilon=1.0, delta=1e-5, classes=[0, 1])
    report = audit_estimator(model, X, y, n_trials=300, random_state=0)
    assert report.expected_mu is None  # several releases
    assert not report.refuted


@pytest.mark.parametrize("n_samples, n_bins", [(60, 49), (400, 97)])
def test_histogram_grid_is_chosen_from_public_values(monkeypatch, n_samples, n_bins):
    """Below the public ratio n·μ/sqrt(2d) = 8 the bounds histogram has 2 bins
    per decade (49), above it 4 (97): n, d, ε and δ decide, not the data."""
    calls = _recording(monkeypatch, histograms=True)
    rng = np.random.default_rng(6)
    y = rng.integers(0, 2, size=n_samples)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        for scale in (1.0, 1e4):  # the data's scale does not change the grid
            X = scale * rng.normal(size=(n_samples, 4))
            DPGaussianNB(delta=1e-5, classes=[0, 1], random_state=0).fit(X, y)
    histograms = [c.value.shape for c in calls if c.value.ndim == 2]
    assert histograms == [(4, n_bins)] * 2


def test_dask_input_with_strided_bounds_matches_in_memory():
    """n·μ/sqrt(2d) ≈ 7000: the search reads every 7th row, lazily on Dask."""
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(8)
    y = rng.integers(0, 2, size=60000)
    X = rng.normal(size=(60000, 2)) + y[:, None]
    model = DPGaussianNB(delta=DELTA, classes=[0, 1], random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        memory = clone(model).fit(X, y)
        lazy = clone(model).fit(
            da.from_array(X, chunks=(7000, 2)), da.from_array(y, 7000)
        )
    assert memory.n_iter_ == lazy.n_iter_ == 5
    np.testing.assert_array_equal(lazy.bounds_, memory.bounds_)
    np.testing.assert_allclose(lazy.theta_, memory.theta_, rtol=1e-9)


# --------------------------------------------------------------------------
# select_features: given bounds, one histogram drops the features seen at 0
# --------------------------------------------------------------------------


def _blank_pixels(n=1500, seed=9):
    """Column 0 informative, 1 constant 0, 2 zero but for 3% of records,
    3 spread over [0, 16] (no zero), 4 zero for half the records."""
    rng = np.random.default_rng(seed)
    y = rng.integers(0, 2, size=n)
    X = np.column_stack(
        [
            np.clip(4.0 + 8.0 * y + rng.normal(size=n), 0, 16),
            np.zeros(n),
            np.where(rng.random(n) < 0.03, 16.0, 0.0),
            rng.uniform(0.5, 16.0, size=n),
            np.where(rng.random(n) < 0.5, 0.0, 12.0 + 4.0 * y),
        ]
    )
    return X, y


def test_select_features_spends_fifteen_percent_on_one_histogram(monkeypatch):
    """Two releases: the histogram of X clipped to the given bounds on the
    signed grid over [-16, 16] (sensitivity sqrt(2d), μ_s² = 0.15·μ²), then
    the moments of the kept features (sensitivity sqrt(d_kept), the rest)."""
    from skdp.preprocessing._quantiles import signed_grid

    calls = _recording(monkeypatch, histograms=True)
    X, y = _blank_pixels()
    X[0, 3] = -5.0  # clipped to 0 before the histogram
    X[1, 3] = 99.0  # clipped to 16
    model = DPGaussianNB(
        delta=DELTA, classes=[0, 1], bounds=(0, 16), select_features=True
    ).set_params(random_state=0)
    model.fit(X, y)
    mu = mu_from_epsilon(1.0, DELTA)
    (hist, _, s_hist, z_hist, _), (moments, _, s_mom, z_mom, _) = calls
    assert z_hist == pytest.approx(1 / (mu * math.sqrt(0.15)), rel=1e-9)
    assert z_mom == pytest.approx(1 / (mu * math.sqrt(0.85)), rel=1e-9)
    assert s_hist == pytest.approx(math.sqrt(2 * 5), rel=1e-12)
    # The histogram counts the clipped data on the public grid (4 per decade).
    edges = signed_grid(16.0, 4)
    clipped = np.clip(X, 0, 16)
    expected = np.array(
        [np.histogram(clipped[:, j], bins=edges)[0] for j in range(5)], dtype=float
    )
    np.testing.assert_array_equal(hist, expected)
    # Columns 1 and 2 are seen only at 0; the others are kept.
    np.testing.assert_array_equal(
        model.dropped_features_, [False, True, True, False, False]
    )
    assert s_mom == pytest.approx(math.sqrt(3), rel=1e-12)
    keep = ~model.dropped_features_
    oracle = exact_release(X[:, keep], y, [0, 1], np.zeros(3), np.full(3, 16.0))
    np.testing.assert_allclose(moments, oracle, rtol=1e-12, atol=1e-9)
    assert model.n_iter_ == 2
    assert model.privacy_spent_.mu == pytest.approx(mu, rel=1e-9)
    assert math.sqrt(2) / model.noise_multiplier_ == pytest.approx(mu, rel=1e-9)
    np.testing.assert_array_equal(model.bounds_[:, keep], [[0, 0, 0], [16, 16, 16]])
    for j in (1, 2):  # a dropped feature does not vote
        assert np.ptp(model.theta_[:, j]) == 0 and np.ptp(model.var_[:, j]) == 0


def test_select_features_is_ignored_without_given_bounds_and_off_by_default():
    X, y = _blank_pixels()
    given = DPGaussianNB(delta=DELTA, classes=[0, 1], bounds=(0, 16), random_state=0)
    assert given.fit(X, y).n_iter_ == 1
    assert not given.dropped_features_.any()
    private = DPGaussianNB(delta=DELTA, classes=[0, 1], random_state=0)
    chosen = clone(private).set_params(select_features=True).fit(X, y)
    assert chosen.n_iter_ == private.fit(X, y).n_iter_ == 5  # the search
    np.testing.assert_array_equal(chosen.theta_, private.theta_)


def test_select_features_guarantee_reproduced_by_dp_accounting():
    dp_accounting = pytest.importorskip("dp_accounting")
    X, y = _blank_pixels()
    model = DPGaussianNB(
        epsilon=1.0, delta=DELTA, classes=[0, 1], bounds=(0, 16), select_features=True
    ).fit(X, y)
    accountant = dp_accounting.pld.PLDAccountant()
    accountant.compose(
        dp_accounting.GaussianDpEvent(model.noise_multiplier_), model.n_iter_
    )
    assert accountant.get_epsilon(DELTA) == pytest.approx(1.0, rel=1e-3)


def test_select_features_helps_when_many_features_are_blank():
    """Ten informative columns next to forty blank ones: dropping the blank
    ones shrinks the release's sqrt(d) (seeded; 20 fits each)."""
    rng = np.random.default_rng(10)
    n = 2000
    y = rng.integers(0, 4, size=n)
    informative = np.clip(
        8.0
        + 2.0 * (y[:, None] - 1.5) * rng.choice([-1, 1], 10)
        + 3.0 * rng.normal(size=(n, 10)),
        0,
        16,
    )
    X = np.column_stack([informative, np.zeros((n, 40))])
    X_test, y_test = X[1500:], y[1500:]
    X, y = X[:1500], y[:1500]
    scores = {False: [], True: []}
    for seed, select in itertools.product(range(20), (False, True)):
        model = DPGaussianNB(
            delta=DELTA,
            classes=np.arange(4),
            bounds=(0, 16),
            select_features=select,
            random_state=seed,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            scores[select].append(model.fit(X, y).score(X_test, y_test))
    assert np.mean(scores[True]) > np.mean(scores[False]) + 0.02


def test_audit_with_selected_features_does_not_refute():
    from skdp.audit import audit_estimator

    X, y = _audit_data()
    report = audit_estimator(
        _audited(select_features=True), X, y, n_trials=500, random_state=0
    )
    assert not report.refuted


def test_select_features_on_dask_matches_in_memory_and_takes_secure_noise():
    da = pytest.importorskip("dask.array")
    X, y = _blank_pixels()
    model = DPGaussianNB(
        delta=DELTA, classes=[0, 1], bounds=(0, 16), select_features=True
    )
    memory = clone(model).set_params(random_state=3).fit(X, y)
    lazy = clone(model).set_params(random_state=3)
    lazy.fit(da.from_array(X, chunks=(400, 5)), da.from_array(y, 400))
    np.testing.assert_array_equal(lazy.dropped_features_, memory.dropped_features_)
    np.testing.assert_allclose(lazy.theta_, memory.theta_, rtol=1e-9)
    secure = clone(model).set_params(noise="secure").fit(X, y)
    assert secure.n_iter_ == 2
    assert secure.privacy_spent_.epsilon <= 1.0 * (1 + 1e-9)
    assert secure.dropped_features_[1]


def test_nothing_kept_releases_the_counts_alone(monkeypatch):
    """Every feature seen only at 0: the release is the counts next to one
    dummy feature (column 0 on the bounds (-1, 1), so its z lies in [-1/2,
    1/2] and the sensitivity sqrt(1) = 1 covers it), with the moments' share
    of the budget; the same in memory and on Dask (whose row sums need the
    release's size)."""
    da = pytest.importorskip("dask.array")
    calls = _recording(monkeypatch)
    rng = np.random.default_rng(11)
    n = 1500
    y = rng.integers(0, 2, size=n)
    X = np.zeros((n, 3))
    model = DPGaussianNB(
        delta=DELTA, classes=[0, 1], bounds=(0, 16), select_features=True
    )
    memory = clone(model).set_params(random_state=4).fit(X, y)
    lazy = clone(model).set_params(random_state=4)
    lazy.fit(da.from_array(X, chunks=(400, 3)), da.from_array(y, 400))
    assert memory.dropped_features_.all() and lazy.dropped_features_.all()
    mu = mu_from_epsilon(1.0, DELTA)
    oracle = exact_release(X[:, :1], y, [0, 1], [-1.0], [1.0])
    assert len(calls) == 2
    for value, _, sensitivity, noise_multiplier, _ in calls:
        np.testing.assert_allclose(value, oracle, rtol=1e-12, atol=1e-12)
        assert sensitivity == 1.0
        assert noise_multiplier == pytest.approx(1 / (mu * math.sqrt(0.85)))
    np.testing.assert_allclose(lazy.class_count_, memory.class_count_, rtol=1e-9)
    assert memory.epsilon_ == 0.0


def test_small_data_warning_names_the_estimator_and_points_at_the_caller():
    """Below the public ratio 8 the fit warns (a feature's bulk may go unseen)
    in its own name, says what happens to an unseen feature, and points at
    the line that called fit."""
    X, y = _two_blobs(40)
    model = DPGaussianNB(delta=1e-3, classes=[0, 1], random_state=0)
    with pytest.warns(UserWarning, match="n_samples=40 is small") as record:
        model.fit(X, y)
    (warning,) = [w for w in record if "is small" in str(w.message)]
    assert str(warning.message).startswith("DPGaussianNB: ")
    assert "a feature not seen is dropped." in str(warning.message)
    assert points_at(warning, __file__)


def test_secure_noise_draws_every_release_from_the_secure_sampler(monkeypatch):
    """noise="secure": every release (histograms and moments) draws from
    SecureNoise, with the secure calibration of the whole budget (n_iter_
    secure steps of one equivalent multiplier, Σ 1/z_i² = n_iter_/z_eq²)."""
    from skdp.mechanisms import SecureNoise

    calls = _recording(monkeypatch, histograms=True)
    X, y = _two_blobs(3000)
    X[:, 2] = 0.0  # blank: select_features drops it
    for params in ({}, {"bounds": (80, 120), "select_features": True}):
        calls.clear()
        model = DPGaussianNB(delta=DELTA, classes=[0, 1], noise="secure", **params)
        model.fit(X, y)
        assert len(calls) == model.n_iter_ >= 2
        assert all(isinstance(call.rng, SecureNoise) for call in calls)
        # The secure report (zCDP with the grid's slack), not the GDP one.
        secure, fast = (
            gaussian_cost(
                model.noise_multiplier_,
                model.n_iter_,
                delta=DELTA,
                adjacency=REPLACE_ONE,
                noise=noise,
            )
            for noise in ("secure", "fast")
        )
        assert model.privacy_spent_.epsilon == pytest.approx(secure.epsilon, rel=1e-12)
        assert model.privacy_spent_.mu == secure.mu
        assert abs(fast.epsilon - secure.epsilon) > 0.01
        z_eq = gaussian_noise_multiplier(1.0, DELTA, model.n_iter_, noise="secure")
        assert sum(1 / c.noise_multiplier**2 for c in calls) == pytest.approx(
            model.n_iter_ / z_eq**2, rel=1e-9
        )


def test_variance_floor_is_the_noise_level_of_the_release():
    """var_ (less epsilon_) is at least the noise level of its release,
    σ/(γ·n_k) in z units with σ = z·sqrt(d), i.e. (u − l)²·σ/(γ·n_k) in x
    units, and a feature constant in each class sits on it (seeded)."""
    rng = np.random.default_rng(12)
    n, d = 400, 4
    y = rng.integers(0, 2, size=n)
    X = np.column_stack([1.0 + y, rng.normal(size=(n, d - 1))])
    model = DPGaussianNB(
        delta=DELTA, classes=[0, 1], bounds=(-4.0, 4.0), random_state=0
    ).fit(X, y)
    sigma = gaussian_noise_multiplier(1.0, DELTA) * math.sqrt(d)
    floor = 8.0**2 * sigma / (2 * math.sqrt(2) * model.class_count_[:, None])
    # The noisy counts, shifted to add up to n (public), none clipped at 0 here.
    assert model.class_count_.min() > 0
    assert model.class_count_.sum() == pytest.approx(n, rel=1e-12)
    excess = model.var_ - model.epsilon_
    assert (excess >= floor * (1 - 1e-9)).all()
    assert np.isclose(excess[:, 0], floor[:, 0], rtol=1e-9).any()


def test_privacy_spent_names_the_releases_of_each_schedule():
    """The ledger's one-line description of each schedule's releases."""
    X, y = _blank_pixels()
    base = "DPGaussianNB: noisy class counts, sums and sums of squares"
    cases = [
        (X, {"bounds": (0, 16)}, 1, ""),
        (
            X,
            {"bounds": (0, 16), "select_features": True},
            2,
            ", after a noisy histogram (features)",
        ),
        (X, {}, 5, ", after noisy histograms (bounds)"),
        (X[:150], {}, 2, ", after noisy histograms (bounds)"),
    ]
    for data, params, n_iter, tail in cases:
        model = DPGaussianNB(delta=DELTA, classes=[0, 1], random_state=0, **params)
        model.fit(data, y[: data.shape[0]])
        assert model.n_iter_ == n_iter
        assert model.privacy_spent_.mechanism == base + tail


# 4 bins per decade, and 2 below the public ratio 8 (n = 100, d = 5).
@pytest.mark.parametrize("n, per_decade", [(1500, 4), (100, 2)])
def test_select_features_histogram_counts_the_data_clipped_to_each_bound(
    monkeypatch, n, per_decade
):
    """In memory and on Dask, the feature histogram counts X clipped to the
    given per-feature bounds: below the lower, above the upper (one below
    the grid's public range), exactly as np.histogram of np.clip(X, l, u) on
    the public signed grid over [-16, 16]."""
    da = pytest.importorskip("dask.array")
    from skdp.preprocessing._quantiles import signed_grid

    calls = _recording(monkeypatch, histograms=True)
    X, y = _blank_pixels(n)
    X[0, 3], X[1, 3] = -5.0, 99.0
    lower, upper = np.zeros(5), np.array([8.0, 16.0, 16.0, 12.0, 16.0])
    model = DPGaussianNB(
        delta=DELTA, classes=[0, 1], bounds=(lower, upper), select_features=True
    )
    clone(model).set_params(random_state=0).fit(X, y)
    clone(model).set_params(random_state=0).fit(
        da.from_array(X, chunks=(40, 5)), da.from_array(y, 40)
    )
    clipped = np.clip(X, lower, upper)
    # Every bound clips something: the upper 8 and 12 (inside the grid's ±16).
    assert (X[:, 0] > 8).any() and (X[:, 3] > 12).sum() > 1 and X[0, 3] < 0
    edges = signed_grid(16.0, per_decade)
    expected = np.array(
        [np.histogram(clipped[:, j], bins=edges)[0] for j in range(5)], dtype=float
    )
    histograms = [c.value for c in calls if c.value.ndim == 2]
    assert len(histograms) == 2
    for histogram in histograms:
        np.testing.assert_array_equal(histogram, expected)


def test_defaults_spend_epsilon_one_at_delta_1e5():
    """The documented defaults (ε = 1, δ = 1e-5) are the guarantee of a fit
    given no budget."""
    X, y = _two_blobs(1000)
    model = DPGaussianNB(classes=[0, 1], bounds=(80, 120), random_state=0)
    spent = model.fit(X, y).privacy_spent_
    assert spent.delta == 1e-5
    assert spent.mu == pytest.approx(mu_from_epsilon(1.0, 1e-5), rel=1e-9)


def test_zero_prior_is_allowed_and_dask_fit_reads_the_label_set_from_y():
    """A prior of 0 is public and valid (as in scikit-learn): that class is
    never predicted. A Dask fit without declared classes reads them from y
    (with the warning) like the in-memory one."""
    da = pytest.importorskip("dask.array")
    X, y = _two_blobs(1000)
    model = DPGaussianNB(
        delta=DELTA, classes=[0, 1], bounds=(80, 120), priors=[0.0, 1.0]
    ).fit(X, y)
    with np.errstate(divide="ignore"):  # log(0): as scikit-learn's GaussianNB
        assert (model.predict(X) == 1).all()
    with pytest.warns(PrivacyLeakWarning, match="label set was inferred"):
        lazy = DPGaussianNB(delta=DELTA, bounds=(80, 120), random_state=0).fit(
            da.from_array(X, chunks=(300, 3)), da.from_array(y, 300)
        )
    assert lazy.classes_.tolist() == [0, 1]


def test_class_record_canary_statistic_is_the_noisy_sum_of_its_class(monkeypatch):
    """White-box check of the audit's canary: its records sit three
    half-widths beyond the bounds (floats, even for an integer X; the clip
    brings them back), and its statistic is Σ_j of the released noisy sums
    of its class over the kept features less the other records of the class
    normalised to the bounds (per-feature bounds with non-zero centres and
    widths, one feature dropped)."""
    from skdp.audit._release_canaries import ClassRecordCanary

    calls = _recording(monkeypatch)
    X, y = _blank_pixels()
    X = np.round(X).astype(np.int64)
    lower = np.array([-0.5, 0.0, 1.0, -2.0, 0.5])
    upper = lower + np.array([17.0, 16.0, 15.5, 20.0, 16.0])
    center, width = (lower + upper) / 2, upper - lower
    model = DPGaussianNB(
        delta=DELTA,
        classes=[0, 1],
        bounds=(lower, upper),
        select_features=True,
        random_state=0,
    )
    canary = ClassRecordCanary(index=3)
    (X_in, y_in), (X_out, y_out) = canary.build(model, X, y)
    np.testing.assert_allclose(X_in[3], center + 1.5 * width, rtol=1e-15)
    np.testing.assert_allclose(X_out[3], center - 1.5 * width, rtol=1e-15)
    np.testing.assert_array_equal(np.delete(X_in, 3, axis=0), np.delete(X, 3, axis=0))
    for labels in (y_in, y_out):  # the record keeps its label in both worlds
        np.testing.assert_array_equal(labels, y)
    # Bounds found privately: the records lie beyond ±data_range (public).
    searched = DPGaussianNB(data_range=50.0)
    (X_hi, _), (X_lo, _) = ClassRecordCanary(index=3).build(searched, X, y)
    np.testing.assert_array_equal(X_hi[3], np.full(5, 150.0))
    np.testing.assert_array_equal(X_lo[3], np.full(5, -150.0))
    fitted = model.fit(X_in, y_in)
    keep = ~fitted.dropped_features_
    assert 0 < keep.sum() < 5
    noisy = calls[-1].out
    d = int(keep.sum())
    sums = noisy[2 : 2 * (d + 1)].reshape(2, d)[y[3]]
    others = X[(np.arange(len(y)) != 3) & (y == y[3])][:, keep]
    known = (
        (np.clip(others, lower[keep], upper[keep]) - center[keep]) / width[keep]
    ).sum()
    assert canary.statistic(fitted) == pytest.approx(sums.sum() - known, rel=1e-9)


def test_a_feature_no_bin_shows_is_left_out_with_a_warning():
    # A column spread over 12 decades fills no bin of the one histogram: it
    # is left out of the release (dropped_features_), and the fit says so at
    # the caller's line. A column seen only at 0 (all zero) is left out
    # silently: nothing was lost.
    rng = np.random.default_rng(8)
    n = 150
    X = np.column_stack(
        [rng.normal(5.0, 0.1, n), 10.0 ** rng.uniform(-6, 6, n), np.zeros(n)]
    )
    y = np.arange(n) % 2
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        nb = DPGaussianNB(classes=[0, 1], random_state=0).fit(X, y)
    [dropped] = [w for w in caught if "stood out" in str(w.message)]
    assert str(dropped.message).startswith(
        "DPGaussianNB: no bin of the private histogram of feature(s) 1 stood out"
    )
    assert points_at(dropped, __file__, line)
    assert nb.dropped_features_.tolist() == [False, True, True]
    # Seen and all-zero columns only: nothing unseen, no warning.
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        quiet = DPGaussianNB(classes=[0, 1], random_state=0).fit(X[:, [0, 2]], y)
    assert not [w for w in caught if "stood out" in str(w.message)]
    assert quiet.dropped_features_.tolist() == [False, True]


def test_an_absent_class_count_is_floored_at_zero_not_one():
    # class_count_ is the noisy count (rebalanced to sum to n), floored at 0:
    # a declared class with no record gets 0 in about half of the fits
    # (noise std ~10 here) and never a negative count; the priors floor at
    # one record (a count of 0 would give a log-prior of -inf).
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(300, 2)), np.arange(300) % 2
    counts = np.array(
        [
            DPGaussianNB(
                epsilon=0.5,
                delta=DELTA,
                classes=[0, 1, 2],
                bounds=(-3, 3),
                random_state=seed,
            )
            .fit(X, y)
            .class_count_
            for seed in range(20)
        ]
    )
    assert counts.min() == 0.0
    assert 4 <= np.sum(counts[:, 2] == 0.0) <= 16
    np.testing.assert_allclose(counts.sum(axis=1)[counts.min(axis=1) > 0], 300.0)


def test_predictions_hold_far_from_zero():
    """(x - θ)²/var expanded in raw units cancelled to noise for a feature
    far from 0: chance accuracy at an offset of 1e9 with a spread of 1, where
    scikit-learn keeps 0.92; and x² overflowed to NaN probabilities at bounds
    near 1e160, which the bound checks accept (review of the baselines)."""
    rng = np.random.default_rng(0)
    n = 20000
    y = rng.integers(0, 2, n)
    for offset in (1e9, 1e12):
        X = offset + rng.normal(size=(n, 2)) + 2.0 * y[:, None]
        clf = DPGaussianNB(
            epsilon=10.0,
            delta=1e-8,
            classes=[0, 1],
            bounds=(offset - 6, offset + 8),
            random_state=0,
        ).fit(X, y)
        assert clf.score(X, y) >= GaussianNB().fit(X, y).score(X, y) - 0.01
    X = 1e160 + 1e153 * (rng.normal(size=(n, 2)) + 2.0 * y[:, None])
    clf = DPGaussianNB(
        epsilon=10.0,
        classes=[0, 1],
        bounds=(1e160 - 6e153, 1e160 + 8e153),
        random_state=0,
    ).fit(X, y)
    assert np.isfinite(clf.predict_proba(X)).all() and clf.score(X, y) > 0.85


def test_an_integer_data_range_fits():
    # np.full(..., data_range**2) was an int array, and adding the float
    # epsilon_ to it raised (review of the day's diff)
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(400, 3)), np.arange(400) % 2
    for params in (dict(data_range=10), dict(data_range=10, bounds=(-3, 3))):
        clf = DPGaussianNB(classes=[0, 1], delta=1e-6, **params).fit(X, y)
        assert clf.var_.dtype == np.float64 and np.isfinite(clf.var_).all()


def test_labels_of_another_integer_dtype_than_the_classes_stay_apart():
    # int64 labels in uint64 classes were compared through float64, so
    # 2**53 and 2**53 + 1 counted as one class (review). Both classifiers.
    from skdp import DPLogisticRegression

    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 2))
    big = np.array([2**53, 2**53 + 1], dtype=np.int64)
    y = np.repeat(big, 200)
    X[y == big[1]] += 2.0
    classes = big.astype(np.uint64)
    nb = DPGaussianNB(classes=classes, bounds=(-5, 7), epsilon=1e6, random_state=0)
    np.testing.assert_allclose(nb.fit(X, y).class_count_, [200, 200], atol=1e-3)
    assert nb.score(X, y) > 0.9
    clf = DPLogisticRegression(classes=classes, epsilon=1e6, random_state=0)
    assert clf.fit(X, y).score(X, y) > 0.9


def test_variances_near_the_float_range_give_finite_probabilities():
    # 2π·var_ overflowed past var_ = 2.9e307 (given bounds near 1e154):
    # every predict_proba NaN, every prediction classes_[0] (review).
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, 4000)
    side = rng.random((4000, 2)) < 0.5 + 0.2 * (2 * y[:, None] - 1)
    X = np.where(side, 0.95, -0.95) * 1e154
    nb = DPGaussianNB(
        classes=[0, 1], bounds=(-1e154, 1e154), epsilon=5.0, random_state=0
    ).fit(X, y)
    assert np.max(nb.var_) > np.finfo(float).max / (2 * np.pi)
    assert np.isfinite(nb.predict_proba(X)).all()
    # the same fit in units 1e-150 away from the edge of the float range
    small = clone(nb).set_params(bounds=(-1e4, 1e4)).fit(X * 1e-150, y)
    assert nb.score(X, y) > 0.6 and small.score(X * 1e-150, y) > 0.6
