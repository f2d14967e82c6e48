"""The privacy ledger: one honest total for everything fitted on one data set.

:class:`PrivacyLedger` records fitted skdp estimators, fitted scikit-learn
composites and searches, and ``cross_validate`` results, and composes what
they spent with :func:`skdp.accounting.compose`. The walk behind
:meth:`PrivacyLedger.record` follows one rule: a total is never too small.
Where it cannot tell what a fit spent (a wrapper that fits its DP estimators
on rows it chooses, a splitter that assigns folds from the data, fits that
share a seeded noise stream), it refuses with a message that names the part
and the fix, instead of counting less.

DP estimators are recognised by a capability, never by module name: a
fitted one has a ``privacy_spent_`` that is a :class:`PrivacyCost`; an
unfitted one (a search candidate) declares its budget with
``privacy_budget()`` (:class:`skdp._base.DPEstimatorMixin`).
"""

import math
import numbers
import re
import warnings
from dataclasses import replace

import numpy as np

from ._base import FIT_STAMP, FitStamp
from .accounting import (
    REPLACE_ONE,
    REPLACE_ONE_OUTCOME,
    REPLACE_ONE_USER,
    PrivacyCost,
    check_independent_noise,
    compose,
    format_up,
)
from .exceptions import PrivacyLeakWarning
from .mechanisms import noise_seed_id

#: ``_IMPLIES[a]`` lists the adjacencies under which a guarantee stated
#: under ``a`` also holds. Data sets that differ in one comparison's outcome
#: differ in one record (that comparison), so a record-level guarantee covers
#: them.
_IMPLIES = {REPLACE_ONE: (REPLACE_ONE_OUTCOME,)}


class PrivacyLedger:
    """A running total of the privacy spent on one data set.

    Feed it fitted estimators (their ``privacy_spent_``), :class:`PrivacyCost`
    objects, whole fitted scikit-learn composites and searches, or the result
    of ``cross_validate(..., return_estimator=True)`` with :meth:`record`;
    read the composed total with :meth:`total`. The ledger lives outside
    every estimator's parameters on purpose: ``sklearn.base.clone``
    deep-copies parameters, so an accountant passed as a parameter would be
    silently forked by ``GridSearchCV``.

    :meth:`record` looks inside a fitted :class:`~sklearn.pipeline.Pipeline`,
    :class:`~sklearn.pipeline.FeatureUnion`,
    :class:`~sklearn.compose.ColumnTransformer`,
    :class:`~sklearn.compose.TransformedTargetRegressor`, the wrappers that
    fit each inner estimator once on rows chosen without looking at the data
    (:class:`~sklearn.ensemble.VotingClassifier`,
    :class:`~sklearn.ensemble.VotingRegressor`,
    :class:`~sklearn.multiclass.OneVsRestClassifier`,
    :class:`~sklearn.multioutput.MultiOutputClassifier`,
    :class:`~sklearn.multioutput.MultiOutputRegressor` and
    :class:`~sklearn.feature_selection.SelectFromModel`; bagging is refused,
    as it keeps the noise seeds it gave its DP sub-models) and any fitted
    search (:class:`~sklearn.model_selection.GridSearchCV`,
    :class:`~sklearn.model_selection.RandomizedSearchCV`, the halving
    searches), nested in any way, and records the cost of every fit on the
    training data:

    * every DP step's ``privacy_spent_``;
    * for a search, every candidate once per cross-validation split whose
      training part can contain a given record, plus the refit (see
      :meth:`record`), and a :class:`~skdp.PrivacyLeakWarning` that choosing
      among the candidates by their scores on the private data is *not*
      covered (:class:`skdp.model_selection.DPRandomSearchCV` covers it);
    * a :class:`~skdp.PrivacyLeakWarning` naming every fitted step that read
      the training data without a guarantee (a plain ``StandardScaler``, a
      ``OneHotEncoder`` that learned its categories, a ``SimpleImputer``, a
      non-private final model, a wrapper that learned the label set, a
      ``OneVsRestClassifier`` on multilabel y, which fits a noiseless
      constant for a label in no row or in every row, a halving search
      whose ``min_resources`` counts the classes in y), and
      every assumption a guarantee rests on (a label set read from ``y``).
      Steps that read nothing but the shape of the data pass silently; the
      list is explicit: ``"passthrough"``/``"drop"``/None,
      ``FunctionTransformer`` with a row-wise ``func`` (None, a NumPy ufunc,
      or marked with :func:`skdp.rowwise`; and unless it checks ``func``
      against ``inverse_func`` on the data), ``Normalizer``, ``Binarizer``,
      ``PolynomialFeatures``, ``OneHotEncoder``/``OrdinalEncoder`` given
      explicit ``categories`` and no ``min_frequency``/``max_categories``,
      ``SimpleImputer(strategy="constant", keep_empty_features=True)``
      without ``add_indicator``, and ``MissingIndicator(features="all")``;
    * a :class:`~skdp.PrivacyLeakWarning` for a ``ColumnTransformer`` column
      selector (or ``SelectFromModel``'s ``max_features``) that is a callable
      other than ``make_column_selector`` and is not marked with
      :func:`skdp.rowwise` (it may choose from the values), and for DP fits
      inside a wrapper that seeded their noise itself (bagging gives every
      sub-model a seed, kept in the fitted model);
    * a :class:`~skdp.PrivacyLeakWarning` for the scores of a
      ``cross_validate`` result (exact, on private records: not covered);
    * a :class:`~skdp.PrivacyLeakWarning` for a ``ColumnTransformer`` whose
      choice between a sparse and a dense output is not fixed by its
      structure: ``sparse_threshold > 0`` and a part (the remainder
      included) that is not known to return a dense array whatever the data
      (known: ``"drop"``, a DP estimator, a ``OneHotEncoder`` with
      ``sparse_output=False``, an ``OrdinalEncoder``, a Pipeline ending in
      one of these; not ``"passthrough"``, a sparse ``OneHotEncoder``, a
      ``FunctionTransformer``, a ``FeatureUnion``, anything else). The
      choice reads the share of stored values, and the next step sees a
      different container (DPLogisticRegression's automatic clip follows
      it). It is named from the parameters, whichever container the fit
      chose: set ``sparse_threshold=0``.

    It refuses, leaving itself as it was:

    * releases that drew their noise from one seeded stream (fits given the
      same ``random_state``: see :func:`skdp.mechanisms.noise_seed_id`), and
      searches over a DP step with a ``random_state`` (every fold fit and
      the refit would share it);
    * splitters that assign folds from the data (``StratifiedKFold``, the
      default ``cv`` of every classifier search, and the group splitters):
      changing one record can move many others between folds;
    * explicit splits whose training parts repeat a row (bootstrap-style),
      use negative indices, or were given as an iterator the fit used up;
      a ``cross_validate`` result whose ``indices`` the ``cv`` given does
      not reproduce. Explicit splits (a list, ``PredefinedSplit``) must be
      chosen without looking at the data: the ledger cannot tell;
    * wrappers that hold a DP estimator but fit it in ways the ledger cannot
      count (internal cross-validation, bootstrap duplicates, refits they do
      not keep: ``StackingClassifier``, ``CalibratedClassifierCV``,
      ``RFE``, bagging with ``bootstrap=True``, and any wrapper it does not
      know);
    * what keeps no model to count: the results of ``cross_val_predict``,
      ``learning_curve``, ``validation_curve`` and ``permutation_importance``
      (which also release noiseless predictions or scores).

    It cannot see a scikit-learn search's ``best_estimator_`` recorded on its
    own: that counts one fit of many. Record the search.

    Parameters
    ----------
    delta : float, optional
        The δ at which :meth:`total` reports ε. Default: the sum of the
        recorded δ's.

    Examples
    --------
    >>> from skdp import PrivacyCost, PrivacyLedger
    >>> ledger = PrivacyLedger(delta=1e-5)
    >>> cost = PrivacyCost.from_gdp(0.5, delta=1e-5)
    >>> ledger.record(cost).record(cost)
    PrivacyLedger(2 releases: (2.94..., 1e-05)-DP, mu=0.7071...)
    """

    def __init__(self, delta=None):
        self.delta = delta
        self._costs = []
        self._uncovered = []
        self._stamps = set()  # the DP fits recorded (FitStamp.when)

    def record(self, spent, *, cv=None):
        """Add what one fitted object spent on the training data.

        Parameters
        ----------
        spent : PrivacyCost, fitted estimator or composite, or dict
            A fitted ``Pipeline``, ``FeatureUnion``, ``ColumnTransformer``,
            ``TransformedTargetRegressor``, known wrapper or search has the
            costs of every fit inside it recorded, one entry per release. A
            dict is the result of ``cross_validate(...,
            return_estimator=True)``: every fold model is recorded, and
            ``cv`` must say how the folds were made.
        cv : int, cross-validation generator or iterable, optional
            The ``cv`` passed to ``cross_validate``; required with its
            result, refused when it assigns folds from the data.

        Returns
        -------
        self : PrivacyLedger

        Notes
        -----
        **Searches.** A search keeps only its refitted ``best_estimator_``, so
        the cost of every other fit is derived from the parameters: each
        candidate is ``clone(search.estimator).set_params(**params)`` for
        ``params`` in ``cv_results_["params"]``, and each DP step in it is
        charged ``privacy_budget()``, the most a fit with those parameters
        spends (μ-GDP when all its releases are Gaussian, zCDP when they are
        accounted in zCDP, else the pair (epsilon, delta) under basic
        composition). Every skdp fit checks
        that it spends no more than that and refuses to release otherwise,
        so the charge bounds each fit; the refit's report is checked again
        here. A step whose budget is user-level (``DPFedRep``) is charged at
        the adjacency the refitted instance achieved: without metadata
        routing the fits get no user ids and are record-level. With user ids
        (a user-level guarantee) the search, and ``cross_validate``, are
        refused: replacing one user may change the number of rows, and with
        it every fold a splitter draws (``GroupKFold``'s folds follow the
        private user ids), so no per-fit guarantee adds up to a total. A candidate
        is charged once per split whose training part can hold a given
        record: ``k - 1`` times for ``KFold``, ``LeaveOneOut`` and an integer
        or default ``cv`` of a regressor; ``n_repeats·(k - 1)`` for
        ``RepeatedKFold``; the exact largest count for an explicit list of
        splits (refused if a training part repeats a row: a record used m
        times in one fit is a group of m for it); ``n_splits_`` times for
        ``ShuffleSplit``, ``LeavePOut``, ``TimeSeriesSplit`` and
        ``PredefinedSplit`` (a record may be in every training part). The
        refit is charged what ``best_estimator_`` reports. An explicit list
        of splits or a ``PredefinedSplit`` is trusted to be data-independent
        (not built from the labels or the values).

        **cross_validate.** With ``return_indices=True`` the result keeps the
        rows of every split; they are checked against ``cv``, so pass the
        splitter itself, with an integer ``random_state`` if it shuffles.
        Without them ``cv`` is trusted, with a warning.

        A refused record leaves the ledger as it was.
        """
        costs, leaks = [], {}
        if isinstance(spent, dict):
            _collect_cross_validate(spent, cv, costs, leaks)
        elif cv is not None:
            raise TypeError("cv= is only for the result of cross_validate (a dict).")
        else:
            _collect(spent, type(spent).__name__, costs, leaks, fitted=True)
        check_independent_noise(self._costs + costs)
        if _mixes_record_and_user_units(self._costs + costs):
            leaks[MIXED_UNITS_MESSAGE] = None
        fitted = spent.get("estimator", ()) if isinstance(spent, dict) else [spent]
        stamps = {
            s.when for obj in fitted for s, _ in _fit_stamps(obj, type(obj).__name__)
        }
        _warn_leaks(leaks)
        if stamps & self._stamps:
            # Conservative, and easy to do by re-running a notebook cell.
            warnings.warn(
                "PrivacyLedger.record: a fit recorded before is recorded again; "
                "its releases are counted twice (a conservative total). Record "
                "each fitted object once.",
                UserWarning,
                stacklevel=2,
            )
        self._stamps |= stamps
        self._costs.extend(costs)
        self._uncovered.extend(m for m in leaks if m not in self._uncovered)
        return self

    @property
    def costs(self):
        """The recorded costs, in order."""
        return tuple(self._costs)

    @property
    def uncovered(self):
        """What the total does not cover, or assumes: the messages of every
        :class:`~skdp.PrivacyLeakWarning` :meth:`record` raised, each once,
        in order (kept here so that a total read later is read with them)."""
        return tuple(self._uncovered)

    def __len__(self):
        return len(self._costs)

    def totals(self):
        """One composed total per adjacency, each over its own releases only.

        Returns
        -------
        dict
            Adjacency → :class:`PrivacyCost`. A total here covers only the
            releases stated under its adjacency; :meth:`total` composes them
            all where one guarantee implies another.
        """
        groups = {}
        for cost in self._costs:
            groups.setdefault(cost.adjacency, []).append(cost)
        return {a: compose(c, delta=self.delta) for a, c in groups.items()}

    def total(self):
        """The composed cost of everything recorded.

        See :func:`~skdp.accounting.compose`.

        Releases stated under different adjacencies are composed only where
        every guarantee also holds under one of them (a record-level
        guarantee holds for data sets that differ in one comparison's
        outcome), and the total is stated under that one. Otherwise no single
        guarantee covers them all: this raises, and :meth:`totals` reports
        each adjacency's releases separately. What the total does not cover
        (steps that read the data without a guarantee, assumptions) is in
        :attr:`uncovered`.
        """
        if not self._costs:
            return PrivacyCost(0.0, 0.0, 0.0, REPLACE_ONE, "nothing released")
        adjacencies = list(dict.fromkeys(c.adjacency for c in self._costs))
        target = _common_adjacency(adjacencies)
        if target is None:
            parts = "; ".join(f"{t}" for t in self.totals().values())
            raise ValueError(
                "The recorded releases are stated under adjacencies that no "
                f"single guarantee covers ({adjacencies}); their totals, each "
                f"over its own releases, are: {parts}. Use totals() to read "
                "them separately."
            )
        # One converted object per recorded one: a release recorded twice
        # stays one object, counted twice (safe), not two releases that
        # share a seed (review: a seeded fit recorded twice raised).
        converted = {id(c): replace(c, adjacency=target) for c in self._costs}
        return compose([converted[id(c)] for c in self._costs], delta=self.delta)

    def __repr__(self):
        if not self._costs:
            more = f"; {len(self._uncovered)} warnings" if self._uncovered else ""
            return f"PrivacyLedger(empty{more})"
        try:
            totals = [self.total()]
        except ValueError:
            totals = list(self.totals().values())
        parts = []
        for t in totals:
            mu = "" if t.mu is None else f", mu={format_up(t.mu, 6)}"
            where = f" under '{t.adjacency}'" if len(totals) > 1 else ""
            eps, delta = format_up(t.epsilon, 6), format_up(t.delta, 3)
            parts.append(f"({eps}, {delta})-DP{mu}{where}")
        uncovered = (
            f"; {len(self._uncovered)} warnings, see .uncovered"
            if self._uncovered
            else ""
        )
        return f"PrivacyLedger({len(self)} releases: {'; '.join(parts)}{uncovered})"


