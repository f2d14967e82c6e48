"""Seeds and noise reuse: the rule, the attacks it stops, and the ledger's refusal.

The rule (skdp.mechanisms): ``random_state=None`` draws every fit's noise
from fresh entropy; a seed is an explicit request for reproducible noise,
which the fit warns about and stamps into ``privacy_spent_.noise_seeds``,
and the ledger refuses to total releases that share a seed.

The three attacks of issue 23, finding 1, are run for real: with a shared
seed they reconstruct private values exactly (so the tests would catch a
change that made seeded fits share noise *and* the ledger accept them), and
with the default seed they fail.
"""

import warnings

import numpy as np
import pytest
from _warning_location import points_at
from sklearn.base import clone
from sklearn.compose import ColumnTransformer
from sklearn.model_selection import GridSearchCV, KFold, LeaveOneOut, cross_validate

from skdp import DPLogisticRegression, PrivacyLeakWarning, PrivacyLedger
from skdp.mechanisms import as_generator, noise_seed_id
from skdp.preprocessing import DPStandardScaler

DELTA = 1e-6
BOUNDS = (0.0, 10.0)  # public bounds: one Gaussian release per fit


def scaler(epsilon=1.0, random_state=None):
    return DPStandardScaler(
        epsilon=epsilon, delta=DELTA, bounds=BOUNDS, random_state=random_state
    )


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(7)
    return rng.uniform(0, 10, size=(40, 2))


