"""Pieces shared by every skdp estimator: privacy parameters, budgets, fits.

Every DP estimator subclasses :class:`DPEstimatorMixin` and decorates ``fit``
with :func:`private_fit`. Together they keep the contract the rest of skdp
(the ledger, the private search, the audit) relies on: a fit never spends
more than :meth:`DPEstimatorMixin.privacy_budget` declares from the
parameters alone, and its ``privacy_spent_`` says which seeded noise stream
it drew from and what it assumed public.
"""

import contextlib
import contextvars
import functools
import inspect
import itertools
import os
import traceback
import warnings
import weakref
from dataclasses import replace
from numbers import Real
from typing import NamedTuple

import numpy as np
import scipy.sparse as sp
from numpy.exceptions import ComplexWarning
from sklearn import config_context
from sklearn.utils._param_validation import (
    Interval,
    InvalidParameterError,
    StrOptions,
)

from ._clipping import quiet_floats
from ._inputs import (  # noqa: F401  (is_dask_array, is_sparse_input re-exported)
    NOT_NUMBERS_MESSAGE,
    is_dask_array,
    is_sparse_input,
)
from .accounting import (
    REPLACE_ONE,
    REPLACE_ONE_USER,
    PrivacyCost,
    epsilon_from_mu,
    mu_from_epsilon,
    zcdp_from_epsilon_tight,
)
from .exceptions import MechanismFailedError, PrivacyLeakWarning
from .mechanisms import NOISE_SAMPLERS, check_secure_seed, noise_seed_id

#: The caveat of a fit whose label set was read from y (``classes=None``).
PUBLIC_LABELS = "the label set read from the training labels is public"

#: Parameter constraints every DP estimator shares; extend with ``**``.
#: ``random_state`` also takes a :class:`numpy.random.Generator` (see
#: :func:`skdp.mechanisms.as_generator`).
#:
#: ``noise`` (every estimator's parameter ``noise : {"fast", "secure"},
#: default="fast"``, documented as :data:`NOISE_PARAMETER_DOC`) chooses the
#: sampler of every privacy noise draw of a fit: numpy's floating-point
#: PCG64 path, or exact discrete Gaussian / Laplace noise on a grid from the
#: OS CSPRNG (:class:`skdp.mechanisms.SecureNoise`). It is a parameter, not a
#: global setting, so that it travels with the estimator through ``clone``,
#: pickling and joblib worker processes (a global switch would silently fall
#: back to fast noise in a ``GridSearchCV(n_jobs=2)`` worker). Secure noise
#: refuses a ``random_state`` other than None (:func:`private_fit`).
PRIVACY_CONSTRAINTS = {
    "epsilon": [Interval(Real, 0, None, closed="neither")],
    "delta": [Interval(Real, 0, 1, closed="left")],
    "accounting": [StrOptions({"exact", "paper"})],
    "random_state": ["random_state", np.random.Generator],
    "noise": [StrOptions({"fast", "secure"})],
}

#: The largest clipping constant a DP estimator takes (``clip_norm``,
#: ``target_clip``, ``x_bound``, a search's ``score_bound`` ...). A release
#: sums n clipped terms, or products of two (a Gram matrix holds squares): up
#: to 1e100 each, such sums and their noise stay far inside float64 (1.8e308)
#: for any n below 1e100, so whether a sum overflows never depends on the
#: data (at 1e153, n = 180 records at the clip sum to inf where their
#: neighbour with one record at 0 does not: a release one record decides).
MAX_CLIP = 1e100
#: The smallest clipping constant, for the same reason at the other end: a
#: sensitivity is the clip or its square, and below 1e-154 the square (and so
#: the noise's scale) underflows to a subnormal or to 0, a release with no
#: noise. At 1e-100 the square, times any noise multiplier, stays normal.
MIN_CLIP = 1e-100
#: The constraint of every clipping constant: in [MIN_CLIP, MAX_CLIP].
CLIP_CONSTRAINT = Interval(Real, MIN_CLIP, MAX_CLIP, closed="both")

#: The docstring entry of ``noise``, the same in every estimator (each
#: docstring repeats it; tests/test_secure_noise.py checks that the copies match).
NOISE_PARAMETER_DOC = """noise : {"fast", "secure"}, default="fast"
    Sampler of the privacy noise. ``"fast"``: numpy's floating-point
    sampler (PCG64), not hardened against floating-point attacks on the
    low-order bits of a release. ``"secure"``: every noisy value is rounded
    to a power-of-two grid and gets exact discrete Gaussian (or Laplace)
    noise drawn from the operating system's CSPRNG; the rounding is paid
    for in the calibration (6-11% more noise at the same ε) and each draw
    is 20-45 times slower than numpy's. Requires ``random_state=None``.
    See :ref:`secure_noise`."""

#: The end of the docstring entry of ``noise_multiplier_``, the same in every
#: estimator that has one (tests/test_secure_noise.py checks the copies).
SECURE_MULTIPLIER_NOTE = """The composition stated here is that of
``noise="fast"``. Secure noise is composed in zCDP instead: each release
is ``(1/z + 2^-16)²/2``-zCDP for its own multiplier z (the grid
rounding's slack, :func:`~skdp.accounting.secure_noise_cost`), and
``privacy_spent_.zcdp`` is their sum; a GDP accountant given this
multiplier understates it."""