#: Record-level releases and user-level ones (DPFedRep fitted with groups)
#: on the same data: neither guarantee covers the other's releases for its
#: unit (review: a DP scaler in front of DPFedRep, the per-adjacency totals
#: read as the pipeline's).
MIXED_UNITS_MESSAGE = (
    "Record-level and user-level releases are recorded together: no single "
    "guarantee covers them, and totals() reports each adjacency over its own "
    "releases only (neither is a total of both). To one user, a record-level "
    "release costs as much as a group of as many records as the user holds "
    "(m times its mu for m rows: no bound unless a user's row count is public "
    "and bounded). Fit record-level steps on other data, or put before "
    "DPFedRep only steps that read nothing but the data's shape."
)


def _mixes_record_and_user_units(costs):
    """Whether ``costs`` hold user-level releases and releases of another unit."""
    adjacencies = {c.adjacency for c in costs}
    return REPLACE_ONE_USER in adjacencies and len(adjacencies) > 1


def _common_adjacency(adjacencies):
    """The adjacency under which every guarantee in ``adjacencies`` holds, or None."""
    for target in adjacencies:
        if all(a == target or target in _IMPLIES.get(a, ()) for a in adjacencies):
            return target
    return None


# ---------------------------------------------------------------------------
# Recognising DP estimators and steps that read only the shape of the data
# ---------------------------------------------------------------------------

_SKIPPED_STEPS = ("passthrough", "drop", None)


def is_dp_estimator(obj):
    """Whether ``obj`` is a DP estimator: it declares a budget or reports a cost."""
    if isinstance(obj, type):
        return False
    return callable(getattr(obj, "privacy_budget", None)) or isinstance(
        getattr(obj, "privacy_spent_", None), PrivacyCost
    )


_ROWWISE = "__skdp_rowwise__"

#: The class attribute by which a transformer declares that its ``fit``
#: reads nothing of the data but its shape (and checks its values' kind),
#: so that the ledger lets it see the rows of a DP step without a charge.
#: Set it (to True) in the class body only if that is true of ``fit``.
READS_ONLY_SHAPE = "__skdp_reads_only_shape__"
#: The class attribute by which a DP estimator names the fitted attributes
#: its guarantee does not cover (DPFedRep's per-user heads): the ledger names
#: them in a warning whenever it records such a fit.
NOT_PRIVATE = "__skdp_not_private__"


class _RowwiseFunction:
    """A row-wise mark on a callable that cannot carry an attribute itself."""

    def __init__(self, func):
        self.func = func
        setattr(self, _ROWWISE, True)

    def __call__(self, *args, **kwargs):
        return self.func(*args, **kwargs)

    def __repr__(self):
        return f"rowwise({self.func!r})"


def rowwise(func):
    """Mark ``func`` as reading each record on its own (for the ledger).

    :class:`PrivacyLedger` and :class:`~skdp.model_selection.DPRandomSearchCV`
    assume that one record of the training data moves one row of what a DP
    step downstream sees. A :class:`~sklearn.preprocessing.FunctionTransformer`
    whose ``func`` mixes rows (``sklearn.preprocessing.scale`` centres every
    row on the column means) breaks that: changing one record moves every
    row, and the DP step's guarantee no longer holds for the data set. The
    ledger cannot read a function, so it warns about every ``func`` that is
    not marked, and the private search refuses it. Mark a function whose
    output row ``i`` depends on input row ``i`` alone (and on public
    constants), such as ``lambda X: X[:, :3]`` or
    ``lambda X: np.clip(X, 0, 1)``. NumPy
    ufuncs (``np.log1p``, ``np.sqrt``, ``np.abs``) act element by element and
    need no mark; ``func=None`` is the identity.

    The same mark on a ``ColumnTransformer`` column selector, or on
    ``SelectFromModel``'s ``max_features``, says that it reads nothing of the
    data but its shape, column names and dtypes (as
    :class:`~sklearn.compose.make_column_selector`, which needs no mark).

    Parameters
    ----------
    func : callable
        The function to mark. Marking is a promise about the function, not
        something the ledger checks.

    Returns
    -------
    callable
        ``func`` itself with the mark set, or, for a callable that cannot
        carry an attribute (a builtin), a thin wrapper that calls it.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.preprocessing import FunctionTransformer
    >>> from skdp import rowwise
    >>> first_three = rowwise(lambda X: X[:, :3])
    >>> step = FunctionTransformer(first_three)
    """
    if not callable(func):
        raise TypeError(f"rowwise() marks a callable; got {type(func).__name__}.")
    try:
        setattr(func, _ROWWISE, True)
    except (AttributeError, TypeError):
        return _RowwiseFunction(func)
    return func


