"""One total budget for a whole pipeline.

:func:`make_private_pipeline` builds a :class:`~sklearn.pipeline.Pipeline`
and :func:`set_privacy_budget` splits one total (ε, δ) among the DP steps of
any pipeline, so that :class:`~skdp.PrivacyLedger` reports exactly that total
for the fitted pipeline. The split is arithmetic on public parameters: it
reads no data.
"""

import math
from numbers import Real

from sklearn.base import clone
from sklearn.compose import TransformedTargetRegressor
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from ._ledger import (
    _common_adjacency,
    _dp_inside,
    checks_round_trip,
    checks_target_round_trip,
    composite_parts,
    container_from_density,
    is_dp_estimator,
)
from .accounting import (
    epsilon_from_mu,
    epsilon_from_zcdp_tight,
    mu_from_epsilon,
    zcdp_from_epsilon_tight,
)

__all__ = ["make_private_pipeline", "set_privacy_budget"]

#: Every step's share is lowered by this factor, so that the rounding of the
#: conversions can never lift the composed total above the target.
_SAFETY = 1.0 - 1e-9
#: Default weight of the DP transformer of a TransformedTargetRegressor (the
#: other DP steps weigh 1). It releases statistics of the target alone, one
#: column where the features' scaler has d and the model more, so it needs
#: less of μ²; but a target the scaler fails to see costs the whole model,
#: where a feature costs one input. Measured with DPStandardScaler on y after
#: a DPStandardScaler on X (20 splits, median R² of DPLinearRegression /
#: DPRandomFeaturesRegressor, weights 1 → 1/2): at total ε = 1 diabetes
#: −0.13 → −0.02 / 0.19 → 0.26, ISLP Auto −0.06 → 0.39 / 0.61 → 0.68, Credit
#: −0.10 → 0.06 / 0.50 → 0.64, Boston −0.04 → −0.01 / 0.45 → 0.41; at ε = 2
#: all within 0.04; at ε = 0.5 better or within noise, Credit's random
#: features 0.08 → 0.07 (4 splits of 20 below R² −1 against none). A
#: quarter did as well at ε = 1 and 2 but lost Credit's zero-inflated
#: target in 14 splits of 20 at ε = 0.5.
_TARGET_WEIGHT = 0.5


def make_private_pipeline(*steps, epsilon=1.0, delta=1e-5, weights=None, **kwargs):
    """A :func:`~sklearn.pipeline.make_pipeline` whose DP steps share one budget.

    The pipeline is built by :func:`sklearn.pipeline.make_pipeline` (step
    names are the lower-cased class names), then :func:`set_privacy_budget`
    sets the ``epsilon`` and ``delta`` of every DP step in it, nested
    pipelines, :class:`~sklearn.compose.ColumnTransformer`,
    :class:`~sklearn.pipeline.FeatureUnion` and
    :class:`~sklearn.compose.TransformedTargetRegressor` included, so that
    one fit of the pipeline spends exactly (``epsilon``, ``delta``) as
    :class:`~skdp.PrivacyLedger` totals it. A TransformedTargetRegressor
    that transforms y gets ``check_inverse=False`` (its round-trip check on
    y is a release of its own; see :func:`set_privacy_budget`),
    and a ColumnTransformer whose sparse-or-dense output is not fixed by its
    structure (a part that may return a sparse matrix, such as
    ``"passthrough"`` or a sparse ``OneHotEncoder``) gets
    ``sparse_threshold=0``: always dense.

    Every step that holds a DP estimator is cloned
    (:func:`sklearn.base.clone`) before its budget is set, so the budgets
    belong to this pipeline alone: a step object passed to two calls would
    otherwise be re-budgeted by the second, silently breaking the first
    pipeline's total. Read the fitted steps from the pipeline
    (``pipe[0]``, ``pipe.named_steps``), not from the objects passed in.

    Parameters
    ----------
    *steps : list of estimators
        As for :func:`~sklearn.pipeline.make_pipeline`. The steps holding a
        DP estimator are cloned, and the clones' ``epsilon`` and ``delta``
        set (with ``set_params``).
    epsilon : float, default=1.0
        Total ε of one fit of the whole pipeline.
    delta : float, default=1e-5
        Total δ, in (0, 1).
    weights : dict or None, default=None
        Share of each DP step, keyed by its parameter path (e.g.
        ``"dpstandardscaler"``, or ``"columntransformer__num"`` for a step
        inside a ColumnTransformer); steps not named weigh 1, but the
        ``transformer`` of a TransformedTargetRegressor 1/2 (it scales one
        column). See :func:`set_privacy_budget`.
    **kwargs
        ``memory``, ``transform_input`` and ``verbose``, passed to
        :func:`~sklearn.pipeline.make_pipeline`.

    Returns
    -------
    pipeline : Pipeline

    Examples
    --------
    >>> from sklearn.datasets import load_breast_cancer
    >>> from skdp import DPLogisticRegression, DPStandardScaler, PrivacyLedger
    >>> from skdp.pipeline import make_private_pipeline
    >>> X, y = load_breast_cancer(return_X_y=True)
    >>> pipe = make_private_pipeline(
    ...     DPStandardScaler(), DPLogisticRegression(classes=[0, 1]),
    ...     epsilon=1.0, delta=1e-5,
    ... ).fit(X, y)
    >>> total = PrivacyLedger().record(pipe).total()
    >>> round(total.epsilon, 6), total.delta
    (1.0, 1e-05)
    """
    own = [clone(step) if _holds_dp(step) else step for step in steps]
    return set_privacy_budget(
        make_pipeline(*own, **kwargs), epsilon=epsilon, delta=delta, weights=weights
    )


