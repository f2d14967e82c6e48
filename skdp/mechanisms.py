"""Vectorised noise: every mechanism draws whole arrays in one call.

Noise comes from a :class:`numpy.random.Generator` (PCG64). Estimators obtain it
with :func:`as_generator`, which accepts scikit-learn's ``random_state``
conventions. Mechanisms here only add noise; how much noise a guarantee needs
is decided in :mod:`skdp.accounting`.

Floating-point caveat: like every numpy sampler, these are not hardened
against the floating-point attacks of Mironov (2012).

Seeds: a fixed ``random_state`` makes the noise predictable to whoever knows
or guesses the seed, and every fit given the same seed (the clones that a
search or cross-validation makes, sibling steps, a sweep over ε) draws the
*same* noise, which linear combinations of the releases then cancel. Leave
``random_state=None`` (fresh entropy for every fit) for anything released;
skdp warns on seeded fits and :class:`~skdp.PrivacyLedger` refuses to total
releases that share a seed (:func:`noise_seed_id`).
"""

import hashlib
import numbers

import numpy as np
from sklearn.utils import check_random_state

__all__ = [
    "as_generator",
    "gaussian_mechanism",
    "gaussian_noise",
    "gumbel_noise",
    "laplace_noise",
    "noise_seed_id",
    "peel_top_k",
]


def as_generator(random_state):
    """A :class:`numpy.random.Generator` from a scikit-learn ``random_state``.

    The rule for privacy noise (see :func:`noise_seed_id`): ``None``, the
    default, draws every fit's noise from fresh operating-system entropy, so
    no two fits ever share noise. Anything else is an explicit request for
    reproducible noise, and every fit given the same seed draws the same
    noise.

    Parameters
    ----------
    random_state : None, int, RandomState or Generator
        None draws a fresh seed from the operating system's entropy (the
        private default); an int seeds the generator reproducibly; a
        ``RandomState`` or a ``Generator`` seeds a new generator from four
        words of its stream, advancing it. A child stream, not the generator
        itself, so that two copies of one generator at different positions
        (e.g. made by ``clone`` at different times) never give overlapping,
        shifted noise.

    Returns
    -------
    numpy.random.Generator
    """
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, numbers.Integral):
        return np.random.default_rng(int(random_state))
    if isinstance(random_state, np.random.Generator):
        return np.random.default_rng(random_state.integers(2**63, size=4))
    seed_words = check_random_state(random_state).randint(2**31, size=4)
    return np.random.default_rng(seed_words)


def noise_seed_id(random_state):
    """A fingerprint of the noise stream a fit seeded with ``random_state`` draws.

    None for ``random_state=None``: such a fit draws fresh entropy and shares
    its noise with nothing. Otherwise a short hex digest that is equal for
    two seeds exactly when :func:`as_generator` gives them the same stream:
    the same int, or a ``RandomState`` / ``Generator`` in the same state (as
    ``sklearn.base.clone`` copies it into every fold fit, refit and sibling
    step). Take it *before* the fit consumes the generator.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.mechanisms import noise_seed_id
    >>> noise_seed_id(None) is None
    True
    >>> noise_seed_id(0) == noise_seed_id(np.int64(0)) != noise_seed_id(1)
    True
    """
    if random_state is None:
        return None
    if isinstance(random_state, numbers.Integral):
        material = f"int:{int(random_state)}"
    elif isinstance(random_state, np.random.Generator):
        material = f"Generator:{random_state.bit_generator.state!r}"
    elif isinstance(random_state, np.random.RandomState):
        name, keys, pos, has_gauss, gauss = random_state.get_state()
        material = (
            f"RandomState:{name}:{keys.tobytes().hex()}:{pos}:{has_gauss}:{gauss!r}"
        )
    else:
        raise ValueError(f"Unsupported random_state {random_state!r}.")
    return hashlib.sha256(material.encode()).hexdigest()[:16]


