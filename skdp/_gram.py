"""The Gram matrix of clipped rows: one pass over the data, in memory or on Dask.

:class:`~skdp.linear_model.DPLinearRegression` and
:class:`~skdp.decomposition.DPPCA` both release ``G = Σ_i w_i w_iᵀ`` with
:func:`skdp.mechanisms.gram_mechanism`, for rows

``w_i = (clip(x_i, x_clip), constant, y_weight·clip(y_i, y_clip))``

(the last two parts optional): ``x_i`` scaled down to L2 norm at most
``x_clip``, a constant coordinate (an intercept column, or the centring of
DPPCA), and the target row scaled down to L2 norm at most ``y_clip``, then
multiplied by ``y_weight``. Every row then has
``||w_i||² <= x_clip² + constant² + (y_weight·y_clip)²``
(:func:`row_norm_bound`), whatever the data: the bound the mechanism's
sensitivity is computed from.

The sum is computed in blocks of rows (memory O(block · m) beyond X, BLAS-3
``syrk`` per block) or, for a Dask X, by the same per-block code on every
row chunk where it lives, summed in a tree (:func:`skdp._dask.block_sum`):
one pass, and the ``m²`` floats of the sum reach the client, where the
noise is added once.
"""

import math
import warnings

import numpy as np
from scipy.linalg.blas import dsyrk

from ._clipping import _dense_row_norms, clip_factors, flush_subnormal
from ._inputs import is_dask_array

__all__ = [
    "clipped_gram",
    "clipped_rows",
    "row_norm_bound",
    "warn_if_rows_point_one_way",
]

#: Values per block of rows (the block's clipped copy stays in cache).
_BLOCK_VALUES = 2**20


def row_norm_bound(x_clip, constant=0.0, y_clip=0.0, y_weight=1.0):
    """``sqrt(x_clip² + constant² + (y_weight·y_clip)²)``: the bound on ``||w_i||``."""
    return math.sqrt(x_clip**2 + constant**2 + (y_weight * y_clip) ** 2)


def gram_noise_norm_bound(noise_std, d, rho=0.05):
    """A bound on the operator norm of the noise of a released Gram matrix's
    ``d x d`` block, holding with probability ``1 - rho``.

    The noise (diagonal std σ = ``noise_std``, off-diagonal ``σ/sqrt(2)``:
    a GOE matrix times ``σ/sqrt(2)``) has ``E||E|| <= σ·sqrt(2d)``, and its
    norm is σ-Lipschitz in the Gaussian vector: ``||E|| <= σ·(sqrt(2d) +
    sqrt(2 log(1/ρ)))`` with probability ``1 - ρ``. Public: σ and d only.
    """
    return noise_std * (math.sqrt(2.0 * d) + math.sqrt(2.0 * math.log(1.0 / rho)))


#: Share of ``x_clip`` above which the norm of the mean clipped row says the
#: rows point one way (see :func:`warn_if_rows_point_one_way`).
ONE_WAY_SHARE = 0.5


def warn_if_rows_point_one_way(
    gram, n, d, constant, x_clip, noise_std, *, name, remedy, stacklevel
):
    """Warn when the released column sums show the clipped rows pointing one way.

    Post-processing of a noisy Gram matrix with a ``constant`` column: its
    entries ``G[:d, d] = constant·Σ_i clip(x_i)`` give the mean clipped row,
    of norm at most ``x_clip``: about 0 for centred features, about
    ``x_clip`` when nearly every row is clipped in the same direction (raw
    columns, all positive and some large), where clipping keeps little but
    that direction. A norm above ``ONE_WAY_SHARE·x_clip`` by more than three
    noise standard deviations (off-diagonal noise std ``noise_std/√2`` per
    entry) warns, naming ``remedy``. ``stacklevel`` as for
    :func:`warnings.warn` called by the caller.
    """
    mean_row = np.linalg.norm(gram[:d, d]) / (constant * n)
    noise = 3.0 * noise_std / math.sqrt(2.0) * math.sqrt(d) / (constant * n)
    if mean_row - noise > ONE_WAY_SHARE * x_clip:
        warnings.warn(
            f"{name}: the clipped rows point one way (the released mean row has "
            f"norm {mean_row / x_clip:.2f} of clip_norm={x_clip:g}): X is far "
            f"from centred and standardised, and clipping keeps little of it. "
            f"{remedy}",
            UserWarning,
            stacklevel=stacklevel + 1,
        )


