"""The DP gradient-descent engine and the datafits it runs on."""

import re
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import check_grad
from scipy.special import expit

from skdp import _clipping, _dpgd
from skdp._datafits import BinomialLogistic, MultinomialLogistic
from skdp._dpgd import (
    Adam,
    canonical_design,
    check_datafit,
    clip_scale,
    clipped_gradient_sum,
    dpgd,
    injected_gradient,
    row_norms,
)
from skdp.accounting import ADD_REMOVE, REPLACE_ONE_USER, epsilon_from_mu
from skdp.exceptions import MechanismFailedError

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


def test_logistic_residual_is_scipy_expit_minus_y_within_a_few_ulp():
    # The in-place sigmoid is expit's own formula, 1/(1 + e^{-z}), on the
    # whole line: saturated tails (e^{-z} = inf gives 0), ±inf, signed zeros,
    # subnormals; a NaN stays NaN (the engine then drops the record). numpy's
    # exp and the libm exp behind scipy's expit may differ in the last bit on
    # some CPUs (seen on AVX-512: 2% of draws; numpy 1.25's exp: 3 ulp), so
    # the sigmoid is compared to 4 ulp and the residual to 4 ulp of the
    # sigmoid plus the subtraction's own rounding; never bit for bit across
    # libraries.
    rng = np.random.default_rng(2)
    z = np.concatenate(
        [
            rng.normal(scale=5.0, size=10_000),
            rng.uniform(-800.0, 800.0, size=10_000),
            [np.inf, -np.inf, np.nan, 0.0, -0.0, 709.8, -709.8, 745.2, -745.2, 5e-324],
        ]
    )[:, None]
    y = (rng.random(z.shape[0]) < 0.5).astype(float)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning escapes either
        sigmoid = BinomialLogistic().raw_grad(np.zeros(z.shape[0]), z)
        residual = BinomialLogistic().raw_grad(y, z)
    expected_sigmoid = expit(z)
    np.testing.assert_array_equal(np.isnan(sigmoid), np.isnan(expected_sigmoid))
    finite = ~np.isnan(expected_sigmoid)
    np.testing.assert_array_max_ulp(sigmoid[finite], expected_sigmoid[finite], 4)
    expected = expected_sigmoid[:, 0] - y
    np.testing.assert_array_equal(np.isnan(residual[:, 0]), np.isnan(expected))
    tolerance = 4 * np.spacing(expected_sigmoid[:, 0]) + np.spacing(np.abs(expected))
    error = np.abs(residual[:, 0] - expected)
    assert np.all(error[finite[:, 0]] <= tolerance[finite[:, 0]])


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


# --------------------------------------------------------------------------
# Noise: its scale, on every coordinate (intercept included), fresh each step
# --------------------------------------------------------------------------


class _ZeroGradient:
    """A datafit whose every gradient is 0: the engine's output is its noise."""

    grad_bound = 1.0

    def raw_grad(self, y, z):
        return np.zeros_like(z)

    def inverse_link(self, z):
        return z


def _noise_only_run(n_iter, *, n=10, d=3, k=20000, C=0.5, z=3.0, lr=2.0, seed=5):
    """One engine run whose output is ``-lr/n · Σ_t w_t`` exactly (α = 0)."""
    coef, intercept, _ = run_dpgd(
        np.ones((n, d)),
        np.zeros(n),
        _ZeroGradient(),
        n_outputs=k,
        clip_norm=C,
        noise_multiplier=z,
        n_iter=n_iter,
        learning_rate=lr,
        rng=np.random.default_rng(seed),
    )
    return coef * n / lr, intercept * n / lr


def test_noise_std_is_multiplier_times_2C_on_coef_and_intercept():
    # Replace-one sensitivity of the clipped sum is 2C; every coordinate of
    # the sum, the intercept's included, gets N(0, (z·2C)²).
    C, z = 0.5, 3.0
    coef, intercept = _noise_only_run(1, C=C, z=z)
    # 20000 draws per row: the sample std has relative standard error 0.5%;
    # allow 2% (4 standard errors).
    for row in [*coef, intercept]:
        assert np.std(row) == pytest.approx(z * 2 * C, rel=0.02)
        assert np.mean(row) == pytest.approx(0.0, abs=4 * z * 2 * C / 141)


@pytest.mark.parametrize("n_iter", [2, 5])
def test_fresh_independent_noise_at_every_step(n_iter):
    # T steps add T independent draws: std grows as sqrt(T). Reusing one draw
    # would give T·std (2x too large at T = 4... here at least 1.4x), and
    # correlated coordinates would show in the cross-correlations.
    C, z = 0.5, 3.0
    coef, intercept = _noise_only_run(n_iter, C=C, z=z, seed=11)
    expected = z * 2 * C * np.sqrt(n_iter)
    for row in [*coef, intercept]:
        assert np.std(row) == pytest.approx(expected, rel=0.02)  # 4 s.e.
    # Coordinates are independent: |corr| ≤ 4/sqrt(20000) = 0.028.
    corr = np.corrcoef(np.vstack([coef, intercept]))
    assert np.abs(corr[np.triu_indices_from(corr, k=1)]).max() < 0.03


def test_noise_differs_between_steps_exactly():
    # Exact check of the same property with the per-step iterates: the
    # increments of a zero-gradient run are the step noises; no two equal.
    steps = []

    def record(coef, intercept):
        steps.append(np.append(coef.ravel(), intercept))
        return coef, intercept

    run_dpgd(
        np.ones((4, 2)),
        np.zeros(4),
        _ZeroGradient(),
        n_outputs=3,
        n_iter=4,
        post=record,
    )
    increments = np.diff(np.vstack([np.zeros_like(steps[0]), *steps]), axis=0)
    assert np.all(increments != 0)
    for i in range(4):
        for j in range(i):
            assert not np.any(np.isclose(increments[i], increments[j]))


# --------------------------------------------------------------------------
# Clipping, checked exactly against an independent oracle
# --------------------------------------------------------------------------


