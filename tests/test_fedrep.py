"""DPFedRep: Private FedRep with user-level privacy (Snedeker, Zhou & Bassily)."""

import math
import warnings

import numpy as np
import pytest
import sklearn
from _warning_location import points_at
from dp_accounting import dp_event, pld
from joblib import effective_n_jobs
from sklearn.metrics import r2_score
from sklearn.model_selection import GridSearchCV, GroupKFold, KFold, cross_validate
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from skdp import DPStandardScaler, PrivacyLedger
from skdp.accounting import (
    REPLACE_ONE,
    REPLACE_ONE_USER,
    gaussian_noise_multiplier,
    secure_noise_cost,
)
from skdp.audit import UserCanary, audit_estimator
from skdp.exceptions import PrivacyLeakWarning
from skdp.fedrep import DPFedRep
from skdp.fedrep import _fedrep as fr
from skdp.fedrep import _users as fu


def make_users(n_users, m, d, k, seed, noise=0.01, ragged=False):
    """§3.4's task: x ~ N(0, I), y = xᵀU*v_i* + N(0, noise²), unit-norm v_i*."""
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal((d, k)))[0]
    V = rng.standard_normal((n_users, k))
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    counts = rng.integers(1, 2 * m, n_users) if ragged else np.full(n_users, m)
    groups = np.repeat(np.arange(n_users), counts)
    X = rng.standard_normal((len(groups), d))
    y = np.einsum("ij,ij->i", X @ U, V[groups]) + noise * rng.standard_normal(
        len(groups)
    )
    return X, y, groups, U, V


def population_mse(est, U, V, noise=0.01):
    """Exact test MSE for Gaussian x: mean ‖U_hat v_i − U* v_i*‖² + noise²."""
    W = est.user_coef_ @ est.components_
    return np.mean(np.sum((W - V @ U.T) ** 2, axis=1)) + noise**2


# --- the vectorised computations against a per-user loop -------------------


def users_of(X, y, groups, seed=0):
    """The fit's per-user structure (one shard), the split drawn from ``seed``."""
    n = groups.max() + 1
    counts = np.bincount(groups, minlength=n)
    v_half = fu._split_halves(groups, counts, np.random.default_rng(seed))
    return fu._Users(X, y, groups, n, v_half), v_half


def loop_round(X, y, groups, U, v_half, clip):
    """One round of Algorithm 1, one user at a time (the reference)."""
    users = np.unique(groups)
    V = np.zeros((len(users), U.shape[1]))
    total = np.zeros_like(U)
    for i, u in enumerate(users):
        rows = groups == u
        A, B = rows & (v_half == 1), rows & (v_half == 0)
        V[i] = np.linalg.lstsq(X[A] @ U, y[A], rcond=None)[0] if A.any() else 0.0
        if B.any():
            r = X[B] @ U @ V[i] - y[B]
            grad = 2.0 / B.sum() * np.outer(X[B].T @ r, V[i])
            total += grad * min(1.0, clip / max(np.linalg.norm(grad), 1e-300))
    return V, total


def test_vectorised_round_equals_a_per_user_loop():
    X, y, groups, _, _ = make_users(60, 6, 7, 2, seed=0, ragged=True)
    users, v_half = users_of(X, y, groups, seed=1)
    U = fu._haar(np.random.default_rng(2), 7, 2)
    V_ref, total_ref = loop_round(X, y, groups, U, v_half, clip=0.5)
    ZT = fu._project(X, U)
    V = fu._local_coef(ZT, users, "v")
    np.testing.assert_allclose(V, V_ref, atol=1e-10)
    total = fu._clipped_gradient_sum(users, ZT, V, 0.5)
    np.testing.assert_allclose(total, total_ref, atol=1e-10)
    np.testing.assert_allclose(fu._round_sum(users, U, 0.5), total_ref, atol=1e-10)
    # every user got half of their rows (rounded up) for the v-step
    np.testing.assert_array_equal(
        np.bincount(groups, weights=v_half), (users.counts + 1) // 2
    )


def test_spectral_initialisation_sum_equals_a_per_user_loop():
    X, y, groups, _, _ = make_users(40, 5, 6, 2, seed=3, ragged=True)
    users, v_half = users_of(X, y, groups)
    clip = 2.0
    ref = np.zeros((6, 6))
    n_clipped = 0
    for u in range(40):
        A, B = (groups == u) & v_half, (groups == u) & ~v_half
        if not B.any():  # one row: no pair crosses the halves
            continue
        a, b = X[A].T @ y[A] / A.sum(), X[B].T @ y[B] / B.sum()
        Z = (np.outer(a, b) + np.outer(b, a)) / 2
        # the brute-force form: the mean over the pairs crossing the halves
        pairs = np.mean(
            [
                y[i] * y[j] * (np.outer(X[i], X[j]) + np.outer(X[j], X[i])) / 2
                for i in np.flatnonzero(A)
                for j in np.flatnonzero(B)
            ],
            axis=0,
        )
        np.testing.assert_allclose(Z, pairs, atol=1e-12)
        norm = np.linalg.norm(Z)
        n_clipped += norm > clip
        ref += Z * min(1.0, clip / norm)
    assert 5 <= n_clipped <= 35  # the clip binds for some users, not all
    S_v, S_g = users.half_sums
    for u in [0, 17, 39]:
        rows = groups == u
        np.testing.assert_allclose(S_v[u], X[rows & v_half].T @ y[rows & v_half])
        np.testing.assert_allclose(S_g[u], X[rows & ~v_half].T @ y[rows & ~v_half])
    np.testing.assert_allclose(fu._spectral_sum(users, clip), ref, atol=1e-10)


def test_spectral_estimator_is_unbiased_for_the_users_subspace():
    """E Z_i = w_i w_iᵀ (Algorithm 2's requirement, [1] Thm 38): the mean
    over many users with the same w of the unclipped cross-half estimator
    converges to w wᵀ (tolerance: 5 standard errors, seeded)."""
    rng = np.random.default_rng(0)
    n_users, m, d = 20000, 5, 3
    w = np.array([1.0, -0.5, 0.25])
    groups = np.repeat(np.arange(n_users), m)
    X = rng.standard_normal((n_users * m, d))
    y = X @ w + 0.1 * rng.standard_normal(len(groups))
    users, _ = users_of(X, y, groups, seed=1)
    S_v, S_g = users.half_sums
    mean = fu._spectral_sum(users, np.inf) / n_users
    # per-entry standard errors from the per-user terms themselves
    a, b = S_v / 3, S_g / 2
    terms = (a[:, :, None] * b[:, None, :] + b[:, :, None] * a[:, None, :]) / 2
    np.testing.assert_allclose(terms.mean(axis=0), mean, atol=1e-12)
    se = terms.std(axis=0) / np.sqrt(n_users)
    assert np.all(np.abs(mean - np.outer(w, w)) < 5 * se)


@pytest.mark.parametrize("k", [1, 2, 3])
def test_batched_pseudo_inverse_solve_matches_numpy(k):
    """The stacked (closed-form for k = 2) solve against ``np.linalg.pinv``
    one matrix at a time: full rank, rank one, zero, diagonal with either
    order, equal diagonals, scales 1e±300; non-finite systems give 0."""
    rng = np.random.default_rng(k)
    mats = []
    for rank in [k, k, 1, 0]:
        B = rng.standard_normal((k, rank))
        mats.append(B @ B.T)
    mats += [np.diag(np.arange(1.0, k + 1)), np.diag(np.arange(k, 0.0, -1)), np.eye(k)]
    mats += [1e300 * mats[0], 1e-300 * mats[1], -0.0 * mats[0]]
    A = np.stack(mats)
    c = rng.standard_normal((len(A), k))
    c[-2] *= 1e-300
    expected = np.stack(
        [
            np.linalg.pinv(M, rcond=1e-13, hermitian=True) @ v
            for M, v in zip(A, c, strict=True)
        ]
    )
    got = fu._pinv_solve(A.copy(), c.copy())
    np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-300)
    # non-finite systems (users 1-3) or an overflowing solution (user 4, 1e309)
    # give 0 for that user alone: user 0 is solved as before
    A_bad, c_bad = A[:5].copy(), c[:5].copy()
    A_bad[1, 0, 0], A_bad[2, -1, -1], c_bad[3, -1] = np.nan, np.inf, np.nan
    A_bad[4], c_bad[4] = 1e-9 * np.eye(k), 1e300
    expected_bad = np.zeros_like(c_bad)
    expected_bad[0] = expected[0]
    with np.errstate(over="ignore"):
        got = fu._pinv_solve(A_bad, c_bad)
    np.testing.assert_allclose(got, expected_bad, rtol=1e-9, atol=0.0)
    if k > 1:  # and a finite solution of a system with a huge c is not dropped
        c_ok = np.full((1, k), 1e300)
        np.testing.assert_allclose(
            fu._pinv_solve(np.eye(k)[None].copy(), c_ok), c_ok, rtol=1e-12
        )


def rearranged(X, y, groups, layout):
    """The rows grouped by user, shuffled, or grouped but for three swapped
    pairs of rows (a layout that crashed the threaded fit: a shard whose
    first and last rows span its row count took another shard's rows)."""
    if layout == "grouped":
        return X, y, groups
    rng = np.random.default_rng(0)
    if layout == "shuffled":
        perm = rng.permutation(len(y))
    else:
        perm = np.arange(len(y))
        pairs = rng.choice(len(y), size=(3, 2), replace=False)
        perm[pairs[:, 0]], perm[pairs[:, 1]] = pairs[:, 1], pairs[:, 0]
    return X[perm], y[perm], groups[perm]


