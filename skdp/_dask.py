"""Dask arrays: the engine's data passes as map-reduce over row chunks.

Imported only when an estimator is given a :class:`dask.array.Array` (the
optional ``distributed`` extra); ``import skdp`` never imports Dask.

**What runs where.** Every pass over the data is one Dask reduction: each
row chunk is reduced, where it lives (a worker of a ``dask.distributed``
cluster, or a thread of the local scheduler), by the *same* per-block
function the in-memory code runs on its blocks (for DP-GD,
:func:`skdp._dpgd.sum_over_row_blocks`, which clips every record of the chunk
to ``C`` before summing), and the per-chunk sums, a few floats each, are
added in a tree on the workers, whose last level (at most 32 sums) the
client adds (on a cluster holding X, the client adds them all, in the same
order: see Speed). Everything that is random or that releases anything runs on
the client: the noise is drawn there, once per step, by the same loop and
from the same generator as in memory (:func:`skdp._dpgd.dpgd`), never per
chunk. The sum that receives the noise is the sum over all records,
whatever the chunking, so one record still moves it by at most the same
sensitivity (``2C`` under replace-one), and the guarantee and the
accounting are those of the in-memory fit. With the same
seed, the released model equals the in-memory one up to the rounding of the
sums (their order of addition differs).

**What is public.** n and d are read from the array's shape (as in memory),
and the chunk sizes along rows, which the user chose. Before any noise is
drawn, one extra pass checks that every value is finite (and, where the
in-memory estimator checks labels, that they are valid): it releases only
"valid or not", as the in-memory validation does, and a failing check
raises before the first noisy step. Arrays whose chunk sizes are unknown
(``nan`` in ``X.chunks``), whose row chunks differ between X and y, or that
have no rows are refused before any data is read. Columns are rechunked to
a single chunk (a record must be whole in one chunk for its clip).

**Memory.** A worker holds one chunk of X at a time plus the chunk's
temporaries (the engine's blocks of 2²⁰ values); the client holds O(d·k)
floats per step, independent of n. Prepared once per fit and kept
(``persist``) where the scheduler keeps results, on the workers of a
distributed cluster: y as the datafit reads it and the row norms of X, 16
bytes a row (:class:`DaskDesign`).

**Speed.** A step is one small graph (a task per chunk and a tree of
additions, :class:`RowChunks`) and one ``compute``. On a
``dask.distributed`` cluster whose workers hold X (persisted), a step (from
the second on) is instead one call to an actor on each worker that holds
chunks (:class:`_ChunkActor`, started once per fit and given the chunks
where they are): no task graph and no task, one message to each actor
(relayed by the scheduler unless the client talks to workers directly) and
its answer.
A step's graph cost 17-30 ms on a 2-core ``LocalCluster`` whatever the data
(graph, scheduler, task and gather round trips), as much as the whole
in-memory step at n = 5·10⁵, d = 50; the actors' call 3-6 ms. The
per-chunk sums are the same, added by the client in the same order, so the
released model is the same. Dense chunks are read in the order they are
stored: the in-memory engine copies a row-major X to Fortran order once per
fit, but a chunk that is not kept between steps would be copied at every
step, at 3-4 times the cost of the step.
"""

import contextlib
import copy
import functools
import threading
import uuid
import weakref

import dask
import dask.array as da
import numpy as np
import scipy.sparse as sp

from . import _clipping
from ._inputs import NOT_NUMBERS_MESSAGE, is_dask_array

__all__ = [
    "DaskDesign",
    "RowChunks",
    "block_parts",
    "block_sum",
    "clipped_gradient_sum",
    "map_rows",
    "row_chunks",
    "score",
    "validate",
]


def _is_sparse(X):
    return sp.issparse(getattr(X, "_meta", None))


def row_chunks(X, *, accept_sparse=False):
    """X checked for shape and chunks (no values read), one column chunk.

    Raises a ValueError for an array that is not 2-D, has unknown chunk
    sizes, no rows or no columns, or sparse chunks where they are not
    accepted.
    """
    if X.ndim != 2:
        raise ValueError(
            f"Expected a 2D Dask array of shape (n_samples, n_features); got "
            f"{X.ndim} dimension(s)."
        )
    if any(np.isnan(c) for chunks in X.chunks for c in chunks):
        raise ValueError(
            "The Dask array has unknown chunk sizes (nan in X.chunks), so n is "
            "unknown: call X.compute_chunk_sizes() first (it reads only the "
            "number of rows of each chunk)."
        )
    n, d = (int(s) for s in X.shape)
    if n < 1 or d < 1:
        raise ValueError(
            f"Found array with {n} sample(s) and {d} feature(s) while a minimum "
            "of 1 is required."
        )
    if _is_sparse(X) and not accept_sparse:
        raise TypeError(
            "This estimator does not accept a Dask array of sparse chunks; "
            "pass dense chunks."
        )
    if len(X.chunks[1]) > 1:
        X = X.rechunk({1: -1})  # a record must be whole in one chunk
    return X


