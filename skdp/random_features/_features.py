"""The random-features map ``φ(x) = ϕ(Vx)`` (Bombari & Mondelli, eq. (1.2)).

``V`` is drawn once, independently of the data, and stored transposed as
``weights`` of shape ``(d, p)`` (the orientation of scikit-learn's
``RBFSampler.random_weights_``). Features are computed a block of columns (or
of rows) at a time, so the ``n × p`` matrix Φ is never needed whole by the
kernel solver or by ``predict``.

Every feature value is made finite by a fixed, per-entry rule (NaN → 0,
values clipped to ±1e100). The rule reads nothing but the entry, so φ stays a
function of one record; it never changes the named activations' values on
finite pre-activations (they are bounded by 1), and it keeps every entry of
``K = ΦΦᵀ`` finite for any number of features below 1e100.
"""

import numpy as np
from scipy.special import erf

#: Named activations: odd and 1-Lipschitz (Assumption 2 of Bombari & Mondelli).
ACTIVATIONS = {"tanh": np.tanh, "erf": erf, "sin": np.sin}

_FEATURE_BOUND = 1e100

# Blocks hold about this many float64 values (32 MB).
_BLOCK_VALUES = 1 << 22


def draw_weights(rng, n_features, n_components):
    """``Vᵀ`` with entries i.i.d. N(0, 1/d), shape ``(n_features, n_components)``."""
    return rng.standard_normal((n_features, n_components)) / np.sqrt(n_features)


def resolve_activation(activation):
    """The activation function for a name or a callable, checked on public inputs.

    A callable must map an array to an array of the same shape, entry by
    entry: a record's features may depend on that record only (a function
    that mixes rows, e.g. normalising over the batch, would let one record
    change another's features and void the guarantee). This is checked on a
    fixed public probe, not on the data.
    """
    if isinstance(activation, str):
        if activation not in ACTIVATIONS:
            raise ValueError(
                f"Unknown activation {activation!r}; expected one of "
                f"{sorted(ACTIVATIONS)} or a callable."
            )
        return ACTIVATIONS[activation]
    if not callable(activation):
        raise TypeError("activation must be a name or a callable.")
    probe = np.linspace(-3.0, 3.0, 12).reshape(3, 4)
    try:
        with np.errstate(all="ignore"):
            out = np.asarray(activation(probe), dtype=np.float64)
            parts = np.asarray(activation(probe[:1]), dtype=np.float64)
    except Exception as exc:
        raise ValueError(
            f"activation failed on a test array of shape (3, 4): {exc}"
        ) from exc
    if out.shape != probe.shape or not np.array_equal(out[:1], parts, equal_nan=True):
        raise ValueError(
            "activation must act entry by entry: it must return an array of the "
            "input's shape whose rows depend only on the same input rows."
        )
    return activation


def _finite(A):
    """Apply the per-entry rule that makes features finite (in place)."""
    if not np.isfinite(A).all():
        np.nan_to_num(A, copy=False, nan=0.0)
    return np.clip(A, -_FEATURE_BOUND, _FEATURE_BOUND, out=A)


def _zero_nan(A):
    """The same rule for values already in [−1, 1] or NaN: NaN → 0 (in place).

    A sum is NaN exactly when some entry is (bounded entries cannot overflow
    it), and takes one pass without a temporary.
    """
    if np.isnan(A.sum()):
        np.nan_to_num(A, copy=False, nan=0.0)
    return A


def features(X, weights, activation, columns=slice(None)):
    """``φ(x)`` for every row of X and the given columns, as float64."""
    with np.errstate(all="ignore"):
        Z = np.asarray(X @ weights[:, columns], dtype=np.float64)
        if any(activation is named for named in ACTIVATIONS.values()):
            # In place: no second n × width array. These map every non-NaN
            # input (±inf too, except sin, which gives NaN) into [−1, 1].
            return _zero_nan(activation(Z, out=Z))
        A = np.asarray(activation(Z), dtype=np.float64)
    if not A.flags.writeable:
        A = A.copy()
    return _finite(A)


def column_blocks(n_samples, n_components):
    """Slices of about ``_BLOCK_VALUES / n_samples`` columns (at least 256)."""
    width = max(256, _BLOCK_VALUES // max(n_samples, 1))
    for start in range(0, n_components, width):
        yield slice(start, min(start + width, n_components))


def row_blocks(n_samples, n_components):
    """Slices of about ``_BLOCK_VALUES / n_components`` rows (at least 1)."""
    height = max(1, _BLOCK_VALUES // max(n_components, 1))
    for start in range(0, n_samples, height):
        yield slice(start, min(start + height, n_samples))


def predict_linear(X, weights, activation, coef):
    """``φ(x)ᵀ coef`` for every row of X, a block of rows at a time."""
    out = np.empty(X.shape[0])
    for rows in row_blocks(X.shape[0], weights.shape[1]):
        out[rows] = features(X[rows], weights, activation) @ coef
    return out