def require_positive_delta(estimator):
    """Gaussian mechanisms need δ > 0: say so before any work is done."""
    if estimator.delta == 0:
        raise ValueError(
            f"{type(estimator).__name__} adds Gaussian noise, which cannot be "
            "(epsilon, 0)-DP: set delta > 0 (e.g. 1e-5, well below 1/n_samples)."
        )


def warn_if_delta_is_large(estimator, n_samples, *, stacklevel=5, unit="record"):
    """Warn when ``delta >= 1/n_samples`` (n is public).

    An (ε, δ)-DP mechanism may publish each record outright with probability
    δ, so at δ ≥ 1/n it may publish one record (in expectation) and still meet
    its guarantee. ``unit``: what n counts, and what one release may reveal
    ("user" for user-level estimators). ``stacklevel``: 5 when called from a
    ``fit`` under its two decorators (the warning points at the caller of
    fit); one more per helper in between.
    """
    if estimator.delta >= 1.0 / n_samples:
        n = "n_samples" if unit == "record" else f"n_{unit}s"
        warnings.warn(
            f"delta={estimator.delta:g} is at least 1/{n} = "
            f"{1.0 / n_samples:.3g}: a mechanism with this guarantee may reveal a "
            f"whole {unit}'s data. Use delta well below 1/{n} (e.g. 1/n**1.5).",
            PrivacyLeakWarning,
            stacklevel=stacklevel,
        )


def sum_over_rows(fn, X, shape, *, rows=(), **kwargs):
    """``fn(X, *rows, **kwargs)``, a sum over X's rows, computed where X lives.

    In memory, ``fn`` is called on X (and the 1-D arrays ``rows``, one entry
    per row of X, e.g. the labels). For a Dask X, ``fn`` is called on every
    row chunk (where the chunk lives, with the matching chunks of ``rows``,
    which must be Dask arrays chunked like X's rows) and the results, of
    shape ``shape``, are added in a tree: one pass over the data, whose
    answer (``shape`` floats) is returned to the caller as a numpy array.
    ``fn`` must be a sum of per-row terms (so that the two agree up to
    rounding), and picklable.
    """
    if not is_dask_array(X):
        return fn(X, *rows, **kwargs)
    from . import _dask

    size = int(np.prod(shape))
    return _dask.block_sum(fn, X, *rows, size=size, **kwargs).compute().reshape(shape)


class labels_in:
    """Chunk check of a Dask y: every label is one of ``classes`` (picklable)."""

    def __init__(self, classes):
        self.classes = classes

    def __call__(self, y):
        return bool(np.isin(y, self.classes).all())


def unique_labels(y):
    """The labels present in y (a Dask y: one pass, then checked as targets)."""
    if not is_dask_array(y):
        return np.unique(y)
    from sklearn.utils.multiclass import check_classification_targets

    classes = np.unique(y.map_blocks(np.unique, dtype=y.dtype).compute())
    check_classification_targets(classes)
    return classes


def check_targets(estimator, y):
    """scikit-learn's check of classification targets, on what is public.

    With ``classes`` declared, the labels in y are private: scikit-learn's
    verdict on y itself ("continuous" as soon as one label is not integral,
    a warning when more than half the labels are distinct) is one record's
    to flip between two declared labels, so y is not typed here; the
    declared set is (:func:`declared_classes`) and y is checked against it
    (:func:`label_set`). With ``classes=None`` the labels in y are public by
    the caveat and y is checked as scikit-learn checks it.
    """
    from sklearn.utils.multiclass import check_classification_targets

    if estimator.classes is None:
        check_classification_targets(y)


def declared_classes(classes):
    """A declared label set, sorted and checked as scikit-learn checks targets."""
    from sklearn.utils.multiclass import check_classification_targets

    classes = np.unique(np.asarray(classes))
    with warnings.catch_warnings():
        # "more than 50% of the samples are distinct classes": every label
        # of a declared set is distinct, which is no sign of a regression y.
        warnings.simplefilter("ignore", UserWarning)
        check_classification_targets(classes)
    return classes


def label_set(estimator, y, *, shapes, stacklevel=5):
    """The label set of a classifier's fit: declared, or read from y under the caveat.

    ``classes=None``: the labels present in y, with a
    :class:`~skdp.exceptions.PrivacyLeakWarning` naming what releases them
    (``classes_`` and ``shapes``). Declared: the sorted ``classes``, and y
    must hold only those (the message names no label: the labels in y are
    private; a Dask y was checked in its validation pass). At least two
    classes either way.
    """
    name = type(estimator).__name__
    if estimator.classes is None:
        warnings.warn(
            "The label set was inferred from y and is treated as public (it "
            f"is released in classes_ and shapes {shapes}). If which labels "
            "occur is private, pass classes=[...] declared in advance.",
            PrivacyLeakWarning,
            # 5: the caller of a fit that calls this (through two decorators)
            stacklevel=stacklevel,
        )
        classes = unique_labels(y)
    else:
        classes = declared_classes(estimator.classes)
        if not is_dask_array(y) and not np.isin(y, classes).all():
            raise ValueError("y contains labels that are not in the declared classes.")
    if classes.size < 2:
        raise ValueError(
            f"{name} needs at least 2 classes; "
            + ("y contains" if estimator.classes is None else "classes declares")
            + " only one class."
        )
    return classes