def _as_rows(y, X, name="y"):
    """y as a 1-D Dask array chunked like X's rows (a numpy y is wrapped)."""
    if y is None:
        return None
    if not is_dask_array(y):
        y = np.asarray(y)
        if y.ndim == 2 and y.shape[1] == 1:
            y = y[:, 0]
        if y.ndim != 1 or y.shape[0] != X.shape[0]:
            raise ValueError(
                f"{name} has shape {y.shape}; expected ({X.shape[0]},) to match X."
            )
        return da.from_array(y, chunks=(X.chunks[0],))
    # Sparse chunks densely (numpy's isfinite refused them with a bare
    # TypeError; review), whatever the metadata declares.
    y = y.map_blocks(dense_block, dtype=y.dtype)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"{name} must be 1-D; got {y.ndim} dimension(s).")
    if any(np.isnan(c) for c in y.chunks[0]):
        raise ValueError(
            f"{name} has unknown chunk sizes (nan in {name}.chunks): call "
            f"{name}.compute_chunk_sizes() first."
        )
    if y.shape[0] != X.shape[0]:
        raise ValueError(
            f"X has {X.shape[0]} rows but {name} has {y.shape[0]}: they must match."
        )
    if tuple(y.chunks[0]) != tuple(X.chunks[0]):
        raise ValueError(
            f"X and {name} are chunked differently along rows ({len(X.chunks[0])} "
            f"and {len(y.chunks[0])} chunks, or chunks of different sizes): give "
            f"them the same row chunks, e.g. {name}.rechunk((X.chunks[0],))."
        )
    return y


def dense_block(block):
    """A chunk of y as a dense array (a scipy sparse chunk via toarray)."""
    return block.toarray() if sp.issparse(block) else block


def _chunk_partial(fn, size, start_name, kwargs):
    """Wrap ``fn`` for ``map_blocks``: 1-D arrays come back as 1-D, result (1, size)."""

    def part(*blocks, block_info=None):
        blocks = [b if i == 0 else b[:, 0] for i, b in enumerate(blocks)]
        extra = dict(kwargs)
        if start_name is not None:
            extra[start_name] = block_info[0]["array-location"][0][0]
        out = np.asarray(_clipping.quietly(fn, *blocks, **extra), dtype=np.float64)
        return out.reshape(1, size)

    # The task's name in dashboards (no functools.wraps: Dask must see
    # ``block_info`` in this wrapper's own signature).
    part.__name__ = part.__qualname__ = fn.__name__
    return part


def block_sum(fn, X, *rows, size, start_name=None, **kwargs):
    """``Σ_chunks fn(X_chunk, *row_chunks, **kwargs)``, a lazy 1-D Dask array.

    ``fn`` returns ``size`` floats for each chunk (the arrays of ``rows``,
    1-D and chunked like X, are passed as 1-D chunks); the results are added
    in a tree (``sum(axis=0)``), so the client receives ``size`` floats. If
    ``start_name`` is given, ``fn`` also receives the chunk's first row index
    as that keyword.
    """
    return block_parts(fn, X, *rows, size=size, start_name=start_name, **kwargs).sum(
        axis=0
    )


def block_parts(fn, X, *rows, size, start_name=None, **kwargs):
    """``fn`` on every row chunk, unsummed: a lazy ``(n_chunks, size)`` array."""
    arrays = [X] + [r[:, None] for r in rows]
    part = _chunk_partial(fn, size, start_name, kwargs)
    return da.map_blocks(
        part,
        *arrays,
        chunks=((1,) * len(X.chunks[0]), (size,)),
        dtype=np.float64,
        meta=np.empty((0, 0)),
        # A fresh key instead of a hash of the arguments: the arguments change
        # at every step anyway, and hashing them (a pickle of the datafit and
        # the iterate) cost more than the step on small data.
        name=f"skdp-{fn.__name__}-{uuid.uuid4().hex}",
    )


def _as_numbers(block, dtype):
    """One chunk as ``dtype``; a value that is not a number raises an error
    that names none (a worker logs the error it raises, before the client
    rewrites it)."""
    try:
        if sp.issparse(block):
            return block.astype(dtype, copy=False)
        return np.asarray(block, dtype=dtype)
    except (ValueError, TypeError):
        raise ValueError(NOT_NUMBERS_MESSAGE) from None


#: A chunk of y whose rows differ from its chunk of X: the fit would pair
#: one record's x with another's y (one record in two rows of a sum).
Y_ROWS_MESSAGE = (
    "A chunk of y holds another number of rows than its chunk of X (a "
    "from_delayed or map_blocks with wrong chunk sizes); nothing was fitted."
)


def check_target_columns(X, columns):
    """One pass over X and the 1-D columns of a 2-D y (each chunked like X):
    raise if a chunk of a column has other rows than its chunk of X, or a
    non-finite value; as :func:`validate` does for a 1-D y."""
    checks = block_sum(_chunk_is_invalid, X, *columns, size=4 * len(columns) + 3)
    per_column = checks.compute()[1:-2].reshape(len(columns), 4)
    if per_column[:, 3].any():
        raise ValueError(Y_ROWS_MESSAGE)
    if per_column[:, 0].any():
        raise ValueError(
            "Input y contains NaN or infinity (in at least one chunk); nothing "
            "was fitted."
        )


