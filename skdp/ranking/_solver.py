"""Post-processing for DPBradleyTerry: the penalised MLE given the win counts.

Nothing here reads private data. :func:`penalised_mle` receives the public
(clipped) design and the *noisy* win-count vector; :func:`project_scores`
receives an estimate that is already private. Any solver and any tolerance
is therefore private (post-processing); these are chosen for speed and
accuracy only.
"""

import numpy as np
import scipy.linalg
import scipy.sparse as sp
from scipy.sparse.linalg import LinearOperator, cg
from scipy.special import expit

from .._dpgd import canonical_design, row_norms

# Newton systems up to this many items are solved by dense Cholesky
# (n_items² floats of memory); larger ones by preconditioned conjugate
# gradients on Hessian-vector products (O(nnz(X)) memory).
DENSE_NEWTON_MAX_ITEMS = 300
_MAX_NEWTON_STEPS = 100
_MAX_HALVINGS = 60
_ARMIJO = 1e-4
# Stop when every coordinate of the gradient is below this, relative to the
# largest win count (the gradient's natural scale).
_GRADIENT_RTOL = 1e-9
_MAX_BISECTIONS = 200
# Relative float resolution of the objective value, with a margin.
_RESOLUTION = 1e-12


def clip_rows(X, bound):
    """``X`` with every row scaled down to L2 norm at most ``bound``.

    Rows ``e_i − e_j`` have norm exactly ``sqrt(2)`` and pass unchanged when
    ``bound = sqrt(2)``. Norms are computed without overflow
    (:func:`skdp._dpgd.row_norms`); a row whose norm exceeds the float range
    becomes zero. Sparse input is made canonical first (duplicate entries
    summed), so the clipped norm is the norm of the row the model reads. The
    caller's matrix is never modified.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_rows, n_items)
        Finite float64 rows.
    bound : float
        Largest row norm kept.

    Returns
    -------
    X_clipped : ndarray or scipy.sparse.csr_matrix
    """
    X = canonical_design(X)
    norms = row_norms(X)
    scale = bound / np.maximum(norms, bound)  # min(1, bound/norm); 0 for inf
    if sp.issparse(X):
        X = X.copy()
        X.data *= np.repeat(scale, np.diff(X.indptr))
        return X
    return X * scale[:, None]


def collapse_duplicate_rows(X):
    """Distinct rows of ``X`` and how often each occurs.

    The likelihood term ``Σ_r log(1 + exp(x_r·θ))`` only needs each distinct
    row once, weighted by its count: with 100 items and 10⁵ comparisons
    there are at most 4950 distinct rows ``e_i − e_j`` (ordered: 9900).
    Rows are grouped by a fixed random projection (identical rows give
    bit-identical projections) and the grouping is then verified exactly;
    if any group holds different rows, or collapsing would not halve the
    rows, ``X`` is returned unchanged with unit weights. Reads only the
    (public) design.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_rows, n_items)

    Returns
    -------
    X_distinct : ndarray or sparse matrix of shape (n_distinct, n_items)
    weights : ndarray of shape (n_distinct,)
        Number of rows of ``X`` equal to each row of ``X_distinct``.
    """
    n_rows, n_items = X.shape
    projection = np.random.default_rng(0).standard_normal(n_items)
    keys = np.asarray(X @ projection).ravel()
    _, first, inverse, counts = np.unique(
        keys, return_index=True, return_inverse=True, return_counts=True
    )
    if 2 * first.size > n_rows:
        return X, np.ones(n_rows)
    representative = X[first[inverse]]
    difference = X - representative
    if sp.issparse(difference):
        exact = not np.any(difference.data)
    else:
        exact = not np.any(difference)
    if not exact:
        return X, np.ones(n_rows)
    return X[first], counts.astype(np.float64)


def _objective(z, theta, b, alpha, weights):
    # alpha: a scalar or one penalty per item.
    return float(
        weights @ np.logaddexp(0.0, z) - b @ theta + 0.5 * (alpha * theta) @ theta
    )


def _dense_hessian(X, weights, alpha):
    if sp.issparse(X):
        hessian = (X.T @ (sp.diags(weights) @ X)).toarray()
    else:
        hessian = X.T @ (X * weights[:, None])
    hessian.flat[:: hessian.shape[0] + 1] += alpha
    return hessian


