"""Secure noise (issue 22): the attack it defeats, its samplers, its accounting,
the switch on every estimator and their audits.

Secure noise draws from os.urandom; every test here injects a seeded byte
source (``SecureNoise(bytes_source=...)``) so that it is deterministic.
"""

import math

import numpy as np
import pytest
from dp_accounting.rdp.rdp_privacy_accountant import compute_epsilon
from scipy import stats
from sklearn.base import clone

import skdp
import skdp.mechanisms as mech
from skdp import PrivacyLedger
from skdp._secure import (
    SecureNoise,
    _Bits,
    _uniform_below,
    bernoulli_exp,
    discrete_gaussian,
    discrete_laplace,
)
from skdp.accounting import (
    REPLACE_ONE,
    compose,
    epsilon_from_zcdp_tight,
    gaussian_noise_multiplier,
    secure_gaussian_noise_multiplier,
    secure_noise_cost,
)
from skdp.audit import OutcomeCanary, UserCanary, audit_estimator
from skdp.datasets import make_btl_comparisons
from skdp.decomposition import DPPCA
from skdp.fedrep import DPFedRep
from skdp.gaussian import DPGaussianSampler
from skdp.linear_model import DPLinearRegression, DPLogisticRegression, DPSparseGLM
from skdp.model_selection import DPRandomSearchCV
from skdp.preprocessing import DPStandardScaler
from skdp.random_features import DPRandomFeaturesRegressor
from skdp.ranking import DPBradleyTerry, pairs_to_design


def _seeded_bytes(seed):
    return np.random.default_rng(seed).bytes


@pytest.fixture
def seeded_secure(monkeypatch):
    """Every SecureNoise made by as_generator reads one seeded byte stream."""
    source = _seeded_bytes(2022)

    class SeededSecureNoise(SecureNoise):
        def __init__(self, bytes_source=None):
            super().__init__(bytes_source=source)

    monkeypatch.setattr(mech, "SecureNoise", SeededSecureNoise)


# --------------------------------------------------------------------------
# The floating-point attack (Mironov 2012; Jin et al. 2022) and its defeat
# --------------------------------------------------------------------------


def _low_bits_say_zero(released):
    """The attack: a release that is not a multiple of 2^-53 cannot be
    ``fl(1 + noise)`` (every float in [0.5, 2) is such a multiple, and
    ``1 + L`` is exact for L in [-2, -0.5]), so the input was 0, certainly."""
    return np.ldexp(released, 53) % 1.0 != 0.0


@pytest.mark.parametrize("add", [mech.add_laplace_noise, mech.add_gaussian_noise])
def test_the_low_bits_of_fast_noise_tell_neighbours_apart_and_secure_noise_does_not(
    add,
):
    """A toy mechanism releases x + noise, x in {0, 1} (sensitivity 1), at
    noise scale 1 (ε = 1 for Laplace). On the fast path the low bits say
    "x = 0" with certainty (never wrong) on 28% (Laplace) or 38% (Gaussian)
    of the x = 0 releases (measured). On
    the secure path every release of either input is a multiple of the same
    power-of-two grid step, so the test never fires, and the two inputs'
    releases share one support."""
    n = 20000
    fast = np.random.default_rng(0)
    zero, one = add(np.zeros(n), 1.0, fast), add(np.ones(n), 1.0, fast)
    assert not _low_bits_say_zero(one).any()  # the attack is never wrong
    assert _low_bits_say_zero(zero).mean() > 0.25  # and often certain

    secure = SecureNoise(bytes_source=_seeded_bytes(1))
    zero, one = add(np.zeros(n), 1.0, secure), add(np.ones(n), 1.0, secure)
    assert not _low_bits_say_zero(zero).any()
    assert not _low_bits_say_zero(one).any()
    # Both lie on one grid g·Z, g = 2^e <= 2^-16/sqrt(n) (Gaussian) or
    # 2^-16/n (Laplace): the finest power of two dividing them all.
    step = 2.0 ** -(16 + math.ceil(math.log2(n)))
    for released in (zero, one):
        assert np.all(np.ldexp(released, 16 + math.ceil(math.log2(n)) + 1) % 1 == 0)
        assert np.abs(released).max() > 1000 * step


