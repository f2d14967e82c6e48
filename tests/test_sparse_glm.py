"""DPSparseGLM, private peeling and the Poisson datafit: inputs, privacy, utility."""

import math
import sys
import warnings

import dp_accounting
import numpy as np
import pytest
import scipy.sparse as sp
from _sklearn_compat import parametrize_with_checks
from _spies import gaussian_noise_calls
from _warning_location import points_at
from dp_accounting.rdp import RdpAccountant
from scipy import integrate, stats
from scipy.optimize import check_grad
from scipy.special import expit, softmax
from sklearn.base import clone
from sklearn.datasets import load_diabetes
from sklearn.exceptions import NotFittedError
from sklearn.utils._param_validation import InvalidParameterError
from sklearn.utils.validation import check_is_fitted

from skdp._datafits import BinomialLogistic, Poisson, Quadratic
from skdp.accounting import epsilon_from_zcdp_tight, zcdp_from_epsilon_tight
from skdp.datasets import make_sparse_glm
from skdp.linear_model import DPSparseGLM
from skdp.linear_model import _sparse_glm as sglm
from skdp.linear_model._sparse_glm import clip_features, gradient_step
from skdp.mechanisms import peel_top_k

# Bounds that suit make_sparse_glm's responses (y sd ≈ 1.9 for gaussian,
# counts with mean ≈ 1.4 for poisson).
R_BOUND = {"gaussian": 4.0, "poisson": 5.0, "logistic": 1.0}
FAMILIES = ["gaussian", "poisson", "logistic"]


@pytest.fixture(scope="module")
def recovery_data():
    """s* = 5, d = 500, n = 20000 for each family (seeded)."""
    return {
        fam: make_sparse_glm(20000, 500, 5, family=fam, random_state=1)
        for fam in FAMILIES
    }


def small_data(family="gaussian", n=300, d=8, seed=0):
    return make_sparse_glm(n, d, 3, family=family, random_state=seed)


# --------------------------------------------------------------------------
# Bad input: a clear error before any work, nothing half-fitted
# --------------------------------------------------------------------------


def test_sparsity_above_n_features_warns_and_keeps_every_feature():
    """As SelectKBest does for k > n_features (issue 20, item 3): a warning
    naming both numbers, then s = d, and selecting every feature is free."""
    X, y, _ = small_data(d=3)
    with pytest.warns(UserWarning, match=r"sparsity=5 is greater than n_features=3"):
        model = DPSparseGLM(sparsity=5, random_state=0).fit(X, y)
    assert model.sparsity_ == 3 and model.support_.all()
    assert model.selection_noise_scale_ == 0.0
    assert model.sparsity == 5  # the parameter is not overwritten
    # The default adapts to the (public) number of features silently.
    assert DPSparseGLM(random_state=0).fit(X, y).sparsity_ == 3


def test_negative_counts_raise_for_poisson_without_quoting_them():
    X, y, _ = small_data("poisson")
    y[4] = -987.0
    with pytest.raises(ValueError, match="negative") as info:
        DPSparseGLM(family="poisson").fit(X, y)
    assert "987" not in str(info.value)


@pytest.mark.parametrize("bad", [2.0, -1.0, 0.5])
def test_labels_outside_0_1_raise_for_logistic(bad):
    X, y, _ = small_data("logistic")
    y[7] = bad
    with pytest.raises(ValueError, match=r"y in \{0, 1\}"):
        DPSparseGLM(family="logistic").fit(X, y)


@pytest.mark.parametrize(
    "params",
    [
        {"family": "binomial"},
        {"sparsity": 0},
        {"residual_bound": 0.0},
        {"x_bound": -1.0},
        {"max_iter": 0},
        {"learning_rate": 0.0},
        {"accounting": "rdp"},
        {"epsilon": 0.0},
    ],
)
def test_invalid_parameters_raise_invalid_parameter_error(params):
    X, y, _ = small_data()
    with pytest.raises(InvalidParameterError):
        DPSparseGLM(**params).fit(X, y)


