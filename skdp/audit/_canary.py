"""The canary base class and the helpers every canary uses to build neighbours."""

import numpy as np
import scipy.sparse as sp

from ..accounting import REPLACE_ONE


class Canary:
    """Base class: override :meth:`Canary.build` and :meth:`Canary.statistic`."""

    #: Adjacencies under which the two built data sets are neighbours.
    adjacencies = (REPLACE_ONE,)

    def build(self, estimator, X, y):
        """Return ``((X_in, y_in), (X_out, y_out))``.

        Each world may also carry keyword arguments for ``fit`` as a third
        item, ``(X, y, fit_params)`` (e.g. ``{"groups": ...}``).
        """
        raise NotImplementedError

    def statistic(self, fitted):
        """White-box score of a fitted model (larger: the canary is in)."""
        raise NotImplementedError

    def loss(self, fitted):
        """Black-box score: minus the canary record's loss under ``fitted``."""
        raise NotImplementedError(
            f"{type(self).__name__} has no black-box loss statistic."
        )

    def expected_mu(self, fitted):
        """GDP parameter the design attains with :meth:`statistic`, if known."""
        return None

    def __repr__(self):
        params = ", ".join(
            f"{k}={v!r}"
            for k, v in vars(self).items()
            if not k.endswith("_") and v is not None
        )
        return f"{type(self).__name__}({params})"


def _binary_labels(estimator, y):
    classes = getattr(estimator, "classes", None)
    labels = np.unique(np.asarray(classes if classes is not None else y))
    if labels.size != 2:
        raise ValueError(
            f"{type(estimator).__name__}: this canary needs a binary problem "
            f"(two labels); got {labels.size}."
        )
    return labels


def _replace_row(X, index, row):
    """A copy of X with row ``index`` replaced (dense or CSR)."""
    if sp.issparse(X):
        X = sp.lil_matrix(X, copy=True)
        X[index] = row
        return sp.csr_matrix(X)
    X = np.array(X, dtype=float, copy=True)
    X[index] = row
    return X


def _with_label(y, index, label):
    y = np.array(y, copy=True)
    if y.dtype.kind in "iub" and not float(label).is_integer():
        y = y.astype(float)
    y[index] = label
    return y


def _unit(direction, d):
    if direction is None:
        u = np.zeros(d)
        u[0] = 1.0
        return u
    u = np.asarray(direction, dtype=float).ravel()
    if u.shape != (d,) or not np.isfinite(u).all() or not np.any(u):
        raise ValueError(f"direction must be a finite non-zero vector of length {d}.")
    return u / np.linalg.norm(u)
