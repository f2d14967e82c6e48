"""The subroutines of the unbounded Gaussian sampler (paper 004, Algorithms 2-6).

Pure functions of explicit constants (λ0, k, M, the PTR's ε and δ), so that
tests can run them at small sizes where the stability lemmas' conditions
hold. Nothing here reads a privacy parameter from the data. Errata of the
paper are resolved as in the spec (E1-E4): R is drawn from the mean half
[n1]; StableMean's level thresholds are λ_ℓ = e^{ℓ/k}·λ0; LargestGoodSubset
normalises by m and stops when no point is removed; the mean half is the
first n1 rows.

Floating point: the proofs assume exact arithmetic. Comparisons are made in
float64, and the number of peeling rounds (hence the running time) depends
on the data; both side channels are outside the DP model.
"""

import math

import numpy as np
from scipy.linalg import LinAlgError, cho_factor, solve_triangular

__all__ = [
    "largest_core_levels",
    "largest_good_subset",
    "ptr_pass",
    "ptr_pass_probability",
    "release",
    "run_sampler",
    "stable_cov",
    "stable_mean",
]

# Rows per block in the n1 x M distance computation of StableMean (memory
# ~ block · M · 8 bytes; M ≈ 1200 gives ~100 MB).
_BLOCK_ROWS = 10_000


def _mahalanobis_sq(Y, A):
    """``Y_i^T A^{-1} Y_i`` for every row, or None when A is singular."""
    try:
        c, _ = cho_factor(A, lower=True, check_finite=False)
    except LinAlgError:
        return None
    if not np.all(np.isfinite(c)) or np.any(np.diag(c) <= 0):
        return None
    L = np.tril(c)
    # Solve L U^T = Y^T: U's rows are L^{-1} Y_i.
    U = solve_triangular(L, Y.T, lower=True, check_finite=False)
    return np.einsum("ij,ij->j", U, U)


def _second_moment(Y, mask, m):
    """``(1/m) Σ_{j∈S} Y_j Y_jᵀ`` (Algorithm 4: normaliser m, not |S|)."""
    Ys = Y[mask]
    return (Ys.T @ Ys) / m


def largest_good_subset(Y, lam, start=None):
    """Algorithm 4: the largest set S with ``Y_iᵀ A(S)^{-1} Y_i <= λ`` on S.

    Iterates ``S <- {i ∈ S : Y_iᵀ A(S)^{-1} Y_i <= λ}`` with
    ``A(S) = (1/m)·Σ_{j∈S} Y_j Y_jᵀ`` until nothing is removed; a singular A
    makes every point an outlier. The map is monotone and deflationary, so
    the iteration from [m] (or from any superset ``start`` of the answer that
    the map shrinks) reaches the greatest fixed point.

    Returns a boolean mask of length m.
    """
    m = Y.shape[0]
    S = np.ones(m, dtype=bool) if start is None else start.copy()
    while S.any():
        q = _mahalanobis_sq(Y, _second_moment(Y, S, m))
        if q is None:
            S[:] = False
            break
        out = S & (q > lam)
        if not out.any():
            break
        S &= ~out
    return S


def stable_cov(Y, lambda0, k):
    """Algorithm 3 (StableCov) on paired rows ``Y`` (m x d), with early exit.

    Levels ℓ = 2k, ..., 0 with thresholds ``e^{ℓ/k}·λ0`` are processed from
    the top, each warm-started from the previous level's set (exact: the
    sets are nested). The scores ``t_ℓ = m - |S_ℓ| + ℓ`` enter
    ``Score = min(k, min_{ℓ<=k} t_ℓ)``. Once the running set has lost k
    points at level ℓ0, every t_ℓ with ℓ <= ℓ0 is >= k, so the remaining
    levels cannot lower the score and are skipped (the score is computed
    from the levels already seen; the spec review's corrected rule).

    Returns
    -------
    weights : ndarray of shape (m,)
        ``w_i = (1/(k m))·#{ℓ ∈ k+1..2k : i ∈ S_ℓ}``, or None if Score = k
        (the PTR then fails with certainty and the weights are not needed).
    score : int
    """
    m = Y.shape[0]
    S = np.ones(m, dtype=bool)
    # out_level[i]: the level at which i was removed (-1: never).
    out_level = np.full(m, -1, dtype=np.int64)
    score = k
    q = _mahalanobis_sq(Y, _second_moment(Y, S, m))
    q_max = -np.inf if q is None else q.max()
    n_in = m
    for level in range(2 * k, -1, -1):
        lam = math.exp(level / k) * lambda0
        lost_k = False
        while n_in > 0 and (q is None or q_max > lam):
            out = S.copy() if q is None else S & (q > lam)
            S &= ~out
            out_level[out] = level
            n_in = int(S.sum())
            if m - n_in >= k:
                lost_k = True
                break
            q = _mahalanobis_sq(Y, _second_moment(Y, S, m))
            q_max = -np.inf if q is None else q[S].max(initial=-np.inf)
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