def class_indices(y, classes):
    """Each label's index in the sorted label set ``classes`` (y holds only those).

    Compared in the dtype of ``classes``: numpy's ``searchsorted`` of int64
    labels in uint64 classes compares through float64, which merges labels
    above 2**53 (declared classes 2**53 and 2**53 + 1 were counted as one;
    review). The labels are in ``classes`` (checked by :func:`label_set`),
    so the conversion is exact.
    """
    return np.searchsorted(classes, np.asarray(y).astype(classes.dtype, copy=False))


class DaskScoreMixin:
    """``score`` that also takes a Dask X, in one pass (before a scikit-learn
    classifier or regressor mixin in the bases)."""

    def score(self, X, y, sample_weight=None):
        """Accuracy (classifiers) or R² (regressors) of ``predict(X)`` against y.

        As scikit-learn's ``score``; on a ``dask.array.Array`` X, one pass
        over the chunks with a few floats per chunk sent to the client.

        Parameters
        ----------
        X : {array-like, sparse matrix, dask array} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        sample_weight : array-like of shape (n_samples,), default=None

        Returns
        -------
        score : float
        """
        if is_dask_array(X):
            from . import _dask

            return _dask.score(self, X, y, sample_weight)
        return super().score(X, y, sample_weight=sample_weight)


def dense_float_rows(X):
    """X (array-like or sparse) as dense float64: the few records of an audit."""
    return np.asarray(X.toarray() if sp.issparse(X) else X, dtype=float)


def with_ones_column(X):
    """Dense X with a last column of ones: the intercept's constant feature."""
    return np.hstack([X, np.ones((X.shape[0], 1))])


def fitted_attributes(estimator):
    """Names of the attributes that ``fit`` set (trailing underscore)."""
    return [k for k in vars(estimator) if k.endswith("_") and not k.startswith("__")]


class DPEstimatorMixin:
    """Mixin of every differentially private estimator.

    It is the capability by which skdp recognises a DP estimator (the ledger,
    the private search and the audit look for :meth:`privacy_budget`, never
    at module names), so a user's subclass is recognised too. Subclasses say
    how their guarantee is shaped by overriding ``_budget_is_gdp`` (False
    when some part of a fit is not Gaussian), ``_budget_is_zcdp`` (True when
    such a fit is accounted in zCDP) and ``_budget_adjacency``.
    """

    def _budget_is_gdp(self):
        return True

    def _budget_is_zcdp(self):
        """Whether a fit that is not Gaussian (``_budget_is_gdp`` False) is
        still accounted in zCDP, so that its budget composes in zCDP."""
        return False

    def _budget_adjacency(self):
        return REPLACE_ONE

    def _budget_caveats(self):
        """Assumptions beyond the adjacency that a fit with these parameters
        may rest on; by default, that a label set read from y is public."""
        return (PUBLIC_LABELS,) if _reads_label_set(self) else ()

    def _label_set_read_from(self, y):
        """The label set a fit on (part of) ``y`` would read from the labels,
        or None if it reads none (declared ``classes``, or no labels at all).

        A composite that fits this estimator on parts of y (the private
        search) reads it once from all of y and declares it, so that no part
        reads its own."""
        return np.unique(y) if PUBLIC_LABELS in self._budget_caveats() else None

    def _validate_params(self):
        """scikit-learn's parameter check, then :func:`refuse_fixed_width_scalars`."""
        super()._validate_params()
        refuse_fixed_width_scalars(self)

    def privacy_budget(self):
        """The most that one ``fit`` with the current parameters spends.

        Computed from the parameters alone, before any data is seen:
        ``mu_from_epsilon(epsilon, delta)``-GDP when every release of the fit
        is Gaussian (``zcdp_from_epsilon_tight(epsilon, delta)``-zCDP with
        ``noise="secure"``), else the pair (``epsilon``, ``delta``); under the
        adjacency the fit states its guarantee for. Every fit checks its
        ``privacy_spent_`` against this and refuses to release more
        (``skdp._base.private_fit``), so that a search can be totalled from its
        candidates' parameters.

        Returns
        -------
        PrivacyCost
        """
        epsilon, delta = float(self.epsilon), float(self.delta)
        name = type(self).__name__
        mechanism = f"declared budget of {name}"
        caveats = self._budget_caveats()
        adjacency = self._budget_adjacency()
        secure = getattr(self, "noise", "fast") == "secure"
        zcdp = self._budget_is_zcdp() or (self._budget_is_gdp() and secure)
        if zcdp and delta > 0:
            # Discrete Gaussian noise is accounted in zCDP (not GDP), and so
            # are fits whose releases are not all Gaussian but all zCDP.
            return PrivacyCost(
                epsilon,
                delta,
                None,
                adjacency,
                mechanism,
                caveats=caveats,
                zcdp=zcdp_from_epsilon_tight(epsilon, delta),
            )
        if self._budget_is_gdp() and delta > 0:
            return PrivacyCost(
                epsilon,
                delta,
                mu_from_epsilon(epsilon, delta),
                adjacency,
                mechanism,
                caveats=caveats,
            )
        return PrivacyCost(epsilon, delta, None, adjacency, mechanism, caveats=caveats)