def test_delta_zero_and_non_finite_input_are_refused():
    X, y, _ = small_data()
    with pytest.raises(ValueError, match="delta > 0"):
        DPSparseGLM(delta=0.0).fit(X, y)
    X[2, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        DPSparseGLM().fit(X, y)


def test_failed_fit_leaves_nothing_fitted():
    X, y, _ = small_data("poisson")
    model = DPSparseGLM(family="poisson", random_state=0).fit(X, y)
    check_is_fitted(model)
    with pytest.raises(ValueError):
        model.fit(X, -y - 1)
    assert not [k for k in vars(model) if k.endswith("_")]
    with pytest.raises(NotFittedError):
        model.predict(X)


def test_paper_accounting_asserts_lemma_5_1_condition():
    # ε/T = 50 > 0.21·log(T/δ) ≈ 2.4: the advanced composition behind
    # Lemma 5.1 cannot deliver (ε/T, δ/T) per step.
    X, y, _ = small_data()
    with pytest.raises(ValueError, match=r"Lemma 5\.1"):
        DPSparseGLM(accounting="paper", epsilon=100.0, max_iter=2).fit(X, y)
    DPSparseGLM(accounting="paper", epsilon=4.0, max_iter=2).fit(X, y)


# --------------------------------------------------------------------------
# Outputs
# --------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
@pytest.mark.parametrize("accounting", ["exact", "paper"])
def test_exactly_s_nonzeros_and_predict_is_the_mean(family, accounting):
    X, y, _ = small_data(family, n=500, d=12)
    model = DPSparseGLM(
        family=family, sparsity=4, accounting=accounting, random_state=0
    ).fit(X, y)
    assert model.coef_.shape == (12,)
    assert np.count_nonzero(model.coef_) == 4
    assert model.support_.dtype == bool
    np.testing.assert_array_equal(model.support_, model.coef_ != 0)
    z = np.clip(X, -3, 3) @ model.coef_ + model.intercept_
    mean = {"gaussian": z, "poisson": np.exp(z), "logistic": expit(z)}[family]
    np.testing.assert_allclose(model.predict(X), mean, rtol=1e-12)


def test_predict_clips_features_as_fit_does():
    X, y, _ = small_data()
    model = DPSparseGLM(epsilon=1e4, random_state=0).fit(X, y)
    far = X[:5] * 100.0
    np.testing.assert_allclose(
        model.predict(far), model.predict(np.clip(far, -3.0, 3.0)), rtol=1e-12
    )


def test_sparse_duplicates_summing_to_infinity_fit_like_their_clipped_row():
    """Issue 20, item 5: a CSR record whose duplicate entries sum to inf
    used to raise while its neighbour fitted (a data-dependent error). The
    summed entry is clipped to ±x_bound instead: the fit equals, with the
    same noise, the fit of the row holding ±x_bound."""
    X, y, _ = small_data(n=400, d=10)
    X[np.abs(X) < 0.5] = 0.0
    X[0] = 0.0
    X[0, 3], X[0, 7] = 3.0, -3.0  # x_bound = 3: the clipped sums
    csr = sp.csr_matrix(X)
    row0 = slice(csr.indptr[0], csr.indptr[1])
    # Row 0 stored as duplicates: column 3 as 1e308 + 1e308 (= inf), column 7
    # as -1e308 - 1e308 (= -inf), in non-canonical CSR.
    data = np.concatenate([[1e308, 1e308, -1e308, -1e308], csr.data[row0.stop :]])
    indices = np.concatenate([[3, 3, 7, 7], csr.indices[row0.stop :]])
    indptr = np.concatenate([[0], csr.indptr[1:] - 2 + 4])
    stored = sp.csr_matrix((data, indices, indptr), shape=X.shape)
    assert not stored.has_canonical_format and np.isfinite(stored.data).all()
    clipped = clip_features(stored, 3.0)
    np.testing.assert_array_equal(clipped.toarray(), np.clip(X, -3.0, 3.0))
    fitted = DPSparseGLM(sparsity=3, random_state=0).fit(stored, y)
    neighbour = DPSparseGLM(sparsity=3, random_state=0).fit(csr, y)
    np.testing.assert_array_equal(fitted.coef_, neighbour.coef_)
    np.testing.assert_array_equal(fitted.predict(stored), neighbour.predict(csr))


@pytest.mark.parametrize("x_bound", [0.1, 0.3, 3.0, 1e-3])
def test_float32_features_are_clipped_within_the_bound(x_bound):
    """Issue 20, item 4: float32(0.1) = 0.100000001 > 0.1, so clipping to it
    exceeded the bound the noise is calibrated to (ε 1.000000031 for a
    target of 1). Entries are clipped to the largest float32 not above the
    bound, dense and sparse, and the extreme record moves a step by at most
    sensitivity_ (compared in float64, with the slack of float64 rounding
    only)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4)).astype(np.float32)
    for given in (X, sp.csr_matrix(X)):
        clipped = clip_features(given, x_bound)
        values = clipped.data if sp.issparse(clipped) else clipped
        assert values.dtype == np.float32
        assert np.abs(values.astype(np.float64)).max() <= x_bound
    y = rng.normal(size=60)
    model = DPSparseGLM(sparsity=2, x_bound=x_bound, random_state=0).fit(X, y)
    steps = []
    for sign in (-1.0, 1.0):
        X2, y2 = X.copy(), y.copy()
        X2[0], y2[0] = np.float32(1e30), -1e30 * sign  # residual ±r, x = x_bound
        steps.append(
            gradient_step(
                clip_features(X2, x_bound),
                y2,
                Quadratic(0.5),
                np.zeros(5),
                learning_rate=model.learning_rate_,
                x_bound=x_bound,
                residual_bound=model.residual_bound,
            )
        )
    moved = np.abs(steps[1] - steps[0])[:4].max()
    assert moved <= model.sensitivity_ * (1 + 1e-12)
    assert moved >= model.sensitivity_ * (1 - 1e-6)


def test_sparse_input_gives_the_dense_fit():
    X, y, _ = small_data(n=400, d=10)
    X[np.abs(X) < 0.5] = 0.0
    dense = DPSparseGLM(sparsity=3, random_state=0).fit(X, y)
    csr = DPSparseGLM(sparsity=3, random_state=0).fit(sp.csr_matrix(X), y)
    np.testing.assert_allclose(csr.coef_, dense.coef_, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(csr.predict(sp.csr_matrix(X)), dense.predict(X))


def test_no_intercept_and_random_state():
    X, y, _ = small_data()
    a = DPSparseGLM(fit_intercept=False, random_state=3).fit(X, y)
    b = DPSparseGLM(fit_intercept=False, random_state=3).fit(X, y)
    c = DPSparseGLM(fit_intercept=False, random_state=4).fit(X, y)
    assert a.intercept_ == 0.0
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert not np.array_equal(a.coef_, c.coef_)


def test_non_private_iht_reaches_the_truth():
    """With the noise off (engine-level, as tests drive the DP-GD engine) the
    algorithm is plain IHT; on well-posed data it finds the true support and
    the least-squares values on it (n = 5000, d = 50)."""
    from skdp.linear_model._sparse_glm import noisy_iht

    X, y, coef = make_sparse_glm(5000, 50, 4, noise=0.1, random_state=0)
    fitted, intercept, support = noisy_iht(
        clip_features(X, 10.0),
        y,
        Quadratic(scale=0.5),
        sparsity=4,
        n_iter=30,
        learning_rate=1.0,
        x_bound=10.0,
        residual_bound=100.0,
        fit_intercept=True,
        selection="gumbel",
        selection_scale=0.0,
        release="gaussian",
        release_scale=0.0,
        rng=np.random.default_rng(0),
    )
    assert set(support) == set(np.flatnonzero(coef))
    design = np.column_stack([X[:, support], np.ones(len(y))])
    ols = np.linalg.lstsq(design, y, rcond=None)[0]
    np.testing.assert_allclose(fitted[support], ols[:-1], atol=1e-8)
    assert intercept == pytest.approx(ols[-1], abs=1e-8)


# --------------------------------------------------------------------------
# Datafit
# --------------------------------------------------------------------------


def test_poisson_raw_grad_is_the_gradient_of_value():
    rng = np.random.default_rng(0)
    n = 7
    y = rng.poisson(2.0, n).astype(float)
    datafit = Poisson()

    def f(z):
        return datafit.value(y, z.reshape(n, 1))

    def grad(z):
        return datafit.raw_grad(y, z.reshape(n, 1)).ravel() / n

    for _ in range(5):
        assert check_grad(f, grad, rng.normal(size=n)) < 1e-6
    z = rng.normal(size=(n, 1))
    np.testing.assert_allclose(datafit.inverse_link(z), np.exp(z))


# --------------------------------------------------------------------------
# Peeling: the selection's law against independent oracles
# --------------------------------------------------------------------------


def _chi2_pvalue(counts, probs):
    return stats.chisquare(counts, counts.sum() * probs).pvalue


def test_gumbel_peel_is_the_exponential_mechanism():
    """One Gumbel(g) peel picks j with probability softmax(u/g): the
    exponential mechanism with ε_p = 2Δ/g for scores of sensitivity Δ
    (oracle: scipy's softmax; 20000 seeded draws, chi-square p > 1e-3)."""
    u = np.array([0.0, 0.3, 0.5, 1.0, 1.1])
    g = 0.4
    rng = np.random.default_rng(0)
    picks = np.array(
        [peel_top_k(u, 1, noise="gumbel", scale=g, rng=rng)[0] for _ in range(20000)]
    )
    assert _chi2_pvalue(np.bincount(picks, minlength=5), softmax(u / g)) > 1e-3


def test_gumbel_top_two_is_two_sequential_peels():
    """The ordered pair has the law of two exponential-mechanism rounds,
    P(i, j) = p_i · p_j / (1 - p_i) (Durfee & Rogers 2019, Lemma 4.2)."""
    u = np.array([0.0, 0.4, 0.8, 1.0])
    g = 0.5
    p = softmax(u / g)
    pairs = [(i, j) for i in range(4) for j in range(4) if i != j]
    oracle = np.array([p[i] * p[j] / (1 - p[i]) for i, j in pairs])
    rng = np.random.default_rng(1)
    draws = [
        tuple(peel_top_k(u, 2, noise="gumbel", scale=g, rng=rng)) for _ in range(20000)
    ]
    counts = np.array([draws.count(pair) for pair in pairs])
    assert _chi2_pvalue(counts, oracle) > 1e-3


def test_laplace_peel_is_report_noisy_max():
    """P(argmax_j u_j + Lap(b)) by numerical integration (scipy.integrate) of
    ∫ f_b(x - u_j) Π_{i≠j} F_b(x - u_i) dx, against 20000 seeded peels; the
    second round never repeats the first pick."""
    u = np.array([0.0, 0.5, 1.0])
    b = 0.6
    lap = stats.laplace(scale=b)
    oracle = np.array(
        [
            integrate.quad(
                lambda x, j=j: (
                    lap.pdf(x - u[j])
                    * np.prod([lap.cdf(x - u[i]) for i in range(3) if i != j])
                ),
                -30,
                30,
                points=list(u),
            )[0]
            for j in range(3)
        ]
    )
    assert oracle.sum() == pytest.approx(1.0, abs=1e-8)
    rng = np.random.default_rng(2)
    draws = np.array(
        [peel_top_k(u, 2, noise="laplace", scale=b, rng=rng) for _ in range(20000)]
    )
    assert (draws[:, 0] != draws[:, 1]).all()
    assert _chi2_pvalue(np.bincount(draws[:, 0], minlength=3), oracle) > 1e-3


def test_peel_without_noise_is_the_exact_top_k_and_bad_k_raises():
    u = np.array([3.0, -1.0, 7.0, 5.0])
    rng = np.random.default_rng(0)
    for noise in ("gumbel", "laplace"):
        np.testing.assert_array_equal(
            peel_top_k(u, 3, noise=noise, scale=0.0, rng=rng), [2, 3, 0]
        )
    with pytest.raises(ValueError, match="k must be"):
        peel_top_k(u, 5, noise="gumbel", scale=1.0, rng=rng)
    with pytest.raises(ValueError, match="noise must be"):
        peel_top_k(u, 2, noise="gaussian", scale=1.0, rng=rng)


@pytest.mark.parametrize("k", [2, 5, 50])
def test_peel_without_noise_is_the_exact_top_k_of_many_scores(k):
    # Many distinct scores, in random order: the partial sort must keep the
    # whole top k, in order.
    rng = np.random.default_rng(k)
    for noise in ("gumbel", "laplace"):
        for _ in range(5):
            u = rng.permutation(1000).astype(float)
            expected = np.argsort(-u)[:k]
            np.testing.assert_array_equal(
                peel_top_k(u, k, noise=noise, scale=0.0, rng=rng), expected
            )


# --------------------------------------------------------------------------
# Privacy: sensitivity, noise scales and the reported composition
# --------------------------------------------------------------------------


@pytest.mark.parametrize("x_bound", [3.0, 0.5])  # 0.5: intercept column c < 1
@pytest.mark.parametrize("family", FAMILIES)
def test_brute_force_sensitivity_of_a_step(family, x_bound):
    """Record 0 takes each of 320 extreme values (entries ±30, far beyond
    x_bound; responses up to ±1e300, never truncated) at a fixed, public
    iterate θ: no coordinate of the step's v differs between any two of them
    by more than sensitivity_ = 2·η·r·x_bound/n, and some pair comes within
    5% of it. The residual clip alone bounds the step."""
    X, y, _ = small_data(family, n=200, d=6)
    model = DPSparseGLM(family=family, sparsity=2, x_bound=x_bound, random_state=0)
    model.fit(X, y)
    lam = model.sensitivity_
    r = 1.0 if family == "logistic" else model.residual_bound
    assert lam == 2 * model.learning_rate_ * r * model.x_bound / 200
    datafit = {
        "gaussian": Quadratic(0.5),
        "poisson": Poisson(),
        "logistic": BinomialLogistic(),
    }[family]
    responses = {
        "gaussian": [-1e300, -1e6, 1e6, 1e300],
        "poisson": [0.0, 1e6, 1e300, 1.7e308],
        "logistic": [0, 1],
    }
    rng = np.random.default_rng(0)
    theta = rng.normal(scale=2.0, size=7)
    steps = []
    for signs in rng.choice([-1.0, 1.0], size=(80, 6)):
        for response in responses[family]:
            X2, y2 = X.copy(), y.copy()
            X2[0], y2[0] = 30.0 * signs, response
            steps.append(
                gradient_step(
                    clip_features(X2, model.x_bound),
                    model._check_response(y2)[0],
                    datafit,
                    theta,
                    learning_rate=model.learning_rate_,
                    x_bound=model.x_bound,
                    residual_bound=r,
                )
            )
    steps = np.array(steps)
    largest = (steps.max(axis=0) - steps.min(axis=0)).max()
    assert largest <= lam * (1 + 1e-12)
    assert largest >= 0.95 * lam


def _release_std(model):
    laplace = model.accounting == "paper"
    return model.release_noise_scale_ * (math.sqrt(2.0) if laplace else 1.0)


@pytest.mark.parametrize(
    ("family", "accounting", "n", "d", "epsilon"),
    [
        *[(fam, "exact", 20000, 50, 1.0) for fam in FAMILIES],
        *[(fam, "paper", 20000, 50, 4.0) for fam in FAMILIES],
        # d = 2: the sampling floor uses max(log d, 1) (T 11, not 10)
        ("poisson", "exact", 10000, 2, 1.0),
        # Laplace noise has std sqrt(2)·b (T 7; sqrt(3)·b would give 6)
        ("poisson", "paper", 20000, 50, 8.0),
        # ε/T too large for Lemma 5.1 below T = 4: those T are skipped
        ("gaussian", "paper", 20000, 50, 20.0),
    ],
)
def test_auto_steps_are_the_first_where_contraction_meets_the_noise(
    family, accounting, n, d, epsilon
):
    """Issue 20, item 2: T is the smallest T with κ_f^T <= sqrt(s·max(log d,
    1)/n + k·σ(T)²) (the proof of Theorem 5.2 stopped at the error no step
    removes), recomputed here from the fits' own noise at T and T - 1 (or
    T - 1 is refused by Lemma 5.1's condition)."""
    from skdp.linear_model._sparse_glm import _CONTRACTION, curvature_weight

    s = min(4, d)
    X, y, _ = make_sparse_glm(n, d, s, family=family, random_state=0)
    # The public schedule: a given step size (learning_rate="auto" under
    # "exact" releases its steps, see test_private_schedule_*).
    params = dict(
        family=family,
        sparsity=s,
        accounting=accounting,
        epsilon=epsilon,
        learning_rate=1.0 / curvature_weight(family, DPSparseGLM().residual_bound),
    )
    model = DPSparseGLM(random_state=0, **params).fit(X, y)
    T, k, kappa = model.n_iter_, s + 1, _CONTRACTION[family]
    floor = s * max(math.log(d), 1.0) / n
    assert kappa**T <= math.sqrt(floor + k * _release_std(model) ** 2)
    if T > 1:
        try:
            before = DPSparseGLM(max_iter=T - 1, random_state=0, **params).fit(X, y)
        except ValueError as error:
            assert accounting == "paper" and "Lemma 5.1" in str(error)
        else:
            noise = k * _release_std(before) ** 2
            assert kappa ** (T - 1) > math.sqrt(floor + noise)
    # Public quantities only: other data of the same shape, the same T.
    X2, y2, _ = make_sparse_glm(n, d, s, family=family, random_state=9)
    assert DPSparseGLM(random_state=0, **params).fit(X2 * 3.0, y2).n_iter_ == T


def test_auto_steps_follow_each_family_and_the_noise():
    """Slower-contracting families get more steps; more data or budget
    (less noise) allows more steps. The sizes of the issue (n = 10⁵,
    d = 800, s = 10, ε = 1, δ = 1e-5) give 2, 11 and 12 steps."""
    model = DPSparseGLM(sparsity=10)
    r = {"gaussian": 3.0, "poisson": 3.0, "logistic": 1.0}
    steps = {
        fam: model.set_params(family=fam)._schedule(100000, 800, r[fam])[1]
        for fam in FAMILIES
    }
    assert steps == {"gaussian": 2, "poisson": 11, "logistic": 12}
    logistic = model.set_params(family="logistic")
    assert logistic._schedule(30000, 800, 1.0)[1] < steps["logistic"]
    assert logistic.set_params(epsilon=0.3)._schedule(100000, 800, 1.0)[1] < 12
    # A single step when the noise dwarfs what a second step would gain;
    # the search stops at 200 steps however large n is.
    gaussian = model.set_params(family="gaussian", epsilon=0.5)
    assert gaussian._schedule(20000, 1000, 3.0)[1] == 1
    logistic = model.set_params(family="logistic", epsilon=1.0)
    assert logistic._schedule(10**60, 800, 1.0)[1] == 200


def test_logistic_runs_enough_steps_at_large_n():
    """Issue 20, item 2: at n = 10⁵, s* = 10 the old T = ceil(0.6·log n) = 7
    stopped the logistic fit early (ℓ2 error 0.194 at d = 800; 0.16-0.19
    here at d = 200). The theory's T (12 here) brings it below 0.1 for each
    of two noise seeds (measured 0.05-0.07)."""
    X, y, coef = make_sparse_glm(100000, 200, 10, family="logistic", random_state=0)
    for seed in range(2):
        model = DPSparseGLM(
            family="logistic", sparsity=10, learning_rate=4.0, random_state=seed
        )
        model.fit(X, y)
        assert np.linalg.norm(model.coef_ - coef) < 0.1
        assert model.n_iter_ == 12
    # The released step sizes (default): 0.106 and 0.09 measured.
    auto = DPSparseGLM(family="logistic", sparsity=10, random_state=0).fit(X, y)
    assert np.linalg.norm(auto.coef_ - coef) < 0.12


def test_schedule_uses_the_given_step_size_and_iterations():
    X, y, _ = small_data(n=200, d=6)
    given = DPSparseGLM(learning_rate=0.37, max_iter=3, sparsity=2, random_state=0)
    given.fit(X, y)
    assert (given.learning_rate_, given.n_iter_) == (0.37, 3)
    paper = DPSparseGLM(sparsity=2, accounting="paper", epsilon=0.5, random_state=0)
    assert paper.fit(X, y).learning_rate_ == 1.0  # the gaussian family's default
    # Released steps never exceed the public default 1/w_f (γ_t >= 1).
    auto = DPSparseGLM(sparsity=2, max_iter=3, random_state=0).fit(X, y)
    assert auto.step_sizes_.shape == (3,) and (auto.step_sizes_ <= 1.0).all()


def test_responses_are_not_truncated_only_residuals_are_clipped():
    """Issue 20, item 1: y enters the fit as given (no Π_R(y)); the
    residual clip is r = residual_bound (1 for logistic)."""
    model = DPSparseGLM(residual_bound=2.0)
    y = np.array([-1e6, -2.5, -1.0, 0.0, 1.5, 3.0, 1e6])
    checked, r = model._check_response(y)
    np.testing.assert_array_equal(checked, y)
    assert r == 2.0
    counts = np.array([0.0, 1.0, 2.0, 7.0, 1e9])
    checked, r = model.set_params(family="poisson")._check_response(counts)
    np.testing.assert_array_equal(checked, counts)
    assert r == 2.0
    labels, r = model.set_params(family="logistic")._check_response(
        np.array([0.0, 1.0, 1.0])
    )
    np.testing.assert_array_equal(labels, [0.0, 1.0, 1.0])
    assert r == 1.0


@pytest.mark.parametrize("family", ["gaussian", "poisson"])
def test_noise_free_iht_is_not_shrunk_by_the_default_bound(family):
    """Issue 20, item 1: with y truncated at R = 3 the noise-free IHT shrank
    make_sparse_glm's coefficients (ℓ2 error 0.545 gaussian, about 0.76 of
    their size for poisson, at any n). Clipping only the residual leaves the
    fit at the statistical error: n = 20000, d = 200, s* = 10, default
    bounds, ℓ2 error below 0.05 (measured 0.02 gaussian, 0.02 poisson) and
    the fitted ℓ2 norm within 3% of the truth's."""
    from skdp.linear_model._sparse_glm import nonprivate_iht

    X, y, coef = make_sparse_glm(20000, 200, 10, family=family, random_state=0)
    fitted = nonprivate_iht(DPSparseGLM(family=family, sparsity=10), X, y)
    assert np.linalg.norm(fitted - coef) < 0.05
    assert np.linalg.norm(fitted) == pytest.approx(np.linalg.norm(coef), rel=0.03)


def test_y_bound_is_a_deprecated_alias_of_residual_bound():
    X, y, _ = small_data(n=400, d=6)
    new = DPSparseGLM(sparsity=2, residual_bound=2.0, random_state=0).fit(X, y)
    with pytest.warns(FutureWarning, match="renamed 'residual_bound'"):
        old = DPSparseGLM(sparsity=2, y_bound=2.0, random_state=0).fit(X, y)
    np.testing.assert_array_equal(old.coef_, new.coef_)
    assert old.sensitivity_ == new.sensitivity_
    # Logistic ignores the bound (r = 1) but still says the name is going.
    X, y, _ = small_data("logistic", n=400, d=6)
    with pytest.warns(FutureWarning, match="renamed 'residual_bound'"):
        DPSparseGLM(family="logistic", sparsity=2, y_bound=2.0).fit(X, y)


@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_paper_laplace_scale_is_algorithm_3_at_the_papers_sensitivity(epsilon):
    """b = λ_paper · 2·sqrt(3·k·log(T/δ)) · T/ε with λ_paper = η·4(R + c1)σ_x/n
    (Lemma 5.4, R = c1 = r): 4× the step's true sensitivity 2·η·r·σ_x/n."""
    X, y, _ = small_data(n=1000, d=20)
    delta = 1e-6
    model = DPSparseGLM(
        sparsity=5,
        epsilon=epsilon,
        delta=delta,
        accounting="paper",
        residual_bound=2.0,
        x_bound=2.5,
        max_iter=5,  # several steps, so that δ/T and the composition matter
        random_state=0,
    ).fit(X, y)
    T, k = model.n_iter_, 6
    lam_paper = model.learning_rate_ * 4 * (2.0 + 2.0) * 2.5 / 1000
    assert model.sensitivity_ == pytest.approx(lam_paper / 4, rel=1e-15)
    b = lam_paper * 2 * math.sqrt(3 * k * math.log(T / delta)) * T / epsilon
    assert model.selection_noise_scale_ == pytest.approx(b, rel=1e-12)
    assert model.release_noise_scale_ == pytest.approx(b, rel=1e-12)
    # The guarantee reported for that noise: each peel is 2λ/b-DP and each
    # released value λ/b-DP (true λ); never more than the target.
    eps_peel, eps_value = 2 * model.sensitivity_ / b, model.sensitivity_ / b
    assert model.rho_ == pytest.approx(
        T * (5 * eps_peel**2 + 6 * eps_value**2) / 2, rel=1e-12
    )
    assert model.privacy_spent_.epsilon <= epsilon
    assert model.privacy_spent_.epsilon <= epsilon_from_zcdp_tight(
        model.rho_, delta
    ) * (1 + 1e-12)
    # Exactly the smaller of the two routes, each recomputed here: zCDP
    # (dp-accounting's RDP accountant) and the paper's (advanced composition
    # of the 11 pure-DP steps at δ/T, then basic composition over T steps).
    steps = np.array([eps_peel] * 5 + [eps_value] * 6)
    per_step = math.sqrt(2 * math.log(T / delta) * np.sum(steps**2)) + np.sum(
        steps * np.expm1(steps)
    )
    zcdp = _rdp_oracle_epsilon([(model.rho_, 1)], delta)
    best = min(T * per_step, zcdp)
    assert model.privacy_spent_.epsilon <= best * (1 + 1e-9)
    assert model.privacy_spent_.epsilon == pytest.approx(best, rel=3e-3)


def test_docstring_states_the_measured_noise_ratio_of_paper_accounting():
    """Issue 20, item 6: the docstring said "about 8×" the noise; the
    ratio of the noise standard deviations, paper / exact at the same T and
    ε = 1, is 19-42 over s = 5-20, T = 4-12, δ = 1e-8..1e-5 (Laplace b has
    std sqrt(2)·b, Gumbel g has std π·g/sqrt(6)). The range the docstring
    states must contain every ratio and be tight to one unit."""
    import re

    from skdp.linear_model._sparse_glm import _exact_scales, _paper_scale

    doc = " ".join(DPSparseGLM.__doc__.split())
    low, high = map(int, re.search(r"noise is (\d+)-(\d+) times", doc).groups())
    ratios = []
    for s in (5, 10, 20):
        for T in (4, 7, 12):
            for delta in (1e-5, 1e-6, 1e-8):
                for k in (s, s + 1):
                    sizes = dict(sensitivity=1.0, sparsity=s, n_released=k, n_iter=T)
                    b = _paper_scale(1.0, delta, **sizes)
                    g, sigma = _exact_scales(1.0, delta, n_features=1000, **sizes)
                    laplace_std = math.sqrt(2.0) * b
                    gumbel_std = math.pi * g / math.sqrt(6.0)
                    ratios += [laplace_std / sigma, laplace_std / gumbel_std]
    assert low <= min(ratios) < low + 1
    assert high - 1 < max(ratios) <= high


def _rdp_oracle_epsilon(rho_events, delta):
    """dp-accounting's RDP accountant on zCDP events, 20000 orders in (1, 2000]."""
    orders = list(1.0 + np.geomspace(1e-3, 2000.0, 20000))
    accountant = RdpAccountant(orders=orders)
    for rho, count in rho_events:
        accountant.compose(dp_accounting.ZCDpEvent(rho), count)
    return accountant.get_epsilon(delta)


@pytest.mark.parametrize(("epsilon", "delta"), [(0.3, 1e-6), (1.0, 1e-5), (5.0, 1e-8)])
def test_exact_calibration_against_dp_accounting(epsilon, delta):
    """From the fitted scales alone: each Gumbel peel is the exponential
    mechanism with ε_p = 2λ/g, ε_p²/8-zCDP (bounded range); the Gaussian
    release of k values with L2 sensitivity λ·sqrt(k) is kλ²/(2σ²)-zCDP.
    dp-accounting composes the s·T + T events and converts them to ε at δ:
    it must agree with privacy_spent_ (which may be slightly tighter: it
    optimises the Rényi order continuously) and with the target ε."""
    X, y, _ = small_data(n=2000, d=30)
    # Several steps (the automatic T is 1 at this n), so that T composes.
    model = DPSparseGLM(
        sparsity=4,
        epsilon=epsilon,
        delta=delta,
        max_iter=5,
        learning_rate=1.0,
        random_state=0,
    ).fit(X, y)
    lam, g, sigma = (
        model.sensitivity_,
        model.selection_noise_scale_,
        model.release_noise_scale_,
    )
    T, s, k = model.n_iter_, 4, 5
    rho_peel = (2 * lam / g) ** 2 / 8
    rho_release = k * lam**2 / (2 * sigma**2)
    assert model.rho_ == pytest.approx(T * (s * rho_peel + rho_release), rel=1e-12)
    assert rho_peel * s / rho_release == pytest.approx(0.6 / 0.4, rel=1e-8)
    oracle = _rdp_oracle_epsilon([(rho_peel, s * T), (rho_release, T)], delta)
    spent = model.privacy_spent_
    assert spent.epsilon <= oracle * (1 + 1e-9)
    assert spent.epsilon == pytest.approx(oracle, rel=2e-3)
    assert spent.epsilon == pytest.approx(epsilon, rel=1e-8)
    assert spent.epsilon <= epsilon
    assert spent.delta == delta and spent.mu is None
    assert spent.adjacency == "replace one record"
    assert f"{T} steps" in spent.mechanism and "Gumbel" in spent.mechanism


def test_exact_calibration_selecting_everything_spends_nothing_on_selection():
    X, y, _ = small_data(n=500, d=5)
    model = DPSparseGLM(
        sparsity=5,
        epsilon=1.0,
        delta=1e-6,
        max_iter=4,
        learning_rate=1.0,
        random_state=0,
    ).fit(X, y)
    assert model.selection_noise_scale_ == 0.0
    rho = (
        model.n_iter_ * 6 * model.sensitivity_**2 / (2 * model.release_noise_scale_**2)
    )
    assert model.rho_ == pytest.approx(rho, rel=1e-12)
    assert _rdp_oracle_epsilon([(rho, 1)], 1e-6) == pytest.approx(1.0, rel=2e-3)


def test_white_box_noise_is_the_seeded_gumbel_then_gaussian():
    """One step (max_iter=1) from θ = 0: the released values minus the
    noise-free step are exactly the seeded N(0, σ²) draws that follow the d
    Gumbel(g) draws of the selection, and the support is the top s of
    |v| + those Gumbel draws."""
    X, y, _ = small_data(n=3000, d=40)
    seed = 5
    model = DPSparseGLM(
        sparsity=6,
        epsilon=2.0,
        delta=1e-6,
        max_iter=1,
        learning_rate=1.0,
        random_state=seed,
    ).fit(X, y)
    g, sigma = model.selection_noise_scale_, model.release_noise_scale_
    v = gradient_step(
        clip_features(X, 3.0),
        y,
        Quadratic(0.5),
        np.zeros(41),
        learning_rate=1.0,
        x_bound=3.0,
        residual_bound=3.0,
    )
    rng = np.random.default_rng(seed)
    gumbel = rng.gumbel(0.0, g, 40)
    normal = rng.normal(0.0, sigma, 7)
    order = np.argsort(-(np.abs(v[:40]) + gumbel))[:6]
    np.testing.assert_array_equal(np.flatnonzero(model.support_), np.sort(order))
    np.testing.assert_allclose(
        model.coef_[order] - v[order], normal[:6], rtol=0, atol=1e-12
    )
    assert model.intercept_ - v[40] == pytest.approx(normal[6], abs=1e-12)


# --------------------------------------------------------------------------
# Utility
# --------------------------------------------------------------------------


@pytest.mark.parametrize("family", FAMILIES)
def test_support_recovery_at_epsilon_1(recovery_data, family):
    """s* = 5, d = 500, n = 20000, ε = 1, δ = 1e-6: the exact support for
    3 of 3 noise seeds (8 of 8 when the defaults were tuned)."""
    X, y, coef = recovery_data[family]
    for seed in range(3):
        model = DPSparseGLM(
            family=family,
            sparsity=5,
            epsilon=1.0,
            delta=1e-6,
            residual_bound=R_BOUND[family],
            random_state=seed,
        ).fit(X, y)
        np.testing.assert_array_equal(model.support_, coef != 0)
        assert np.linalg.norm(model.coef_ - coef) < 0.35


def test_exact_beats_paper_at_every_epsilon(recovery_data):
    X, y, coef = recovery_data["gaussian"]
    for epsilon in (0.5, 1.0, 2.0, 5.0):
        errors = {
            acc: np.linalg.norm(
                DPSparseGLM(
                    sparsity=5,
                    epsilon=epsilon,
                    delta=1e-6,
                    residual_bound=4.0,
                    accounting=acc,
                    random_state=0,
                )
                .fit(X, y)
                .coef_
                - coef
            )
            for acc in ("exact", "paper")
        }
        assert errors["exact"] < errors["paper"]


def test_error_shrinks_with_n_at_the_rate_of_theorem_5_2():
    """Squared error ≍ s·log d/n + (s·log d)²·log(1/δ)/(n²ε²) (Theorem 5.2;
    d = 100, s = 5, δ = 1e-6). At ε = 4 the second (privacy) term dominates:
    log-log slope -2 in n (one data set per n, mean over 10 noise seeds). At
    ε = 1e4 the first (sampling) term does: slope -1 (mean over 6 data
    sets). Each slope is fitted on three n's spanning a factor 4 or 16 and
    must be within ±0.4 (seed-to-seed spread of one mean: about ±15%)."""
    d, s = 100, 5

    def fit_error(X, y, coef, epsilon, seed):
        model = DPSparseGLM(
            sparsity=s,
            epsilon=epsilon,
            delta=1e-6,
            residual_bound=10.0,
            x_bound=5.0,
            random_state=seed,
        ).fit(X, y)
        return np.sum((model.coef_ - coef) ** 2)

    private_ns, sampling_ns = [20000, 40000, 80000], [2500, 10000, 40000]
    private = []
    for n in private_ns:
        X, y, coef = make_sparse_glm(n, d, s, random_state=0)
        private.append(
            np.mean([fit_error(X, y, coef, 4.0, seed) for seed in range(10)])
        )
    sampling = []
    for n in sampling_ns:
        data = [make_sparse_glm(n, d, s, random_state=seed) for seed in range(6)]
        sampling.append(np.mean([fit_error(*xyc, 1e4, 0) for xyc in data]))
    private_slope = np.polyfit(np.log(private_ns), np.log(private), 1)[0]
    sampling_slope = np.polyfit(np.log(sampling_ns), np.log(sampling), 1)[0]
    assert private_slope == pytest.approx(-2.0, abs=0.4)
    assert sampling_slope == pytest.approx(-1.0, abs=0.4)


# --------------------------------------------------------------------------
# scikit-learn compatibility without the intercept (tests/test_common.py
# checks the default instances)
# --------------------------------------------------------------------------


@parametrize_with_checks(
    # sparsity=3 is above the n_features of some checks (issue 20, item 3).
    [
        DPSparseGLM(epsilon=1e4, fit_intercept=False),
        DPSparseGLM(sparsity=3, epsilon=1e4),
    ],
)
def test_sklearn_compatible_high_epsilon(estimator, check):
    check(estimator)


def test_nonprivate_iht_reference_is_the_fit_without_noise():
    from skdp.linear_model._sparse_glm import nonprivate_iht

    X, y, _ = make_sparse_glm(3000, 40, 4, noise=0.1, random_state=1)
    model = DPSparseGLM(sparsity=4, epsilon=1e9, residual_bound=4.0, random_state=0)
    reference = nonprivate_iht(model, X, y)
    # At ε = 1e9 the release noise is about 1e-6; the supports must agree.
    fitted = model.fit(X, y).coef_
    np.testing.assert_array_equal(fitted != 0, reference != 0)
    np.testing.assert_allclose(fitted, reference, atol=1e-5)


# --------------------------------------------------------------------------
# Released step sizes (issue 30, item 4): safe on correlated features
# --------------------------------------------------------------------------


def _standardised_diabetes():
    from sklearn.datasets import load_diabetes
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    X, y = load_diabetes(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, random_state=0)
    sx, sy = StandardScaler().fit(Xtr), StandardScaler().fit(ytr[:, None])
    return (
        sx.transform(Xtr),
        sy.transform(ytr[:, None]).ravel(),
        sx.transform(Xte),
        sy.transform(yte[:, None]).ravel(),
    )


def test_residuals_clipped_reads_a_saturated_intercept_path():
    # Every step at its largest (most residuals clipped on one side): True;
    # a far start that converges (moves only early), or pure noise: False.
    T, r_move = 40, 0.75
    saturated = np.concatenate([[0.0], np.cumsum(np.full(T, r_move))])
    # A far start: saturated for 15 steps, then settled (0.375 of the
    # largest moves on average over the run, none in its second half).
    converging = np.concatenate([[0.0], np.cumsum(r_move * (np.arange(T) < 15))])
    rng = np.random.default_rng(0)
    noisy = np.concatenate([[0.0], np.cumsum(rng.normal(0.0, 0.5, T))])
    moves = np.full(T, r_move)
    assert sglm.residuals_clipped(saturated, moves, np.full(T, 1e-3))
    assert not sglm.residuals_clipped(converging, moves, np.full(T, 1e-3))
    assert not sglm.residuals_clipped(noisy, moves, np.full(T, 0.5))
    # Saturated under noise the noise could explain: not flagged.
    assert not sglm.residuals_clipped(saturated, moves, np.full(T, 10.0))


@pytest.mark.parametrize("epsilon", [10.0, 1e6])
def test_a_response_far_from_the_residual_bound_warns(epsilon):
    """Raw diabetes y (mean 152, sd 77) against residual_bound = 3: R² below
    0 and no warning (review). The released intercept path says so; the
    standardised response does not warn."""
    X, y = load_diabetes(return_X_y=True)
    Xs = (X - X.mean(axis=0)) / X.std(axis=0)
    for features in (X, Xs):
        with pytest.warns(UserWarning, match="intercept was still moving"):
            DPSparseGLM(epsilon=epsilon, random_state=1).fit(features, y)
    ys = (y - y.mean()) / y.std()
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        DPSparseGLM(epsilon=epsilon, random_state=1).fit(Xs, ys)
    assert not [w for w in record if "still moving" in str(w.message)]


def _equicorrelated(noise, n=15000, d=50, rho=0.64, seed=0):
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(n, d)) * np.sqrt(1 - rho)
    Z += rng.normal(size=(n, 1)) * np.sqrt(rho)
    beta = np.zeros(d)
    beta[:5] = [1, -1, 0.5, 0.8, -0.6]
    y = Z @ beta + rng.normal(size=n) * noise
    return Z[:10000], y[:10000], Z[10000:], y[10000:]


def test_default_step_is_safe_on_standardised_diabetes():
    """Issue 30: the old η = 1 gave R² -2.7 at ε = 1e6 (LassoCV 0.356 on
    this split). Released steps: 0.351-0.352 (3 seeds); within 0.05."""
    Xtr, ytr, Xte, yte = _standardised_diabetes()
    for seed in range(2):
        model = DPSparseGLM(epsilon=1e6, random_state=seed).fit(Xtr, ytr)
        assert model.score(Xte, yte) > 0.356 - 0.05


def test_default_step_is_safe_on_equicorrelated_features():
    """ρ = 0.64, d = 50, 5-sparse, noise sd 0.25 (OLS ceiling 0.96), n =
    10000 train / 5000 test: the old default gave R² about -7 at ε = 1.
    Measured over seeds 0-11 at ε = 1: mean 0.875, 9 of 12 at 0.85 or more,
    the worst 0.70 (a noisy released curvature). Asserted: the mean over
    seeds 0-5 (0.870) is at least 0.85, and no fit diverges."""
    Xtr, ytr, Xte, yte = _equicorrelated(0.25)
    scores = [
        DPSparseGLM(epsilon=1.0, random_state=seed).fit(Xtr, ytr).score(Xte, yte)
        for seed in range(6)
    ]
    assert np.mean(scores) >= 0.85 and min(scores) > 0.5


def test_large_given_step_on_correlated_features_warns():
    """A given learning_rate too large for the curvature: the released
    iterates grow, and the fit says so (post-processing only)."""
    Xtr, ytr, _, _ = _equicorrelated(0.25, n=3000)
    with pytest.warns(UserWarning, match="grew instead of settling"):
        DPSparseGLM(epsilon=1e6, learning_rate=1.0, max_iter=3, random_state=0).fit(
            Xtr, ytr
        )
    import warnings as _w

    with _w.catch_warnings():
        _w.simplefilter("error", UserWarning)
        _w.filterwarnings("ignore", message=".*random_state.*")
        _w.filterwarnings("ignore", message=".*reproducible.*")
        DPSparseGLM(epsilon=1e6, random_state=0).fit(Xtr, ytr)


def test_noise_dominated_threshold_is_two_sds_above_pure_noise():
    """``noise_dominated``: ||coef||² against s·σ² + 2σ²·sqrt(2s) on the
    support (zeros off it do not count), exactly at the edge; and its rate
    on pure noise (χ²_s) and on a clear signal."""
    from skdp.linear_model._sparse_glm import noise_dominated

    sigma = 0.3
    for s in (1, 4, 10):
        edge = sigma**2 * (s + 2.0 * math.sqrt(2.0 * s))
        coef = np.zeros(25)
        coef[:s] = math.sqrt(edge / s)
        assert not noise_dominated(coef * (1 + 1e-9), sigma)
        assert noise_dominated(coef * (1 - 1e-9), sigma)
    assert not noise_dominated(np.zeros(5), sigma)
    rng = np.random.default_rng(0)
    noise = sigma * rng.standard_normal((2000, 10))
    flagged = np.mean([noise_dominated(w, sigma) for w in noise])
    # P(χ²_10 < 10 + 2·sqrt(20)) = 0.966.
    assert flagged == pytest.approx(
        stats.chi2.cdf(10 + 2 * math.sqrt(20), 10), abs=0.015
    )
    signal = noise + 3 * sigma  # ||m||² = 9·s·σ²
    assert not any(noise_dominated(w, sigma) for w in signal)


def test_a_fit_that_is_mostly_noise_says_so(monkeypatch):
    """The warning reads the released coefficients and the last release's σ
    only (both paths: released and given step sizes), and points at the
    caller; at the acceptance sizes it stays silent."""
    import warnings as _w

    import skdp.linear_model._sparse_glm as module

    seen = []
    real = module.noise_dominated

    def spy(coef, noise_std):
        seen.append((coef.copy(), noise_std))
        return real(coef, noise_std)

    monkeypatch.setattr(module, "noise_dominated", spy)
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3300, 12))
    y = X[:, :3] @ np.array([0.5, -0.3, 0.2]) + rng.standard_normal(3300)
    for learning_rate in ("auto", 1.0):
        seen.clear()
        model = DPSparseGLM(epsilon=0.4, learning_rate=learning_rate, random_state=0)
        with _w.catch_warnings(record=True) as record:
            _w.simplefilter("always")
            line = sys._getframe().f_lineno + 1
            model.fit(X[:300], y[:300])  # 300 records: noise σ of 1-5 per value
        [warning] = [w for w in record if "mostly noise" in str(w.message)]
        assert points_at(warning, __file__, line)
        assert "DPLinearRegression" in str(warning.message)
        [(coef, noise_std)] = seen
        np.testing.assert_array_equal(coef, model.coef_)
        assert noise_std == model.release_noise_scale_
    # Several steps of released step sizes, each with its own σ: the last
    # one's is the σ of the released coefficients.
    seen.clear()
    model = DPSparseGLM(epsilon=0.4, max_iter=3, random_state=0).fit(X, y)
    scales = model.schedule_record_["release_scales"]
    assert len(scales) == 3 and scales[0] != scales[-1]
    [(coef, noise_std)] = seen
    assert noise_std == scales[-1]
    # Its advice follows the family (it named DPLinearRegression for all; review)
    labels = (y > 0).astype(float)
    with _w.catch_warnings(record=True) as record:
        _w.simplefilter("always")
        DPSparseGLM(family="logistic", epsilon=0.4, random_state=0).fit(
            X[:300], labels[:300]
        )
    said = " ".join(str(w.message) for w in record if "mostly noise" in str(w.message))
    assert "DPLogisticRegression" in said and "DPLinearRegression" not in said
    Xtr, ytr, _, _ = _equicorrelated(0.25)
    for seed in range(3):
        with _w.catch_warnings(record=True) as record:
            _w.simplefilter("always")
            DPSparseGLM(epsilon=1.0, random_state=seed).fit(Xtr, ytr)
        assert not [w for w in record if "mostly noise" in str(w.message)]