def test_secure_values_are_rounded_to_the_grid_before_noise():
    """Zero noise leaves the value; a tiny offset below half a grid step is
    rounded away, so it cannot show in the low bits."""
    secure = SecureNoise(bytes_source=_seeded_bytes(2))
    a = secure.add_gaussian(np.full(4, 0.25), 1.0)
    b_source = SecureNoise(bytes_source=_seeded_bytes(2))
    b = b_source.add_gaussian(np.full(4, 0.25 + 2.0**-40), 1.0)
    np.testing.assert_array_equal(a, b)  # same bits, same output: offset invisible


# --------------------------------------------------------------------------
# The samplers are exact
# --------------------------------------------------------------------------


def _chi_square(draws, pmf_of, cut):
    """χ² p-value of integer draws against ``pmf_of(y)`` (tails |y| > cut merged)."""
    support = np.arange(-cut, cut + 1)
    weights = pmf_of(support)
    total = weights.sum() + 2 * pmf_of(np.arange(cut + 1, 60 * cut)).sum()
    probs = weights / total
    tail = 1.0 - probs.sum()
    observed = np.bincount(
        np.clip(draws, -cut - 1, cut + 1) + cut + 1, minlength=2 * cut + 3
    )
    observed = np.concatenate([[observed[0] + observed[-1]], observed[1:-1]])
    expected = draws.size * np.concatenate([[tail], probs])
    return stats.chisquare(observed, expected).pvalue


def test_discrete_gaussian_matches_its_pmf_and_variance_on_a_million_draws():
    """Canonne, Kamath & Steinke (2020), Algorithm 3 with σ = 3: χ² on 10⁶
    draws (fixed seed material) against P(y) ∝ exp(-y²/18), and the
    variance within 5 standard errors of the exact Σ y² P(y)."""
    sigma = 3
    draws = discrete_gaussian(_Bits(_seeded_bytes(3)), sigma, 10**6)

    def pmf(y):
        return np.exp(-(y.astype(float) ** 2) / (2 * sigma**2))

    assert _chi_square(draws, pmf, 12) > 1e-3
    ys = np.arange(-60, 61)
    p = pmf(ys) / pmf(ys).sum()
    var = float(p @ ys**2)
    fourth = float(p @ ys**4)
    se = math.sqrt((fourth - var**2) / draws.size)
    assert abs(np.mean(draws.astype(float) ** 2) - var) < 5 * se
    assert abs(draws.mean()) < 5 * math.sqrt(var / draws.size)


def test_discrete_laplace_matches_its_pmf():
    """Algorithm 2 with t = 4: χ² on 2·10⁵ draws against P(y) ∝ exp(-|y|/4)."""
    draws = discrete_laplace(_Bits(_seeded_bytes(4)), 4, 200000)
    assert _chi_square(draws, lambda y: np.exp(-np.abs(y) / 4.0), 20) > 1e-3


def _words(*values):
    """A byte source that returns these 64-bit words, then zeros (tests only).

    A draw of 32-bit words reads whole 64-bit words and uses their low
    halves, so each value here is one draw in either width.
    """
    data = np.array(values, dtype="<u8").tobytes()

    def source(n):
        chunk, rest = data[:n], n - len(data[:n])
        return chunk + bytes(rest)

    return source