def _oracle_dpgd(
    X, y, datafit, k, n_iter, lr, alpha, C, fit_intercept, adam=False, average=None
):
    """Noise-free DP-GD written independently: explicit per-record gradients."""
    X = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=np.float64)
    n, d = X.shape
    X1 = np.hstack([X, np.ones((n, 1)) if fit_intercept else np.zeros((n, 1))])
    w = np.zeros((d + 1, k))
    m, v, ema = np.zeros_like(w), np.zeros_like(w), np.zeros_like(w)
    for t in range(1, n_iter + 1):
        r = datafit.raw_grad(y, X1 @ w)
        per_record = np.einsum("ik,ij->ijk", r, X1).reshape(n, -1)
        norms = np.linalg.norm(per_record, axis=1)
        clipped = per_record * np.minimum(1.0, C / np.maximum(norms, 1e-300))[:, None]
        grad = clipped.sum(axis=0).reshape(d + 1, k) / n
        grad[:d] += alpha * w[:d]
        if adam:  # Kingma & Ba (2015), Algorithm 1, with ε → 0
            m = 0.9 * m + 0.1 * grad
            v = 0.999 * v + 0.001 * grad**2
            m_hat, v_hat = m / (1 - 0.9**t), v / (1 - 0.999**t)
            w = w - lr * np.divide(m_hat, np.sqrt(v_hat), where=v_hat > 0, out=0 * m)
        else:
            w = w - lr * grad
        if average is not None:
            ema = average * ema + (1 - average) * w
    if average is not None:
        w = ema / (1 - average**n_iter)
    return w[:d], w[d]


@pytest.mark.parametrize(("datafit", "k"), DATAFITS)
@pytest.mark.parametrize("form", ["dense", "csr", "float32", "csr-float32"])
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_clipped_engine_matches_oracle(datafit, k, form, fit_intercept):
    # Rows of norm ~0.6 and C = 0.3: whether the intercept's feature is inside
    # the clipped norm changes every clipped gradient, and about half the
    # records are clipped, half not (clipping removed would fail too).
    rng = np.random.default_rng(7)
    n, d = 60, 4
    X = rng.normal(scale=0.3, size=(n, d))
    X[::5] *= 20.0  # some far-out records, clipped hard
    y = _labels(datafit, k, n, rng)
    Xf = X.astype(np.float32) if "float32" in form else X
    Xin = sp.csr_matrix(Xf) if form.startswith("csr") else Xf
    coef, intercept, _ = run_dpgd(
        Xin,
        y,
        datafit,
        n_outputs=k,
        clip_norm=0.3,
        noise_multiplier=0.0,
        n_iter=6,
        learning_rate=2.0,
        alpha=0.01,
        fit_intercept=fit_intercept,
    )
    coef_ref, intercept_ref = _oracle_dpgd(
        Xf, y, datafit, k, 6, 2.0, 0.01, 0.3, fit_intercept
    )
    np.testing.assert_allclose(coef, coef_ref, rtol=0, atol=1e-12)
    np.testing.assert_allclose(
        intercept, intercept_ref if fit_intercept else 0.0, rtol=0, atol=1e-12
    )


@pytest.mark.parametrize(("datafit", "k"), DATAFITS)
@pytest.mark.parametrize("fit_intercept", [True, False])
def test_noise_free_adam_with_averaging_matches_oracle(datafit, k, fit_intercept):
    rng = np.random.default_rng(8)
    X = rng.normal(scale=0.5, size=(80, 5))
    y = _labels(datafit, k, 80, rng)
    coef, intercept, _ = run_dpgd(
        X,
        y,
        datafit,
        n_outputs=k,
        clip_norm=0.4,
        noise_multiplier=0.0,
        n_iter=25,
        learning_rate=0.1,
        alpha=0.01,
        fit_intercept=fit_intercept,
        solver="adam",
        average=0.9,
    )
    coef_ref, intercept_ref = _oracle_dpgd(
        X, y, datafit, k, 25, 0.1, 0.01, 0.4, fit_intercept, adam=True, average=0.9
    )
    np.testing.assert_allclose(coef, coef_ref, rtol=0, atol=1e-10)
    np.testing.assert_allclose(
        intercept, intercept_ref if fit_intercept else 0.0, rtol=0, atol=1e-10
    )


def test_adam_epsilon_is_the_noise_scale():
    # A coordinate whose gradient is pure noise of std s has sqrt(v̂) ≈ s;
    # with ε = s the first step is lr·g/(|g| + s), not lr·sign(g).
    step = Adam(learning_rate=0.5, noise_scale=2.0)
    g = np.array([[2.0, -6.0, 0.0]])
    np.testing.assert_allclose(step(g), 0.5 * g / (np.abs(g) + 2.0), rtol=1e-12)
    g2 = np.array([[1.0, 1.0, 1.0]])
    m = 0.9 * 0.1 * g + 0.1 * g2
    v = 0.999 * 0.001 * g**2 + 0.001 * g2**2
    m_hat, v_hat = m / (1 - 0.9**2), v / (1 - 0.999**2)
    np.testing.assert_allclose(step(g2), 0.5 * m_hat / (np.sqrt(v_hat) + 2.0))


def test_unknown_solver_is_refused():
    with pytest.raises(ValueError, match="solver"):
        run_dpgd(np.ones((4, 2)), np.zeros(4), solver="lbfgs")


# --------------------------------------------------------------------------
# Soundness for every finite input
# --------------------------------------------------------------------------

BIG = 1e308


def _hostile_rows(dtype=np.float64):
    """Finite rows that break naive norms: overflow, underflow, inf − inf."""
    top = float(np.finfo(dtype).max)
    tiny = float(np.finfo(dtype).smallest_subnormal)
    return np.array(
        [
            [top, top, top, 0.0],  # ||x||² and even ||x|| overflow
            [top, -top, 0.0, 0.0],  # x @ coef = inf − inf for coef ∝ (1, 1)
            [1.3e154 if dtype == np.float64 else 2e19, 0.0, 0.0, 0.0],
            [tiny, 0.0, 0.0, 0.0],  # ||x||² underflows to 0
            [0.0, 0.0, 0.0, 0.0],
            [1.0, -2.0, 0.5, 3.0],
        ],
        dtype=dtype,
    )


def _duplicated_csr(dense, copies=2):
    """An un-merged CSR matrix storing each value of ``dense`` as ``copies`` parts.

    The parts are ``value / copies``; with ``copies`` a power of two they sum
    back to the value exactly, even for the largest floats (not for
    subnormals, whose parts may underflow).
    """
    coo = sp.coo_matrix(dense)
    rows = np.repeat(coo.row, copies)
    cols = np.repeat(coo.col, copies)
    vals = np.repeat(coo.data / copies, copies).astype(dense.dtype)
    indptr = np.concatenate(
        [[0], np.cumsum(np.bincount(rows, minlength=dense.shape[0]))]
    )
    X = sp.csr_matrix((vals, cols, indptr), shape=dense.shape)
    assert X.nnz == copies * coo.nnz
    return X


def _forms(dense):
    return {
        "dense": dense,
        "csr": sp.csr_matrix(dense),
        "csr-duplicates": _duplicated_csr(dense),
    }