def _chunk_is_invalid(X, *ys, y_check=None, dtype=None, y_dtype=None):
    """``[X has a non-finite value, y does, y fails y_check, y is not of
    y_dtype, y has other rows than X, X is not of dtype, rows]`` for one
    chunk (flags as 0/1, then its number of rows)."""
    # np.asarray: a masked chunk's values under its mask count, as for an
    # in-memory masked X (np.isfinite on a MaskedArray skips them, and one
    # hidden NaN then decided the release; review). The fit reads them too.
    data = X.data if sp.issparse(X) else np.asarray(X)
    out = [float(not np.isfinite(data).all())]
    for y in ys:
        numeric = np.issubdtype(y.dtype, np.number)
        out.append(float(numeric and not np.isfinite(y).all()))
        out.append(float(y_check is not None and not y_check(y)))
        out.append(float(y_dtype is not None and y.dtype != y_dtype))
        out.append(float(y.shape[0] != X.shape[0]))
    out.append(float(dtype is not None and data.dtype != dtype))
    out.append(float(X.shape[0]))
    return np.array(out)


def validate(
    estimator,
    X,
    y=None,
    *,
    dtype=(np.float64, np.float32),
    accept_sparse=False,
    y_check=None,
    y_message="y has invalid values.",
    y_numeric=False,
    reset=True,
):
    """Check a Dask (X, y) before any noise: shapes, chunks, then one values pass.

    The structural checks read nothing but shapes and chunk sizes. Then one
    pass over the data computes, per chunk, whether X (and y) are finite
    and whether ``y_check(y_chunk)`` holds: only these few bits reach the
    client, as the in-memory validation raises or not. Sets
    ``n_features_in_`` (``reset=True``) or checks it. Returns ``(X, y)``: X
    with one column chunk and dtype in ``dtype`` (converted lazily to the
    first one otherwise), y a 1-D Dask array chunked like X (float64 if
    ``y_numeric``, and then checked finite whatever its dtype was).
    """
    X = row_chunks(X, accept_sparse=accept_sparse)
    if np.dtype(X.dtype).kind == "c" or (
        y is not None and np.dtype(getattr(y, "dtype", float)).kind == "c"
    ):
        # As in memory (scikit-learn's check), not silently real: astype
        # would drop the imaginary part. Read from the dtype, not the values.
        raise ValueError("Complex data not supported.")
    if isinstance(X._meta, np.ma.MaskedArray):
        # The values under the mask, as numpy reads an in-memory masked X
        # (the finiteness pass reads them too): masked chunks crashed some
        # kernels and were averaged without their masked entries by others
        # (review).
        X = X.map_blocks(np.ma.getdata, dtype=X.dtype, meta=np.empty((0, 0), X.dtype))
    dtypes = tuple(np.dtype(t) for t in np.atleast_1d(dtype))
    if X.dtype not in dtypes:
        X = X.map_blocks(_as_numbers, dtypes[0], dtype=dtypes[0])
    y = _as_rows(y, X)
    if y is not None and isinstance(y._meta, np.ma.MaskedArray):
        y = y.map_blocks(np.ma.getdata, dtype=y.dtype, meta=np.empty((0,), y.dtype))
    if y is not None and y_numeric:
        # Every chunk, even of a y declared float64: a chunk of long double
        # (or objects) under that metadata held 1e400, finite there, and one
        # record turned a release into NaN (review). As float64 it is inf.
        y = y.map_blocks(_as_numbers, np.float64, dtype=np.float64)
    _check_n_features(estimator, X, reset=reset)
    checks = block_sum(
        _chunk_is_invalid,
        X,
        *([] if y is None else [y]),
        size=3 if y is None else 7,
        y_check=y_check,
        dtype=X.dtype,
        y_dtype=None if y is None else y.dtype,
    ).compute()
    if checks[-2]:
        # A chunk of another dtype than declared (a long double from
        # map_blocks) would pass the finiteness check with a value float64
        # cannot hold, then fail, clip or turn NaN depending on the estimator.
        raise ValueError(
            f"A chunk of X holds another dtype than X declares ({X.dtype}): "
            "make every chunk that dtype (e.g. X.astype(...) on a Dask array "
            "whose meta is right); nothing was fitted."
        )
    if int(checks[-1]) != int(X.shape[0]):
        # Public: the number of records, which the chunks' metadata declares
        # and the guarantee treats as public (the noise does not depend on it).
        raise ValueError(
            f"The chunks of X hold {int(checks[-1])} rows where their metadata "
            f"declares {int(X.shape[0])} (a from_delayed or map_blocks with "
            "wrong chunk sizes); nothing was fitted."
        )
    if y is not None and checks[4]:
        # y[rows] is sliced by X's chunks: extra values in a chunk of y were
        # ignored, missing ones gave numpy's broadcasting errors (review).
        raise ValueError(Y_ROWS_MESSAGE)
    if checks[0]:
        raise ValueError(
            "Input X contains NaN or infinity (in at least one chunk); nothing "
            "was fitted."
        )
    if y is not None and checks[1]:
        raise ValueError(
            "Input y contains NaN or infinity (in at least one chunk); nothing "
            "was fitted."
        )
    if y is not None and checks[3]:
        raise ValueError(
            f"A chunk of y holds another dtype than y declares ({y.dtype}): "
            "make every chunk that dtype; nothing was fitted."
        )
    if y is not None and checks[2]:
        raise ValueError(y_message)
    return X, y


