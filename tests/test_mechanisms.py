"""Tests for :mod:`skdp.mechanisms`.

Every randomised test fixes its seed. The statistical checks use 10⁶ draws;
each tolerance is stated next to it as a multiple of the estimator's standard
error, so a wrong scale (a variance passed as a std, a Laplace b confused with
its std, a missing sensitivity factor) fails by hundreds of standard errors.
"""

import numpy as np
import pytest

from skdp.mechanisms import (
    SecureNoise,
    add_gaussian_noise,
    add_laplace_noise,
    as_generator,
    check_secure_seed,
    gaussian_mechanism,
    gaussian_noise,
    laplace_noise,
    noise_seed_id,
    peel_top_k,
)

N_DRAWS = 10**6
SEED = 20240607


# ---------------------------------------------------------------------------
# as_generator
# ---------------------------------------------------------------------------


def test_none_gives_fresh_entropy_each_call():
    a = as_generator(None)
    b = as_generator(None)
    assert isinstance(a, np.random.Generator)
    assert a is not b
    # Two OS-seeded streams agree on 8 doubles with probability ~2^-400.
    assert not np.array_equal(a.random(8), b.random(8))


@pytest.mark.parametrize("seed", [0, 42, np.int64(7), 2**40])
def test_int_seed_is_reproducible(seed):
    a = as_generator(seed)
    assert isinstance(a, np.random.Generator)
    np.testing.assert_array_equal(a.random(8), as_generator(seed).random(8))
    # ... and is numpy's default_rng(seed), not some other derivation.
    np.testing.assert_array_equal(
        as_generator(seed).random(8), np.random.default_rng(int(seed)).random(8)
    )


def test_different_int_seeds_give_different_streams():
    assert not np.array_equal(as_generator(1).random(8), as_generator(2).random(8))


def test_random_state_advances_and_is_reproducible():
    rs = np.random.RandomState(3)
    first = as_generator(rs).random(8)
    second = as_generator(rs).random(8)
    # Seeding consumed the RandomState's stream, so the next call differs ...
    assert not np.array_equal(first, second)
    # ... and the stream is no longer where a fresh RandomState(3) starts.
    assert rs.randint(2**31) != np.random.RandomState(3).randint(2**31)
    # The same seed gives the same generators, in the same order.
    rs_again = np.random.RandomState(3)
    np.testing.assert_array_equal(as_generator(rs_again).random(8), first)
    np.testing.assert_array_equal(as_generator(rs_again).random(8), second)


def test_generator_seeds_a_reproducible_child_stream():
    # A child stream, not the generator itself (see tests/test_seeds.py for
    # why): the same state gives the same child, and the parent advances.
    rng = np.random.default_rng(5)
    same = np.random.default_rng(5)
    child = as_generator(rng)
    assert child is not rng
    assert child.normal() == as_generator(same).normal()
    assert as_generator(rng).normal() != as_generator(np.random.default_rng(5)).normal()


def test_invalid_random_state_raises():
    with pytest.raises(ValueError):
        as_generator("not a seed")


# ---------------------------------------------------------------------------
# gaussian_noise / laplace_noise
# ---------------------------------------------------------------------------

NOISE_FUNCTIONS = [gaussian_noise, laplace_noise]


@pytest.mark.parametrize("noise", NOISE_FUNCTIONS)
@pytest.mark.parametrize(
    ("shape", "expected_shape"), [(5, (5,)), ((3, 4), (3, 4)), ((), ())]
)
def test_noise_shape(noise, shape, expected_shape):
    out = noise(np.random.default_rng(SEED), 1.5, shape)
    assert out.shape == expected_shape
    assert out.dtype == np.float64
    assert np.all(np.isfinite(out))


