"""Kinds of input, told apart without importing optional libraries.

A foundation module: it imports nothing of skdp, so every layer (the
engine, :mod:`skdp._dask`, the estimators) can ask what it was given.
"""

import numpy as np
import scipy.sparse as sp


def is_dask_array(X):
    """Whether X is a Dask array, checked without importing Dask.

    A duck check on the type's module and the array protocol Dask arrays
    have (``chunks``, ``map_blocks``): ``import skdp`` never imports Dask,
    and only a Dask input loads :mod:`skdp._dask` (the optional
    ``distributed`` extra).
    """
    module = type(X).__module__ or ""
    return (
        module.startswith("dask.") and hasattr(X, "chunks") and hasattr(X, "map_blocks")
    )


def is_sparse_input(X):
    """Whether X is sparse: a scipy sparse matrix, or a Dask array of sparse chunks."""
    if is_dask_array(X):
        return sp.issparse(getattr(X, "_meta", None))
    return sp.issparse(X)


#: The sparse formats a fit takes as they are (``accept_sparse`` of its
#: validation; any other format is converted to the first). scikit-learn would
#: turn COO into CSR by summing duplicate entries, where two finite values can
#: overflow to inf and one record's values alone would make the fit raise
#: while its neighbour fits; the engine merges duplicates itself, clipping
#: what overflows (:func:`skdp._clipping.canonical_design`).
SPARSE_FIT_FORMATS = ["csr", "csc", "coo"]

#: The error of an input that holds strings or other objects, in memory or in
#: a Dask chunk: it never quotes the value (it may be private).
NOT_NUMBERS_MESSAGE = (
    "The input (X, y, or a parameter given as an array) holds values that are "
    "not numbers (strings or other objects; the value is not shown: it may be "
    "private). Encode them first, e.g. with OneHotEncoder or OrdinalEncoder."
)


def finite_targets(y):
    """A regressor's y as float64, every value finite, or a ValueError.

    scikit-learn checks y's finiteness before ``y_numeric`` converts it, and
    text not at all: a target written as "nan", "inf" or "1e400" became NaN
    or inf after the checks, and DPLinearRegression released a NaN model for
    that data set where its neighbour's was finite (review). Neither message
    names a value.
    """
    try:
        y = np.asarray(y, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(NOT_NUMBERS_MESSAGE) from None
    if not np.isfinite(y).all():
        raise ValueError("Input y contains NaN or infinity.")
    return y


def validated_copy(estimator, X, dtype):
    """``validate_data(..., copy=True)`` that a transform may write into.

    scikit-learn's copy of a pandas frame of bool or nullable-integer
    columns (pandas 3, copy-on-write) came back read-only, and every
    private transformer's in-place arithmetic raised "output array is
    read-only" where StandardScaler worked (user trial).
    """
    from sklearn.utils.validation import validate_data

    X = validate_data(estimator, X, reset=False, dtype=dtype, copy=True)
    return X if X.flags.writeable else X.copy()
