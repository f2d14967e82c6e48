"""Canaries: neighbouring data sets under an estimator's adjacency, and a statistic.

A canary turns base data ``(X, y)`` into two data sets that are neighbours
under the adjacency the estimator's guarantee is stated for
(``privacy_spent_.adjacency``) and says how to score a fitted model: larger
scores should mean "fitted on the data set that holds the canary". Every
canary has

* ``build(estimator, X, y) -> ((X_in, y_in), (X_out, y_out))``;
* ``adjacencies``: the adjacencies under which the two data sets are
  neighbours (the audit refuses any other claim);
* ``statistic(fitted)``: a white-box score (it may read fitted parameters);
* ``loss(fitted)``: a black-box score, minus the canary record's loss under
  the fitted model (only ``predict``-type methods);
* ``expected_mu(fitted)``: the GDP parameter the two data sets are designed
  to attain with ``statistic``, when known (else None).

A new estimator names its default canary (often an existing one) in its
own ``_audit_canary()`` and, for the score attack, offers a GLM view in
``_audit_glm_view()``, next to its ``fit``; a user may instead register
them (:func:`register_canary`, :func:`~skdp.audit.register_glm_view`). The
canaries live by what they audit: :mod:`skdp.audit._dpgd_canaries` (GLM
records, gradients in the DP-GD engine, comparison outcomes),
:mod:`skdp.audit._release_canaries` (one-shot releases: the sampler,
moments, histograms, Gram matrices) and this module (a user's whole data,
a search, and the defaults).

**Worst-case canaries for DP-GD.** :class:`GradientCanary` (the default of
DPLogisticRegression and DPRandomFeaturesRegressor, which run the DP-GD
engine) is a *gradient canary* (Nasr et al. 2023, §4): one record's clipped
gradient is replaced, at every step, by a gradient of norm exactly the clip
norm C along a unit direction u of parameter space, ``−C·u`` with the
canary and ``+C·u`` without it; for logistic regression u is the
coefficient of an all-zero feature column appended to the data, which no
other record's gradient touches. The two transcripts of noisy gradients then
differ by ``2C`` along u at every step, which attains the replace-one
sensitivity whatever the step rule, the learning rate or the data, and the
released ``θ·u`` depends on nothing but the canary and the noise along u:
for plain gradient steps it is the likelihood-ratio statistic of the
release and measures the claimed μ exactly (for Adam with iterate
averaging, the default of DPLogisticRegression, about 90% of it,
measured).

**Record canaries.** :class:`GLMCanary` puts one record far
out along a fixed direction, so that its gradient is clipped to exactly the
clip norm C at every step, pointing along ``±x̃_c/||x̃_c||``; its neighbour
has the other label (or the opposite target), which flips the sign. The two
clipped gradient sums then differ by ``2C`` in a fixed direction at every
step: the replace-one sensitivity is attained. Run with plain gradient
steps and a small learning rate (the iterate then stays near its start, so
the canary stays clipped and the other records' gradients are the same in
both worlds), the projection of the released parameters on that direction
is Gaussian with means ``2C·T`` apart (times ``−η/n``) and standard
deviation ``sqrt(T)·z·2C`` (same factor): exactly the steps' ``μ =
sqrt(T)/z``, the whole claim unless DPLogisticRegression released its class
counts for the intercept's start first (2% of μ², which the projection
does not read). The score attack on the canary record is that projection
up to an affine map, so its μ̂ estimates the claimed μ, and any shortfall of
noise shows up as a larger μ̂.
"""

import numpy as np
from sklearn.utils import check_array

from ..accounting import REPLACE_ONE, REPLACE_ONE_USER
from ._canary import Canary, _unit
from ._dpgd_canaries import (  # noqa: F401  (re-exported)
    GLMCanary,
    GradientCanary,
    OutcomeCanary,
    engine_parameters,
)
from ._far_canaries import (  # noqa: F401  (re-exported)
    FarBallCanary,
    FarExtremeRecordCanary,
    FarGramCanary,
)
from ._release_canaries import (  # noqa: F401  (re-exported)
    BallCanary,
    ClassRecordCanary,
    ExtremeRecordCanary,
    GramCanary,
    HistogramCanary,
    UnboundedCanary,
)
from ._score import registered_for

__all__ = [
    "BallCanary",
    "Canary",
    "ClassRecordCanary",
    "GLMCanary",
    "GradientCanary",
    "GramCanary",
    "OutcomeCanary",
    "SearchCanary",
    "UnboundedCanary",
    "default_canary",
    "register_canary",
]


_DEFAULTS = {}