@pytest.mark.parametrize("noise", NOISE_FUNCTIONS)
def test_noise_is_reproducible_and_not_constant(noise):
    a = noise(np.random.default_rng(SEED), 2.0, 100)
    b = noise(np.random.default_rng(SEED), 2.0, 100)
    np.testing.assert_array_equal(a, b)
    assert np.unique(a).size == 100  # i.i.d. continuous draws, no repeats


@pytest.mark.parametrize("noise", NOISE_FUNCTIONS)
def test_zero_scale_gives_zeros(noise):
    rng = np.random.default_rng(SEED)
    out = noise(rng, 0.0, (2, 3))
    np.testing.assert_array_equal(out, np.zeros((2, 3)))
    assert out.shape == (2, 3)


@pytest.mark.parametrize("noise", NOISE_FUNCTIONS)
@pytest.mark.parametrize("scale", [-1.0, -1e-12])
def test_negative_scale_raises(noise, scale):
    with pytest.raises(ValueError):
        noise(np.random.default_rng(SEED), scale, 3)


def test_gaussian_noise_distribution():
    std = 2.5
    x = gaussian_noise(np.random.default_rng(SEED), std, N_DRAWS)
    # Mean: SE = std/√n = 2.5e-3; tolerance 5 SE = 1.25e-2.
    assert abs(x.mean()) <= 5 * std / np.sqrt(N_DRAWS)
    # Std: relative SE = 1/√(2n) ≈ 7.1e-4; tolerance 5e-3 relative (7 SE).
    assert x.std() == pytest.approx(std, rel=5e-3)
    # Shape of the law: P(|X| ≤ std) = 0.682689 for a Gaussian (0.632 for a
    # Laplace of that std); SE = √(p(1-p)/n) ≈ 4.7e-4; tolerance 2.5e-3.
    assert np.mean(np.abs(x) <= std) == pytest.approx(0.682689, abs=2.5e-3)


def test_laplace_noise_distribution():
    scale = 2.5
    x = laplace_noise(np.random.default_rng(SEED), scale, N_DRAWS)
    # Mean: SE = √2·b/√n ≈ 3.5e-3; tolerance 5 SE.
    assert abs(x.mean()) <= 5 * np.sqrt(2) * scale / np.sqrt(N_DRAWS)
    # Mean absolute deviation: |X| ~ Exp(b), so E|X| = b with relative SE
    # 1/√n = 1e-3; tolerance 5e-3 relative (5 SE). A Gaussian of the same
    # std would give √(2/π)·√2·b ≈ 1.128·b.
    assert np.mean(np.abs(x)) == pytest.approx(scale, rel=5e-3)
    # Std = √2·b. The Laplace kurtosis is 6, so the sample std has relative
    # SE √(6 − 1)/(2√n) ≈ 1.1e-3; tolerance 6e-3 relative (≈ 5 SE).
    assert x.std() == pytest.approx(np.sqrt(2) * scale, rel=6e-3)


# ---------------------------------------------------------------------------
# gaussian_mechanism
# ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("sensitivity", "noise_multiplier"), [(1.0, 1.0), (2.0, 3.7), (0.25, 10.0)]
)
def test_gaussian_mechanism_noise_scale(sensitivity, noise_multiplier):
    value = np.full((1000, 1000), 3.0)  # 10⁶ coordinates
    out = gaussian_mechanism(
        value,
        sensitivity=sensitivity,
        noise_multiplier=noise_multiplier,
        rng=np.random.default_rng(SEED),
    )
    assert out.shape == value.shape
    noise = out - value
    std = noise_multiplier * sensitivity
    # Mean: tolerance 5 SE (SE = std/√n); std: 5e-3 relative (7 SE, as above).
    assert abs(noise.mean()) <= 5 * std / np.sqrt(N_DRAWS)
    assert noise.std() == pytest.approx(std, rel=5e-3)
    np.testing.assert_array_equal(value, 3.0)  # the input is not modified