@pytest.mark.parametrize("family", ["gaussian", "poisson"])
def test_private_schedule_accounting_against_dp_accounting(family):
    """Every release of the private schedule, from the fitted record alone:
    Poisson's start (12 bisection steps, each a mean clipped residual of
    sensitivity 2r/n), pre-pass (s peels, 2 eigenvalues), step 1 (k
    values), later steps (s peels, 1 curvature, k values). dp-accounting
    composes them; the total is the declared ε (the shares add up to ρ
    whatever T)."""
    X, y, _ = small_data(family, n=3000, d=30)
    s, k = 4, 5
    for max_iter in (4, "auto"):
        model = DPSparseGLM(
            family=family,
            sparsity=s,
            epsilon=1.0,
            delta=1e-6,
            max_iter=max_iter,
            random_state=0,
        ).fit(X, y)
        rec, n = model.schedule_record_, 3000
        lam1 = 2 * 3.0 * 3.0 / n
        etas = rec["step_sizes"]
        T = model.n_iter_
        assert len(etas) == T and len(rec["curvature_stds"]) == T - 1
        events = [
            ((2 * lam1 / rec["pre_selection_scale"]) ** 2 / 8, s),
            ((math.sqrt(2) * (s * 9 + 1) / n / rec["pre_eigen_std"]) ** 2 / 2, 1),
        ]
        if family == "poisson":
            events.append(((2 * 3.0 / n / rec["start_std"]) ** 2 / 2, 12))
        for t in range(T):
            events.append(
                (k * (etas[t] * lam1) ** 2 / (2 * rec["release_scales"][t] ** 2), 1)
            )
            if t:
                sens = rec["curvature_sensitivities"][t - 1]
                events.append(((sens / rec["curvature_stds"][t - 1]) ** 2 / 2, 1))
                g = rec["selection_scales"][t - 1]
                events.append(((2 * etas[t - 1] * lam1 / g) ** 2 / 8, s))
                # the union of two supports and the intercept column
                assert (sens * n - 1) / 9 in range(s, 2 * s + 1)
        total = sum(r * c for r, c in events)
        assert model.rho_ == pytest.approx(total, rel=1e-12)
        oracle = _rdp_oracle_epsilon(events, 1e-6)
        assert model.privacy_spent_.epsilon == pytest.approx(oracle, rel=2e-3)
        assert model.privacy_spent_.epsilon == pytest.approx(1.0, rel=1e-8)
        assert model.privacy_spent_.epsilon <= 1.0