LAYOUTS = ["grouped", "shuffled", "swapped"]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("seed", range(5))
def test_shards_keep_every_user_whole(layout, seed):
    """Threads split the users, never a user's rows: each shard holds exactly
    its users' rows with their split, and grouped data is viewed, not copied."""
    X, y, groups, _, _ = make_users(50, 4, 3, 2, seed=12 + seed, ragged=True)
    X, y, groups = rearranged(X, y, groups, layout)
    counts = np.bincount(groups)
    v_half = fu._split_halves(groups, counts, np.random.default_rng(1))
    shards = fu._shard(X, y, groups, 50, v_half, 3)
    assert len(shards) == 3
    assert sum(s.n_users for s in shards) == 50
    np.testing.assert_array_equal(np.concatenate([s.counts for s in shards]), counts)
    assert max(len(s.y) for s in shards) <= len(y) / 3 + counts.max()
    # each shard's rows, user by user, are the rows of its users in X
    order = np.argsort(groups, kind="stable")
    by_user = [s.X[np.argsort(s.codes, kind="stable")] for s in shards]
    np.testing.assert_array_equal(np.vstack(by_user), X[order])
    np.testing.assert_array_equal(
        np.concatenate([s.half_sums[0] for s in shards]),
        fu._Users(X, y, groups, 50, v_half).half_sums[0],
    )
    if layout == "grouped":
        assert all(np.shares_memory(s.X, X) for s in shards)
    if layout == "shuffled":
        assert not any(np.shares_memory(s.X, X) for s in shards)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_threads_give_the_one_thread_fit(layout):
    X, y, groups, _, _ = make_users(300, 6, 5, 2, seed=11, ragged=True)
    X, y, groups = rearranged(X, y, groups, layout)
    used = []
    real_shard = fu._shard

    def spy(*args):
        shards = real_shard(*args)
        used.append(len(shards))
        return shards

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fr, "_shard", spy)
        fits = [
            DPFedRep(2, epsilon=2.0, random_state=0, n_jobs=n_jobs).fit(X, y, groups)
            for n_jobs in [1, 2, 3]
        ]
    # n_jobs follows joblib (JOBLIB_MULTIPROCESSING=0 makes every n_jobs 1)
    assert used == [effective_n_jobs(n_jobs) for n_jobs in [1, 2, 3]]
    for fit in fits[1:]:
        for name in ["components_", "user_coef_", "cold_start_coef_"]:
            np.testing.assert_allclose(
                getattr(fit, name), getattr(fits[0], name), atol=1e-10
            )


# --- privacy accounting -------------------------------------------------------


@pytest.mark.parametrize(
    ("epsilon", "paper", "exact"),
    # spec/review fixtures: σ̂ at n = 20000, ψ = 10, T = 5, δ = 1e-6
    [(1.0, 0.0167563, 0.00944667), (8.0, 0.00209454, 0.00146001)],
)
def test_noise_matches_the_reviewed_table(epsilon, paper, exact):
    # 4 rounds + the cold-start release, random init: 5 Gaussian releases.
    n, psi = 20000, 10.0
    for accounting, expected in [("paper", paper), ("exact", exact)]:
        est = DPFedRep(epsilon=epsilon, delta=1e-6, accounting=accounting)
        sigma = est._noise_budget().noise_multiplier(5) * 2 * psi / n
        assert sigma == pytest.approx(expected, rel=1e-5)


def test_privacy_spent_matches_an_independent_accountant():
    X, y, groups, _, _ = make_users(300, 4, 6, 2, seed=1)
    est = DPFedRep(epsilon=1.5, delta=1e-6, n_rounds=3, random_state=0)
    est.fit(X, y, groups)
    assert est.n_iter_ == 3 + 1 + 1  # rounds, private init, cold start
    # dp-accounting's PLD accountant: sensitivity 2ψ/n is in the multiplier.
    accountant = pld.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(dp_event.GaussianDpEvent(est.noise_multiplier_), est.n_iter_)
    assert accountant.get_epsilon(1e-6) == pytest.approx(1.5, abs=2e-3)
    assert est.privacy_spent_.epsilon == pytest.approx(1.5, rel=1e-6)
    assert est.privacy_spent_.adjacency == "replace one user"
    assert est.privacy_spent_.mu == pytest.approx(
        np.sqrt(est.n_iter_) / est.noise_multiplier_
    )


def test_paper_accounting_spends_less_than_nominal():
    # the review: the paper's noise at nominal (1, 1e-6) with 5 releases is
    # 0.540-DP under exact accounting.
    X, y, groups, _, _ = make_users(200, 4, 5, 1, seed=2)
    est = DPFedRep(
        1, epsilon=1.0, delta=1e-6, n_rounds=4, init="random", accounting="paper"
    )
    est.fit(X, y, groups)
    assert est.n_iter_ == 5
    assert est.privacy_spent_.epsilon == pytest.approx(0.540, abs=2e-3)


# --- per-user clipping --------------------------------------------------------


def test_clipping_bounds_a_heavy_users_contribution(monkeypatch):
    # One user holds 2000 rows with large labels; the others 4 rows each.
    X, y, groups, _, _ = make_users(100, 4, 6, 2, seed=4)
    rng = np.random.default_rng(5)
    Xh = rng.standard_normal((2000, 6))
    X = np.vstack([X, Xh])
    y = np.concatenate([y, 50.0 * Xh[:, 0] + 10 * rng.standard_normal(2000)])
    groups = np.concatenate([groups, np.full(2000, 100)])
    clip, norms = 0.7, []
    real = fu._user_clip_lengths

    def recording(g_norm, v_norm, V, counts, clip_norm):
        lengths = real(g_norm, v_norm, V, counts, clip_norm)
        norms.append(lengths)
        return lengths

    monkeypatch.setattr(fu, "_user_clip_lengths", recording)
    est = DPFedRep(clip_norm=clip, n_rounds=6, epsilon=2.0, random_state=0)
    est.fit(X, y, groups)
    assert len(norms) == 6
    for round_norms in norms:  # every user, every round: ‖clip(∇_i)‖_F ≤ ψ
        assert round_norms.max() <= clip * (1 + 1e-12)
        assert round_norms[100] == pytest.approx(clip)  # the heavy user is clipped


def per_row_clipped_sum(users, ZT, V, clip_norm):
    """The bug the audit must catch: clipping rows one by one, not users."""
    X, y, codes = users.X, users.y, users.codes
    in_grad = users.sum(None, np.eye(len(y)), "grad").sum(axis=0)  # 0/1 per row
    resid = np.einsum("kn,nk->n", ZT, V[codes]) - y
    norms = 2.0 * np.abs(resid) * np.linalg.norm(X, axis=1)
    norms *= np.linalg.norm(V[codes], axis=1)
    scale = in_grad * 2.0 * resid * clip_norm / np.maximum(norms, clip_norm)
    return (X * scale[:, None]).T @ V[codes]


def _user_audit(n_trials=300):
    """skdp.audit with a canary *user*: 21 users of 4 rows with y = 0 (the
    others move nothing); user 20 is replaced by 400 rows with y = 10·x₁
    pushing the representation toward e₁. One round, k = 1, random start;
    statistic ⟨u, e₁⟩²."""
    rng = np.random.default_rng(0)
    X = rng.standard_normal((84, 5))
    groups = np.repeat(np.arange(21), 4)
    est = DPFedRep(
        1,
        epsilon=1.0,
        delta=1e-5,
        n_rounds=1,
        learning_rate=1.0,
        clip_norm=1.0,
        init="random",
    )
    canary = UserCanary(groups, 20, n_rows=400, scale=10.0)
    return audit_estimator(
        est, X, np.zeros(84), canary=canary, n_trials=n_trials, random_state=0
    )


def test_user_level_audit_respects_epsilon_and_catches_per_row_clipping(
    monkeypatch,
):
    report = _user_audit()
    print(report)
    assert report.adjacency == "replace one user"
    assert report.epsilon_lower_bound <= report.claimed_epsilon
    assert not report.refuted
    # Clipping rows one by one lets the 400-row canary through: the same audit
    # then certifies an ε far above the claimed 1 (measured 2.27).
    monkeypatch.setattr(fu, "_clipped_gradient_sum", per_row_clipped_sum)
    broken = _user_audit()
    print(broken)
    assert broken.refuted
    assert broken.epsilon_lower_bound > 1.5


def _tilt_toward_first_axis(fitted):
    """Angle of the line ``components_[0]`` from (e₁ + e₂)/√2 toward e₁ − e₂
    (sign-free, bounded)."""
    u = fitted.components_[0]
    return float(np.arctan((u[0] - u[1]) / (u[0] + u[1])))


def test_user_level_audit_catches_a_tenth_of_the_noise(monkeypatch):
    """A public start U₀ = (e₁ + e₂)/√2 and two canary users, one pushing
    toward e₁ ("in"), one toward e₂ ("out"), so that the worlds differ by up
    to twice the clip: the audit does not refute ε = 1, and refutes it when
    the noise is divided by 10 (measured lower bound 2.52, μ̂ 1.75)."""
    rng = np.random.default_rng(0)
    X, groups = rng.standard_normal((84, 5)), np.repeat(np.arange(21), 4)
    e1, e2 = np.eye(5)[:2]
    start = (e1 + e2)[:, None] / np.sqrt(2)
    est = DPFedRep(
        1,
        epsilon=1.0,
        delta=1e-5,
        n_rounds=1,
        learning_rate=1.0,
        clip_norm=1.0,
        init=start,
    )
    canary = UserCanary(groups, 20, direction=e1, out_direction=e2)
    kwargs = dict(canary=canary, statistic=_tilt_toward_first_axis, n_trials=300)
    report = audit_estimator(est, X, np.zeros(84), random_state=0, **kwargs)
    assert not report.refuted
    real = fr.add_gaussian_noise
    monkeypatch.setattr(
        fr, "add_gaussian_noise", lambda value, std, rng: real(value, std / 10, rng)
    )
    broken = audit_estimator(est, X, np.zeros(84), random_state=0, **kwargs)
    print(broken)
    assert broken.refuted
    assert broken.mu_hat > 3 * broken.claimed_mu


def test_public_init_array_is_free_and_checked():
    X, y, groups, _, _ = make_users(60, 6, 5, 2, seed=8)
    start = np.eye(5)[:, :2] * 3.0  # orthonormalised by QR
    est = DPFedRep(2, n_rounds=3, init=start, epsilon=2.0, random_state=0)
    est.fit(X, y, groups)
    assert est.n_iter_ == 3 + 1  # rounds and the cold-start model, no init
    np.testing.assert_allclose(np.abs(est.init_components_), np.eye(5)[:2], atol=1e-12)
    for bad, match in [
        (np.ones((5, 3)), "shape"),
        (np.full((5, 2), np.nan), "finite"),
        (np.ones((5, 2)), "linearly independent"),
    ]:
        model = DPFedRep(2, init=bad)
        with pytest.raises(ValueError, match=match):
            model.fit(X, y, groups)
        assert not [k for k in vars(model) if k.endswith("_")]