def test_gaussian_mechanism_equals_value_plus_gaussian_noise():
    # Same seed, same stream: the release is value + N(0, (z·Δ)²) draws.
    value = np.arange(12.0).reshape(3, 4)
    out = gaussian_mechanism(
        value, sensitivity=2.0, noise_multiplier=1.5, rng=np.random.default_rng(SEED)
    )
    expected = value + np.random.default_rng(SEED).normal(0.0, 3.0, (3, 4))
    np.testing.assert_array_equal(out, expected)


def test_gaussian_mechanism_accepts_lists_and_scalars():
    out = gaussian_mechanism(
        [1, 2, 3], sensitivity=1.0, noise_multiplier=0.0, rng=np.random.default_rng(0)
    )
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, [1.0, 2.0, 3.0])
    scalar = gaussian_mechanism(
        4.0, sensitivity=1.0, noise_multiplier=2.0, rng=np.random.default_rng(SEED)
    )
    assert np.shape(scalar) == ()
    assert scalar != 4.0


def test_gaussian_mechanism_rejects_negative_noise():
    with pytest.raises(ValueError):
        gaussian_mechanism(
            np.zeros(3),
            sensitivity=1.0,
            noise_multiplier=-1.0,
            rng=np.random.default_rng(SEED),
        )


# ---------------------------------------------------------------------------
# gumbel_noise (the noise of the exponential-mechanism peeling)
# ---------------------------------------------------------------------------


def test_gumbel_noise_is_the_seeded_gumbel_law():
    from scipy import stats

    from skdp.mechanisms import gumbel_noise

    scale = 0.7
    x = gumbel_noise(np.random.default_rng(SEED), scale, N_DRAWS)
    np.testing.assert_array_equal(
        x, np.random.default_rng(SEED).gumbel(0.0, scale, N_DRAWS)
    )
    # Kolmogorov–Smirnov against scipy's Gumbel (right-skewed, location 0).
    assert stats.kstest(x, stats.gumbel_r(scale=scale).cdf).pvalue > 1e-3
    np.testing.assert_array_equal(gumbel_noise(np.random.default_rng(0), 0.0, 3), 0)
    with pytest.raises(ValueError):
        gumbel_noise(np.random.default_rng(0), -1.0, 3)


# ---------------------------------------------------------------------------
# Gaps found by mutation testing (mutmut on mechanisms.py)
# ---------------------------------------------------------------------------


def _secure(seed=0):
    """A SecureNoise reading a seeded byte stream (deterministic tests)."""
    return SecureNoise(bytes_source=np.random.default_rng(seed).bytes)


def test_secure_noise_source_and_its_refusal_of_seeds():
    # noise="secure" gives a SecureNoise, and never with a fixed seed (a seed
    # would make the noise predictable); check_secure_seed defaults to it.
    assert isinstance(as_generator(None, "secure"), SecureNoise)
    for seed in (0, np.random.default_rng(0), np.random.RandomState(0)):
        with pytest.raises(ValueError, match="cannot be seeded"):
            as_generator(seed, "secure")
        with pytest.raises(ValueError, match="cannot be seeded"):
            check_secure_seed(seed)
        check_secure_seed(seed, noise="fast")  # fast noise may be seeded
    check_secure_seed(None)
    with pytest.raises(ValueError, match="noise must be"):
        as_generator(None, "exact")


def test_generator_child_stream_is_seeded_by_four_full_words():
    # A Generator seeds its child from four 63-bit words of its stream (a
    # smaller draw would leave few possible child streams).
    parent = np.random.default_rng(SEED)
    child = as_generator(parent).random(5)
    words = np.random.default_rng(SEED).integers(2**63, size=4)
    np.testing.assert_array_equal(child, np.random.default_rng(words).random(5))


def test_random_state_child_stream_is_seeded_by_four_31_bit_words():
    child = as_generator(np.random.RandomState(SEED)).random(5)
    words = np.random.RandomState(SEED).randint(2**31, size=4)
    np.testing.assert_array_equal(child, np.random.default_rng(words).random(5))


