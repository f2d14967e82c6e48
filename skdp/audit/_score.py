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
import scipy.sparse as sp
from scipy.special import expit

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
    """The :class:`GLMView` of a fitted estimator (by its class or a parent)."""
    view = registered_for(_VIEWS, estimator)
    if view is None:
        raise TypeError(
            f"No score-attack view is registered for {type(estimator).__name__}; "
            "register one with skdp.audit.register_glm_view, or pass a statistic."
        )
    return view(estimator)


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
    >>> clf = DPLogisticRegression(classes=[0, 1]).fit(X, y)
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


# -- views of the landed estimators ------------------------------------------


def _logistic_view(est):
    if est.classes_.size != 2:
        raise ValueError("The score attack view of DPLogisticRegression is binary.")
    theta = np.concatenate([est.coef_.ravel(), est.intercept_])

    def features(X):
        X = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=float)
        return np.hstack([X, np.ones((X.shape[0], 1))])

    return GLMView(theta, features, expit, lambda y: (y == est.classes_[1]) * 1.0)


def _random_features_view(est):
    from ..random_features._features import features as feature_map
    from ..random_features._features import resolve_activation

    activation = resolve_activation(est.activation)

    def features(X):
        X = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=float)
        return feature_map(X, est.random_weights_, activation)

    return GLMView(est.coef_, features, lambda z: z, lambda y: y * 1.0)


def _bradley_terry_view(est):
    from ..ranking._bradley_terry import ROW_NORM_BOUND
    from ..ranking._solver import clip_rows

    def features(X):
        X = X if sp.issparse(X) else np.asarray(X, dtype=float)
        X = clip_rows(X, ROW_NORM_BOUND)
        return X.toarray() if sp.issparse(X) else X

    return GLMView(est.scores_, features, expit, lambda y: (y == est.classes_[1]) * 1.0)


def _sparse_glm_view(est):
    from ..linear_model._sparse_glm import _make_datafit, clip_features

    theta = np.concatenate([est.coef_, [est.intercept_]])
    inverse_link = _make_datafit(est.family).inverse_link

    def features(X):
        X = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=float)
        X = clip_features(X, est.x_bound)
        return np.hstack([X, np.ones((X.shape[0], 1))])

    return GLMView(
        theta, features, lambda z: inverse_link(z[:, None])[:, 0], lambda y: y * 1.0
    )


def _linear_regression_view(est):
    from .._gram import clipped_rows

    coef = np.asarray(est.coef_, dtype=float)
    if coef.ndim != 1:
        raise ValueError("The score attack view of DPLinearRegression is one-output.")
    theta = np.append(coef, est.intercept_)

    def features(X):
        X = np.asarray(X.toarray() if sp.issparse(X) else X, dtype=float)
        # The intercept's column is in the fitted row only with fit_intercept;
        # its coefficient (intercept_) is 0 otherwise.
        return np.hstack([clipped_rows(X, est.clip_norm_), np.ones((X.shape[0], 1))])

    return GLMView(theta, features, lambda z: z, lambda y: y * 1.0)


def _register_landed():
    from ..linear_model import DPLinearRegression, DPLogisticRegression, DPSparseGLM
    from ..random_features import DPRandomFeaturesRegressor
    from ..ranking import DPBradleyTerry

    register_glm_view(DPLogisticRegression, _logistic_view)
    register_glm_view(DPSparseGLM, _sparse_glm_view)
    register_glm_view(DPRandomFeaturesRegressor, _random_features_view)
    register_glm_view(DPBradleyTerry, _bradley_terry_view)
    register_glm_view(DPLinearRegression, _linear_regression_view)


_register_landed()