def _check_n_features(estimator, X, *, reset):
    d = int(X.shape[1])
    if reset:
        estimator.n_features_in_ = d
        if hasattr(estimator, "feature_names_in_"):
            del estimator.feature_names_in_
        return
    expected = getattr(estimator, "n_features_in_", d)
    if d != expected:
        raise ValueError(
            f"X has {d} features, but {type(estimator).__name__} is expecting "
            f"{expected} features as input."
        )


class _RowsOf:
    """``method`` on one chunk; a chunk of no rows (a boolean filter's, after
    ``compute_chunk_sizes()``) gives no rows of the output, which
    scikit-learn's validation would refuse (picklable)."""

    def __init__(self, method, empty):
        self.method, self.empty = method, empty

    def __call__(self, block):
        return self.method(block) if block.shape[0] else self.empty


def map_rows(method, estimator, X, *, accept_sparse=False, n_features=None):
    """``method`` applied to every row chunk of X: a lazy Dask array.

    As dask-ml's ``ParallelPostFit`` does: the fitted estimator is shipped
    with the task, and each chunk is predicted (or transformed) by the
    in-memory method, which validates it. The output's dtype and number of
    columns are read from the method's answer on one row of zeros (public).
    ``n_features``: the width ``method`` takes, when not the estimator's
    ``n_features_in_`` (an ``inverse_transform`` takes the components).
    """
    X = row_chunks(X, accept_sparse=accept_sparse)
    if n_features is None:
        _check_n_features(estimator, X, reset=False)
    elif X.shape[1] != n_features:
        raise ValueError(
            f"X has {X.shape[1]} features, but {type(estimator).__name__} is "
            f"expecting {n_features} features as input."
        )
    probe = np.asarray(method(np.zeros((1, X.shape[1]), dtype=X.dtype)))
    rows = _RowsOf(method, np.empty((0, *probe.shape[1:]), probe.dtype))
    if probe.ndim == 1:
        return X.map_blocks(
            rows, drop_axis=1, dtype=probe.dtype, meta=np.empty((0,), probe.dtype)
        )
    return X.map_blocks(
        rows,
        chunks=(X.chunks[0], (probe.shape[1],)),
        dtype=probe.dtype,
        meta=np.empty((0, 0), probe.dtype),
    )


def score(estimator, X, y, sample_weight=None):
    """``estimator.score`` on a Dask X in one pass: accuracy or R².

    Each chunk is predicted where it lives and reduced, per output, to four
    floats (weight, weighted mean of y, weighted sum of squares about that
    mean, weighted squared error; for a classifier, weight and weighted
    hits); the client combines the chunks' moments pairwise (Chan, Golub &
    LeVeque 1979), which loses no precision to a large offset in y. The same
    values as scikit-learn's ``accuracy_score`` and ``r2_score`` (several
    outputs: their R² averaged uniformly) to rounding. A score is an
    evaluation, not a private release.
    """
    from sklearn.base import is_classifier

    X = row_chunks(X, accept_sparse=True)
    _check_n_features(estimator, X, reset=False)
    weights = [] if sample_weight is None else [_as_rows(sample_weight, X, "w")]
    if is_classifier(estimator):
        hits, weight = block_sum(
            _chunk_hits, X, _as_rows(y, X), *weights, size=2, estimator=estimator
        ).compute()
        return float(hits / weight)
    y = y if is_dask_array(y) else np.asarray(y)
    if y.ndim == 2:
        columns = [_as_rows(y[:, j], X) for j in range(y.shape[1])]
    else:
        columns = [_as_rows(y, X)]
    k = len(columns)
    parts = block_parts(
        _chunk_moments,
        X,
        *columns,
        *weights,
        size=4 * k,
        estimator=estimator,
        n_outputs=k,
    ).compute()
    scores = []
    for j in range(k):
        _, _, ss_tot, sse = _combine_moments(parts[:, 4 * j : 4 * j + 4])
        if ss_tot == 0.0:  # scikit-learn's convention for a constant y
            scores.append(1.0 if sse == 0.0 else 0.0)
        else:
            scores.append(1.0 - sse / ss_tot)
    return float(np.mean(scores))


def _chunk_hits(X, y, w=None, *, estimator):
    if X.shape[0] == 0:  # a chunk a filter emptied (see _RowsOf)
        return np.zeros(2)
    w = np.ones(y.shape[0]) if w is None else w
    return np.array([np.sum(w * (estimator.predict(X) == y)), np.sum(w)])


def _chunk_moments(X, *rows, estimator, n_outputs):
    """Per output: (weight, mean, Σw(y − mean)², SSE); ``rows`` are the
    ``n_outputs`` columns of y, then the weights if given."""
    k = n_outputs
    if X.shape[0] == 0:  # a chunk a filter emptied: weight 0 (see _RowsOf)
        return np.zeros(4 * k)
    predicted = np.asarray(estimator.predict(X), dtype=np.float64)
    if predicted.size != X.shape[0] * k:
        raise ValueError(
            f"y has {k} output(s) but the model predicts "
            f"{predicted.size // max(X.shape[0], 1)}."
        )
    predicted = predicted.reshape(X.shape[0], k)
    w = rows[k] if len(rows) > k else np.ones(X.shape[0])
    w = np.asarray(w, dtype=np.float64)
    weight = np.sum(w)
    out = []
    for j in range(k):
        y = np.asarray(rows[j], dtype=np.float64)
        mean = np.sum(w * y) / weight if weight > 0 else 0.0
        error = predicted[:, j] - y
        out += [weight, mean, np.sum(w * (y - mean) ** 2), np.sum(w * error**2)]
    return np.array(out)