def test_private_schedule_is_the_same_on_public_sizes_only_when_given():
    """With max_iter given, T is public (neighbouring data: same T); the
    step sizes are released values, so they differ between data sets, and
    a change in one record moves them by the released noise only."""
    X, y, _ = small_data(n=3000, d=30)
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = 0.0, 10.0  # a neighbour (replace one record)
    a = DPSparseGLM(sparsity=4, max_iter=3, random_state=0).fit(X, y)
    b = DPSparseGLM(sparsity=4, max_iter=3, random_state=0).fit(X2, y2)
    assert a.n_iter_ == b.n_iter_ == 3
    # The public schedule reads no data at all.
    c = DPSparseGLM(sparsity=4, learning_rate=0.5, random_state=0).fit(X, y)
    e = DPSparseGLM(sparsity=4, learning_rate=0.5, random_state=0).fit(X2, y2)
    assert (c.n_iter_, c.learning_rate_) == (e.n_iter_, e.learning_rate_)


def test_adaptive_n_iter_stops_before_the_noise_swamps_the_signal():
    # White box of the automatic T of the private schedule: the release noise
    # norm grows like sqrt(T) here (a fixed total budget split over T steps).
    from skdp.linear_model._sparse_glm import (
        _MAX_NOISE_NORM,
        _NEGLIGIBLE_NOISE,
        _adaptive_n_iter,
    )

    def budget(n_iter):
        return 1.0 / n_iter, {"values": 0.5}

    def floor(n_iter):
        return 0.05 * math.sqrt(n_iter)

    # κ = 1: no contraction; the last T whose noise norm is within the cap.
    t = _adaptive_n_iter(1.0, 0.0, 0.05, 1.0, 1, budget)
    assert t < 100 and floor(t) <= _MAX_NOISE_NORM < floor(t + 1)
    # κ < 1: the first T whose optimisation error is below the noise floor.
    t = _adaptive_n_iter(0.5, 0.0, 0.05, 1.0, 1, budget)
    assert 0.5**t <= floor(t) and 0.5 ** (t - 1) > floor(t - 1)
    # A sampling error above the cap (a small table) stopped every fit after
    # one step, at any ε (review): now only once the noise is not negligible.
    t = _adaptive_n_iter(1.0, 0.3**2, 0.01, 1.0, 1, budget)
    noise = lambda n_iter: 0.01 * math.sqrt(n_iter)  # noqa: E731
    assert noise(t) <= _NEGLIGIBLE_NOISE < noise(t + 1) and t > 1
    tiny = _adaptive_n_iter(0.95, 0.3**2, 1e-9, 1.0, 1, budget)
    assert 0.95**tiny <= math.hypot(0.3, 1e-9 * math.sqrt(tiny)) < 0.95 ** (tiny - 1)


