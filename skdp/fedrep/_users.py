"""Per-user statistics of Private FedRep, vectorised over users.

Each function here computes, for every user at once, a quantity that leaves
the user clipped *per user* (so one user's whole data moves one clipped
term), or solves the users' k × k systems as one stacked problem: a sum over
each user's rows is one sparse-times-dense product with a
``(n_users, n_rows)`` indicator matrix, and nothing of size
``n_users × d × k`` is built. :class:`~skdp.fedrep.DPFedRep` adds the noise.
"""

from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from functools import cached_property
from itertools import pairwise

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

from .._clipping import clip_factors, quietly
from .._dpgd import row_norms


def _split_halves(codes, counts, rng):
    """Each row's half: True for the user's *v-half*, False for the gradient half.

    Every user's rows are put in a random order (``rng``); the first
    ``ceil(m_i/2)`` of them form the v-half (local least squares), the other
    ``floor(m_i/2)`` the gradient half. Drawn once per fit.
    """
    n = codes.shape[0]
    starts = np.concatenate(([0], np.cumsum(counts)))
    # by user, in a random order within the user: keys in [c, c + 1/2]
    # never round across users (c < 2**51)
    shuffled = np.argsort(codes + 0.5 * rng.random(n))  # keys are distinct
    rank = np.empty(n, dtype=np.intp)
    rank[shuffled] = np.arange(n) - starts[codes[shuffled]]
    return rank < (counts[codes] + 1) // 2


class _Users:
    """A set of users and their rows: per-user sums over all rows or one half.

    ``codes`` numbers the users ``0 .. n_users - 1``; ``v_half`` marks the
    rows of each user's v-half (see :func:`_split_halves`; None: no halves).
    A per-user sum is the product with a sparse ``(n_users, n_rows)``
    indicator matrix, built once per part. Its columns run through each
    user's rows in their order in X, so data grouped by user is read front
    to back, and a sum over one half reads only that half's rows. The
    indicators and the cached statistics are built on first use, i.e. in
    the shard's own thread.
    """

    def __init__(self, X, y, codes, n_users, v_half=None):
        self.X, self.y, self.codes, self.n_users = X, y, codes, n_users
        self.counts = np.bincount(codes, minlength=n_users)
        self.grad_counts = self.counts // 2
        self._v_half = v_half

    @cached_property
    def _indicators(self):
        """Part name -> CSR matrix with one slot per row of that part.

        "all", "v" and "grad" have one row per user. "halves" has two per
        user (v-half, then gradient half): it computes both half sums in one
        product that reads X nearly front to back (grouped data), where two
        products over interleaved halves would each skip every other row.
        """
        codes, n = self.codes, self.n_users
        by_user = np.argsort(codes, kind="stable")
        keys = {"all": (by_user, codes, n)}
        if self._v_half is not None:
            in_v = self._v_half[by_user]
            keys["v"] = (by_user[in_v], codes, n)
            keys["grad"] = (by_user[~in_v], codes, n)
            half_codes = 2 * codes + ~self._v_half  # v-half first
            keys["halves"] = (np.argsort(half_codes, kind="stable"), half_codes, 2 * n)
        indicators = {}
        for part, (rows, row_codes, n_out) in keys.items():
            counts = np.bincount(row_codes[rows], minlength=n_out)
            indptr = np.concatenate(([0], np.cumsum(counts)))
            indicators[part] = sp.csr_matrix(
                (np.ones(len(rows)), rows, indptr), shape=(n_out, len(codes))
            )
        return indicators

    def sum(self, weights, A, part="all"):
        """Per-user sums ``Σ_j weights_j A_j`` over ``part`` ("all", "v", "grad").

        ``weights``: one per row, or None for plain sums. Part "halves" gives
        ``(n_users, 2, ...)``: the sums over the v-half and the gradient half.
        """
        indicator = self._indicators[part]
        indicator.data[:] = 1.0 if weights is None else weights[indicator.indices]
        flat = A.reshape(A.shape[0], -1)
        shape = (self.n_users, 2) if part == "halves" else (self.n_users,)
        return np.asarray(indicator @ flat).reshape((*shape, *A.shape[1:]))

    def total(self, weights):
        """Per-user sums of a per-row vector."""
        return np.bincount(self.codes, weights=weights, minlength=self.n_users)

    @cached_property
    def x_norm(self):
        """The row norms of X (overflow-free; not finite only for NaN/inf rows)."""
        with np.errstate(invalid="ignore"):  # inf / inf in a row with an inf
            return row_norms(self.X)

    @cached_property
    def half_sums(self):
        """Per-user ``Σ_j y_j x_j`` over the v-half and over the gradient half."""
        with np.errstate(all="ignore"):
            both = self.sum(self.y, self.X, "halves")
        return both[:, 0], both[:, 1]