def largest_core_levels(D_sorted_top, lambda0, k, n_ref):
    """Membership of every row in LargestCore at each level ℓ = 0..2k.

    ``D_sorted_top[i, j]`` is the (n_ref - 2k + j)-th smallest (1-based)
    squared distance of row i to the reference set, j = 0..2k. Row i is in
    ``S_ℓ`` (threshold ``λ_ℓ = e^{ℓ/k} λ0``, core size ``τ = n_ref - ℓ``) iff
    its (n_ref - ℓ)-th smallest distance is <= λ_ℓ.

    Returns a boolean array of shape (n_rows, 2k + 1), column ℓ.
    """
    levels = np.arange(2 * k + 1)
    lam = np.exp(levels / k) * lambda0
    # (n_ref - ℓ)-th smallest is column 2k - ℓ of D_sorted_top.
    return D_sorted_top[:, 2 * k - levels] <= lam


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
    n1 = Xw.shape[0]
    # Distances are translation invariant: centre on R's mean so that the
    # expansion ||a||² + ||b||² - 2a·b does not cancel catastrophically when
    # the data sit far from the origin (μ is unbounded).
    origin = Xw[ref].mean(axis=0)
    R = Xw[ref] - origin
    n_ref = R.shape[0]
    top = 2 * k + 1
    if n_ref < top:
        raise ValueError("The reference set must have more than 2k points.")
    R_sq = np.einsum("ij,ij->i", R, R)
    sizes = np.zeros(top, dtype=np.int64)
    counts = np.empty(n1, dtype=np.int64)
    for start in range(0, n1, _BLOCK_ROWS):
        B = Xw[start : start + _BLOCK_ROWS] - origin
        D = np.einsum("ij,ij->i", B, B)[:, None] + R_sq[None, :]
        D -= 2.0 * (B @ R.T)
        np.maximum(D, 0.0, out=D)
        D = np.partition(D, n_ref - top, axis=1)[:, n_ref - top :]
        D.sort(axis=1)
        member = largest_core_levels(D, lambda0, k, n_ref)
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


def release(mu_hat, W_weights, Y, n1, rng):
    """``μ̂ + sqrt((1 - 1/n1)·n2)·Σ_i z_i sqrt(w_i) Y_i``, z uniform on the sphere."""
    n2 = Y.shape[0]
    g = rng.standard_normal(n2)
    z = g / np.linalg.norm(g)
    Wz = Y.T @ (z * np.sqrt(W_weights))
    return mu_hat + math.sqrt((1.0 - 1.0 / n1) * n2) * Wz


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
    Xm = X[rows[:n1]]
    Y = X[rows[n1 : n1 + n2]]
    Y -= X[rows[n1 + n2 : n1 + 2 * n2]]
    Y *= 1.0 / math.sqrt(2.0)
    w, score1 = stable_cov(Y, lambda0, k)
    if w is None:
        return None  # Score1 = k: the PTR fails with certainty
    Sigma_hat = (Y * w[:, None]).T @ Y
    try:
        L = np.linalg.cholesky(Sigma_hat)
    except np.linalg.LinAlgError:
        return None  # cannot happen when Score1 < k (S_ℓ is a good set)
    ref = rng.choice(n1, size=n_ref, replace=False)
    Xw = solve_triangular(L, Xm.T, lower=True, check_finite=False).T
    v, score2 = stable_mean(Xw, ref, lambda0, k)
    del Xw
    if v is None:
        return None
    if not ptr_pass(max(score1, score2), epsilon_p, ptr_bound, rng):
        return None
    mu_hat = v @ Xm
    return release(mu_hat, w, Y, n1, rng)