@pytest.mark.parametrize("container", ["dense", "csr"])
def test_a_float32_record_at_a_huge_clip_decides_nothing(container):
    # The private step-size schedule's curvature release: a float32 entry
    # clipped at 1e20 squared past float32's range, the Gram matrix was inf
    # and eigvalsh raised, where the neighbour with that row at 0 fitted.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 3)).astype(np.float32)
    y = X @ np.array([1.0, 0.0, 0.0], dtype=np.float32)
    neighbour = X.copy()
    X[0], neighbour[0] = 1e20, 0.0
    fits = []
    for data in (X, neighbour):
        data = sp.csr_matrix(data) if container == "csr" else data
        model = DPSparseGLM(x_bound=1e20, sparsity=1, random_state=0)
        fits.append(model.fit(data, y).n_iter_)
    assert fits[0] == fits[1]


def test_poisson_steps_follow_the_residual_bound_on_large_counts():
    """Counts in the hundreds with a residual bound to match: the default
    step 1/2 moved the linear predictor by r/2 per step, and e^z overflowed
    to predictions of 1e25 after one step (Bikeshare's counts, R² −1e44, no
    warning; review). Steps 1/(max(2, r − 1)·γ) move it by about 1.5 at
    most; here they converge (steps 1/((r/2)·γ) oscillated: R² −0.2)."""
    from sklearn.metrics import r2_score

    rng = np.random.default_rng(0)
    X = rng.standard_normal((5000, 6))
    y = rng.poisson(np.exp(5.0 + 0.5 * X[:, 0] - 0.3 * X[:, 1])).astype(float)
    model = DPSparseGLM(
        family="poisson", residual_bound=200.0, sparsity=2, epsilon=1e6, random_state=0
    ).fit(X, y)
    predicted = model.predict(X)
    assert predicted.max() < 3 * y.max()
    assert r2_score(y, predicted) > 0.9  # 0.977 (scikit-learn 0.987)