def _rows_are_finite(users):
    """Whether every row norm is finite: X has no NaN or inf (one pass, shared
    with the cold-start model's use of the norms), unless a norm overflows."""
    return bool(np.isfinite(users.x_norm).all())


def _shard(X, y, codes, n_users, v_half, n_shards):
    """Split the users into ``n_shards`` groups of about equal row counts.

    Every user's rows go to one group (each group's per-user sums are
    complete, so the groups can be processed in parallel and their clipped
    sums added). A group whose rows fill a contiguous block of X (data
    grouped by user, in any order within the block) views that block;
    otherwise its rows are copied once.
    """
    if n_shards == 1:
        return [_Users(X, y, codes, n_users, v_half)]
    counts = np.bincount(codes, minlength=n_users)
    row_starts = np.concatenate(([0], np.cumsum(counts)))
    targets = np.arange(1, n_shards) * (len(codes) / n_shards)
    cuts = np.unique(
        np.concatenate(([0], np.searchsorted(row_starts, targets), [n_users]))
    )
    order = np.argsort(codes, kind="stable")
    shards = []
    for first, stop in pairwise(cuts):
        rows = order[row_starts[first] : row_starts[stop]]
        low, high = rows.min(), rows.max()
        # Distinct rows spanning exactly len(rows) positions are that range
        # (in any order: the per-user sums do not depend on the row order).
        if high - low + 1 == len(rows):
            rows = slice(low, high + 1)
        shards.append(
            _Users(X[rows], y[rows], codes[rows] - first, stop - first, v_half[rows])
        )
    return shards


def _weighted_gram(X, weights):
    """``Xᵀ diag(weights) X`` for ``weights >= 0``, a block of rows at a time.

    Each block is scaled by ``sqrt(weights)`` and multiplied by its own
    transpose (``BᵀB``, which BLAS computes as a fast symmetric rank-k update;
    ``Xᵀ(wX)`` is an order of magnitude slower here).
    """
    d = X.shape[1]
    out = np.zeros((d, d))
    root = np.sqrt(weights)
    for start in range(0, X.shape[0], 8192):
        block = X[start : start + 8192] * root[start : start + 8192, None]
        out += block.T @ block
    return out


def _project(X, U):
    """``Zᵀ = (X U)ᵀ``, shape (k, n_rows): one contiguous row per component.

    Computed as ``Uᵀ Xᵀ`` (2-3× faster than ``X U`` for small k), and kept
    transposed: the per-row products below are then contiguous vector
    operations instead of strided ones over k-wide rows.
    """
    return U.T @ X.T


def _user_moments(ZT, users, part):
    """Per-user ``(Σ_j z_j z_jᵀ, Σ_j y_j z_j)`` over the rows of ``part``.

    Shapes (n_users, k, k) and (n_users, k); ``ZT`` is ``(X U)ᵀ`` (see
    :func:`_project`), ``part`` "all" or "v" (see :class:`_Users`). The
    upper triangle and the right-hand side go through one segment sum.
    """
    k = ZT.shape[0]
    rows, cols = np.triu_indices(k)
    products = np.empty((len(rows) + k, ZT.shape[1]))
    with np.errstate(all="ignore"):
        for out, a, b in zip(products, rows, cols, strict=False):
            np.multiply(ZT[a], ZT[b], out=out)  # contiguous, no temporaries
        np.multiply(ZT, users.y, out=products[len(rows) :])
        sums = users.sum(None, np.ascontiguousarray(products.T), part)
    A = np.empty((users.n_users, k, k))
    A[:, rows, cols] = A[:, cols, rows] = sums[:, : len(rows)]
    return A, sums[:, len(rows) :]


