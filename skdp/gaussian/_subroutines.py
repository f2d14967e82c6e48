"""The subroutines of the unbounded Gaussian sampler (paper 004, Algorithms 2-6).

Pure functions of explicit constants (λ0, k, M, the PTR's ε and δ), so that
tests can run them at small sizes where the stability lemmas' conditions
hold. Nothing here reads a privacy parameter from the data. Errata of the
paper are resolved as in the spec (E1-E4): R is drawn from the mean half
[n1]; StableMean's level thresholds are λ_ℓ = e^{ℓ/k}·λ0; LargestGoodSubset
normalises by m and stops when no point is removed; the mean half is the
first n1 rows.

Floating point: the proofs assume exact arithmetic; the PTR step needs the
score to move by at most 2 between neighbours (Lemma 3.5), and one extreme
but finite row must not break that in float64. So (issue 29, item 10):

* LargestGoodSubset's Mahalanobis norms ``m·Y_iᵀ(Y_SᵀY_S)^{-1}Y_i`` are the
  leverages of ``Y_S``, read off the Q factor of a Householder QR with
  column pivoting of the rows sorted by decreasing size and scaled by a
  power of two (exact): no ``YᵀY`` is formed (which squares the condition
  number and overflows at 1e154), and sorted rows make Householder QR
  row-wise backward stable (Cox & Higham 1998), so one huge row gets
  leverage ≈ 1 and the others keep theirs.
* ``A(S)`` counts as singular (every point an outlier, Algorithm 4) at
  level ℓ when ``σ_min(Y_S) <= τ_ℓ = m·eps·e^{-ℓ/(2k)}·s_[j0+ℓ]``, where
  ``s_[j]`` is the j-th largest row size of all m rows (zero rows
  included, 0 beyond m) and ``j0 ≈ m/2 - k``. A tolerance relative to the
  largest row would let one huge row make every point an outlier; one
  relative to a fixed order statistic (the median) can be moved across a
  gap in the rows' sizes by one row (two groups of rows ~1e17 apart, one
  on a line: the score moved by 5). With the level-indexed order
  statistic the proof of Lemma 3.5 goes through: for neighbours Y, Y'
  (one row replaced) ``s'_[j+1] <= s_[j]``, and a λ_ℓ-good S keeps
  ``σ_min(Y_{S∖i})² >= (1 - λ_ℓ/m)·σ_min(Y_S)² >= e^{-1/k}·σ_min(Y_S)²``
  (``yyᵀ ⪯ (λ_ℓ/m)·Y_SᵀY_S`` for every y in S; ``λ_{2k}/m <= 1/(16k)`` by
  Lemma 3.1's condition ``n2 >= 16e²λ0k``), so ``S∖{i}`` is non-singular
  for Y' at level ℓ+1, where ``τ'_{ℓ+1} <= e^{-1/(2k)}·τ_ℓ``; the
  thresholds grow as ℓ falls, so the sets stay nested, and within one data
  set the singular decision is monotone in S (σ_min is). ``σ_min`` is
  ``1/||R^{-1}||₂`` of the QR's R, relatively accurate for a graded R.
  What remains assumed is that the computed leverages keep the exact
  ones' inequalities within the levels' margin (a factor e^{1/k} against
  at most ``1/(1 - 1/(16k))``), which row-wise backward stability gives
  unless ``Y_S`` is within a few orders of magnitude of the rank
  threshold; a seeded fuzz test (``tests/test_gaussian_sampler.py``)
  checks the score's sensitivity on such data.
* StableMean's distances ``||x_i - x_j||²_{Σ̂}`` are expanded as
  ``||a||² + ||b||² - 2aᵀb`` around the coordinate-wise median of the
  whitened reference set (a translation, exact in real arithmetic), which
  one row moves only to a neighbouring order statistic; centring on R's
  mean let one row at 1e100 move the origin and drown every distance in
  cancellation. A row can be in a core only if it is within
  ``e·sqrt(λ0)`` of most of R, hence within ``sqrt(d)·e·sqrt(λ0)`` of the
  median, so every distance a decision depends on is computed near the
  origin; a distance that overflows is +inf ("far", its exact-arithmetic
  outcome), and one that is undefined (inf - inf, two huge rows) is
  recomputed directly from the difference of the two rows.
* Σ̂ is factored by a pivoted QR of the weighted, row-sorted pairs, not by
  a Cholesky of ``Σ̂`` (which fails at a condition number near 1/eps,
  long before the rank threshold above: the run would Fail on data whose
  score passed).
* The covariance half is paired as ``(X_a/2 - X_b/2)`` (never overflows;
  the scores are invariant to the scale of Y), numerics run under
  ``np.errstate(all="ignore")`` with every non-finite result handled
  explicitly, and a release that is not finite (data beyond float64's
  range) is Fail.

The number of peeling rounds (hence the running time) depends on the data;
that side channel is outside the DP model.
"""

