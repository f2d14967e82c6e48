"""The shared Gram release (skdp.mechanisms.gram_mechanism, skdp._gram).

DPLinearRegression and DPPCA both release the Gram matrix of clipped rows
through these two pieces; a bug here breaks both. Tolerances: exact
identities to 1e-12 (relative); the noise's standard deviation over 4000
seeded draws to 5% (the sample std of 4000 Gaussians is within 5% with
probability > 0.999).
"""

import math
import warnings

import numpy as np
import pytest

from skdp import mechanisms as mech
from skdp._gram import clipped_gram, clipped_rows, row_norm_bound
from skdp.mechanisms import as_generator, gram_mechanism, gram_sensitivity


def _random_rows(rng, size, dim, radius):
    """Rows of norm exactly ``radius`` (the worst case) and some shorter."""
    W = rng.standard_normal((size, dim))
    W *= radius / np.linalg.norm(W, axis=1, keepdims=True)
    W[: size // 2] *= rng.uniform(0, 1, size // 2)[:, None]
    return W


@pytest.mark.parametrize("dim", [1, 2, 5])
def test_gram_sensitivity_bounds_every_replacement_and_is_attained(dim):
    rng = np.random.default_rng(dim)
    C = 1.7
    W, V = _random_rows(rng, 4000, dim, C), _random_rows(rng, 4000, dim, C)
    moves = np.linalg.norm(
        np.einsum("ni,nj->nij", W, W) - np.einsum("ni,nj->nij", V, V), axis=(1, 2)
    )
    assert moves.max() <= gram_sensitivity(C) * (1 + 1e-12)
    if dim >= 2:  # two orthogonal rows of norm C attain it
        a, b = np.zeros(dim), np.zeros(dim)
        a[0], b[1] = C, C
        move = np.linalg.norm(np.outer(a, a) - np.outer(b, b))
        assert move == pytest.approx(gram_sensitivity(C), rel=1e-12)
    assert gram_sensitivity(C) == pytest.approx(math.sqrt(2) * C * C, rel=1e-15)


def test_regression_release_without_yty_has_the_same_sensitivity():
    """The part DPLinearRegression needs (all but the y-block) moves by up to
    sqrt(2)·R² too when β·C_y <= R_x: brute force over random rows, and the
    construction of the docstring attains it."""
    rng = np.random.default_rng(0)
    d, C_x, c0, B = 3, 2.0, 1.0, 1.8  # B = β·C_y <= R_x = sqrt(5)
    R = row_norm_bound(C_x, c0, B, 1.0)

    def release(x, y):
        w = np.concatenate([x, [c0], [y]])
        G = np.outer(w, w)
        G[-1, -1] = 0.0  # yᵀy is not needed
        return G

    worst = 0.0
    for _ in range(20000):
        x1, x2 = _random_rows(rng, 2, d, C_x)
        y1, y2 = rng.uniform(-B, B, 2)
        worst = max(worst, np.linalg.norm(release(x1, y1) - release(x2, y2)))
    assert worst <= gram_sensitivity(R) * (1 + 1e-12)
    # Feature parts of norm R_x with inner product B² (x1ᵀx2 = B² - c0²),
    # opposite targets ±B.
    t = (B * B - c0 * c0) / (C_x * C_x)
    x1 = np.array([C_x, 0.0, 0.0])
    x2 = C_x * np.array([t, math.sqrt(1 - t * t), 0.0])
    attained = np.linalg.norm(release(x1, B) - release(x2, -B))
    assert attained == pytest.approx(gram_sensitivity(R), rel=1e-12)


def test_gram_mechanism_is_one_gaussian_release_in_the_frobenius_geometry(
    monkeypatch,
):
    calls = []
    real = mech.gaussian_mechanism

    def spy(value, *, sensitivity, noise_multiplier, rng):
        calls.append((np.array(value), sensitivity, noise_multiplier))
        return real(
            value, sensitivity=sensitivity, noise_multiplier=noise_multiplier, rng=rng
        )

    monkeypatch.setattr(mech, "gaussian_mechanism", spy)
    G = np.arange(16.0).reshape(4, 4)
    G = G + G.T
    gram_mechanism(G, row_norm_bound=3.0, noise_multiplier=2.5, rng=as_generator(0))
    ((vector, sensitivity, z),) = calls
    assert vector.shape == (10,)  # the upper triangle, once
    assert np.linalg.norm(vector) == pytest.approx(np.linalg.norm(G), rel=1e-12)
    assert sensitivity == pytest.approx(math.sqrt(2) * 9.0, rel=1e-15)
    assert z == 2.5


def test_gram_mechanism_noise_is_symmetric_with_the_calibrated_std():
    G = np.diag([4.0, 1.0, 2.0])
    z, C = 0.7, 1.3
    sigma = z * math.sqrt(2) * C * C
    draws = np.array(
        [
            gram_mechanism(G, row_norm_bound=C, noise_multiplier=z, rng=as_generator(s))
            for s in range(4000)
        ]
    )
    assert np.array_equal(draws, np.transpose(draws, (0, 2, 1)))
    noise = draws - G
    std = noise.std(axis=0, ddof=1)
    np.testing.assert_allclose(np.diag(std), sigma, rtol=0.05)
    off = std[np.triu_indices(3, 1)]
    np.testing.assert_allclose(off, sigma / math.sqrt(2), rtol=0.05)
    np.testing.assert_allclose(noise.mean(axis=0), 0, atol=4 * sigma / math.sqrt(4000))
    exact = gram_mechanism(
        G, row_norm_bound=C, noise_multiplier=0.0, rng=as_generator(0)
    )
    np.testing.assert_array_equal(exact, G)


def test_gram_mechanism_secure_source_rounds_one_release():
    G = np.array([[2.0, 1.0], [1.0, 3.0]])
    noisy = gram_mechanism(
        G, row_norm_bound=1.0, noise_multiplier=1.0, rng=as_generator(None, "secure")
    )
    assert np.array_equal(noisy, noisy.T) and np.all(np.isfinite(noisy))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_clipped_gram_is_the_gram_of_the_clipped_augmented_rows(dtype):
    rng = np.random.default_rng(1)
    X = (rng.standard_normal((3000, 4)) * 3).astype(dtype)
    Y = rng.standard_normal((3000, 2)).astype(dtype)
    G = clipped_gram(X, Y, x_clip=2.0, constant=0.5, y_clip=1.5, y_weight=0.7)
    X64, Y64 = X.astype(np.float64), Y.astype(np.float64)
    Xc = X64 * np.minimum(1, 2.0 / np.linalg.norm(X64, axis=1))[:, None]
    Yc = Y64 * np.minimum(1, 1.5 / np.linalg.norm(Y64, axis=1))[:, None]
    W = np.hstack([Xc, np.full((3000, 1), 0.5), 0.7 * Yc])
    np.testing.assert_allclose(G, W.T @ W, rtol=1e-12, atol=1e-9)
    assert np.array_equal(G, G.T)
    assert np.linalg.norm(W, axis=1).max() <= row_norm_bound(2.0, 0.5, 1.5, 0.7) * (
        1 + 1e-12
    )


def test_clipped_rows_hold_the_bound_for_every_finite_input():
    X = np.array(
        [
            [1e308, -1e308, 1e308],  # norm beyond float64: contributes nothing
            [1e200, 0.0, 0.0],
            [1e-300, 0.0, 0.0],
            [0.0, 0.0, 0.0],
            [3.0, 4.0, 0.0],
        ]
    )
    out = clipped_rows(X, 2.0)
    norms = np.linalg.norm(out, axis=1)
    assert np.all(np.isfinite(out)) and norms.max() <= 2.0 * (1 + 1e-12)
    np.testing.assert_allclose(out[1], [2.0, 0, 0])
    np.testing.assert_allclose(out[4], [1.2, 1.6, 0])
    assert out[2, 0] == 1e-300 and not out[3].any()
    G = clipped_gram(X, x_clip=2.0, constant=1.0)
    assert np.all(np.isfinite(G)) and G[3, 3] == 5.0  # n·constant²


def test_a_replaced_record_moves_the_clipped_gram_by_at_most_the_sensitivity():
    rng = np.random.default_rng(2)
    X = rng.standard_normal((200, 3)) * 5
    y = rng.standard_normal((200, 1)) * 5
    kwargs = dict(x_clip=1.5, constant=1.0, y_clip=2.0, y_weight=0.8)
    R = row_norm_bound(1.5, 1.0, 2.0, 0.8)
    base = clipped_gram(X, y, **kwargs)
    for _ in range(50):
        X2, y2 = X.copy(), y.copy()
        X2[7], y2[7] = rng.standard_normal(3) * 1e3, rng.standard_normal(1) * 1e3
        move = np.linalg.norm(clipped_gram(X2, y2, **kwargs) - base)
        assert move <= gram_sensitivity(R) * (1 + 1e-9)


# --------------------------------------------------------------------------
# Gaps found by mutation testing of skdp/_gram.py
# --------------------------------------------------------------------------


def _reference_gram(X, Y, x_clip, constant, y_clip, y_weight):
    """Σ_i w_i w_iᵀ written out row by row, in float64 (oracle)."""
    parts = []
    X = np.asarray(X, dtype=np.float64)
    norms = np.linalg.norm(X, axis=1)
    parts.append(X * np.minimum(1.0, x_clip / np.maximum(norms, 1e-300))[:, None])
    if constant is not None:
        parts.append(np.full((X.shape[0], 1), constant))
    if Y is not None:
        Y = np.asarray(Y, dtype=np.float64)
        y_norms = np.linalg.norm(Y, axis=1)
        factor = y_weight * np.minimum(1.0, y_clip / np.maximum(y_norms, 1e-300))
        parts.append(Y * factor[:, None])
    W = np.hstack(parts)
    return W.T @ W


def test_row_norm_bound_is_the_norm_of_its_parts_with_neutral_defaults():
    # The sensitivity of every Gram release is computed from this bound:
    # x_clip² (not 2·x_clip, equal at 2 only), and defaults that add nothing
    # (no constant, no target, y_weight 1). Oracle: math.hypot.
    assert row_norm_bound(1.5) == pytest.approx(1.5, rel=1e-15)
    assert row_norm_bound(1.5, 0.8) == pytest.approx(math.hypot(1.5, 0.8), rel=1e-15)
    assert row_norm_bound(1.5, 0.8, 2.0) == pytest.approx(
        math.hypot(1.5, 0.8, 2.0), rel=1e-15
    )
    assert row_norm_bound(1.5, 0.8, 2.0, 0.3) == pytest.approx(
        math.hypot(1.5, 0.8, 0.6), rel=1e-15
    )


@pytest.mark.parametrize("constant", [None, 0.5])
@pytest.mark.parametrize("with_y", [False, True])
def test_clipped_gram_sums_every_block_of_rows(monkeypatch, constant, with_y):
    # Blocks of a few rows (the default block holds ~10⁵ rows, more than any
    # test's n): every block is added once, from its own rows, and the result
    # is (m, m) with m = d + (constant given) + k. Rows far out so that most
    # are clipped; y_weight left at its default (1).
    import skdp._gram

    monkeypatch.setattr(skdp._gram, "_BLOCK_VALUES", 40)
    rng = np.random.default_rng(5)
    X = rng.standard_normal((101, 4)) * 3
    Y = rng.standard_normal((101, 2)) * 2 if with_y else None
    y_clip = 1.5 if with_y else None
    G = clipped_gram(X, Y, x_clip=2.0, constant=constant, y_clip=y_clip)
    expected = _reference_gram(X, Y, 2.0, constant, y_clip, 1.0)
    assert G.shape == expected.shape
    np.testing.assert_allclose(G, expected, rtol=1e-12, atol=1e-12)
    assert np.array_equal(G, G.T)


def test_rows_beyond_the_float_range_and_zero_rows_hold_the_bound_silently():
    # A finite row whose norm exceeds float64's range contributes nothing
    # (factor 0; factor 1 would release it unclipped), a zero row needs no
    # clip; neither may raise a floating-point warning (a warning that only
    # some records trigger tells who is in the data).
    X = np.array(
        [
            [1.5e308, 1.5e308, 0.0],  # norm 2.1e308 > float64 max
            [0.0, 0.0, 0.0],
            [3.0, 4.0, 0.0],
        ]
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = clipped_rows(X, 2.0)
        G = clipped_gram(X, x_clip=2.0, constant=1.0)
    np.testing.assert_array_equal(out[:2], 0.0)
    np.testing.assert_allclose(out[2], [1.2, 1.6, 0.0], rtol=1e-15)
    expected = np.zeros((4, 4))
    expected[:3, :3] = np.outer(out[2], out[2])
    expected[:3, 3] = expected[3, :3] = out[2]
    expected[3, 3] = 3.0  # n·constant²
    np.testing.assert_allclose(G, expected, rtol=1e-15, atol=0)


def test_float32_rows_are_clipped_in_float64():
    # Norms of float32 rows are taken in float64: a row near float32's
    # largest value is clipped to the bound (not dropped as overflowing),
    # and every clipped row has norm <= clip to a few float64 ulps (a
    # float32 norm is only good to ~1e-7).
    rng = np.random.default_rng(6)
    top = float(np.finfo(np.float32).max)
    directions = rng.standard_normal((200, 2))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    ordinary = directions * rng.uniform(2.0, 1e4, 200)[:, None]  # all clipped
    X32 = np.vstack([[top, top], [top / 2, -top / 3], ordinary]).astype(np.float32)
    out = clipped_rows(X32, 1.3)
    assert out.dtype == np.float64
    norms = np.linalg.norm(out, axis=1)
    assert norms.max() <= 1.3 * (1 + 4 * np.finfo(np.float64).eps)
    np.testing.assert_allclose(norms, 1.3, rtol=1e-14)
    X64 = X32.astype(np.float64)
    np.testing.assert_allclose(
        out, X64 * (1.3 / np.linalg.norm(X64, axis=1))[:, None], rtol=1e-14
    )


def test_dask_clipped_gram_matches_in_memory():
    # The Dask path runs the same per-block code on each row chunk (tree
    # sum): with targets as columns, a constant and a target weight, it
    # equals the in-memory Gram matrix; an empty chunk adds zeros.
    da = pytest.importorskip("dask.array")
    rng = np.random.default_rng(7)
    X = rng.standard_normal((90, 3)) * 3
    Y = rng.standard_normal((90, 2)) * 2
    kwargs = dict(x_clip=2.0, constant=0.5, y_clip=1.5, y_weight=0.7)
    expected = clipped_gram(X, Y, **kwargs)
    rows = (25, 0, 40, 25)
    Xd = da.from_array(X, chunks=(rows, 3))
    columns = tuple(da.from_array(Y[:, j], chunks=(rows,)) for j in range(2))
    got = clipped_gram(Xd, columns, **kwargs)
    assert got.shape == (6, 6)
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    alone = clipped_gram(Xd, x_clip=2.0)  # no target, no constant
    np.testing.assert_allclose(alone, clipped_gram(X, x_clip=2.0), rtol=1e-12)


def test_a_row_whose_clip_factor_is_subnormal_stays_within_the_clip():
    # C/||x|| = 0.51·2⁻¹⁰⁷⁴ rounds to 2⁻¹⁰⁷⁴ when computed: the row would
    # keep norm 1.96·C, and its Gram term 3.8·C² (review, 2026-11-27).
    C = 1e-100
    r = C / 5e-324 / 0.51  # finite: 4e223
    X = np.array([[r, 0.0], [0.0, -r], [3e-101, 4e-101]])
    out = clipped_rows(X, C)
    assert np.linalg.norm(out, axis=1).max() <= C * (1 + 1e-12)
    G = clipped_gram(X[:1], x_clip=C)
    assert np.abs(G).max() <= C**2 * (1 + 1e-12)


def test_a_target_whose_weighted_factor_is_subnormal_stays_within_the_clip():
    # The target's factor is y_weight·min(1, C_y/||y||): each factor normal,
    # their product subnormal (y_weight ~1e-16, ||y|| ~1e308) and rounded up
    # to 1.9993·y_weight·C_y; one record then moved DPLinearRegression's
    # Gram matrix by 2.79 times its sensitivity (ε ≈ 3 for a claimed 1;
    # review).
    y_weight, C_y = math.sqrt(1.9e-32 / 3.0), 3.0
    for target in np.geomspace(1e300, 1.7e308, 400):
        Y = np.array([[target], [-target]])
        G = clipped_gram(
            np.zeros((2, 1)),
            Y,
            x_clip=1.0,
            constant=None,
            y_clip=C_y,
            y_weight=y_weight,
        )
        assert G[1, 1] <= 2 * (y_weight * C_y) ** 2 * (1 + 1e-12)