def _pinv_solve(A, c):
    """Per-user minimum-norm solutions ``v_i = A_i⁺ c_i`` of PSD systems.

    Batched over users: the pseudo-inverse from each matrix's
    eigendecomposition (one stacked LAPACK call; in closed form for k = 2,
    the paper's case, where it is several times faster), eigenvalues below
    ``k·eps·λ_max`` dropped, each matrix rescaled by its own largest entry
    first (no overflow, scale-free cut-off). A user with no selected row or
    a singular system (fewer rows than k) gets the minimum-norm solution; a
    non-finite system gets zero: decided per user, never for all users at
    once.
    """
    if A.shape[1] == 2:
        return _pinv_solve_2x2(A, c)
    with np.errstate(all="ignore"):
        bad = ~(np.isfinite(A).all(axis=(1, 2)) & np.isfinite(c).all(axis=1))
        A[bad], c[bad] = 0.0, 0.0
        scale = np.abs(A).max(axis=(1, 2))
        scale[scale == 0] = 1.0
        vals, vecs = np.linalg.eigh(A / scale[:, None, None])
        cutoff = A.shape[1] * np.finfo(float).eps * np.abs(vals).max(axis=1)
        inv = np.where(vals > cutoff[:, None], 1.0 / vals, 0.0)
        coords = np.einsum("ikl,ik->il", vecs, c) * inv  # diag(1/λ)⁺ Qᵀc
        V = np.einsum("ikl,il->ik", vecs, coords) / scale[:, None]
    V[~np.isfinite(V).all(axis=1)] = 0.0
    return V


def _pinv_solve_2x2(A, c):
    """:func:`_pinv_solve` for k = 2: one rotation angle per matrix."""
    with np.errstate(all="ignore"):
        scale = np.maximum(np.abs(A[:, 0, 0]), np.abs(A[:, 1, 1]))
        scale = np.maximum(scale, np.abs(A[:, 0, 1]))  # NaN stays NaN
        ok = np.isfinite(scale) & np.isfinite(c[:, 0]) & np.isfinite(c[:, 1])
        scale = np.where(ok & (scale > 0), scale, 1.0)
        a, b, d = A[:, 0, 0] / scale, A[:, 0, 1] / scale, A[:, 1, 1] / scale
        half_gap, mean = 0.5 * (a - d), 0.5 * (a + d)
        radius = np.hypot(half_gap, b)
        top, low = mean + radius, mean - radius  # eigenvalues, top >= |low|
        angle = 0.5 * np.arctan2(b, half_gap)  # top eigenvector (cos, sin)
        cos, sin = np.cos(angle), np.sin(angle)
        cutoff = 2.0 * np.finfo(float).eps * np.abs(top)
        inv_top = np.where(top > cutoff, 1.0 / top, 0.0)
        inv_low = np.where(low > cutoff, 1.0 / low, 0.0)
        along_top = (cos * c[:, 0] + sin * c[:, 1]) * inv_top
        along_low = (cos * c[:, 1] - sin * c[:, 0]) * inv_low
        V = np.empty_like(c)
        V[:, 0] = (cos * along_top - sin * along_low) / scale
        V[:, 1] = (sin * along_top + cos * along_low) / scale
    V[~(ok & np.isfinite(V).all(axis=1))] = 0.0
    return V


def _local_coef(ZT, users, part):
    """Per-user minimum-norm least squares ``v_i = (Z_iᵀZ_i)⁺ Z_iᵀ y_i``.

    ``ZT = (X U)ᵀ``; ``part`` ("all" or "v") selects each user's rows.
    """
    return _pinv_solve(*_user_moments(ZT, users, part))