def _reads_label_set(estimator):
    """Whether a fit reads its label set from y (a ``classes`` parameter left None)."""
    params = estimator.get_params(deep=False)
    return "classes" in params and params["classes"] is None


#: Adjacencies a fit may report instead of its budget's: a DPFedRep fit that
#: gets no user ids treats every row as a user (a record-level guarantee).
_ALSO_ACHIEVABLE = {REPLACE_ONE_USER: (REPLACE_ONE,)}


class BudgetCheckError(MechanismFailedError):
    """A fit's reported guarantee is not within its declared budget: a bug,
    decided by the parameters and public sizes, never by a noisy release
    (the private search lets it through, where a failed release is a loss)."""


def _check_within_budget(spent, budget, name):
    """Raise unless ``spent`` is no more than ``budget`` (see ``privacy_budget``)."""
    if spent.adjacency != budget.adjacency and spent.adjacency not in (
        _ALSO_ACHIEVABLE.get(budget.adjacency, ())
    ):
        raise BudgetCheckError(
            f"{name} stated its guarantee under '{spent.adjacency}' adjacency, "
            f"but its budget is declared under '{budget.adjacency}'."
        )
    slack = 1.0 + 1e-9
    if budget.mu is None and budget.zcdp is not None:
        within = spent.rho is not None and spent.rho <= budget.zcdp * slack
    elif budget.mu is not None:
        within = spent.mu is not None and spent.mu <= budget.mu * slack
    elif spent.mu is not None:
        within = epsilon_from_mu(spent.mu, budget.delta) <= budget.epsilon * slack
    else:
        within = (
            spent.epsilon <= budget.epsilon * slack
            and spent.delta <= budget.delta * slack
        )
    if not within:
        raise BudgetCheckError(
            f"{name} would release more than its declared budget ({spent} > "
            f"{budget}); nothing was released. This is a bug in skdp: please "
            "report it."
        )


#: The DP estimator whose fit runs in this context (set by private_fit):
#: :func:`check_cost_before_steps` reads its declared budget.
_RUNNING_FIT = contextvars.ContextVar("skdp_running_fit", default=None)


def check_cost_before_steps(cost):
    """Refuse, before any noisy step runs or is printed, a cost (all of the
    running fit's, or a part of it) above the fit's declared budget.

    :func:`private_fit` checks the whole cost after the fit, before anything
    is stored; but ``verbose`` prints private iterates while the fit runs,
    and an accounting bug would have shown them first. The engines call this
    once their cost is known, before their first step. Outside a
    ``private_fit`` (an engine called directly) it does nothing.
    """
    estimator = _RUNNING_FIT.get()
    if estimator is not None:
        _check_within_budget(cost, estimator.privacy_budget(), type(estimator).__name__)


#: What numpy's and scikit-learn's input errors that quote the data say
#: (their start), and what skdp says instead.
_VALUE_QUOTING_ERRORS = {
    "Complex data not supported": "Complex data not supported.",
    "could not convert": NOT_NUMBERS_MESSAGE,
    "Expected 2D array": (
        "Expected a 2D array, got a 1D array or a scalar (the values are "
        "not shown: they may be private). Reshape your data either using "
        "array.reshape(-1, 1) if your data has a single feature or "
        "array.reshape(1, -1) if it contains a single sample."
    ),
    "int too large to convert": (
        "The input holds a number beyond the float64 range (the value is not "
        "shown: it may be private); like NaN and infinity, such a value is "
        "refused: give finite float64 values."
    ),
    "invalid literal for": (
        "The input holds values that are not numbers (the value is not "
        "shown: it may be private)."
    ),
}


def _quotes_values(error):
    """skdp's message for an input error that quotes values, else None."""
    text = str(error)
    for start, message in _VALUE_QUOTING_ERRORS.items():
        if text.startswith(start):
            return message
    return None


def _chain(error):
    """The errors a traceback of ``error`` prints: it, then its causes."""
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


@contextlib.contextmanager
def silent_on_data():
    """Nothing about the data escapes but the release: no floating-point
    event, no input value in an error message.

    numpy's floating-point events depend on the data (finite records of
    ±1e308 make scikit-learn's finiteness check sum to inf − inf), and a
    warning one record can trigger is a release (an error under ``-W error``,
    or under the caller's ``np.errstate(all="raise")``): they are off. An
    input error of numpy or scikit-learn that quotes a value (a complex
    array printed whole, "could not convert string to float: '<value>'") is
    raised again as a ValueError that names none; an error whose chain of
    causes quotes one keeps its message and loses the chain.
    """
    try:
        with quiet_floats(), warnings.catch_warnings():
            # One record holding a complex number in an object array: the
            # conversion to float warns (and keeps the real part), where a
            # neighbour without one does not. The per-record rule stands,
            # silently (a complex array is refused by its dtype).
            warnings.simplefilter("ignore", ComplexWarning)
            yield
    except (ValueError, TypeError, OverflowError) as error:
        # (OverflowError: a Python int beyond float64 in an object array.)
        message = _quotes_values(error)
        if message is not None:
            raise ValueError(message) from None
        if any(_quotes_values(cause) for cause in _chain(error)):
            # scikit-learn re-raises numpy's "could not convert string to
            # float: '<the value>'" as its own error, and a traceback prints
            # the whole chain: keep the message, drop the chain.
            error.__cause__, error.__suppress_context__ = None, True
        raise