def _holds_dp(step):
    """Whether ``step`` is or holds a DP estimator (a step to clone)."""
    if isinstance(step, str) or step is None:
        return False
    return is_dp_estimator(step) or _dp_inside(step) is not None


def set_privacy_budget(estimator, *, epsilon=1.0, delta=1e-5, weights=None):
    """Split one total (ε, δ) among the DP steps of ``estimator``, in place.

    Every DP step is found through :class:`~sklearn.pipeline.Pipeline`,
    :class:`~sklearn.pipeline.FeatureUnion`,
    :class:`~sklearn.compose.ColumnTransformer` and
    :class:`~sklearn.compose.TransformedTargetRegressor`, nested in any way
    (a DP step is not looked inside). Each gets its own ``epsilon`` and
    ``delta`` so that the fitted composite, recorded by
    :class:`~skdp.PrivacyLedger`, totals (``epsilon``, ``delta``): at most
    that, and equal to it up to rounding (relative 1e-8), except for a step
    whose ``accounting="paper"`` spends less than the pair it declares (the
    total is then below the one asked for).

    Parameters
    ----------
    estimator : estimator
        A DP estimator or a composite holding DP steps. Modified in place
        (``set_params``) and returned, as ``set_params`` does.
    epsilon : float, default=1.0
        Total ε > 0.
    delta : float, default=1e-5
        Total δ in (0, 1); every DP step gets an equal part of it.
    weights : dict or None, default=None
        Weight of each DP step, keyed by its parameter path (the key of
        ``estimator.get_params()`` that holds it); steps not named weigh 1,
        but the DP ``transformer`` of a
        :class:`~sklearn.compose.TransformedTargetRegressor` 1/2: it
        releases statistics of the target alone (one column, where the
        features' scaler has d), and half of the others' μ² served the
        model better on the small tables measured (``_TARGET_WEIGHT``).

    Returns
    -------
    estimator : the same object

    Notes
    -----
    **The split.** Let ``k`` be the number of DP steps and ``W`` the sum of
    their weights. Every step gets ``δ/k``. The steps whose declared budget
    (``privacy_budget()``) is Gaussian-DP or zCDP compose exactly, as the
    ledger composes them (:func:`skdp.accounting.compose`), and together get
    the share ``ε·W_c/W`` of ε (``W_c``: their weights): if all are GDP,
    ``μ = mu_from_epsilon(ε·W_c/W, δ·k_c/k)`` and step ``i`` gets
    ``μ_i = μ·sqrt(w_i/W_c)``, so that ``Σ μ_i² = μ²``; if any is zCDP
    (``noise="secure"``, or :class:`~skdp.DPSparseGLM`'s exact accounting),
    the same with ``ρ`` and ``ρ_i = ρ·w_i/W_c`` (a
    μ-GDP step counts as ``μ²/2``-zCDP). Each step's ``epsilon`` is the
    one that gives it that μ_i or ρ_i at its δ. Any other step (a budget
    stated only as an (ε, δ) pair, e.g. :class:`~skdp.DPSparseGLM` with
    ``accounting="paper"``) adds by basic composition and gets ``ε·w_i/W``.

    The total is exact for one fit of the composite. Fitting it more than
    once on the same data (cross-validation, a search) spends it more than
    once: record the search or the folds with the ledger.

    **The target's round trip.** A
    :class:`~sklearn.compose.TransformedTargetRegressor` that transforms y
    (a ``transformer``, or ``func`` and ``inverse_func``) gets
    ``check_inverse=False``: scikit-learn's check compares
    ``inverse_transform(transform(y))`` with ``y`` on every tenth training
    target and warns on a mismatch, which one record can cause (beyond the
    bounds a private scaler clips to, or beyond ``arctanh``'s precision):
    a release no budget covers (:class:`~skdp.PrivacyLedger` names it where
    it ran).
    So does every :class:`~sklearn.preprocessing.FunctionTransformer` with
    ``func`` and ``inverse_func`` at any depth (a ``log1p`` inside the
    target's transformer), whose own check warns likewise.

    **The container.** A :class:`~sklearn.compose.ColumnTransformer` with
    ``sparse_threshold > 0`` (0.3 by default) stacks its parts as a sparse
    matrix when some part returned one and their share of stored values is
    below the threshold, a share read from the data: one record can flip the
    choice, and the next step then sees another container
    (DPLogisticRegression's automatic clip and schedule follow it; other DP
    steps refuse sparse input). The choice is fixed by the structure only
    when every part, the remainder included, always returns a dense array:
    ``"drop"``, a DP estimator, a ``OneHotEncoder`` with
    ``sparse_output=False``, an ``OrdinalEncoder``, or a Pipeline ending in
    one of these. Every other ColumnTransformer (a ``"passthrough"`` part or
    remainder, a sparse ``OneHotEncoder``, a ``FunctionTransformer``, a
    ``FeatureUnion``, any other transformer, at any depth) gets
    ``sparse_threshold=0``: always dense
    (``skdp._ledger.container_from_density``).

    **Refused**, before anything is changed: a DP step without
    ``epsilon``/``delta`` parameters; a DP estimator held by anything
    other than the four composites above (a wrapper may fit it several
    times, which this split cannot know); steps whose declared guarantees
    hold under adjacencies that no single guarantee covers (a record-level
    scaler in front of a user-level :class:`~skdp.DPFedRep`: the ledger
    would total each adjacency apart, never one (ε, δ)); and weights so
    uneven that a step's share of ε is not a positive number.

    ``estimator`` is changed in place: a DP object that is also a step of
    another pipeline gets this split's budget there too.
    :func:`make_private_pipeline` clones its steps for that reason.

    Examples
    --------
    >>> from sklearn.compose import ColumnTransformer
    >>> from skdp import DPLogisticRegression, DPStandardScaler
    >>> from skdp.pipeline import set_privacy_budget
    >>> from sklearn.pipeline import make_pipeline
    >>> pre = ColumnTransformer([("a", DPStandardScaler(), [0, 1]),
    ...                          ("b", DPStandardScaler(), [2])])
    >>> pipe = make_pipeline(pre, DPLogisticRegression(classes=[0, 1]))
    >>> pipe = set_privacy_budget(pipe, epsilon=2.0, delta=1e-6,
    ...                           weights={"dplogisticregression": 2})
    >>> steps = ["columntransformer__a", "columntransformer__b",
    ...          "dplogisticregression"]
    >>> [round(pipe.get_params()[s].epsilon, 3) for s in steps]
    [0.996, 0.996, 1.446]
    """
    _check_total(epsilon, delta)
    steps = _dp_steps(estimator)
    if not steps:
        raise TypeError(
            f"{type(estimator).__name__} holds no DP estimator: nothing to budget."
        )
    _refuse_shared_steps(steps)
    paths = [path for path, _, _ in steps]
    defaults = [_TARGET_WEIGHT if on_target else 1.0 for _, _, on_target in steps]
    weights = _check_weights(weights, paths, defaults)
    pairs = [(p, step) for p, step, _ in steps]
    params = _split(pairs, weights, float(epsilon), float(delta))
    if "" in params:  # the estimator itself is the one DP step
        return estimator.set_params(**params[""])
    estimator.set_params(
        **{f"{path}__{name}": v for path, p in params.items() for name, v in p.items()}
    )
    for path in _target_round_trips(estimator) + _function_round_trips(estimator):
        estimator.set_params(**{_join(path, "check_inverse"): False})
    for path in _containers_from_density(estimator):
        estimator.set_params(**{_join(path, "sparse_threshold"): 0.0})
    return estimator