def test_duplicated_csr_fixture_is_the_same_matrix():
    dense = np.array([[20.0, 0.0, 1.0], [0.0, 0.0, 0.0]])
    X = _duplicated_csr(dense, copies=400)
    assert not X.has_canonical_format and X.nnz == 800
    np.testing.assert_allclose(X.toarray(), dense, rtol=1e-12)
    # Exact, but for the smallest subnormal, whose halves underflow to 0.
    np.testing.assert_allclose(
        _duplicated_csr(_hostile_rows()).toarray(), _hostile_rows(), rtol=0, atol=1e-323
    )


@pytest.mark.parametrize(("datafit", "k"), DATAFITS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("form", ["dense", "csr", "csr-duplicates"])
def test_every_record_contributes_at_most_C(datafit, k, dtype, form):
    # For each hostile record alone (n = 1) and adversarial iterates (huge,
    # mixed-sign, zero), the clipped gradient the engine sums is finite and
    # has norm ≤ C, measured here in float64 without overflow.
    rows = _hostile_rows(dtype)
    C = 0.7
    iterates = [
        (np.zeros((4, k)), np.zeros(k)),
        (np.full((4, k), 1e10), np.full(k, -3.0)),
        (np.linspace(-1, 1, 4 * k).reshape(4, k), np.ones(k)),
    ]
    for i in range(rows.shape[0]):
        X = canonical_design(_forms(rows[i : i + 1])[form])
        row_norm = np.hypot(row_norms(X), 1.0)
        for label in range(2):
            y = np.array([float(label)] if k == 1 else [label])
            for coef, intercept in iterates:
                total = clipped_gradient_sum(
                    X, y, datafit, coef, intercept, row_norm, C
                )
                assert np.isfinite(total).all()
                assert np.linalg.norm(total) <= C * (1 + 1e-12)


@pytest.mark.parametrize(("datafit", "k"), DATAFITS)
def test_a_non_finite_gradient_drops_only_its_own_record(datafit, k):
    # Record 0 gives z = 1e400 − 1e400 = inf − inf = NaN at coef = (1e200,
    # 1e200): its gradient is not finite and must contribute nothing (its
    # clip factor, ~1e-200, would not hide a wrong gradient), while every
    # other record's clipped gradient is summed as usual (zeroing the whole
    # block would let one record erase everyone else's contribution).
    rng = np.random.default_rng(12)
    ordinary = rng.normal(size=(20, 2))
    X = np.vstack([[1e200, -1e200], ordinary])
    y = _labels(datafit, k, 21, rng)
    coef, intercept = np.full((2, k), 1e200), np.zeros(k)
    row_norm = np.hypot(row_norms(X), 1.0)
    total = clipped_gradient_sum(X, y, datafit, coef, intercept, row_norm, 0.5)
    rest = clipped_gradient_sum(
        ordinary, y[1:], datafit, coef, intercept, row_norm[1:], 0.5
    )
    np.testing.assert_allclose(total, rest, rtol=1e-12, atol=0)
    assert np.abs(rest).sum() > 0


def test_row_norms_refuse_a_non_canonical_csr_matrix():
    X = _duplicated_csr(np.array([[20.0, 0.0], [0.0, 1.0]]), copies=400)
    with pytest.raises(ValueError, match="canonical"):
        row_norms(X)


def test_duplicates_are_merged_before_norms():
    # One record of merged value 20 stored as 400 entries of 0.05: its norm
    # is 20, not sqrt(400 · 0.05²) = 1 (the pre-fix bug: clip C·sqrt(m)).
    X = _duplicated_csr(np.array([[20.0, 0.0], [0.0, 1.0]]), copies=400)
    np.testing.assert_allclose(row_norms(canonical_design(X)), [20.0, 1.0], rtol=1e-12)
    assert not X.has_canonical_format  # the caller's matrix is left alone


def test_merged_duplicates_that_overflow_become_the_largest_finite_value():
    # A record stored as duplicates that sum past the float range is read as
    # the largest finite value of its sign, not refused: a refusal that one
    # record triggers while its neighbour fits would be ε = ∞ for that pair.
    big = np.finfo(np.float64).max
    X = sp.csr_matrix(
        (np.array([1e308, 1e308, -1e308, -1e308, 2.0]), [0, 0, 1, 1, 1], [0, 4, 5]),
        shape=(2, 2),
    )
    merged = canonical_design(X)
    np.testing.assert_array_equal(merged.toarray(), [[big, -big], [0.0, 2.0]])
    assert not X.has_canonical_format  # the caller's matrix is left alone


def test_a_record_whose_duplicates_overflow_fits_as_its_finite_clip():
    """The fit with the overflowing record equals the fit with the record
    written as (±largest float) directly, noise for noise (one seed for the
    two fits, on purpose)."""
    from skdp import DPLogisticRegression

    big = np.finfo(np.float64).max
    rng = np.random.default_rng(0)
    base = rng.normal(size=(30, 2))
    dup = sp.csr_matrix(
        (np.array([1e308, 1e308, -1e308, -1e308]), [0, 0, 1, 1], [0, 4]),
        shape=(1, 2),
    )
    overflowing = sp.vstack([sp.csr_matrix(base), dup], format="csr")
    overflowing.has_canonical_format = False
    explicit = sp.csr_matrix(np.vstack([base, [[big, -big]]]))
    y = np.arange(31) % 2
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "random_state=.* seeds the privacy")
        fits = [
            DPLogisticRegression(epsilon=1.0, classes=[0, 1], random_state=0).fit(X, y)
            for X in (overflowing, explicit)
        ]
    assert np.isfinite(fits[0].coef_).all()
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
    np.testing.assert_array_equal(fits[0].intercept_, fits[1].intercept_)


def test_row_norms_are_exact_for_any_finite_row():
    rows = _hostile_rows()
    expected = [np.inf, np.inf, 1.3e154, 5e-324, 0.0, np.sqrt(14.25)]
    got = row_norms(rows)
    np.testing.assert_allclose(got, expected, rtol=1e-15)
    np.testing.assert_allclose(row_norms(sp.csr_matrix(rows)), expected, rtol=1e-15)
    # float32 rows are measured in float64: ||(3.4e38,)*3|| = 5.9e38, no inf.
    rows32 = _hostile_rows(np.float32)
    top = float(np.finfo(np.float32).max)
    np.testing.assert_allclose(
        row_norms(rows32)[:3], [top * np.sqrt(3), top * np.sqrt(2), 2e19], rtol=1e-7
    )