import math

import numpy as np
from scipy.linalg import qr, solve_triangular

__all__ = [
    "largest_core_levels",
    "largest_good_subset",
    "ptr_pass",
    "ptr_pass_probability",
    "ptr_score",
    "release",
    "run_sampler",
    "stable_cov",
    "stable_mean",
]

# Rows per block in the n1 x M distance computation of StableMean (memory
# ~ block · M · 8 bytes; M ≈ 1200 gives ~100 MB).
_BLOCK_ROWS = 10_000
_EPS = float(np.finfo(np.float64).eps)


# Pair differences below this magnitude count as 0, and every QR scales its
# largest entry to 2^_TOP_EXPONENT: the non-zero entries then lie in
# [2^-714, 2^600], inside float64's normal range with room for the QR's
# products, whatever finite data comes in (module docstring).
_FLUSH = 2.0**-290
_TOP_EXPONENT = 600

# A(S) is singular at level ℓ when the smallest singular value of Y_S is at
# most this many ulps, times m, of the level's scale (see _rank_tolerances).
_RANK_ULPS = 1.0
_LOG2_E = math.log2(math.e)


def _flush_tiny(Y, copy=True):
    """Entries of magnitude below 2^-290 (≈ 5e-88) set to 0 (row-local).

    ``copy=False`` flushes ``Y`` in place (a fresh array of the caller's).
    """
    tiny = np.abs(Y) < _FLUSH
    tiny &= Y != 0.0
    if not tiny.any():
        return Y
    if copy:
        Y = Y.copy()
    Y[tiny] = 0.0
    return Y