def test_noise_seed_id_fingerprints_the_stream_exactly():
    """The digest of the state the stream starts from: equal exactly when
    as_generator gives the same stream, whatever the seed's kind or numpy's
    print options (a text of a generator's state changed with them, and two
    clones passed the ledger; an int equal to a generator's four words gave
    its very stream under another digest; review). It does not consume the
    seed."""
    import copy
    import hashlib

    def digest(entropy):
        state = np.random.SeedSequence(entropy).generate_state(8, dtype=np.uint64)
        return hashlib.sha256(state.tobytes()).hexdigest()[:16]

    assert noise_seed_id(None) is None
    assert noise_seed_id(7) == digest(7) == noise_seed_id(np.int64(7))
    assert noise_seed_id(7) != noise_seed_id(8)
    gen = np.random.default_rng(SEED)
    words = copy.deepcopy(gen).integers(2**63, size=4)
    before = gen.bit_generator.state
    assert noise_seed_id(gen) == digest(words)
    assert gen.bit_generator.state == before
    assert noise_seed_id(gen) == noise_seed_id(np.random.default_rng(SEED))
    gen.random()
    assert noise_seed_id(gen) != noise_seed_id(np.random.default_rng(SEED))
    rs = np.random.RandomState(SEED)
    words = copy.deepcopy(rs).randint(2**31, size=4)
    assert noise_seed_id(rs) == digest(words)
    assert noise_seed_id(rs) == noise_seed_id(np.random.RandomState(SEED))
    assert noise_seed_id(rs) != noise_seed_id(np.random.RandomState(SEED + 1))
    # The int whose 32-bit words are those four gives the same stream: the
    # same digest.
    big = sum(int(w) << (32 * i) for i, w in enumerate(words))
    np.testing.assert_array_equal(
        as_generator(big).random(3), as_generator(copy.deepcopy(rs)).random(3)
    )
    assert noise_seed_id(big) == noise_seed_id(rs)
    # Print options do not move it (an array state's text did).
    sfc = np.random.Generator(np.random.SFC64(0))
    plain = noise_seed_id(copy.deepcopy(sfc))
    with np.printoptions(linewidth=200, threshold=5):
        assert noise_seed_id(copy.deepcopy(sfc)) == plain
    with pytest.raises(ValueError, match="Unsupported random_state"):
        noise_seed_id("0")


def test_laplace_release_is_value_plus_independent_laplace_draws():
    # One draw per coordinate (never one scalar broadcast over all of them).
    value = np.arange(12.0).reshape(3, 4)
    out = add_laplace_noise(value, 0.8, np.random.default_rng(SEED))
    expected = value + np.random.default_rng(SEED).laplace(0.0, 0.8, (3, 4))
    np.testing.assert_array_equal(out, expected)
    assert np.unique(out - value).size == value.size


def test_secure_releases_accept_zero_and_small_scales_and_refuse_negative_ones():
    value = np.array([0.25, -1.5, 3.0])
    for add in (add_gaussian_noise, add_laplace_noise):
        np.testing.assert_array_equal(add(value, 0.0, _secure()), value)
        out = add(value, 0.01, _secure())
        assert out.shape == value.shape
        assert np.all(np.abs(out - value) < 1.0)  # 100 scales: P < e^-100
        assert not np.array_equal(out, value)
        for bad in (-1e-12, np.nan):
            with pytest.raises(ValueError, match="noise scale"):
                add(value, bad, _secure())


@pytest.mark.parametrize("noise", ["gumbel", "laplace"])
def test_peel_top_k_accepts_k_from_one_to_d_only(noise):
    scores = np.array([3.0, 1.0, 2.0])
    rng = np.random.default_rng(SEED)
    assert peel_top_k(scores, 1, noise=noise, scale=0.0, rng=rng).tolist() == [0]
    top = peel_top_k(scores, 3, noise=noise, scale=0.0, rng=rng)
    assert top.tolist() == [0, 2, 1]
    for k in (0, 4):
        with pytest.raises(ValueError, match="k must be in"):
            peel_top_k(scores, k, noise=noise, scale=0.0, rng=rng)
    with pytest.raises(ValueError, match="noise must be"):
        peel_top_k(scores, 1, noise="gaussian", scale=1.0, rng=rng)