class UserCanary(Canary):
    """Replace one user's whole data by a canary user (DPFedRep).

    The base data's user ``user`` (ids in ``groups``) is replaced, in the
    "in" data set, by ``n_rows`` rows ``x ~ N(0, I)`` with targets
    ``scale·⟨x, direction⟩``: many rows that all push the shared
    representation toward ``direction``. In the "out" data set the user
    keeps its own rows, or, with ``out_direction``, is replaced by the same
    rows with targets ``scale·⟨x, out_direction⟩`` (a user pushing another
    way, so that the two worlds can differ by up to twice the clip).
    Neighbours under *replace one user*. The white-box :meth:`statistic` is
    the squared norm of the projection of ``components_`` on ``direction``.

    Parameters
    ----------
    groups : array-like of shape (n_samples,)
        The base data's user ids.
    user : object
        Which user is replaced (one of ``groups``).
    n_rows : int, default=400
        Rows of the canary user.
    scale : float, default=10.0
        Size of the canary's targets.
    direction : array-like of shape (n_features,), optional
        Default: the first coordinate axis.
    out_direction : array-like of shape (n_features,), optional
        Direction of the "out" world's canary user (default: no canary, the
        user keeps its rows).
    seed : int, default=0
        Seeds the canary's rows (the same in every fit).
    """

    adjacencies = (REPLACE_ONE_USER,)

    def __init__(
        self,
        groups,
        user,
        *,
        n_rows=400,
        scale=10.0,
        direction=None,
        out_direction=None,
        seed=0,
    ):
        self.groups = groups
        self.user = user
        self.n_rows = n_rows
        self.scale = scale
        self.direction = direction
        self.out_direction = out_direction
        self.seed = seed

    def build(self, estimator, X, y):
        X = check_array(X, dtype=np.float64)
        groups = np.asarray(self.groups)
        if groups.shape != (X.shape[0],) or not np.any(groups == self.user):
            raise ValueError("groups must give a user id per row and contain user.")
        d = X.shape[1]
        rows = np.random.default_rng(self.seed).standard_normal((self.n_rows, d))
        keep = groups != self.user

        def with_canary(direction):
            X_c = np.vstack([X[keep], rows])
            y_c = np.concatenate(
                [np.asarray(y, dtype=float)[keep], self.scale * rows @ direction]
            )
            groups_c = np.concatenate([groups[keep], np.full(self.n_rows, self.user)])
            return X_c, y_c, {"groups": groups_c}

        self.direction_ = _unit(self.direction, d)
        if self.out_direction is None:
            return with_canary(self.direction_), (X, y, {"groups": groups})
        return with_canary(self.direction_), with_canary(_unit(self.out_direction, d))

    def statistic(self, fitted):
        return float(np.sum((fitted.components_ @ self.direction_) ** 2))


class SearchCanary(Canary):
    """The canary of a private search's estimator, scored on its winner.

    Audits :class:`~skdp.model_selection.DPRandomSearchCV` as a whole: the
    neighbouring data sets are those of ``canary`` (default: the canary
    registered for the search's estimator), every trial runs the whole
    search (its random split, number of runs, candidates and noisy scores),
    and the statistic scores the released ``best_estimator_``. The record
    lands in the training part or the validation part as the search's split
    falls; the claim tested is the search's total.

    Parameters
    ----------
    canary : Canary, optional
        The canary of the search's estimator.
    """

    def __init__(self, canary=None):
        self.canary = canary

    @property
    def adjacencies(self):
        inner = getattr(self, "canary_", self.canary)
        return (REPLACE_ONE,) if inner is None else inner.adjacencies

    def build(self, estimator, X, y):
        inner = estimator.estimator
        self.canary_ = self.canary if self.canary is not None else default_canary(inner)
        return self.canary_.build(inner, X, y)

    def statistic(self, fitted):
        return self.canary_.statistic(fitted.best_estimator_)

    def loss(self, fitted):
        return self.canary_.loss(fitted.best_estimator_)

    def __repr__(self):
        # The report names the canary that was used, once it is chosen.
        inner = getattr(self, "canary_", self.canary)
        return f"SearchCanary({'' if inner is None else repr(inner)})"


def register_canary(estimator_class, factory):
    """Make ``factory(estimator) -> Canary`` the default canary of a class."""
    _DEFAULTS[estimator_class] = factory
    return factory


def default_canary(estimator):
    """The default canary for ``estimator``.

    One registered for its class or a parent (:func:`register_canary`) comes
    first; otherwise the estimator names its own: skdp's estimators define
    ``_audit_canary()`` next to their ``fit``, returning the name of a
    canary class of :mod:`skdp.audit` and its parameters (so that the audit
    imports nothing of any estimator, and a new estimator plugs in without
    editing the audit).
    """
    factory = registered_for(_DEFAULTS, estimator)
    if factory is not None:
        return factory(estimator)
    own = getattr(estimator, "_audit_canary", None)
    if own is None:
        raise TypeError(
            f"No default canary is registered for {type(estimator).__name__}: pass "
            "canary=... or register one with skdp.audit.register_canary."
        )
    name, params = own()
    return _CANARY_CLASSES[name](**params)


#: Canary classes by name, for the estimators' ``_audit_canary()``.
_CANARY_CLASSES = {
    name: value
    for name, value in list(globals().items())
    if isinstance(value, type) and issubclass(value, Canary)
}