def _user_clip_lengths(g_norm, v_norm, V, counts, clip_norm):
    """Norms ``min(‖∇_i‖_F, C)`` of the users' clipped gradients.

    User i's gradient ``(2/b_i) G_i v_iᵀ`` (``G_i = Σ_{B'_i} r_j x_j``) has rank
    one, so its norm is ``(2/b_i)‖G_i‖‖v_i‖`` (``g_norm``, ``v_norm``: the
    rows' norms, free of overflow): one scalar per user (an overflow to inf
    clips to C). Users with no gradient rows, or a non-finite term,
    contribute 0.
    """
    with np.errstate(all="ignore"):
        norm = (2.0 / np.maximum(counts, 1)) * g_norm * v_norm
        lengths = np.minimum(norm, clip_norm)
        ok = (
            (counts > 0)
            & np.isfinite(g_norm)
            & np.isfinite(V).all(axis=1)
            & ~np.isnan(lengths)
        )
    return np.where(ok, lengths, 0.0)


def _unit_rows(A, norms):
    """Rows of A divided by their norms (0 for a zero or non-finite row)."""
    with np.errstate(all="ignore"):
        unit = A / norms[:, None]
    unit[~np.isfinite(unit).all(axis=1)] = 0.0
    return unit


def _round_sum(users, U, clip_norm):
    """One round of Algorithm 1 for these users: ``Σ_i clip_C(∇_i)`` at ``U``."""
    ZT = _project(users.X, U)
    return _clipped_gradient_sum(users, ZT, _local_coef(ZT, users, "v"), clip_norm)


def _heads(users, U):
    """Each user's own least-squares head on all their rows, at ``U`` (not DP)."""
    return _local_coef(_project(users.X, U), users, "all")


@contextmanager
def _over_shards(shards):
    """``total(fn, *args)``: the sum over the shards of ``fn(shard, *args)``.

    With several shards, they run in threads (numpy, scipy and BLAS release
    the GIL). BLAS is held to one thread throughout: the shards share the
    cores instead of oversubscribing them, and the many small products here
    (n × d by d × k) run faster on one BLAS thread than on several even with
    one shard. The sum is taken in shard order, so a seeded fit does not
    depend on thread timing. ``combine=False`` returns the list of per-shard
    results instead.
    """

    def combined(results, combine):
        if not combine:
            return results
        if isinstance(results[0], tuple):
            return tuple(sum(parts) for parts in zip(*results, strict=True))
        return sum(results)

    with threadpool_limits(limits=1, user_api="blas"):
        if len(shards) == 1:
            yield lambda fn, *args, combine=True: combined(
                [fn(shards[0], *args)], combine
            )
            return
        with ThreadPoolExecutor(len(shards)) as pool:
            yield lambda fn, *args, combine=True: combined(
                list(pool.map(lambda shard: quietly(fn, shard, *args), shards)),
                combine,
            )


def _clipped_gradient_sum(users, ZT, V, clip_norm):
    """``Σ_i clip_C(∇_i)`` (d, k): the per-user clipped gradients of one round.

    ``∇_i = (2/b_i) Σ_{j∈B'_i} (⟨x_j, U v_i⟩ − y_j) x_j v_iᵀ`` over the user's
    gradient half ``B'_i`` (Algorithm 1, line 7), ``ZT = (X U)ᵀ``; replacing
    one user's whole data changes this sum by at most ``2C`` in Frobenius norm.
    """
    with np.errstate(all="ignore"):
        resid = -users.y
        for a in range(ZT.shape[0]):
            resid = resid + ZT[a] * V[:, a][users.codes]
        resid[~np.isfinite(resid)] = 0.0
        G = users.sum(resid, users.X, "grad")
    g_norm, v_norm = row_norms(G), row_norms(V)
    lengths = _user_clip_lengths(g_norm, v_norm, V, users.grad_counts, clip_norm)
    # Each term as its length times unit vectors, ``ℓ_i ĝ_i v̂_iᵀ``: a clip
    # factor, or a factor times v_i, in the subnormal range would round up
    # by as much as 2 (a review: a user's term reached 1.96·C).
    return _unit_rows(G, g_norm).T @ (lengths[:, None] * _unit_rows(V, v_norm))