def _join(path, name):
    return f"{path}__{name}" if path else name


def _composite_paths(estimator, wanted, path=""):
    """Paths of the composites inside ``estimator`` (itself included) for
    which ``wanted(composite)`` holds, through the known composites."""
    if isinstance(estimator, str) or estimator is None or is_dp_estimator(estimator):
        return []
    children = composite_parts(estimator)
    if children is None:
        return []
    found = [path] if wanted(estimator) else []
    for name, child in children:
        found += _composite_paths(child, wanted, _join(path, name))
    return found


def _target_round_trips(estimator):
    """Paths of the TransformedTargetRegressors that check their round trip
    on y (``check_inverse``, a transformer or ``func`` given): the check
    warns on a mismatch that one record can cause (a target beyond a DP
    scaler's bounds, a ``log1p`` of a target below -1), a release outside
    the budget; the ledger names it."""
    return _composite_paths(
        estimator,
        lambda c: (
            isinstance(c, TransformedTargetRegressor) and checks_target_round_trip(c)
        ),
    )


def _function_round_trips(estimator, path=""):
    """Paths of the FunctionTransformers, at any depth, that check their
    round trip (``func`` and ``inverse_func`` with ``check_inverse=True``):
    the check warns on a mismatch in training rows, which one record can
    cause (a ``log1p`` in a target's transformer; the ledger names it)."""
    if isinstance(estimator, FunctionTransformer):
        return [path] if checks_round_trip(estimator) else []
    if isinstance(estimator, str) or estimator is None or is_dp_estimator(estimator):
        return []
    children = composite_parts(estimator) or []
    if (
        isinstance(estimator, TransformedTargetRegressor)
        and estimator.transformer is None
    ):
        # Its func/inverse_func: the regressor's own check_inverse, above.
        children = [(name, child) for name, child in children if name != "transformer"]
    return [
        found
        for name, child in children
        for found in _function_round_trips(child, _join(path, name))
    ]


