"""Vectorised noise: every mechanism draws whole arrays in one call.

Noise comes from a *noise source* that estimators obtain with
:func:`as_generator` from their ``random_state`` and ``noise`` parameters:

* ``noise="fast"`` (the default): a :class:`numpy.random.Generator` (PCG64)
  and numpy's floating-point samplers. Like every numpy sampler these are
  **not** hardened against the floating-point attacks of Mironov (2012) and
  Jin et al. (2022): the low-order bits of ``value + noise`` can reveal
  ``value`` (``tests/test_secure_noise.py`` tells two neighbouring values
  apart with certainty on most draws), and PCG64 is not a cryptographic
  generator.
* ``noise="secure"``: a :class:`~skdp.mechanisms.SecureNoise`. Every value is
  rounded to a power-of-two grid and gets exact discrete Gaussian or
  discrete Laplace noise (Canonne, Kamath & Steinke 2020) drawn with bits
  from :func:`os.urandom`; the rounding's cost is in the calibration
  (:func:`skdp.accounting.secure_gaussian_noise_multiplier`). It is
  incompatible with a fixed ``random_state`` (refused).

Mechanisms add noise through :func:`add_gaussian_noise` and
:func:`add_laplace_noise`, which dispatch on the source, so no estimator
has sampling code of its own. How much noise a guarantee needs is decided in
:mod:`skdp.accounting`.

Seeds: an int ``random_state`` makes the noise predictable to whoever knows
or guesses the seed, and every fit given the same seed (the clones that a
search or cross-validation makes, sibling steps, a sweep over ε) draws the
*same* noise, which linear combinations of the releases then cancel. Leave
``random_state=None`` (fresh entropy for every fit) for anything released;
skdp warns on seeded fits and :class:`~skdp.PrivacyLedger` refuses to total
releases that share a seed (:func:`noise_seed_id`).
"""

import copy
import hashlib
import math
import numbers

import numpy as np
from sklearn.utils import check_random_state

from ._secure import SecureNoise

__all__ = [
    "NOISE_SAMPLERS",
    "SecureNoise",
    "add_gaussian_noise",
    "add_laplace_noise",
    "as_generator",
    "check_secure_seed",
    "gaussian_mechanism",
    "gaussian_noise",
    "gram_mechanism",
    "gram_sensitivity",
    "gumbel_noise",
    "laplace_noise",
    "noise_seed_id",
    "peel_top_k",
]


#: What ``privacy_spent_.sampler`` says for each value of ``noise``.
NOISE_SAMPLERS = {
    "fast": "numpy PCG64, floating point (not hardened against float attacks)",
    "secure": SecureNoise.description,
}


def as_generator(random_state, noise="fast"):
    """The noise source of a fit from its ``random_state`` and ``noise``.

    With ``noise="fast"``, a :class:`numpy.random.Generator`; with
    ``noise="secure"``, a :class:`~skdp.mechanisms.SecureNoise` (then
    ``random_state`` must be None: secure noise cannot be reproducible, and
    a seed would make it predictable).

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

    noise : {"fast", "secure"}, default="fast"
        The sampler (see the module docstring).

    Returns
    -------
    numpy.random.Generator or SecureNoise

    Raises
    ------
    ValueError
        For ``noise="secure"`` with a ``random_state`` other than None.

    Examples
    --------
    >>> from skdp.mechanisms import as_generator
    >>> as_generator(None, noise="secure")
    SecureNoise()
    >>> as_generator(0, noise="secure")
    Traceback (most recent call last):
    ...
    ValueError: noise='secure' draws from the operating system's CSPRNG...
    """
    if noise == "secure":
        check_secure_seed(random_state)
        return SecureNoise()
    if noise != "fast":
        raise ValueError(f"noise must be 'fast' or 'secure'; got {noise!r}.")
    if random_state is None:
        return np.random.default_rng()
    return np.random.default_rng(seed_entropy(random_state))


def seed_entropy(random_state):
    """The ``SeedSequence`` entropy :func:`as_generator` seeds a stream with.

    An int as itself; a ``Generator`` or ``RandomState`` four words of its
    stream, advancing it. Post-processing that takes a ``random_state`` of
    its own (e.g. :meth:`skdp.DPGaussianSampler.sample`) seeds a
    ``SeedSequence`` with this entropy and a ``spawn_key`` no fit uses, so a
    seed equal to the fit's (an int, or a generator in the same state) never
    replays the fit's noise.
    """
    if isinstance(random_state, numbers.Integral):
        return int(random_state)
    if isinstance(random_state, np.random.Generator):
        return random_state.integers(2**63, size=4)
    return check_random_state(random_state).randint(2**31, size=4)