def _rank_tolerances(Y, k):
    """log2 of the singularity threshold of A(S) at each level ℓ = 0..2k.

    Level ℓ calls ``Y_S`` singular when ``σ_min(Y_S) <= τ_ℓ`` with
    ``τ_ℓ = max(m, d)·eps·e^{-ℓ/(2k)}·s_[j0 + ℓ]``, where ``s_[j]`` is the j-th
    largest row size (max-abs) of *all* m rows of Y (0 beyond m) and
    ``j0 = max(1, (m - 2k + 1)//2)``, so the levels read the order
    statistics around the median. The index grows with the level, so
    for neighbours Y, Y' (one row replaced) ``s'_[j+1] <= s_[j]``, and
    ``τ'_{ℓ+1} <= e^{-1/(2k)}·τ_ℓ``: level ℓ+1 of the neighbour is at least
    as permissive as level ℓ shrunk by the factor a good set's σ_min can
    lose with one row (module docstring). Zero rows count (size 0); a scale
    of 0 means "singular only if σ_min is 0".
    """
    m, d = Y.shape
    levels = np.arange(2 * k + 1)
    j = max(1, (m - 2 * k + 1) // 2) + levels  # 1-based, descending order
    size = np.max(np.abs(Y), axis=1) if d else np.zeros(m)
    inside = j <= m
    scale = np.zeros(levels.size)
    if inside.any():
        kth = m - j[inside]  # the j-th largest is the (m - j)-th smallest
        scale[inside] = np.partition(size, kth)[kth]
    with np.errstate(divide="ignore"):
        log2_scale = np.log2(scale)
    decay = levels / (2 * max(k, 1)) * _LOG2_E
    return math.log2(_RANK_ULPS * max(m, d) * _EPS) - decay + log2_scale


def _sorted_and_scaled(rows):
    """``(Z, order, shift)``: rows by decreasing max-abs, times ``2^shift``.

    The largest entry becomes 2^600 (exact, free of overflow; with entries
    below 2^-290 flushed to 0, every non-zero entry stays above 2^-714), and
    sorted rows make Householder QR row-wise backward stable (Cox & Higham
    1998). None when there are fewer rows than columns or no finite non-zero
    row.
    """
    size = np.max(np.abs(rows), axis=1)
    top = size.max(initial=0.0)
    if rows.shape[0] < rows.shape[1] or not np.isfinite(top) or top == 0.0:
        return None
    shift = _TOP_EXPONENT - int(np.frexp(top)[1])
    order = np.argsort(-size, kind="stable")
    return np.ldexp(rows[order], shift), order, shift


def _good_set_norms(Y, mask):
    """``m·Y_iᵀ(Σ_{j∈S} Y_j Y_jᵀ)^{-1}Y_i`` on S and ``log2 σ_min(Y_S)``.

    The leverages of ``Y_S`` times m = ``len(Y)`` (Algorithm 4 normalises
    A by m): the squared row norms of Q in a pivoted QR of ``Y_S``, its
    rows sorted and scaled (:func:`_sorted_and_scaled`; leverages do not
    depend on the row order). ``σ_min(Y_S)`` is
    ``1/||R^{-1}||₂`` (relatively accurate for a graded R, unlike an SVD of
    R, whose small singular values carry an error of eps times the
    largest). Returns ``(q, log2_sigma)``:
    q of length m (0 outside S), or ``(None, -inf)`` when ``Y_S`` has fewer
    rows than columns or no finite non-zero row. The caller compares
    ``log2_sigma`` with the level's :func:`_rank_tolerances`.
    """
    m = Y.shape[0]
    scaled = _sorted_and_scaled(Y[mask])
    if scaled is None:
        return None, -np.inf
    Z, order, shift = scaled
    Q, R, _ = qr(Z, mode="economic", pivoting=True, check_finite=False)
    q = np.zeros(m)
    rows = np.flatnonzero(mask)[order]
    q[rows] = m * np.einsum("ij,ij->i", Q, Q)
    return q, _log2_smallest_singular_value(R) - shift


def _log2_smallest_singular_value(R):
    """``log2 σ_min`` of a square upper-triangular R (-inf if singular)."""
    if not np.all(np.diag(R) != 0.0):
        return -np.inf
    R_inv = solve_triangular(R, np.eye(R.shape[0]), check_finite=False)
    if not np.all(np.isfinite(R_inv)):
        return -np.inf
    largest = np.linalg.norm(R_inv, 2)
    return -math.log2(largest) if np.isfinite(largest) and largest > 0 else -np.inf


#: Squared row norms (relative to the largest) trusted by
#: :func:`_dominant_rows`: far enough above the underflow threshold 2^-1074
#: that the rows flushed below it change no share by more than 2^-150.
_TRUSTED_SQUARE = 2.0**-900


def _dominant_rows(Y, S, lam):
    """Rows of S whose leverage provably exceeds ``lam``: the first step of
    Algorithm 4 would remove them, so removing them first changes nothing
    in exact arithmetic (the greatest fixed point is reached from any
    superset of it).

    For row i of S, ``q_i = m·Y_iᵀ(Σ_{j∈S} Y_j Y_jᵀ)^{-1}Y_i >= m·‖Y_i‖²/Σ_{j∈S}
    ‖Y_j‖²`` (the largest eigenvalue of the sum is at most its trace); rows
    are taken by decreasing norm, each against the rows left, while that
    bound exceeds ``lam`` (with a relative margin of 1e-6 for rounding).
    A row beyond about 2^300 times the others otherwise reaches the QR of
    :func:`_good_set_norms` with the others' Householder vectors underflowed
    to 0: the set was declared singular and emptied, moving a PTR score from
    0 to k where Lemma 3.5 allows 2 (one finite record turned an always
    passing test into an always failing one).
    """
    m = Y.shape[0]
    out = np.zeros(m, dtype=bool)
    while True:
        rows = np.flatnonzero(S & ~out)
        size = np.max(np.abs(Y[rows]), axis=1) if rows.size else np.zeros(0)
        top = size.max(initial=0.0)
        if not (np.isfinite(top) and top > 0.0):
            return out
        Z = np.ldexp(Y[rows], -int(np.frexp(top)[1]))  # exact; entries < 1
        squares = np.einsum("ij,ij->i", Z, Z)
        order = np.argsort(-squares, kind="stable")
        ranked = squares[order]
        left = np.cumsum(ranked[::-1])[::-1]  # the rows from this one down
        trusted = ranked >= _TRUSTED_SQUARE
        with np.errstate(divide="ignore", invalid="ignore"):
            removable = trusted & (m * ranked > lam * (1.0 + 1e-6) * left)
        run = removable.size if removable.all() else int(np.argmin(removable))
        if run == 0:
            return out
        out[rows[order[:run]]] = True
        if run < removable.size and trusted[run]:
            return out  # the next row is measured and stays: so do the rest


def _singular(q, log2_sigma, log2_tol):
    return q is None or not log2_sigma > log2_tol


def largest_good_subset(Y, lam, start=None, log2_tol=None):
    """Algorithm 4: the largest set S with ``Y_iᵀ A(S)^{-1} Y_i <= λ`` on S.

    Iterates ``S <- {i ∈ S : Y_iᵀ A(S)^{-1} Y_i <= λ}`` with
    ``A(S) = (1/m)·Σ_{j∈S} Y_j Y_jᵀ`` until nothing is removed; a singular A
    makes every point an outlier. The map is monotone and deflationary, so
    the iteration from [m] (or from any superset ``start`` of the answer that
    the map shrinks) reaches the greatest fixed point. ``log2_tol``: the
    singularity threshold (:func:`_rank_tolerances`; default: its level 0
    with k = 0, the median row size).

    Returns a boolean mask of length m.
    """
    Y = _flush_tiny(Y)
    m = Y.shape[0]
    if log2_tol is None:
        log2_tol = _rank_tolerances(Y, 0)[0]
    S = np.ones(m, dtype=bool) if start is None else start.copy()
    S &= ~_dominant_rows(Y, S, lam)
    while S.any():
        with np.errstate(all="ignore"):
            q, log2_sigma = _good_set_norms(Y, S)
        if _singular(q, log2_sigma, log2_tol):
            S[:] = False
            break
        out = S & (q > lam)
        if not out.any():
            break
        S &= ~out
    return S


def stable_cov(Y, lambda0, k):
    """Algorithm 3 (StableCov) on paired rows ``Y`` (m x d), with early exit.

    Levels ℓ = 2k, ..., 0 with thresholds ``e^{ℓ/k}·λ0`` (and singularity
    thresholds :func:`_rank_tolerances`, which grow as ℓ falls) are
    processed from the top, each warm-started from the previous level's
    set (exact: the sets are nested). The scores ``t_ℓ = m - |S_ℓ| + ℓ``
    enter ``Score = min(k, min_{ℓ<=k} t_ℓ)``. Once the running set has lost
    k points at level ℓ0, every t_ℓ with ℓ <= ℓ0 is >= k, so the remaining
    levels cannot lower the score and are skipped (the score is computed
    from the levels already seen; the spec review's corrected rule).

    Returns
    -------
    weights : ndarray of shape (m,)
        ``w_i = (1/(k m))·#{ℓ ∈ k+1..2k : i ∈ S_ℓ}``, or None if Score = k
        (the PTR then fails with certainty and the weights are not needed).
    score : int
    """
    with np.errstate(all="ignore"):
        return _stable_cov(_flush_tiny(Y), lambda0, k)


def _stable_cov(Y, lambda0, k):
    m = Y.shape[0]
    S = np.ones(m, dtype=bool)
    # out_level[i]: the level at which i was removed (-1: never).
    out_level = np.full(m, -1, dtype=np.int64)
    score = k
    log2_tol = _rank_tolerances(Y, k)
    # Removed at the first level whatever else happens (see _dominant_rows);
    # a set singular with them is singular without them, so no outcome moves.
    dominant = _dominant_rows(Y, S, math.exp(2.0) * lambda0)
    S &= ~dominant
    out_level[dominant] = 2 * k
    n_in = int(S.sum())
    if m - n_in >= k:
        return None, k
    q, log2_sigma = _good_set_norms(Y, S)
    for level in range(2 * k, -1, -1):
        lam = math.exp(level / k) * lambda0
        lost_k = False
        while n_in > 0:
            if _singular(q, log2_sigma, log2_tol[level]):
                out = S.copy()
            else:
                out = S & (q > lam)
                if not out.any():
                    break
            S &= ~out
            out_level[out] = level
            n_in = int(S.sum())
            if m - n_in >= k:
                lost_k = True
                break
            q, log2_sigma = _good_set_norms(Y, S)
        if lost_k:
            # t_ℓ >= k for every ℓ <= level: the score is settled.
            if level >= k:
                return None, k
            break
        if level <= k:
            score = min(score, m - n_in + level)
    if score >= k:
        return None, k
    # i ∈ S_ℓ iff ℓ > out_level[i]; count over ℓ = k+1..2k.
    counts = 2 * k - np.maximum(out_level, k)
    return counts / (k * m), int(score)


def largest_core_levels(D_sorted_top, lambda0, k):
    """Membership of every row in LargestCore at each level ℓ = 0..2k.

    ``D_sorted_top[i, j]`` is the (n_ref - 2k + j)-th smallest (1-based)
    squared distance of row i to the reference set of n_ref rows, j = 0..2k
    (n_ref is fixed by that order, not passed). Row i is in
    ``S_ℓ`` (threshold ``λ_ℓ = e^{ℓ/k} λ0``, core size ``τ = n_ref - ℓ``) iff
    its (n_ref - ℓ)-th smallest distance is <= λ_ℓ.

    Returns a boolean array of shape (n_rows, 2k + 1), column ℓ.
    """
    levels = np.arange(2 * k + 1)
    lam = np.exp(levels / k) * lambda0
    # (n_ref - ℓ)-th smallest is column 2k - ℓ of D_sorted_top.
    return D_sorted_top[:, 2 * k - levels] <= lam


def _direct_sq_distances(A, B):
    """``||a_i - b_i||²`` row by row, scaled by a power of two per pair.

    Overflow gives inf; a non-finite row gives inf (far).
    """
    diff = A - B
    size = np.max(np.abs(diff), axis=1)
    shift = np.where(np.isfinite(size) & (size > 0), -np.frexp(size)[1], 0)
    scaled = np.ldexp(diff, shift[:, None])
    out = np.ldexp(np.einsum("ij,ij->i", scaled, scaled), -2 * shift)
    out[~np.isfinite(size)] = np.inf
    return out


def stable_mean(Xw, ref, lambda0, k):
    """Algorithm 5 (StableMean) with Algorithm 6 (LargestCore) at every level.

    ``Xw`` holds the mean half whitened by Σ̂ (so Euclidean distances are
    Σ̂-Mahalanobis distances); ``ref`` indexes the reference set R ⊆ [n1].
    Distances are computed in row blocks; per row, the 2k + 1 order
    statistics that the levels need come from one ``np.partition``.

    Returns
    -------
    weights : ndarray of shape (n1,) or None (Score = k)
    score : int
    """
    n_ref = len(ref)
    if n_ref < 2 * k + 1:
        raise ValueError("The reference set must have more than 2k points.")
    with np.errstate(all="ignore"):
        return _stable_mean(Xw, ref, lambda0, k)


def _stable_mean(Xw, ref, lambda0, k):
    n1 = Xw.shape[0]
    # Distances are translation invariant: centre on the coordinate-wise
    # median of R's finite rows, which one row cannot move far (module
    # docstring), so that the expansion ||a||² + ||b||² - 2a·b does not
    # cancel catastrophically for the rows a decision depends on.
    R = Xw[ref]
    finite = np.all(np.isfinite(R), axis=1)
    origin = np.median(R[finite], axis=0) if finite.any() else np.zeros(Xw.shape[1])
    R = R - origin
    n_ref = R.shape[0]
    top = 2 * k + 1
    R_sq = np.einsum("ij,ij->i", R, R)
    sizes = np.zeros(top, dtype=np.int64)
    counts = np.empty(n1, dtype=np.int64)
    for start in range(0, n1, _BLOCK_ROWS):
        B = Xw[start : start + _BLOCK_ROWS] - origin
        D = np.einsum("ij,ij->i", B, B)[:, None] + R_sq[None, :]
        D -= 2.0 * (B @ R.T)
        # Undefined (inf - inf: both rows huge): recompute those few pairs
        # directly, scaled, so that two equal huge rows are at distance 0
        # and two distinct ones far (inf when the distance overflows).
        bad = np.nonzero(np.isnan(D))
        if bad[0].size:
            D[bad] = _direct_sq_distances(B[bad[0]], R[bad[1]])
        np.maximum(D, 0.0, out=D)
        D = np.partition(D, n_ref - top, axis=1)[:, n_ref - top :]
        D.sort(axis=1)
        member = largest_core_levels(D, lambda0, k)
        sizes += member.sum(axis=0)
        counts[start : start + B.shape[0]] = member[:, k + 1 :].sum(axis=1)
    levels = np.arange(k + 1)
    score = int(min(k, np.min(n1 - sizes[: k + 1] + levels)))
    if score >= k:
        return None, k
    total = counts.sum()
    weights = counts / total if total > 0 else np.zeros(n1)
    return weights, score


def ptr_pass_probability(score, epsilon_p, bound):
    """P[Pass] of the truncated-Laplace PTR at a given score (exact CDF).

    Pass iff ``score + ξ < B``, ``ξ ~ Laplace(2/ε_p)`` truncated to [-B, B].
    """
    b = 2.0 / epsilon_p
    x = bound - score  # P[ξ < x]
    if x <= -bound:
        return 0.0
    if x >= bound:
        return 1.0

    def cdf(t):  # untruncated Laplace CDF
        return 0.5 * math.exp(t / b) if t < 0 else 1.0 - 0.5 * math.exp(-t / b)

    return (cdf(x) - cdf(-bound)) / (cdf(bound) - cdf(-bound))


def _truncated_laplace(rng, scale, bound):
    """One draw of Laplace(scale) truncated to [-bound, bound] (inverse CDF)."""
    lo = 0.5 * math.exp(-bound / scale)
    u = rng.uniform(lo, 1.0 - lo)
    if u < 0.5:
        return scale * math.log(2.0 * u)
    return -scale * math.log(2.0 * (1.0 - u))


def ptr_pass(score, epsilon_p, bound, rng):
    """The (ε_p, δ_p)-DP truncated-Laplace PTR test on a sensitivity-2 score.

    Score 0 passes surely (a measure-zero change); scores >= 2B fail surely.
    """
    if score == 0:
        return True
    xi = _truncated_laplace(rng, 2.0 / epsilon_p, bound)
    return score + xi < bound


def release(mu_hat, W_weights, Y, n1, rng, *, y_scale=1.0):
    """``μ̂ + sqrt((1 - 1/n1)·n2)·Σ_i z_i sqrt(w_i) Y_i``, z uniform on the sphere.

    The rows are ``y_scale·Y``: the scale multiplies the sum, not the rows,
    so a row within float64's range is never scaled out of it (the sum is at
    most the largest |row| by Cauchy–Schwarz, Σw ≤ 1 and ||z|| = 1; only a
    result beyond the range overflows, a function of the exact release).
    """
    n2 = Y.shape[0]
    g = rng.standard_normal(n2)
    z = g / np.linalg.norm(g)
    used = W_weights > 0  # rows of weight 0 add nothing (and may be huge)
    Wz = Y[used].T @ (z[used] * np.sqrt(W_weights[used]))
    return mu_hat + math.sqrt((1.0 - 1.0 / n1) * n2) * y_scale * Wz


def run_sampler(X, n1, n2, lambda0, k, n_ref, epsilon_p, ptr_bound, rng, rows=None):
    """One run of Algorithm 2 on ``X[rows]``, with explicit constants.

    The first ``n1`` of the selected rows form the mean half, the next
    ``2·n2`` the covariance half (``rows=None``: ``X``'s own order; X should
    then already be shuffled). Rows are gathered half by half, so that no
    shuffled copy of all of X is made. Returns the released sample (ndarray
    of shape (d,)) or None for Fail. No intermediate leaves this function.
    """
    if rows is None:
        rows = np.arange(n1 + 2 * n2)
    with np.errstate(all="ignore"):
        return _run_sampler(
            X, rows, n1, n2, lambda0, k, n_ref, epsilon_p, ptr_bound, rng
        )


def _half_pairs(X, rows, n1, n2):
    """``Y_i/sqrt(2) = X_a/2 - X_b/2`` for the covariance half: never overflows.

    Entries below 2^-290 are flushed to 0 (:func:`_flush_tiny`).
    """
    Yh = X[rows[n1 : n1 + n2]] * 0.5
    Yh -= X[rows[n1 + n2 : n1 + 2 * n2]] * 0.5
    return _flush_tiny(Yh, copy=False)


def ptr_score(X, n1, n2, lambda0, k, ref, rows=None):
    """``max(Score1, Score2)`` of Algorithm 2 for a given reference set (tests).

    The score the PTR test sees (k when a score is k or Σ̂ cannot whiten),
    computed by the same code as :func:`run_sampler`.
    """
    if rows is None:
        rows = np.arange(n1 + 2 * n2)
    with np.errstate(all="ignore"):
        Yh = _half_pairs(X, rows, n1, n2)
        stats = _stable_statistics(X[rows[:n1]], Yh, lambda0, k, lambda: ref)
    return k if stats is None else stats[2]


def _covariance_factor(Yh, w):
    """A factor of ``Σ̂ = Σ_i w_i Y_i Y_iᵀ`` (rows of weight 0 skipped), or None.

    Returns ``(L, perm)`` with lower-triangular L and
    ``Σ̂[perm][:, perm] = L·Lᵀ``. A Cholesky of ``Σ̂`` when Σ̂ is finite and
    its condition number below 1e8 (where the two factors whiten alike up
    to rounding); otherwise a pivoted QR of the row-sorted,
    power-of-two-scaled rows ``sqrt(2 w_i)·Y_i``, which forms no Σ̂ (a
    Cholesky fails at a condition number near 1/eps, far below the rank
    threshold of the good sets Σ̂ is built from). None only when a
    diagonal of L is 0 or not finite.
    """
    used = w > 0
    B = Yh[used] * np.sqrt(2.0 * w[used])[:, None]
    Sigma_hat = B.T @ B
    if np.all(np.isfinite(Sigma_hat)) and np.linalg.cond(Sigma_hat) < 1e8:
        try:
            return np.linalg.cholesky(Sigma_hat), np.arange(B.shape[1])
        except np.linalg.LinAlgError:  # not reached for a condition below 1e8
            pass
    scaled = _sorted_and_scaled(B)
    if scaled is None:
        return None
    Z, _, shift = scaled
    R, perm = qr(Z, mode="r", pivoting=True, check_finite=False)
    L = np.ldexp(R[: Z.shape[1]].T, -shift)
    diagonal = np.diag(L)
    if not (np.all(np.isfinite(L)) and np.all(diagonal != 0.0)):
        return None
    return L, perm


def _stable_statistics(Xm, Yh, lambda0, k, reference):
    """StableCov, Σ̂ and StableMean of one run: ``(w, v, score)``, or None.

    None when the score is k (the PTR fails with certainty) or Σ̂ is not
    positive definite in float64 (not with exact arithmetic when Score1 < k:
    S_ℓ is a good set). ``reference()`` draws R, only once StableCov passed.
    """
    w, score1 = stable_cov(Yh, lambda0, k)
    if w is None:
        return None
    factor = _covariance_factor(Yh, w)
    if factor is None:
        return None
    L, perm = factor
    ref = reference()
    Xw = solve_triangular(L, Xm[:, perm].T, lower=True, check_finite=False).T
    v, score2 = stable_mean(Xw, ref, lambda0, k)
    if v is None:
        return None
    return w, v, max(score1, score2)


def _run_sampler(X, rows, n1, n2, lambda0, k, n_ref, epsilon_p, ptr_bound, rng):
    Xm = X[rows[:n1]]
    Yh = _half_pairs(X, rows, n1, n2)
    stats = _stable_statistics(
        Xm, Yh, lambda0, k, lambda: rng.choice(n1, size=n_ref, replace=False)
    )
    if stats is None:
        return None
    w, v, score = stats
    if not ptr_pass(score, epsilon_p, ptr_bound, rng):
        return None
    used = v > 0
    mu_hat = v[used] @ Xm[used]
    Z = release(mu_hat, w, Yh, n1, rng, y_scale=math.sqrt(2.0))
    # Data beyond float64's range: Fail rather than an inf or NaN release.
    return Z if np.all(np.isfinite(Z)) else None