def _is_rowwise(func):
    """Whether ``func`` is None, an element-wise NumPy ufunc or marked with
    :func:`rowwise` (a generalized ufunc, with core dimensions, works on
    whole sub-arrays, which may mix rows: ``np.matmul``)."""
    return (
        func is None
        or (isinstance(func, np.ufunc) and func.signature is None)
        or getattr(func, _ROWWISE, False) is True
    )


def _selects_by_dtype(selector):
    """Whether a column selector chooses columns by their dtypes."""
    from sklearn.compose import make_column_selector

    return isinstance(selector, make_column_selector) and (
        selector.dtype_include is not None or selector.dtype_exclude is not None
    )


def _reads_values(selector):
    """Whether a callable column selector or ``max_features`` may read values."""
    from sklearn.compose import make_column_selector

    if not callable(selector) or isinstance(selector, make_column_selector):
        return False  # names, indices, masks; or names and dtypes only
    return not _is_rowwise(selector)


def _reads_only_shape(estimator):
    """Whether fitting ``estimator`` reads nothing of the data but its shape.

    The transformer says so itself: its class (not a base class, whose
    ``fit`` a subclass may override) sets :data:`READS_ONLY_SHAPE` to True,
    as skdp's :class:`~skdp.ranking.PairsEncoder` does. scikit-learn's own
    transformers cannot carry that mark, so the few that qualify are listed
    here, explicitly on purpose (tested): anything else is assumed to learn
    from the data. A ``FunctionTransformer`` counts only if its ``func`` is
    row-wise (:func:`rowwise`): one that mixes rows passes every record into
    every row of the next step's input.
    """
    from sklearn.impute import MissingIndicator, SimpleImputer
    from sklearn.preprocessing import (
        Binarizer,
        FunctionTransformer,
        Normalizer,
        OneHotEncoder,
        OrdinalEncoder,
        PolynomialFeatures,
    )

    if isinstance(estimator, FunctionTransformer):
        # With both functions and check_inverse, fit applies them to rows
        # of the data and warns on a mismatch. inverse_func is otherwise
        # applied only to predictions, never to the training data.
        return _is_rowwise(estimator.func) and not checks_round_trip(estimator)
    if vars(type(estimator)).get(READS_ONLY_SHAPE) is True:
        return True
    if type(estimator) in (Normalizer, Binarizer, PolynomialFeatures):
        return True
    if type(estimator) in (OneHotEncoder, OrdinalEncoder):
        return (
            not isinstance(estimator.categories, str)
            and estimator.min_frequency is None
            and estimator.max_categories is None
        )
    if type(estimator) is SimpleImputer:
        # A constant fill reads nothing, but without keep_empty_features
        # the columns that are entirely missing are dropped, and the
        # indicator it adds keeps only the columns seen missing.
        return (
            estimator.strategy == "constant"
            and estimator.keep_empty_features
            and not estimator.add_indicator
        )
    if type(estimator) is MissingIndicator:
        return estimator.features == "all"
    return False


def _fails_on_an_undeclared_category(encoder):
    """Whether an encoder of declared categories raises or warns on a record
    outside them (its output is row-wise either way: DPRandomSearchCV makes
    such a run a failed run and drops plain steps' warnings)."""
    from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder

    if type(encoder) is OneHotEncoder:
        quiet = ("ignore", "infrequent_if_exist")
        return encoder.handle_unknown not in quiet or encoder.drop is not None
    if type(encoder) is OrdinalEncoder:
        # unknown_value=np.nan: the next DP step refuses the NaN, and raises
        unknown = encoder.unknown_value
        nan = isinstance(unknown, float) and math.isnan(unknown)
        return encoder.handle_unknown != "use_encoded_value" or nan
    return False


def _dp_inside(obj):
    """A DP estimator held anywhere inside ``obj`` (parameters or fitted state).

    Walks lists, tuples, dicts, estimators and scikit-learn's helper objects
    (e.g. the ``_CalibratedClassifier`` entries of ``calibrated_classifiers_``)
    at any depth (a DP fit nested deeper than a fixed bound would otherwise
    be missed and its cost dropped from the total); the set of visited
    objects stops cycles. None if there is none.
    """
    seen = set()
    stack = [obj]
    while stack:
        current = stack.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        values = _contents(current)
        for value in values:
            if value is not current and is_dp_estimator(value):
                return value
        stack.extend(reversed(values))  # depth first, in the order held
    return None


def _contents(obj):
    """The values a container, an estimator or a scikit-learn helper holds."""
    from sklearn.base import BaseEstimator

    if isinstance(obj, dict):
        return list(obj.values())
    if isinstance(obj, (list, tuple)):
        return list(obj)
    if isinstance(obj, BaseEstimator) or (
        type(obj).__module__.startswith("sklearn") and hasattr(obj, "__dict__")
    ):
        return list(vars(obj).values())
    return []


# ---------------------------------------------------------------------------
# Composites and wrappers whose data flow the ledger knows
# ---------------------------------------------------------------------------


def checks_round_trip(function_transformer):
    """Whether a FunctionTransformer's fit applies ``func`` then
    ``inverse_func`` to training rows and warns on a mismatch (both
    functions given and ``check_inverse=True``), a warning one record can
    turn on."""
    return bool(
        function_transformer.check_inverse
        and function_transformer.func is not None
        and function_transformer.inverse_func is not None
    )


def checks_target_round_trip(target_regressor):
    """Whether a TransformedTargetRegressor's fit compares
    ``inverse_transform(transform(y))`` with y on training targets and warns
    on a mismatch (``check_inverse=True`` and a transformer or ``func``
    given), a warning one record can turn on."""
    return bool(
        target_regressor.check_inverse
        and not (target_regressor.transformer is None and target_regressor.func is None)
    )


def composite_parts(obj, fitted=False):
    """``[(name, part)]`` of the four composites that fit each part once, on
    the rows they are given, or None for anything else.

    A Pipeline's steps, a FeatureUnion's transformers, a ColumnTransformer's
    transformers and remainder, a TransformedTargetRegressor's transformer
    (the FunctionTransformer of ``func``/``inverse_func`` when None) and
    regressor (scikit-learn's LinearRegression when None), in the order it
    fits them. ``fitted``: the fitted copies a ColumnTransformer
    (``transformers_``) and a TransformedTargetRegressor (``transformer_``,
    ``regressor_``) keep.
    Shared by the ledger, the budget helpers and the private search.
    """
    from sklearn.compose import ColumnTransformer, TransformedTargetRegressor
    from sklearn.pipeline import FeatureUnion, Pipeline

    if isinstance(obj, Pipeline):
        return list(obj.steps)
    if isinstance(obj, FeatureUnion):
        return list(obj.transformer_list)
    if isinstance(obj, ColumnTransformer):
        if fitted:
            # A part whose selector matched no column was never fitted.
            return [
                (name, t)
                for name, t, columns in obj.transformers_
                if not _selects_nothing(columns)
            ]
        return [(name, t) for name, t, _ in obj.transformers] + [
            ("remainder", obj.remainder)
        ]
    if isinstance(obj, TransformedTargetRegressor):
        # In the order of its fit: the transformer (on y), then the regressor.
        if fitted:
            return [("transformer", obj.transformer_), ("regressor", obj.regressor_)]
        from sklearn.linear_model import LinearRegression
        from sklearn.preprocessing import FunctionTransformer

        regressor = LinearRegression() if obj.regressor is None else obj.regressor
        transformer = obj.transformer
        if transformer is None:
            transformer = FunctionTransformer(
                func=obj.func,
                inverse_func=obj.inverse_func,
                check_inverse=obj.check_inverse,
            )
        return [("transformer", transformer), ("regressor", regressor)]
    return None


def _used_prefit(obj):
    """A ``SelectFromModel(prefit=True)`` used without ``fit``: it holds a
    fitted model (checked as the walk reaches it) but no fitted attribute."""
    from sklearn.feature_selection import SelectFromModel

    return isinstance(obj, SelectFromModel) and obj.prefit


def _selects_nothing(columns):
    """Whether a fitted ColumnTransformer's part selected no column.

    Read from the length (scikit-learn 1.6's remainder columns warn when
    iterated), or from the values of a boolean mask.
    """
    if isinstance(columns, np.ndarray):
        return not columns.any() if columns.dtype == bool else columns.size == 0
    if (
        type(columns) is list
        and columns
        and all(isinstance(c, (bool, np.bool_)) for c in columns)
    ):
        return not any(columns)
    if isinstance(columns, (str, slice)) or callable(columns):
        return False
    try:
        return len(columns) == 0
    except TypeError:
        return False