@pytest.mark.parametrize(("datafit", "k"), DATAFITS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("form", ["dense", "csr", "csr-duplicates"])
def test_hostile_data_give_a_finite_model(datafit, k, dtype, form):
    # Many steps with noise, hostile records mixed with ordinary ones: before
    # the fix, 0·inf in the clip turned every coefficient into NaN.
    rng = np.random.default_rng(3)
    ordinary = rng.normal(size=(30, 4)).astype(dtype)
    dense = np.vstack([_hostile_rows(dtype), ordinary])
    y = _labels(datafit, k, dense.shape[0], rng)
    coef, intercept, _ = run_dpgd(
        _forms(dense)[form], y, datafit, n_outputs=k, n_iter=20, learning_rate=5.0
    )
    assert np.isfinite(coef).all() and np.isfinite(intercept).all()


@pytest.mark.parametrize("sparse", [False, True])
def test_float32_blocks_match_float64(monkeypatch, sparse):
    # float32 data are read a block of rows at a time, in float64: the result
    # equals the float64 run on the same values (same noise) up to summation
    # order. Tiny blocks force many of them.
    monkeypatch.setattr(_clipping, "_BLOCK_VALUES", 37)
    rng = np.random.default_rng(9)
    X32 = rng.normal(size=(101, 6)).astype(np.float32)
    y = rng.integers(0, 2, 101).astype(float)
    to = sp.csr_matrix if sparse else np.asarray
    a = run_dpgd(to(X32), y, n_iter=5, rng=np.random.default_rng(1))
    b = run_dpgd(to(X32.astype(np.float64)), y, n_iter=5, rng=np.random.default_rng(1))
    np.testing.assert_allclose(a[0], b[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(a[1], b[1], rtol=0, atol=1e-12)


@pytest.mark.parametrize("block_values", [None, 37])
def test_injected_gradient_replaces_one_record_clipped_to_C(monkeypatch, block_values):
    """The audit hook: record r's clipped gradient is replaced by the canary's,
    itself clipped to exactly C whatever its raw norm (in every block layout);
    outside the context the sum is the plain one again."""
    if block_values is not None:
        monkeypatch.setattr(_clipping, "_BLOCK_VALUES", block_values)
    rng = np.random.default_rng(21)
    n, d, k, C, r = 40, 5, 3, 0.8, 17
    X = rng.normal(scale=3.0, size=(n, d)).astype(np.float32)
    y = rng.integers(0, k, n)
    coef, intercept = rng.normal(size=(d, k)), rng.normal(size=k)
    row_norm = np.hypot(row_norms(X), 1.0)
    datafit = MultinomialLogistic()
    plain = clipped_gradient_sum(X, y, datafit, coef, intercept, row_norm, C)
    without_r = clipped_gradient_sum(
        np.delete(X, r, axis=0),
        np.delete(y, r),
        datafit,
        coef,
        intercept,
        np.delete(row_norm, r),
        C,
    )
    raw = rng.normal(size=(d + 1, k)) * 1e150
    with injected_gradient(r, lambda X, shape: raw) as hook:
        first = clipped_gradient_sum(X, y, datafit, coef, intercept, row_norm, C)
        second = clipped_gradient_sum(X, y, datafit, coef, intercept, row_norm, C)
    canary = first - without_r
    assert np.linalg.norm(canary) == pytest.approx(C, rel=1e-9)
    np.testing.assert_allclose(canary, C * raw / np.linalg.norm(raw), atol=1e-9)
    np.testing.assert_array_equal(first, second)
    assert hook.n_calls == 2
    # A raw gradient already below C is kept as it is; the hook is gone after.
    with injected_gradient(r, lambda X, shape: np.full(shape, 0.01)):
        small = clipped_gradient_sum(X, y, datafit, coef, intercept, row_norm, C)
    np.testing.assert_allclose(small - without_r, 0.01, atol=1e-9)
    after = clipped_gradient_sum(X, y, datafit, coef, intercept, row_norm, C)
    np.testing.assert_array_equal(after, plain)


# --------------------------------------------------------------------------
# What the engine refuses
# --------------------------------------------------------------------------


@pytest.mark.parametrize("adjacency", [ADD_REMOVE, REPLACE_ONE_USER, "swap"])
def test_engine_refuses_adjacencies_it_does_not_implement(adjacency):
    # It divides by n, which is private under add/remove.
    with pytest.raises(ValueError, match="adjacency"):
        run_dpgd(np.ones((4, 2)), np.zeros(4), adjacency=adjacency)


@pytest.mark.parametrize(("lr", "alpha"), [(2.0, 1.0), (1.0, 2.0), (100.0, 0.05)])
def test_diverging_step_size_is_refused_before_any_work(lr, alpha):
    with pytest.raises(ValueError, match="diverge"):
        run_dpgd(np.ones((4, 2)), np.zeros(4), learning_rate=lr, alpha=alpha)


def test_non_finite_release_raises():
    def explode(coef, intercept):
        return coef * np.inf, intercept

    with pytest.raises(MechanismFailedError, match="non-finite"):
        run_dpgd(np.ones((4, 2)), np.zeros(4), post=explode)


def test_progress_header_states_mu_only_when_the_guarantee_is_gdp(capsys):
    from skdp.accounting import REPLACE_ONE, PrivacyCost

    gdp = PrivacyCost.from_gdp(0.5, delta=1e-5, adjacency=REPLACE_ONE)
    not_gdp = PrivacyCost(1.0, 1e-5, None, REPLACE_ONE, "peeling")
    for cost in (gdp, not_gdp):
        _dpgd._Progress("Demo mechanism", 3, verbose=1).start(cost, 2.0, 10, 4)
    gdp_line, other_line = capsys.readouterr().out.splitlines()
    assert "mu = 0.5" in gdp_line and "10 records of 4 features" in gdp_line
    assert "mu" not in other_line and "(1, 1e-05)-DP (replace one record)" in other_line


def test_a_proved_sensitivity_replaces_2C_in_the_noise_and_the_report(monkeypatch):
    """A caller with a proof of a smaller step sensitivity (DPBradleyTerry's
    sqrt(6) for comparison rows) passes it: the noise std is then
    noise_multiplier × sensitivity, the guarantee still sqrt(T)/z, and the
    report names the sensitivity; without it the std is z·2C."""
    X = np.zeros((5, 2))
    y = np.zeros(5)
    draws = []

    def spy(value, std, rng):
        draws.append(std)
        return np.asarray(value, dtype=float)

    monkeypatch.setattr(_dpgd, "add_gaussian_noise", spy)
    _, _, cost = run_dpgd(X, y, noise_multiplier=2.0, n_iter=4, sensitivity=2.5)
    _, _, default = run_dpgd(X, y, noise_multiplier=2.0, n_iter=4)
    assert draws == [5.0] * 4 + [4.0] * 4
    assert cost.mu == pytest.approx(1.0, rel=1e-15) and default.mu == cost.mu
    assert "step sensitivity 2.5" in cost.mechanism
    assert "step sensitivity 2," in default.mechanism


def test_dense_float64_is_read_in_fortran_order_without_touching_the_input():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(50, 7))
    before = X.copy()
    Xf = canonical_design(X)
    assert Xf.flags.f_contiguous and Xf is not X
    np.testing.assert_array_equal(Xf, before)
    assert X.flags.c_contiguous and np.array_equal(X, before)
    assert canonical_design(Xf) is Xf  # already in Fortran order: no copy
    X32 = X.astype(np.float32)
    assert canonical_design(X32) is X32  # float32 is read in blocks, never copied


@pytest.mark.parametrize(("datafit", "k"), DATAFITS)
@pytest.mark.parametrize("order", ["C", "F"])
def test_many_blocks_in_either_order_match_one_block(monkeypatch, datafit, k, order):
    # The per-block kernel (and the one-output clip to ±C/||x̃||) gives the
    # sum of one block up to summation order, whatever the blocking; records
    # far out (clipped hard), near zero (not clipped) and of infinite-norm
    # iterate products are all in it.
    rng = np.random.default_rng(21)
    X = np.asarray(rng.normal(scale=0.3, size=(203, 5)), order=order)
    X[::7] *= 1e3
    X[1::9] *= 1e-6
    y = _labels(datafit, k, 203, rng)
    coef, intercept = rng.normal(size=(5, k)), rng.normal(size=k)
    whole = canonical_design(X)
    row_norm = np.hypot(row_norms(whole), 1.0)
    expected = clipped_gradient_sum(whole, y, datafit, coef, intercept, row_norm, 0.4)
    monkeypatch.setattr(_clipping, "_BLOCK_VALUES", 23)
    blocked = canonical_design(X)
    got = clipped_gradient_sum(blocked, y, datafit, coef, intercept, row_norm, 0.4)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    # and against the explicit per-record clip, record by record
    X1 = np.hstack([X, np.ones((203, 1))])
    per_record = np.einsum("ik,ij->ijk", datafit.raw_grad(y, X @ coef + intercept), X1)
    per_record = per_record.reshape(203, -1)
    norms = np.linalg.norm(per_record, axis=1)
    clipped = per_record * np.minimum(1.0, 0.4 / np.maximum(norms, 1e-300))[:, None]
    np.testing.assert_allclose(
        got, clipped.sum(axis=0).reshape(6, k), rtol=1e-10, atol=1e-12
    )


# --------------------------------------------------------------------------
# Gaps found by mutation testing of skdp/_dpgd.py and skdp/_datafits.py
# --------------------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 2, 3])
def test_clip_scale_matches_an_explicit_norm_for_every_output_count(k):
    # clip_scale has its own one-output branch (|g|, no square to overflow),
    # used by DPRandomFeaturesRegressor; the factor is min(1, C/(||g||·||x̃||))
    # with ||g|| over *all* k outputs (two outputs must not take the
    # one-output branch), 1 for a zero gradient even on a row of infinite
    # norm, 0 when the product overflows, without a floating-point warning
    # (DPRandomFeaturesRegressor calls it outside any np.errstate). Oracle:
    # math.hypot per record.
    import math

    rng = np.random.default_rng(31)
    C = 0.6
    g = rng.normal(scale=2.0, size=(40, k))
    row_norm = rng.uniform(0.1, 3.0, size=40)
    g[0], row_norm[0] = 0.0, np.inf  # zero gradient, infinite row: factor 1
    g[1], row_norm[1] = 1e200, 1e200  # the product overflows: factor 0
    g[2, 0], row_norm[2] = 1e160, 1.0  # one output: |g| itself, no overflow
    g[3] = 0.0  # zero gradient, finite row
    expected = []
    for gi, ri in zip(g, row_norm.tolist(), strict=True):
        norm = math.hypot(*gi) * ri if math.hypot(*gi) > 0 else 0.0
        expected.append(1.0 if norm == 0 else min(1.0, C / norm))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 0·inf and overflow stay silent
        got = clip_scale(g.copy(), row_norm, C)
    if k > 1:  # ||g||² overflows with several outputs: any factor up to C/1e160
        assert 0.0 <= got[2] <= expected[2]
        got[2] = expected[2]
    np.testing.assert_allclose(got, expected, rtol=1e-15, atol=0)
    assert got[0] == 1.0 and got[1] == 0.0 and got[3] == 1.0


@pytest.mark.parametrize(
    ("datafit", "k"),
    [(BinomialLogistic(), 1)] + [(MultinomialLogistic(), k) for k in (2, 3)],
)
def test_every_output_count_clips_the_whole_record_gradient(datafit, k):
    # The engine's one-output clip (g_i to ±C/||x̃_i||) must be taken for one
    # output only: a two-output record clipped on its first column alone
    # would leave the second unbounded. Explicit per-record oracle; rows far
    # out so that almost every record is clipped.
    rng = np.random.default_rng(32)
    n, d, C = 30, 3, 0.5
    X = rng.normal(scale=5.0, size=(n, d))
    y = _labels(datafit, k, n, rng)
    coef, intercept = rng.normal(size=(d, k)), rng.normal(size=k)
    row_norm = np.hypot(row_norms(X), 1.0)
    got = clipped_gradient_sum(X, y, datafit, coef, intercept, row_norm, C)
    X1 = np.hstack([X, np.ones((n, 1))])
    per_record = np.einsum("ik,ij->ijk", datafit.raw_grad(y, X @ coef + intercept), X1)
    per_record = per_record.reshape(n, -1)
    norms = np.linalg.norm(per_record, axis=1)
    assert (norms > C).sum() >= n // 2
    clipped = per_record * np.minimum(1.0, C / norms)[:, None]
    np.testing.assert_allclose(
        got, clipped.sum(axis=0).reshape(d + 1, k), rtol=1e-12, atol=1e-12
    )


@pytest.mark.parametrize(("datafit", "k"), DATAFITS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_hostile_records_raise_no_floating_point_warning(datafit, k, dtype):
    # Norms past the float range, inf − inf predictors and overflowing
    # duplicates are all handled under np.errstate: a RuntimeWarning that
    # only some records trigger would tell who is in the data (and turns
    # into an error under -W error), so none may escape a fit.
    rng = np.random.default_rng(33)
    dense = np.vstack([_hostile_rows(dtype), rng.normal(size=(6, 4)).astype(dtype)])
    y = _labels(datafit, k, dense.shape[0], rng)
    top = float(np.finfo(dtype).max)
    overflowing = sp.csr_matrix(
        (np.array([top, top, 1.0], dtype=dtype), [0, 0, 1], [0, 2, 3]), shape=(2, 4)
    )
    overflowing.has_canonical_format = False
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for X in _forms(dense).values():
            run_dpgd(X, y, datafit, n_outputs=k, n_iter=3, learning_rate=5.0)
        run_dpgd(overflowing, y[:2], datafit, n_outputs=k, n_iter=2)


@pytest.mark.parametrize(
    ("form", "record"),
    [("dense-float32", 0), ("dense-float32", 14), ("csr-float64", 0)],
)
def test_injected_gradient_skips_its_record_at_block_boundaries(
    monkeypatch, form, record
):
    # Blocks of 7 rows (float32, d = 5): record 14 starts a block and ends
    # the previous one, record 0 starts the first; a float64 CSR matrix is
    # one whole block. The replaced record must be left out exactly once,
    # wherever it falls.
    monkeypatch.setattr(_clipping, "_BLOCK_VALUES", 37)
    rng = np.random.default_rng(34)
    n, d, k, C = 40, 5, 3, 0.8
    X = rng.normal(scale=3.0, size=(n, d))
    X = X.astype(np.float32) if form == "dense-float32" else sp.csr_matrix(X)
    y = rng.integers(0, k, n)
    coef, intercept = rng.normal(size=(d, k)), rng.normal(size=k)
    row_norm = np.hypot(row_norms(X), 1.0)
    datafit = MultinomialLogistic()
    keep = np.delete(np.arange(n), record)
    without_r = clipped_gradient_sum(
        X[keep], y[keep], datafit, coef, intercept, row_norm[keep], C
    )
    raw = rng.normal(size=(d + 1, k))
    with injected_gradient(record, lambda X, shape: raw):
        got = clipped_gradient_sum(X, y, datafit, coef, intercept, row_norm, C)
    np.testing.assert_allclose(
        got - without_r, C * raw / np.linalg.norm(raw), rtol=0, atol=1e-9
    )


def test_injected_gradient_reads_the_design_once_and_reclips_for_a_new_clip():
    # The canary function receives the engine's X and is called once per
    # (shape, clip); a new clip norm within the same context is applied
    # (a cached canary clipped to a larger C would exceed the new bound); a
    # non-finite canary contributes 0 like a record; a flat canary is put in
    # the engine's layout, and one of the wrong size is refused (it would
    # otherwise be broadcast over every coordinate row, norm sqrt(d+1)·C).
    rng = np.random.default_rng(35)
    n, d, k = 20, 3, 2
    X = rng.normal(size=(n, d))
    y = rng.integers(0, k, n)
    coef, intercept = np.zeros((d, k)), np.zeros(k)
    row_norm = np.hypot(row_norms(X), 1.0)
    datafit = MultinomialLogistic()
    without_0 = {
        C: clipped_gradient_sum(X[1:], y[1:], datafit, coef, intercept, row_norm[1:], C)
        for C in (1.0, 0.1)
    }
    raw = rng.normal(size=(d + 1) * k) * 100.0  # flat, norm far above C
    seen = []

    def canary(design, shape):
        seen.append(design)
        return raw

    with injected_gradient(0, canary):
        for C in (1.0, 1.0, 0.1):
            got = clipped_gradient_sum(X, y, datafit, coef, intercept, row_norm, C)
            expected = C * raw.reshape(d + 1, k) / np.linalg.norm(raw)
            np.testing.assert_allclose(got - without_0[C], expected, atol=1e-12)
    assert len(seen) == 2 and all(s is X for s in seen)
    with injected_gradient(0, lambda X, shape: np.full(shape, np.nan)):
        got = clipped_gradient_sum(X, y, datafit, coef, intercept, row_norm, 1.0)
    np.testing.assert_allclose(got, without_0[1.0], rtol=0, atol=1e-12)
    with injected_gradient(0, lambda X, shape: np.ones(k)):
        with pytest.raises(ValueError):
            clipped_gradient_sum(X, y, datafit, coef, intercept, row_norm, 1.0)


def test_secure_noise_is_accounted_as_secure_noise():
    # A secure source adds discrete Gaussian noise on a grid, whose cost is
    # the zCDP one of secure_noise_cost (slack 2^-16 per step), not the
    # continuous sqrt(T)/z-GDP (which would understate ε).
    from skdp._secure import SecureNoise
    from skdp.accounting import REPLACE_ONE, gaussian_cost, secure_noise_cost

    secure = SecureNoise(bytes_source=np.random.default_rng(0).bytes)
    _, _, cost = run_dpgd(
        np.ones((4, 2)),
        np.array([0.0, 1.0, 0.0, 1.0]),
        noise_multiplier=2.0,
        n_iter=3,
        rng=secure,
    )
    expected = secure_noise_cost(2.0, 3, delta=1e-5, adjacency=REPLACE_ONE)
    fast = gaussian_cost(2.0, 3, delta=1e-5, adjacency=REPLACE_ONE)
    assert cost.epsilon == expected.epsilon > fast.epsilon
    assert cost.mu is None


def test_progress_output_is_silent_by_default_and_counts_its_lines(capsys):
    # verbose=0 prints nothing; 1 prints a header naming n and d, a line at
    # every tenth of the run (every step below 20 steps) and at the last
    # step, and a summary; 2 a line per step. Step lines state the iterate's
    # norm (already private).
    X = np.ones((10, 3))
    y = np.array([0.0, 1.0] * 5)
    run_dpgd(X, y, n_iter=25)
    assert capsys.readouterr().out == ""
    run_dpgd(X, y, n_iter=25, verbose=1)
    lines = capsys.readouterr().out.splitlines()
    assert "n = 10 records of 3 features" in lines[0]
    steps = [line for line in lines if "step " in line]
    assert [s.split()[2] for s in steps] == [
        f"{t}/25:" for t in (2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 25)
    ]
    assert all("||coef|| = " in s for s in steps)
    assert lines[-1].startswith("[full-batch] done: 25 steps")
    for n_iter, verbose in [(13, 1), (25, 2)]:  # a line per step in both
        run_dpgd(X, y, n_iter=n_iter, verbose=verbose)
        out = capsys.readouterr().out.splitlines()
        assert len([line for line in out if "step " in line]) == n_iter
    # A caller without a (private) iterate to show gets no norm.
    _dpgd._Progress("Demo run", 3, verbose=2).step(0)
    assert re.fullmatch(r"\[Demo\] step 1/3: \d+\.\d\d s\n", capsys.readouterr().out)


def test_auto_schedule_follows_its_documented_formula():
    # n_iter = clip(round(764·sqrt(p/n)), 50, 200) (764/6 = 127.3, 765/6 =
    # 127.5); horizon base·sqrt(ρ/100) in [base, 50]; clip 1 dense, 0.5
    # sparse; dense is the default.
    assert _dpgd.auto_schedule(36, 1, 0.01) == (127, 5.0, 1.0)
    assert _dpgd.auto_schedule(400, 1, 1.0) == (50, 10.0, 1.0)
    assert _dpgd.auto_schedule(400, 1, 1.0, sparse=True) == (50, 40.0, 0.5)


@pytest.mark.parametrize("scale", [0.5, 1.0])
def test_quadratic_and_poisson_datafits_are_consistent(scale):
    # raw_grad is the derivative of the per-record loss (value is the mean),
    # Quadratic() is the unhalved squared error by default, and each
    # inverse_link is its model's mean.
    from skdp._datafits import Poisson, Quadratic

    rng = np.random.default_rng(36)
    n = 9
    z0 = rng.normal(size=n)
    y_real, y_count = rng.normal(size=n), rng.poisson(2.0, size=n).astype(float)
    for datafit, y in [(Quadratic(scale), y_real), (Poisson(), y_count)]:

        def f(z, datafit=datafit, y=y):
            return datafit.value(y, z.reshape(n, 1))

        def grad(z, datafit=datafit, y=y):
            return datafit.raw_grad(y, z.reshape(n, 1)).ravel() / n

        assert check_grad(f, grad, z0) < 1e-6
    z = z0[:, None]
    assert Quadratic().value(y_real, z) == pytest.approx(np.mean((z0 - y_real) ** 2))
    np.testing.assert_array_equal(Quadratic().inverse_link(z), z)
    np.testing.assert_array_equal(Poisson().inverse_link(z), np.exp(z))
    np.testing.assert_array_equal(BinomialLogistic().inverse_link(z), expit(z))
    z3 = rng.normal(size=(n, 3))
    p = MultinomialLogistic().inverse_link(z3)
    np.testing.assert_allclose(p, np.exp(MultinomialLogistic().log_proba(z3)))
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-15)


def test_a_scalar_row_norm_clips_every_record_with_the_same_bound():
    # DPSparseGLM passes one scalar bound for all rows (its ∞-norm bound):
    # each one-output record's residual is then clipped to ±C/s, in every
    # block layout (the scalar is not indexed by the blocks' rows).
    rng = np.random.default_rng(37)
    n, d, s, C = 30, 4, 2.0, 0.3
    X = rng.uniform(-1.0, 1.0, size=(n, d)).astype(np.float32)
    y = rng.integers(0, 2, n).astype(float)
    coef, intercept = rng.normal(size=(d, 1)), np.array([0.5])
    datafit = BinomialLogistic()
    residual = datafit.raw_grad(y, X.astype(np.float64) @ coef + intercept)[:, 0]
    r = np.clip(residual, -C / s, C / s)
    assert np.any(np.abs(residual) > C / s) and np.any(np.abs(residual) < C / s)
    expected = np.append(X.astype(np.float64).T @ r, r.sum())[:, None]
    got = clipped_gradient_sum(X, y, datafit, coef, intercept, s, C)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_noise_budget_is_exact_and_never_below_it_with_a_paper_rule():
    from skdp._dpgd import NoiseBudget, calibrated_dpgd
    from skdp.accounting import gaussian_noise_multiplier

    exact = gaussian_noise_multiplier(1.0, 1e-5, 7)
    assert NoiseBudget(1.0, 1e-5).noise_multiplier(7) == exact
    secure = NoiseBudget(1.0, 1e-5, "secure").noise_multiplier(7)
    assert secure == gaussian_noise_multiplier(1.0, 1e-5, 7, noise="secure")
    assert NoiseBudget(1.0, 1e-5, paper=lambda n: 2 * exact).noise_multiplier(7) == (
        2 * exact
    )
    # A paper rule that asks for less noise than the exact one is overruled.
    assert NoiseBudget(1.0, 1e-5, paper=lambda n: exact / 2).noise_multiplier(7) == (
        exact
    )
    # The engine run on a budget states the budget's guarantee.
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(50, 3)), (np.arange(50) % 2).astype(float)
    *_, cost, z = calibrated_dpgd(
        X,
        y,
        BinomialLogistic(),
        budget=NoiseBudget(1.0, 1e-5),
        n_iter=7,
        n_outputs=1,
        clip_norm=1.0,
        learning_rate=0.1,
        rng=np.random.default_rng(1),
    )
    assert z == exact
    assert cost.mu == pytest.approx(np.sqrt(7) / exact, rel=1e-12)
    assert cost.epsilon == pytest.approx(1.0, rel=1e-6) and cost.delta == 1e-5


# --------------------------------------------------------------------------
# Gaps found by mutation testing of skdp/_clipping.py
# --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        np.full((4, 2), 2**32, dtype=np.int64),  # squares wrap around in int64
        np.full((4, 2), 1e30, dtype=np.float32),  # squares overflow in float32
    ],
    ids=["int64", "float32"],
)
def test_injected_gradient_of_any_dtype_is_clipped_in_float64(raw):
    # The canary is read as float64 before its norm is taken: in its own
    # dtype, an int64 norm wraps to 0 (factor 1: the canary enters
    # unclipped, norm 2.4e10 ≫ C) and a float32 norm overflows (factor 0:
    # the canary vanishes). Either way its contribution must be exactly C.
    rng = np.random.default_rng(36)
    n, d, k, C = 12, 3, 2, 0.5
    X = rng.normal(size=(n, d))
    y = rng.integers(0, k, n)
    coef, intercept = np.zeros((d, k)), np.zeros(k)
    row_norm = np.hypot(row_norms(X), 1.0)
    datafit = MultinomialLogistic()
    without_0 = clipped_gradient_sum(
        X[1:], y[1:], datafit, coef, intercept, row_norm[1:], C
    )
    with injected_gradient(0, lambda X, shape: raw):
        got = clipped_gradient_sum(X, y, datafit, coef, intercept, row_norm, C)
    np.testing.assert_allclose(
        got - without_0, np.full((4, 2), C / np.sqrt(8)), rtol=1e-12
    )