def _clip_factors(X, clip):
    """Per-row factors ``min(1, clip/||x||)``, see :func:`clip_factors`."""
    return clip_factors(_dense_row_norms(X), clip)


def clipped_rows(X, clip):
    """Rows of X scaled down to L2 norm at most ``clip`` (a float64 copy).

    ``x·min(1, clip/||x||)``, the norm computed free of overflow; a row whose
    norm exceeds the float64 range gets factor 0 (a contribution of norm 0).
    Each output row depends on its own input row only.
    """
    X = np.asarray(X, dtype=np.float64)
    with np.errstate(under="ignore"):
        return X * _clip_factors(X, clip)[:, None]


def _fill_rows(W, X, Y, x_clip, constant, y_clip, y_weight):
    """Write the rows ``w_i`` of one block into the buffer W (rows, m)."""
    d = X.shape[1]
    with np.errstate(under="ignore"):
        np.multiply(X, _clip_factors(X, x_clip)[:, None], out=W[:, :d])
        if constant is not None:
            W[:, d] = constant
            d += 1
        if Y is not None:
            # The product, not just the clip factor, may be subnormal (a
            # small weight), where rounding can double it (flush_subnormal).
            factor = flush_subnormal(y_weight * _clip_factors(Y, y_clip))
            np.multiply(Y, factor[:, None], out=W[:, d:])


def _gram_in_memory(X, Y, *, x_clip, constant, y_clip, y_weight):
    n = X.shape[0]
    m = X.shape[1] + (constant is not None) + (0 if Y is None else Y.shape[1])
    out = np.zeros((m, m), order="F")
    step = max(1, min(n, _BLOCK_VALUES // max(m, 1)))
    buffer = np.empty((step, m))
    for start in range(0, n, step):
        rows = slice(start, min(start + step, n))
        W = buffer[: rows.stop - start]
        _fill_rows(
            W,
            np.asarray(X[rows], dtype=np.float64),
            None if Y is None else np.asarray(Y[rows], dtype=np.float64),
            x_clip,
            constant,
            y_clip,
            y_weight,
        )
        # W.T is Fortran-ordered: syrk computes (W.T)(W.T)ᵀ = WᵀW (upper
        # triangle) without a copy.
        out = dsyrk(1.0, W.T, beta=1.0, c=out, trans=0, lower=0, overwrite_c=True)
    return np.triu(out) + np.triu(out, 1).T


def _chunk_gram(X, *y_columns, x_clip, constant, y_clip, y_weight):
    """One Dask chunk's Gram matrix, flattened (a sum over its rows)."""
    Y = np.column_stack(y_columns) if y_columns else None
    gram = _gram_in_memory(
        np.asarray(X),
        Y,
        x_clip=x_clip,
        constant=constant,
        y_clip=y_clip,
        y_weight=y_weight,
    )
    return gram.ravel()


def clipped_gram(X, Y=None, *, x_clip, constant=None, y_clip=None, y_weight=1.0):
    """``Σ_i w_i w_iᵀ`` for the rows ``w_i`` of the module docstring.

    Parameters
    ----------
    X : ndarray of shape (n, d) or dask array
        Finite features (float64 or float32; summed in float64).
    Y : None, ndarray of shape (n, k), or tuple of k 1-D dask arrays
        Finite targets (a Dask X takes its targets as columns chunked like
        X's rows).
    x_clip : float
        Rows of X are scaled down to this L2 norm.
    constant : float or None
        A constant coordinate appended after X's (None: none).
    y_clip : float or None
        Rows of Y are scaled down to this L2 norm (needed with Y).
    y_weight : float, default=1.0
        Factor applied to the clipped rows of Y.

    Returns
    -------
    gram : ndarray of shape (m, m)
        Symmetric, ``m = d + (constant is not None) + k``.
    """
    kwargs = dict(x_clip=x_clip, constant=constant, y_clip=y_clip, y_weight=y_weight)
    if not is_dask_array(X):
        return _gram_in_memory(X, Y, **kwargs)
    from . import _dask

    columns = () if Y is None else tuple(Y)
    m = X.shape[1] + (constant is not None) + len(columns)
    total = _dask.block_sum(_chunk_gram, X, *columns, size=m * m, **kwargs)
    return total.compute().reshape(m, m)