def test_uniform_below_rejects_the_top_words_and_reduces_the_rest():
    """Exact uniformity by rejection: with 32-bit words and bound 3, 2^32 mod
    3 = 1 word (the value 0) is rejected and redrawn; accepted words are
    reduced mod 3. Above 2^32 the rule runs on 64-bit words."""
    # words 0 (rejected: below the threshold 1), then 5 -> 5 % 3 = 2
    assert _uniform_below(_Bits(_words(0, 5)), 3, 1).tolist() == [2]
    # a redrawn word equal to the threshold is kept: 0 rejected, then 1 -> 1
    assert _uniform_below(_Bits(_words(0, 1, 5)), 3, 1).tolist() == [1]
    # bound 7: 2^32 mod 7 = 4, so words 0..3 are rejected, 4 -> 4 % 7 = 4
    assert _uniform_below(_Bits(_words(3, 2, 4)), 7, 1).tolist() == [4]
    assert _uniform_below(_Bits(_words(4, 6)), 7, 1).tolist() == [4]
    # bound 2^32: every 32-bit word is uniform as it is
    assert _uniform_below(_Bits(_words(2**32 - 1)), 2**32, 1).tolist() == [2**32 - 1]
    # bound 2^32 + 1 (64-bit words): 2^64 mod (2^32 + 1) = 1, word 0 rejected
    big = _uniform_below(_Bits(_words(0, 2**40 + 3)), 2**32 + 1, 1)
    assert big.tolist() == [(2**40 + 3) % (2**32 + 1)]
    # and on random words: in range, and uniform (χ² at 5 buckets)
    draws = _uniform_below(_Bits(_seeded_bytes(8)), 5, 100000)
    assert draws.dtype == np.uint64 and int(draws.max()) < 5
    counts = np.bincount(draws.astype(np.int64), minlength=5)
    assert stats.chisquare(counts).pvalue > 1e-3


@pytest.mark.parametrize("gamma", [(0, 1, 3), (1, 0, 1), (2, 5, 7)])
def test_bernoulli_exp_has_probability_exp_minus_gamma(gamma):
    """Algorithm 1 (and its integer part): frequency within 5 s.e. of e^-γ."""
    whole, num, den = gamma
    n = 200000
    out = bernoulli_exp(
        _Bits(_seeded_bytes(5)),
        np.full(n, whole),
        np.full(n, num, dtype=np.uint64),
        den,
    )
    p = math.exp(-(whole + num / den))
    assert abs(out.mean() - p) < 5 * math.sqrt(p * (1 - p) / n)


def test_a_huge_draw_goes_through_the_exact_integer_path():
    """|y| - σ >= 2^31 (probability ~e^-8 per draw at σ = 2^28) takes the
    Python-integer branch: its acceptance exponent is exact."""
    from skdp._secure import _gaussian_exponent

    sigma = 3
    y = np.array([2**40], dtype=np.int64)
    whole, num, den = _gaussian_exponent(y, sigma)
    exact = divmod((2**40 - 3) ** 2, 2 * 9)
    assert (int(whole[0]), int(num[0]), den) == (min(exact[0], 2**63 - 1), exact[1], 18)


def test_secure_sources_refuse_float_sampling_and_gumbel_peeling():
    secure = SecureNoise(bytes_source=_seeded_bytes(6))
    with pytest.raises(TypeError, match="add_gaussian_noise"):
        mech.gaussian_noise(secure, 1.0, 3)
    with pytest.raises(AttributeError, match="SecureNoise has no 'normal'"):
        secure.normal(0.0, 1.0, 3)
    with pytest.raises(ValueError, match="Gumbel"):
        mech.peel_top_k(np.arange(5.0), 2, noise="gumbel", scale=1.0, rng=secure)
    top = mech.peel_top_k(
        np.array([0.0, 100.0, 0.0, 50.0]), 2, noise="laplace", scale=1.0, rng=secure
    )
    assert list(top) == [1, 3]


def test_throughput_is_measured(capsys):
    """Not an assertion on speed (the machine is shared): the benchmark
    script's numbers are in docs/benchmarks.md. This checks only that a
    10⁵-draw call is one vectorised call that completes."""
    out = SecureNoise(bytes_source=_seeded_bytes(7)).add_gaussian(np.zeros(10**5), 1.0)
    assert out.shape == (10**5,) and np.isfinite(out).all()


# --------------------------------------------------------------------------
# Accounting: zCDP of the discrete Gaussian, checked against dp-accounting
# --------------------------------------------------------------------------