def test_row_blocks_are_sized_by_stored_values(monkeypatch):
    # The memory contract of the blocked reads: a block holds at most
    # _BLOCK_VALUES stored values (nnz for CSR, not n·d) or one row, so a
    # float32 X is never read into float64 whole; a float64 CSR matrix is
    # read as one block (slicing would copy it every step), a dense float64
    # one in blocks (kept in cache between the two products of a step).
    monkeypatch.setattr(_clipping, "_BLOCK_VALUES", 40)
    rng = np.random.default_rng(37)

    def blocks(X):
        got = list(_clipping._gradient_blocks(X))
        starts = [b.start for b in got]
        stops = [b.stop for b in got]
        assert starts[0] == 0 and stops[-1] == X.shape[0] and starts[1:] == stops[:-1]
        return [b.stop - b.start for b in got]

    dense = rng.normal(size=(50, 4))  # 10 rows of 4 values per block
    assert blocks(dense) == [10] * 5
    assert blocks(dense.astype(np.float32)) == [10] * 5
    # One stored value per row of 50 columns: 40 rows a block, by nnz.
    rows = np.arange(200)
    csr = sp.csr_matrix((np.ones(200), (rows, rows % 50)), shape=(200, 50))
    assert blocks(csr.astype(np.float32)) == [40] * 5
    assert blocks(csr) == [200]
    # Rows wider than a block: one row at a time.
    assert blocks(rng.normal(size=(3, 100)).astype(np.float32)) == [1, 1, 1]