def _newton_direction(X, weights, alpha, gradient):
    """Solve ``(Xᵀ diag(weights) X + diag(alpha)) d = −gradient``."""
    n_items = X.shape[1]
    if n_items <= DENSE_NEWTON_MAX_ITEMS:
        hessian = _dense_hessian(X, weights, alpha)
        try:
            return scipy.linalg.solve(
                hessian, -gradient, assume_a="pos", check_finite=False
            )
        except np.linalg.LinAlgError:  # alpha so small that rounding breaks PD
            return np.linalg.lstsq(hessian, -gradient, rcond=None)[0]
    square = X.multiply(X) if sp.issparse(X) else X * X
    diagonal = np.asarray(square.T @ weights).ravel() + alpha

    def hessian_vector(v):
        return X.T @ (weights * (X @ v)) + alpha * v

    operator = LinearOperator((n_items, n_items), matvec=hessian_vector)
    jacobi = LinearOperator((n_items, n_items), matvec=lambda v: v / diagonal)
    # An inexact Newton step (CG's default relative residual 1e-5) is still
    # a descent direction; the line search and the outer loop do the rest.
    # atol=0 is scipy's default since 1.12; scipy < 1.12 warns without it.
    direction, _ = cg(operator, -gradient, M=jacobi, maxiter=10 * n_items, atol=0.0)
    return direction


def penalised_mle(X, b, alpha, weights=None):
    """``argmin_θ Σ_r w_r·log(1 + exp(x_r·θ)) − b·θ + (1/2)·Σ_i alpha_i·θ_i²``.

    With ``b`` the win-count vector ``Xᵀy`` this is the L2-penalised
    Bradley–Terry (logistic) maximum-likelihood estimate; with ``b`` a noisy
    release of it, the estimator (4.4) of Cai, Wang & Zhang (Score Attack,
    §4.2) without the constraint set. The objective is smooth and
    ``min(alpha)``-strongly convex, so damped Newton steps (Armijo backtracking)
    converge to its unique minimiser from ``θ = 0``, quadratically near it.

    Parameters
    ----------
    X : {ndarray, sparse matrix} of shape (n_rows, n_items)
        Design rows (public).
    b : ndarray of shape (n_items,)
        Linear term (the released, noisy win counts).
    alpha : float or ndarray of shape (n_items,)
        Penalty, > 0: one for every item, or one per item.
    weights : ndarray of shape (n_rows,), optional
        Multiplicity ``w_r`` of each row (see :func:`collapse_duplicate_rows`);
        default 1.

    Returns
    -------
    theta : ndarray of shape (n_items,)
    n_steps : int
        Newton steps taken.
    """
    theta = np.zeros(X.shape[1])
    z = np.zeros(X.shape[0])
    weights = np.ones(X.shape[0]) if weights is None else weights
    value = _objective(z, theta, b, alpha, weights)
    tolerance = _GRADIENT_RTOL * max(1.0, float(np.max(np.abs(b), initial=0.0)))
    for step in range(_MAX_NEWTON_STEPS):
        p = expit(z)
        gradient = X.T @ (weights * p) - b + alpha * theta
        if np.max(np.abs(gradient), initial=0.0) <= tolerance:
            return theta, step
        direction = _newton_direction(X, weights * p * (1.0 - p), alpha, gradient)
        dz = X @ direction
        slope = float(gradient @ direction)
        if not slope < 0.0:  # no descent left at float precision
            return theta, step
        size = 1.0
        if -slope <= _RESOLUTION * max(1.0, abs(value)):
            # The predicted decrease is below what float64 resolves in the
            # objective: a line search would only see rounding. This close to
            # the minimum the full Newton step converges quadratically.
            if np.max(np.abs(direction)) <= _RESOLUTION * (1.0 + np.max(np.abs(theta))):
                return theta, step + 1  # converged to float precision
            theta = theta + direction
            z = X @ theta
            value = _objective(z, theta, b, alpha, weights)
            continue
        for _ in range(_MAX_HALVINGS):
            candidate = theta + size * direction
            candidate_value = _objective(z + size * dz, candidate, b, alpha, weights)
            if candidate_value <= value + _ARMIJO * size * slope:
                break
            size *= 0.5
        else:  # the objective cannot decrease further in float64
            return theta, step
        theta, value = candidate, candidate_value
        z = X @ theta
    return theta, _MAX_NEWTON_STEPS


def project_scores(theta, bound):
    """Euclidean projection of ``theta`` onto ``{t : Σ t = 0, ||t||∞ <= bound}``.

    The projection is ``clip(theta − τ, −bound, bound)`` with the shift τ
    that makes the sum zero (KKT conditions of the projection onto a box cut
    by a hyperplane); τ is found by bisection, the sum being decreasing in τ.
    ``bound=None`` only centres. If the centred vector already lies in the
    box it is returned as is.

    Parameters
    ----------
    theta : ndarray of shape (n_items,)
    bound : float or None

    Returns
    -------
    scores : ndarray of shape (n_items,)
    """
    centred = theta - theta.mean()
    if bound is None or np.max(np.abs(centred)) <= bound:
        return centred
    low, high = float(theta.min()) - bound, float(theta.max()) + bound
    for _ in range(_MAX_BISECTIONS):
        tau = 0.5 * (low + high)
        if tau in (low, high):
            break
        if np.clip(theta - tau, -bound, bound).sum() > 0.0:
            low = tau
        else:
            high = tau
    return np.clip(theta - 0.5 * (low + high), -bound, bound)
