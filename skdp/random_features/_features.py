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

from .._clipping import quiet_floats

#: Named activations: odd and 1-Lipschitz (Assumption 2 of Bombari & Mondelli).
ACTIVATIONS = {"tanh": np.tanh, "erf": erf, "sin": np.sin}

_FEATURE_BOUND = 1e100

#: A training record whose row of features has a norm below this is run as a
#: zero row by both solvers (the squares of its features may underflow in
#: the kernel solver's Gram matrix): a fixed map of the record's own
#: features, like a clip. The solvers clipped such a row differently before,
#: and were not the same mechanism for it (review).
SMALLEST_NORM = 1e-140

# Blocks hold about this many float64 values (32 MB).
_BLOCK_VALUES = 1 << 22


def draw_weights(rng, n_features, n_components):
    """``Vᵀ`` with entries i.i.d. N(0, 1/d), shape ``(n_features, n_components)``."""
    return rng.standard_normal((n_features, n_components)) / np.sqrt(n_features)


def resolve_activation(activation):
    """The activation function for a name or a callable, checked on public inputs.

    A NumPy ufunc of one input and one output without core dimensions
    (``np.tanh``, ``scipy.special.erf``, ...) acts entry by entry by
    construction and is applied to whole blocks. Any other callable is
    applied to one record's pre-activations at a time (:func:`features`):
    a record's features then depend on that record alone whatever the
    function does with its input (normalising over the batch, say), which
    no probe of the function could prove. Here it is only checked to map a
    public probe row to an array of the same shape.
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
    if isinstance(activation, np.ufunc) and (activation.nin, activation.nout) != (1, 1):
        raise ValueError(
            f"activation {activation.__name__} is a ufunc of {activation.nin} "
            f"input(s) and {activation.nout} output(s); it must take one array "
            "and return one."
        )
    _probe(activation, 4)
    return activation


def _probe(activation, width, where=""):
    """Raise a ValueError unless ``activation`` maps a public row of ``width``
    values to an array of its shape."""
    probe = np.linspace(-3.0, 3.0, width).reshape(1, width)
    try:
        with quiet_floats():
            out = np.asarray(activation(probe), dtype=np.float64)
    except Exception as exc:
        raise ValueError(
            f"activation failed on a test array of shape (1, {width}){where}: {exc}"
        ) from exc
    if out.shape != probe.shape:
        raise ValueError(
            "activation must act entry by entry: it must return an array of the "
            f"input's shape; got shape {out.shape} for an input of shape "
            f"(1, {width}){where}."
        )


def _elementwise_ufunc(activation):
    """A plain numeric ufunc (no core dimensions) acts entry by entry and
    does not raise on a value with numpy's and scipy.special's
    floating-point events off (:func:`skdp._clipping.quiet_floats`); a
    generalised one (``signature`` such as ``"(m,n)->(m,n)"``) may span the
    rows, and one with only loops on Python objects (``np.frompyfunc``)
    runs Python code that may raise."""
    return (
        isinstance(activation, np.ufunc)
        and activation.signature is None
        and any("O" not in types for types in activation.types)
    )


def _entry_by_entry(activation, Z):
    """``activation`` applied so that row i of the result depends on row i of
    Z alone: a numeric ufunc to the whole block (it acts per entry), any
    other callable to one row at a time (one call per record: slower, but
    the output for a record cannot depend on the other records, provided
    the callable is a pure function: one that keeps state between calls,
    e.g. a running maximum, is beyond any check and voids the guarantee).

    A record on which the callable raises, or returns another shape, gets
    features 0: a rule of that record alone. Raising would let one record
    decide whether the fit fails (a softplus written with ``math.exp``
    overflowed on one record of 2000; inside a private search the failed
    run scored its worst; review).
    """
    if _elementwise_ufunc(activation):
        return np.asarray(activation(Z), dtype=np.float64)
    A = np.zeros(Z.shape)
    for i in range(Z.shape[0]):  # a user's callable may mix the rows it is given
        try:
            row = np.asarray(activation(Z[i : i + 1]), dtype=np.float64)
        except Exception:  # any error of one record's call
            continue
        if row.shape == (1, Z.shape[1]):
            A[i] = row[0]
    return A


def _finite(A):
    """Apply the per-entry rule that makes features finite (in place).

    Always the same passes, whatever the values: a clean-up run only when
    some entry is not finite took a pass more when one record made NaNs
    (``sin`` of 1.7e308: 1.7 times the feature time at n = 2000, p = 8000),
    a timing channel that verbose output and wall time would show (review).
    """
    np.copyto(A, 0.0, where=np.isnan(A))
    return np.clip(A, -_FEATURE_BOUND, _FEATURE_BOUND, out=A)


def _zero_nan(A):
    """The same rule for values already in [−1, 1] or NaN: NaN → 0 (in place),
    in the same passes whatever the values (see :func:`_finite`)."""
    np.copyto(A, 0.0, where=np.isnan(A))
    return A


def features(X, weights, activation, columns=slice(None)):
    """``φ(x)`` for every row of X and the given columns, as float64."""
    with quiet_floats():
        Z = np.asarray(X @ weights[:, columns], dtype=np.float64)
        if any(activation is named for named in ACTIVATIONS.values()):
            # In place: no second n × width array. These map every non-NaN
            # input (±inf too, except sin, which gives NaN) into [−1, 1].
            return _zero_nan(activation(Z, out=Z))
        A = _entry_by_entry(activation, Z)
    if not A.flags.writeable:
        A = A.copy()
    return _finite(A)


def column_blocks(n_samples, n_components):
    """Slices of about ``_BLOCK_VALUES / n_samples`` columns (at least 256)."""
    width = max(256, _BLOCK_VALUES // max(n_samples, 1))
    for start in range(0, n_components, width):
        yield slice(start, min(start + width, n_components))


def check_activation_widths(activation, n_samples, n_components):
    """Refuse a callable activation that fails at a width the fit uses.

    The features are computed on rows of ``n_components`` values, or of a
    column block's width (:func:`column_blocks`: public n and p); a callable
    that maps the probe of :func:`resolve_activation` but raises, or returns
    another shape, at one of these widths would give every record features
    0 (:func:`_entry_by_entry`'s per-record rule) and a model of zeros,
    silently (review). Probed on public rows, it raises instead.
    """
    if _elementwise_ufunc(activation):  # the named ones too (resolved)
        return
    widths = {n_components} | {
        cols.stop - cols.start for cols in column_blocks(n_samples, n_components)
    }
    for width in sorted(widths):
        _probe(activation, width, ", a width the fit uses")


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


def zero_tiny_rows(A, norms):
    """Set to 0, in place, the rows of features ``A`` whose norm (``norms``)
    is below :data:`SMALLEST_NORM`; return ``A``."""
    A[norms < SMALLEST_NORM] = 0.0
    return A