def _spectral_sum(users, clip_norm):
    """``Σ_i clip(Z_i)`` (d, d) of Algorithm 2, clipped per user.

    ``Z_i = (a_i b_iᵀ + b_i a_iᵀ)/2`` with ``a_i``, ``b_i`` the means of
    ``y_j x_j`` over the user's two halves (``S_v``, ``S_g``: the per-user
    sums). It is Algorithm 2's unbiased estimator of ``w_i w_iᵀ`` (Duchi et
    al.'s ``Σ_{j≠l} y_j y_l x_j x_lᵀ``, [1]_ Thm 38) restricted to the pairs
    that cross the two halves: ``E Z_i = w_i w_iᵀ`` when the rows are
    independent with ``E y x = w_i``, the same leading-order variance, and no
    ``Σ_j y_j² x_j x_jᵀ`` correction, i.e. ``O(N d)`` work instead of
    ``O(N d²)``. Being rank two, its norm is exact:
    ``‖Z_i‖_F = ‖a_i‖‖b_i‖·sqrt((1 + cos²θ_i)/2)``, so the clip to ``C``
    scales it by exactly what is needed. Users with one row contribute 0, and
    so does a user whose term is not finite.
    """
    S_v, S_g = users.half_sums
    pairs = (users.counts - users.grad_counts) * users.grad_counts
    sum_v, sum_g = row_norms(S_v), row_norms(S_g)
    with np.errstate(all="ignore"):
        a_unit, b_unit = S_v / sum_v[:, None], S_g / sum_g[:, None]
        cos = np.einsum("ij,ij->i", a_unit, b_unit)
        # ‖a‖‖b‖ may overflow to inf: the clip then binds, as it should
        ab_norm = (sum_v / pairs) * sum_g
        weight = np.minimum(ab_norm, clip_norm / np.sqrt((1.0 + cos**2) / 2.0))
        # cos is NaN when a half is empty (one row) or sums to 0 (0/0), and
        # when a half sum is not finite
        ok = np.isfinite(cos) & np.isfinite(weight)
    a_unit *= np.where(ok, weight, 0.0)[:, None]
    a_unit[~ok], b_unit[~ok] = 0.0, 0.0  # also 0·NaN
    half = a_unit.T @ b_unit
    return (half + half.T) / 2.0


def _cold_start_sums(users, clip_norm):
    """``Σ_i clip(G_i, h_i)``: each user's ``(X_iᵀX_i/m_i, X_iᵀy_i/m_i)``.

    The pair is clipped jointly to norm C with the bound
    ``‖G_i‖_F ≤ trace(G_i) = Σ_j ‖x_j‖²/m_i`` (G_i is positive semi-definite).
    Returns ``(Σ c_i G_i, Σ c_i h_i)``; a user whose term is not finite
    contributes 0.
    """
    m = users.counts.astype(float)
    S_v, S_g = users.half_sums
    with np.errstate(all="ignore"):
        h = (S_v + S_g) / m[:, None]
        trace = users.total(users.x_norm**2) / m
        bound = np.hypot(trace, row_norms(h))
    c = clip_factors(bound, clip_norm)  # 0 unless the bound (so h_i) is finite
    h[c == 0.0] = 0.0
    return _weighted_gram(users.X, (c / m)[users.codes]), c @ h


def _haar(rng, d, k):
    """A uniformly random d × k matrix with orthonormal columns (free)."""
    Q, R = np.linalg.qr(rng.standard_normal((d, k)))
    return Q * np.where(np.diag(R) < 0, -1.0, 1.0)


def _public_init(init, d, k):
    """A public ``(d, k)`` starting representation, orthonormalised by QR."""
    U = np.asarray(init, dtype=np.float64)
    if U.shape != (d, k):
        raise ValueError(
            f"init must have shape (n_features, n_components) = ({d}, {k}); got "
            f"{U.shape}."
        )
    if not np.isfinite(U).all():
        raise ValueError("init must be finite.")
    Q, R = np.linalg.qr(U)
    if np.abs(np.diag(R)).min() <= d * np.finfo(float).eps * np.abs(R).max():
        raise ValueError("init must have linearly independent columns.")
    return Q


def _top_eigenvectors(M, k):
    """Eigenvectors of the k largest eigenvalues of the symmetric part of M."""
    _, vecs = np.linalg.eigh((M + M.T) / 2.0)
    return vecs[:, ::-1][:, :k].copy()