@pytest.mark.parametrize("accounting", ["exact", "paper"])
@pytest.mark.parametrize("bound", [1e-100, 1e100])
def test_every_accepted_bound_fits(bound, accounting):
    # x_bound = residual_bound = 1e100 overflowed the accounting's squares,
    # 1e-100 divided by zero: every fit failed (review).
    X = np.random.default_rng(0).normal(size=(200, 3))
    model = DPSparseGLM(
        x_bound=bound, residual_bound=bound, sparsity=2, accounting=accounting
    ).fit(X, X[:, 0])
    assert np.all(np.isfinite(model.coef_))
    assert model.privacy_spent_.epsilon <= model.epsilon * (1 + 1e-9)


def test_a_sensitivity_whose_square_underflows_is_charged_in_full():
    # λ = 2·η·r·x_bound/n is a product of public constants: at bounds of
    # 2e-80 it is 9e-163 and λ² underflowed to 0, so the report (and a
    # ledger's total) said (0, δ) for a fit whose noise made it (1, δ) (review).
    import mpmath

    X = np.random.default_rng(0).normal(size=(300, 4))
    model = DPSparseGLM(
        learning_rate=0.5, max_iter=1, x_bound=2e-80, residual_bound=2e-80
    ).fit(X, X[:, 0])
    assert model.sensitivity_ < 1e-160
    # ρ of the noise used, in exact arithmetic from the released scales
    # (every feature kept: no peel, k = d + 1 Gaussian values).
    k = model.sparsity_ + 1
    ratio = mpmath.mpf(model.sensitivity_) / mpmath.mpf(model.release_noise_scale_)
    assert model.rho_ == pytest.approx(float(k * ratio**2 / 2), rel=1e-12)
    assert model.privacy_spent_.epsilon == pytest.approx(1.0, rel=1e-8)


@pytest.mark.parametrize("learning_rate", [1e-310, 1e300])
def test_a_step_sensitivity_out_of_float_range_is_refused(learning_rate):
    # A learning rate of 1e-310 gave λ in the subnormals and a
    # ZeroDivisionError, 1e300 an OverflowError, after the data were read.
    X = np.random.default_rng(0).normal(size=(50, 3))
    model = DPSparseGLM(learning_rate=learning_rate, max_iter=2)
    with pytest.raises(ValueError, match="step's sensitivity"):
        model.fit(X, X[:, 0])
    assert not hasattr(model, "coef_")