def quietly(fn, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        return fn(*args, **kwargs)


# --------------------------------------------------------------------------
# The rule
# --------------------------------------------------------------------------


def test_seed_fingerprints_identify_streams():
    assert noise_seed_id(None) is None
    assert noise_seed_id(0) == noise_seed_id(np.int64(0)) != noise_seed_id(1)
    rs = np.random.RandomState(3)
    assert noise_seed_id(rs) == noise_seed_id(
        clone(scaler(random_state=rs)).random_state
    )
    g = np.random.default_rng(3)
    copy = clone(scaler(random_state=g)).random_state
    assert copy is not g and noise_seed_id(copy) == noise_seed_id(g)
    g.normal()
    assert noise_seed_id(copy) != noise_seed_id(g)  # a different position


def test_a_generator_seeds_a_child_stream_so_shifted_copies_do_not_overlap():
    # Two copies of one generator, one a few draws ahead: used as is, the
    # second's noise would be the first's shifted by those draws.
    ahead = np.random.default_rng(5)
    behind = np.random.default_rng(5)
    ahead.normal(size=3)
    a = as_generator(ahead).normal(size=50)
    b = as_generator(behind).normal(size=50)
    for shift in range(10):
        assert not np.isclose(a[: 50 - shift], b[shift:]).any()
    assert as_generator(behind) is not behind


def test_seeded_fit_warns_and_stamps_its_stream(data):
    with pytest.warns(PrivacyLeakWarning, match=r"random_state=0 seeds the privacy"):
        seeded = scaler(random_state=0).fit(data)
    assert seeded.privacy_spent_.noise_seeds == (noise_seed_id(0),)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        fresh = scaler().fit(data)
    assert fresh.privacy_spent_.noise_seeds == ()


def test_default_fits_never_repeat_noise(data):
    means = [scaler().fit(data).mean_ for _ in range(3)]
    assert len({tuple(m) for m in means}) == 3
    # While one seed reproduces them exactly (what a seed is for).
    a = quietly(scaler(random_state=4).fit, data).mean_
    b = quietly(scaler(random_state=4).fit, data).mean_
    np.testing.assert_array_equal(a, b)


# --------------------------------------------------------------------------
# Attack 1: two sibling scalers with one seed in a ColumnTransformer
# --------------------------------------------------------------------------


def sibling_scalers(random_state):
    # Column 0 is private; column 1 is known to the attacker (public).
    return ColumnTransformer(
        [
            ("private", scaler(random_state=random_state), [0]),
            ("public", scaler(random_state=random_state), [1]),
        ]
    )


def recover_private_mean(ct, public_column):
    """Attacker: the same noise on both means cancels in their difference."""
    private, public = (
        ct.named_transformers_["private"],
        ct.named_transformers_["public"],
    )
    return private.mean_[0] - public.mean_[0] + np.clip(public_column, *BOUNDS).mean()


def test_sibling_scalers_sharing_a_seed_leak_the_private_mean_and_are_refused(data):
    truth = np.clip(data[:, 0], *BOUNDS).mean()
    seeded = quietly(sibling_scalers(0).fit, data)
    single_release_error = abs(seeded.named_transformers_["private"].mean_[0] - truth)
    assert single_release_error > 1e-3  # the release alone is noisy
    assert recover_private_mean(seeded, data[:, 1]) == pytest.approx(truth, abs=1e-12)
    with pytest.raises(ValueError, match="same seeded stream"):
        quietly(PrivacyLedger(delta=DELTA).record, seeded)

    fresh = quietly(sibling_scalers(None).fit, data)
    assert abs(recover_private_mean(fresh, data[:, 1]) - truth) > 1e-6
    ledger = quietly(PrivacyLedger(delta=DELTA).record, fresh)
    assert len(ledger) == 2


# --------------------------------------------------------------------------
# Attack 2: cross_validate with LeaveOneOut plus the refit
# --------------------------------------------------------------------------


def loo_release(data, random_state):
    result = quietly(
        cross_validate,
        scaler(random_state=random_state),
        data,
        cv=LeaveOneOut(),
        return_estimator=True,
        scoring=lambda est, X, y=None: 0.0,
    )
    refit = quietly(scaler(random_state=random_state).fit, data)
    return result, refit


def reconstruct_records(result, refit, n):
    """Attacker: x_i = n·mean(all) − (n−1)·mean(all but i) when noise repeats."""
    folds = np.array([est.mean_[0] for est in result["estimator"]])
    return n * refit.mean_[0] - (n - 1) * folds


def test_leave_one_out_with_a_seed_reconstructs_every_record_and_is_refused(data):
    n = data.shape[0]
    truth = np.clip(data[:, 0], *BOUNDS)
    result, refit = loo_release(data, 0)
    np.testing.assert_allclose(reconstruct_records(result, refit, n), truth, atol=1e-9)
    ledger = PrivacyLedger(delta=DELTA)
    with pytest.raises(ValueError, match="same seeded stream"):
        for est in [*result["estimator"], refit]:
            ledger.record(est)
    with pytest.raises(ValueError, match="same seeded stream"):
        PrivacyLedger(delta=DELTA).record(result, cv=LeaveOneOut())

    result, refit = loo_release(data, None)
    error = reconstruct_records(result, refit, n) - truth
    assert np.abs(error).min() > 1e-3  # noise of size ~n·σ, nowhere cancelled
    ledger = PrivacyLedger(delta=DELTA).record(result, cv=LeaveOneOut()).record(refit)
    assert len(ledger) == n + 1


# --------------------------------------------------------------------------
# Attack 3: a sweep over epsilon with one seed
# --------------------------------------------------------------------------


def test_epsilon_sweep_with_a_seed_gives_the_exact_mean_and_is_refused(data):
    truth = np.clip(data[:, 0], *BOUNDS).mean()

    def sweep(random_state):
        return [
            quietly(scaler(epsilon=e, random_state=random_state).fit, data)
            for e in (0.5, 2.0)
        ]

    def solve(fits):
        # mean_k = m + c·z_k·Z with the same Z: eliminate Z.
        (a, za), (b, zb) = ((f.mean_[0], f.noise_multiplier_) for f in fits)
        return (zb * a - za * b) / (zb - za)

    seeded = sweep(0)
    assert abs(seeded[0].mean_[0] - truth) > 1e-3
    assert solve(seeded) == pytest.approx(truth, abs=1e-12)
    with pytest.raises(ValueError, match="same seeded stream"):
        PrivacyLedger(delta=DELTA).record(seeded[0]).record(seeded[1])
    fresh = sweep(None)
    assert abs(solve(fresh) - truth) > 1e-6
    assert len(PrivacyLedger(delta=DELTA).record(fresh[0]).record(fresh[1])) == 2


# --------------------------------------------------------------------------
# Searches: a seeded DP step repeats its noise in every fold fit and the refit
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "seed", [0, np.random.RandomState(0), np.random.default_rng(0)], ids=type
)
def test_search_over_a_seeded_step_is_refused(data, seed):
    search = quietly(
        GridSearchCV(
            scaler(random_state=seed),
            {"epsilon": [0.5, 1.0]},
            cv=KFold(3),
            scoring=lambda est, X, y=None: 0.0,
        ).fit,
        data,
    )
    # The fold fits did share their noise (clone copied the seed).
    fold_fit = quietly(clone(search.estimator).set_params(epsilon=0.5).fit, data[:26])
    again = quietly(clone(search.estimator).set_params(epsilon=0.5).fit, data[:26])
    np.testing.assert_array_equal(fold_fit.mean_, again.mean_)
    with pytest.raises(ValueError, match="random_state"):
        quietly(PrivacyLedger(delta=DELTA).record, search)