@pytest.mark.parametrize("z, steps", [(1.0, 1), (3.7, 1), (10.0, 100), (40.0, 400)])
@pytest.mark.parametrize("delta", [1e-5, 1e-9])
def test_secure_cost_matches_an_independent_rdp_oracle(z, steps, delta):
    """ρ = T·(1/z + 2^-16)²/2; (ε, δ) from dp-accounting's RDP conversion of
    (α, αρ)-RDP on a fine grid of orders: skdp's ε is valid (>= the oracle's
    best order minus its grid slack) and tight (within 1%)."""
    cost = secure_noise_cost(z, steps, delta=delta, adjacency=REPLACE_ONE)
    rho = steps * (1 / z + 2.0**-16) ** 2 / 2
    assert cost.zcdp == pytest.approx(rho, rel=1e-15) and cost.mu is None
    orders = np.concatenate([np.linspace(1.01, 10, 500), np.linspace(10, 2000, 4000)])
    oracle, _ = compute_epsilon(orders, orders * rho, delta)
    assert cost.epsilon == pytest.approx(oracle, rel=1e-2)
    assert cost.epsilon <= oracle * (1 + 1e-6) or cost.epsilon >= oracle


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 8.0])
@pytest.mark.parametrize("steps", [1, 100])
def test_secure_calibration_meets_the_budget_with_a_few_percent_more_noise(
    epsilon, steps
):
    z = secure_gaussian_noise_multiplier(epsilon, 1e-5, steps)
    spent = secure_noise_cost(z, steps, delta=1e-5, adjacency=REPLACE_ONE)
    assert spent.epsilon <= epsilon
    assert spent.epsilon == pytest.approx(epsilon, rel=1e-6)
    ratio = z / gaussian_noise_multiplier(epsilon, 1e-5, steps)
    assert 1.05 < ratio < 1.12  # the documented 6-11%


def test_zcdp_costs_compose_in_zcdp_with_gdp_parts():
    secure = secure_noise_cost(5.0, 10, delta=1e-6, adjacency=REPLACE_ONE)
    fast = skdp.accounting.gaussian_cost(5.0, 10, delta=1e-6, adjacency=REPLACE_ONE)
    total = compose([secure, fast], delta=1e-5)
    assert total.mu is None
    assert total.zcdp == pytest.approx(secure.zcdp + fast.mu**2 / 2, rel=1e-14)
    assert total.epsilon == pytest.approx(epsilon_from_zcdp_tight(total.zcdp, 1e-5))
    assert "rho=" in str(total)


# --------------------------------------------------------------------------
# The switch: every estimator, seeds refused, the report names the sampler
# --------------------------------------------------------------------------


