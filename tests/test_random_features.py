"""DPRandomFeaturesRegressor and its exact kernel solver (Bombari & Mondelli)."""

import numpy as np
import pytest
import scipy.sparse as sp
from dp_accounting import dp_event, pld
from scipy.special import erf
from scipy.stats import ks_2samp
from sklearn.utils._param_validation import InvalidParameterError

from skdp import DPRandomFeaturesRegressor, MechanismFailedError
from skdp._datafits import Quadratic
from skdp._dpgd import dpgd
from skdp.accounting import mu_from_epsilon
from skdp.random_features import _kernel
from skdp.random_features._features import draw_weights, features
from skdp.random_features._kernel import kernel_dpgd
from skdp.random_features._regressor import _solver_seconds


def sign_task(n, d, seed):
    """Figure 3's task: x ~ N(0, I_d), y = sign(uᵀx) with u = randn(d)/sqrt(d)."""
    rng = np.random.default_rng(seed)
    u = rng.standard_normal(d) / np.sqrt(d)
    X = rng.standard_normal((n, d))
    return X, np.sign(X @ u)


def run_both(X, y, weights, *, seed, **run):
    """θ_T from the primal engine (on the estimator's feature matrix) and
    from the kernel form, same settings."""
    from skdp.random_features._regressor import _feature_matrix

    Phi = _feature_matrix(X, weights, np.tanh)
    params = dict(
        clip_norm=run.get("clip_norm", 1.0),
        noise_multiplier=run.get("noise_multiplier", 0.0),
        n_iter=run.get("n_iter", 5),
        learning_rate=run.get("learning_rate", 0.05),
        mechanism="test",
    )
    primal, _, cost = dpgd(
        Phi,
        y,
        Quadratic(),
        n_outputs=1,
        delta=1e-5,
        fit_intercept=False,
        rng=np.random.default_rng(seed),
        **params,
    )
    kernel = kernel_dpgd(
        X,
        y,
        weights,
        np.tanh,
        Quadratic(),
        cost=cost,
        rng=np.random.default_rng(seed + 1),
        **params,
    )
    return primal[:, 0], kernel


# --- the kernel form is Algorithm 1 -----------------------------------------


@pytest.mark.parametrize("n_components", [8, 20, 60])  # p < n, p = n, p > n
def test_kernel_iterates_equal_primal_ones_without_noise(n_components):
    # Every iterate θ_t (t = 1..12), with clipping active on part of the data.
    X, y = sign_task(20, 3, seed=0)
    y[:5] *= 30.0  # large residuals: these records are clipped
    weights = draw_weights(np.random.default_rng(1), 3, n_components)
    for n_iter in range(1, 13):
        primal, kernel = run_both(
            X, y, weights, seed=0, n_iter=n_iter, clip_norm=2.0, learning_rate=0.1
        )
        scale = np.abs(primal).max()
        assert scale > 1e-3
        np.testing.assert_allclose(kernel, primal, rtol=0, atol=1e-8 * scale)