#: Appended to scikit-learn's error on NaN or infinite input, whose own hint
#: (an imputer, HistGradientBoosting) leads to a mean imputer, a release of
#: the data's means that the ledger then flags (review).
MISSING_VALUE_HINT = (
    "skdp: impute with a public constant, which reads nothing but the shape "
    "(SimpleImputer(strategy='constant', fill_value=..., "
    "keep_empty_features=True)); a fitted imputer (mean, median) releases "
    "statistics of the data outside the privacy budget."
)


def _add_missing_value_hint(error):
    """Name the private way to impute in an input error about NaN or inf."""
    if not isinstance(error, ValueError) or len(error.args) != 1:
        return
    message = error.args[0]
    if isinstance(message, str) and "contains NaN" in message:
        if MISSING_VALUE_HINT not in message:
            error.args = (f"{message}\n{MISSING_VALUE_HINT}",)


def _clear_frame_locals(error):
    """Clear the local variables of the finished frames in ``error``'s
    traceback (and in those of the errors it chains), keeping its lines.

    Any error can leave a fit after the noise was drawn (a warning the
    caller's filter turns into an error, an interrupt): the fit's frames
    held the exact statistics before their noise (DPLinearRegression's
    clipped Gram matrix, DPPCA's covariance) and the noise generator, and
    error reporters that record frame locals would send them on (review).
    """
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        traceback.clear_frames(error.__traceback__)  # skips running frames
        error = error.__cause__ or error.__context__


def _drop_hidden_context(error):
    """Forget the error an exception replaced (``raise ... from None`` only
    hides it from tracebacks: ``__context__`` still holds it, with the value
    it quoted). Called where the exception leaves skdp, outside the ``with``
    whose exit raised it."""
    if error.__suppress_context__:
        error.__context__ = None


#: The attribute in which every successful DP fit leaves its
#: :class:`FitStamp`, so that the ledger can tell a step fitted again after
#: the steps fitted on its output, or a step fitted on the output of another
#: step than the one its pipeline holds (:func:`skdp._ledger.check_fit_order`).
FIT_STAMP = "_skdp_fit_stamp"
_FIT_COUNTER = itertools.count()
#: (data address, shape) of an array a DP ``transform`` returned -> (a weak
#: reference to it, the ``when`` of that DP fit): where a fit's input came
#: from, also through a pandas frame that wraps the array (set_output).
_PRODUCED = {}


class FitStamp(NamedTuple):
    """In which order DP fits ended, and which DP release a fit's input
    came from.

    ``when`` is (a random token of the process, a per-process counter): it
    orders the fits of one process and holds no clock (the time between two stamps would
    measure the work in between, e.g. the secret number of runs of a private
    search). ``input_from`` is the ``when`` of the DP transformer whose
    ``transform`` returned the fit's X (a pipeline's previous step), or None
    if X came from anything else (a plain step's output, the user's data,
    a copy). The runs of a private search are not stamped (a counter would
    count them); the search stamps the model it releases
    (:func:`stamp_release`).
    """

    when: tuple
    input_from: tuple | None


#: A random token of this process (drawn again in a forked child): process
#: ids repeat (pid 1 in every container), and two processes' counters must
#: never be compared.
_PROCESS = os.urandom(8).hex()


def _new_process_token():
    global _PROCESS
    _PROCESS = os.urandom(8).hex()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_new_process_token)


def _new_stamp(input_from):
    return FitStamp((_PROCESS, next(_FIT_COUNTER)), input_from)


def _buffer_key(X):
    """(data address, shape) of X's values, for an ndarray or a pandas frame
    (read without a copy), the graph's name of a Dask array; None for
    anything else, or if it would copy."""
    if is_dask_array(X):
        return ("dask", X.name, X.shape)
    if hasattr(X, "iloc") and hasattr(X, "to_numpy"):
        try:
            X = X.to_numpy(copy=False)
        except (TypeError, ValueError):
            return None
    if not isinstance(X, np.ndarray) or X.size == 0:
        return None
    return (X.__array_interface__["data"][0], X.shape)


def _record_output(out, transformer):
    """Remember that ``transformer``'s release produced ``out``."""
    stamp = getattr(transformer, FIT_STAMP, None)
    key = _buffer_key(out)
    if not isinstance(stamp, FitStamp) or key is None:
        return

    def forget(ref, key=key):
        if _PRODUCED.get(key, (None,))[0] is ref:
            del _PRODUCED[key]

    _PRODUCED[key] = (weakref.ref(out, forget), stamp.when)


