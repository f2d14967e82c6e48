"""Exact discrete Gaussian and discrete Laplace noise from the OS CSPRNG.

The samplers of Canonne, Kamath & Steinke (2020) [1]_, vectorised: every
array is drawn in one call, with a Python loop only over *rejection rounds*
(each round handles all still-undecided draws at once with numpy integer
arithmetic), never over draws. A round costs a fixed ~10-30 µs whatever its
size, so small calls keep the rounds few (issue 32): when few draws are
undecided, each pre-draws a block of its next trials (``_block_depth``); a
Bernoulli(exp(-1)) trial reads its series from one uniform integer
(:func:`_bernoulli_exp1`); and :class:`SecureNoise` batches the draws of
repeated calls at one scale (``SecureNoise._draws``). None of these changes
the output law: each only changes how many random words are drawn ahead.

* :func:`bernoulli_exp` -- Bernoulli(exp(-γ)) for a rational γ = num/den
  ([1]_, Algorithm 1: the alternating series for γ ≤ 1, and a run of
  Bernoulli(exp(-1)) trials for the integer part).
* :func:`discrete_laplace` -- P(Y = y) ∝ exp(-|y|/t) on the integers, for an
  integer scale t ([1]_, Algorithm 2).
* :func:`discrete_gaussian` -- P(Y = y) ∝ exp(-y²/(2σ²)) on the integers,
  for an integer σ, by rejection from the discrete Laplace with scale
  t = σ ([1]_, Algorithm 3; the algorithm is exact for every t > 0, and
  t = σ keeps its acceptance test ``exp(-(|Y| - σ)²/(2σ²))`` a ratio of
  integers below 2⁶³ while accepting ~76% of proposals, as t = ⌊σ⌋ + 1
  does).

Every probability is decided by exact integer comparisons: a Bernoulli(a/b)
trial draws a uniform integer below b (64 random bits, rejecting the top
``2⁶⁴ mod b`` values, so the draw is exactly uniform) and compares it with a.
No floating-point number touches the randomness, so the output law is
exactly the stated pmf. Random bits come from :func:`os.urandom` (the
operating system's CSPRNG), or from ``bytes_source`` (tests only, for
determinism).

:class:`SecureNoise` puts the samplers on a grid: :meth:`SecureNoise.add_gaussian`
rounds the value to the grid ``g·Z`` (g a power of two, so the rounding and
the final ``g·(m + Y)`` are exact in float64 or a correctly rounded function
of the integer ``m + Y``, i.e. post-processing) and adds ``g·Y`` with ``Y``
discrete Gaussian. Rounding moves each coordinate by at most g/2, so two
neighbouring values whose L2 distance is at most Δ round to integer vectors
at L2 distance at most ``(Δ + g·sqrt(dim))/g``; with the grid chosen as
``g ≤ σ·2^-16/sqrt(dim)`` this is at most ``(Δ + σ·2^-16)/g``, and the
release is ρ-zCDP with ``ρ = (Δ/σ + 2^-16)²/2`` ([1]_, Thm. 14 for
independent coordinates; :func:`skdp.accounting.secure_noise_cost`).

References
----------
.. [1] C. L. Canonne, G. Kamath, T. Steinke. "The discrete Gaussian for
   differential privacy". NeurIPS 2020 (arXiv:2004.00010).
"""

import math
import os
import threading
import weakref

import numpy as np

from .exceptions import MechanismFailedError

__all__ = [
    "GRID_BITS",
    "SecureNoise",
    "bernoulli_exp",
    "discrete_gaussian",
    "discrete_laplace",
]

#: The grid step is at most σ·2^-GRID_BITS/sqrt(dim) (Gaussian) or
#: b·2^-GRID_BITS/dim (Laplace): the rounding adds at most σ·2^-GRID_BITS to
#: the L2 sensitivity (b·2^-GRID_BITS to the L1 sensitivity).
GRID_BITS = 16

# The integer scale of one call is at most 2^(GRID_BITS+1)·sqrt(dim) (Gaussian)
# or 2^(GRID_BITS+1)·dim (Laplace); these caps keep every integer below 2^63.
_MAX_GAUSS_SCALE = 1 << 28
_MAX_LAPLACE_SCALE = 1 << 48

# Words are drawn from the byte source in blocks of at least this many bytes
# (one system call per block).
_MIN_BLOCK = 1 << 16