def test_gumbel_peeling_is_the_top_k_of_the_gumbel_perturbed_scores():
    # White box: the k largest of scores + Gumbel(scale) draws, largest first
    # (d = 1000: argpartition's answer is only right with the right kth).
    for d in (20, 1000):
        scores = np.linspace(0.0, 1.0, d)
        for k in (1, 2, 5, d):
            out = peel_top_k(
                scores, k, noise="gumbel", scale=0.5, rng=np.random.default_rng(SEED)
            )
            noisy = scores + np.random.default_rng(SEED).gumbel(0.0, 0.5, d)
            np.testing.assert_array_equal(out, np.argsort(-noisy)[:k])


def test_laplace_peeling_is_k_rounds_of_report_noisy_max_with_fresh_noise():
    # White box: round i takes the argmax of scores + row i of a (k, d) Laplace
    # draw, among the indices not selected before.
    scores = np.linspace(0.0, 1.0, 20)
    k = 6
    out = peel_top_k(
        scores, k, noise="laplace", scale=0.5, rng=np.random.default_rng(SEED)
    )
    noisy = scores + np.random.default_rng(SEED).laplace(0.0, 0.5, (k, 20))
    expected = []
    for row in noisy:
        row = row.copy()
        row[expected] = -np.inf
        expected.append(int(np.argmax(row)))
    np.testing.assert_array_equal(out, expected)
    assert len(set(out.tolist())) == k


@pytest.mark.parametrize("rng", [np.random.default_rng(0), _secure()])
def test_peeling_never_selects_an_index_twice(rng):
    # A dominant score must be removed from every later round (noise of scale
    # 1e-3 cannot reorder scores 1 apart: P < e^-500).
    scores = np.array([100.0, 3.0, 2.0, 1.0])
    top = peel_top_k(scores, 4, noise="laplace", scale=1e-3, rng=rng)
    assert top.tolist() == [0, 1, 2, 3]
    top = peel_top_k(scores, 3, noise="laplace", scale=1e-3, rng=rng)
    assert top.tolist() == [0, 1, 2]


@pytest.mark.parametrize("noise", ["fast", "secure"])
def test_laplace_peeling_at_scale_zero_is_the_exact_top_k_for_either_source(noise):
    # Scale 0 is the non-private reference: the exact top k, in order, from
    # a secure source too (it used to ask the secure source for continuous
    # Laplace noise and raise TypeError); a negative scale is refused.
    rng = as_generator(0 if noise == "fast" else None, noise)
    scores = np.array([3.0, 1.0, 2.0, 5.0, 4.0])
    selected = peel_top_k(scores, 3, noise="laplace", scale=0.0, rng=rng)
    np.testing.assert_array_equal(selected, [3, 4, 0])
    with pytest.raises(ValueError, match="scale must be >= 0"):
        peel_top_k(scores, 3, noise="laplace", scale=-1.0, rng=rng)


@pytest.mark.parametrize("add", [add_gaussian_noise, add_laplace_noise])
def test_fast_noise_releases_float64_whatever_the_value_dtype(add):
    # A long double value plus float64 noise kept the value's low-order bits
    # beyond float64 in the release (mutation testing: the dtype of the
    # conversion survived every test); integer values come back as floats.
    rng = np.random.default_rng(0)
    exact = np.longdouble(1) + np.longdouble(2) ** -60  # not a float64
    for value in (np.array([exact, exact]), np.array([1, 2]), [1, 2]):
        out = add(value, 0.5, rng)
        assert out.dtype == np.float64