def _fit_stamps(obj, path, apart=False):
    """``(stamp, apart)`` of every DP fit inside ``obj``, itself included.

    ``apart`` marks the fits inside a ``SelectFromModel(prefit=True)``: its
    model was fitted apart from the pipeline's data flow (and is charged as
    such), so its stamp says nothing of the order of the pipeline's fits;
    where its input came from still counts.
    """
    from sklearn.model_selection._search import BaseSearchCV

    apart = apart or _used_prefit(obj)
    stamp = getattr(obj, FIT_STAMP, None)
    stamps = [(stamp, apart)] if isinstance(stamp, FitStamp) else []
    children = _children(obj, True, path) or []
    searched = isinstance(obj, BaseSearchCV) or is_dp_estimator(obj)
    if searched and hasattr(obj, "best_estimator_"):
        # A search's model (scikit-learn's refit, or the model a private
        # search released, stamped then): fitted on the search's input, and
        # refitted since, maybe on another.
        children = [*children, ("best_estimator_", obj.best_estimator_)]
    for name, child in children:
        if not isinstance(child, str) and child is not None:
            stamps += _fit_stamps(child, f"{path}/{name}", apart)
    return stamps


def check_fit_order(obj, path, leaks):
    """Refuse a fitted Pipeline whose steps were not fitted one on the other.

    Each step of a Pipeline is fitted on the output of the steps before it,
    as they were then. Read from the stamps of the DP fits
    (:class:`skdp._base.FitStamp`), refused:

    * a DP step fitted again after a later step was fitted on its output (in
      place, through a slice ``pipe[:-1]``, which shares the steps, or in
      another pipeline that holds the same object): the release the later
      step depends on is no longer in the pipeline. Fits are ordered within
      one process (the fits joblib workers made, e.g. of a ColumnTransformer,
      VotingClassifier or OneVsRestClassifier with n_jobs, are not compared
      with the steps around them);
    * a DP step fitted on the output of another DP release than the steps
      before it hold (a step shared with another pipeline and fitted there
      last, or an older fitted step put in by ``set_params``): the release
      it was fitted on is not in the pipeline. Known where the step's input
      was a DP transformer's output as returned, or a pandas frame around it
      (the stamp names that release); after a plain step, a copy or a
      ColumnTransformer (which stacks its parts) the fits are checked for
      order only.

    A first DP step fitted on a DP release's output is named in a warning:
    the pipeline depends on a release it does not hold, which must be
    recorded too. Either refusal means the fits the pipeline holds do not
    add up to what it spent.

    A fitted TransformedTargetRegressor is checked for order alone: its
    regressor is fitted on the targets its transformer returned, so a
    transformer fitted again after the regressor is refused (the regressor's
    X comes from elsewhere).
    """
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.pipeline import Pipeline

    if isinstance(obj, Pipeline):
        steps, inputs = obj.steps, True
    elif isinstance(obj, TransformedTargetRegressor):
        steps = [("transformer_", obj.transformer_), ("regressor_", obj.regressor_)]
        inputs = False
    else:
        return
    earlier = []  # (stamp, step name) of every DP fit in the steps so far
    for name, step in steps:
        if isinstance(step, str) or step is None:
            continue
        found = _fit_stamps(step, f"{path}/{name}")
        if not found:
            continue
        stamps = [stamp for stamp, _ in found]
        for stamp in (stamp for stamp, apart in found if not apart):
            for previous, previous_name in earlier:
                if _fitted_before(stamp, previous):
                    raise ValueError(
                        f"{path}: step '{previous_name}' was fitted again after "
                        f"step '{name}', which was fitted on its output: the "
                        f"release '{name}' depends on is no longer in the "
                        "pipeline, and no total of the fits it holds covers it. "
                        "Fit the pipeline again as a whole (a step shared with "
                        "another pipeline, or refitted through a slice, is "
                        "refitted in place)."
                    )
        own = {stamp.when for stamp in stamps}
        sources = {s.input_from for s in stamps if s.input_from is not None} - own
        if not inputs:
            sources = set()
        held = {previous.when for previous, _ in earlier}
        if sources and not earlier:
            leaks[
                f"{path}/{name} was fitted on the output of a DP release that "
                "the pipeline does not hold: record that release too (the "
                "pipeline's predictions depend on it)."
            ] = None
        elif sources - held:
            raise ValueError(
                f"{path}: step '{name}' was fitted on the output of another DP "
                "release than the steps before it hold (a step shared with "
                "another pipeline and fitted there last, or a fitted step put "
                "in by set_params): the release it depends on is not in the "
                "pipeline, and no total of the fits it holds covers it. Fit "
                "the pipeline again as a whole."
            )
        earlier += [(stamp, name) for stamp, apart in found if not apart]


def _fitted_before(stamp, previous):
    """Whether the fit stamped ``stamp`` ended before ``previous``, both in
    one process (counters of different processes are not comparable)."""
    return stamp.when[0] == previous.when[0] and stamp.when[1] < previous.when[1]


def _children(obj, fitted, path=""):
    """``(name, child)`` pairs of a known composite or wrapper, or None for a leaf.

    A known wrapper fits each child once, on all the rows or on rows chosen
    without looking at the data, so each child's own cost is what the wrapper
    spends through it.
    """
    parts = composite_parts(obj, fitted)
    if parts is not None:
        return parts
    return _wrapper_children(obj, fitted, path)


def _wrapper_children(obj, fitted, path):
    from sklearn.ensemble import (
        BaggingClassifier,
        BaggingRegressor,
        VotingClassifier,
        VotingRegressor,
    )
    from sklearn.feature_selection import SelectFromModel
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.multioutput import MultiOutputClassifier, MultiOutputRegressor

    kind = type(obj)
    if kind in (VotingClassifier, VotingRegressor):
        if fitted:
            return list(obj.named_estimators_.items())
        return list(obj.estimators)
    if kind is SelectFromModel:
        if fitted and hasattr(obj, "estimator_"):
            return [("estimator_", obj.estimator_)]
        # Unfitted, or prefit=True and used without fit: its estimator is
        # the model it holds (fitted by the user, and charged as such).
        return [("estimator", obj.estimator)]
    if kind in (OneVsRestClassifier, MultiOutputClassifier, MultiOutputRegressor):
        if fitted:
            return [(f"estimators_[{i}]", e) for i, e in enumerate(obj.estimators_)]
        if _dp_inside(obj) is not None:
            raise ValueError(
                f"{path} ({kind.__name__}): how many models it fits depends on "
                "the labels or outputs, which a search's parameters do not say. "
                "Search over the DP estimator itself, or record the fitted "
                "wrapper."
            )
        return None
    if kind in (BaggingClassifier, BaggingRegressor):
        if _dp_inside(obj) is None:
            return None
        if obj.bootstrap:
            raise ValueError(
                f"{path} ({kind.__name__}) draws bootstrap samples: one record "
                "can enter a sub-model many times, so each sub-model's guarantee "
                "(stated for one copy) does not hold for it. (Without bootstrap "
                "it is refused too: it seeds its DP sub-models' noise itself and "
                "keeps the seeds in the model.) Use a VotingClassifier of DP "
                "models, or release only predictions."
            )
        if fitted:
            return [(f"estimators_[{i}]", e) for i, e in enumerate(obj.estimators_)]
        if obj.random_state is not None:
            raise ValueError(
                f"{path} ({kind.__name__}) with random_state={obj.random_state!r} "
                "gives its sub-models the same seeds in every fit of a search, "
                "so their noise repeats across folds. Leave random_state=None."
            )
        return [(f"estimator[{i}]", obj.estimator) for i in range(obj.n_estimators)]
    return None


def _label_set_leak(path, obj):
    """The leak of a fitted classifier wrapper that learned its label set from y.

    Only the wrappers: a Pipeline's ``classes_`` is its last step's, and a
    MultiOutputClassifier's is the list of its sub-models' (each declared
    or named by the sub-model's own caveat; the number of outputs is y's
    shape).
    """
    from sklearn.ensemble import BaggingClassifier, VotingClassifier
    from sklearn.multiclass import OneVsRestClassifier

    wrappers = (BaggingClassifier, OneVsRestClassifier, VotingClassifier)
    binarizer = getattr(obj, "label_binarizer_", None)
    if type(obj) is OneVsRestClassifier and (
        getattr(binarizer, "y_type_", None) == "multilabel-indicator"
    ):
        # classes_ is y's width there; but a label that occurs in no row (or
        # in every row) gets a constant predictor, fitted without noise:
        # which of estimators_ are DP fits tells a neighbour apart with
        # certainty (review).
        return (
            f"{path} (OneVsRestClassifier) on multilabel y fits, without noise, "
            "a constant predictor for every label that occurs in no row or in "
            "every row (its estimators_ show which): the ledger's total treats "
            "which labels vary as public. MultiOutputClassifier(<DP model>("
            "classes=[0, 1])) fits a DP model for every label."
        )
    if type(obj) in wrappers and hasattr(obj, "classes_"):
        return (
            f"{path} ({type(obj).__name__}) learned its label set from the "
            "training labels (released in classes_): the ledger's total treats "
            "it as public."
        )
    return None