def _produced_by(X):
    """The ``when`` of the DP release whose transform returned X's values
    (X itself, or a pandas frame around them), or None."""
    key = _buffer_key(X)
    entry = None if key is None else _PRODUCED.get(key)
    return entry[1] if entry is not None and entry[0]() is not None else None


def stamp_release(parts):
    """Stamp ``parts`` (DP estimators fitted in this order, unstamped) as
    if fitted one after another now: the model a private search releases.
    Where each one's input came from is not known (its run was not
    stamped, nor its inputs recorded), so the ledger checks their order
    only; chaining them would invent a flow across parallel branches."""
    for part in parts:
        setattr(part, FIT_STAMP, _new_stamp(None))


def scaled_product(X, M):
    """``X @ M`` with each row of X first divided by a power of two near its
    largest entry, then multiplied back: the partial sums of a row near the
    float range cannot overflow to +inf and −inf (NaN). Exact scaling, but
    for entries below 2^-1074 of their row's largest, flushed to 0."""
    _, exponent = np.frexp(np.max(np.abs(X), axis=1, initial=0.0))
    scale = np.ldexp(1.0, exponent - 1)[:, None]  # 2^1024 would be inf
    return ((X / scale) @ M) * scale


def private_transform(transform):
    """Decorate a DP transformer's ``transform`` (and ``inverse_transform``):
    finite out for finite in, and nothing about the data in a warning or an
    error.

    A pipeline's fit runs ``transform`` on the training data and hands the
    result to the next (DP) step. A record of 1e308 scaled by more than 1
    overflowed to inf, which that step refused: an error one record's value
    decides, where its neighbour fits (ε = ∞ for that pair). An overflow is
    clipped to the largest float of its sign instead (the next step clips
    that record like any other), a NaN read as 0, and the arithmetic runs under
    :func:`silent_on_data`. A Dask output is lazy: each chunk runs this.
    """

    @functools.wraps(transform)
    def wrapper(self, X, *args, **kwargs):
        try:
            with silent_on_data():
                out = transform(self, X, *args, **kwargs)
        except (ValueError, TypeError) as error:
            _drop_hidden_context(error)
            raise
        if isinstance(out, np.ndarray) and out.dtype.kind == "f":
            # NaN (inf − inf in a product's partial sums) is read as 0: a
            # rule on each entry, as the clip of an overflow is.
            largest = np.finfo(out.dtype).max
            np.nan_to_num(out, copy=False, nan=0.0, posinf=largest, neginf=-largest)
        _record_output(out, self)
        return out

    return wrapper


def always_validated(release):
    """Decorate a release function (above scikit-learn's ``validate_params``)
    so that its parameters are checked even under
    ``skip_parameter_validation=True``: they guard the guarantee. The data
    are checked for NaN and infinity even under ``assume_finite=True`` (one
    NaN record would make the release NaN)."""

    @functools.wraps(release)
    def wrapper(*args, **kwargs):
        with config_context(skip_parameter_validation=False, assume_finite=False):
            return release(*args, **kwargs)

    return wrapper


def data_parameters_unquoted(*names):
    """Decorate a public function (above scikit-learn's ``validate_params``)
    so that a refused data parameter is named by its type, not quoted.

    scikit-learn's :class:`InvalidParameterError` quotes the value it
    refuses: for a sparse X, its number of stored elements, which one
    record changes (the messages of two neighbours told them apart; review
    of the preprocessing).
    """

    def decorate(release):
        signature = inspect.signature(release)

        @functools.wraps(release)
        def wrapper(*args, **kwargs):
            try:
                return release(*args, **kwargs)
            except InvalidParameterError as error:
                bound = signature.bind_partial(*args, **kwargs).arguments
                for name in names:
                    if str(error).startswith(f"The {name!r} parameter"):
                        raise InvalidParameterError(
                            f"The {name!r} parameter of {release.__name__} must be "
                            "a dense array-like (a numpy array, a list or a "
                            f"DataFrame); got a {type(bound.get(name)).__name__}."
                        ) from None
                raise

        return wrapper

    return decorate


def silent_release(release):
    """Decorate a public function that reads private data to run
    :func:`silent_on_data`, as :func:`private_fit` runs a fit: the release
    functions (``dp_histogram``, ``dp_quantiles``) and the encoding of
    pairs of item ids, which may be private (:class:`~skdp.ranking.PairsEncoder`)."""

    @functools.wraps(release)
    def wrapper(*args, **kwargs):
        _refuse_extended_precision(*args, *kwargs.values())
        try:
            with silent_on_data():
                return release(*args, **kwargs)
        except (ValueError, TypeError) as error:
            _drop_hidden_context(error)
            raise

    return wrapper


#: While set (to a list), every DP fit (:func:`private_fit`) records its
#: warnings there instead of showing them: see :func:`collect_fit_warnings`.
_FIT_WARNINGS = contextvars.ContextVar("skdp_fit_warnings", default=None)


