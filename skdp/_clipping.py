"""Per-record clipping: the kernels under every gradient sum of the DP-GD engine.

One record moves a clipped gradient sum by at most ``2C`` (replace one
record), whatever its values: the guarantee of every DP-GD step
(:mod:`skdp._dpgd`) rests on the functions here, which the in-memory engine
runs on cache-sized row blocks and :mod:`skdp._dask` on every chunk where it
lives, so both paths clip every record with the same code. See
:mod:`skdp._dpgd` ("Every finite input") for how each input is kept inside
that bound: canonical sparse rows, norms free of over/underflow, non-finite
gradients set to 0, float32 read in float64 blocks. The audit hook
(:func:`injected_gradient`) lives here too, beside the sums it enters.
"""

import contextlib
import contextvars

import numpy as np
import scipy.sparse as sp

# Rows are processed in blocks of at most this many stored values (8 MB of
# float64): a float32 X is never copied to float64 whole, and a dense block is
# still in cache when X.T @ g follows X @ coef.
_BLOCK_VALUES = 1 << 20
_SMALLEST_NORMAL = np.finfo(np.float64).tiny


@contextlib.contextmanager
def quiet_floats():
    """numpy's and scipy.special's floating-point events off, in this thread.

    scipy.special ufuncs (erf, expit, gamma, ...) have their own switch,
    which ``np.errstate`` leaves alone: under the caller's
    ``scipy.special.errstate(all="raise")`` an ``erf`` of a pre-activation
    beyond 50 raised, and one record decided whether a random-features fit
    failed (review).
    """
    import scipy.special

    with np.errstate(all="ignore"), scipy.special.errstate(all="ignore"):
        yield


def quietly(fn, *args, **kwargs):
    """``fn(*args, **kwargs)`` with numpy's and scipy.special's floating-point
    events ignored (:func:`quiet_floats`).

    For per-block work run in another thread or process (a Dask chunk, a
    DPFedRep shard): the fit's ``np.errstate``
    (:func:`skdp._base.silent_on_data`) is a context of the fit's thread,
    which worker threads and a ``dask.distributed`` cluster's workers do not
    inherit; there an overflow one record causes would warn (or raise under
    ``-W error``) where its neighbour's data would not.
    """
    with quiet_floats():
        return fn(*args, **kwargs)


def canonical_design(X):
    """``X`` as the engine reads it: float64/float32, CSR without duplicates.

    scikit-learn's validation keeps duplicate entries of a CSR matrix; their
    squares would be summed separately by a row-norm routine while ``X @ coef``
    merges them, so a record stored as m duplicates would be clipped to
    ``C·sqrt(m)``. Merging them here makes both read the same row. A merged
    entry that overflows to ±inf is set to the largest finite value of its
    dtype, with its sign: the record is then a finite row like any other,
    whose influence the per-record clip bounds. (Raising instead would be an
    error that one record's value alone triggers, where its neighbour fits:
    ε = ∞ for that pair.) Summing finite values one after another never gives
    NaN. The caller's matrix is never modified.

    A dense X is put in column-major (Fortran) order, copied once if it is
    not already: each step reads X twice, for ``X @ coef`` and ``X.T @ g``,
    and OpenBLAS runs a step 2-3.5× slower on a row-major X up to d = 400,
    1.2× at d = 800 and alike at d = 1600 (n·d = 8·10⁶; see
    ``benchmarks/bench_memory_order.py``), while the copy repays itself
    within 3-7 steps up to d = 400 and about 23 at d = 800. Pass a
    Fortran-ordered X to avoid the copy.
    """
    if not sp.issparse(X):
        return _column_major(X)
    X = csr_keeping_duplicates(X)
    if not X.has_canonical_format:
        X = X.copy()
        with np.errstate(over="ignore"):
            X.sum_duplicates()
        largest = np.finfo(X.dtype).max
        np.clip(X.data, -largest, largest, out=X.data)
    return X