def _value_reading_callables(obj, path, leaks):
    """Name the callables of ``obj`` that a fit calls on the data's values.

    A ``ColumnTransformer`` calls a callable column selector on X, and
    ``SelectFromModel`` a callable ``max_features``: unless it reads only
    names, dtypes and the shape (:func:`rowwise`), the choice it makes
    depends on every record and is released with the model.
    """
    from sklearn.compose import ColumnTransformer
    from sklearn.feature_selection import SelectFromModel

    found = []
    if isinstance(obj, ColumnTransformer):
        found = [
            (f"the column selector of '{name}'", columns)
            for name, _, columns in obj.transformers
        ]
    elif isinstance(obj, SelectFromModel):
        found = [("max_features", obj.max_features)]
    for what, func in found:
        if _selects_by_dtype(func):
            leaks[
                f"{path}: the guarantee assumes the dtypes {what} chooses by "
                "are public. pandas infers a column's dtype from its values "
                "(one record of 'unknown' makes a numeric column str), so "
                "declare them when reading (read_csv(dtype=...)) or list the "
                "columns by name."
            ] = None
        if _reads_values(func):
            leaks[
                f"{path} ({type(obj).__name__}) calls {what} ({func!r}) on the "
                "training data and it is not marked as reading only the shape, "
                "column names and dtypes: a choice read from the values is "
                "released with the model and is not covered by the ledger's "
                "total. Use column names, indices or make_column_selector, or "
                "mark the callable with skdp.rowwise if it reads no values."
            ] = None


def _target_round_trip(obj, path, leaks):
    """Name a TransformedTargetRegressor that checks its inverse on the targets.

    With ``check_inverse=True`` (scikit-learn's default) its fit compares
    ``inverse_transform(transform(y))`` with ``y`` on every tenth training
    target and warns on a mismatch. Whether it warns depends on single
    records (one target beyond the bounds a private scaler clips to is
    enough): a release that no DP step accounts for.
    """
    from sklearn.compose import TransformedTargetRegressor

    if not isinstance(obj, TransformedTargetRegressor):
        return
    if not checks_target_round_trip(obj):  # off, or the identity: no check
        return
    leaks[
        f"{path} (TransformedTargetRegressor) has check_inverse=True: its fit "
        "compares inverse_transform(transform(y)) with y on every tenth "
        "training target and warns on a mismatch, a warning that one record "
        "can turn on (a target beyond the bounds a private scaler clips to). "
        "It is not covered by the ledger's total; set check_inverse=False "
        "(make_private_pipeline and set_privacy_budget do)."
    ] = None


def _always_dense(part):
    """Whether ``part`` (a ColumnTransformer's transformer or remainder)
    returns a dense array, or nothing, whatever the data.

    Only a short list, by structure: ``"drop"``; one of skdp's DP
    estimators (its DP transformers refuse sparse input and return arrays;
    a DP step from elsewhere may not); a
    ``OneHotEncoder`` with ``sparse_output=False`` and an
    ``OrdinalEncoder`` (both refuse sparse input); a Pipeline whose last
    step other than ``"passthrough"``/None is one of these. Anything else
    may pass a sparse input through or return a sparse matrix:
    ``"passthrough"``, a sparse ``OneHotEncoder``, a ``FunctionTransformer``,
    a ``FeatureUnion``, any other transformer.
    """
    from sklearn.pipeline import Pipeline
    from sklearn.preprocessing import OneHotEncoder, OrdinalEncoder

    if isinstance(part, str):
        return part == "drop"
    if isinstance(part, Pipeline):
        steps = [s for _, s in part.steps if s not in ("passthrough", None)]
        return bool(steps) and _always_dense(steps[-1])
    if type(part) is OneHotEncoder:
        return not part.sparse_output
    # skdp's own DP transformers (they refuse sparse input and return
    # arrays); a DP step of another library may return a sparse matrix.
    own = type(part).__module__.split(".")[0] == "skdp"
    return type(part) is OrdinalEncoder or (own and is_dp_estimator(part))


def container_from_density(obj):
    """Names of the parts that make a ``ColumnTransformer``'s choice between a
    sparse and a dense output depend on the data; [] if the choice is fixed
    by its structure (or ``obj`` is not a ColumnTransformer).

    scikit-learn stacks the parts' outputs as a sparse matrix when some part
    returned one and the share of stored values is below
    ``sparse_threshold``; that share is read from the data. The choice is
    fixed only with ``sparse_threshold=0`` (always dense) or when every part,
    the remainder included, always returns a dense array
    (:func:`_always_dense`); otherwise the names of the other parts are
    returned. Read from the parameters alone (fitted or not), so whether a
    ColumnTransformer is named never depends on the data or on the
    container a fit happened to choose. One record can flip the choice, and
    the next step then sees another container (DPLogisticRegression's
    automatic clip and schedule follow it; other DP steps refuse sparse
    input). Shared by the ledger, the budget helpers and the private search.
    """
    from sklearn.compose import ColumnTransformer

    if not isinstance(obj, ColumnTransformer) or obj.sparse_threshold <= 0:
        return []
    parts = composite_parts(obj, fitted=False)
    return [name for name, part in parts if not _always_dense(part)]


def _container_choice(obj, path, leaks):
    """Name a ColumnTransformer whose sparse-or-dense choice reads the data."""
    varying = container_from_density(obj)
    if not varying:
        return
    leaks[
        f"{path} (ColumnTransformer) has sparse_threshold="
        f"{obj.sparse_threshold:g} and parts that may return a sparse matrix "
        f"({', '.join(repr(name) for name in varying)}): it chooses between a "
        "sparse and a dense output from the share of stored values, which "
        "depends on the data, whichever it chose in this fit. One record can "
        "switch the next step between a sparse and a dense input, which "
        "changes what a DP step does (DPLogisticRegression's automatic clip "
        "and schedule) or whether it fits; that is not covered by the "
        "ledger's total. Set sparse_threshold=0 (make_private_pipeline and "
        "set_privacy_budget do)."
    ] = None


def _fitted_with_templates(obj):
    """``(name, fitted child, the unfitted template it was made from)`` of a wrapper.

    The wrappers the ledger knows clone their template for each fit; bagging
    also sets every ``random_state`` it finds in the clone.
    """
    from sklearn.ensemble import (
        BaggingClassifier,
        BaggingRegressor,
        VotingClassifier,
        VotingRegressor,
    )
    from sklearn.feature_selection import SelectFromModel
    from sklearn.multiclass import OneVsRestClassifier
    from sklearn.multioutput import MultiOutputClassifier, MultiOutputRegressor

    kind = type(obj)
    if kind in (
        BaggingClassifier,
        BaggingRegressor,
        OneVsRestClassifier,
        MultiOutputClassifier,
        MultiOutputRegressor,
    ):
        return [
            (f"estimators_[{i}]", e, obj.estimator)
            for i, e in enumerate(obj.estimators_)
        ]
    if kind is SelectFromModel:
        if not hasattr(obj, "estimator_"):  # prefit, used without fit
            return [("estimator", obj.estimator, obj.estimator)]
        return [("estimator_", obj.estimator_, obj.estimator)]
    if kind in (VotingClassifier, VotingRegressor):
        templates = dict(obj.estimators)
        return [(n, e, templates[n]) for n, e in obj.named_estimators_.items()]
    return []


def _seeds_set_by_wrapper(obj, path, leaks):
    """Refuse a wrapper that seeded the noise of its DP fits itself.

    ``BaggingClassifier`` gives every sub-model a seed of its own, drawn from
    its ``random_state``, which by default is NumPy's global random state: a
    ``np.random.seed`` anywhere before the fit makes every sub-model's noise
    reproducible. A fit whose seed fingerprint
    (:func:`skdp.mechanisms.noise_seed_id`) is not the one its template holds
    got its seed from the wrapper.
    """
    seeded = []
    for name, fitted, template in _fitted_with_templates(obj):
        if not hasattr(fitted, "get_params") or not hasattr(template, "get_params"):
            continue
        params = fitted.get_params(deep=True)
        given = template.get_params(deep=True)
        for key in params:
            if key != "random_state" and not key.endswith("__random_state"):
                continue
            owner = (
                fitted
                if key == "random_state"
                else params[key[: -len("__random_state")]]
            )
            cost = getattr(owner, "privacy_spent_", None)
            if not isinstance(cost, PrivacyCost) or not cost.noise_seeds:
                continue
            try:
                seed = noise_seed_id(given.get(key))
            except ValueError:
                seed = None
            if seed not in cost.noise_seeds:
                where = name if key == "random_state" else f"{name}.{key}"
                seeded.append(f"{where} ({type(owner).__name__})")
    if seeded:
        source = (
            "NumPy's global random state (np.random.seed makes it reproducible)"
            if getattr(obj, "random_state", None) is None
            else f"its own random_state={obj.random_state!r}"
        )
        shown = ", ".join(seeded[:3]) + (", ..." if len(seeded) > 3 else "")
        raise ValueError(
            f"{path} ({type(obj).__name__}) seeded the privacy noise of "
            f"{len(seeded)} DP fit(s) it holds ({shown}) from {source}, not "
            "with a seed you gave. The seeds are kept in the fitted model (each "
            "fit's random_state): whoever holds the model can regenerate the "
            "noise and subtract it, so no total covers it. Use a wrapper that "
            "leaves random_state=None on its DP models (VotingClassifier, "
            "OneVsRestClassifier), or release only predictions."
        )


# ---------------------------------------------------------------------------
# The walk
# ---------------------------------------------------------------------------


#: What record() can never count, named in its refusals of arrays, tuples
#: and dicts (the shapes of these functions' results).
_NOT_RECORDABLE = (
    "The results of cross_val_score and cross_val_predict (arrays), "
    "learning_curve and validation_curve (tuples) and permutation_importance "
    "(a Bunch) cannot be "
    "recorded: they keep none of the models they fit, and they release, "
    "without noise, predictions or scores computed on the data they are given "
    "(on the training data, not private at all). Use cross_validate(..., "
    "return_estimator=True, return_indices=True) and record(result, cv=cv), "
    "or compute them on public data."
)


