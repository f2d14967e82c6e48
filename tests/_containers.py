"""ColumnTransformers whose sparse-or-dense choice the structure does not fix.

Shared by the ledger's, the budget helpers' and the private search's tests.
Each keeps scikit-learn's default ``sparse_threshold=0.3`` and has a part
that may return a sparse matrix, hidden in a way an earlier check missed: a
sparse input passed through (a part or the remainder), an encoder that drops
a category one level down in a pipeline or in a FeatureUnion, a sparse
MissingIndicator, a row-wise function that returns CSR. Every other part
reads only the shape or is a DP step, so nothing else is named or refused.
Column 2 of :func:`table` holds integer codes 0-3 (as floats).
"""

import numpy as np
import scipy.sparse as sp
from sklearn.compose import ColumnTransformer
from sklearn.impute import MissingIndicator
from sklearn.pipeline import FeatureUnion, make_pipeline
from sklearn.preprocessing import FunctionTransformer, OneHotEncoder

from skdp import DPStandardScaler, rowwise

CODES = [0.0, 1.0, 2.0, 3.0]


@rowwise
def to_csr(X):
    """Row-wise, and returns a CSR matrix."""
    return sp.csr_matrix(np.asarray(X, dtype=float))


def _dropping():
    return OneHotEncoder(categories=[CODES], drop="first")


def _columns(name, part, **params):
    return ColumnTransformer(
        [("num", DPStandardScaler(bounds=(-5.0, 5.0)), [0, 1]), (name, part, [2])],
        **params,
    )


#: ``{id: (factory of the ColumnTransformer, names of its parts that may
#: return a sparse matrix)}``.
VARIANTS = {
    "passthrough": (lambda: _columns("keep", "passthrough"), ["keep"]),
    "remainder-passthrough": (
        lambda: ColumnTransformer(
            [("num", DPStandardScaler(bounds=(-5.0, 5.0)), [0, 1])],
            remainder="passthrough",
        ),
        ["remainder"],
    ),
    "encoder-one-level-down": (
        lambda: _columns("cat", make_pipeline(_dropping(), FunctionTransformer())),
        ["cat"],
    ),
    "feature-union": (
        lambda: _columns("cat", FeatureUnion([("onehot", _dropping())])),
        ["cat"],
    ),
    "missing-indicator-sparse": (
        lambda: _columns(
            "missing", MissingIndicator(missing_values=0.0, features="all", sparse=True)
        ),
        ["missing"],
    ),
    "rowwise-csr": (lambda: _columns("csr", FunctionTransformer(to_csr)), ["csr"]),
}


def table(n=400, seed=0):
    """Two numeric columns, then integer codes 0-3; a label that reads both."""
    rng = np.random.default_rng(seed)
    X = np.column_stack(
        [rng.normal(size=n), rng.normal(size=n), rng.integers(0, 4, n).astype(float)]
    )
    y = (X[:, 0] + (X[:, 2] == 1.0) > 0.5).astype(int)
    return X, y


def boundary_sparse(n=1000):
    """A sparse X whose share of stored values is exactly 0.3, and a
    neighbour (one record changed) just below it.

    A ColumnTransformer that passes X through with ``sparse_threshold=0.3``
    stacks the first dense and the neighbour sparse.
    """
    rng = np.random.default_rng(0)
    X = np.zeros((n, 10))
    X[:, :2] = rng.standard_normal((n, 2))
    X[:, 2] = 1.0
    neighbour = X.copy()
    neighbour[0, 2] = 0.0
    y = (X[:, 0] > 0).astype(int)
    return sp.csr_matrix(X), sp.csr_matrix(neighbour), y