def _combine_moments(parts):
    """(W, mean, Σw(y − mean)², SSE) of all chunks from each chunk's four."""
    weight, mean, ss, sse = parts[0]
    for w_c, mean_c, ss_c, sse_c in parts[1:]:
        total = weight + w_c
        if total > 0:
            shift = mean_c - mean
            ss += ss_c + shift * shift * weight * w_c / total
            mean += shift * w_c / total
        weight, sse = total, sse + sse_c
    return weight, mean, ss, sse


# ---------------------------------------------------------------------------
# DP-GD
# ---------------------------------------------------------------------------


#: Fan-in of the tree in which the chunks' sums are added.
_FAN_IN = 32


def _chunk_design(X):
    """A chunk as the engine's per-block code reads it, prepared at every step.

    Sparse: canonical CSR (duplicates merged, so that the clip and ``X @
    coef`` read the same row: :func:`skdp._dpgd.canonical_design`). Dense: as
    stored, in its own memory order. The in-memory engine copies a row-major
    float64 X to Fortran order once per fit; here the copy would be made
    again at every step (a Dask chunk is not kept between steps unless the
    user persisted it): copy and pass took 3.6-4 times the pass over a
    Fortran-ordered chunk, and the pass over the row-major chunk as stored
    1.0-1.2 times (10⁵ × 50, one BLAS thread; ``benchmarks/bench_dask.py``).
    """
    return _clipping.canonical_design(X) if sp.issparse(X) else X


def _chunk_row_norms(X, fit_intercept):
    """Row norms of one chunk as the in-memory engine computes them."""
    return _clipping.row_norms(_chunk_design(X), fit_intercept)


def _add(*parts):
    """The sum of a few chunks' results, added in their order."""
    total = np.array(parts[0], dtype=np.float64)
    for part in parts[1:]:
        total += part
    return total