def _warn_leaks(leaks):
    """One PrivacyLeakWarning per step that read the data without a guarantee."""
    for message in leaks:
        warnings.warn(message, PrivacyLeakWarning, stacklevel=3)


def _leak_message(path, estimator):
    from sklearn.preprocessing import FunctionTransformer

    if isinstance(estimator, FunctionTransformer) and not _is_rowwise(estimator.func):
        return (
            f"{path} (FunctionTransformer) applies func={estimator.func!r}, which "
            "is not marked row-wise: if it mixes rows (as "
            "sklearn.preprocessing.scale does), one record moves every row the "
            "next step sees, and no DP step's guarantee downstream holds for the "
            "data set. Mark a function that reads each row on its own with "
            "skdp.rowwise(func) (NumPy ufuncs need no mark)."
        )
    if isinstance(estimator, FunctionTransformer):  # row-wise: check_inverse
        return (
            f"{path} (FunctionTransformer) has check_inverse=True: its fit "
            "applies func then inverse_func to training rows and warns on a "
            "mismatch, a warning that one record can turn on. It is not covered "
            "by the ledger's total; set check_inverse=False."
        )
    private = _PRIVATE_COUNTERPART.get(type(estimator).__name__, "DPStandardScaler")
    return (
        f"{path} ({type(estimator).__name__}) reads the training data without a "
        "privacy guarantee: what it learned is released with the model and is "
        "not covered by the ledger's total, and a DP step fitted on its output "
        "sees rows that every record moves (through what it learned), so that "
        "step's guarantee does not hold for the data set either. Use a private "
        "step (e.g. "
        f"skdp.preprocessing.{private}), public parameters, or fit it on "
        "public data."
    )


#: The private step to suggest in place of a scikit-learn preprocessing step
#: (by class name: the ledger imports no estimator family).
_PRIVATE_COUNTERPART = {
    "MinMaxScaler": "DPMinMaxScaler",
    "QuantileTransformer": "DPQuantileTransformer",
    "RobustScaler": "DPRobustScaler",
}


def _add_cost(cost, path, costs, leaks):
    costs.append(cost)
    for caveat in cost.caveats:
        leaks[f"{path}: the guarantee assumes {caveat}."] = None


def _not_private_attributes(obj, path, leaks):
    """Name the fitted attributes that ``obj``'s own guarantee excludes."""
    names = [a for a in getattr(type(obj), NOT_PRIVATE, ()) if hasattr(obj, a)]
    if names:
        leaks[
            f"{path} ({type(obj).__name__}) holds {', '.join(names)}, which its "
            "guarantee does not cover (see its docstring): the total is for "
            "its DP attributes only. Publish those, not the fitted object "
            "(a pickle carries every attribute)."
        ] = None


#: The attribute by which :class:`skdp.model_selection.DPRandomSearchCV` marks
#: the model it released (and each of its DP steps): ``(the search's cost,
#: the costs the model reported when released)``.
SEARCH_RELEASE = "_skdp_search_release"


def _fits_since_release(obj, path):
    """The costs of the fits of a model a private search released that came
    after the release (its DP steps refitted since; [] if none, or if no
    search released it), and what else the walk noted."""
    release = getattr(obj, SEARCH_RELEASE, None)
    if release is None:
        return [], {}
    own, own_leaks = [], {}
    _collect(obj, path, own, own_leaks, fitted=True, releases=False)
    reported = release[1]
    return [c for c in own if not any(c is r for r in reported)], own_leaks


def _charge_search_release(obj, path, costs, leaks):
    """Charge the private search that released ``obj``, if it did; True then.

    The winner of a private search is one candidate, but releasing it spent
    the whole search (the other runs and the selection): it is charged the
    search's cost (once: the walk stops here, not at its marked steps). A
    part refitted since still has the hyperparameters the search chose from
    the data: its new fit is charged too, beside the search (the fits it
    replaced are in the search's cost already).
    """
    release = getattr(obj, SEARCH_RELEASE, None)
    if release is None:
        return False
    _add_cost(release[0], path, costs, leaks)
    since, own_leaks = _fits_since_release(obj, path)
    for cost in since:
        _add_cost(cost, path, costs, leaks)
    leaks.update(own_leaks)
    return True


def _collect(obj, path, costs, leaks, *, fitted, declared=None, releases=True):
    """Append the costs of every fit inside ``obj`` to ``costs``.

    ``leaks`` (a dict used as an ordered set) gathers one message per step
    that read the data without a guarantee, and per assumption.

    ``fitted=False`` walks an unfitted candidate of a search and charges each
    DP step its declared budget (``declared(path, estimator)``).
    ``releases=False`` charges a private search's winner its own fits only.
    """
    from sklearn.base import BaseEstimator
    from sklearn.model_selection._search import BaseSearchCV
    from sklearn.utils.validation import check_is_fitted

    if isinstance(obj, PrivacyCost):
        _add_cost(obj, path, costs, leaks)
        return
    if fitted and releases and _charge_search_release(obj, path, costs, leaks):
        return
    if fitted and isinstance(obj, BaseEstimator) and not _used_prefit(obj):
        check_is_fitted(obj)
    if isinstance(obj, BaseSearchCV):
        if not fitted:
            raise TypeError(f"{path}: a search inside a search is not supported.")
        _collect_search(obj, path, costs, leaks)
        return
    _value_reading_callables(obj, path, leaks)
    _target_round_trip(obj, path, leaks)
    _container_choice(obj, path, leaks)
    children = _children(obj, fitted, path)
    if children is not None:
        if fitted:
            check_fit_order(obj, path, leaks)
            leak = _label_set_leak(path, obj) if _dp_inside(obj) is not None else None
            if leak:
                leaks[leak] = None
            _seeds_set_by_wrapper(obj, path, leaks)
        for name, child in children:
            if isinstance(child, str) or child is None:
                if child not in _SKIPPED_STEPS:
                    raise TypeError(f"{path}/{name}: unknown step {child!r}.")
                continue
            _collect(
                child,
                f"{path}/{name}",
                costs,
                leaks,
                fitted=fitted,
                declared=declared,
                releases=releases,
            )
        return
    if fitted and hasattr(obj, "privacy_spent_"):
        cost = obj.privacy_spent_
        if not isinstance(cost, PrivacyCost):
            raise TypeError(
                "record() takes a fitted skdp estimator or a PrivacyCost; got "
                f"{type(obj).__name__} whose privacy_spent_ is not a PrivacyCost."
            )
        _add_cost(cost, path, costs, leaks)
        _not_private_attributes(obj, path, leaks)
        winner = getattr(obj, "best_estimator_", None)
        if winner is not None:
            where = f"{path}/best_estimator_"
            release = getattr(winner, SEARCH_RELEASE, None)
            if release is None or release[0] is not obj.privacy_spent_:
                # Replaced since (not the model this search released; maybe
                # another search's): the search predicts with it, so all of
                # its fits are charged, and the search that released it.
                _collect(winner, where, costs, leaks, fitted=True)
                return
            # A private search whose released model was fitted again since:
            # the model it now predicts with spent its new fits too, and a
            # step swapped for one that reads the data is named.
            since, own_leaks = _fits_since_release(winner, where)
            for refit in since:
                _add_cost(refit, path, costs, leaks)
            leaks.update(own_leaks)
        return
    if not fitted and is_dp_estimator(obj):
        _add_cost(declared(path, obj), path, costs, leaks)
        return
    if not isinstance(obj, BaseEstimator):
        raise TypeError(
            "record() takes a fitted skdp estimator, a fitted scikit-learn "
            f"composite or a PrivacyCost; got {type(obj).__name__}. " + _NOT_RECORDABLE
        )
    inner = _dp_inside(obj)
    if inner is not None:
        raise ValueError(
            f"{path} ({type(obj).__name__}) holds a DP estimator "
            f"({type(inner).__name__}) but fits it in a way the ledger cannot "
            "count (how many times, on which rows: internal cross-validation, "
            "bootstrap duplicates, refits it does not keep, or a wrapper it "
            "does not know), so no total would be honest. Put the DP estimator "
            "in a Pipeline, a Voting ensemble, OneVsRestClassifier, "
            "MultiOutput* or SelectFromModel, or record its fits yourself."
        )
    if not _reads_only_shape(obj):
        leaks[_leak_message(path, obj)] = None
    elif _fails_on_an_undeclared_category(obj):
        leaks[
            f"{path} ({type(obj).__name__}) raises on a record outside its "
            "declared categories, quoting it (handle_unknown='error'), or warns "
            "on one (handle_unknown='warn', or a OneHotEncoder with drop): one "
            "record decides whether the fit succeeds, which no DP guarantee "
            "covers. Use "
            "handle_unknown='ignore' without drop (OneHotEncoder) or "
            "handle_unknown='use_encoded_value' with a number as unknown_value "
            "(OrdinalEncoder)."
        ] = None


# ---------------------------------------------------------------------------
# Splitters: how many training parts hold one record, or a refusal
# ---------------------------------------------------------------------------