def _draw(sample, scale, shape):
    """``sample(0, scale, shape)`` after checking the scale; zeros when it is 0."""
    if scale < 0:
        raise ValueError(f"The noise scale must be >= 0; got {scale}.")
    if scale == 0:
        return np.zeros(shape)
    return sample(0.0, scale, size=shape)


def gaussian_noise(rng, std, shape):
    """I.i.d. N(0, std²) noise of the given shape (zeros when ``std == 0``)."""
    return _draw(rng.normal, std, shape)


def laplace_noise(rng, scale, shape):
    """I.i.d. Laplace(0, scale) noise of the given shape (zeros when ``scale == 0``)."""
    return _draw(rng.laplace, scale, shape)


def gumbel_noise(rng, scale, shape):
    """I.i.d. Gumbel(0, scale) noise of the given shape (zeros when ``scale == 0``)."""
    return _draw(rng.gumbel, scale, shape)


def gaussian_mechanism(value, *, sensitivity, noise_multiplier, rng):
    """Release ``value + N(0, (noise_multiplier · sensitivity)² I)``.

    With L2 sensitivity Δ the release is (1/noise_multiplier)-GDP
    (Dong, Roth & Su 2022, Thm. 2.7), whatever the shape of ``value``.
    """
    value = np.asarray(value, dtype=float)
    return value + gaussian_noise(rng, noise_multiplier * sensitivity, value.shape)


def peel_top_k(scores, k, *, noise, scale, rng):
    """Private top-``k`` selection by peeling: ``k`` rounds of report-noisy-max.

    Round i adds fresh i.i.d. noise to every score not yet selected and
    selects the largest (Dwork, Su & Zhang 2018; Cai, Wang & Zhang, Score
    Attack, Algorithm 3, lines 1-6). Only the indices are released, never a
    noisy score.

    Parameters
    ----------
    scores : ndarray of shape (d,)
        Finite scores (e.g. ``|v_j|``). Let Δ bound how much any one score
        moves between neighbouring data sets.
    k : int
        Number of indices to select, ``1 <= k <= d``.
    noise : {"gumbel", "laplace"}
        ``"gumbel"``: each round is the exponential mechanism with
        ``ε_p = 2Δ/scale`` (the factor 2 because the scores need not move
        together), which is ε_p-bounded-range and so ``ε_p²/8``-zCDP (Cesar &
        Rogers 2021). The ``k`` rounds are drawn at once: the ``k`` largest
        Gumbel-perturbed scores, in order, have exactly the law of ``k``
        sequential peels (Durfee & Rogers 2019, Lemma 4.2).
        ``"laplace"``: Laplace report-noisy-max, ε_p-DP with the same
        ``ε_p = 2Δ/scale`` per round (Dwork & Roth 2014, §3.3); ``k`` rounds
        with fresh noise drawn as one ``(k, d)`` array.
        Never use Gaussian noise here with a scale set from the per-score
        bound Δ: Gaussian report-noisy-max has no such guarantee.
    scale : float
        Noise scale (Gumbel β or Laplace b), ``>= 0``; 0 selects the exact
        top ``k`` (not private: tests and non-private references only).
    rng : numpy.random.Generator
        Source of the noise.

    Returns
    -------
    selected : ndarray of shape (k,)
        Distinct indices, in the order selected.
    """
    scores = np.asarray(scores, dtype=float)
    d = scores.shape[0]
    if not 1 <= k <= d:
        raise ValueError(f"k must be in [1, {d}]; got {k}.")
    if noise == "gumbel":
        noisy = scores + gumbel_noise(rng, scale, d)
        top = np.argpartition(-noisy, k - 1)[:k]
        return top[np.argsort(-noisy[top], kind="stable")]
    if noise != "laplace":
        raise ValueError(f"noise must be 'gumbel' or 'laplace'; got {noise!r}.")
    noisy = scores + laplace_noise(rng, scale, (k, d))
    selected = np.empty(k, dtype=np.intp)
    for i in range(k):  # a loop over the k rounds, never over coordinates
        selected[i] = np.argmax(noisy[i])
        noisy[i + 1 :, selected[i]] = -np.inf
    return selected
