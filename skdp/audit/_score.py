"""The score attack of Cai, Wang & Zhang (paper 003, §2.2) as a membership statistic.

For a model with log-likelihood ``log f_θ(z)`` and score ``S_θ(z) = ∇_θ log
f_θ(z)``, the score attack on a record z against a released estimate M is

.. math:: A_\\theta(z, M) = \\langle M - \\theta, S_\\theta(z) \\rangle

(eq. (2.3)); a large A suggests that z was in the training data. For a
generalised linear model with features ``x̃(x)`` and mean function ``ψ'``,
``S_θ(z) = (y − ψ'(x̃ᵀθ))·x̃`` up to a positive constant (eq. (3.2)); for the
Bradley–Terry model the features of a comparison of items i and j are
``e_i − e_j`` and ``ψ'`` is the logistic function (§4.1).

The paper evaluates A at the true θ. An audit uses a reference ``θ_ref``
fixed before the fits (the spec's "Mode B"; its review §4c): the default
``θ_ref = 0``, or any vector chosen without looking at the audited fits.

Which parameters, features and mean function an estimator has is described by
a *GLM view* (:func:`register_glm_view`): a function of the fitted estimator
returning ``(theta, features, mean)``. Views for the landed GLM-type
estimators are registered here; a new estimator needs one short function.
"""

import numpy as np

__all__ = ["GLMView", "glm_view", "register_glm_view", "score_attack"]

_VIEWS = {}


class GLMView:
    """What the score attack needs to know of a fitted GLM-type estimator.

    Parameters
    ----------
    theta : ndarray of shape (p,)
        The released parameter vector.
    features : callable
        ``features(X) -> ndarray of shape (n, p)``: the design rows ``x̃``
        (with the intercept's constant column, if any).
    mean : callable
        The mean function ``ψ'`` (inverse link) applied to ``x̃ᵀθ``.
    encode : callable
        ``encode(y) -> ndarray``: the response on the scale of ``mean``
        (e.g. 0/1 for a binary classifier).
    """

    def __init__(self, theta, features, mean, encode):
        self.theta = np.asarray(theta, dtype=float).ravel()
        self.features = features
        self.mean = mean
        self.encode = encode


def register_glm_view(estimator_class, view):
    """Register ``view(fitted_estimator) -> GLMView`` for ``estimator_class``."""
    _VIEWS[estimator_class] = view
    return view


def registered_for(table, estimator):
    """The entry of ``table`` for the estimator's class or nearest parent, or None."""
    return next((table[c] for c in type(estimator).__mro__ if c in table), None)


def glm_view(estimator):
    """The :class:`GLMView` of a fitted estimator.

    A view registered for its class or a parent (:func:`register_glm_view`)
    comes first; otherwise the estimator's own ``_audit_glm_view()``, which
    skdp's GLM-type estimators define next to their ``fit`` and which
    returns the :class:`GLMView` fields as a dict (so that the audit
    imports nothing of any estimator).
    """
    view = registered_for(_VIEWS, estimator)
    if view is not None:
        return view(estimator)
    own = getattr(estimator, "_audit_glm_view", None)
    if own is None:
        raise TypeError(
            f"No score-attack view is registered for {type(estimator).__name__}; "
            "register one with skdp.audit.register_glm_view, or pass a statistic."
        )
    return GLMView(**own())


def score_attack(estimator, X, y, theta_ref=None):
    """Score-attack statistics ``A(z_i, M)`` of records against a fitted model.

    Parameters
    ----------
    estimator : fitted estimator
        One with a registered GLM view (DPLogisticRegression (binary),
        DPRandomFeaturesRegressor, DPBradleyTerry).
    X : array-like of shape (n, n_features)
        Records' features (design rows for DPBradleyTerry).
    y : array-like of shape (n,)
        Records' responses.
    theta_ref : array-like of shape (p,), optional
        Reference parameter, fixed independently of the fits being audited.
        Default: zeros.

    Returns
    -------
    scores : ndarray of shape (n,)
        ``(y_i − ψ'(x̃_iᵀθ_ref))·x̃_iᵀ(θ̂ − θ_ref)``; larger suggests membership.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import DPLogisticRegression
    >>> from skdp.audit import score_attack
    >>> rng = np.random.default_rng(0)
    >>> X, y = rng.normal(size=(200, 2)), np.arange(200) % 2
    >>> clf = DPLogisticRegression(classes=[0, 1], random_state=0).fit(X, y)
    >>> score_attack(clf, X[:3], y[:3]).shape
    (3,)
    """
    view = glm_view(estimator)
    features = np.asarray(view.features(X), dtype=float)
    theta_ref = (
        np.zeros_like(view.theta)
        if theta_ref is None
        else np.asarray(theta_ref, dtype=float).ravel()
    )
    if theta_ref.shape != view.theta.shape:
        raise ValueError(
            f"theta_ref must have shape {view.theta.shape}; got {theta_ref.shape}."
        )
    residual = view.encode(np.asarray(y)) - view.mean(features @ theta_ref)
    return residual * (features @ (view.theta - theta_ref))