def check_secure_seed(random_state, noise="secure"):
    """Refuse a fixed ``random_state`` with ``noise="secure"`` (issue 22, item 3)."""
    if noise == "secure" and random_state is not None:
        raise ValueError(
            "noise='secure' draws from the operating system's CSPRNG and cannot "
            f"be seeded; got random_state={random_state!r}. A seed would make the "
            "noise reproducible, hence predictable to whoever knows it: leave "
            "random_state=None, or use noise='fast' for reproducible runs."
        )


def noise_seed_id(random_state):
    """A fingerprint of the noise stream a fit seeded with ``random_state`` draws.

    None for ``random_state=None``: such a fit draws fresh entropy and shares
    its noise with nothing. Otherwise a short hex digest of the state the
    stream starts from (:func:`as_generator` seeds it with a
    ``SeedSequence`` of ``seed_entropy``), equal for two seeds exactly
    when they give the same stream:
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
    if not isinstance(
        random_state, numbers.Integral | np.random.Generator | np.random.RandomState
    ):
        raise ValueError(f"Unsupported random_state {random_state!r}.")
    # The state the stream starts from, not a text of the seed: a text of a
    # generator's state changed with numpy's print options (two clones, one
    # fingerprinted under np.printoptions(linewidth=200), passed the
    # ledger), and an int equal to a generator's four words gives its very
    # stream under another text (review). A copy: the seed is not consumed.
    entropy = seed_entropy(copy.deepcopy(random_state))
    state = np.random.SeedSequence(entropy).generate_state(8, dtype=np.uint64)
    return hashlib.sha256(state.tobytes()).hexdigest()[:16]


def _draw(rng, name, scale, shape):
    """``rng.<name>(0, scale, shape)`` after checking the scale; zeros when it is 0."""
    if isinstance(rng, SecureNoise):
        raise TypeError(
            f"{name} noise alone cannot be drawn from a secure source: the value "
            "it is added to must be rounded to the same grid. Use "
            "add_gaussian_noise / add_laplace_noise."
        )
    sample = getattr(rng, name)
    if scale < 0:
        raise ValueError(f"The noise scale must be >= 0; got {scale}.")
    if scale == 0:
        return np.zeros(shape)
    return sample(0.0, scale, size=shape)


def gaussian_noise(rng, std, shape):
    """I.i.d. N(0, std²) noise of the given shape (zeros when ``std == 0``).

    Fast path only; a mechanism adds noise with :func:`add_gaussian_noise`.
    """
    return _draw(rng, "normal", std, shape)


def laplace_noise(rng, scale, shape):
    """I.i.d. Laplace(0, scale) noise of the given shape (zeros when ``scale == 0``).

    Fast path only; a mechanism adds noise with :func:`add_laplace_noise`.
    """
    return _draw(rng, "laplace", scale, shape)


def gumbel_noise(rng, scale, shape):
    """I.i.d. Gumbel(0, scale) noise of the given shape (zeros when ``scale == 0``)."""
    return _draw(rng, "gumbel", scale, shape)


def add_gaussian_noise(value, std, rng):
    """``value`` plus i.i.d. Gaussian noise of standard deviation ``std``.

    Fast source: ``value + N(0, std²)`` in floating point. Secure source
    (:class:`~skdp.mechanisms.SecureNoise`): ``g·(round(value/g) + Y)`` with Y
    discrete Gaussian of scale ``s = ceil(std/g) >= std/g`` and the grid step
    ``g = 2^e <= std·2^-16/sqrt(value.size)``. Rounding grows the L2
    sensitivity Δ of ``value`` by at most ``g·sqrt(value.size) <= std·2^-16``,
    so the release is ρ-zCDP with ``ρ = (Δ/std + 2^-16)²/2`` (Canonne, Kamath
    & Steinke 2020, Thm. 14); the accountant charges exactly that
    (:func:`skdp.accounting.secure_noise_cost`). One call must carry one
    whole release (the bound is per call).

    Parameters
    ----------
    value : array-like
        Finite values to release.
    std : float
        Noise standard deviation (Gaussian) or scale (discrete Gaussian), >= 0.
    rng : numpy.random.Generator or SecureNoise
        The noise source (:func:`as_generator`).

    Returns
    -------
    ndarray of float64, the shape of ``value``

    Examples
    --------
    >>> from skdp.mechanisms import add_gaussian_noise, as_generator
    >>> add_gaussian_noise([1.0, 2.0], 0.0, as_generator(None, "secure"))
    array([1., 2.])
    >>> out = add_gaussian_noise([1.0, 2.0], 1e-3, as_generator(None, "secure"))
    >>> out.shape
    (2,)
    """
    if isinstance(rng, SecureNoise):
        _check_scale(std)
        return rng.add_gaussian(value, float(std))
    value = np.asarray(value, dtype=float)
    return value + gaussian_noise(rng, std, value.shape)


def add_laplace_noise(value, scale, rng):
    """``value`` plus i.i.d. Laplace noise of scale ``scale``.

    Fast source: ``value + Laplace(0, scale)``. Secure source:
    ``g·(round(value/g) + Y)``, Y discrete Laplace with
    ``P(Y = y) ∝ exp(-|y|/t)``, ``t = ceil(scale/g)``,
    ``g = 2^e <= scale·2^-16/value.size``. Rounding grows the L1 sensitivity
    Δ₁ by at most ``g·value.size <= scale·2^-16``, so the release is
    ``(Δ₁/scale + 2^-16)``-DP (the discrete Laplace with scale t on an
    integer query of L1 sensitivity D is D/t-DP; Canonne, Kamath & Steinke
    2020, §2.2; Ghosh, Roughgarden & Sundararajan 2012).
    """
    if isinstance(rng, SecureNoise):
        _check_scale(scale)
        return rng.add_laplace(value, float(scale))
    value = np.asarray(value, dtype=float)
    return value + laplace_noise(rng, scale, value.shape)


def _check_scale(scale):
    if not scale >= 0:
        raise ValueError(f"The noise scale must be >= 0; got {scale}.")


def gaussian_mechanism(value, *, sensitivity, noise_multiplier, rng):
    """Release ``value + N(0, (noise_multiplier · sensitivity)² I)``.

    With L2 sensitivity Δ the release is (1/noise_multiplier)-GDP
    (Dong, Roth & Su 2022, Thm. 2.7), whatever the shape of ``value``.
    """
    return add_gaussian_noise(value, noise_multiplier * sensitivity, rng)


def gram_sensitivity(row_norm_bound):
    """Frobenius (L2) sensitivity ``sqrt(2)·C²`` of ``Σ_i w_i w_iᵀ``, ``||w_i|| <= C``.

    Under *replace-one-record* adjacency (n public): replacing a row ``w``
    by ``v`` (both of norm at most C) moves the sum of outer products by
    ``wwᵀ - vvᵀ``, whose squared Frobenius norm is
    ``||w||⁴ + ||v||⁴ - 2(wᵀv)² <= 2C⁴``, with equality for two orthogonal
    rows of norm C: the bound is attained. (Under add/remove it would be
    ``C²``.) The constant C must be data-independent: the rows are clipped
    to it before they are summed (see :func:`gram_mechanism`).

    Examples
    --------
    >>> from skdp.mechanisms import gram_sensitivity
    >>> round(gram_sensitivity(1.0) ** 2, 12), round(gram_sensitivity(2.0) ** 2, 12)
    (2.0, 32.0)
    """
    row_norm_bound = float(row_norm_bound)
    if not (row_norm_bound >= 0 and np.isfinite(row_norm_bound)):
        raise ValueError(
            f"row_norm_bound must be finite and >= 0; got {row_norm_bound}."
        )
    return math.sqrt(2.0) * row_norm_bound * row_norm_bound


def gram_mechanism(gram, *, row_norm_bound, noise_multiplier, rng):
    """Release a Gram matrix ``G = Σ_i w_i w_iᵀ`` of clipped rows with symmetric noise.

    The one Gaussian release of a symmetric second-moment matrix in skdp
    (:class:`~skdp.linear_model.DPLinearRegression`'s ``XᵀX`` and ``Xᵀy``,
    :class:`~skdp.decomposition.DPPCA`'s second moment; Dwork, Talwar,
    Thakurta & Zhang 2014, "Analyze Gauss", Algorithm 1).

    **Sensitivity.** Every row ``w_i`` must have ``||w_i|| <= C =
    row_norm_bound``, a data-independent constant (clip the rows first).
    Under *replace-one-record* adjacency G then moves by at most
    ``Δ = sqrt(2)·C²`` in Frobenius norm (:func:`gram_sensitivity`).

    **Noise.** The upper triangle of G with its off-diagonal entries
    multiplied by ``sqrt(2)`` is a vector whose L2 norm is the Frobenius
    norm of G (an isometry), so the Gaussian mechanism on that vector
    (one call of :func:`gaussian_mechanism`, noise std ``σ = z·Δ`` with
    ``z = noise_multiplier``) is exactly ``(1/z)``-GDP (Dong, Roth & Su 2022,
    Thm. 2.7). The noise is then mirrored: the released matrix is symmetric,
    with noise std σ on the diagonal and ``σ/sqrt(2)`` off it (a GOE matrix
    times ``σ/sqrt(2)``, whose operator norm is at most ``σ·sqrt(2m)`` in
    expectation for an m × m matrix). Drawing the off-diagonal entries with
    the diagonal's std, as Analyze Gauss does, would cost ``sqrt(2)`` more
    noise there for the same guarantee. With a secure source the whole
    vector is one rounded discrete-Gaussian release
    (:func:`add_gaussian_noise`).

    Parameters
    ----------
    gram : ndarray of shape (m, m)
        The exact Gram matrix of the clipped rows (only its upper triangle
        is read).
    row_norm_bound : float
        C, the bound on every row's norm.
    noise_multiplier : float
        z: the noise std over Δ.
    rng : numpy.random.Generator or SecureNoise
        The noise source (:func:`as_generator`).

    Returns
    -------
    ndarray of shape (m, m)
        The symmetric noisy Gram matrix.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.mechanisms import as_generator, gram_mechanism
    >>> W = np.array([[0.6, 0.8], [1.0, 0.0]])
    >>> noisy = gram_mechanism(
    ...     W.T @ W, row_norm_bound=1.0, noise_multiplier=0.1, rng=as_generator(0)
    ... )
    >>> bool(np.array_equal(noisy, noisy.T))
    True
    """
    gram = np.asarray(gram, dtype=float)
    if gram.ndim != 2 or gram.shape[0] != gram.shape[1]:
        raise ValueError(f"gram must be a square matrix; got shape {gram.shape}.")
    m = gram.shape[0]
    rows, cols = np.triu_indices(m)
    weight = np.where(rows == cols, 1.0, math.sqrt(2.0))
    noisy = gaussian_mechanism(
        gram[rows, cols] * weight,
        sensitivity=gram_sensitivity(row_norm_bound),
        noise_multiplier=noise_multiplier,
        rng=rng,
    )
    out = np.zeros((m, m))
    out[rows, cols] = noisy / weight
    return out + np.triu(out, 1).T


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
    rng : numpy.random.Generator or SecureNoise
        Source of the noise. A secure source supports ``noise="laplace"``
        only.

    Returns
    -------
    selected : ndarray of shape (k,)
        Distinct indices, in the order selected.

    Notes
    -----
    **Secure Laplace peeling.** The scores are rounded to a grid ``g = 2^e
    <= scale·2^-16/(k·d)`` (each moves by at most g/2, so one score moves
    by at most ``Δ/g + 1`` grid steps between neighbours) and get discrete
    Laplace noise of integer scale ``t = ceil(scale/g)``; the argmax is taken
    on the exact integers, ties to the lowest index. Fix the other noises:
    index j wins exactly when its noise ``Y_j >= c``, an integer threshold
    that moves by at most ``2·(Δ/g + 1)`` between neighbours, and the
    discrete Laplace tail has ``P(Y >= c + m) >= e^(-m/t)·P(Y >= c)``. So
    each round is ``ε_p = 2(Δ + g)/(t·g) <= 2Δ/scale + 2^-15/(k·d)``-DP
    (``t >= scale/g``, ``g <= scale·2^-16/(k·d)``), at most the ``2Δ/scale +
    2^-16`` that :func:`skdp.accounting.secure_laplace_epsilon` charges when
    ``k·d >= 2`` (``k = d = 1`` selects the only index: nothing released).
    """
    scores = np.asarray(scores, dtype=float)
    d = scores.shape[0]
    if not 1 <= k <= d:
        raise ValueError(f"k must be in [1, {d}]; got {k}.")
    if scale < 0:
        raise ValueError(f"The noise scale must be >= 0; got {scale}.")
    secure = isinstance(rng, SecureNoise)
    if noise == "gumbel":
        if secure:
            raise ValueError(
                "Gumbel (exponential-mechanism) peeling has no exact sampler "
                "under noise='secure'; use Laplace peeling."
            )
        noisy = scores + gumbel_noise(rng, scale, d)
        top = np.argpartition(-noisy, k - 1)[:k]
        return top[np.argsort(-noisy[top], kind="stable")]
    if noise != "laplace":
        raise ValueError(f"noise must be 'gumbel' or 'laplace'; got {noise!r}.")
    if secure and scale > 0:
        # Exact integers round(score/g) + Y, compared as integers (ties go to
        # the lowest index, which the ε_p proof allows: see the Notes).
        noisy, _ = rng.laplace_integers(np.broadcast_to(scores, (k, d)), scale)
        removed = np.iinfo(np.int64).min
    elif secure:  # scale 0: the exact top k (not private), as with a fast source
        noisy = np.tile(scores, (k, 1))
        removed = -np.inf
    else:
        noisy = scores + laplace_noise(rng, scale, (k, d))
        removed = -np.inf
    selected = np.empty(k, dtype=np.intp)
    for i in range(k):  # a loop over the k rounds, never over coordinates
        selected[i] = np.argmax(noisy[i])
        noisy[i + 1 :, selected[i]] = removed
    return selected