def training_parts_per_record(cv, n_splits, *, classifier, owner):
    """Most training parts of ``cv``'s splits that one record can be in.

    Refuses (ValueError) a splitter that assigns records to folds from the
    data: changing one record's label or group then moves other records
    between folds, so the fits on neighbouring data sets differ in many
    records and no per-fit guarantee adds up to a total. Refuses unknown
    splitters for the same reason: they may.

    Parameters
    ----------
    cv : None, int, splitter or iterable of (train, test)
        As given to the search or to ``cross_validate``.
    n_splits : int
        The number of splits that were made.
    classifier : bool
        Whether the estimator is a classifier (an integer ``cv`` is then
        ``StratifiedKFold``).
    owner : str
        Who split, for the messages.
    """
    from sklearn.model_selection import (
        KFold,
        LeaveOneOut,
        LeavePOut,
        PredefinedSplit,
        RepeatedKFold,
        ShuffleSplit,
        TimeSeriesSplit,
    )

    if cv is None or (isinstance(cv, numbers.Integral) and not isinstance(cv, bool)):
        if classifier:
            _refuse_splitter(
                owner, f"cv={cv!r} on a classifier (StratifiedKFold)", n_splits
            )
        return n_splits - 1  # KFold: one test fold per record
    kind = type(cv)
    if kind in (KFold, LeaveOneOut):
        return n_splits - 1
    if kind is RepeatedKFold:
        return n_splits - cv.n_repeats
    if kind in (ShuffleSplit, LeavePOut, TimeSeriesSplit, PredefinedSplit):
        return n_splits
    if isinstance(cv, (list, tuple)):
        parts = [_training_rows(train, owner, k) for k, (train, _) in enumerate(cv)]
        if not parts:
            return 0
        return int(np.bincount(np.concatenate(parts)).max(initial=0))
    if hasattr(cv, "__next__"):
        raise ValueError(
            f"{owner} was given an iterator of splits, which the fit used up: "
            "the ledger cannot see which rows each split trained on. Pass a "
            "list of (train, test) index arrays."
        )
    _refuse_splitter(owner, kind.__name__, n_splits)


def _rows(part):
    """A split's part (index array or boolean mask) as an array of indices."""
    rows = np.asarray(part)
    if rows.dtype == bool:
        return np.flatnonzero(rows)
    return rows if rows.size else np.zeros(0, dtype=np.intp)


def _training_rows(train, owner, k):
    """Split ``k``'s training part as non-negative row indices, each at most once.

    Refuses repeats: a record used m times in one fit is a group of m for
    that fit's guarantee (m·μ under μ-GDP), which no per-fit cost states.
    Refuses negative indices: ``-1`` and ``n - 1`` name the same record, and
    the ledger does not know n.
    """
    rows = _rows(train)
    if rows.size == 0:
        return rows
    if rows.ndim != 1 or not np.issubdtype(rows.dtype, np.integer):
        raise ValueError(
            f"{owner}: the training part of split {k} is not a 1-d array of row "
            "indices or a boolean mask."
        )
    if rows.min() < 0:
        raise ValueError(
            f"{owner}: the training part of split {k} has negative row indices; "
            "-1 and n - 1 name the same record, so the ledger could count it "
            "as two. Use indices 0 to n - 1."
        )
    if np.unique(rows).size < rows.size:
        raise ValueError(
            f"{owner}: the training part of split {k} repeats rows (bootstrap-"
            "style splits): a record in a fit m times changes m rows of it, a "
            "group of m that each fit's own guarantee does not cover, so skdp "
            "cannot count these splits. Use splits whose training parts hold "
            "each row at most once (KFold, ShuffleSplit)."
        )
    return rows.astype(np.intp, copy=False)


def _refuse_splitter(owner, splitter, n_splits):
    k = max(int(n_splits), 2)
    raise ValueError(
        f"{owner} splits with {splitter}, which assigns records to folds from "
        "the data (the labels or groups), or may: changing one record can move "
        "many others between folds, so the fits on neighbouring data sets differ "
        "in many records and no per-fit guarantee adds up to a total. Use a "
        f"data-independent splitter: cv=KFold(n_splits={k}, shuffle=True, "
        "random_state=0) (its folds depend only on n and its own seed)."
    )


# ---------------------------------------------------------------------------
# Searches and cross_validate
# ---------------------------------------------------------------------------


def _collect_search(search, path, costs, leaks):
    """Costs of every fit of a fitted search; see :meth:`PrivacyLedger.record`."""
    from sklearn.base import clone, is_classifier

    _refuse_changed_cv(path, search)
    per_record = training_parts_per_record(
        search.cv,
        int(search.n_splits_),
        classifier=is_classifier(search.estimator),
        owner=f"{path} ({type(search).__name__})",
    )
    refit_costs = []
    achieved = {}  # (class, budget adjacency) -> adjacency the refit reported
    has_refit = hasattr(search, "best_estimator_")
    if has_refit:
        _collect(search.best_estimator_, path, refit_costs, leaks, fitted=True)
        _achieved_adjacencies(search.best_estimator_, path, achieved)
        _refuse_user_level_splits(f"{path} ({type(search).__name__})", refit_costs)

    def declared(step_path, estimator):
        seed = estimator.get_params(deep=False).get("random_state")
        if seed is not None:
            raise ValueError(
                f"{step_path} ({type(estimator).__name__}) has random_state="
                f"{seed!r}: the search gives that seed to every fold fit and to "
                "the refit, so they all draw the same noise, which their "
                "releases together can cancel. Leave random_state=None in a "
                "search."
            )
        budget = estimator.privacy_budget()
        key = (type(estimator), budget.adjacency)
        if key in achieved:
            adjacency = achieved[key]
        elif budget.adjacency == REPLACE_ONE_USER:
            raise ValueError(
                f"{step_path} ({type(estimator).__name__}): without a refit the "
                "ledger cannot tell whether user ids reached the fits (with "
                "metadata routing off they do not, and each fit protects one "
                "row, not one user; with them, the search is refused). Search "
                "with refit=True."
            )
        else:
            adjacency = budget.adjacency
        return replace(
            budget,
            adjacency=adjacency,
            mechanism=f"declared budget of {type(estimator).__name__} ({step_path})",
        )

    # The refitted model must not have spent more than its declared budget,
    # or the declared costs of the other fits would not bound theirs. Every
    # skdp fit checks this itself; a refit that says otherwise was tampered
    # with or is not an skdp estimator.
    if has_refit:
        best = clone(search.estimator).set_params(**search.best_params_)
        _refuse_changed_estimator(path, search, best)
        check = []
        _collect(best, path, check, {}, fitted=False, declared=declared)
        # In zCDP, which covers GDP (ρ = μ²/2) and secure noise's zCDP costs.
        actual = [c for c in refit_costs if c.rho is not None]
        bound = [c for c in check if c.rho is not None]
        if actual and bound:
            rho_actual = sum(c.rho for c in actual)
            rho_bound = sum(c.rho for c in bound)
            if rho_actual > rho_bound * (1.0 + 2e-9):
                raise ValueError(
                    f"{path}: the refitted model spent more (rho={rho_actual:.6g}) "
                    f"than its declared budget (rho={rho_bound:.6g}); the other "
                    "fits cannot be bounded from their parameters."
                )
        # The (ε, δ) pairs of steps that are not accounted in zCDP, likewise.
        pairs = [c for c in refit_costs if c.rho is None]
        pair_bound = [c for c in check if c.rho is None]
        if pairs and pair_bound:
            spent = (sum(c.epsilon for c in pairs), sum(c.delta for c in pairs))
            declared_pair = (
                sum(c.epsilon for c in pair_bound),
                sum(c.delta for c in pair_bound),
            )
            over = zip(spent, declared_pair, strict=True)
            if any(a > b * (1.0 + 2e-9) for a, b in over):
                raise ValueError(
                    f"{path}: the refitted model spent more (epsilon, delta = "
                    f"{spent[0]:.6g}, {spent[1]:.3g}) than its declared budget "
                    f"({declared_pair[0]:.6g}, {declared_pair[1]:.3g}); the other "
                    "fits cannot be bounded from their parameters."
                )

    if _schedule_counts_classes(search):
        leaks[
            f"{path} ({type(search).__name__}) with min_resources="
            f"{search.min_resources!r} sets its schedule (min_resources_, "
            "n_resources_, the number of iterations) from the number of classes "
            "present in y: the ledger's total treats which labels occur as "
            "public. Give min_resources an integer."
        ] = None
    why = _unverified_candidates(search, has_refit)
    if why:
        leaks[
            f"{path} ({type(search).__name__}): the candidates are charged at the "
            "parameters they have now, which the ledger cannot check against "
            f"those of the fit ({why}). Record a search before changing its "
            "estimator or the objects in its grid."
        ] = None
    candidate_costs = []
    for params in search.cv_results_["params"]:
        candidate = clone(search.estimator).set_params(**params)
        _collect(
            candidate, path, candidate_costs, leaks, fitted=False, declared=declared
        )
    costs.extend(candidate_costs * per_record)
    costs.extend(refit_costs)
    leaks[
        f"{path} ({type(search).__name__}) chose its best candidate by scores "
        "computed on the private training data (cv_results_, best_score_, "
        "best_params_): that selection is not covered by the ledger's total, "
        "which counts only the fits. skdp.model_selection.DPRandomSearchCV "
        "makes the selection private too."
    ] = None


def _schedule_counts_classes(search):
    """Whether a halving search's schedule read the number of classes in y.

    scikit-learn's ``min_resources`` "smallest" (and "exhaust", which starts
    from it) multiplies the first iteration's samples by
    ``len(np.unique(y))`` for a classifier: one record relabelled to a new
    class changes every iteration's size (review).
    """
    from sklearn.base import is_classifier

    return (
        hasattr(search, "min_resources_")
        and getattr(search, "resource", None) == "n_samples"
        and search.min_resources in ("smallest", "exhaust")
        and is_classifier(search.estimator)
    )