# A clip factor C/||x|| below the smallest normal float64 keeps few bits:
# 0.51·2⁻¹⁰⁷⁴ rounds to 2⁻¹⁰⁷⁴, and the "clipped" record would have norm
# 1.96·C (found by review, 2026-11-27). Such records must contribute at most C.


@pytest.mark.parametrize(("datafit", "k"), DATAFITS)
def test_a_record_whose_clip_factor_is_subnormal_stays_within_the_clip(datafit, k):
    C = 1e-100
    r = C / 5e-324 / 0.51  # a finite record, 4e223
    X = np.array([[r, 0.0], [-r, 0.0], [1e-101, 2e-101]])
    y = _labels(datafit, k, 3, np.random.default_rng(34))
    coef, intercept = np.zeros((2, k)), np.zeros(k)
    with np.errstate(under="ignore"):
        for i in range(3):
            got = clipped_gradient_sum(
                X[i : i + 1],
                y[i : i + 1],
                datafit,
                coef,
                intercept,
                np.hypot(row_norms(X[i : i + 1]), 1.0),  # the intercept's 1
                C,
            )
            assert np.linalg.norm(got) <= C * (1 + 1e-12)
        # one norm for every row, given as a scalar
        got = clipped_gradient_sum(X[:1], y[:1], datafit, coef, intercept, r, C)
        assert np.linalg.norm(got) <= C * (1 + 1e-12)
        scale = clip_scale(np.ones((1, k)), np.array([r / np.sqrt(k)]), C)
    assert scale[0] * np.sqrt(k) * (r / np.sqrt(k)) <= C * (1 + 1e-12)