def _xy(n=200, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    return X, (X[:, 0] > 0).astype(int)


def _btl():
    pairs, y, _ = make_btl_comparisons(10, 1.0, 4, random_state=0)
    return pairs_to_design(pairs, 10), y


ESTIMATORS = {
    "logistic": (lambda: DPLogisticRegression(classes=[0, 1], max_iter=20), _xy),
    "sparse_glm": (
        lambda: DPSparseGLM(sparsity=2, accounting="paper", epsilon=4.0, max_iter=2),
        lambda: (_xy()[0], _xy()[0][:, 0]),
    ),
    "bradley_terry": (lambda: DPBradleyTerry(classes=[0, 1]), _btl),
    "bradley_terry_comparison": (
        lambda: DPBradleyTerry(classes=[0, 1], privacy_unit="comparison"),
        _btl,
    ),
    "random_features": (
        lambda: DPRandomFeaturesRegressor(20, max_iter=10),
        lambda: (_xy()[0], _xy()[0][:, 0]),
    ),
    "gaussian_sampler": (
        lambda: DPGaussianSampler(radius=3.0),
        lambda: (_xy()[0], None),
    ),
    "fedrep": (
        lambda: DPFedRep(1, n_rounds=2),
        lambda: (_xy()[0], _xy()[0][:, 0]),
    ),
    "scaler": (lambda: DPStandardScaler(), lambda: (_xy()[0], None)),
    "scaler_bounds": (
        lambda: DPStandardScaler(bounds=(-3.0, 3.0)),
        lambda: (_xy()[0], None),
    ),
}


@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_every_estimator_fits_with_secure_noise_within_its_budget(name, seeded_secure):
    make, data = ESTIMATORS[name]
    X, y = data()
    est = make().set_params(noise="secure")
    with pytest.warns() if name == "fedrep" else _nothing():
        est.fit(X, y)
    spent = est.privacy_spent_
    budget = est.privacy_budget()
    assert "discrete Gaussian/Laplace" in spent.sampler
    assert "noise: discrete" in str(spent)
    assert spent.epsilon <= budget.epsilon * (1 + 1e-9)
    if name != "sparse_glm":  # all-Gaussian fits are accounted in zCDP
        assert spent.mu is None and spent.zcdp <= budget.zcdp * (1 + 1e-9)
        assert budget.zcdp is not None
    fast = clone(est).set_params(noise="fast", random_state=0)
    with pytest.warns():
        fast.fit(X, y)
    assert "numpy PCG64" in fast.privacy_spent_.sampler
    # A ledger composes a secure fit with a fast one (in zCDP).
    if spent.adjacency == fast.privacy_spent_.adjacency and name != "sparse_glm":
        total = PrivacyLedger().record(est).record(fast).total()
        assert total.zcdp is not None


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("random_state", [0, np.random.default_rng(0)])
def test_secure_noise_refuses_a_seed_before_any_work(random_state):
    X, y = _xy()
    est = DPLogisticRegression(noise="secure", random_state=random_state)
    with pytest.raises(ValueError, match="cannot be seeded"):
        est.fit(X, y)
    assert not hasattr(est, "coef_") and not hasattr(est, "privacy_spent_")


def test_paths_without_an_exact_sampler_refuse_secure_noise():
    X, _ = _xy()
    with pytest.raises(ValueError, match="accounting='paper'"):
        DPSparseGLM(noise="secure").fit(X, X[:, 0])
    with pytest.raises(ValueError, match="unbounded"):
        DPGaussianSampler(method="unbounded", noise="secure").fit(X)
    with pytest.raises(ValueError, match="kernel"):
        DPRandomFeaturesRegressor(10, solver="kernel", noise="secure").fit(X, X[:, 0])


def test_noise_is_a_validated_cloned_parameter():
    est = DPLogisticRegression(noise="secure")
    assert clone(est).get_params()["noise"] == "secure"
    with pytest.raises(ValueError, match="noise"):
        DPLogisticRegression(noise="exact").fit(*_xy())


# --------------------------------------------------------------------------
# Audits with the secure path (unpaired: secure noise cannot be seeded)
# --------------------------------------------------------------------------

EPSILON, DELTA = 2.0, 1e-5


def _audit_base():
    rng = np.random.default_rng(0)
    return rng.normal(size=(50, 3)), np.arange(50) % 2


AUDITS = {
    "logistic": (
        lambda: DPLogisticRegression(
            epsilon=EPSILON,
            delta=DELTA,
            classes=[0, 1],
            solver="gd",
            learning_rate=1e-4,
            alpha=0.0,
            max_iter=10,
        ),
        _audit_base,
        {},
    ),
    "random_features": (
        lambda: DPRandomFeaturesRegressor(
            50, epsilon=EPSILON, delta=DELTA, learning_rate=1e-4, max_iter=10
        ),
        lambda: (_audit_base()[0], np.zeros(50)),
        {},
    ),
    "bradley_terry_win_counts": (
        lambda: DPBradleyTerry(epsilon=EPSILON, delta=DELTA, classes=[0, 1]),
        lambda: (
            pairs_to_design(make_btl_comparisons(10, 1.0, 2, random_state=0)[0], 10),
            make_btl_comparisons(10, 1.0, 2, random_state=0)[1],
        ),
        {"canary": OutcomeCanary(kind="win_counts")},
    ),
    "gaussian_sampler": (
        lambda: DPGaussianSampler(
            epsilon=EPSILON, delta=DELTA, radius=3.0, min_variance=1e-9
        ),
        lambda: (np.random.default_rng(0).normal(size=(500, 2)), None),
        {},
    ),
    "standard_scaler": (
        lambda: DPStandardScaler(epsilon=EPSILON, delta=DELTA, bounds=(-3.0, 3.0)),
        lambda: (np.random.default_rng(0).normal(size=(50, 3)), None),
        {},
    ),
    "private_search": (
        lambda: DPRandomSearchCV(
            DPLogisticRegression(
                classes=[0, 1],
                solver="gd",
                learning_rate=1e-4,
                alpha=0.0,
                fit_intercept=False,
            ),
            {"max_iter": [5, 10]},
            n_iter=1.5,
            epsilon=EPSILON,
            delta=DELTA,
            validation_fraction=0.1,
        ),
        lambda: (np.zeros((50, 3)), np.arange(50) % 2),
        {},
    ),
    "sparse_glm": (
        lambda: DPSparseGLM(
            sparsity=1,
            epsilon=EPSILON,
            delta=DELTA,
            fit_intercept=False,
            max_iter=1,
            residual_bound=3.0,
            accounting="paper",
        ),
        lambda: (np.random.default_rng(0).normal(size=(50, 1)), np.zeros(50)),
        {},
    ),
}


@pytest.mark.parametrize("name", sorted(AUDITS))
def test_audit_does_not_refute_the_secure_claim(name, seeded_secure):
    """The audits of tests/test_audit.py, on the secure path (300 unpaired
    trials each): the ε lower bound stays below the claimed ε."""
    make, data, kwargs = AUDITS[name]
    X, y = data()
    report = audit_estimator(
        make().set_params(noise="secure"), X, y, n_trials=300, random_state=0, **kwargs
    )
    print(report)
    assert report.claimed_mu is None  # a zCDP (or pure-ε) claim, not GDP
    assert report.epsilon_lower_bound <= report.claimed_epsilon
    assert not report.refuted


def test_fedrep_user_level_audit_does_not_refute_the_secure_claim(seeded_secure):
    rng = np.random.default_rng(0)
    X, groups = rng.standard_normal((84, 5)), np.repeat(np.arange(21), 4)
    e1, e2 = np.eye(5)[:2]
    est = DPFedRep(
        1,
        epsilon=1.0,
        delta=1e-5,
        n_rounds=1,
        learning_rate=1.0,
        clip_norm=1.0,
        init=(e1 + e2)[:, None] / np.sqrt(2),
        noise="secure",
    )

    def tilt(fitted):
        u = fitted.components_[0]
        return float(np.arctan((u[0] - u[1]) / (u[0] + u[1])))

    canary = UserCanary(groups, 20, direction=e1, out_direction=e2)
    report = audit_estimator(
        est,
        X,
        np.zeros(84),
        canary=canary,
        statistic=tilt,
        n_trials=300,
        random_state=0,
    )
    print(report)
    assert not report.refuted


@pytest.mark.parametrize(
    "estimator",
    [
        DPLogisticRegression,
        DPSparseGLM,
        DPRandomFeaturesRegressor,
        DPGaussianSampler,
        DPFedRep,
        DPStandardScaler,
        DPBradleyTerry,
        DPLinearRegression,
        DPPCA,
    ],
)
def test_every_estimator_documents_noise_with_the_shared_text(estimator):
    """The ``noise`` entry is written once (skdp._base.NOISE_PARAMETER_DOC);
    each estimator's docstring carries that text, so the copies cannot drift."""
    from skdp._base import NOISE_PARAMETER_DOC

    def words(text):
        return " ".join(text.split())

    assert words(NOISE_PARAMETER_DOC) in words(estimator.__doc__)