class RowChunks:
    """X's row chunks, with 1-D arrays chunked like them, for repeated passes.

    Each pass (:meth:`sum`) is a graph of one task per chunk,
    ``fn(X_chunk, *row_chunks, start=first_row, **kwargs)``, and a tree of
    additions (fan-in 32) on the workers down to at most 32 partial sums,
    which the client receives and adds: one ``compute``, at most 32 small
    arrays to the client whatever n. The graphs of X and of the row
    arrays are optimised once, here (``to_delayed``): rebuilding an array
    graph with ``map_blocks`` and ``sum`` and optimising it again at every
    step cost 16 ms a step, against 3-5 ms now, on 5 chunks of 1000 rows
    (threaded scheduler, loaded 2-core machine). Values computed once per
    fit beside each chunk (:meth:`keep`) are persisted where the scheduler
    keeps results: on the chunk's worker, for a distributed cluster.

    On a ``dask.distributed`` client, when every part of every chunk is
    already held by a worker (X persisted; the kept values are), the second
    pass starts one :class:`_ChunkActor` on each worker that holds chunks
    and every later pass is a call to each actor (:meth:`_actor_sum`), which
    returns its chunks' results one by one; the client adds all of them in the
    graph's order (groups of 32, then the groups' sums): the same float
    operations, so the same total to the last bit. The client then receives
    ``(d + 1)·k`` floats per chunk a step instead of per group of 32: 0.8 MB
    a step at 1000 chunks of d = 100, and no task graph. A lazy X (computed
    from its graph at every pass) is read by the graph, as is every pass
    after an actor's failure (a lost worker: the scheduler can recompute
    what the graph needs; nothing was released, the noise comes after the
    sum). The actors hold the chunks' arrays (the worker's own, not copies)
    until the fit ends, so a worker cannot spill them meanwhile.
    """

    def __init__(self, X, *rows):
        parts = [a.to_delayed(optimize_graph=True).ravel() for a in (X, *rows)]
        self.parts = list(zip(*parts, strict=True))
        # The futures of persisted chunks, by key (a persisted array's
        # chunks are delayed objects whose graph no longer holds them).
        self.futures = _futures_by_key(X, *rows)
        sizes = X.chunks[0]
        self.starts = [int(s) for s in np.cumsum((0, *sizes[:-1]))]

    def keep(self, fn, **kwargs):
        """X's chunks, each beside ``fn(X_chunk, *row_chunks, **kwargs)``, kept.

        One pass computes ``fn`` on every chunk and persists the results;
        the returned :class:`RowChunks` passes ``(X_chunk, result)`` to each
        later pass's ``fn``. Each result is computed by a task that reads X's
        chunk, so a distributed scheduler runs it on the worker that holds
        the chunk and keeps it there: later passes find both in one place
        and move no data between workers.
        """
        name = f"skdp-{fn.__name__}-{uuid.uuid4().hex}"
        task = dask.delayed(
            functools.partial(_clipping.quietly, fn, **kwargs), pure=False
        )
        kept = [
            task(*parts, dask_key_name=(name, i)) for i, parts in enumerate(self.parts)
        ]
        with _one_blas_thread():
            kept = dask.persist(*kept)
        out = copy.copy(self)
        out.parts = [(parts[0], k) for parts, k in zip(self.parts, kept, strict=True)]
        out.futures = {**self.futures, **_futures_by_key(*kept)}
        return out

    def sum(self, fn, **kwargs):
        """``Σ_chunks fn(X_chunk, *row_chunks, start=..., **kwargs)``, computed.

        ``fn`` returns a float64 array of the same shape for every chunk;
        ``start`` is the chunk's first row in X. The per-chunk results are
        added in a tree on the workers, and its last level (at most 32
        arrays) on the client. On a ``dask.distributed`` cluster whose
        workers hold every chunk (X persisted), the chunks are read by
        actors instead (:meth:`_actor_sum`): the same per-chunk results,
        added in the same order, without a task graph per step.
        """
        with _one_blas_thread():
            actors = self._actors()
            if actors is not None:
                try:
                    return self._actor_sum(actors, fn, kwargs)
                except Exception:
                    # A lost worker (or its actor): the graph, which the
                    # scheduler can recompute, for this pass and the next.
                    # Nothing was released: the noise comes after the sum.
                    self._drop_actors()
            return self._graph_sum(fn, kwargs)

    def _graph_sum(self, fn, kwargs):
        """The pass as a graph: a task per chunk and a tree of additions."""
        # A fresh name instead of a hash of the arguments: they change at
        # every step anyway, and hashing them (a pickle of the datafit and
        # the iterate) cost more than the step on small data.
        name = f"skdp-{fn.__name__}-{uuid.uuid4().hex}"
        level = [
            dask.delayed(
                functools.partial(_clipping.quietly, fn, start=start, **kwargs),
                pure=False,
            )(*parts, dask_key_name=(name, 0, i))
            for i, (parts, start) in enumerate(
                zip(self.parts, self.starts, strict=True)
            )
        ]
        add = dask.delayed(_add, pure=False)
        level = _fan_in(
            level,
            lambda group, depth, i: add(*group, dask_key_name=(name, depth, i)),
        )
        parts = dask.compute(*level)
        # The last (at most 32) additions on the client: one hop less than a
        # root task on a worker, for at most 32 small arrays.
        return _add(*parts)

    # -- dask.distributed: one actor per worker --------------------------------

    _actor_state = None  # None: not tried; False: not applicable; else a tuple
    _passes = 0

    def _actors(self):
        """This pass's actors, started on the second pass (a single pass,
        as :func:`clipped_gradient_sum` makes, is cheaper as a graph than
        starting actors) of a distributed scheduler whose workers hold every
        part of every chunk; else None."""
        self._passes += 1
        client = _distributed_client()
        if client is None or self._passes < 2 or _in_a_task():
            return None
        if self._actor_state is None:
            try:
                self._actor_state = _start_actors(
                    client, self.parts, self.starts, self.futures
                )
            except Exception:  # e.g. a worker lost meanwhile: the graph
                self._actor_state = False
            if self._actor_state:
                # The actors end with this object (at the end of the fit):
                # their futures are in a reference cycle of distributed's,
                # which would keep them (and the chunks) until a collection.
                weakref.finalize(self, _release, *self._actor_state[1:])
        if not self._actor_state or self._actor_state[0] is not client:
            return None
        return self._actor_state[2]

    def _drop_actors(self):
        if self._actor_state:
            _release(*self._actor_state[1:])
        self._actor_state = False

    def _actor_sum(self, actors, fn, kwargs):
        """The pass on the actors: each reads the chunks of its worker, as
        stored, and returns their results one by one; the client adds them
        in chunk order, in the graph's tree (groups of 32, then the groups'
        sums), so that the total is the graph's to the last bit."""
        calls = [actor.sums(fn, kwargs) for actor in actors]
        parts = [None] * len(self.parts)
        for call in calls:
            for i, part in call.result():
                parts[i] = part
        return _add(*_fan_in(parts, lambda group, depth, i: _add(*group)))


def _fan_in(level, add):
    """Add ``level`` in groups of ``_FAN_IN``, level by level, until at most
    ``_FAN_IN`` items are left (``add(group, depth, index)``): the one tree
    of both ways of a pass, so that their totals agree to the last bit."""
    depth = 0
    while len(level) > _FAN_IN:
        depth += 1
        level = [
            add(level[i : i + _FAN_IN], depth, i) for i in range(0, len(level), _FAN_IN)
        ]
    return level


def _release(handles, actors):
    """Release the actors' futures (ours and the proxies' own): the workers
    drop the actors and their references to the chunks."""
    for future in [*handles, *(getattr(a, "_future", None) for a in actors)]:
        if future is not None:
            future.release()


def _distributed_client():
    """The ``dask.distributed`` client that ``compute`` would use, or None."""
    import sys

    if "distributed" not in sys.modules:  # no client without the import
        return None
    from distributed import Client

    client = getattr(dask.base.get_scheduler(), "__self__", None)
    return client if isinstance(client, Client) else None


def _in_a_task():
    """Whether this code runs in a ``dask.distributed`` task (a fit inside a
    task: its actors could wait for the thread that waits for them)."""
    from distributed import get_worker

    try:
        get_worker()
    except ValueError:
        return False
    return True


