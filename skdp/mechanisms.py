"""Vectorised noise: every mechanism draws whole arrays in one call.

Noise comes from a :class:`numpy.random.Generator` (PCG64). Estimators obtain it
with :func:`as_generator`, which accepts scikit-learn's ``random_state``
conventions. Mechanisms here only add noise; how much noise a guarantee needs
is decided in :mod:`skdp.accounting`.

Floating-point caveat: like every numpy sampler, these are not hardened
against the floating-point attacks of Mironov (2012); a fixed ``random_state``
makes the noise predictable and is for tests and reproducibility only.
"""

import numbers

import numpy as np
from sklearn.utils import check_random_state

__all__ = ["as_generator", "gaussian_mechanism", "gaussian_noise", "laplace_noise"]


def as_generator(random_state):
    """A :class:`numpy.random.Generator` from a scikit-learn ``random_state``.

    Parameters
    ----------
    random_state : None, int, RandomState or Generator
        None draws a fresh seed from the operating system's entropy (the
        private default); an int seeds the generator reproducibly; a
        ``RandomState`` (as scikit-learn passes around) seeds it from its
        stream, advancing that stream; a ``Generator`` is used as is.

    Returns
    -------
    numpy.random.Generator
    """
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        return random_state
    if isinstance(random_state, numbers.Integral):
        return np.random.default_rng(int(random_state))
    seed_words = check_random_state(random_state).randint(2**31, size=4)
    return np.random.default_rng(seed_words)


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


def gaussian_mechanism(value, *, sensitivity, noise_multiplier, rng):
    """Release ``value + N(0, (noise_multiplier · sensitivity)² I)``.

    With L2 sensitivity Δ the release is (1/noise_multiplier)-GDP
    (Dong, Roth & Su 2022, Thm. 2.7), whatever the shape of ``value``.
    """
    value = np.asarray(value, dtype=float)
    return value + gaussian_noise(rng, noise_multiplier * sensitivity, value.shape)