@pytest.mark.parametrize(
    ("x_scale", "y_scale", "m"), [(10.0, 0.01, 5), (0.1, 100.0, 5), (3.0, 3.0, 400)]
)
def test_initialisation_and_cold_start_terms_are_clipped_per_user(x_scale, y_scale, m):
    """One user alone (so each sum is that user's clipped term): Algorithm 2's
    matrix Z_i and the cold-start pair (X_iᵀX_i/m, X_iᵀy_i/m) have norm ≤
    their clip (Frobenius, jointly for the pair) whatever the scale of the
    user's rows and targets; with large rows or targets the clip binds."""

    rng = np.random.default_rng(9)
    X = x_scale * rng.standard_normal((m, 6))
    y = y_scale * rng.standard_normal(m)
    users, _ = users_of(X, y, np.zeros(m, dtype=np.intp))
    S_v, S_g = users.half_sums
    clip = 0.5
    Z = fu._spectral_sum(users, clip)
    # the rank-two term's exact norm: scaled to exactly C when above it
    a, b = S_v[0] / ((m + 1) // 2), S_g[0] / (m // 2)
    raw_Z = (np.outer(a, b) + np.outer(b, a)) / 2
    factor = min(1.0, clip / np.linalg.norm(raw_Z))
    np.testing.assert_allclose(Z, raw_Z * factor, rtol=1e-10, atol=1e-300)
    assert np.linalg.norm(Z) <= clip * (1 + 1e-12)
    G, h = fu._cold_start_sums(users, clip)
    assert np.hypot(np.linalg.norm(G), np.linalg.norm(h)) <= clip * (1 + 1e-12)
    # The clip binds here (the raw terms are far larger than 0.5), and the
    # clipped cold-start term is the raw one scaled down, not replaced.
    raw_G, raw_h = X.T @ X / m, X.T @ y / m
    assert np.hypot(np.linalg.norm(raw_G), np.linalg.norm(raw_h)) > 2 * clip
    scale = np.linalg.norm(G) / np.linalg.norm(raw_G)
    np.testing.assert_allclose(G, scale * raw_G, rtol=1e-10, atol=1e-15)
    np.testing.assert_allclose(h, scale * raw_h, rtol=1e-10, atol=1e-15)
    # scaled by exactly what its bound hypot(trace G_i, ‖h_i‖) needs ...
    np.testing.assert_allclose(np.hypot(np.trace(G), np.linalg.norm(h)), clip)
    # ... and a term within its clip passes unchanged
    loose = 2.0 * np.hypot(np.trace(raw_G), np.linalg.norm(raw_h))
    G, h = fu._cold_start_sums(users, loose)
    np.testing.assert_allclose(G, raw_G, rtol=1e-12)
    np.testing.assert_allclose(h, raw_h, rtol=1e-12)


@pytest.mark.parametrize("scale", [1e-3, 1.0, 1e160, 1e300])
def test_spectral_clip_uses_the_exact_norm(scale):
    """Algorithm 2's per-user term is rank two, so its Frobenius norm is
    exact: a term below the clip passes unchanged, one above comes out at
    exactly C, also when ‖a_i‖‖b_i‖ overflows (rows of 1e160 and 1e300)."""
    x1, x2, y = np.array([1.0, 2.0, 0.0]), np.array([0.0, 1.0, -1.0]), [1.0, 3.0]
    X = scale * np.vstack([x1, x2])
    users, _ = users_of(X, np.array(y), np.zeros(2, dtype=np.intp))
    direction = (np.outer(x1, x2) + np.outer(x2, x1)) / 2  # Z = 3 scale² direction
    with np.errstate(over="ignore"):
        norm = (
            3.0 * np.linalg.norm(direction) * np.float64(scale) ** 2
        )  # 3·sqrt(7)·scale²
        clips = [0.5 * norm, 2.0 * norm] if np.isfinite(norm) else [1.0, 1e100]
    for clip in clips:
        Z = fu._spectral_sum(users, clip)
        if norm <= clip:
            np.testing.assert_allclose(Z, 3.0 * scale**2 * direction, rtol=1e-12)
        else:
            np.testing.assert_allclose(np.linalg.norm(Z), clip, rtol=1e-12)
            np.testing.assert_allclose(
                Z, clip * direction / np.linalg.norm(direction), rtol=1e-12
            )


def test_non_finite_user_terms_contribute_nothing():
    # A user whose rows overflow X @ U gets a zero term; others are unaffected.
    X, y, groups, _, _ = make_users(30, 4, 5, 2, seed=6)
    users, v_half = users_of(X, y, groups)
    U = fu._haar(np.random.default_rng(1), 5, 2)
    V = fu._local_coef(fu._project(X, U), users, "v")
    base = fu._round_sum(users, U, 1.0)
    X2 = X.copy()
    X2[groups == 0] *= 1e307
    users2 = fu._Users(X2, y, groups, 30, v_half)
    with np.errstate(over="ignore"):
        V2 = fu._local_coef(fu._project(X2, U), users2, "v")
        got = fu._round_sum(users2, U, 1.0)
    np.testing.assert_allclose(V2[1:], V[1:])
    assert np.isfinite(got).all()
    assert np.linalg.norm(got - base) <= 2.0 * (1 + 1e-9)  # one user moved ≤ 2ψ


def test_a_users_overflowing_gradient_is_dropped_not_added():
    """User 0's residuals are finite but r_j x_j overflows: ‖G_0‖ = inf. The
    round's sum is then exactly the other users' sum (nothing non-finite
    leaks into it, and nothing of user 0)."""
    X, y, groups, _, _ = make_users(12, 4, 3, 1, seed=13)
    X[groups == 0] = 1e300
    y[groups == 0] = 0.0
    users, v_half = users_of(X, y, groups)
    U = np.array([[1.0], [0.0], [0.0]])
    ZT = fu._project(X, U)
    V = np.ones((12, 1))  # residuals of user 0: 1e300, finite
    with np.errstate(over="ignore"):
        got = fu._clipped_gradient_sum(users, ZT, V, 1.0)
    others = groups != 0
    rest = fu._Users(X[others], y[others], groups[others] - 1, 11, v_half[others])
    expected = fu._clipped_gradient_sum(rest, fu._project(X[others], U), V[1:], 1.0)
    np.testing.assert_allclose(got, expected, rtol=1e-12)
    assert np.abs(expected).max() > 0


def test_a_row_with_an_overflowing_residual_is_left_out_of_its_users_gradient():
    """One gradient-half row of user 0 has ⟨x_j, U v_0⟩ = inf: that row drops
    out of user 0's gradient (as a row x_j = 0 would), the user's other rows
    still count, clipped as usual."""
    X, y, groups, _, _ = make_users(10, 6, 3, 1, seed=17)
    _, v_half = users_of(X, y, groups)
    row = np.flatnonzero((groups == 0) & ~v_half)[0]
    U, V = np.array([[1.0], [0.0], [0.0]]), np.full((10, 1), 100.0)
    X_inf, X_zero = X.copy(), X.copy()
    X_inf[row] = [1e307, 0.0, 0.0]
    X_zero[row] = 0.0

    def round_sum(data):
        users = fu._Users(data, y, groups, 10, v_half)
        return fu._clipped_gradient_sum(users, fu._project(data, U), V, 1e3)

    with np.errstate(over="ignore"):
        got = round_sum(X_inf)
    np.testing.assert_allclose(got, round_sum(X_zero), rtol=1e-12)


def test_weighted_gram_over_many_blocks():
    rng = np.random.default_rng(14)
    X, w = rng.standard_normal((20000, 3)), rng.random(20000)
    np.testing.assert_allclose(fu._weighted_gram(X, w), X.T @ (w[:, None] * X))


def test_within_user_split_is_random_and_seeded():
    """Each user's v-half is ceil(m/2) of their rows drawn at random: over
    400 seeds every row of a 5-row user is in it with frequency 3/5 (±0.1,
    > 4 standard errors), and a seed fixes the split."""
    codes = np.repeat(np.arange(3), 5)
    counts = np.bincount(codes)
    draws = np.array(
        [fu._split_halves(codes, counts, np.random.default_rng(s)) for s in range(400)]
    )
    assert np.all(np.abs(draws.mean(axis=0) - 0.6) < 0.1)
    np.testing.assert_array_equal(draws.sum(axis=1), 9)  # 3 per user
    np.testing.assert_array_equal(
        fu._split_halves(codes, counts, np.random.default_rng(7)), draws[7]
    )


def test_random_start_is_sign_symmetric():
    """``init="random"`` draws U₀ uniformly (Haar): each entry is symmetric
    about 0 (QR's sign convention is undone). 2000 draws, tolerance 0.1
    (4.5 standard errors of the mean of an entry of a unit vector in R²)."""
    rng = np.random.default_rng(15)
    first = np.array([fu._haar(rng, 2, 1)[:, 0] for _ in range(2000)])
    assert np.all(np.abs(first.mean(axis=0)) < 0.1)


def test_cold_start_model_is_the_pooled_least_squares_fit():
    """At a huge ε and loose clips the noise and clipping vanish: with equal
    row counts the cold-start model is ordinary least squares on all rows."""
    X, y, groups, _, _ = make_users(300, 6, 4, 2, seed=16)
    y = y + X @ np.array([0.5, -1.0, 0.25, 2.0])
    est = DPFedRep(
        2, epsilon=1e9, delta=1e-5, cold_start_clip_norm=1e3, random_state=0
    ).fit(X, y, groups)
    np.testing.assert_allclose(
        est.cold_start_coef_, np.linalg.lstsq(X, y, rcond=None)[0], rtol=1e-2, atol=1e-3
    )


@pytest.mark.filterwarnings("error::RuntimeWarning")
def test_huge_and_float32_inputs_fit_finitely():
    # ... and quietly: each user's overflow is handled in that user's term
    X, y, groups, _, _ = make_users(50, 4, 5, 2, seed=7)
    X32 = X.astype(np.float32)
    X32[groups == 2] *= np.float32(1e30)
    X[groups == 3] *= 1e150
    y[groups == 4] = 1e200
    X[groups == 5] *= 1e160  # ‖x‖² overflows, and so does y·x:
    y[groups == 5] = 1e200  # the cold-start term of this user is dropped
    for data in [X, X32]:
        est = DPFedRep(epsilon=2.0, random_state=0).fit(data, y, groups)
        assert np.isfinite(est.components_).all()
        assert np.isfinite(est.cold_start_coef_).all()


# --- utility: the synthetic experiment of §3.4, small -------------------------


def test_synthetic_experiment_trends():
    X, y, groups, U, V = make_users(3000, 10, 20, 2, seed=0)
    kwargs = dict(delta=1e-6, n_rounds=5, learning_rate=1.0, random_state=0)
    mse = {}
    for accounting in ["exact", "paper"]:
        for eps in [1.0, 2.0, 4.0, 8.0]:
            est = DPFedRep(2, epsilon=eps, accounting=accounting, **kwargs)
            mse[accounting, eps] = population_mse(est.fit(X, y, groups), U, V)
    # local-only: per-user minimum-norm least squares in R^d on all 10 rows
    W = np.stack(
        [
            np.linalg.lstsq(X[groups == i], y[groups == i], rcond=None)[0]
            for i in range(50)
        ]
    )
    local = np.mean(np.sum((W - V[:50] @ U.T) ** 2, axis=1))
    for accounting in ["exact", "paper"]:
        values = [mse[accounting, e] for e in [1.0, 2.0, 4.0, 8.0]]
        assert all(np.diff(values) < 0), values  # decreases with ε
    for eps in [1.0, 2.0, 4.0, 8.0]:
        assert mse["exact", eps] < mse["paper", eps]
    for eps in [2.0, 4.0, 8.0]:
        assert mse["exact", eps] < local / 5 and mse["paper", eps] < local / 2
    assert mse["exact", 8.0] < 0.02


def test_paper_size_fit_recovers_the_representation():
    # the paper's size; its fit time is measured in benchmarks/bench_fedrep.py
    X, y, groups, U, V = make_users(20000, 10, 50, 2, seed=1)
    est = DPFedRep(
        2, epsilon=8.0, delta=1e-6, n_rounds=5, learning_rate=1.0, n_jobs=2
    ).fit(X, y, groups)
    assert population_mse(est, U, V) < 0.005


# --- predictions, personalisation, representation ------------------------------


def test_personalize_and_cold_start():
    X, y, groups, _, _ = make_users(500, 10, 8, 2, seed=2)
    train = groups < 400
    est = DPFedRep(2, epsilon=4.0, learning_rate=1.0, random_state=0)
    est.fit(X[train], y[train], groups[train])
    Uhat = est.components_.T
    # unseen users and predictions without groups use the DP cold start
    cold = X[~train] @ est.cold_start_coef_
    np.testing.assert_allclose(est.predict(X[~train], groups[~train]), cold)
    np.testing.assert_allclose(est.predict(X[~train]), cold)
    components, old_heads = est.components_.copy(), est.user_coef_.copy()
    est.personalize(X[~train], y[~train], groups[~train])
    np.testing.assert_array_equal(est.components_, components)
    np.testing.assert_array_equal(est.user_coef_[:400], old_heads)
    assert len(est.users_) == 500
    for u in [400, 457, 499]:  # each new head: least squares on the fixed U
        rows = groups == u
        v = np.linalg.lstsq(X[rows] @ Uhat, y[rows], rcond=None)[0]
        np.testing.assert_allclose(est.user_coef_[u], v, atol=1e-10)
    assert est.score(X[~train], y[~train], groups[~train]) > 0.9
    np.testing.assert_allclose(est.transform(X[:5]), X[:5] @ Uhat)


def test_transform_depends_on_user_data_only_through_components():
    X, y, groups, _, _ = make_users(200, 6, 6, 2, seed=3)
    a = DPFedRep(2, random_state=0).fit(X, y, groups)
    b = DPFedRep(2, random_state=0).fit(X, y, groups)
    b.personalize(X[:6] + 1.0, y[:6] * 3, groups[:6])
    np.testing.assert_array_equal(a.transform(X), b.transform(X))
    assert a.get_feature_names_out().tolist() == ["dpfedrep0", "dpfedrep1"]


def test_single_row_users_get_the_minimum_norm_head():
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((50, 6)), rng.standard_normal(50)
    ids = np.arange(50)  # each row a user of its own
    est = DPFedRep(2, epsilon=2.0, random_state=0).fit(X, y, ids)
    np.testing.assert_array_equal(est.users_, ids)
    Z = X @ est.components_.T
    v_min_norm = Z * (y / np.sum(Z**2, axis=1))[:, None]
    np.testing.assert_allclose(est.user_coef_, v_min_norm, rtol=1e-8)
    np.testing.assert_allclose(est.predict(X, ids), y, rtol=1e-8)


@pytest.mark.filterwarnings("ignore::skdp.exceptions.PrivacyLeakWarning")
def test_a_fit_without_groups_keeps_no_row_heads():
    """Every row is its own user, with index ids: a head per row gave back
    the row's own target to any later id equal to its index (review)."""
    rng = np.random.default_rng(0)
    X, y = rng.standard_normal((50, 6)), rng.standard_normal(50)
    est = DPFedRep(2, epsilon=2.0, random_state=0).fit(X, y)
    assert est.users_.shape == (0,) and est.user_coef_.shape == (0, 2)
    assert est.n_users_ == 50
    cold = X[:10] @ est.cold_start_coef_
    np.testing.assert_allclose(est.predict(X[:10], np.arange(10)), cold)
    est.personalize(X[:4], y[:4], ["a", "a", "b", "b"])  # heads come only from it
    assert est.users_.tolist() == ["a", "b"]


def test_personalize_keeps_every_id_as_fit_gave_it():
    X, y, groups, _, _ = make_users(60, 5, 5, 2, seed=4)
    est = DPFedRep(2, random_state=0).fit(X, y, groups)
    assert len(est.users_) == 60
    # text after numbers turned users_ into text: the original ids missed
    with pytest.raises(ValueError, match="another kind"):
        est.personalize(X[:4], y[:4], ["a", "a", "b", "b"])
    big = np.array([2**53 + 1, 2**53 + 1, 2**53 + 3, 2**53 + 3], dtype=np.int64)
    est.personalize(X[:4], y[:4], big)
    assert est.users_.dtype == np.int64 and est.users_[-1] == 2**53 + 3
    # floats beside int ids beyond 2**53 would round them together
    with pytest.raises(ValueError, match="without changing some"):
        est.personalize(X[:2], y[:2], np.array([0.5, 0.5]))
    assert len(est.users_) == 62  # the refused calls left the heads as they were


def test_ids_are_matched_exactly_not_as_floats():
    X, y, _, _, _ = make_users(2, 20, 5, 2, seed=4)
    ids = np.repeat(np.array([2**53 + 1, 7], dtype=np.int64), 20)
    est = DPFedRep(2, random_state=0).fit(X, y, ids)
    cold = X[:3] @ est.cold_start_coef_
    # 2**53 as a float equals 2**53 + 1 as a float: another user's head
    np.testing.assert_allclose(est.predict(X[:3], np.full(3, 2.0**53)), cold)
    own = est.predict(X[:3], np.full(3, 2**53 + 1))
    assert not np.allclose(own, cold)
    np.testing.assert_allclose(
        est.predict(X[:3], np.full(3, 7.0)), est.predict(X[:3], np.full(3, 7))
    )
    # ids of another integer dtype are searched in users_' own: beside a
    # user 2**53, a uint64 2**53 + 1 landed on 2**53's place as a float and
    # missed its user (review of the day's diff)
    twins = np.repeat(np.array([2**53, 2**53 + 1], dtype=np.int64), 20)
    est = DPFedRep(2, random_state=0).fit(X, y, twins)
    own = est.predict(X[:3], np.full(3, 2**53 + 1))
    as_uint = est.predict(X[:3], np.full(3, 2**53 + 1, dtype=np.uint64))
    np.testing.assert_array_equal(as_uint, own)
    assert not np.allclose(own, X[:3] @ est.cold_start_coef_)


def test_a_pandas_column_of_uint64_ids_keeps_its_users_apart():
    pd = pytest.importorskip("pandas")
    X, y, _, _, _ = make_users(3, 10, 5, 2, seed=4)
    ids = np.repeat(np.array([2**63 + 1, 2**63 + 2, 5], dtype=np.uint64), 10)
    est = DPFedRep(2, random_state=0).fit(X, y, pd.Series(ids))
    assert est.n_users_ == 3 and est.users_.dtype == np.uint64


def test_string_user_ids():
    X, y, groups, _, _ = make_users(100, 5, 5, 2, seed=4)
    names = np.array([f"user-{g}" for g in groups], dtype=object)
    a = DPFedRep(2, random_state=0).fit(X, y, names)
    assert a.users_[0] == "user-0" and len(a.users_) == 100
    assert a.score(X, y, names) > 0.5
    assert np.isfinite(a.predict(X, np.full(len(X), "nobody"))).all()
    # ids of another kind (text for numbers) are refused: they sent every row
    # to the cold start, silently (review)
    b = DPFedRep(2, random_state=0).fit(X, y, groups)
    with pytest.raises(ValueError, match="another kind"):
        b.predict(X[:7], names[:7])


# --- scikit-learn routing -------------------------------------------------------


@pytest.fixture
def routing():
    with sklearn.config_context(enable_metadata_routing=True):
        yield


def test_grid_search_with_group_kfold_routes_groups(routing, monkeypatch):
    X, y, groups, _, _ = make_users(600, 8, 6, 2, seed=5)
    seen = []
    real_fit = DPFedRep.fit

    def spy(self, X, y, groups=None):
        seen.append(None if groups is None else len(np.unique(groups)))
        return real_fit(self, X, y, groups)

    monkeypatch.setattr(DPFedRep, "fit", spy)
    est = DPFedRep(2, epsilon=4.0, random_state=0)
    est.set_fit_request(groups=True).set_score_request(groups=True)
    search = GridSearchCV(est, {"learning_rate": [0.5, 1.0]}, cv=GroupKFold(3))
    search.fit(X, y, groups=groups)
    assert seen == [400] * 6 + [600]  # GroupKFold: 2/3 of the users per fit
    # cold start on unseen users: the shared mean head is ~0 here, R² ≈ 0
    assert np.all(np.abs(search.cv_results_["mean_test_score"]) < 0.2)


def test_without_groups_the_guarantee_is_per_record_and_says_so():
    X, y, groups, _, _ = make_users(200, 5, 4, 2, seed=3)
    with pytest.warns(PrivacyLeakWarning, match="set_fit_request"):
        rows = DPFedRep(2).fit(X, y)
    assert rows.privacy_spent_.adjacency == REPLACE_ONE
    users = DPFedRep(2).fit(X, y, groups)  # PrivacyLeakWarning is an error here
    assert users.privacy_spent_.adjacency == REPLACE_ONE_USER
    # same noise either way: only the unit the guarantee names changes
    assert rows.privacy_spent_.mu == users.privacy_spent_.mu


@pytest.mark.filterwarnings("error::skdp.exceptions.PrivacyLeakWarning")
def test_users_reach_a_search_only_with_metadata_routing():
    """Without routing, a search passes ``groups`` to the splitter alone: its
    fits saw one user per row and must not claim a user-level guarantee (a
    real 20-row user was audited at μ̂ = 0.78 against a claimed μ = 0.268)."""
    X, y, groups, _, _ = make_users(300, 6, 5, 2, seed=5)
    grid = {"learning_rate": [0.5, 1.0]}
    cv = KFold(3, shuffle=True, random_state=0)
    for splitter in (GroupKFold(3), cv):
        with pytest.warns(PrivacyLeakWarning, match="metadata routing"):
            plain = GridSearchCV(DPFedRep(2), grid, cv=splitter)
            plain.fit(X, y, groups=groups)
        assert plain.best_estimator_.privacy_spent_.adjacency == REPLACE_ONE
    with pytest.warns(PrivacyLeakWarning) as caught:
        ledger = PrivacyLedger(delta=1e-5).record(plain)
    said = " ".join(str(w.message) for w in caught)
    assert "chose its best candidate" in said and "user_coef_" in said
    assert list(ledger.totals()) == [REPLACE_ONE]

    with sklearn.config_context(enable_metadata_routing=True):
        est = DPFedRep(2).set_fit_request(groups=True).set_score_request(groups=True)
        routed = GridSearchCV(est, grid, cv=cv).fit(X, y, groups=groups)
    assert routed.best_estimator_.privacy_spent_.adjacency == REPLACE_ONE_USER


def test_a_search_over_a_pipeline_is_charged_what_its_refit_achieved():
    # Routing off: the refitted pipeline's DPFedRep got no groups and reports
    # a record-level guarantee; the ledger finds it inside the pipeline and
    # charges every candidate at that adjacency.
    X, y, groups, _, _ = make_users(120, 5, 4, 2, seed=9)
    pipe = make_pipeline(FunctionTransformer(), DPFedRep(2))
    search = GridSearchCV(
        pipe,
        {"dpfedrep__learning_rate": [0.5, 1.0]},
        cv=KFold(3, shuffle=True, random_state=0),
    )
    with pytest.warns(PrivacyLeakWarning, match="no groups"):
        search.fit(X, y, groups=groups)
    with pytest.warns(PrivacyLeakWarning, match="chose its best candidate"):
        ledger = PrivacyLedger(delta=1e-5).record(search)
    assert len(ledger) == 2 * 2 + 1
    assert {c.adjacency for c in ledger.costs} == {REPLACE_ONE}


def test_user_level_fits_on_split_data_are_not_totalled():
    """A row-level splitter puts most users in every training part (the k-1
    per candidate that holds for records undercounts users), and replacing
    one user may change n and so every fold: the ledger refuses searches and
    cross_validate over user-level fits rather than total them too low."""
    X, y, groups, _, _ = make_users(300, 6, 5, 2, seed=5)
    cv = KFold(3, shuffle=True, random_state=0)
    parts_per_user = np.zeros(300, dtype=int)
    for train, _ in cv.split(X):
        parts_per_user[np.unique(groups[train])] += 1
    assert np.mean(parts_per_user == 3) > 0.9  # by hand: k, not k - 1
    with sklearn.config_context(enable_metadata_routing=True):
        est = DPFedRep(2).set_fit_request(groups=True).set_score_request(groups=True)
        routed = GridSearchCV(est, {"learning_rate": [0.5, 1.0]}, cv=cv)
        routed.fit(X, y, groups=groups)
        folds = cross_validate(
            est, X, y, params={"groups": groups}, cv=cv, return_estimator=True
        )
    assert routed.best_estimator_.privacy_spent_.adjacency == REPLACE_ONE_USER
    for spent, kwargs in ((routed, {}), (folds, {"cv": cv})):
        ledger = PrivacyLedger(delta=1e-5)
        with pytest.raises(ValueError, match="user-level DP fit"):
            ledger.record(spent, **kwargs)
        assert len(ledger) == 0


def test_a_record_level_step_before_a_user_level_one_is_named(routing):
    """A DP scaler in front of DPFedRep fitted with groups: to one user the
    scaler costs a group of that user's rows, so neither per-adjacency total
    is the pipeline's (review: both read 1.0 where the user-level cost is
    about 13). The ledger names it, whether recorded as one pipeline or as
    two fits; record-level releases alone are not named."""
    X, y, groups, _, _ = make_users(300, 6, 5, 2, seed=5)
    est = DPFedRep(2).set_fit_request(groups=True)
    pipe = make_pipeline(DPStandardScaler(bounds=(-4, 4)), est)
    pipe.fit(X, y, groups=groups)
    assert [s.privacy_spent_.adjacency for s in pipe] == [REPLACE_ONE, REPLACE_ONE_USER]
    with pytest.warns(PrivacyLeakWarning, match="Record-level and user-level"):
        ledger = PrivacyLedger(delta=1e-5).record(pipe)
    assert any("no single guarantee" in u for u in ledger.uncovered)
    with pytest.raises(ValueError, match="no single guarantee"):
        ledger.total()
    apart = PrivacyLedger(delta=1e-5).record(pipe[0])  # the scaler alone: silent
    assert not any("user-level" in u for u in apart.uncovered)
    with pytest.warns(PrivacyLeakWarning, match="Record-level and user-level"):
        apart.record(pipe[-1])


def test_within_user_splits_measure_personalisation(routing):
    X, y, groups, _, _ = make_users(600, 12, 6, 2, seed=6)
    est = DPFedRep(2, epsilon=4.0, learning_rate=1.0, random_state=0)
    est.set_fit_request(groups=True).set_score_request(groups=True)
    search = GridSearchCV(
        est, {"n_rounds": [5, 10]}, cv=KFold(3, shuffle=True, random_state=0)
    )
    search.fit(X, y, groups=groups)
    assert search.best_score_ > 0.8  # users seen in training: personal heads


def test_pipeline_routes_groups_to_fit_predict_and_score(routing):
    X, y, groups, _, _ = make_users(400, 10, 6, 2, seed=7)
    est = DPFedRep(2, epsilon=4.0, learning_rate=1.0, random_state=0)
    est.set_fit_request(groups=True).set_predict_request(groups=True)
    est.set_score_request(groups=True)
    pipe = make_pipeline(FunctionTransformer(), est).fit(X, y, groups=groups)
    direct = DPFedRep(2, epsilon=4.0, learning_rate=1.0, random_state=0)
    direct.fit(X, y, groups)
    np.testing.assert_allclose(
        pipe.predict(X, groups=groups), direct.predict(X, groups)
    )
    assert pipe.score(X, y, groups=groups) == pytest.approx(direct.score(X, y, groups))
    assert pipe.score(X, y, groups=groups) > 0.9


# --- bad input ------------------------------------------------------------------


@pytest.mark.parametrize("bad", ["length", "k", "nan", "inf", "nan_groups"])
def test_bad_input_raises_and_leaves_nothing_fitted(bad):
    X, y, groups, _, _ = make_users(50, 4, 5, 2, seed=8)
    est = DPFedRep(2, random_state=0).fit(X, y, groups)
    assert hasattr(est, "components_")
    groups = groups.astype(float)
    if bad == "length":
        args, match = (X, y, groups[:-1]), "one user id per row"
    elif bad == "k":
        est.set_params(n_components=6)
        args, match = (X, y, groups), "n_components=6 must be <= n_features = 5"
    elif bad == "nan_groups":
        groups[7] = np.nan
        args, match = (X, y, groups), "groups contains NaN"
    else:
        X = X.copy()
        X[np.flatnonzero(groups == 17)[1], 2] = np.nan if bad == "nan" else np.inf
        args, match = (X, y, groups), "NaN|infinity"
    with pytest.raises(ValueError, match=match):
        est.fit(*args)
    assert not [a for a in vars(est) if a.endswith("_") and not a.startswith("__")]


@pytest.mark.parametrize("missing", [None, float("nan"), np.nan, "pd.NA", "NaT"])
def test_object_user_ids_with_a_missing_id_are_refused(missing):
    # Review: np.unique cannot sort an object array holding NaN, and split
    # one user's rows among several codes, each clipped as a user of its
    # own: 6 pieces, 6 times the stated sensitivity at the same reported ε.
    X, y, groups, _, _ = make_users(20, 8, 3, 2, seed=8)
    if isinstance(missing, str):
        pd = pytest.importorskip("pandas")
        missing = pd.NA if missing == "pd.NA" else pd.NaT
    ids = groups.astype(object)
    ids[::21] = missing
    est = DPFedRep(2, random_state=0)
    with pytest.raises(ValueError, match="missing user ids"):
        est.fit(X, y, ids)
    assert not [a for a in vars(est) if a.endswith("_") and not a.startswith("__")]


@pytest.mark.parametrize("missing", [None, float("nan")])
def test_missing_user_ids_are_refused_without_pandas(monkeypatch, missing):
    # Without pandas, None and NaN are found by numpy alone (mutation
    # testing: the None test was never run).
    # (The check alone: scikit-learn 1.6 reads sys.modules["pandas"] in any
    # fit, and fails on the hidden module.)
    import sys

    from skdp.fedrep._fedrep import _any_missing

    ids = np.arange(10).astype(object)
    monkeypatch.setitem(sys.modules, "pandas", None)  # import pandas fails
    assert not _any_missing(ids)
    ids[3] = missing
    assert _any_missing(ids)


def test_object_user_ids_are_read_as_their_common_type():
    X, y, groups, _, _ = make_users(20, 8, 3, 2, seed=8)
    typed = DPFedRep(2, random_state=0).fit(X, y, groups)
    # The same ids as Python objects: the same users, the same release.
    objects = DPFedRep(2, random_state=0).fit(X, y, groups.astype(object))
    np.testing.assert_array_equal(objects.users_, typed.users_)
    np.testing.assert_array_equal(objects.components_, typed.components_)
    np.testing.assert_array_equal(
        objects.predict(X, groups.astype(object)), typed.predict(X, groups)
    )
    # Ids of no common type (tuples, arbitrary objects) are refused.
    pairs = np.empty(len(groups), dtype=object)
    pairs[:] = [(g, 0) for g in groups]
    with pytest.raises(ValueError, match="one user id per row"):
        DPFedRep(2).fit(X, y, pairs)
    things = np.array([object() for _ in groups], dtype=object)
    with pytest.raises(ValueError, match="all numbers or all text"):
        DPFedRep(2).fit(X, y, things)


@pytest.mark.parametrize("container", [list, "object array"])
def test_user_ids_mixing_text_and_numbers_are_refused(container):
    # Review: numpy writes each number of a mixed list as text in its own
    # way, so user 7's rows given as 7 and as 7.0 became users "7" and
    # "7.0": two clipped pieces of one user.
    X, y, groups, _, _ = make_users(20, 8, 3, 2, seed=8)
    ids = [float(g) if i % 2 else int(g) for i, g in enumerate(groups)]
    ids[0] = "guest"
    if container is not list:
        ids = np.array(ids, dtype=object)
    with pytest.raises(ValueError, match="mixes text with numbers"):
        DPFedRep(2).fit(X, y, ids)


def test_user_ids_python_holds_equal_are_one_user():
    # 7 and 7.0, True and 1: one user, as Python and pandas see them.
    X, y, groups, _, _ = make_users(20, 8, 3, 2, seed=8)
    ids = [float(g) if i % 2 else int(g) for i, g in enumerate(groups)]
    ids = [True if g == 1 else g for g in ids]
    est = DPFedRep(2, random_state=0).fit(X, y, ids)
    assert len(est.users_) == 20
    typed = DPFedRep(2, random_state=0).fit(X, y, groups)
    np.testing.assert_array_equal(est.components_, typed.components_)


def test_groups_of_wrong_length_at_predict():
    X, y, groups, _, _ = make_users(50, 4, 5, 2, seed=9)
    est = DPFedRep(2, random_state=0).fit(X, y, groups)
    with pytest.raises(ValueError, match="one user id per row"):
        est.predict(X, groups[:-3])


def test_clip_defaults_and_explicit_clips():
    X, y, groups, _, _ = make_users(40, 6, 5, 2, seed=10)
    auto = DPFedRep(2, n_rounds=2, random_state=0).fit(X, y, groups)
    assert auto.clip_norm_ == auto.init_clip_norm_ == pytest.approx(np.sqrt(5 * 2))
    assert auto.cold_start_clip_norm_ == 2.0 * 5
    given = DPFedRep(
        2,
        n_rounds=2,
        clip_norm=0.3,
        init_clip_norm=0.7,
        cold_start_clip_norm=1.1,
        random_state=0,
    ).fit(X, y, groups)
    assert (given.clip_norm_, given.init_clip_norm_, given.cold_start_clip_norm_) == (
        0.3,
        0.7,
        1.1,
    )


# --- the whole fit against a per-user loop, given its noise ---------------------


def loop_spectral(X, y, groups, v_half, clip):
    """Algorithm 2's clipped sum, one user at a time: the symmetrised product
    of the means of y_j x_j over the user's two halves, clipped to ψ_init;
    and the number of users the clip binds for."""
    total, n_clipped = np.zeros((X.shape[1], X.shape[1])), 0
    for u in np.unique(groups):
        A, B = (groups == u) & v_half, (groups == u) & ~v_half
        if not B.any():
            continue  # one row: no pair crosses the halves
        a, b = X[A].T @ y[A] / A.sum(), X[B].T @ y[B] / B.sum()
        Z = (np.outer(a, b) + np.outer(b, a)) / 2
        total += Z * min(1.0, clip / np.linalg.norm(Z))
        n_clipped += np.linalg.norm(Z) > clip
    return total, n_clipped


def loop_cold_start(X, y, groups, clip):
    """Each user's (X_iᵀX_i/m_i, X_iᵀy_i/m_i), jointly clipped by the bound
    hypot(trace, ‖h_i‖) to ψ_cold, summed; and the number of users clipped."""
    G, h = np.zeros((X.shape[1], X.shape[1])), np.zeros(X.shape[1])
    n_clipped = 0
    for u in np.unique(groups):
        rows = groups == u
        m = rows.sum()
        G_i, h_i = X[rows].T @ X[rows] / m, X[rows].T @ y[rows] / m
        bound = np.hypot(np.trace(G_i), np.linalg.norm(h_i))
        G, h = G + min(1.0, clip / bound) * G_i, h + min(1.0, clip / bound) * h_i
        n_clipped += bound > clip
    return G, h, n_clipped


@pytest.fixture
def recorded_noise(monkeypatch):
    """Every call of the noise mechanism during a fit: (value, std, noise)."""
    calls = []
    real = fr.add_gaussian_noise

    def recording(value, std, rng):
        value = np.array(value, dtype=float)
        out = real(value, std, rng)
        calls.append((value, std, out - value))
        return out

    monkeypatch.setattr(fr, "add_gaussian_noise", recording)
    return calls


@pytest.mark.parametrize("n_jobs", [1, 2])
def test_every_release_is_the_per_user_loops_mean_plus_calibrated_noise(
    recorded_noise, monkeypatch, n_jobs
):
    """White box, whole fit: with the fit's own noise draws recorded, each of
    the n_iter_ releases (private init, every round, cold start) is exactly
    the per-user loop's clipped sum divided by n (ragged users, some of one
    row), noised once with std = noise_multiplier_ · 2ψ/n for the ψ of that
    release; U follows U ← QR(U − η·noisy mean); the noise multiplier is the
    exact one for all n_iter_ releases, the noise is fresh every release, and
    the heads are each user's least squares on the released U."""
    splits = []
    real_split = fu._split_halves
    monkeypatch.setattr(
        fr, "_split_halves", lambda *a: splits.append(real_split(*a)) or splits[-1]
    )
    X, y, groups, _, _ = make_users(40, 5, 5, 2, seed=21, ragged=True)
    y = 1.5 * y
    n, d, k = 40, 5, 2
    psi, psi_init, psi_cold, eta = 3.0, 1.5, 5.0, 0.5
    est = DPFedRep(
        k,
        epsilon=3.0,
        delta=1e-6,
        n_rounds=3,
        learning_rate=eta,
        clip_norm=psi,
        init_clip_norm=psi_init,
        cold_start_clip_norm=psi_cold,
        random_state=0,
        n_jobs=n_jobs,
    ).fit(X, y, groups)
    (v_half,) = splits
    z = est.noise_multiplier_
    assert est.n_iter_ == 5 == len(recorded_noise)
    assert z == pytest.approx(gaussian_noise_multiplier(3.0, 1e-6, 5), rel=1e-12)
    assert est.privacy_spent_.mu == pytest.approx(np.sqrt(5) / z, rel=1e-12)

    stds = [std for _, std, _ in recorded_noise]
    expected_stds = [z * 2 * c / n for c in [psi_init, psi, psi, psi, psi_cold]]
    np.testing.assert_allclose(stds, expected_stds, rtol=1e-12)

    # the private initialisation
    value, _, noise = recorded_noise[0]
    Z_sum, n_clipped = loop_spectral(X, y, groups, v_half, psi_init)
    assert 10 <= n_clipped <= 25  # of 35 users with two rows or more
    np.testing.assert_allclose(value, Z_sum / n, atol=1e-12)
    noisy = value + noise
    U = np.linalg.eigh((noisy + noisy.T) / 2)[1][:, ::-1][:, :k]
    np.testing.assert_allclose(np.abs(est.init_components_), np.abs(U.T), atol=1e-10)
    U = est.init_components_.T  # eigenvectors' signs are arbitrary

    # the rounds: the loop's clipped mean gradient at the current U (the clip
    # binds for some users and not others: their sums differ from both)
    for value, _, noise in recorded_noise[1:4]:
        _, total = loop_round(X, y, groups, U, v_half, psi)
        np.testing.assert_allclose(value, total / n, atol=1e-12)
        all_clipped = loop_round(X, y, groups, U, v_half, 1e-9)[1] * psi / 1e-9
        none_clipped = loop_round(X, y, groups, U, v_half, np.inf)[1]
        assert not np.allclose(total, all_clipped, atol=1e-3)
        assert not np.allclose(total, none_clipped, atol=1e-3)
        U = np.linalg.qr(U - eta * (value + noise))[0]
    np.testing.assert_allclose(est.components_, U.T, atol=1e-12)

    # the cold-start model: one release of (Ĝ, ĥ), floored at 4σ·sqrt(d)
    value, std, noise = recorded_noise[4]
    G, h, n_clipped = loop_cold_start(X, y, groups, psi_cold)
    assert 10 <= n_clipped <= 30  # of 40
    np.testing.assert_allclose(value, np.append(G.ravel(), h) / n, atol=1e-12)
    noisy = value + noise
    G, h = noisy[: d * d].reshape(d, d), noisy[d * d :]
    vals, vecs = np.linalg.eigh((G + G.T) / 2)
    coef = vecs @ (vecs.T @ h / np.maximum(vals, 4 * std * np.sqrt(d)))
    np.testing.assert_allclose(est.cold_start_coef_, coef, rtol=1e-10)

    # fresh noise of the stated scale: no two releases share a draw, and the
    # standardised draws (25 + 3·10 + 30 values) have unit spread (±0.3, about
    # 4 standard errors)
    draws = [noise.ravel() / std for _, std, noise in recorded_noise]
    for i in range(len(draws)):
        for j in range(i):
            assert not np.allclose(draws[i][:10], draws[j][:10])
    assert 0.7 < np.std(np.concatenate(draws)) < 1.3

    # the heads: each user's own least squares on the released U (not DP)
    for u in [0, 7, 39]:
        rows = groups == u
        v = np.linalg.lstsq(X[rows] @ U, y[rows], rcond=None)[0]
        np.testing.assert_allclose(est.user_coef_[u], v, atol=1e-10)


def test_new_data_of_another_width_is_refused_without_refitting():
    """predict, transform and personalize check X against the fit's
    n_features_in_ (scikit-learn's message) and never reset it."""
    X, y, groups, _, _ = make_users(30, 4, 5, 2, seed=22)
    est = DPFedRep(2, n_rounds=1, random_state=0).fit(X, y, groups)
    for call in [
        lambda: est.predict(X[:, :4], groups),
        lambda: est.transform(X[:, :4]),
        lambda: est.personalize(X[:, :4], y, groups),
    ]:
        with pytest.raises(ValueError, match="X has 4 features"):
            call()
        assert est.n_features_in_ == 5


def test_score_weights_the_rows():
    X, y, groups, _, _ = make_users(30, 4, 5, 2, seed=23)
    est = DPFedRep(2, n_rounds=1, random_state=0).fit(X, y, groups)
    w = np.random.default_rng(0).random(len(y))
    expected = r2_score(y, est.predict(X, groups), sample_weight=w)
    assert est.score(X, y, groups, sample_weight=w) == pytest.approx(expected)
    assert est.score(X, y, groups, sample_weight=w) != pytest.approx(
        est.score(X, y, groups)
    )


@pytest.mark.parametrize("scale", [1e-3, 1e3])
def test_public_init_rank_check_is_scale_free(scale):
    """Columns dependent up to rounding are refused at any scale, and so is
    an all-zero start (its QR has no direction at all)."""
    X, y, groups, _, _ = make_users(20, 4, 5, 2, seed=25)
    nearly = np.zeros((5, 2))
    nearly[0] = 1.0
    nearly[1, 1] = 1e-16
    for bad in [scale * nearly, np.zeros((5, 2))]:
        with pytest.raises(ValueError, match="linearly independent"):
            DPFedRep(2, init=bad).fit(X, y, groups)


def test_documented_defaults():
    # A silently changed default (ε above all) changes every unconfigured fit.
    assert DPFedRep().get_params() == dict(
        n_components=2,
        epsilon=1.0,
        delta=1e-5,
        accounting="exact",
        n_rounds=10,
        learning_rate=0.5,
        clip_norm="auto",
        init="private",
        init_clip_norm="auto",
        cold_start_clip_norm="auto",
        random_state=None,
        noise="fast",
        n_jobs=None,
        verbose=0,
    )


@pytest.mark.parametrize("accounting", ["exact", "paper"])
def test_secure_noise_is_calibrated_for_its_rounding(accounting):
    """noise="secure" pays for its grid rounding: the multiplier is the secure
    one for all n_iter_ releases (larger than the fast one), and the fit's
    exact cost meets the requested ε."""
    X, y, groups, _, _ = make_users(30, 4, 3, 1, seed=26)
    est = DPFedRep(
        1, epsilon=1.0, delta=1e-6, n_rounds=2, noise="secure", accounting=accounting
    ).fit(X, y, groups)
    secure = gaussian_noise_multiplier(1.0, 1e-6, 4, noise="secure")
    assert secure > 1.05 * gaussian_noise_multiplier(1.0, 1e-6, 4)
    if accounting == "exact":
        assert est.noise_multiplier_ == pytest.approx(secure, rel=1e-12)
        # charged as secure releases (zCDP), not as exact Gaussians (0.927)
        assert est.privacy_spent_.epsilon == pytest.approx(1.0, rel=1e-6)
    else:
        assert est.noise_multiplier_ >= secure
    expected = secure_noise_cost(
        est.noise_multiplier_, 4, delta=1e-6, adjacency=REPLACE_ONE_USER
    )
    assert est.privacy_spent_.epsilon == pytest.approx(expected.epsilon, rel=1e-12)
    assert est.privacy_spent_.rho == pytest.approx(expected.rho, rel=1e-12)
    assert est.privacy_spent_.epsilon <= 1.0 * (1 + 1e-9)
    assert est.privacy_spent_.adjacency == REPLACE_ONE_USER


def test_cold_start_clip_binds_for_small_terms_too():
    """A user whose bound hypot(trace G_i, ‖h_i‖) is below 1 is still clipped
    to a clip below it (scaled to exactly C), and one below the clip passes."""
    rng = np.random.default_rng(27)
    X, y = 0.2 * rng.standard_normal((6, 4)), 0.2 * rng.standard_normal(6)
    users, _ = users_of(X, y, np.zeros(6, dtype=np.intp))
    raw_G, raw_h = X.T @ X / 6, X.T @ y / 6
    bound = np.hypot(np.trace(raw_G), np.linalg.norm(raw_h))
    assert 0.1 < bound < 0.5
    G, h = fu._cold_start_sums(users, 0.05)
    np.testing.assert_allclose(np.hypot(np.trace(G), np.linalg.norm(h)), 0.05)
    np.testing.assert_allclose(G, raw_G * 0.05 / bound, rtol=1e-12)
    G, h = fu._cold_start_sums(users, 0.9)
    np.testing.assert_allclose(G, raw_G, rtol=1e-12)
    np.testing.assert_allclose(h, raw_h, rtol=1e-12)


def test_clip_lengths_drop_only_the_user_with_a_non_finite_head():
    """_user_clip_lengths decides per user: a NaN or infinite v_i zeroes that
    user's term and leaves every other user's as it was."""
    rng = np.random.default_rng(28)
    G, V = rng.standard_normal((6, 4)), rng.standard_normal((6, 2))
    counts = np.array([3, 2, 0, 4, 1, 5])

    def lengths(G, V):
        return fu._user_clip_lengths(fu.row_norms(G), fu.row_norms(V), V, counts, 2.0)

    base = lengths(G, V)
    norms = 2.0 / np.maximum(counts, 1) * np.linalg.norm(G, axis=1)
    norms *= np.linalg.norm(V, axis=1)
    expected = np.where(counts > 0, np.minimum(norms, 2.0), 0.0)
    np.testing.assert_allclose(base, expected, rtol=1e-12)
    assert 0 < (norms > 2.0).sum() < 5  # both sides of the clip
    for bad in [np.nan, np.inf]:
        V_bad = V.copy()
        V_bad[1, 0] = bad
        with np.errstate(invalid="ignore"):
            got = lengths(G, V_bad)
        assert got[1] == 0.0
        np.testing.assert_array_equal(np.delete(got, 1), np.delete(base, 1))


def test_paper_accounting_never_spends_more_than_asked():
    """At a large ε the paper's classical formula asks for less noise than ε
    allows (it is valid for ε < 1 only): "paper" then uses the exact noise,
    and the fit spends exactly the requested ε, not more."""
    X, y, groups, _, _ = make_users(30, 4, 3, 1, seed=29)
    kwargs = dict(epsilon=50.0, delta=1e-5, n_rounds=3, init="random")
    est = DPFedRep(1, accounting="paper", **kwargs).fit(X, y, groups)
    exact = gaussian_noise_multiplier(50.0, 1e-5, 4)
    paper = 2.0 * np.sqrt(4 * np.log(1.25 / 1e-5)) / 50.0
    assert paper < 0.95 * exact
    assert est.noise_multiplier_ == pytest.approx(exact, rel=1e-12)
    assert est.privacy_spent_.epsilon == pytest.approx(50.0, rel=1e-6)


def test_delta_is_checked_against_the_number_of_users():
    """The privacy unit is a user: δ is compared with 1/n_users (here 1/50),
    not with 1/n_rows (1/200)."""
    X, y, groups, _, _ = make_users(50, 4, 3, 1, seed=30)
    kwargs = dict(n_rounds=1, init="random")
    with pytest.warns(
        PrivacyLeakWarning, match="1/n_users = 0.02: .* whole user's data"
    ):
        DPFedRep(1, delta=0.03, **kwargs).fit(X, y, groups)
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        DPFedRep(1, delta=0.01, **kwargs).fit(X, y, groups)


@pytest.mark.parametrize("noise", ["fast", "secure"])
def test_verbose_names_the_guarantee_it_composes_and_the_releases(noise, capsys):
    # μ-GDP for fast noise, ρ-zCDP for secure; the closing line counts rounds
    # and releases (a review saw "rho" on a μ-GDP fit and "10 steps" for 12).
    X, y, groups, _, _ = make_users(40, 5, 6, 2, seed=3)
    est = DPFedRep(2, n_rounds=4, noise=noise, verbose=1).fit(X, y, groups)
    out = capsys.readouterr().out
    cost = est.privacy_spent_
    if noise == "fast":
        assert f"mu = {cost.mu:.4g}" in out and "rho" not in out
    else:
        assert f"rho = {cost.rho:.4g}" in out and "mu =" not in out
    assert f"done: 4 rounds ({est.n_iter_} releases)" in out


@pytest.mark.parametrize("n_jobs", [None, 2])
def test_one_users_huge_rows_raise_no_floating_point_event_in_any_shard(n_jobs):
    """The shards of n_jobs > 1 run in threads, which do not inherit the fit's
    np.errstate: one user's rows of 1.7e308 overflowed and warned (raised
    under -W error) where the neighbour fitted silently (a review)."""
    import warnings

    rng = np.random.default_rng(0)
    groups = np.repeat(np.arange(50), 6)
    X = rng.standard_normal((300, 5))
    y = rng.standard_normal(300)
    X[groups == 7] = 1.7e308 * np.sign(rng.standard_normal((6, 5)))
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        DPFedRep(2, n_jobs=n_jobs).fit(X, y, groups)


def test_transform_is_finite_for_a_row_near_the_float_range():
    """DPFedRep.transform feeds the next step of a pipeline: X Uᵀ of a row of
    ±0.99·max overflowed (a review: the next DP step refused it where the
    neighbour fitted). Scaled per row, and clipped to the float range."""
    X, y, groups, _, _ = make_users(40, 5, 6, 2, seed=4)
    est = DPFedRep(2, n_rounds=2).fit(X, y, groups)
    rows = (
        0.99
        * np.finfo(np.float64).max
        * np.sign(np.random.default_rng(0).normal(size=(50, 6)))
    )
    out = est.transform(rows)
    assert np.isfinite(out).all()
    # The projection itself, not a NaN read as 0 (a hand mutation with the
    # plain product survived the finiteness check alone).
    largest = np.finfo(np.float64).max
    with np.errstate(over="ignore"):
        exact = ((rows * 2.0**-1000) @ est.components_.T) * 2.0**1000
    np.testing.assert_allclose(out, np.clip(exact, -largest, largest), rtol=1e-12)
    np.testing.assert_allclose(est.transform(X), X @ est.components_.T, rtol=1e-12)


def test_a_user_whose_clip_factor_is_subnormal_stays_within_the_clip():
    # A factor C/norm below the smallest normal float64 keeps few bits
    # (0.51·2⁻¹⁰⁷⁴ rounds to 2⁻¹⁰⁷⁴): the user's term would have norm 1.96·C
    # (review, 2026-11-27). Both clips set such a factor to 0.
    C = 1e-100
    r = C / 5e-324 / 0.51  # finite: 4e223
    # The round's sum of clipped gradients, one user (found by review): a
    # row a·e1 with y = 1 in the v-half gives v_i = 1/a (k = 1, U = e1), and
    # a row b·e1 with y = 0 in the gradient half G_i = (b/a)·b = r. The
    # factor ω = C·a/r is normal, but ω·v_i = C/r is 0.51·2⁻¹⁰⁷⁴ and rounds
    # up, and G_iᵀ(ω v_i) then had norm 1.96·C.
    a = 1e150
    b = math.sqrt(r) * math.sqrt(a)
    users = fu._Users(
        np.array([[a, 0.0, 0.0], [b, 0.0, 0.0]]),
        np.array([1.0, 0.0]),
        np.zeros(2, dtype=np.intp),
        1,
        np.array([True, False]),
    )
    U = np.array([[1.0], [0.0], [0.0]])
    assert np.linalg.norm(fu._round_sum(users, U, C)) <= C * (1 + 1e-12)
    # the cold start's (X_iᵀX_i/m, X_iᵀy_i/m) of one user with one row and
    # y = 0: its bound is trace = ||x||² = r
    users, _ = users_of(
        np.array([[math.sqrt(r), 0.0]]), np.zeros(1), np.zeros(1, dtype=np.intp)
    )
    G, h = fu._cold_start_sums(users, C)
    assert np.hypot(np.linalg.norm(G), np.linalg.norm(h)) <= C * (1 + 1e-12)


def test_the_ledger_names_the_heads_the_guarantee_does_not_cover():
    """users_ and user_coef_ are not DP (billboard model, [1] Thm 8): a
    ledger that records a fitted DPFedRep, alone or in a pipeline, says so
    (review, 2026-11-27: its total was silent about them)."""
    X, y, groups, _, _ = make_users(200, 6, 5, 2, seed=6)
    est = DPFedRep(2, n_rounds=3).fit(X, y, groups)
    for recorded, path in (
        (est, "DPFedRep"),
        (make_pipeline(est), "Pipeline/dpfedrep"),
    ):
        if recorded is not est:
            with sklearn.config_context(enable_metadata_routing=True):
                est.set_fit_request(groups=True)
                recorded.fit(X, y, groups=groups)
        with pytest.warns(PrivacyLeakWarning) as caught:
            PrivacyLedger(delta=1e-5).record(recorded)
        said = [str(w.message) for w in caught]
        assert len(said) == 1
        assert said[0].startswith(f"{path} (DPFedRep) holds users_, user_coef_")


def test_unit_rows_of_subnormal_rows_have_norm_at_most_one():
    """A subnormal row norm was rounded down (‖(5e-324, 5e-324)‖ to 5e-324),
    so the "unit" row was (1, 1), and a user's term reached √2·C (review,
    2026-11-27)."""
    rows = np.array([[5e-324, 5e-324], [1e-323, -5e-324], [3e-310, 4e-310], [3.0, 4.0]])
    unit = fu._unit_rows(rows, fu.row_norms(rows))
    norms = np.array([math.hypot(*r) for r in unit])
    assert np.all(norms <= 1 + 1e-12) and norms[-1] == pytest.approx(1.0)


def test_personalize_and_predict_with_ids_of_other_integer_and_text_types():
    X, y, _, _, _ = make_users(3, 10, 5, 2, seed=4)
    big = np.repeat(np.array([2**63 + 1, 2**63 + 2, 5], dtype=np.uint64), 10)
    est = DPFedRep(2, random_state=0).fit(X, y, big)
    est.personalize(X[:4], y[:4], np.array([7, 7, 8, 8], dtype=np.uint64))
    assert est.users_.dtype == np.uint64 and len(est.users_) == 5
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a float beyond int range: no cast warning
        cold = est.predict(X[:2], np.array([1e30, -1e30]))
    np.testing.assert_allclose(cold, X[:2] @ est.cold_start_coef_)
    as_bytes = DPFedRep(2, random_state=0).fit(X, y, np.repeat([b"a", b"b", b"c"], 10))
    with pytest.raises(ValueError, match=r"another kind \(text\).*\(bytes\)"):
        as_bytes.personalize(X[:2], y[:2], np.array(["a", "a"]))  # 'a' is not b'a'


def test_ids_of_another_kind_at_predict_are_refused():
    # Integer ids at fit, the same ids as text at predict (read back from a
    # CSV): every row went to the cold start, silently (R² 0.999 -> -0.04;
    # review). Refused as personalize refuses them; new users of the same
    # kind still get the cold start.
    rng = np.random.default_rng(0)
    X = rng.standard_normal((400, 3))
    groups = np.repeat(np.arange(20), 20)
    y = X @ np.array([1.0, -1.0, 0.5])
    model = DPFedRep(n_components=1, random_state=0).fit(X, y, groups=groups)
    with pytest.raises(ValueError, match=r"another kind \(text\) than those of fit"):
        model.predict(X, groups=groups.astype(str))
    model.predict(X[:5], groups=np.arange(100, 105))  # unseen numbers: fine
    # Bytes at fit, text at predict: the same silent cold start (R² 0.92 ->
    # -0.08; review), refused too; bytes again are found.
    as_bytes = groups.astype(str).astype(bytes)
    model = DPFedRep(n_components=1, random_state=0).fit(X, y, groups=as_bytes)
    with pytest.raises(ValueError, match=r"another kind \(text\).*\(bytes\)"):
        model.predict(X, groups=groups.astype(str))
    known = model.predict(X, groups=as_bytes)
    assert not np.allclose(known, X @ model.cold_start_coef_)


def test_variable_width_string_ids_are_text():
    # numpy's StringDType ids were refused as "not numbers or text" (review).
    dtypes = pytest.importorskip("numpy.dtypes")
    if not hasattr(dtypes, "StringDType"):
        pytest.skip("numpy without StringDType")
    rng = np.random.default_rng(0)
    X = rng.standard_normal((200, 3))
    names = np.array([f"u{i}" for i in np.repeat(np.arange(10), 20)])
    variable = names.astype(dtypes.StringDType())
    y = X @ np.array([1.0, -1.0, 0.5])
    a = DPFedRep(n_components=1, random_state=0).fit(X, y, groups=names)
    b = DPFedRep(n_components=1, random_state=0).fit(X, y, groups=variable)
    np.testing.assert_array_equal(a.users_, b.users_)
    np.testing.assert_array_equal(
        a.predict(X, groups=names), b.predict(X, groups=variable)
    )


def test_a_representation_of_every_feature_warns():
    # n_components = n_features: the representation shares nothing and the
    # predictions are the per-user heads' alone, silently (Grunfeld's two
    # features with the default n_components=2; review). Public sizes only.
    X, y, groups, _, _ = make_users(20, 10, 3, 2, seed=0)
    with pytest.warns(UserWarning, match="n_components=3 equals n_features") as record:
        DPFedRep(3, random_state=0).fit(X, y, groups)
    [warning] = [w for w in record if "equals n_features" in str(w.message)]
    assert points_at(warning, __file__)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*equals n_features")
        DPFedRep(2, random_state=0).fit(X, y, groups)


def test_a_round_drowned_by_noise_warns_from_public_sizes():
    # Grunfeld's 11 firms gave a representation at random-subspace angles,
    # silently (review). The ratio of a round's noise norm to the largest
    # mean gradient, 2z·sqrt(dk)/n, reads n, d, k and the budget only.
    from scipy.linalg import subspace_angles

    X, y, groups, U, _ = make_users(30, 10, 10, 2, seed=0)
    with pytest.warns(UserWarning, match="noise of each round is 3.9 times") as record:
        est = DPFedRep(2, random_state=0).fit(X, y, groups)
    [warning] = [w for w in record if "noise of each round" in str(w.message)]
    assert points_at(warning, __file__)
    assert "at least 232 users" in str(warning.message)
    # what it warns of: the released U is at a random subspace's angles
    assert np.degrees(subspace_angles(est.components_.T, U).max()) > 70
    # the same sizes with a noise-free target warn alike: the data play no part
    with pytest.warns(UserWarning, match="noise of each round is 3.9 times"):
        DPFedRep(2, random_state=0).fit(X, np.zeros_like(y), groups)
    # bad input is refused first, without it (it came before; review)
    bad = X.copy()
    bad[3, 1] = np.nan
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*noise of each round")
        with pytest.raises(ValueError, match="NaN"):
            DPFedRep(2, random_state=0).fit(bad, y, groups)
    # enough users (ratio 0.04): no warning, and a representation near U
    X, y, groups, U, _ = make_users(3000, 10, 10, 2, seed=0)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*noise of each round")
        est = DPFedRep(2, random_state=0).fit(X, y, groups)
    assert np.degrees(subspace_angles(est.components_.T, U).max()) < 15
    # the threshold: a budget that puts the ratio just below 0.5 is silent
    z = est.noise_multiplier_
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*noise of each round")
        fr._warn_if_noise_dominates(math.ceil(4 * z * math.sqrt(20)) + 1, 10, 2, z)
    with pytest.warns(UserWarning, match="noise of each round"):
        fr._warn_if_noise_dominates(math.floor(4 * z * math.sqrt(20)), 10, 2, z)


def test_a_cold_start_model_below_its_noise_floor_warns():
    """One-hot features (‖x‖² = 1, where the automatic cold-start clip 2d
    assumes standardised rows): the released second moment lies below the
    solve's floor in every direction and cold_start_coef_ is noise (R² 0.00
    at ε = 8 on ISLP's Bikeshare by day, silently; review). Read from the
    release: the same sizes at a huge budget are silent."""
    rng = np.random.default_rng(0)
    hours = rng.integers(0, 24, size=300 * 24)
    X = np.eye(24)[hours]
    effect = np.sin(np.arange(24) / 4.0)
    y = effect[hours] + 0.1 * rng.standard_normal(hours.size)
    groups = np.repeat(np.arange(300), 24)
    with pytest.warns(
        UserWarning, match="cold-start model is within its noise"
    ) as record:
        DPFedRep(2, epsilon=8.0, delta=1e-6).fit(X, y, groups)
    [warning] = [w for w in record if "cold-start model is" in str(w.message)]
    assert points_at(warning, __file__)
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*cold-start model is within")
        est = DPFedRep(2, epsilon=1e6, delta=1e-6).fit(X, y, groups)
    assert r2_score(y, X @ est.cold_start_coef_) > 0.9