@pytest.mark.parametrize("learning_rate", ["auto", 0.5])
def test_exact_accounting_composes_in_zcdp_in_a_ledger(learning_rate):
    # The fit is rho_-zCDP (released or fixed steps), so two of them compose
    # to 2·rho_ (tighter than adding their epsilons).
    from skdp import PrivacyLedger

    X = np.random.default_rng(0).normal(size=(500, 5))
    model = DPSparseGLM(sparsity=2, learning_rate=learning_rate)
    fits = [clone(model).fit(X, X[:, 0]) for _ in range(2)]
    ledger = PrivacyLedger()
    for fit in fits:
        ledger.record(fit)
    rho = sum(fit.rho_ for fit in fits)
    assert ledger.total().epsilon == pytest.approx(
        epsilon_from_zcdp_tight(rho, 2 * fits[0].delta), rel=1e-9
    )
    assert ledger.total().epsilon < 2 * fits[0].epsilon * 0.9


def test_verbose_counts_the_steps_of_an_automatic_schedule(capsys):
    # With max_iter="auto" the released schedule's T is known after the
    # pre-pass; verbose said "step 60/100 ... done: 100 steps" for a fit of
    # n_iter_ = 66 (review).
    import re

    X, y = make_sparse_glm(2000, 20, 3, random_state=0)[:2]
    model = DPSparseGLM(sparsity=3, epsilon=50.0, verbose=1).fit(X, y)
    out = capsys.readouterr().out
    totals = {int(t) for t in re.findall(r"step \d+/(\d+)", out)}
    assert totals == {model.n_iter_}
    assert f"done: {model.n_iter_} steps" in out


def _counts(mean, n=8000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, 10))
    return X, rng.poisson(mean * np.exp(0.3 * X[:, 0] - 0.2 * X[:, 1])).astype(float)


def test_poisson_starts_from_a_released_log_mean_count():
    """Counts of mean ~160: from θ = 0 every step went to bringing the
    intercept up and the steps 1/((r − 1)·γ) oscillated around it (mean
    deviance 40-100 at ε = 1-10, the null model's 22; review). From the
    released start b₀ with steps 1/(e^{b₀}·γ) the fit reaches scikit-learn's
    deviance (0.99) within 0.1 at ε = 1 (1.01 over three seeds)."""
    from scipy.optimize import brentq
    from sklearn.linear_model import PoissonRegressor
    from sklearn.metrics import mean_poisson_deviance

    X, y = _counts(150.0)
    reference = mean_poisson_deviance(y, PoissonRegressor(alpha=0).fit(X, y).predict(X))
    # The start is the root of the clipped score (skewed counts: below the
    # log mean, 5.07)
    root = brentq(lambda b: np.clip(y - np.exp(b), -30, 30).mean(), -10, 20)
    for seed in range(3):
        model = DPSparseGLM(
            family="poisson", sparsity=3, residual_bound=30.0, random_state=seed
        ).fit(X, y)
        record = model.schedule_record_
        assert record["start_log_mean"] == pytest.approx(root, abs=0.01)
        deviance = mean_poisson_deviance(y, model.predict(X))
        assert deviance < reference + 0.1
        assert model.intercept_ == pytest.approx(np.log(150.0), abs=0.1)


def test_poisson_start_only_where_its_noise_is_small():
    """The start's noise over r is public (n, ε, δ): above 0.1 there is no
    start (at n = 200, ε = 1 it is 0.99·r and 40% of starts landed more than
    3 off in log scale, from which the steps 1/(e^{b₀}·γ) never came back:
    a median deviance of 11.7 against 2.2; review); the fit is then the old
    schedule, the whole budget on the steps."""
    from skdp.linear_model._sparse_glm import _START_MAX_NOISE, start_noise

    for n, used in ((200, False), (2000, True)):
        X, y = _counts(2.0, n=n)
        model = DPSparseGLM(family="poisson", sparsity=3, random_state=0).fit(X, y)
        record = model.schedule_record_
        rho = model.rho_
        assert (start_noise(n, rho) <= _START_MAX_NOISE) == used
        assert (record["start_steps"] == 12) == used
        assert ("start_log_mean" in record) == used
        if used:  # the gate reads the noise the start draws, over r
            assert record["start_std"] / 3.0 == pytest.approx(
                start_noise(n, rho), rel=1e-6
            )
        if not used:
            assert record["start_intercept"] == 0.0
    # n·sqrt(ρ) sets it: ε = 1 (δ = 1e-5) crosses between n = 1000 and 2000.
    rho = DPSparseGLM(family="poisson").fit(*_counts(2.0, n=2000)).rho_
    assert start_noise(1000, rho) > _START_MAX_NOISE >= start_noise(2000, rho)


def test_poisson_start_is_the_root_of_the_clipped_score(monkeypatch):
    """Noise off (ρ = ∞): the bisection's b₀ is the root of the intercept's
    clipped score (1/n)·Σ clip_r(y − e^b) to the last interval (30/2^12);
    the record says 12 releases at sensitivity 2r/n; with the noise on,
    every release draws Gaussian noise of the recorded σ (a spy on the
    sampler)."""
    from scipy.optimize import brentq

    import skdp.linear_model._sparse_glm as module

    _, y = _counts(40.0, n=2000)
    y[:50] = 1e6  # heavy tail: clipped, so the root stays near the bulk
    for r in (1.0, 3.0, 50.0):
        root = brentq(lambda b, r=r: np.clip(y - np.exp(b), -r, r).mean(), -10, 20)
        start, record = module.poisson_start(
            np.zeros((2000, 1)), y, r, math.inf, np.random.default_rng(0)
        )
        assert abs(start - root) <= 30 / 2**12
        assert record["start_steps"] == 12
        assert record["start_sensitivity"] == 2 * r / 2000
        assert record["start_std"] == 0.0
    calls = gaussian_noise_calls(monkeypatch, module)
    start, record = module.poisson_start(
        np.zeros((2000, 1)), y, 3.0, 0.01, np.random.default_rng(0)
    )
    drawn = [std for _, std, _ in calls]
    # Each release is the mean clipped residual at the bisection's midpoint
    # (|value| <= r: the sensitivity 2r/n holds), and the next midpoint
    # follows the released (noisy) sign.
    low, high = -10.0, 20.0
    for value, _, noisy in calls:
        middle = (low + high) / 2
        assert value == pytest.approx(np.clip(y - np.exp(middle), -3, 3).mean())
        low, high = (middle, high) if noisy[0] > 0 else (low, middle)
    assert start == (low + high) / 2
    # ρ/12 per release: σ = Δ/sqrt(2ρ/12) (and the calibration's safety factor)
    expected = (6.0 / 2000) / math.sqrt(2 * 0.01 / 12)
    assert drawn == [record["start_std"]] * 12
    assert record["start_std"] == pytest.approx(expected, rel=1e-8)
    assert record["start_std"] >= expected


def test_divergence_is_measured_from_the_start(monkeypatch):
    """A Poisson fit starts at its released intercept: the first move is
    measured from there (from 0 it counted the start, log 150 = 5, and hid
    a last move twice the first); the fit hands its start to the check."""
    import skdp.linear_model._sparse_glm as module

    start = np.array([0.0, 0.0, 5.0])
    iterates = [start + np.array([0.1, 0.0, 0.0]), start + np.array([0.1, 0.5, 0.0])]
    assert module.diverged(iterates, 0.01, 3, start)
    assert not module.diverged(iterates, 0.01, 3)
    seen = []
    real = module.diverged

    def spy(iterates, noise_std, n_released, start=0.0):
        seen.append(np.array(start, dtype=float))
        return real(iterates, noise_std, n_released, start)

    monkeypatch.setattr(module, "diverged", spy)
    X, y = _counts(150.0, n=2000)
    model = DPSparseGLM(
        family="poisson", sparsity=3, residual_bound=30.0, x_bound=0.5, random_state=0
    ).fit(X, y)
    [given] = seen
    log_mean = model.schedule_record_["start_log_mean"]
    assert given[-1] == pytest.approx(log_mean / 0.5) and not given[:-1].any()


def test_poisson_first_step_is_a_gradient_step_from_the_start():
    """Noise off: the first iterate is the start minus η₀ times the clipped
    mean gradient at the start (intercept: b₀ − η₀·mean clip_r(e^{b₀} − y);
    a feature j: −η₀·mean clip_r(e^{b₀} − y)·x_j)."""
    from skdp._datafits import Poisson as PoissonFit
    from skdp.linear_model._sparse_glm import private_schedule_iht

    X, y = _counts(30.0, n=3000)
    X = np.clip(X, -3, 3)
    coef, intercept, _, record = private_schedule_iht(
        X,
        y,
        PoissonFit(),
        family="poisson",
        sparsity=10,
        n_iter=1,
        rho=math.inf,
        x_bound=3.0,
        residual_bound=8.0,
        fit_intercept=True,
        rng=np.random.default_rng(0),
    )
    b0, eta = record["start_log_mean"], record["step_sizes"][0]
    residual = np.clip(np.exp(b0) - y, -8.0, 8.0)
    assert intercept == pytest.approx(b0 - eta * residual.mean(), rel=1e-12)
    np.testing.assert_allclose(coef, -eta * (residual @ X) / 3000, rtol=1e-10)


def test_poisson_residual_bound_below_the_counts_spread_warns():
    """r = 3 for counts of mean ~150 (sd ~12): most residuals are clipped;
    the fit says so from its released start, pointing at the caller. Counts
    of mean ~20 (sd/r = 1.5, a fit as good as scikit-learn's) and ~1.6 at
    the default r stay silent."""
    import warnings as _w

    X, y = _counts(150.0)
    model = DPSparseGLM(family="poisson", sparsity=3, random_state=0)
    with _w.catch_warnings(record=True) as record:
        _w.simplefilter("always")
        line = sys._getframe().f_lineno + 1
        model.fit(X, y)
    [warning] = [w for w in record if "small against" in str(w.message)]
    assert points_at(warning, __file__, line)
    spread = math.sqrt(math.exp(model.schedule_record_["start_log_mean"]))
    assert f"standard deviation {spread:.3g}" in str(warning.message)
    for mean in (20.0, 1.6):
        X, y = _counts(mean)
        with _w.catch_warnings(record=True) as record:
            _w.simplefilter("always")
            model.fit(X, y)
        assert not [w for w in record if "small against" in str(w.message)]