def _futures_by_key(*collections):
    """``{key: future}`` of the ``dask.distributed`` futures in the collections."""
    import sys

    if "distributed" not in sys.modules:
        return {}
    from distributed import futures_of

    return {f.key: f for c in collections for f in futures_of(c)}


def _start_actors(client, parts, starts, futures):
    """``(client, handles, actors)``: a :class:`_ChunkActor` on each worker
    that holds chunks, given them where they are; False unless every part of
    every chunk is a future (``futures``, by key) held by a worker: X
    persisted, the prepared values kept."""
    chunks = []
    for row in parts:
        if any(part.key not in futures for part in row):
            return False  # computed from a graph at every pass
        chunks.append([futures[part.key] for part in row])
    who_has = client.who_has([futures[0] for futures in chunks])
    by_worker = {}
    for i, futures in enumerate(chunks):
        holders = who_has.get(futures[0].key)
        if not holders:
            return False
        by_worker.setdefault(holders[0], []).append(i)
    handles = [
        client.submit(
            _ChunkActor,
            indices,
            [starts[i] for i in indices],
            *(f for i in indices for f in chunks[i]),
            workers=[worker],
            allow_other_workers=False,
            actor=True,
            pure=False,
        )
        for worker, indices in by_worker.items()
    ]
    return client, handles, [handle.result() for handle in handles]


class _ChunkActor:
    """The chunks of one worker, kept by a Dask actor for a fit's passes.

    Created by a task on the worker that holds the chunks, which hands it
    the chunks as stored (the same arrays, not copies). A pass is one call
    from the client to the actor (no task, no graph): the 5-task graph of a
    step cost 17-30 ms on a 2-core ``LocalCluster``, about the in-memory
    step, a call to the two actors 3-6 ms (``benchmarks/bench_dask.py``).
    The actor returns every chunk's result, which the client adds as the
    graph would; it runs the chunks on as many threads as the worker has.
    """

    def __init__(self, indices, starts, *parts):
        from distributed import get_worker

        per_chunk = len(parts) // len(indices)
        self.chunks = [
            (i, start, parts[j * per_chunk : (j + 1) * per_chunk])
            for j, (i, start) in enumerate(zip(indices, starts, strict=True))
        ]
        try:
            self.threads = get_worker().state.nthreads
        except (AttributeError, ValueError):
            self.threads = 1

    def sums(self, fn, kwargs):
        """``[(index, fn(*chunk, start=..., **kwargs)), ...]`` for its chunks."""

        def one(chunk):
            i, start, parts = chunk
            value = _clipping.quietly(fn, *parts, start=start, **kwargs)
            return i, np.asarray(value, dtype=np.float64)

        if self.threads > 1 and len(self.chunks) > 1:
            from concurrent.futures import ThreadPoolExecutor

            with ThreadPoolExecutor(min(self.threads, len(self.chunks))) as pool:
                return list(pool.map(one, self.chunks))
        return [one(chunk) for chunk in self.chunks]


_BLAS = {"lock": threading.Lock(), "controller": None, "limiter": None, "users": 0}


@contextlib.contextmanager
def _one_blas_thread():
    """This process's BLAS on one thread, for the duration of a pass.

    The chunks are the parallelism: the threaded scheduler (or a cluster's
    in-process workers) runs a chunk on each core, and a multithreaded BLAS
    inside each would put two or more BLAS threads on every core, which
    spin-wait for one another: a Dask step at n = 5·10⁵ took 0.85-1.2 s
    with OpenBLAS's two threads per task against 0.09-0.12 s with one, on a
    loaded 2-core machine. The client only waits meanwhile. Worker processes
    of a ``dask.distributed`` cluster already run BLAS on one thread (their
    nanny sets ``OPENBLAS_NUM_THREADS=1``). The limit is process-wide, so
    passes that overlap (fits in several client threads) share it: the
    first sets it, the last restores the original number of threads.
    """
    state = _BLAS
    with state["lock"]:
        if state["controller"] is None:
            from threadpoolctl import ThreadpoolController

            state["controller"] = ThreadpoolController()
        if state["users"] == 0:
            state["limiter"] = state["controller"].limit(limits=1, user_api="blas")
        state["users"] += 1
    try:
        yield
    finally:
        with state["lock"]:
            state["users"] -= 1
            if state["users"] == 0:
                state["limiter"].restore_original_limits()
                state["limiter"] = None


def _chunk_gradient_sum(
    X,
    y,
    row_norm=None,
    *,
    datafit,
    coef,
    intercept,
    clip_norm,
    scalar_norm,
    record,
    start,
    fit_intercept=None,
):
    """One chunk's clipped gradient sum: the in-memory engine on the chunk.

    The row norms: ``row_norm`` (a chunk of them), else ``scalar_norm``,
    else (both None) computed block by block from the values summed, the
    intercept's 1 included if ``fit_intercept``
    (:func:`skdp._clipping.sum_over_row_blocks`).
    """
    skip = None
    if 0 <= record - start < X.shape[0]:
        skip = record - start
    return _clipping.sum_over_row_blocks(
        _chunk_design(X),
        y,
        datafit,
        coef,
        intercept,
        scalar_norm if row_norm is None else row_norm,
        clip_norm,
        skip=skip,
        fit_intercept=fit_intercept,
    )