@contextlib.contextmanager
def collect_fit_warnings():
    """Collect the warnings raised inside DP fits instead of showing them.

    Yields a list that receives (as :class:`warnings.WarningMessage`) every
    warning raised inside a fit decorated by :func:`private_fit` in this
    context (this thread or task; a joblib worker enters its own), whatever
    the filters, and only those. A DP fit warns about public values only (its
    parameters, the sizes, a declared label set): the private search re-emits
    these for its winner and drops every other warning of its runs, which
    may depend on one record (a plain step meeting an unknown category, a
    score computed on validation rows).
    """
    collected = []
    token = _FIT_WARNINGS.set(collected)
    try:
        yield collected
    finally:
        _FIT_WARNINGS.reset(token)


@contextlib.contextmanager
def _collected_into(collected):
    """Record the warnings of the block into ``collected`` (None: show them)."""
    if collected is None:
        yield
        return
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            collected.extend(caught)


def refuse_fixed_width_scalars(estimator):
    """Refuse a real-valued parameter given as a numpy scalar other than float64.

    NumPy keeps a scalar's own type in arithmetic with Python floats (NEP
    50): a clip of ``np.float16(4.4)`` made DPSparseGLM compute its
    sensitivity and noise in float16, ε 0.06% above the one it reported,
    and with n above 65504 (inf in float16) no noise at all (review). A
    numpy integer wraps around in a product past 9.2e18 (a clip's square).
    ``np.float64`` is a Python float and passes; so do 64-bit numpy integers
    for integer parameters (``np.arange`` grids of iteration counts). A
    narrower one is refused: ``np.sqrt(np.uint8(200))`` is a float16, and
    DPRandomFeaturesRegressor's clip ``0.5·sqrt(n_components)`` computed its
    noise in float16 (ε 0.07% above the one reported; review).
    """
    constraints = getattr(estimator, "_parameter_constraints", {})
    for name, value in estimator.get_params(deep=False).items():
        if not isinstance(value, (np.floating, np.integer)) or isinstance(
            value, np.float64
        ):
            continue
        allowed = constraints.get(name, ())
        real = Real in allowed or any(
            isinstance(c, Interval) and c.type is Real for c in allowed
        )
        if isinstance(value, np.integer) and value.dtype.itemsize < 8:
            raise InvalidParameterError(
                f"{type(estimator).__name__}: {name}={value!r} is a numpy "
                f"{value.dtype} scalar, and numpy computes in its precision (a "
                "square root of it in float16 or float32, the noise too): pass "
                f"a Python number, {name}=int({name})."
            )
        if real or isinstance(value, np.floating):
            raise InvalidParameterError(
                f"{type(estimator).__name__}: {name}={value!r} is a numpy "
                f"{value.dtype} scalar, and numpy computes in its precision "
                "(the sensitivity and the noise too): pass a Python number, "
                f"{name}=float({name})."
            )


def _refuse_extended_precision(*inputs):
    """Refuse, by dtype, input in a float type wider than float64.

    A long double of 1e4000 is finite, and becomes inf in float64 after
    the checks: one record would turn the release into NaN (a review) or
    make the fit raise, where its neighbour fits. Read from the dtype alone.
    """
    for value in inputs:
        dtypes = getattr(value, "dtypes", None)
        if dtypes is None or not hasattr(dtypes, "__iter__"):
            # One dtype: numpy's, or a pandas Series' (whose .dtypes is its
            # dtype, an extension dtype for a category or string column).
            dtypes = [getattr(value, "dtype", None)]
        for dtype in dtypes:
            try:
                dtype = np.dtype(dtype)
            except TypeError:  # a pandas extension dtype: no wider floats
                continue
            if dtype.kind in "fc" and dtype.itemsize > (8 if dtype.kind == "f" else 16):
                raise TypeError(
                    f"The input has dtype {dtype} (wider than float64): convert "
                    "it to float64 first (a value beyond float64's range would "
                    "become inf in one record and not in its neighbour)."
                )