def test_poisson_curvature_weight_bounds_a_steps_move():
    # A step 1/(w·γ) moves the linear predictor by at most r/w (the clipped
    # residuals over w): at most 1.5 for every residual bound, and the old
    # weight 2 where r <= 3 (the default r keeps its step 1/2).
    from skdp.linear_model._sparse_glm import curvature_weight

    for r in np.geomspace(1e-3, 1e6, 200):
        assert r / curvature_weight("poisson", r) <= 1.5 + 1e-12
    assert curvature_weight("poisson", 3.0) == 2.0
    assert curvature_weight("gaussian", 50.0) == 1.0
    assert curvature_weight("logistic", 50.0) == 0.25


def test_raw_features_are_named_from_the_released_curvature():
    """Raw diabetes (ages, blood pressures in the hundreds): every clipped
    entry at x_bound, the released curvature of the selected columns 0.93 of
    its largest possible value (R² 0.01; review). The fit says so, at the
    caller; standardised, the same data stays silent about it."""
    import warnings as _w

    from sklearn.datasets import load_diabetes
    from sklearn.preprocessing import StandardScaler

    X, y = load_diabetes(scaled=False, return_X_y=True)
    y = (y - y.mean()) / y.std()
    for seed in range(3):
        with _w.catch_warnings(record=True) as record:
            _w.simplefilter("always")
            line = sys._getframe().f_lineno + 1
            model = DPSparseGLM(epsilon=1.0, random_state=seed).fit(X, y)
        [warning] = [w for w in record if "look raw" in str(w.message)]
        assert points_at(warning, __file__, line)
        largest = model.sparsity_ * 9.0 + 1.0
        assert model.schedule_record_["pre_lambda_max"] > 0.3 * largest
        with _w.catch_warnings(record=True) as record:
            _w.simplefilter("always")
            DPSparseGLM(epsilon=1.0, random_state=seed).fit(
                StandardScaler().fit_transform(X), y
            )
        assert not [w for w in record if "look raw" in str(w.message)]
    # Strongly correlated standardised columns (ρ = 0.64): a large curvature
    # (about 1 + 0.64·(s − 1)), far from the largest possible: silent.
    Xtr, ytr, _, _ = _equicorrelated(0.64)
    with _w.catch_warnings(record=True) as record:
        _w.simplefilter("always")
        model = DPSparseGLM(epsilon=1.0, random_state=0).fit(Xtr, ytr)
    assert model.schedule_record_["pre_lambda_max"] > 3.0
    assert not [w for w in record if "look raw" in str(w.message)]


def test_poisson_start_in_a_search_is_charged_in_full():
    """The Poisson start is part of every fit's ρ: the clones of a KFold
    grid search (seeded folds, fresh noise), recorded by the ledger, total
    the declared budget of every fold fit and the refit, and the refit spent
    no more than its declared ρ (the start's releases included)."""
    from sklearn.model_selection import GridSearchCV, KFold

    from skdp import PrivacyLedger

    X, y = _counts(150.0, n=6000)
    search = GridSearchCV(
        DPSparseGLM(family="poisson", sparsity=3, residual_bound=30.0),
        {"epsilon": [0.5, 1.0]},
        cv=KFold(3, shuffle=True, random_state=0),
        scoring="neg_mean_poisson_deviance",
    ).fit(X, y)
    refit = search.best_estimator_
    assert refit.schedule_record_["start_steps"] == 12
    declared = zcdp_from_epsilon_tight(refit.epsilon, refit.delta)
    assert refit.rho_ <= declared * (1 + 1e-9)
    import warnings as _w

    with _w.catch_warnings():
        _w.simplefilter("ignore")
        total = PrivacyLedger(delta=1e-4).record(search).total()
    # Each record is in 2 of the 3 training folds of each of the 2 candidates,
    # and in the refit: 5 fits' declared ρ in zCDP.
    rho = (
        2
        * (
            zcdp_from_epsilon_tight(0.5, refit.delta)
            + zcdp_from_epsilon_tight(1.0, refit.delta)
        )
        + declared
    )
    assert total.epsilon >= epsilon_from_zcdp_tight(rho, 1e-4) * (1 - 1e-9)


def test_a_large_public_iterate_adds_no_rounding_to_the_released_values(monkeypatch):
    """Poisson's start at x_bound = 1e-6 is θ[d] = b₀/c ≈ 3e6, and θ + u
    rounded to float64 moved by an ulp of it (4.7e-10) between neighbours:
    30× the sensitivity λ (review; ε ≥ 2.9 measured for a claimed 1). The
    noise now goes on u alone, and θ is added after it: the values noised
    are at most η·r·x_bound in size, and two neighbours' (y[0] = 0 or 40,
    the same released start and step) differ by at most λ."""
    import skdp.linear_model._sparse_glm as module

    n, x_bound = 20000, 1e-6
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3)) * x_bound
    y = rng.poisson(20.0, size=n).astype(float)
    y[2:502], y[0] = 1.5385, 0.0
    y_neighbour = y.copy()
    y_neighbour[0] = 40.0
    calls = gaussian_noise_calls(monkeypatch, module)
    released = []
    for target in (y, y_neighbour):
        calls.clear()
        model = DPSparseGLM(
            family="poisson", sparsity=2, x_bound=x_bound, max_iter=1, random_state=0
        ).fit(X, target)
        record = model.schedule_record_
        value, _, _ = calls[record["start_steps"] + 1]  # the first step's values
        released.append((record["start_log_mean"], model.step_sizes_[0], value))
    (b0, eta, value), (b0_n, eta_n, value_n) = released
    assert (b0, eta) == (b0_n, eta_n)  # the same public start and step
    assert abs(b0) > 1.0  # θ[d] = b₀/c is millions of λ
    move_bound = eta * model.residual_bound * x_bound
    assert np.abs(value).max() <= move_bound
    sensitivity = 2.0 * eta * model.residual_bound * x_bound / n
    assert np.abs(value - value_n).max() <= sensitivity * (1 + 1e-9)


def test_selection_rounding_bounds_the_float_scores_of_neighbours():
    """|fl(θ + fl(η·D)) − fl(θ + fl(η·D'))| <= λ·selection_rounding, with
    |η·D| <= B and |η·D − η·D'| <= λ, over θ from 1e-3 to 1e9 (λ = 1e-9:
    beyond 5e6 an ulp of θ exceeds λ)."""
    from skdp.linear_model._sparse_glm import selection_rounding

    rng = np.random.default_rng(0)
    lam, bound = 1e-9, 1e-5
    theta = rng.choice([-1, 1], 20000) * 10.0 ** rng.uniform(-3, 9, 20000)
    eta = 10.0 ** rng.uniform(-3, 0, 20000)
    D = rng.uniform(-1, 1, 20000) * bound / eta
    D_n = D + rng.uniform(-1, 1, 20000) * lam / eta
    D_n = np.clip(D_n, -bound / eta, bound / eta)
    score = np.abs(theta + eta * D)
    score_n = np.abs(theta + eta * D_n)
    factors = np.array([selection_rounding(np.array([t]), bound, lam) for t in theta])
    assert (np.abs(score - score_n) <= lam * factors).all()
    assert (np.abs(score - score_n) > lam * 1.5).any()  # rounding does matter
    assert selection_rounding(np.zeros(3), 1.0, 1e-4) < 1 + 1e-11


@pytest.mark.parametrize("learning_rate", ["auto", 0.5])
def test_every_selection_scale_covers_the_rounding(monkeypatch, learning_rate):
    """White-box: each peel's noise scale is the accounted scale times
    selection_rounding (here forced to 7), on both schedules; the privacy
    report is the planned one."""
    import skdp.linear_model._sparse_glm as module

    scales = []
    real_peel = module.peel_top_k

    def spy(scores, k, *, noise, scale, rng):
        scales.append(scale)
        return real_peel(scores, k, noise=noise, scale=scale, rng=rng)

    X, y, _ = make_sparse_glm(n_samples=2000, n_features=30, random_state=0)
    plain = DPSparseGLM(sparsity=3, learning_rate=learning_rate, random_state=0)
    plain.fit(X, y)
    monkeypatch.setattr(module, "peel_top_k", spy)
    monkeypatch.setattr(module, "selection_rounding", lambda *args: 7.0)
    model = clone(plain).fit(X, y)
    if learning_rate == "auto":
        record = model.schedule_record_
        planned = [record["pre_selection_scale"], *record["selection_scales"]]
    else:
        planned = [model.selection_noise_scale_] * model.n_iter_
    assert scales == pytest.approx([7.0 * s for s in planned], rel=1e-12)
    assert model.privacy_spent_.epsilon == plain.privacy_spent_.epsilon


@pytest.mark.parametrize("learning_rate", ["auto", 0.5])
def test_the_report_says_when_every_feature_is_selected_for_free(learning_rate):
    """sparsity >= d: no peel runs and none is paid for; the report said
    "Gumbel peels" on the released-step schedule (review)."""
    X, y, _ = make_sparse_glm(n_samples=2000, n_features=5, random_state=0)
    model = DPSparseGLM(sparsity=5, learning_rate=learning_rate, random_state=0)
    mechanism = model.fit(X, y).privacy_spent_.mechanism
    assert "selection of all features (free)" in mechanism
    assert "Gumbel" not in mechanism
    assert model.selection_noise_scale_ == 0.0
    narrow = DPSparseGLM(sparsity=2, learning_rate=learning_rate, random_state=0)
    assert "2 Gumbel peels" in narrow.fit(X, y).privacy_spent_.mechanism