def _prepare_rows(X, y, *, fit_intercept):
    """What a step reads of a chunk besides X: y as given (the datafit's
    encoding) and, with ``fit_intercept`` not None, the row norms (the
    intercept's 1 included if True)."""
    if fit_intercept is None:
        return (np.asarray(y),)
    return np.asarray(y), _chunk_row_norms(X, fit_intercept)


def _chunk_prepared_gradient_sum(X, prepared, **kwargs):
    """:func:`_chunk_gradient_sum` of a chunk and its :func:`_prepare_rows`
    (without kept norms, those of the values this step reads)."""
    return _chunk_gradient_sum(X, *prepared, **kwargs)


def _holds_its_values(X):
    """Whether every chunk of X is a value its graph holds (an in-memory
    array, or a future of a persisted one), not a task computed anew at
    each pass. By structure: the same answer for every data set."""
    from dask.array import Array

    if not isinstance(X, Array):
        return False
    concrete = (np.ndarray, sp.spmatrix, sp.sparray)
    for value in dict(X.__dask_graph__()).values():
        if not (isinstance(value, concrete) or type(value).__name__ == "Future"):
            return False
    return True


def _gradient_sum(
    chunks,
    X,
    datafit,
    coef,
    intercept,
    clip_norm,
    scalar_norm=None,
    *,
    kernel=None,
    **kernel_kwargs,
):
    """The clipped gradient sum over ``chunks`` (X, y and, unless
    ``scalar_norm`` is given, the row norms), with the audit hook."""
    hook = _clipping._INJECTED.get()
    total = chunks.sum(
        kernel or _chunk_gradient_sum,
        **kernel_kwargs,
        datafit=datafit,
        coef=coef,
        intercept=intercept,
        clip_norm=clip_norm,
        scalar_norm=scalar_norm,
        record=-1 if hook is None else int(hook.record),
    )
    if hook is not None:
        total += _clipping._injected_contribution(hook, X, total.shape, clip_norm)
    return total


def clipped_gradient_sum(X, y, datafit, coef, intercept, row_norm, clip_norm):
    """:func:`skdp._dpgd.clipped_gradient_sum` of a Dask X: one reduction.

    ``y`` and ``row_norm`` (unless a scalar) are 1-D Dask arrays chunked like
    X's rows. Each chunk runs :func:`skdp._dpgd.sum_over_row_blocks` (every
    record clipped to ``clip_norm`` where the chunk lives); ``(d + 1)·k``
    floats per chunk are summed and returned. No noise here: the caller adds
    it to the total, once. The audit hook (:func:`skdp._dpgd.injected_gradient`)
    is honoured as in memory: its record's row is left out in its chunk and
    the canary's clipped gradient is added here, on the client. (The DP-GD
    engine goes through :class:`DaskDesign`, which prepares y and the row
    norms once per fit; :class:`~skdp.DPSparseGLM`, whose rows share one
    norm bound, calls this at each step.)
    """
    if np.ndim(row_norm) == 0:
        chunks = RowChunks(X, y)
        return _gradient_sum(
            chunks, X, datafit, coef, intercept, clip_norm, float(row_norm)
        )
    return _gradient_sum(
        RowChunks(X, y, row_norm), X, datafit, coef, intercept, clip_norm
    )


class DaskDesign:
    """:class:`skdp._dpgd.InMemoryDesign` for a Dask X: one reduction per step.

    Prepared once per fit, in one pass: y as the datafit reads it and,
    where X's graph holds its chunks' values (:func:`_holds_its_values`: an
    array in memory, or persisted), the row norms (intercept included),
    persisted beside the chunk (:meth:`RowChunks.keep`; on the worker that
    holds it, for a distributed cluster: 16 bytes a row), and X's graph
    optimised once. A chunk that is a task is computed anew at every step,
    and a graph need not give the same values twice (a ``map_blocks`` that
    draws random numbers, a store that changes): norms kept from an earlier
    pass clipped one record's contribution to norm 500 for a clip of 1
    (review). There the norms are computed in each step's task from the
    values it sums, block by block while each is in cache (+30% per step
    at 5·10⁵ x 50).
    Each :meth:`gradient_sum` is then one pass over X, one task per chunk
    where the chunk lives, and one ``compute`` (on a distributed cluster
    holding X: one call to an actor per worker, :class:`RowChunks`). X and
    y must have passed :func:`validate` (finite values, matching row
    chunks).
    """

    def __init__(self, X, y, *, fit_intercept):
        X = row_chunks(X, accept_sparse=True)
        self.X = X
        self.shape = (int(X.shape[0]), int(X.shape[1]))
        chunks = RowChunks(X, _as_rows(y, X))
        self._norms_kept = _holds_its_values(X)
        self._chunks = chunks.keep(
            _prepare_rows, fit_intercept=fit_intercept if self._norms_kept else None
        )
        self._fit_intercept = None if self._norms_kept else fit_intercept

    def gradient_sum(self, datafit, coef, intercept, clip_norm):
        """``Σ_i clip_C(∇ℓ_i)`` at ``(coef, intercept)``, shape ``(d + 1, k)``."""
        return _gradient_sum(
            self._chunks,
            self.X,
            datafit,
            coef,
            intercept,
            clip_norm,
            kernel=_chunk_prepared_gradient_sum,
            fit_intercept=self._fit_intercept,
        )