def csr_keeping_duplicates(X):
    """X (any sparse format) as CSR, its duplicate entries still separate.

    scipy's COO-to-CSR conversion sums duplicates without a care for
    overflow (1e308 + 1e308 = inf): only :func:`canonical_design` (and
    DPSparseGLM's feature clip) may merge them, as they clip what
    overflows. Fits take CSR, CSC and COO as they are
    (:data:`skdp._inputs.SPARSE_FIT_FORMATS`) for this.
    """
    if X.format == "csr":
        return X if isinstance(X, sp.csr_matrix) else sp.csr_matrix(X)
    coo = X.tocoo()  # CSC and COO keep their duplicates here
    order = np.argsort(coo.row, kind="stable")
    indptr = np.zeros(X.shape[0] + 1, dtype=np.int64)
    np.cumsum(np.bincount(coo.row, minlength=X.shape[0]), out=indptr[1:])
    return sp.csr_matrix(
        (coo.data[order], coo.col[order].astype(np.int64), indptr), shape=X.shape
    )


def _column_major(X):
    """Dense X in Fortran order, copied a block of rows at a time if needed.

    (``np.asfortranarray`` on a large row-major array is a slow strided
    copy: 1.9 s against 0.2 s by blocks at n = 10⁶, d = 50.)
    """
    if X.flags.f_contiguous or X.dtype != np.float64:
        return X  # a float32 X is not copied: it is read in float64 blocks
    out = np.empty(X.shape, dtype=X.dtype, order="F")
    for rows in _row_blocks(X):
        out[rows] = X[rows]
    return out