def _containers_from_density(estimator):
    """Paths of the ColumnTransformers whose choice between a sparse and a
    dense output is not fixed by their structure
    (:func:`skdp._ledger.container_from_density`)."""
    return _composite_paths(estimator, lambda c: bool(container_from_density(c)))


def _check_total(epsilon, delta):
    if not isinstance(epsilon, Real) or not (0 < epsilon < math.inf):
        raise ValueError(f"epsilon must be a finite number > 0; got {epsilon!r}.")
    if not isinstance(delta, Real) or not (0 < delta < 1):
        raise ValueError(
            f"delta must be in (0, 1); got {delta!r} (Gaussian noise needs delta > 0)."
        )


def _dp_steps(estimator, path="", on_target=False):
    """``[(parameter path, DP step, on_target)]`` found through the known composites.

    ``on_target``: the step is (inside) the ``transformer`` of a
    TransformedTargetRegressor, so it is fitted on y.
    """
    if estimator in ("passthrough", "drop", None) or isinstance(estimator, str):
        return []
    if is_dp_estimator(estimator):
        if not {"epsilon", "delta"} <= set(estimator.get_params(deep=False)):
            raise TypeError(
                f"{type(estimator).__name__} ({path or 'estimator'}) has no "
                "epsilon and delta parameters to set."
            )
        return [(path, estimator, on_target)]
    children = composite_parts(estimator)
    if children is None:  # not a known composite: it must hold no DP estimator
        if _dp_inside(estimator) is not None:
            raise TypeError(
                f"{type(estimator).__name__} ({path or 'estimator'}) holds a DP "
                "estimator but is not a Pipeline, FeatureUnion, ColumnTransformer "
                "or TransformedTargetRegressor: it may fit it more than once, which "
                "a split of one budget cannot know. Set that step's epsilon and "
                "delta yourself and total the fitted object with PrivacyLedger."
            )
        return []
    found = []
    ttr = isinstance(estimator, TransformedTargetRegressor)
    for name, child in children:
        found += _dp_steps(
            child,
            f"{path}__{name}" if path else name,
            on_target or (ttr and name == "transformer"),
        )
    return found


def _refuse_shared_steps(steps):
    """Refuse one DP object at two paths: each path's share would be set on
    the same object in turn, the last one winning, and each place fits it
    (or a clone) with that share, so the total would not be the one asked."""
    seen = {}
    for path, step, _ in steps:
        if id(step) in seen:
            raise ValueError(
                f"The same {type(step).__name__} object is at {seen[id(step)]} "
                f"and at {path}: each place needs its own share of the budget. "
                "Give each place its own instance (e.g. with sklearn.base.clone)."
            )
        seen[id(step)] = path