def test_a_pipeline_of_two_steps_with_one_seed_is_refused():
    from sklearn.datasets import make_classification
    from sklearn.pipeline import make_pipeline

    X, y = make_classification(n_samples=300, n_features=4, random_state=0)
    pipe = make_pipeline(
        DPStandardScaler(delta=DELTA, random_state=0),
        DPLogisticRegression(delta=DELTA, classes=[0, 1], random_state=0),
    )
    quietly(pipe.fit, X, y)
    with pytest.raises(ValueError, match="same seeded stream"):
        quietly(PrivacyLedger(delta=DELTA).record, pipe)
    pipe.set_params(dplogisticregression__random_state=1)
    quietly(pipe.fit, X, y)
    assert len(quietly(PrivacyLedger(delta=DELTA).record, pipe)) == 2


# --------------------------------------------------------------------------
# The fit contract (skdp._base.private_fit, atomic_fit)
# --------------------------------------------------------------------------


def fitted_names(estimator):
    """Independent of skdp._base.fitted_attributes: every trailing-_ attribute."""
    return sorted(k for k in vars(estimator) if k.endswith("_"))


def test_a_failed_refit_leaves_nothing_of_the_earlier_fit(data):
    # A fit that raises must not leave the attributes of an earlier
    # successful fit behind (they no longer match the parameters or data).
    est = quietly(scaler().fit, data)
    assert "privacy_spent_" in fitted_names(est)
    bad = data.copy()
    bad[0, 0] = np.nan
    with pytest.raises(ValueError):
        est.fit(bad)
    assert fitted_names(est) == []
    # Nor its fit stamp (a review: it stayed, naming a fit that is gone).
    from skdp._base import FIT_STAMP

    assert FIT_STAMP not in vars(est)


def test_a_refit_over_its_budget_leaves_nothing_and_is_refused(data, monkeypatch):
    # The fit itself succeeds, then the budget check refuses it: nothing of
    # the release survives.
    from skdp.exceptions import MechanismFailedError

    est = scaler(epsilon=1.0)
    smaller = scaler(epsilon=0.5).privacy_budget()
    monkeypatch.setattr(DPStandardScaler, "privacy_budget", lambda self: smaller)
    with pytest.raises(MechanismFailedError, match="more than its declared"):
        est.fit(data)
    assert fitted_names(est) == []


def test_atomic_fit_removes_every_fitted_attribute_on_failure():
    from skdp._base import atomic_fit

    class Toy:
        def __init__(self):
            self.param = 1
            self._private = 2

        @atomic_fit
        def fit(self, fail):
            self.coef_ = 1.0
            self.n_iter_ = 3
            if fail:
                raise RuntimeError("boom")
            return self

    toy = Toy().fit(False)
    assert fitted_names(toy) == ["coef_", "n_iter_"]
    with pytest.raises(RuntimeError, match="boom"):
        toy.fit(True)
    assert vars(toy) == {"param": 1, "_private": 2}


def test_secure_noise_refuses_a_seed_before_any_work(data):
    # A seed with secure noise would make the CSPRNG's noise predictable:
    # refused before the data is read (and before the seed warning).
    for seed in (0, np.random.default_rng(0)):
        est = DPStandardScaler(delta=DELTA, bounds=BOUNDS, noise="secure")
        est.set_params(random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(ValueError, match="cannot be seeded"):
                est.fit(data)
        assert fitted_names(est) == []
    fitted = DPStandardScaler(delta=DELTA, bounds=BOUNDS, noise="secure").fit(data)
    assert fitted.privacy_spent_.noise_seeds == ()


def test_the_release_says_which_sampler_and_stream_drew_its_noise(data):
    from skdp.mechanisms import NOISE_SAMPLERS

    fast = scaler().fit(data).privacy_spent_
    assert fast.sampler == NOISE_SAMPLERS["fast"]
    secure = DPStandardScaler(delta=DELTA, bounds=BOUNDS, noise="secure").fit(data)
    assert secure.privacy_spent_.sampler == NOISE_SAMPLERS["secure"]
    # The fingerprint is taken before the fit consumes the generator.
    g = np.random.default_rng(11)
    before = noise_seed_id(g)
    spent = quietly(scaler(random_state=g).fit, data).privacy_spent_
    assert spent.noise_seeds == (before,)


def test_the_seed_warning_names_the_seed_and_points_at_the_caller(data):
    with pytest.warns(PrivacyLeakWarning) as rec:
        scaler(random_state=np.random.default_rng(0)).fit(data)
    (warning,) = rec
    assert "random_state=Generator seeds the privacy noise of DPStandardScaler" in (
        str(warning.message)
    )
    assert points_at(warning, __file__)