class _FixedGradient:
    """A datafit stub whose raw gradient is the same for every record."""

    def __init__(self, g):
        self.g = np.asarray(g, dtype=float)

    def raw_grad(self, y, z):
        return np.tile(self.g, (z.shape[0], 1))


@pytest.mark.parametrize(
    ("g", "row", "C"),
    [
        ([1e-170, -1e-170, 0.0], 1e200, 1.0),  # ||g||² underflows to 0
        # the factor is normal (2.5e-307), but g·factor = 0.51·2⁻¹⁰⁷⁴
        ([1e-17, -1e-17, 0.0], 1e-100 / 5e-324 / 0.51 / 2**0.5, 1e-100),
    ],
    ids=["norm-underflow", "product-subnormal"],
)
def test_a_tiny_multi_output_gradient_stays_within_the_clip(g, row, C):
    """Two ways a record escaped the multi-output clip (review, 2026-11-27):
    ||g|| computed as sqrt(Σg²) underflowed to 0 for a nonzero g (factor 1:
    a contribution of 1e30 at C = 1), and a normal factor times g rounded in
    the subnormal range (by up to 2) before meeting the huge row."""
    X = np.array([[row, 0.0]])
    got = clipped_gradient_sum(
        X,
        np.zeros(1),
        _FixedGradient(g),
        np.zeros((2, 3)),
        np.zeros(3),
        np.array([row]),
        C,
    )
    assert np.linalg.norm(got) <= C * (1 + 1e-12)