def _check_weights(weights, paths, defaults):
    """The weights of the steps at ``paths``: given, or ``defaults``."""
    if weights is None:
        return list(defaults)
    if not isinstance(weights, dict):
        raise TypeError(
            f"weights must be a dict or None; got {type(weights).__name__}."
        )
    unknown = sorted(set(weights) - set(paths))
    if unknown:
        raise ValueError(
            f"weights names {unknown}, which are not DP steps; the DP steps are "
            f"{paths}."
        )
    out = [weights.get(path, d) for path, d in zip(paths, defaults, strict=True)]
    for path, w in zip(paths, out, strict=True):
        if not isinstance(w, Real) or not (0 < w < math.inf):
            raise ValueError(f"The weight of {path!r} must be > 0; got {w!r}.")
    # Only their ratios count: relative to the largest, their sum cannot
    # overflow (weights of 1e308 each summed to inf).
    largest = max(float(w) for w in out)
    return [float(w) / largest for w in out]


def _kind(budget):
    """ "gdp", "zcdp" or "pair": how the ledger composes this declared budget."""
    if budget.mu is not None:
        return "gdp"
    return "zcdp" if budget.zcdp is not None else "pair"


def _declared_budgets(steps, delta):
    """Each step's ``privacy_budget()`` at ``delta``; refuses steps whose
    adjacencies no single guarantee covers (the ledger could not total them)."""
    budgets = [
        clone(step).set_params(delta=delta).privacy_budget() for _, step in steps
    ]
    adjacencies = list(dict.fromkeys(b.adjacency for b in budgets))
    if _common_adjacency(adjacencies) is None:
        where = ", ".join(
            f"{path or 'estimator'}: {b.adjacency!r}"
            for (path, _), b in zip(steps, budgets, strict=True)
        )
        raise ValueError(
            "The DP steps protect different units, and no single (epsilon, delta) "
            f"covers them all ({where}): to one user, a record-level step costs "
            "as much as a group of as many records as the user holds. Fit the "
            "record-level steps on other data, or put before a user-level step "
            "only steps that read nothing but the data's shape."
        )
    return budgets


def _refuse_empty_shares(steps, eps, weights, delta):
    """Refuse a split that leaves a step no positive ε: weights too uneven,
    or a δ so large that the step's share of it alone would cover it."""
    largest = max(weights)
    for (path, _), e, w in zip(steps, eps, weights, strict=True):
        if 0.0 < e < math.inf:
            continue
        name = path or "the estimator"
        if w < largest:
            raise ValueError(
                f"The weight of {name!r} is too small beside the others "
                f"({w / largest:.3g} of the largest): its share of epsilon is "
                f"{e!r}, not a positive number. Raise that weight."
            )
        raise ValueError(
            f"At delta={delta!r} the share of epsilon of {name!r} is {e!r}, not a "
            "positive number: its share of delta alone would cover its noise. "
            "Lower delta (below 1/n, as a rule) or raise epsilon."
        )


def _split(steps, weights, epsilon, delta):
    """``{path: {"epsilon": ε_i, "delta": δ_i}}`` (see set_privacy_budget)."""
    k = len(steps)
    step_delta = delta / k
    if delta > 0 and not step_delta > 0:
        raise ValueError(
            f"delta={delta!r} split over {k} DP steps gives each step a delta "
            f"of {step_delta!r}, which is 0 in floating point: raise delta."
        )
    kinds = [_kind(b) for b in _declared_budgets(steps, step_delta)]
    total_weight = sum(weights)
    concentrated = [i for i, kind in enumerate(kinds) if kind != "pair"]
    eps = [epsilon * w / total_weight * _SAFETY for w in weights]  # basic composition
    if concentrated:
        weight_c = sum(weights[i] for i in concentrated)
        eps_c = epsilon * weight_c / total_weight
        delta_c = step_delta * len(concentrated)
        if "zcdp" in kinds:
            rho = zcdp_from_epsilon_tight(eps_c, delta_c)
            for i in concentrated:
                rho_i = rho * weights[i] / weight_c * _SAFETY
                eps[i] = (
                    epsilon_from_zcdp_tight(rho_i, step_delta)
                    if kinds[i] == "zcdp"
                    else epsilon_from_mu(math.sqrt(2.0 * rho_i), step_delta)
                )
        else:
            mu = mu_from_epsilon(eps_c, delta_c)
            for i in concentrated:
                mu_i = mu * math.sqrt(weights[i] / weight_c) * _SAFETY
                eps[i] = epsilon_from_mu(mu_i, step_delta)
    _refuse_empty_shares(steps, eps, weights, delta)
    return {
        path: {"epsilon": eps[i], "delta": step_delta}
        for i, (path, _) in enumerate(steps)
    }
