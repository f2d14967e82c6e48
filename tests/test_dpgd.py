"""The DP gradient-descent engine and the datafits it runs on."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import check_grad

from skdp._datafits import BinomialLogistic, MultinomialLogistic
from skdp._dpgd import check_datafit, clip_scale, dpgd
from skdp.accounting import ADD_REMOVE, REPLACE_ONE, epsilon_from_mu

DATAFITS = [(BinomialLogistic(), 1), (MultinomialLogistic(), 4)]


def run_dpgd(X, y, datafit=None, **overrides):
    """Call the engine with small defaults; each test states only what it varies."""
    params = dict(
        n_outputs=1,
        clip_norm=1.0,
        noise_multiplier=1.0,
        n_iter=1,
        learning_rate=1.0,
        delta=1e-5,
        rng=np.random.default_rng(0),
    )
    params.update(overrides)
    return dpgd(X, y, BinomialLogistic() if datafit is None else datafit, **params)


def _labels(datafit, k, n, rng):
    if k == 1:
        return rng.integers(0, 2, n).astype(float)
    return rng.integers(0, k, n)


@pytest.mark.parametrize(("datafit", "k"), DATAFITS)
def test_raw_grad_is_the_gradient_of_value(datafit, k):
    # value() is the mean loss, so its gradient w.r.t. z is raw_grad / n.
    rng = np.random.default_rng(0)
    n = 7
    y = _labels(datafit, k, n, rng)

    def f(z):
        return datafit.value(y, z.reshape(n, k))

    def grad(z):
        return datafit.raw_grad(y, z.reshape(n, k)).ravel() / n

    for _ in range(5):
        z0 = rng.normal(scale=3.0, size=n * k)
        assert check_grad(f, grad, z0) < 1e-6  # finite differences, step 1.5e-8


@pytest.mark.parametrize(("datafit", "k"), DATAFITS)
def test_raw_grad_respects_grad_bound(datafit, k):
    rng = np.random.default_rng(1)
    n = 2000
    y = _labels(datafit, k, n, rng)
    z = rng.normal(scale=50.0, size=(n, k))  # far into the saturated regime
    norms = np.linalg.norm(datafit.raw_grad(y, z), axis=1)
    assert norms.max() <= datafit.grad_bound
    assert norms.max() > 0.9 * datafit.grad_bound  # the bound is nearly attained


def test_check_datafit_names_missing_members():
    class Incomplete:
        def raw_grad(self, y, z):
            return z

    with pytest.raises(TypeError, match="grad_bound, inverse_link"):
        check_datafit(Incomplete())
    with pytest.raises(TypeError, match="grad_bound"):
        run_dpgd(np.ones((3, 2)), np.ones(3), Incomplete())


def test_clipped_contribution_bounded_and_replacement_moves_sum_by_2C():
    rng = np.random.default_rng(2)
    n, d, k, C = 50, 6, 3, 0.7
    X = rng.normal(scale=4.0, size=(n, d))
    g = rng.normal(scale=2.0, size=(n, k))
    row_norm = np.sqrt((X**2).sum(axis=1) + 1.0)
    clipped = g * clip_scale(g, row_norm, C)[:, None]
    # Each record's full gradient (g_i ⊗ (x_i, 1)), built explicitly here only.
    X1 = np.hstack([X, np.ones((n, 1))])
    per_record = np.einsum("ik,ij->ijk", clipped, X1).reshape(n, -1)
    assert np.linalg.norm(per_record, axis=1).max() <= C * (1 + 1e-12)
    # Records that were already small are left untouched.
    small = np.linalg.norm(g, axis=1) * row_norm <= C
    np.testing.assert_array_equal(clipped[small], g[small])
    # Replace record 0 by its mirror image: the sum moves by exactly 2C.
    g2, X2 = g.copy(), X1.copy()
    g2[0] = -g[0]
    clipped2 = g2 * clip_scale(g2, row_norm, C)[:, None]
    sum1 = np.einsum("ik,ij->jk", clipped, X1)
    sum2 = np.einsum("ik,ij->jk", clipped2, X2)
    if not small[0]:
        assert np.linalg.norm(sum1 - sum2) == pytest.approx(2 * C, rel=1e-12)
    # An arbitrary replacement never moves it by more than 2C.
    for seed in range(20):
        r = np.random.default_rng(100 + seed)
        g3, X3 = g.copy(), X1.copy()
        g3[5] = r.normal(scale=10.0, size=k)
        X3[5, :d] = r.normal(scale=10.0, size=d)
        rn3 = np.linalg.norm(X3, axis=1)
        clipped3 = g3 * clip_scale(g3, rn3, C)[:, None]
        sum3 = np.einsum("ik,ij->jk", clipped3, X3)
        assert np.linalg.norm(sum1 - sum3) <= 2 * C * (1 + 1e-12)


def _plain_gd(X, y, datafit, k, n_iter, lr, alpha):
    """Reference: unclipped, noiseless gradient descent, written independently."""
    n, d = X.shape
    w = np.zeros((d + 1, k))
    X1 = np.hstack([X, np.ones((n, 1))])
    for _ in range(n_iter):
        grad = X1.T @ datafit.raw_grad(y, X1 @ w) / n
        grad[:d] += alpha * w[:d]
        w = w - lr * grad
    return w[:d], w[d]


@pytest.mark.parametrize(("datafit", "k"), DATAFITS)
@pytest.mark.parametrize("sparse", [False, True])
def test_noise_free_engine_matches_plain_gradient_descent(datafit, k, sparse):
    rng = np.random.default_rng(3)
    n, d = 200, 5
    X = rng.normal(size=(n, d))
    y = _labels(datafit, k, n, rng)
    coef_ref, intercept_ref = _plain_gd(X, y, datafit, k, 30, 0.5, 0.01)
    coef, intercept, _ = run_dpgd(
        sp.csr_matrix(X) if sparse else X,
        y,
        datafit,
        n_outputs=k,
        clip_norm=1e6,  # above every gradient norm: clipping is a no-op
        noise_multiplier=0.0,
        n_iter=30,
        learning_rate=0.5,
        alpha=0.01,
    )
    np.testing.assert_allclose(coef, coef_ref, rtol=0, atol=1e-10)
    np.testing.assert_allclose(intercept, intercept_ref, rtol=0, atol=1e-10)


def test_without_intercept_the_intercept_stays_zero():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(100, 3))
    y = (X[:, 0] > 0).astype(float)
    _, intercept, _ = run_dpgd(X, y, n_iter=5, fit_intercept=False)
    np.testing.assert_array_equal(intercept, 0.0)


@pytest.mark.parametrize(
    ("adjacency", "factor"), [(REPLACE_ONE, 2.0), (ADD_REMOVE, 1.0)]
)
def test_noise_std_is_multiplier_times_sensitivity(adjacency, factor):
    # With X = 0 and no intercept every gradient is 0, so after one step from
    # 0 the iterate is -lr * noise / n: its spread is the noise's spread.
    n, d, C, z, lr = 10, 20000, 0.5, 3.0, 2.0
    coef, _, cost = run_dpgd(
        np.zeros((n, d)),
        np.zeros(n),
        clip_norm=C,
        noise_multiplier=z,
        learning_rate=lr,
        fit_intercept=False,
        adjacency=adjacency,
        rng=np.random.default_rng(5),
    )
    # 20000 draws: the sample std has relative standard error 0.5%; allow 2%.
    assert np.std(coef * n / lr) == pytest.approx(z * factor * C, rel=0.02)
    assert cost.mu == pytest.approx(1.0 / z, rel=1e-15)
    assert cost.adjacency == adjacency


def test_cost_composes_steps_exactly():
    X = np.ones((4, 2))
    _, _, cost = run_dpgd(
        X, np.array([0.0, 1.0, 0.0, 1.0]), noise_multiplier=10.0, n_iter=100
    )
    assert cost.mu == pytest.approx(1.0, rel=1e-15)
    assert cost.epsilon == epsilon_from_mu(1.0, 1e-5)
    assert "100 steps" in cost.mechanism


def test_post_hook_is_applied_after_every_step():
    calls = []

    def project(coef, intercept):
        calls.append(1)
        norm = np.linalg.norm(coef)
        return coef * min(1.0, 0.1 / max(norm, 1e-300)), intercept

    rng = np.random.default_rng(6)
    X = rng.normal(size=(100, 4))
    coef, _, _ = run_dpgd(
        X, (X[:, 0] > 0).astype(float), n_iter=7, learning_rate=5.0, post=project
    )
    assert len(calls) == 7
    assert np.linalg.norm(coef) <= 0.1 * (1 + 1e-12)