def _row_blocks(X):
    """Slices of consecutive rows holding about ``_BLOCK_VALUES`` values each.

    Small enough that one block's temporaries stay in cache between the two
    products of a step, large enough that the per-block overhead is small.
    """
    n = X.shape[0]
    n_values = X.nnz if sp.issparse(X) else n * X.shape[1]
    step = max(1, (_BLOCK_VALUES * n) // max(n_values, 1))
    for start in range(0, n, step):
        yield slice(start, min(start + step, n))


def _gradient_blocks(X):
    """Row blocks of a gradient sum: a dense block stays in cache from
    ``X @ coef`` to ``X.T @ g``; a float64 CSR matrix is read whole (slicing
    it would copy its values at every step)."""
    if sp.issparse(X) and X.dtype == np.float64:
        return [slice(0, X.shape[0])]
    return _row_blocks(X)


def _float64_rows(X, rows):
    """Rows ``rows`` of X as float64 (X itself when it is float64 and whole)."""
    if rows == slice(0, X.shape[0]) and X.dtype == np.float64:
        return X
    block = X[rows]
    return block.astype(np.float64) if block.dtype != np.float64 else block


def _rescaled_norms(rows):
    """Norms of dense rows, each divided by its largest |entry| before squaring."""
    scale = np.max(np.abs(rows), axis=1, initial=0.0)
    scaled = rows / np.where(scale > 0, scale, 1.0)[:, None]
    return _scaled_norms(scale, np.einsum("ij,ij->i", scaled, scaled))


def _scaled_norms(scale, sum_of_squares):
    """``scale·sqrt(Σ(x/scale)²)``, rounded up where it falls in the subnormal range.

    There the product is rounded to a multiple of 2⁻¹⁰⁷⁴ and may fall below
    the true norm by a factor of up to 2 (‖(5e-324, 5e-324)‖ = 7e-324 rounds
    to 5e-324): a clip computed from it would let the row through at up to
    √2·C (a review). One step up bounds the true norm from above, so a clip
    from it can only be stricter; a row with one non-zero entry (root 1) is
    exact and stays.
    """
    root = np.sqrt(sum_of_squares)
    with np.errstate(over="ignore"):
        norms = scale * root
    inexact = (norms < _SMALLEST_NORMAL) & (root > 1.0)
    norms[inexact] = np.nextafter(norms[inexact], np.inf)
    return norms


def _dense_row_norms(block):
    with np.errstate(over="ignore", under="ignore"):
        sq = np.einsum("ij,ij->i", block, block)
    # The plain sum of squares is exact to a few ulps unless it overflows or
    # some squares underflow; only those (rare) rows are rescaled.
    hard = (sq >= 1e300) | (sq < 1e-290)
    norms = np.sqrt(sq)
    if hard.any():
        norms[hard] = _rescaled_norms(block[hard])
    return norms


def _sparse_row_norms(block):
    counts = np.diff(block.indptr)
    abs_data = np.abs(block.data)
    scale = np.zeros(block.shape[0])
    filled = counts > 0  # reduceat needs the starts of non-empty rows only
    scale[filled] = np.maximum.reduceat(abs_data, block.indptr[:-1][filled])
    scaled = abs_data / np.repeat(np.where(scale > 0, scale, 1.0), counts)
    row_of_value = np.repeat(np.arange(block.shape[0]), counts)
    sq = np.bincount(row_of_value, weights=scaled**2, minlength=block.shape[0])
    return _scaled_norms(scale, sq)


def row_norms(X, fit_intercept=False):
    """L2 norm of every row of X (dense or canonical CSR), free of over/underflow.

    ``fit_intercept``: of the row with the intercept's constant 1 appended.

    Rows whose squares could overflow or underflow are divided by their
    largest absolute value before squaring, so the result is accurate to a
    few ulps for any finite row; it is inf only when the true norm exceeds
    the float64 range (above ~1.8e308). A CSR matrix must be canonical (see
    :func:`canonical_design`): the squares of duplicate entries would
    otherwise be summed separately.
    """
    if sp.issparse(X) and not X.has_canonical_format:
        raise ValueError("row_norms needs a canonical CSR matrix (no duplicates).")
    norms = np.empty(X.shape[0])
    for rows in _row_blocks(X):
        norms[rows] = _block_row_norms(_float64_rows(X, rows), fit_intercept)
    return norms


def _block_row_norms(block, fit_intercept=False):
    """:func:`row_norms` of one float64 block (the intercept's 1 included)."""
    norms = _sparse_row_norms(block) if sp.issparse(block) else _dense_row_norms(block)
    return np.hypot(norms, 1.0) if fit_intercept else norms


def flush_subnormal(factors):
    """Clip factors with every subnormal entry set to 0, in place.

    A factor ``C/||x||`` below the smallest normal float64 (2.2e-308) keeps
    few significant bits: rounding may double it (``0.51·2⁻¹⁰⁷⁴`` rounds to
    ``2⁻¹⁰⁷⁴``), and the row it scales would then have norm up to 2C, twice
    the sensitivity the noise is calibrated for. Factor 0 gives a
    contribution of norm 0 ≤ C, so the clip holds; a normal factor is within
    one part in 2⁵³ of the exact ratio.
    """
    if np.ndim(factors) == 0:  # one norm for every row
        return 0.0 if factors < _SMALLEST_NORMAL else factors
    factors[factors < _SMALLEST_NORMAL] = 0.0
    return factors


def clip_factors(norms, clip):
    """Per-row factors ``min(1, clip/norm)`` that scale rows to norm at most ``clip``.

    1 for a zero row; 0 for a norm that is not finite (a contribution of norm
    0) and where the factor would be subnormal (see :func:`flush_subnormal`).
    """
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        factors = np.minimum(1.0, clip / norms)
    factors[~np.isfinite(norms)] = 0.0
    return flush_subnormal(factors)


def clip_scale(raw_grad, row_norm, clip_norm):
    """Per-record factors ``min(1, C / ||g_i||)`` that clip gradients to norm C.

    Record i's gradient is ``raw_grad[i] ⊗ x̃_i`` with ``||x̃_i|| = row_norm[i]``,
    so its norm is ``||raw_grad[i]|| · row_norm[i]``: one scalar per record.
    A zero gradient needs no clipping (factor 1, also when the row norm is
    inf); a gradient whose norm overflows gets factor 0, a contribution of
    norm 0 ≤ C. (For rows near the float range the factor is subnormal, and
    BLAS may flush it to 0 in ``X.T @ g``: the contribution can only shrink.)
    """
    if raw_grad.shape[1] == 1:  # one output: the norm is |g|, no square to overflow
        grad_norm = np.abs(raw_grad[:, 0])
    else:  # free of overflow, and of underflow (a tiny g is not a zero g)
        grad_norm = _dense_row_norms(raw_grad)
    zero = grad_norm == 0
    with np.errstate(over="ignore", invalid="ignore"):
        norms = np.multiply(grad_norm, row_norm, out=grad_norm)
    norms[zero] = 0.0
    # min(1, C/norm) without 0/0, in place (one temporary per block).
    np.divide(clip_norm, np.maximum(norms, clip_norm, out=norms), out=norms)
    return flush_subnormal(norms)


def _clipped_raw_grad(block, y, datafit, coef, intercept, row_norm, clip_norm):
    """Each record's ``raw_grad`` times its clip factor: ``block.T @ g`` sums them."""
    with np.errstate(all="ignore"):
        z = block @ coef
        z += intercept
        g = datafit.raw_grad(y, z)
        # A huge record can make z = inf − inf = NaN, and a datafit may break
        # its promise of finite gradients: a non-finite gradient contributes
        # nothing (norm 0 ≤ C), so the clip below holds for every input.
        if not np.isfinite(g).all():
            g[~np.isfinite(g).all(axis=1)] = 0.0
        if g.shape[1] == 1:
            # One output: record i's gradient g_i·x̃_i has norm |g_i|·||x̃_i||,
            # so clipping it to C is clipping g_i to ±C/||x̃_i|| (0 for a row
            # of infinite norm, no limit for a zero row, whose gradient is 0).
            # (np.maximum/np.minimum on 1-d views: np.clip and (n, 1)
            # broadcasts are several times slower.)
            limit = flush_subnormal(clip_norm / row_norm)
            g1 = g[:, 0]
            np.minimum(np.maximum(g1, -limit, out=g1), limit, out=g1)
        else:
            scale = clip_scale(g, row_norm, clip_norm)
            g *= scale[:, None]
            # A clipped row of g all below the smallest normal float64 was
            # rounded in the subnormal range (by up to 2: a review); times a
            # huge x̃ it would pass the clip. Such a record contributes 0 (an
            # unclipped row is exact, and kept).
            g[(scale < 1.0) & (np.abs(g).max(axis=1) < _SMALLEST_NORMAL)] = 0.0
    return g


class InjectedGradient:
    """An audit's gradient canary: record ``record``'s gradient becomes ``gradient``.

    ``gradient(X, shape)`` returns the raw gradient w.r.t. ``(coef,
    intercept)`` in the engine's layout (shape ``(d + 1, k)``, intercept
    last) that stands in for record ``record``'s at every step (``X`` is the
    engine's design, so that the auditor may pick a direction the other
    records do not use; it is called once per run); the engine clips it to the clip
    norm like any record's. ``n_calls`` counts the gradient sums it entered,
    so that an audit can check that the fit ran through this engine at all.
    """

    def __init__(self, record, gradient):
        self.record = record
        self.gradient = gradient
        self.n_calls = 0
        self.clipped = self.clipped_for = None


_INJECTED = contextvars.ContextVar("skdp_injected_gradient", default=None)


@contextlib.contextmanager
def injected_gradient(record, gradient):
    """Within this context, :func:`clipped_gradient_sum` takes a gradient canary.

    For auditing only (:class:`skdp.audit.GradientCanary`): in every
    gradient sum computed in this thread or task, record ``record``'s clipped
    gradient is replaced by ``gradient(X, shape)`` clipped to the clip norm.
    Yields the :class:`InjectedGradient`, whose ``n_calls`` counts the sums.

    Why this is still private: the canary takes the place of one record, and
    its contribution is clipped to ``C`` by the same routine as the others',
    so the sum over records still moves by at most ``2C`` when any one of
    them (the canary included) is replaced; the noise is unchanged.
    """
    hook = InjectedGradient(record, gradient)
    token = _INJECTED.set(hook)
    try:
        yield hook
    finally:
        _INJECTED.reset(token)


def _injected_contribution(hook, X, shape, clip_norm):
    """The canary's gradient clipped to ``clip_norm`` (computed once per hook)."""
    if hook.clipped is None or hook.clipped_for != (shape, clip_norm):
        canary = np.asarray(hook.gradient(X, shape), dtype=float).reshape(shape)
        if not np.isfinite(canary).all():
            canary = np.zeros(shape)  # as for a record: a non-finite gradient is 0
        # The same clip as every record's: min(1, C/||g||) on the whole vector.
        scale = clip_scale(canary.reshape(1, -1), np.ones(1), clip_norm)[0]
        hook.clipped, hook.clipped_for = canary * scale, (shape, clip_norm)
    hook.n_calls += 1
    return hook.clipped


def _block_gradient_sum(
    block, y, datafit, coef, intercept, row_norm, clip_norm, skip=None
):
    """``Σ_i clip_C(∇ℓ_i)`` over one block of rows, shape ``(d + 1, k)``.

    The one per-block function of the engine: :func:`clipped_gradient_sum`
    calls it on each cache-sized block of an in-memory X, and
    :mod:`skdp._dask` on each chunk of a Dask array (on the workers), so
    both paths clip every record with the same code. ``block`` is float64
    (dense or canonical CSR); ``row_norm`` the norms of its rows (intercept
    included), or one scalar for all of them; ``skip`` a row of the block
    whose contribution is left out (the audit hook's record), or None.
    """
    g = _clipped_raw_grad(block, y, datafit, coef, intercept, row_norm, clip_norm)
    if skip is not None:
        g[skip] = 0.0  # the canary takes this record's place
    d, k = coef.shape
    total = np.empty((d + 1, k))
    if not sp.issparse(block) and block.flags.c_contiguous:
        # A row-major block (a Dask chunk as stored): np.dot, not @. numpy's
        # matmul held the GIL for this product, so two Dask task threads ran
        # it one after the other (speed-up 1.0 against 1.8 with np.dot,
        # blocks of 2·10⁴ x 50 rows, one BLAS thread each). A block of the
        # in-memory engine's column-major X is strided, which np.dot would
        # copy: @ hands the strides to BLAS.
        total[:d] = np.dot(block.T, g)
    else:
        total[:d] = block.T @ g
    total[d] = g.sum(axis=0)
    return total


def in_memory_gradient_sum(X, y, datafit, coef, intercept, row_norm, clip_norm):
    """:func:`skdp._dpgd.clipped_gradient_sum` of an in-memory X (numpy or scipy).

    One pass over X, a block of rows at a time (:func:`sum_over_row_blocks`);
    within :func:`injected_gradient` (audits only) one record's contribution
    is the auditor's gradient canary, clipped to ``clip_norm`` as well.
    """
    hook = _INJECTED.get()
    total = sum_over_row_blocks(
        X,
        y,
        datafit,
        coef,
        intercept,
        row_norm,
        clip_norm,
        skip=None if hook is None else hook.record,
    )
    if hook is not None:
        total += _injected_contribution(hook, X, total.shape, clip_norm)
    return total


def sum_over_row_blocks(
    X, y, datafit, coef, intercept, row_norm, clip_norm, skip=None, fit_intercept=None
):
    """:func:`_block_gradient_sum` over X's cache-sized row blocks, totalled.

    ``skip`` is a row of X left out (the audit hook's record) or None. The
    in-memory engine calls this on the whole X, :mod:`skdp._dask` on each
    chunk (with the chunk's own ``skip``): one code path for both.
    ``row_norm`` None: each block's row norms (the intercept's 1 included
    if ``fit_intercept``) are computed from the block being summed, while
    it is in cache (a Dask chunk computed anew at every step).
    """
    if row_norm is None and fit_intercept is None:
        raise ValueError("Row norms or fit_intercept (to compute them) needed.")
    d, k = coef.shape
    total = np.zeros((d + 1, k))
    scalar_norm = np.ndim(row_norm) == 0
    for rows in _gradient_blocks(X):
        local = None
        if skip is not None and rows.start <= skip < rows.stop:
            local = skip - rows.start
        block = _float64_rows(X, rows)
        if row_norm is None:
            norms = _block_row_norms(block, fit_intercept)
        else:
            norms = row_norm if scalar_norm else row_norm[rows]
        total += _block_gradient_sum(
            block, y[rows], datafit, coef, intercept, norms, clip_norm, local
        )
    return total


class InMemoryDesign:
    """What the engine's loop reads of an in-memory (X, y): one gradient sum per step.

    X is put in the engine's form once (:func:`canonical_design`) and its
    row norms are computed once (intercept included); each call of
    :meth:`gradient_sum` is one pass of :func:`clipped_gradient_sum`.
    :class:`skdp._dask.DaskDesign` is the same object for a Dask array.
    """

    def __init__(self, X, y, *, fit_intercept):
        self.X = canonical_design(X)
        self.y = y
        self.row_norm = row_norms(self.X, fit_intercept)
        self.shape = self.X.shape

    def gradient_sum(self, datafit, coef, intercept, clip_norm):
        """``Σ_i clip_C(∇ℓ_i)`` at ``(coef, intercept)``, shape ``(d + 1, k)``."""
        return in_memory_gradient_sum(
            self.X, self.y, datafit, coef, intercept, self.row_norm, clip_norm
        )