def test_a_row_norm_in_the_subnormal_range_bounds_the_true_norm():
    """||(5e-324, 5e-324)|| = √2·2⁻¹⁰⁷⁴ was computed as 2⁻¹⁰⁷⁴ (the product
    is rounded to the subnormal grid), so the one-output clip let such a
    record through at √2·C (review, 2026-11-27): norms there are rounded up."""
    from skdp._datafits import Quadratic

    unit = 5e-324  # 2⁻¹⁰⁷⁴
    X = np.array([[unit, unit], [-2 * unit, unit], [2e-308, 0.0]])
    for norms in (row_norms(X), row_norms(sp.csr_matrix(X))):
        # true norms: 1.41, 2.24 units, and 2e-308
        assert norms[0] >= 2 * unit and norms[1] >= 3 * unit and norms[2] >= 2e-308
    C = 1e-100
    for i in range(2):
        got = clipped_gradient_sum(
            X[i : i + 1],
            np.array([-1e250]),
            Quadratic(),
            np.zeros((2, 1)),
            np.zeros(1),
            row_norms(X[i : i + 1]),
            C,
        )
        assert np.linalg.norm(got[:2, 0]) <= C * (1 + 1e-12)  # the features' part


def test_an_unclipped_subnormal_gradient_is_kept():
    """Only a clipped row left wholly subnormal is zeroed: an unclipped one
    is exact (a record worth 0.49·C was dropped, a review)."""
    X = np.array([[3.5e307, 0.0]])
    g = [0.0, 9.91e-309, 9.91e-309]
    got = clipped_gradient_sum(
        X,
        np.zeros(1),
        _FixedGradient(g),
        np.zeros((2, 3)),
        np.zeros(3),
        np.array([3.5e307]),
        1.0,
    )
    np.testing.assert_allclose(got[0], 3.5e307 * np.array(g), rtol=1e-12)


def test_clip_factors_for_every_kind_of_norm():
    """The one clip of rows shared by the Gram release, the sampler and
    DPFedRep's cold start: 1 for a zero row, min(1, C/norm) otherwise, 0 for
    a norm that is not finite (NaN too: min(1, NaN) would pass NaN on) and
    where C/norm is subnormal."""
    from skdp._clipping import clip_factors

    norms = np.array([0.0, 0.5, 4.0, np.inf, np.nan, 1e-100 / 5e-324 / 0.51])
    got = clip_factors(norms, 1e-100 * 2.0)
    np.testing.assert_array_equal(got[3:], [0.0, 0.0, 0.0])
    assert got[0] == 1.0
    np.testing.assert_allclose(got[1:3], [4e-100, 5e-101], rtol=1e-15)