def test_both_solvers_run_a_row_of_tiny_features_as_a_zero_row():
    # The kernel solver runs a row of feature norm below 1e-140 as a zero
    # row; the primal one clipped its gradient to C (a residual of 1e300
    # times features of 1e-300): not the same mechanism (review).
    X, y = sign_task(20, 3, seed=0)
    weights = draw_weights(np.random.default_rng(1), 3, 30)
    for tiny, label in [(1e-300, -1e300), (1e-150, -1e160), (1e-141, -1e145)]:
        X[0], y[0] = [tiny, 0.0, 0.0], label
        primal, kernel = run_both(
            X, y, weights, seed=0, n_iter=3, clip_norm=1.0, learning_rate=0.5
        )
        X[0], y[0] = 0.0, 0.0
        zero_row, _ = run_both(
            X, y, weights, seed=0, n_iter=3, clip_norm=1.0, learning_rate=0.5
        )
        np.testing.assert_allclose(primal, zero_row, rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(kernel, zero_row, rtol=1e-8, atol=1e-10)


def _statistics(thetas, weights, X_test, null_direction):
    """Predictions at test points, ||θ||² and θ's null-space component."""
    preds = features(X_test, weights, np.tanh) @ thetas.T
    stats = [*preds, np.sum(thetas**2, axis=1)]
    if null_direction is not None:
        stats.append(thetas @ null_direction)
    return stats


def _sample_thetas(solver, X, y, weights, n_draws, seed):
    out = np.empty((n_draws, weights.shape[1]))
    run = dict(noise_multiplier=0.5, n_iter=4, clip_norm=1.0, learning_rate=0.2)
    for i in range(n_draws):
        if solver == "primal":
            Phi = features(X, weights, np.tanh)
            coef, _, _ = dpgd(
                Phi,
                y,
                Quadratic(),
                n_outputs=1,
                delta=1e-5,
                fit_intercept=False,
                rng=np.random.default_rng([seed, i]),
                mechanism="test",
                **run,
            )
            out[i] = coef[:, 0]
        else:
            out[i] = kernel_dpgd(
                X,
                y,
                weights,
                np.tanh,
                Quadratic(),
                cost=None,
                rng=np.random.default_rng([seed, i]),
                mechanism="test",
                **run,
            )
    return out


def _null_direction(X, weights):
    """A unit vector orthogonal to the row space of Φ (None if p ≤ n)."""
    Phi = features(X, weights, np.tanh)
    if Phi.shape[1] <= Phi.shape[0]:
        return None
    _, _, vt = np.linalg.svd(Phi)
    return vt[-1]


def _ks_pvalues(X, y, weights, n_draws):
    X_test, _ = sign_task(3, X.shape[1], seed=9)
    null = _null_direction(X, weights)
    a = _statistics(
        _sample_thetas("primal", X, y, weights, n_draws, 1), weights, X_test, null
    )
    b = _statistics(
        _sample_thetas("kernel", X, y, weights, n_draws, 2), weights, X_test, null
    )
    return [ks_2samp(s, t).pvalue for s, t in zip(a, b, strict=True)]


N_DRAWS = 1500


@pytest.mark.parametrize("n_components", [6, 12, 40])  # p < n, p = n, p > n
def test_kernel_and_primal_outputs_agree_in_distribution(n_components):
    # 1500 seeded draws from each solver; two-sample KS tests on predictions
    # at 3 test points, ||θ_T||² and (p > n) the component of θ_T outside the
    # row space of Φ, which predictions cannot see. Bonferroni level 1e-3
    # over the statistics. Power: the broken variants below differ by ~2x in
    # the variance of one statistic and give p-values below 1e-6 at this size.
    X, y = sign_task(12, 3, seed=3)
    weights = draw_weights(np.random.default_rng(4), 3, n_components)
    pvalues = _ks_pvalues(X, y, weights, N_DRAWS)
    assert min(pvalues) > 1e-3 / len(pvalues)


def test_the_distribution_test_detects_noise_sum_drawn_independently(monkeypatch):
    # Negative control: the steps' noise walks to W = Φ̃ξ' for a fresh ξ',
    # not to the ξ that θ_T carries: each has the right marginal law, but
    # not the joint law of Algorithm 1.
    original = _kernel.gram_pass
    rng = np.random.default_rng(0)

    def independent(X, weights, activation, xi):
        return original(X, weights, activation, rng.standard_normal(xi.shape))

    monkeypatch.setattr(_kernel, "gram_pass", independent)
    X, y = sign_task(12, 3, seed=3)
    weights = draw_weights(np.random.default_rng(4), 3, 40)
    assert min(_ks_pvalues(X, y, weights, N_DRAWS)) < 1e-6


class _RecordingQuadratic(Quadratic):
    """The squared loss, recording the predictions each step reads."""

    def __init__(self):
        super().__init__()
        self.seen = []

    def raw_grad(self, y, preds):
        self.seen.append(preds[:, 0].copy())
        return super().raw_grad(y, preds)


def _near_duplicate_task(n_components, delta):
    """5 records (the last a copy of the 4th moved by ``delta``, if given)."""
    X, _ = sign_task(5, 3, seed=3)
    if delta is not None:
        X[4] = X[3] + delta * np.random.default_rng(5).standard_normal(3)
    return X, draw_weights(np.random.default_rng(4), 3, n_components)


def _whitened_walks(X, weights, n_iter, n_draws, square_root):
    """(Φ̃S_1, …, Φ̃S_{T−1}, Φ̃Z) as the kernel form draws them, whitened by
    their exact covariance min(s, t)·K̃ on the range of K̃ (white box: zero
    gradients, s = 1), and their largest component outside that range.
    ``square_root=None``: K̃'s square root as the kernel form takes it."""
    from skdp._dpgd import _Progress

    n, p = X.shape[0], weights.shape[1]
    _, _, norms = _kernel.gram_pass(X, weights, np.tanh, np.zeros(p))
    rows = _kernel.normalised_features(X, weights, np.tanh, slice(None), norms)
    gram = rows @ rows.T
    if square_root is None:  # as kernel_dpgd calls it
        root = _kernel.gram_square_root(gram, _kernel.gram_jitter(n, p))
    else:
        root = square_root(gram)
    rng = np.random.default_rng(7)
    walks = np.empty((n_draws, n_iter, n))
    for i in range(n_draws):
        h = rows @ rng.standard_normal(p)
        datafit = _RecordingQuadratic()
        _kernel.dual_iterates(
            gram,
            np.ones(n),  # r = 1: the datafit sees ũ itself
            np.zeros(n),
            datafit,
            root,
            np.sqrt(n_iter) * h,
            clip_norm=0.0,  # no gradient: ũ_t is the noise walked so far
            step=1.0,
            noise_std=1.0,
            n_iter=n_iter,
            rng=rng,
            progress=_Progress("test", n_iter, 0),
        )
        walks[i] = [*datafit.seen[1:], np.sqrt(n_iter) * h]
    eigvals, eigvecs = np.linalg.eigh(gram)
    kept = eigvals > 1e-13 * eigvals[-1]
    outside = np.abs(walks @ eigvecs[:, ~kept]).max(initial=0.0)
    inside = walks @ (eigvecs[:, kept] / np.sqrt(eigvals[kept]))
    steps = np.arange(1, n_iter + 1)
    time_root = np.linalg.cholesky(np.minimum.outer(steps, steps))
    white = np.einsum("st,dtr->dsr", np.linalg.inv(time_root), inside)
    return white.reshape(n_draws, -1), outside


def _walk_law_deviation(square_root, n_components=40, delta=None):
    X, weights = _near_duplicate_task(n_components, delta)
    n_draws = 20_000
    white, outside = _whitened_walks(X, weights, 4, n_draws, square_root)
    # K̃'s null space (p < n) gets the jitter's noise alone: a bridge of λI,
    # variance at most λ·T/4 per coordinate; 6 of its standard deviations.
    jitter = _kernel.gram_jitter(X.shape[0], n_components)
    assert outside < 6 * np.sqrt(jitter)  # λ·T/4 = λ at T = 4
    # Each entry of the sample covariance of N(0, I) has standard error at
    # most sqrt(2/n_draws); the largest is measured in those.
    return np.abs(np.cov(white.T) - np.eye(white.shape[1])).max() / np.sqrt(2 / n_draws)


@pytest.mark.parametrize(
    "n_components, delta",
    [(40, None), (40, 1e-4), (5, 1e-4), (4, 1e-4)],  # p > n, p = n, p < n
)
def test_the_predictions_walk_with_the_noise_law_of_algorithm_1(
    n_components, delta, monkeypatch
):
    # Algorithm 1's predictions carry Φ̃S_t, S_t = z_1 + … + z_t, and θ_T
    # carries S_T = Z: jointly Gaussian with Cov(Φ̃S_s, Φ̃S_t) = min(s, t)·K̃.
    # The bridge that draws them backwards from Z must give exactly that law,
    # also across the chunks in which its noise is drawn (here 3 steps, then
    # 1) and in every direction of K̃: a near-duplicate record (δ = 1e-4)
    # gives K̃ an eigenvalue of 1e-10 to 1e-9, below the cut of the earlier
    # truncated form. 20000 seeded walks (n = 5, T = 4), whitened by the
    # exact covariance, have an identity sample covariance to 5 standard
    # errors per entry.
    monkeypatch.setattr(_kernel, "_CHUNK_VALUES", 3 * 5)
    X, weights = _near_duplicate_task(n_components, delta)
    if delta is not None and n_components >= 5:
        _, _, norms = _kernel.gram_pass(X, weights, np.tanh, np.zeros(n_components))
        rows = _kernel.normalised_features(X, weights, np.tanh, slice(None), norms)
        eigvals = np.linalg.eigvalsh(rows @ rows.T)
        old_cut = 1e6 * (5 + n_components) * np.finfo(float).eps * eigvals[-1]
        assert 0 < eigvals[0] < old_cut / 5
    assert _walk_law_deviation(None, n_components, delta) < 5


def test_the_square_root_falls_back_to_the_qr_eigensolver(monkeypatch):
    # Should LAPACK's default eigensolver not converge (a data-dependent
    # LinAlgError), the QR-iteration driver gives the square root instead.
    import scipy.linalg as la

    rows = np.random.default_rng(0).standard_normal((6, 4))
    gram = rows @ rows.T  # rank 4: singular
    original = la.eigh

    def failing_default(a, **kwargs):
        if kwargs.get("driver") != "ev":
            raise la.LinAlgError("did not converge")
        return original(a, **kwargs)

    def failing_cholesky(*args, **kwargs):
        raise la.LinAlgError("not positive definite")

    monkeypatch.setattr(_kernel.la, "cholesky", failing_cholesky)
    monkeypatch.setattr(_kernel.la, "eigh", failing_default)
    root = _kernel.gram_square_root(gram, 1e-13)
    np.testing.assert_allclose(root @ root.T, gram, atol=1e-12)


@pytest.mark.parametrize("n_components", [3, 8, 40])  # p < n, p = n, p > n
def test_the_square_root_costs_the_same_with_duplicated_records(
    n_components, monkeypatch
):
    # Cholesky of K̃ failed where two records were equal (or p <= n), and the
    # eigendecomposition that took over ran 3-4 times as long: a duplicated
    # record showed in the running time, and in verbose's times (review).
    # With the public jitter the factorisation completes on any input.
    import scipy.linalg as la

    def no_eigh(*args, **kwargs):
        raise AssertionError("the eigendecomposition ran")

    monkeypatch.setattr(_kernel.la, "eigh", no_eigh)
    rng = np.random.default_rng(0)
    n = 8
    for X in (
        rng.standard_normal((n, 3)),
        np.repeat(rng.standard_normal((n // 2, 3)), 2, axis=0),  # duplicates
        np.zeros((n, 3)),  # every row the same
    ):
        weights = draw_weights(rng, 3, n_components)
        _, _, norms = _kernel.gram_pass(X, weights, np.tanh, np.zeros(n_components))
        rows = _kernel.normalised_features(X, weights, np.tanh, slice(None), norms)
        gram = rows @ rows.T
        jitter = _kernel.gram_jitter(n, n_components)
        root = _kernel.gram_square_root(gram, jitter)
        np.testing.assert_allclose(root @ root.T, gram + jitter * np.eye(n), atol=1e-12)
    with pytest.raises(la.LinAlgError):  # without the jitter: the slow path
        la.cholesky(np.ones((n, n)), lower=True)
    # The fit takes the jitter: duplicated records, no eigendecomposition.
    X = np.repeat(rng.standard_normal((n, 3)), 2, axis=0)
    DPRandomFeaturesRegressor(
        n_components=n_components, solver="kernel", max_iter=3
    ).fit(X, X[:, 0])


def _truncated_root(gram):
    """The earlier form's square root: directions below its cut dropped."""
    eigvals, eigvecs = np.linalg.eigh(gram)
    keep = eigvals > 1e6 * 45 * np.finfo(float).eps * eigvals[-1]
    return eigvecs[:, keep] * np.sqrt(eigvals[keep])


@pytest.mark.parametrize(
    "broken, n_components",
    [
        (lambda gram: np.zeros_like(gram), 40),  # no spread: a line to W
        (lambda gram: 1.2 * _kernel.gram_square_root(gram), 40),  # too wide
        (_truncated_root, 5),  # the near-duplicate's direction dropped
    ],
)
def test_the_walk_law_test_detects_a_wrong_walk(broken, n_components):
    assert _walk_law_deviation(broken, n_components, delta=1e-4) > 20


# --- privacy: sensitivity, noise scale, accounting ---------------------------


@pytest.mark.parametrize("solver", ["primal", "kernel"])
def test_one_record_moves_one_noiseless_step_by_at_most_2_eta_c_over_n(solver):
    # Replace-one sensitivity of a step (Lemma B.1): ||Δθ_1|| ≤ η·2C/n, for a
    # hostile replacement (huge input and label) and an ordinary one; and the
    # bound is attained (same x, label of opposite residual sign).
    X, y = sign_task(30, 4, seed=5)
    weights = draw_weights(np.random.default_rng(6), 4, 50)
    eta, clip = 0.3, 0.7
    bound = eta * 2 * clip / 30

    def theta(X, y):
        p, k = run_both(
            X, y, weights, seed=0, n_iter=1, clip_norm=clip, learning_rate=eta
        )
        return p if solver == "primal" else k

    base = theta(X, y)
    for x_new, y_new in [(np.full(4, 1e300), -1e300), (X[0], -50.0 * y[0])]:
        X2, y2 = X.copy(), y.copy()
        X2[0], y2[0] = x_new, y_new
        assert np.linalg.norm(theta(X2, y2) - base) <= bound * (1 + 1e-9)
    # Features too small to square (norm 1e-200, and subnormal) or zero, with
    # a huge label against a zero one: the kernel form read ||φ_i|| from
    # K_ii, which underflowed to 0, so no clip (Δθ 1e98 for this bound).
    for tiny in (1e-200, 1e-310, 0.0):
        X2, X3 = X.copy(), X.copy()
        X2[0] = X3[0] = tiny
        y2, y3 = y.copy(), y.copy()
        y2[0], y3[0] = 1e300, 0.0
        gap = np.linalg.norm(theta(X2, y2) - theta(X3, y3))
        assert gap <= bound * (1 + 1e-9), tiny
    X2, y2 = X.copy(), y.copy()
    y2[0] = -50.0 * y[0]
    y[0] = 50.0 * y[0]
    gap = np.linalg.norm(theta(X2, y2) - theta(X, y))
    assert gap == pytest.approx(bound, rel=1e-9)


@pytest.mark.parametrize("solver", ["primal", "kernel"])
@pytest.mark.parametrize("zero_inputs", [False, True])
def test_noise_on_theta_has_the_stated_scale(solver, zero_inputs):
    # With y = 0 the first gradient is 0, so θ_1 is pure noise of std
    # s = η·z·2C/n per coordinate. With all inputs 0 every feature is 0
    # (odd activation), so θ_T is pure noise of std s·sqrt(T). 4000
    # coordinates: the sample std is within 5% (about 4.5 standard errors).
    n, d, p = 40, 3, 4000
    X = np.zeros((n, d)) if zero_inputs else sign_task(n, d, seed=7)[0]
    n_iter = 9 if zero_inputs else 1
    reg = DPRandomFeaturesRegressor(
        p, epsilon=1.0, max_iter=n_iter, solver=solver, random_state=0
    ).fit(X, np.zeros(n))
    s = reg.learning_rate_ * reg.noise_multiplier_ * 2 * reg.clip_norm_ / n
    assert np.std(reg.coef_) == pytest.approx(s * np.sqrt(n_iter), rel=0.05)
    assert abs(np.mean(reg.coef_)) < 5 * s * np.sqrt(n_iter / p)


def test_privacy_spent_matches_an_independent_accountant():
    # dp-accounting's PLD accountant, with sensitivity 2C as a noise
    # multiplier z under add/remove (the factor 2 of replace-one is in z).
    X, y = sign_task(200, 5, seed=8)
    reg = DPRandomFeaturesRegressor(200, epsilon=1.5, delta=1e-6, random_state=0)
    reg.fit(X, y)
    accountant = pld.PLDAccountant(value_discretization_interval=1e-4)
    accountant.compose(dp_event.GaussianDpEvent(reg.noise_multiplier_), reg.n_iter_)
    assert accountant.get_epsilon(1e-6) == pytest.approx(1.5, abs=2e-3)
    assert reg.privacy_spent_.epsilon == pytest.approx(1.5, rel=1e-6)
    assert reg.privacy_spent_.mu == pytest.approx(
        np.sqrt(reg.n_iter_) / reg.noise_multiplier_
    )


def test_paper_accounting_is_proposition_3_2():
    X, y = sign_task(200, 5, seed=8)
    reg = DPRandomFeaturesRegressor(
        200, epsilon=4.0, delta=1 / 2000, accounting="paper", random_state=0
    ).fit(X, y)
    # σ = sqrt(ηT)·sqrt(8 log(1/δ))/ε and σ = sqrt(η)·noise_multiplier_.
    sigma = np.sqrt(reg.learning_rate_ * reg.n_iter_ * 8 * np.log(2000)) / 4.0
    assert np.sqrt(reg.learning_rate_) * reg.noise_multiplier_ == pytest.approx(sigma)
    # The review's figure: at (ε, δ) = (4, 1/2000) this noise is 1.508-DP.
    assert reg.privacy_spent_.epsilon == pytest.approx(1.508, abs=2e-3)
    with pytest.raises(ValueError, match="8 log"):
        DPRandomFeaturesRegressor(epsilon=70.0, delta=1e-3, accounting="paper").fit(
            X, y
        )


def test_random_weights_are_drawn_independently_of_the_data():
    X, y = sign_task(100, 6, seed=9)
    a = DPRandomFeaturesRegressor(3000, random_state=1).fit(X, y)
    b = DPRandomFeaturesRegressor(3000, random_state=1).fit(X[::-1] * 3, y[::-1])
    np.testing.assert_array_equal(a.random_weights_, b.random_weights_)
    assert a.random_weights_.shape == (6, 3000)
    # V_ij ~ N(0, 1/d): the variance is 1/6 within 3% (18000 entries).
    assert np.var(a.random_weights_) == pytest.approx(1 / 6, rel=0.03)


# --- the estimator -------------------------------------------------------------


def test_defaults_follow_the_papers_scaling():
    X, y = sign_task(300, 8, seed=10)
    reg = DPRandomFeaturesRegressor(2000, random_state=0).fit(X, y)
    # η = 1/p, T = 5d (so ηT·p/d = 5), C = 0.5·sqrt(p).
    assert reg.learning_rate_ == pytest.approx(1 / 2000)
    assert reg.n_iter_ == 40
    assert reg.clip_norm_ == pytest.approx(0.5 * np.sqrt(2000))
    # A given max_iter keeps the training time: η = 5d/(p·T).
    reg = DPRandomFeaturesRegressor(2000, max_iter=10, random_state=0).fit(X, y)
    assert reg.learning_rate_ * reg.n_iter_ * 2000 / 8 == pytest.approx(5.0)
    # Below ρ = μn/d = 8 the training time shrinks in proportion: at ε = 0.1,
    # μ = 0.0325 and ρ = 1.22, so ηT·p/d = 5·1.22/8 and T = round(6.1).
    reg = DPRandomFeaturesRegressor(2000, epsilon=0.1, random_state=0).fit(X, y)
    rho = mu_from_epsilon(0.1, 1e-5) * 300 / 8
    assert reg.n_iter_ == round(5 * rho / 8 * 8) == 6


def test_auto_solver_reads_sizes_only():
    # Predicted costs: the kernel form wins for p ≥ n with many steps.
    primal, kernel = _solver_seconds(2000, 100, 40000, 500)
    assert kernel < primal / 4
    primal, kernel = _solver_seconds(20000, 20, 1000, 100)
    assert primal < kernel
    # Below p = n too the kernel form factors K + λI by Cholesky (no eigh
    # since the jitter): at n = 2000, p = 1995, T = 500 it is the faster
    # (measured on an idle 2-core machine: primal 1.10 s, kernel 0.79 s;
    # predicted 0.97 and 0.66), at p = 1000 the primal (0.51 s against 0.65;
    # predicted 0.49 and 0.61), and well above n the kernel form again.
    primal, kernel = _solver_seconds(2000, 100, 1995, 500)
    assert kernel < primal
    primal, kernel = _solver_seconds(2000, 100, 1000, 500)
    assert primal < kernel
    primal, kernel = _solver_seconds(2000, 100, 4000, 500)
    assert kernel < primal
    X, y = sign_task(200, 10, seed=11)
    assert DPRandomFeaturesRegressor(2000).fit(X, y).solver_ == "kernel"
    assert DPRandomFeaturesRegressor(50).fit(X, y).solver_ == "primal"


def test_predict_is_the_feature_map_times_coef():
    X, y = sign_task(150, 4, seed=12)
    reg = DPRandomFeaturesRegressor(500, epsilon=2.0, random_state=0).fit(X, y)
    X_new = sign_task(7, 4, seed=13)[0]
    expected = np.tanh(X_new @ reg.random_weights_) @ reg.coef_
    np.testing.assert_allclose(reg.predict(X_new), expected, rtol=1e-12)


@pytest.mark.parametrize("activation", ["erf", "sin", np.arctan])
def test_other_activations(activation):
    X, y = sign_task(150, 4, seed=14)
    reg = DPRandomFeaturesRegressor(
        500, activation=activation, epsilon=1e4, random_state=0
    ).fit(X, y)
    assert reg.score(X, y) > 0.5


def test_learns_the_sign_task_at_moderate_epsilon():
    # Figure 3's task at a smaller size (n = 1500, d = 30, p = 3000, ε = 2);
    # predicting 0 has test MSE 1, non-private min-norm regression on these
    # features about 0.45. Tolerance: the worst of 3 seeds below 0.7.
    X, y = sign_task(2500, 30, seed=15)
    X_test, y_test = X[1500:], y[1500:]
    mses = []
    for seed in range(3):
        reg = DPRandomFeaturesRegressor(
            3000, epsilon=2.0, delta=1e-6, random_state=seed
        ).fit(X[:1500], y[:1500])
        mses.append(np.mean((reg.predict(X_test) - y_test) ** 2))
    assert max(mses) < 0.7


# --- bad and hostile input -------------------------------------------------------


def test_bad_input_raises_before_any_work():
    X, y = sign_task(50, 3, seed=16)
    bad_X = X.copy()
    bad_X[3, 1] = np.nan
    with pytest.raises(ValueError, match="NaN"):
        DPRandomFeaturesRegressor().fit(bad_X, y)
    bad_y = y.copy()
    bad_y[0] = np.inf
    with pytest.raises(ValueError, match="infinity"):
        DPRandomFeaturesRegressor().fit(X, bad_y)
    with pytest.raises(ValueError, match="inconsistent numbers of samples"):
        DPRandomFeaturesRegressor().fit(X, y[:-1])
    with pytest.raises(InvalidParameterError, match="n_components"):
        DPRandomFeaturesRegressor(0).fit(X, y)
    with pytest.raises(InvalidParameterError, match="activation"):
        DPRandomFeaturesRegressor(activation="relu6").fit(X, y)
    with pytest.raises(ValueError, match="input's shape"):
        DPRandomFeaturesRegressor(activation=lambda z: z[:, :1]).fit(X, y)
    with pytest.raises(ValueError, match="2 input"):
        DPRandomFeaturesRegressor(activation=np.add).fit(X, y)
    with pytest.raises(ValueError, match="delta > 0"):
        DPRandomFeaturesRegressor(delta=0.0).fit(X, y)
    reg = DPRandomFeaturesRegressor(100, random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        reg.predict(X[:, :2])


@pytest.mark.parametrize("solver", ["primal", "kernel"])
def test_hostile_records_leave_a_finite_private_model(solver):
    X, y = sign_task(60, 3, seed=17)
    X[0] = [1e308, -1e308, 1e308]  # X @ V overflows: inf - inf = NaN
    y[1] = 1e308  # residual 2(u - y) overflows
    reg = DPRandomFeaturesRegressor(
        100, activation="sin", solver=solver, random_state=0
    ).fit(X, y)
    assert np.isfinite(reg.coef_).all()
    assert np.isfinite(reg.predict(X)).all()


def test_zero_rows_with_huge_labels_fit_under_secure_noise(monkeypatch):
    # x = 0 gives φ = 0: such a record's gradient is 0 whatever its residual,
    # which no clip bounds; the engine summed those residuals into the slot of
    # an intercept it does not fit, and secure noise rounded that slot, +inf
    # plus −inf = NaN, and raised where the neighbour fitted. The slot now
    # reaches the sampler as 0.
    from skdp import _dpgd

    X, y = sign_task(40, 3, seed=12)
    X[[0, 1, 8, 9]] = 0.0
    y[[0, 8]], y[[1, 9]] = -6e307, 6e307
    slots = []
    real_noise = _dpgd.add_gaussian_noise

    def noise(values, std, rng):
        slots.append(values[-1].copy())
        return real_noise(values, std, rng)

    monkeypatch.setattr(_dpgd, "add_gaussian_noise", noise)
    for labels in (y, np.where(np.arange(40) == 9, 0.0, y)):  # and a neighbour
        reg = DPRandomFeaturesRegressor(
            8, noise="secure", max_iter=3, solver="primal"
        ).fit(X, labels)
        assert np.isfinite(reg.coef_).all()
    assert len(slots) == 6 and not np.any(slots)


@pytest.mark.parametrize("blocks", [1, 3])
def test_a_row_whose_squares_underflow_is_a_zero_row(blocks, monkeypatch):
    # φ(x) = tanh(Vx) = Vx for x = 1e-200 (entries near 1e-200, squares 0 in
    # float64): the row is run as a zero row (its gradient is at most
    # |ℓ'|·1e-140), at no extra cost. Recomputing it exactly took one more
    # pass over the features, which that one record triggered: its running
    # time showed it (review). The other rows are as with a zero row there,
    # summed over every block of feature columns.
    from skdp.random_features import _features

    monkeypatch.setattr(_features, "_BLOCK_VALUES", 20 * 256 if blocks > 1 else 1 << 22)
    p = 300 if blocks == 1 else 700  # blocks of 256 columns
    X, _ = sign_task(20, 4, seed=9)
    weights = draw_weights(np.random.default_rng(10), 4, p)
    assert len(list(_features.column_blocks(20, p))) == blocks
    xi = np.random.default_rng(11).standard_normal(p)
    zero = X.copy()
    X[0] *= 1e-200
    zero[0] = 0.0
    calls = []
    monkeypatch.setattr(_kernel, "features", lambda *a: calls.append(1) or features(*a))
    gram, h, norms = _kernel.gram_pass(X, weights, np.tanh, xi)
    assert len(calls) == blocks  # one pass
    want, want_h, want_norms = _kernel.gram_pass(zero, weights, np.tanh, xi)
    assert norms[0] == want_norms[0] == 0.0
    np.testing.assert_array_equal(gram, want)
    np.testing.assert_array_equal(h, want_h)
    assert not gram[0].any() and gram[1, 1] == pytest.approx(1.0, rel=1e-12)
    rows = _kernel.normalised_features(X, weights, np.tanh, slice(None), norms)
    assert not rows[0].any()


@pytest.mark.parametrize("activation", [np.tanh, np.sin, erf])
def test_named_features_turn_nan_into_zero_and_stay_in_unit_range(activation):
    # Pre-activations NaN (as inf - inf gives without FMA), ±inf (overflow)
    # and ordinary values; X itself is never NaN in fit (validated).
    X = np.array([[np.nan, 0.0], [1e308, 1e308], [0.5, -2.0]])
    W = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 4.0]])
    out = features(X, W, activation)
    assert np.isfinite(out).all() and np.abs(out).max() <= 1.0
    assert out[0, 0] == 0.0 and out[0, 2] == 0.0  # NaN → 0
    # Same formula; a few ulp of slack between a matrix and a row product.
    np.testing.assert_array_max_ulp(out[2], activation(X[2] @ W), 4)


def test_callable_features_follow_the_per_entry_finiteness_rule():
    # A callable may return NaN, ±inf or huge values; each entry is mapped by
    # the fixed rule NaN → 0, clip to ±1e100 (a function of that entry only).
    def wild(Z):
        return np.where(Z > 0, np.inf, np.where(Z < 0, -1e300, np.nan))

    X = np.array([[1.0, 0.0], [-1.0, 0.0], [0.0, 0.0]])
    out = features(X, np.eye(2), wild)
    np.testing.assert_array_equal(out, [[1e100, 0.0], [-1e100, 0.0], [0.0, 0.0]])
    # Finite values inside the bound are left alone.
    np.testing.assert_array_equal(features(X, np.eye(2), lambda Z: 3 * Z), 3 * X)


@pytest.mark.filterwarnings("ignore:overflow:RuntimeWarning")
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")
@pytest.mark.parametrize("solver", ["primal", "kernel"])
def test_a_non_finite_model_raises_mechanism_failed(solver):
    # Clipping bounds every step, so only an absurd step size overflows.
    X, y = sign_task(60, 3, seed=18)
    reg = DPRandomFeaturesRegressor(
        100, learning_rate=1e308, max_iter=5, solver=solver, random_state=0
    )
    with pytest.raises(MechanismFailedError, match="non-finite"):
        reg.fit(X, y)
    assert not hasattr(reg, "coef_")


def test_sparse_and_float32_inputs_give_the_dense_float64_model():
    # With a well-conditioned Gram matrix (d = 20). For a nearly singular one,
    # rounding differences can switch the kernel solver to the other
    # factorisation: another draw from the same law, not the same draw.
    X, y = sign_task(80, 20, seed=19)
    X[X < 0.5] = 0.0
    dense = DPRandomFeaturesRegressor(300, random_state=0).fit(X, y)
    for X_other in (sp.csr_matrix(X), X.astype(np.float32)):
        other = DPRandomFeaturesRegressor(300, random_state=0).fit(X_other, y)
        np.testing.assert_allclose(other.coef_, dense.coef_, rtol=1e-5, atol=1e-8)


def test_verbose_reports_privacy_progress_and_a_summary(capsys):
    X, y = sign_task(100, 4, seed=20)
    DPRandomFeaturesRegressor(
        500, solver="kernel", max_iter=20, verbose=1, random_state=0
    ).fit(X, y)
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("[DPRandomFeaturesRegressor] spending (1, 1e-05)-DP")
    assert any("step 20/20" in line for line in lines)
    assert "released a model that is (1, 1e-05)-DP" in lines[-1]


# --- Figure 3 of the paper, in miniature ---------------------------------------------


@pytest.mark.filterwarnings("ignore::skdp.PrivacyLeakWarning")  # δ = 1/n, as in [1]
def test_figure_3_trends_in_miniature():
    # Figure 3 (first panel) at n = 300, d = 20, ε = 4, δ = 1/n, p ∈ {100,
    # 300 = n, 1000}, mean test MSE over 3 seeds (1000 test points). The
    # non-private min-norm solution θ* = Φ⁺y peaks at p = n (MSE in the
    # hundreds, about 0.55 beside it); DP-GD has no peak (measured 0.44 at
    # all three p); exact accounting beats the paper's (measured 0.04-0.05
    # lower test MSE at every p).
    n, d = 300, 20
    mse = {"paper": [], "exact": [], "min_norm": []}
    for p in (100, 300, 1000):
        rows = {key: [] for key in mse}
        for seed in range(3):
            X, y = sign_task(n + 1000, d, seed=seed)
            X_test, y_test, X, y = X[n:], y[n:], X[:n], y[:n]
            for accounting in ("paper", "exact"):
                reg = DPRandomFeaturesRegressor(
                    p,
                    epsilon=4.0,
                    delta=1 / n,
                    accounting=accounting,
                    random_state=seed,
                ).fit(X, y)
                rows[accounting].append(np.mean((reg.predict(X_test) - y_test) ** 2))
            weights = reg.random_weights_
            theta_star = np.linalg.pinv(features(X, weights, np.tanh)) @ y
            pred_star = features(X_test, weights, np.tanh) @ theta_star
            rows["min_norm"].append(np.mean((pred_star - y_test) ** 2))
        for key in mse:
            mse[key].append(np.mean(rows[key]))
    low, at_n, high = mse["min_norm"]
    assert at_n > 50 * max(low, high)  # the interpolation peak
    low, at_n, high = mse["exact"]
    assert at_n < 1.1 * max(low, high) < 0.6  # no peak, and it learns
    low, at_n, high = mse["paper"]
    assert at_n < 1.1 * max(low, high)
    gains = np.subtract(mse["paper"], mse["exact"])
    assert gains.min() > 0.02


def _final_predictions_and_theta(X, y, weights, activation, noise_std, n_iter):
    """ũ_T from the kernel recursion and θ_T from the same run (white box)."""
    from skdp._dpgd import _Progress

    n, p = X.shape[0], weights.shape[1]
    rng = np.random.default_rng(0)
    xi = rng.standard_normal(p)
    gram, h, norms = _kernel.gram_pass(X, weights, activation, xi)
    root = _kernel.gram_square_root(gram, _kernel.gram_jitter(n, p))
    dual, preds = _kernel.dual_iterates(
        gram,
        norms,
        y,
        Quadratic(),
        root,
        np.sqrt(n_iter) * h,
        clip_norm=1.0,
        step=0.5 / n,
        noise_std=noise_std,
        n_iter=n_iter,
        rng=rng,
        progress=_Progress("test", n_iter, 0),
    )
    theta = _kernel.transpose_pass(X, weights, activation, dual, norms)
    theta += noise_std * np.sqrt(n_iter) * xi
    return preds, theta, norms


@pytest.mark.parametrize("activation", ["sin", "tanh"])
@pytest.mark.parametrize("n_components", [4, 6, 3000])  # p < n, p = n, p > n
def test_the_clips_see_all_of_the_noise_theta_carries(activation, n_components):
    """The clips are decided on the predictions ũ_t = Φ̃θ_t, so the noise in
    the predictions must be the noise θ carries, in every direction of K̃.
    A record x₃ = x₂ + δu gives K̃ an eigenvalue of order δ² that float64
    cannot resolve. The earlier form solved with K̃ and dropped such
    directions from the predictions (a review: the clips then ran on a
    data-dependent approximation, outside the proof): over this sweep its
    final predictions differed from Φ̃θ_T by up to 5e-4 of the noise scale
    (p = 3000, tanh; 9e-6 at p = n). They now agree to 1e-9 of it. This
    checks the coupling of the predictions with θ_T (the walk ends on the
    noise θ_T carries), whatever the square root; the walk's law on the way
    is the next test's."""
    from skdp.random_features._features import resolve_activation

    act = resolve_activation(activation)
    n, d, noise_std, n_iter = 6, 50, 0.3, 7
    weights = draw_weights(np.random.default_rng(1), d, n_components)
    worst = 0.0
    for delta in np.geomspace(1e-2, 1e-9, 15):
        rng = np.random.default_rng(0)
        X = 3.0 * rng.standard_normal((n, d))
        X[3] = X[2] + delta * rng.standard_normal(d)
        y = rng.standard_normal(n)
        preds, theta, norms = _final_predictions_and_theta(
            X, y, weights, act, noise_std, n_iter
        )
        rows = _kernel.normalised_features(X, weights, act, slice(None), norms)
        scale = noise_std * np.sqrt(n_iter)
        worst = max(worst, np.abs(preds - rows @ theta).max() / scale)
    assert worst < 1e-9


def test_a_callable_activation_cannot_mix_records():
    # A callable that normalises by its batch's largest value passed the old
    # probe (whose first row held the largest value) and let one record move
    # every other record's features: 88 times the claimed mu along one pair
    # (review). A callable that is not a ufunc is now applied row by row.
    from skdp.random_features._features import features, resolve_activation

    rng = np.random.default_rng(0)
    X = rng.standard_normal((50, 3))
    W = rng.standard_normal((3, 8))
    neighbour = X.copy()
    neighbour[0] = 1e6

    def batch_max(Z):
        return np.tanh(3.0 * Z / np.abs(Z).max())

    act = resolve_activation(batch_max)
    np.testing.assert_array_equal(
        features(X, W, act)[1:], features(neighbour, W, act)[1:]
    )
    expected = np.vstack([batch_max(row[None, :]) for row in X @ W])
    np.testing.assert_allclose(features(X, W, act), expected, rtol=1e-12)
    # A generalised ufunc may span the rows (its core dimensions): row by row.
    from skdp.random_features._features import _elementwise_ufunc

    assert _elementwise_ufunc(np.arctan)
    assert not _elementwise_ufunc(np.linalg._umath_linalg.det)  # "(m,m)->()"
    # A ufunc acts entry by entry and is applied to the whole block.
    np.testing.assert_array_max_ulp(
        features(X, W, resolve_activation(np.arctan)), np.arctan(X @ W), 4
    )


@pytest.mark.parametrize("wrap", [np.vectorize, lambda f: np.frompyfunc(f, 1, 1)])
@pytest.mark.parametrize("solver", ["primal", "kernel"])
def test_an_activation_that_raises_on_one_record_zeroes_its_features(wrap, solver):
    # A softplus written with math.exp overflows on one record: the fit
    # raised on that data set and not on its neighbour (and a private
    # search's run scored its worst; review). The record gets features 0,
    # a rule of its own; np.frompyfunc's object ufunc is applied row by row.
    import math

    from skdp.random_features import _features

    softplus = wrap(lambda t: math.log1p(math.exp(t)))
    X, y = sign_task(60, 4, seed=3)
    hostile = X.copy()
    hostile[0] = [2000.0, -2000.0, 2000.0, -2000.0]
    for data in (X, hostile):
        reg = DPRandomFeaturesRegressor(
            50, activation=softplus, solver=solver, max_iter=3, random_state=0
        ).fit(data, y)
        assert np.isfinite(reg.coef_).all()
    Z = np.array([[2000.0, 1.0, -1.0], [0.5, -0.5, 2.0], [3.0, 0.0, -3.0]])
    A = _features._entry_by_entry(softplus, Z)
    assert not A[0].any()
    np.testing.assert_allclose(A[1:], np.log1p(np.exp(Z[1:])), rtol=1e-12)


@pytest.mark.parametrize("activation", ["erf", "expit"])
def test_scipy_special_errors_of_the_caller_do_not_reach_a_fit(activation):
    # scipy.special has its own error switch, which np.errstate leaves
    # alone: under the caller's scipy.special.errstate(all="raise") erf
    # raised on a pre-activation beyond 50, so one record decided whether
    # the fit failed; under "warn" it warned (review).
    import warnings

    import scipy.special

    activation = "erf" if activation == "erf" else scipy.special.expit
    X, y = sign_task(200, 2, seed=0)
    hostile = X.copy()
    hostile[0] = [1e4, 1e4]
    for mode in ("raise", "warn"):
        with warnings.catch_warnings():
            warnings.simplefilter("error", scipy.special.SpecialFunctionWarning)
            with scipy.special.errstate(all=mode):
                for data in (X, hostile):
                    reg = DPRandomFeaturesRegressor(
                        50, activation=activation, max_iter=3, random_state=0
                    ).fit(data, y)
                    assert np.isfinite(reg.predict(data)).all()


def test_an_activation_that_fails_at_the_fits_widths_is_refused():
    # It maps the (1, 4) probe, but not a row of n_components values: every
    # record got features 0 (the per-record rule) and the model predicted 0
    # everywhere, silently (review). Probed at the public widths the fit
    # uses (n_components, the column blocks' widths), it is refused.
    X, y = sign_task(200, 3, seed=0)
    for activation in (
        lambda z: np.tanh(z).reshape(-1, 4),
        lambda z: np.tanh(z) if z.shape[1] < 10 else 1 / 0,
    ):
        reg = DPRandomFeaturesRegressor(64, activation=activation, random_state=0)
        with pytest.raises(ValueError, match="a width the fit uses"):
            reg.fit(X, y)
        assert not hasattr(reg, "coef_")
    # one that works at every width fits
    DPRandomFeaturesRegressor(
        64, activation=lambda z: np.maximum(z, 0), max_iter=2, random_state=0
    ).fit(X, y)