def _unverified_candidates(search, has_refit):
    """Why the candidates' charges cannot be checked against the fit, or None.

    The refit checks what it shares with every candidate
    (:func:`_refuse_changed_estimator`); not a parameter of ``best_params_``
    that some candidates leave at ``search.estimator``'s value, nor an
    estimator object in the grid (each fit used a clone of it as it was
    then; the grid holds the object itself)."""
    if not has_refit:
        return "no refit to compare with"
    varied = set(search.best_params_)
    grids = search.cv_results_["params"]
    if any(not varied <= set(params) for params in grids):
        return (
            "some candidates leave a parameter of best_params_ at "
            "search.estimator's value"
        )
    if any(
        is_dp_estimator(value) or _dp_inside(value) is not None
        for params in grids
        for value in params.values()
        if not isinstance(value, str)
    ):
        return "the grid holds estimator objects"
    return None


def _refuse_changed_cv(path, search):
    """Refuse a search whose ``cv`` now gives another number of splits than
    the fit made (``n_splits_``): the charges are counted from ``cv``, and a
    ``set_params(cv=[])`` after the fit dropped every candidate's."""
    cv = search.cv
    if cv is None:
        now = 5
    elif isinstance(cv, numbers.Integral) and not isinstance(cv, bool):
        now = int(cv)
    elif isinstance(cv, (list, tuple)):
        now = len(cv)
    else:
        try:
            now = int(cv.get_n_splits())
        except (AttributeError, TypeError, ValueError):
            return  # it needs the data to count (LeaveOneOut): checked as it is
    if now != int(search.n_splits_):
        raise ValueError(
            f"{path} ({type(search).__name__}): its cv now gives {now} splits "
            f"where the fit made {int(search.n_splits_)}: cv was changed after "
            "the fit, and the candidates' charges are counted from it. Record "
            "the search before changing it."
        )


def _refuse_changed_estimator(path, search, best):
    """Refuse a search whose ``estimator`` changed after the fit.

    The candidates are charged from ``search.estimator`` (held by reference:
    a ``set_params`` on it after the fit changes it) and their parameters.
    The refit was built the same way during the fit, so each of its DP
    steps must declare the budget of the step at the same place in
    ``best``, the same build now (``best`` may hold more: a
    ColumnTransformer part that selected no column is not fitted).
    """
    then = _declared_budgets(search.best_estimator_, fitted=True)
    now = _declared_budgets(best, fitted=False)
    if not all(
        place in now and _same_budget(budget, now[place])
        for place, budget in then.items()
    ):
        raise ValueError(
            f"{path} ({type(search).__name__}): its estimator with best_params_ "
            "now declares other budgets than the refitted model does, so "
            "search.estimator was changed after the fit (set_params on the "
            "object passed to the search changes search.estimator too). The "
            "candidates' costs are read from it: record the search before "
            "changing its estimator, or pass the search a clone."
        )


def _same_budget(a, b):
    def close(x, y):
        if x is None or y is None:
            return x is None and y is None
        return math.isclose(x, y, rel_tol=1e-12)

    return a.adjacency == b.adjacency and all(
        close(x, y)
        for x, y in (
            (a.epsilon, b.epsilon),
            (a.delta, b.delta),
            (a.mu, b.mu),
            (a.zcdp, b.zcdp),
        )
    )


def _declared_budgets(obj, fitted, place=""):
    """``{place: privacy_budget()}`` of every DP step in ``obj``; a place is
    the path of names, a wrapper's fitted child named as its unfitted one
    (``estimator_`` as ``estimator``, ``estimators_[i]`` as
    ``estimator[i]``)."""
    children = _children(obj, fitted=fitted)
    if children is not None:
        found = {}
        for name, child in children:
            if not isinstance(child, str) and child is not None:
                name = re.sub(r"^estimators?_(\[\d+\])?$", r"estimator\1", name)
                found.update(_declared_budgets(child, fitted, f"{place}/{name}"))
        return found
    return {place: obj.privacy_budget()} if is_dp_estimator(obj) else {}


def _achieved_adjacencies(obj, path, found):
    """Map (class, budget adjacency) of each DP step in ``obj`` to what it reported."""
    children = _children(obj, fitted=True, path=path)
    if children is not None:
        for name, child in children:
            if not isinstance(child, str) and child is not None:
                _achieved_adjacencies(child, f"{path}/{name}", found)
        return
    cost = getattr(obj, "privacy_spent_", None)
    if not isinstance(cost, PrivacyCost):
        return
    if not callable(getattr(obj, "privacy_budget", None)):
        raise ValueError(
            f"{path} ({type(obj).__name__}) reports privacy_spent_ but declares "
            "no privacy_budget(), so the search's other fits cannot be bounded "
            "from their parameters."
        )
    found.setdefault((type(obj), obj.privacy_budget().adjacency), cost.adjacency)


def _collect_cross_validate(result, cv, costs, leaks):
    """Costs of the fold models of ``cross_validate(..., return_estimator=True)``."""
    from sklearn.base import is_classifier

    if "estimator" not in result:
        raise TypeError(
            "record() takes the result of cross_validate(..., "
            "return_estimator=True); this dict has no 'estimator' entry. "
            + _NOT_RECORDABLE
        )
    estimators = list(result["estimator"])
    if cv is None:
        raise ValueError(
            "Pass the splitter the folds came from: record(result, cv=cv). A "
            "splitter that assigns folds from the data makes the fold models' "
            "own guarantees meaningless for the data set as a whole."
        )
    classifier = bool(estimators) and is_classifier(estimators[0])
    training_parts_per_record(
        cv, len(estimators), classifier=classifier, owner="cross_validate"
    )
    if "indices" in result:
        _check_fold_indices(result["indices"], cv, len(estimators))
    else:
        leaks[
            f"record(result, cv={cv!r}) cannot check that this cv made the "
            "folds (a StratifiedKFold, which reads the labels, looks the same): "
            "pass return_indices=True to cross_validate and the ledger checks "
            "them."
        ] = None
    # Every fold model is charged in full: a record is in all but one of a
    # partition's training parts, so this overcounts by at most one fold.
    # Charging only k - 1 (as a search's candidates are) would trust that
    # each model is still the fit on its own fold, which nothing here can
    # check: a fold model refitted on all rows, or a result missing some
    # fold models, was undercharged so (review).
    fold_costs = []
    for i, estimator in enumerate(estimators):
        path = f"cross_validate/estimator[{i}]"
        _collect(estimator, path, fold_costs, leaks, fitted=True)
    _refuse_user_level_splits("cross_validate", fold_costs)
    costs.extend(fold_costs)
    scores = [key for key in result if key.startswith(("test_", "train_"))]
    if scores:
        leaks[
            f"cross_validate's scores ({', '.join(scores)}) are computed on the "
            "private records without noise: the ledger's total covers the fold "
            "models only, not the scores. Do not release them (a test fold of "
            "one record, as with LeaveOneOut, gives that record's exact loss "
            "beside the model that scored it)."
        ] = None


def _check_fold_indices(indices, cv, n_fits):
    """Check that ``cv`` makes the folds ``cross_validate`` reported.

    ``cross_validate(..., return_indices=True)`` keeps the rows of every
    split. ``cv`` (which the ledger vouched for: a training part of an
    explicit list holds each row at most once) must split that many rows
    into exactly these parts, one per fold model, or the result came from
    another splitter. (An integer cv on a classifier, StratifiedKFold, was
    refused before: ``check_cv`` without labels remakes KFold.)
    """
    from sklearn.model_selection import check_cv

    splits = zip(indices["train"], indices["test"], strict=True)
    reported = [(_rows(train), _rows(test)) for train, test in splits]
    n = 1 + max((int(p.max()) for pair in reported for p in pair if p.size), default=-1)
    try:
        remade = check_cv(cv).split(np.zeros((n, 1)))
        remade = [(_rows(train), _rows(test)) for train, test in remade]
    except ValueError:
        remade = None
    same = (
        remade is not None
        and len(remade) == len(reported) == n_fits
        and all(
            np.array_equal(np.sort(a), np.sort(b))
            for pair, other in zip(reported, remade, strict=True)
            for a, b in zip(pair, other, strict=True)
        )
    )
    if not same:
        raise ValueError(
            f"record(result, cv={cv!r}): this cv does not make the folds in "
            "result['indices'], so the result may come from another splitter "
            "(one that reads the data). Pass the splitter the folds came from; "
            "if it shuffles, give it an integer random_state (with None, it "
            "draws new folds at every split and the ledger cannot check them)."
        )


def _refuse_user_level_splits(owner, costs):
    """Refuse splits of the data under a user-level guarantee.

    Replacing one user (however many rows) may change n, and with it every
    fold of a row-level splitter; a group splitter's folds follow the user
    ids, which are private. Either way the fits on neighbouring data sets
    differ in many users.
    """
    if any(c.adjacency == REPLACE_ONE_USER for c in costs):
        raise ValueError(
            f"{owner} split the data of a user-level DP fit: replacing one user "
            "may change the number of rows, and with it every fold a splitter "
            "draws (GroupKFold's folds follow the private user ids), so the fits "
            "on neighbouring data sets differ in many users and no per-fit "
            "guarantee adds up to a total. Tune on public or synthetic users, "
            "then fit once on the private users with groups and record that fit."
        )