def private_fit(fit):
    """Decorate a DP estimator's ``fit`` with the contract every fit keeps.

    * Atomic (as :func:`atomic_fit`): a failure leaves the estimator unfitted.
    * Validated: the parameters are checked against their constraints
      before any work, even under scikit-learn's
      ``skip_parameter_validation=True`` (they guard the guarantee).
    * Within budget: the fit's ``privacy_spent_`` is checked against
      :meth:`DPEstimatorMixin.privacy_budget`; a fit that would spend more
      raises :class:`~skdp.exceptions.MechanismFailedError` and releases
      nothing.
    * Seeds are visible: a fit given a ``random_state`` warns that its noise
      is reproducible, and ``privacy_spent_.noise_seeds`` carries the
      fingerprint of the stream (:func:`skdp.mechanisms.noise_seed_id`),
      taken before the fit consumes it, so that the ledger can refuse to
      total fits that share their noise.
    * Assumptions are visible: a fit that read its label set from y says so
      in ``privacy_spent_.caveats``.
    * Finite data: NaN and infinity are refused even under scikit-learn's
      ``assume_finite=True`` (one such record would decide the release).
    * ``sample_weight`` is refused with a TypeError that says why (a weight
      scales a record's sensitivity), before any work.
    * Silent on the data (:func:`silent_on_data`): numpy's floating-point
      events (warnings, or errors under the caller's ``np.errstate``) are off
      during the fit, and an input error quotes no value of the data.
    * The order is visible: a successful fit leaves a stamp of when it
      ended and of the DP release its input came from (:class:`FitStamp`),
      by which the ledger refuses a pipeline whose step was fitted again
      after the steps fitted on its output, or was fitted on another step's
      output. A run of a private search (inside :func:`collect_fit_warnings`)
      is not stamped.
    * The sampler is visible: ``privacy_spent_.sampler`` says which one drew
      the noise (``noise="fast"`` or ``"secure"``); ``noise="secure"`` with a
      ``random_state`` other than None raises a ValueError before any work.
    * Public warnings: a fit warns about its parameters and public sizes
      only, never about something one record decides. Inside
      :func:`collect_fit_warnings` (the private search's runs) its warnings
      are collected there instead of shown.
    """

    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        try:
            # A refusal here leaves the estimator unfitted too: an earlier
            # model kept under the new parameters (noise="secure" beside a
            # fast-noise model) would say what it is not (review).
            # Always, even under scikit-learn's skip_parameter_validation=True:
            # the constraints guard the guarantee (a clip of 1e200 overflows on
            # one data set and not on its neighbour; a float16 clip computes
            # the noise in float16).
            self._validate_params()
            if "sample_weight" in kwargs:
                _refuse_sample_weight(self)
            _refuse_extended_precision(*args, *kwargs.values())
            noise = getattr(self, "noise", "fast")
            check_secure_seed(self.random_state, noise)
            seed = noise_seed_id(self.random_state)
            if seed is not None:
                _warn_seeded(self)
            source = _produced_by(args[0] if args else kwargs.get("X"))
            running = _RUNNING_FIT.set(self)  # for check_cost_before_steps
            try:
                # assume_finite=False: scikit-learn's global assume_finite=True
                # would let one NaN record through the input check, and make
                # the release NaN (or fail) where its neighbour's is fine.
                with (
                    silent_on_data(),
                    _collected_into(_FIT_WARNINGS.get()),
                    config_context(assume_finite=False),
                ):
                    result = fit(self, *args, **kwargs)
            finally:
                _RUNNING_FIT.reset(running)
            budget = self.privacy_budget()
            spent = self.privacy_spent_
            _check_within_budget(spent, budget, type(self).__name__)
            self.privacy_spent_ = replace(
                spent,
                noise_seeds=spent.noise_seeds + ((seed,) if seed else ()),
                caveats=tuple(dict.fromkeys(spent.caveats + budget.caveats)),
                sampler=NOISE_SAMPLERS.get(noise, str(noise)),
            )
            if _FIT_WARNINGS.get() is None:  # not a run of a private search
                setattr(self, FIT_STAMP, _new_stamp(source))
        except BaseException as error:
            for name in fitted_attributes(self):
                delattr(self, name)
            if FIT_STAMP in vars(self):  # an earlier fit's stamp, if any
                delattr(self, FIT_STAMP)
            _drop_hidden_context(error)
            if isinstance(error, MechanismFailedError):
                # A DP failure is an output, its message the whole of it: its
                # traceback's frames held the fit's intermediates and the
                # noise generator, whose state replays the noise drawn (and
                # its coin count told the sampler's hidden branch; review).
                raise error.with_traceback(None) from None
            _clear_frame_locals(error)
            _add_missing_value_hint(error)
            raise
        return result

    return wrapper


def _refuse_sample_weight(estimator):
    raise TypeError(
        f"{type(estimator).__name__}.fit does not take sample_weight: a record "
        "of weight w moves the released statistics w times as far as a record "
        "of weight 1, so noise calibrated for one record's clipped contribution "
        "would not cover it, and a bound on the weights read from the data "
        "would leak. Weight by a public rule before fitting (e.g. resample "
        "rows), or fit without weights."
    )


def _warn_seeded(estimator):
    seed = estimator.random_state
    shown = seed if isinstance(seed, Real) else type(seed).__name__
    warnings.warn(
        f"random_state={shown} seeds the privacy noise of "
        f"{type(estimator).__name__}: every fit given this seed (the clones "
        "that a search or cross-validation fits, sibling steps, a sweep over "
        "epsilon) draws the same noise, and releases that share noise can be "
        "combined to cancel it. Leave random_state=None for anything you "
        "release; PrivacyLedger refuses to total fits that share a seed. The "
        "fitted object keeps the seed (random_state, and its fingerprint in "
        "privacy_spent_): whoever holds it can recompute the noise.",
        PrivacyLeakWarning,
        stacklevel=3,  # the caller of fit
    )


def atomic_fit(fit):
    """Decorate ``fit`` so that a failure leaves the estimator unfitted.

    Nothing half-fitted survives an exception: every fitted attribute (also one
    left by an earlier successful fit, which no longer matches the parameters
    or data just given) is removed before the exception propagates.
    """

    @functools.wraps(fit)
    def wrapper(self, *args, **kwargs):
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            for name in fitted_attributes(self):
                delattr(self, name)
            raise

    return wrapper