_U64 = np.uint64


#: Every SecureNoise alive in this process, emptied in a forked child.
_LIVE = weakref.WeakSet()


def _after_fork_in_child():
    for source in list(_LIVE):
        source._forget_drawn()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


class _Bits:
    """Uniform 64-bit words from a byte source, fetched in blocks."""

    def __init__(self, bytes_source=None):
        self._source = os.urandom if bytes_source is None else bytes_source
        self._buf = np.empty(0, dtype=_U64)

    def words(self, m):
        """``m`` independent uniform uint64 words."""
        if m > self._buf.size:
            need = max(8 * (m - self._buf.size), _MIN_BLOCK)
            data = self._source(need)
            if len(data) != need:
                raise MechanismFailedError("The byte source returned too few bytes.")
            fresh = np.frombuffer(data, dtype="<u8").astype(_U64)
            self._buf = np.concatenate([self._buf, fresh])
        out, self._buf = self._buf[:m], self._buf[m:]
        return out

    def words32(self, m):
        """``m`` independent uniform uint32 words (half the bytes of ``words``)."""
        return self.words((m + 1) // 2).view(np.uint32)[:m]


def _uniform_below(bits, bound, size):
    """``size`` exactly uniform integers in ``[0, bound)`` (uint64).

    ``bound`` is an int in ``[1, 2^64)``, or a list of such ints, one per
    column: then the result has shape ``(size, len(bound))`` and column j is
    uniform below ``bound[j]``, every entry independent. With w-bit words
    (w = 32 when every bound is below 2^32, else 64), a word r is accepted
    when ``r >= 2^w mod bound``: the accepted words are
    ``2^w - (2^w mod bound)`` values, a multiple of ``bound``, so
    ``r mod bound`` is exactly uniform. A word is rejected with probability
    below ``bound/2^w``; rejected entries, and only they, are redrawn.
    """
    columns = isinstance(bound, list)
    bounds = [int(b) for b in bound] if columns else [int(bound)]
    if max(bounds) < 1 << 32:  # the same rule on 32-bit words: half the bytes
        width, draw, dtype = 32, bits.words32, np.uint32
    else:
        width, draw, dtype = 64, bits.words, _U64
    threshold = np.array([(1 << width) % b for b in bounds], dtype=dtype)
    modulus = np.array(bounds, dtype=dtype)
    r = draw(size * len(bounds)).reshape(size, len(bounds))
    bad = np.flatnonzero(r < threshold)  # indices into r.ravel() (C order)
    while bad.size:
        fresh = draw(bad.size)
        r.flat[bad] = fresh
        bad = bad[fresh < threshold[bad % len(bounds)]]
    out = (r % modulus).astype(_U64, copy=False)
    return out if columns else out.reshape(size)


#: Pre-drawing trials (issue 32). A loop over rejection rounds costs a fixed
#: ~10-30 µs of numpy calls per round whatever the number of entries, so a
#: call with few entries is dominated by its rounds. When few entries are
#: undecided, each draws a *block* of its next trials at once (``depth``
#: trials, enough that all entries are decided with probability about 1/2 or
#: more), and uses them in order up to its stopping time; the trials after it
#: are discarded. The trials are i.i.d. and the stopping rule reads only the
#: trials before it, so this is the same law as drawing one trial per round:
#: pre-drawing changes how many random words are consumed, never the output.
#: Large calls (``rows·depth`` words above ``_BLOCK_WORDS``) keep one trial
#: per round, which wastes no random bytes.
_BLOCK_WORDS = 1 << 13
_MAX_DEPTH = 16


def _block_depth(rows, tail):
    """How many trials each of ``rows`` undecided entries draws in one round.

    The smallest depth d with ``rows·tail(d) <= 1/2`` (``tail(d)`` bounds the
    probability that one entry is still undecided after d more trials), or 1
    when the block would exceed ``_BLOCK_WORDS`` words.
    """
    depth = 1
    while depth < _MAX_DEPTH and rows * tail(depth) > 0.5:
        depth += 1
    return depth if rows * depth <= _BLOCK_WORDS else 1


def _bernoulli_exp_fraction(bits, num, den, start=1):
    """Bernoulli(exp(-num/den)) for uint64 ``0 <= num <= den`` ([1]_, Algorithm 1).

    Draw A_k ~ Bernoulli(x/k) for k = 1, 2, ... until the first A_k = 0, and
    return whether that k is odd: ``P(K > k) = x^k/k!``, so
    ``P(K odd) = Σ_k (-x)^k/k! = exp(-x)``. Each A_k is exact: a uniform
    integer below ``den·k`` compared with ``num``. All entries run their
    rounds in lockstep, each round drawing the next ``depth`` trials
    ``A_k, ..., A_{k+depth-1}`` of every undecided entry (see
    ``_block_depth``); an entry leaves at its first failed trial. ``den`` is
    one int for all entries. ``start > 1`` continues series whose trials
    before A_start all succeeded (:func:`_bernoulli_exp1`).
    """
    num = np.asarray(num, dtype=_U64).reshape(-1)
    den = int(den)
    result = np.empty(num.size, dtype=bool)
    active = np.arange(num.size)
    k = start
    while active.size:
        # P(K >= k + d | K >= k) <= x^d/d! <= 1/d!
        depth = _block_depth(active.size, lambda d: 1.0 / math.factorial(d))
        # Every bound den·j of the block must stay below 2^64.
        depth = min(depth, ((1 << 64) - 1) // den - k + 1)
        if depth < 1:  # P(K > k) = x^k/k!: never for k > ~60
            raise MechanismFailedError("Bernoulli(exp(-x)) ran out of integer range.")
        bounds = [den * j for j in range(k, k + depth)]
        failed = _uniform_below(bits, bounds, active.size) >= num[active, None]
        if depth == 1:  # the same as below, without the slow row reductions
            decided = failed.reshape(-1)
            result[active[decided]] = k % 2 == 1
        else:
            decided = failed.any(axis=1)
            first = k + np.argmax(failed[decided], axis=1)  # the first failed k
            result[active[decided]] = first % 2 == 1
        active = active[~decided]
        k += depth
    return result


#: Bernoulli(exp(-1)) trials read the first _EXP1_TERMS terms of their
#: series from one uniform integer below _EXP1_TERMS! (:func:`_bernoulli_exp1`).
_EXP1_TERMS = 10
_EXP1_BOUND = math.factorial(_EXP1_TERMS)
# L!/k! for k = L, L-1, ..., 1 (increasing, for searchsorted).
_EXP1_THRESHOLDS = np.array(
    [_EXP1_BOUND // math.factorial(k) for k in range(_EXP1_TERMS, 0, -1)], dtype=_U64
)


def _bernoulli_exp1(bits, size):
    """``size`` Bernoulli(exp(-1)) trials, one random word each (almost always).

    Algorithm 1 of [1]_ with x = 1 draws A_k ~ Bernoulli(1/k) until the
    first failure K and returns whether K is odd; only the law of K matters,
    ``P(K > k) = 1/k!``. With V uniform below L! (L = ``_EXP1_TERMS``), the
    events ``{V < L!/k!}``, k = 1..L, are nested (L!/k! decreases in k) and
    have probabilities exactly 1/k! (L!/k! is an integer), so
    ``K = 1 + #{k <= L : V < L!/k!}`` has the law of K on ``K <= L``.
    V = 0 means K > L (probability 1/L!): that entry continues the series
    with fresh trials A_{L+1}, A_{L+2}, ..., independent of V.
    """
    v = _uniform_below(bits, _EXP1_BOUND, size)
    # #{k <= L : L!/k! > V}: the thresholds above V, counted by bisection.
    k = 1 + _EXP1_TERMS - np.searchsorted(_EXP1_THRESHOLDS, v, side="right")
    result = k % 2 == 1
    more = np.flatnonzero(v == 0)
    if more.size:
        ones = np.ones(more.size, dtype=_U64)
        result[more] = _bernoulli_exp_fraction(bits, ones, 1, _EXP1_TERMS + 1)
    return result


def _geometric_exp1(bits, size, cap=None):
    """Number of successes of Bernoulli(exp(-1)) before the first failure.

    ``P(G >= g) = exp(-g)``. With ``cap`` (an int64 array), counting stops
    once it reaches ``cap``: the result is ``min(G, cap)``, which decides
    ``G >= cap`` exactly with fewer trials. Each round draws the next
    ``width`` trials of every undecided entry (see ``_block_depth``) and
    counts the successes before the first failure among them.
    """
    count = np.zeros(size, dtype=np.int64)
    active = np.arange(size) if cap is None else np.flatnonzero(cap > 0)
    while active.size:
        # P(G >= g + w | G >= g) = e^-w
        width = _block_depth(active.size, lambda w: math.exp(-w))
        trials = _bernoulli_exp1(bits, active.size * width)
        if width == 1:  # the same as below, without the slow row reductions
            decided = ~trials
            count[active[trials]] += 1
        else:
            failed = ~trials.reshape(active.size, width)
            decided = failed.any(axis=1)
            count[active] += np.where(decided, np.argmax(failed, axis=1), width)
        active = active[~decided]
        if cap is not None:
            active = active[count[active] < cap[active]]
    return count if cap is None else np.minimum(count, cap)


def bernoulli_exp(bits, whole, num, den):
    """Bernoulli(exp(-γ)) trials for ``γ = whole + num/den``.

    ``exp(-γ) = exp(-1)^whole·exp(-num/den)``: the trial succeeds when the
    first ``whole`` Bernoulli(exp(-1)) trials all succeed (a geometric count,
    stopped at ``whole``) and a Bernoulli(exp(-num/den)) trial does ([1]_,
    Algorithm 1 and its remark on γ > 1).

    Parameters
    ----------
    bits : _Bits
        The random word source.
    whole : ndarray of int64
        ``⌊γ⌋ >= 0``.
    num : ndarray of uint64
        ``0 <= num < den``.
    den : int
        ``1 <= den < 2^57``, one for all entries.

    Returns
    -------
    ndarray of bool
    """
    whole = np.asarray(whole, dtype=np.int64).reshape(-1)
    num = np.asarray(num, dtype=_U64).reshape(-1)
    ok = _geometric_exp1(bits, whole.size, cap=whole) >= whole
    idx = np.flatnonzero(ok)
    ok[idx] = _bernoulli_exp_fraction(bits, num[idx], den)
    return ok


def _first_accepted(propose, size, acceptance):
    """``size`` accepted draws of a rejection sampler, in proposal order.

    ``propose(m)`` returns m i.i.d. proposals and whether each is accepted.
    The accepted proposals form an i.i.d. sequence from the target law, and
    which of them are kept (the first ``size`` in proposal order) does not
    depend on their values, so the result is ``size`` i.i.d. target draws.
    Each batch is oversampled for the expected ``acceptance`` so that one
    batch nearly always suffices: the loops over rejection rounds inside
    ``propose`` then run once per call instead of once per retry.
    """
    out = np.empty(size, dtype=np.int64)
    filled = 0
    while filled < size:
        need = size - filled
        # The expected need plus about three standard deviations.
        m = int((need + 4.0 * math.sqrt(need)) / acceptance) + 16
        values, accepted = propose(m)
        got = values[accepted][:need]
        out[filled : filled + got.size] = got
        filled += got.size
    return out


def discrete_laplace(bits, scale, size):
    """``size`` draws with P(Y = y) ∝ exp(-|y|/scale) on the integers.

    [1]_, Algorithm 2 with an integer ``scale`` t >= 1: U uniform in
    ``[0, t)``, kept with probability exp(-U/t); V geometric with
    P(V >= v) = exp(-v); X = U + t·V; a uniform sign B, rejecting
    (B = 1, X = 0) so that 0 is not counted twice.
    """
    t = int(scale)
    if not 1 <= t <= _MAX_LAPLACE_SCALE:
        raise ValueError(f"The discrete Laplace scale must be in [1, 2^48]; got {t}.")

    def propose(m):
        values = np.zeros(m, dtype=np.int64)
        u = _uniform_below(bits, t, m)
        keep = _bernoulli_exp_fraction(bits, u, t)
        u, idx = u[keep].astype(np.int64), np.flatnonzero(keep)
        v = _geometric_exp1(bits, idx.size)
        if v.size and int(v.max()) > (1 << 62) // t:  # P <= exp(-2^14) per draw
            raise MechanismFailedError("A discrete Laplace draw left the int64 range.")
        x = u + t * v
        negative = (bits.words(idx.size) & _U64(1)).astype(bool)
        values[idx] = np.where(negative, -x, x)
        accepted = np.zeros(m, dtype=bool)
        accepted[idx] = ~(negative & (x == 0))
        return values, accepted

    # P(keep U) = (1 - 1/e)/(t·(1 - e^(-1/t))); of the kept, X = 0 with
    # probability P(U = 0 | keep)·P(V = 0), and half of those are rejected.
    keep = -math.expm1(-1.0) / (t * -math.expm1(-1.0 / t))
    zero = (1.0 / (t * keep)) * -math.expm1(-1.0)
    return _first_accepted(propose, size, keep * (1.0 - zero / 2.0))


def _gaussian_exponent(y_abs, sigma):
    """``(|y| - σ)²/(2σ²)`` as (integer part, numerator, denominator), exactly.

    In int64 when ``||y| - σ| < 2^31`` (the square is below 2^62); otherwise
    (probability about exp(-2^31/σ) >= exp(-8) per draw at the largest σ)
    with Python integers. An integer part beyond int64 is stored as
    2^63 - 1: deciding ``G >= whole`` for a geometric G with P(G >= g) =
    e^-g stops at G's first failure, so the two differ only if 2^63 - 1
    consecutive trials succeed, which no run of the loop can reach.
    """
    a = np.abs(y_abs - sigma)
    den = 2 * sigma * sigma
    whole = np.empty(a.size, dtype=np.int64)
    num = np.empty(a.size, dtype=np.int64)
    small = a < (1 << 31)
    sq = a[small] * a[small]
    whole[small], num[small] = np.divmod(sq, den)
    cap = np.iinfo(np.int64).max
    for i in np.flatnonzero(~small):
        q, r = divmod(int(a[i]) ** 2, den)
        whole[i], num[i] = min(q, cap), r
    return whole, num.astype(_U64), den


def discrete_gaussian(bits, sigma, size):
    """``size`` draws with P(Y = y) ∝ exp(-y²/(2σ²)) on the integers.

    [1]_, Algorithm 3 with an integer σ >= 1 and the discrete Laplace scale
    t = σ: propose Y ~ discrete Laplace(t), accept with probability
    ``exp(-(|Y| - σ²/t)²/(2σ²)) = exp(-(|Y| - σ)²/(2σ²))``. The ratio of the
    target to the proposal, ``exp(-y²/(2σ²) + |y|/t)``, is at most
    ``exp(σ²/(2t²))`` with equality at ``|y| = σ²/t``, so this acceptance
    probability is the exact rejection-sampling ratio ([1]_, §5.3).
    """
    s = int(sigma)
    if not 1 <= s <= _MAX_GAUSS_SCALE:
        raise ValueError(f"The discrete Gaussian sigma must be in [1, 2^28]; got {s}.")

    def propose(m):
        y = discrete_laplace(bits, s, m)
        whole, num, den = _gaussian_exponent(np.abs(y), s)
        return y, bernoulli_exp(bits, whole, num, den)

    # This rejection step accepts about 76% of proposals ([1]_, §5.3).
    return _first_accepted(propose, size, 0.76)


def _grid_exponent(scale, root_dim, max_ratio):
    """The exponent e of the grid step g = 2^e <= scale·2^-GRID_BITS/root_dim.

    The integer scale ``scale/g`` falls in ``[2^GRID_BITS·root_dim,
    2^(GRID_BITS+1)·root_dim)``, where in it depending on the mantissa of
    ``scale/root_dim``: a call is refused whenever that interval can
    exceed ``max_ratio``, from ``root_dim`` alone, so that whether a
    release fits never depends on ε (2^22 values per Gaussian release; it
    once refused DPPCA on 4000 features at ε = 0.7 and fitted at ε = 1;
    review).
    """
    if math.ldexp(root_dim, GRID_BITS + 1) > max_ratio:
        raise ValueError(
            "Too many coordinates in one secure noise call: a Gaussian release "
            "takes at most 2^22 = 4194304 values, a Laplace one 2^31 (the "
            "sampler's exact integer arithmetic); use noise='fast'."
        )
    if not (math.isfinite(scale) and scale > 0.0):
        raise ValueError(f"Secure noise needs a finite noise scale > 0; got {scale}.")
    e = math.floor(math.log2(scale / root_dim)) - GRID_BITS
    if e < -1000:  # a grid step near the subnormals: the arithmetic fails
        raise ValueError(
            f"The noise scale {scale:g} is too small for secure noise (its grid "
            "step would be below 2^-1000)."
        )
    # log2 may round: step down until the bound holds exactly (ldexp is exact).
    while math.ldexp(1.0, e) * root_dim > math.ldexp(scale, -GRID_BITS):
        e -= 1
    return e


#: The largest batch of draws :meth:`SecureNoise._draws` makes for later calls.
_POOL_MAX = 1 << 16


#: Grid integers are clamped to ±2^60 (a 1-Lipschitz map per coordinate, so
#: the sensitivity bound is unchanged), which keeps ``m + Y`` inside int64.
_GRID_CLAMP = float(1 << 60)


def _to_grid(value, e):
    """``clamp(round(value / 2^e), ±2^60)`` as float64 integers.

    Dividing by the power of two 2^e is exact (or overflows to ±inf, which
    the clamp maps to ±2^60); rounding moves each coordinate by at most 1/2;
    the clamp is 1-Lipschitz. So neighbouring values at L2 (L1) distance Δ
    map to integer vectors at L2 distance at most ``Δ/g + sqrt(dim)`` (L1:
    ``Δ/g + dim``), whatever their size: no value makes this raise.
    """
    value = np.asarray(value, dtype=np.float64)
    if np.isnan(value).any():
        raise ValueError("Secure noise needs values that are not NaN.")
    with np.errstate(over="ignore"):
        scaled = np.ldexp(value, -e)
    return np.clip(np.rint(scaled), -_GRID_CLAMP, _GRID_CLAMP)


class SecureNoise:
    """A noise source whose draws resist floating-point attacks.

    Made by :func:`skdp.mechanisms.as_generator` for ``noise="secure"``; the
    mechanisms in :mod:`skdp.mechanisms` dispatch on it. Every privacy noise
    draw is exact integer noise from ``discrete_gaussian`` or
    ``discrete_laplace`` (Canonne, Kamath & Steinke 2020, Algorithms 3
    and 2) on a power-of-two grid, with bits from :func:`os.urandom`, added
    to the value *rounded to that grid*, so the low-order bits of a release
    depend only on the exact integer sum and reveal nothing more than it
    does. Repeated calls at one integer scale (the steps of a fit) take
    their draws from batches made ahead, each draw used by exactly one call
    (``_draws``): the noise of every call is fresh and exact.

    Data-independent randomness that carries no privacy noise (a shuffle, a
    random-feature map, the number of search candidates) is drawn through
    the few numpy methods listed in ``_PUBLIC_METHODS``, from a PCG64
    generator seeded with 256 bits of :func:`os.urandom`; every other numpy
    sampler (``normal``, ``laplace``, ``gumbel``, ``uniform``, ...) raises,
    so no noise can silently take the fast path.

    Parameters
    ----------
    bytes_source : callable, optional
        ``bytes_source(n) -> bytes``: the random bytes. Default
        :func:`os.urandom`. Tests pass a seeded source for determinism;
        anything else defeats the purpose.
    """

    _PUBLIC_METHODS = frozenset(
        {
            "permutation",
            "integers",
            "random",
            "standard_normal",
            "choice",
            "logseries",
            "negative_binomial",
        }
    )

    #: One line for ``privacy_spent_``.
    description = (
        f"discrete Gaussian/Laplace (Canonne, Kamath & Steinke 2020), OS CSPRNG "
        f"(os.urandom), values rounded to a 2^-k grid with step <= "
        f"scale*2^-{GRID_BITS}/sqrt(dim)"
    )

    def __init__(self, bytes_source=None):
        self._bytes_source = bytes_source
        self._forget_drawn()
        # One object may be shared by threads (a user's own mechanism calls):
        # the pools and the word buffer hand every draw out exactly once only
        # if no two calls interleave.
        self._lock = threading.RLock()
        _LIVE.add(self)

    def _forget_drawn(self):
        """Drop every word and sample drawn but not handed out yet."""
        self._bits = _Bits(self._bytes_source)
        self._public = None
        self._pools = {}

    # A copy (deepcopy, pickle: joblib, multiprocessing) or a forked child
    # starts with nothing drawn: it would otherwise hand out the noise the
    # original still holds, and two releases could cancel it.
    def __getstate__(self):
        return {"_bytes_source": self._bytes_source}

    def __setstate__(self, state):
        self.__init__(state["_bytes_source"])

    def __repr__(self):
        return "SecureNoise()"

    def spawn(self, n_children):
        """``n_children`` independent secure sources (numpy's ``spawn`` interface)."""
        return [type(self)(self._bytes_source) for _ in range(n_children)]

    def __getattr__(self, name):
        if name in SecureNoise._PUBLIC_METHODS:
            with self._lock:
                if self._public is None:
                    seed = np.frombuffer(self._bits_bytes(32), dtype="<u8")
                    self._public = np.random.default_rng(seed.astype(np.uint64))
            return getattr(self._public, name)
        raise AttributeError(
            f"SecureNoise has no {name!r}: privacy noise under noise='secure' is "
            "drawn only through skdp.mechanisms (add_gaussian_noise, "
            "add_laplace_noise)."
        )

    def _bits_bytes(self, n):
        with self._lock:
            return self._bits.words((n + 7) // 8).tobytes()[:n]

    def add_gaussian(self, value, std):
        """``value`` rounded to the grid plus discrete Gaussian noise of scale ≥ std.

        The grid step is ``g = 2^e <= std·2^-16/sqrt(value.size)`` and the
        integer scale ``s = ceil(std/g)`` (so the noise's scale ``s·g`` is at
        least ``std``). Returns ``g·(round(value/g) + Y)``, Y ~ N_Z(0, s²)
        i.i.d. Values beyond ``2^60·g`` are clamped there first (1-Lipschitz:
        the sensitivity holds; such values are ``2^44·std/sqrt(size)`` and
        more, far beyond any noise this could be meant for). ``std`` must be
        finite and at least about ``2^-980``.
        """
        value = np.asarray(value, dtype=np.float64)
        if std == 0:
            return value.copy()
        root_dim = math.sqrt(max(value.size, 1))
        e = _grid_exponent(std, root_dim, _MAX_GAUSS_SCALE)
        m = _to_grid(value, e)
        s = math.ceil(math.ldexp(std, -e))
        y = self._draws(discrete_gaussian, s, value.size).reshape(value.shape)
        return np.ldexp(m + y, e)

    def add_laplace(self, value, scale):
        """``value`` rounded to the grid plus discrete Laplace noise of scale ≥ b.

        The grid step is ``g = 2^e <= b·2^-16/value.size``, the integer
        scale ``t = ceil(b/g)``. Returns ``g·(round(value/g) + Y)``,
        ``P(Y = y) ∝ exp(-|y|/t)``.
        """
        value = np.asarray(value, dtype=np.float64)
        if scale == 0:
            return value.copy()
        integers, e = self.laplace_integers(value, scale)
        return np.ldexp(integers.astype(np.float64), e)

    def laplace_integers(self, value, scale):
        """The integers ``round(value/g) + Y`` of :meth:`add_laplace`, and e (g = 2^e).

        Exact int64 (``|round(value/g)| <= 2^60`` after the clamp,
        ``|Y| < 2^62``),
        for mechanisms that compare noisy values (report-noisy-max): in
        float64 two different sums above 2^53 could round to a tie.
        """
        value = np.asarray(value, dtype=np.float64)
        e = _grid_exponent(scale, max(value.size, 1), _MAX_LAPLACE_SCALE)
        m = _to_grid(value, e).astype(np.int64)
        t = math.ceil(math.ldexp(scale, -e))
        y = self._draws(discrete_laplace, t, value.size).reshape(value.shape)
        return m + y, e

    def _draws(self, sampler, scale, size):
        """``size`` draws of ``sampler(bits, scale, size)``, batched across calls.

        A fit calls the noise at one integer scale many times with few values
        (one gradient per step), and a sampler call has a fixed cost of
        rejection rounds whatever its size (issue 32). So the draws of one
        (sampler, scale) are made in batches, kept in a pool, and handed out
        in order, each exactly once: every call gets ``size`` i.i.d. draws of
        the sampler's law that no other call sees, so the noises of
        different calls are independent and each has exactly the law it has
        unbatched. The first call at a scale draws just what it needs; each
        later refill draws twice the previous one (at most ``_POOL_MAX``, at
        least what the call needs), so T calls of one size make about
        log2(T) sampler calls and leave at most about half of the draws
        unused. The pool never leaves this object.
        """
        key = (sampler.__name__, scale)
        with self._lock:
            pool, last = self._pools.get(key, (np.empty(0, dtype=np.int64), 0))
            if pool.size < size:
                amount = max(size - pool.size, min(2 * last, _POOL_MAX))
                fresh = sampler(self._bits, scale, amount)
                pool, last = np.concatenate([pool, fresh]), amount
            self._pools[key] = (pool[size:], last)
            return pool[:size]
