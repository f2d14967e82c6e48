"""DPPCA: principal components of a Gaussian-noised second moment (Analyze Gauss)."""

import math
import warnings
from numbers import Integral

import numpy as np
import scipy.linalg
from sklearn.base import (
    BaseEstimator,
    ClassNamePrefixFeaturesOutMixin,
    TransformerMixin,
    _fit_context,
)
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, validate_data

from .._base import (
    CLIP_CONSTRAINT,
    PRIVACY_CONSTRAINTS,
    DPEstimatorMixin,
    is_dask_array,
    private_fit,
    private_transform,
    require_positive_delta,
    scaled_product,
    warn_if_delta_is_large,
)
from .._gram import (
    clipped_gram,
    gram_noise_norm_bound,
    row_norm_bound,
    warn_if_rows_point_one_way,
)
from ..accounting import REPLACE_ONE, gaussian_cost, gaussian_noise_multiplier
from ..mechanisms import as_generator, gram_mechanism, gram_sensitivity

#: The constant coordinate that carries the centring, relative to the clip:
#: with ``c = C/2`` the sums ``Σx̃`` get noise std ``2.5·z·C`` and the second
#: moment ``1.25·sqrt(2)·z·C²`` on its diagonal (25% more than without
#: centring), the same trade-off as the joint release of
#: :class:`~skdp.DPGaussianSampler` (κ = 5/4).
_CENTRING_SHARE = 0.5


def _auto_clip_norm(n_features):
    """``sqrt(d)``: the root-mean-square row norm of d standardised features."""
    return math.sqrt(n_features)


def _warn_if_unresolved(eigenvalues, k, noise_norm):
    """Warn when the kept axes are not resolved above the noise (post-processing).

    ``eigenvalues``: of the noisy covariance, decreasing. By Davis–Kahan, the
    kept subspace is off by at most about ``||E||/gap`` (sine of the largest
    principal angle), with ``gap`` the released ``λ_k − λ_{k+1}`` and
    ``||E||`` the noise's operator norm on the covariance, bounded from
    public values (:func:`skdp._gram.gram_noise_norm_bound`). A gap below
    that bound leaves the weakest axes to the noise: on standardised digits
    (n = 1797, d = 64) at ε = 1 the top 5 axes were 57-74° from
    scikit-learn's, the gap 0.13 of the bound (digits/16: 87-89°, 0.03-0.06);
    a 5-dimensional signal at n = 10⁴, d = 50 has 2.4 and 7°, and 0.08 and
    32° at ε = 0.1 (the bound is loose: a guarantee, not an estimate).
    """
    gap = eigenvalues[k - 1] - eigenvalues[k]
    if gap < noise_norm:
        warnings.warn(
            f"DPPCA: the top {k} axes are not resolved above the noise (the "
            f"released eigengap after axis {k} is {gap / noise_norm:.2f} of a "
            "bound on the noise's norm), so the weakest of components_ may be "
            "far from the data's axes, up to random: use more rows, fewer "
            "features, a larger epsilon, or fewer n_components where the "
            "spectrum has a gap.",
            UserWarning,
            stacklevel=5,  # the caller of fit (through its two decorators)
        )


class DPPCA(
    DPEstimatorMixin, ClassNamePrefixFeaturesOutMixin, TransformerMixin, BaseEstimator
):
    """Differentially private PCA from a noisy second moment (Analyze Gauss).

    Every row is clipped to L2 norm ``clip_norm``; the second moment
    ``Σ_i x̃_i x̃_iᵀ`` (and, with ``with_mean``, the column sums, as a
    constant coordinate of the same rows) is released once with symmetric
    Gaussian noise (:func:`skdp.mechanisms.gram_mechanism`; Dwork, Talwar,
    Thakurta & Zhang 2014, Algorithm 1). The principal axes are the top
    eigenvectors of the noisy covariance: post-processing. ``transform``
    projects as :class:`sklearn.decomposition.PCA` does, so the transformer
    goes in front of any skdp model in a ``Pipeline``, and
    :class:`~skdp.PrivacyLedger` counts it.

    Parameters
    ----------
    n_components : int or None, default=None
        Number of components kept (at most ``n_features``); None keeps all.
    epsilon : float, default=1.0
        Privacy budget ε > 0 of one fit.
    delta : float, default=1e-5
        Privacy parameter δ in (0, 1); should be well below ``1/n_samples``
        (a :class:`~skdp.PrivacyLeakWarning` is raised at ``delta >= 1/n``).
    with_mean : bool, default=True
        Centre privately: the column sums are released with the second
        moment, in the same Gaussian release (a constant coordinate
        ``clip_norm_/2`` appended to every clipped row; 25% more noise on
        the second moment than without). False: the data is taken as
        centred (e.g. by a :class:`~skdp.preprocessing.DPStandardScaler` in
        front), ``mean_`` is 0 and the whole budget goes to the second
        moment.
    clip_norm : float or "auto", default="auto"
        Each row (after nothing: no centring happens before the clip) is
        scaled down to this L2 norm. It never depends on the data.
        ``"auto"``: ``sqrt(n_features)``, the root-mean-square norm of
        standardised features. With ``with_mean``, a fit whose released
        column sums show the clipped rows pointing one way (raw, uncentred
        columns: the mean clipped row's norm above half the clip, past the
        noise) warns: centre and scale first.
    random_state : int, RandomState instance, Generator or None, default=None
        Seeds the noise; use None in production (a known seed makes the
        noise predictable). The rule
        is the same for every skdp estimator: None (the default)
        draws fresh operating-system entropy for every fit; a seed makes the
        noise reproducible, so every fit given it (clones in a search or
        cross-validation, sibling steps, a sweep) draws the same noise: the
        fit warns, and :class:`~skdp.PrivacyLedger` refuses to total fits
        that share a seed. A ``Generator`` seeds a child stream.
    noise : {"fast", "secure"}, default="fast"
        Sampler of the privacy noise. ``"fast"``: numpy's floating-point
        sampler (PCG64), not hardened against floating-point attacks on the
        low-order bits of a release. ``"secure"``: every noisy value is rounded
        to a power-of-two grid and gets exact discrete Gaussian (or Laplace)
        noise drawn from the operating system's CSPRNG; the rounding is paid
        for in the calibration (6-11% more noise at the same ε) and each draw
        is 20-45 times slower than numpy's. Requires ``random_state=None``.
        See :ref:`secure_noise`.
    verbose : int, default=0
        1: a line stating the guarantee and the noise scale.

    Attributes
    ----------
    components_ : ndarray of shape (n_components, n_features)
        Principal axes (orthonormal rows), by decreasing noisy variance;
        each row's largest entry in absolute value is positive.
    explained_variance_ : ndarray of shape (n_components,)
        Noisy variance of the clipped data along each axis (eigenvalues of
        the noisy covariance, floored at 0).
    explained_variance_ratio_ : ndarray of shape (n_components,)
        ``explained_variance_`` over the sum of all floored eigenvalues.
    mean_ : ndarray of shape (n_features,)
        Private mean of the clipped rows (zeros with ``with_mean=False``).
    covariance_ : ndarray of shape (n_features, n_features)
        The noisy covariance of the clipped rows (symmetric, not projected
        on the positive semidefinite cone): with ``mean_``, the release
        itself (every other attribute is computed from these two).
    n_components_ : int
        Number of components kept.
    clip_norm_ : float
        The clip used (``"auto"`` resolved).
    n_samples_ : int
        Number of records (public).
    n_iter_ : int
        Number of Gaussian releases: 1.
    noise_multiplier_ : float
        Noise standard deviation of the release over its L2 sensitivity
        ``sqrt(2)·R²`` (``R`` the row bound): the fit is
        ``1/noise_multiplier_``-GDP; composing
        ``GaussianDpEvent(noise_multiplier_)`` once (add/remove relation; the
        replace-one factor is in the sensitivity) reproduces the guarantee.
        The composition stated here is that of ``noise="fast"``. Secure noise
        is composed in zCDP instead: each release is ``(1/z + 2^-16)²/2``-zCDP
        for its own multiplier z (the grid rounding's slack,
        :func:`~skdp.accounting.secure_noise_cost`), and
        ``privacy_spent_.zcdp`` is their sum; a GDP accountant given this
        multiplier understates it.
    privacy_spent_ : PrivacyCost
        The exact guarantee of this fit (μ-GDP, replace-one adjacency).
    n_features_in_ : int
        Number of features seen during fit.
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Names of features seen during fit, when ``X`` has string column names.

    See Also
    --------
    sklearn.decomposition.PCA : The non-private PCA.

    Notes
    -----
    **Guarantee.** ``components_``, ``explained_variance_``,
    ``explained_variance_ratio_`` and ``mean_`` are (ε, δ)-DP under
    *replace-one-record* adjacency (n is public): they are post-processing
    of one Gaussian release, exactly ``μ = 1/noise_multiplier_``-GDP with
    ``μ = mu_from_epsilon(ε, δ)`` (Dong, Roth & Su 2022). The release is the
    Gram matrix ``G = Σ_i w_i w_iᵀ`` of the rows ``w_i = (x̃_i, c)`` (``x̃_i``
    the row scaled down to norm ``C = clip_norm_``, ``c = C/2`` with
    ``with_mean``, none without), each of norm at most
    ``R = sqrt(C² + c²)``: replacing one row moves G by at most
    ``sqrt(2)·R²`` in Frobenius norm
    (:func:`skdp.mechanisms.gram_sensitivity`, attained by two orthogonal
    rows of norm R). The noise is symmetric: std ``σ = z·sqrt(2)·R²`` on the
    diagonal and ``σ/sqrt(2)`` off it (Analyze Gauss draws the upper
    triangle and mirrors it; weighting the off-diagonal entries by
    ``sqrt(2)`` makes that a Gaussian mechanism in the Frobenius geometry,
    with less noise off the diagonal for the same guarantee).

    **Post-processing.** ``mean_ = G[:d, d]/(c·n)``; the covariance is
    ``covariance_ = G[:d, :d]/n - mean_ mean_ᵀ``, whose eigenvectors
    (``scipy.linalg.eigh``) are the components. The eigenvalues are floored
    at 0 (the noise can make the smallest negative).

    **Public.** n, d, ``n_components``, ``clip_norm``. Nothing is read from
    the data outside the release.

    **Clipping.** The statistics are those of the clipped rows: for
    elliptical data (e.g. Gaussian) scaling rows down keeps the principal
    axes but compresses the variances of the longer rows, so
    ``explained_variance_`` is that of the clipped data. Clipping happens
    around 0, not around the mean: centre (and scale) the data first, e.g.
    with :class:`~skdp.preprocessing.DPStandardScaler`, and the default
    ``sqrt(d)`` then clips about half the rows by a few percent. The noise
    grows with ``C²``; it is ``O(z·C²·sqrt(d)/n)`` in operator norm on the
    covariance, so the top axes are resolved once their eigengap is well
    above that. A fit whose released gap after axis ``n_components`` is
    below a bound on that norm (public: σ, d, n) warns that the kept axes are
    left to the noise (post-processing; standardised digits at ε = 1).

    **Every input.** The bound holds for every finite X, float64 or float32,
    with entries up to 1e308: norms are computed without overflow and a row
    whose norm exceeds the float64 range contributes nothing.

    **Caveats.** Fitting again (a cross-validation, a search) spends the
    budget again: compose with :class:`skdp.PrivacyLedger`. Dense input
    only.

    **Dask.** ``fit`` also takes a ``dask.array.Array`` (dense chunks along
    rows): the Gram matrix is one reduction over the chunks (``(d + 1)²``
    floats each) after one pass that checks the values; the noise is added
    on the client. ``transform`` returns a Dask array. See :ref:`large_data`.

    **Cost.** One pass: time ``O(n·d²)`` (BLAS-3 ``syrk`` on blocks of
    clipped rows) plus ``O(d³)``, memory ``O(d²)`` plus one block of ``2²⁰``
    values beyond X.

    References
    ----------
    .. [1] C. Dwork, K. Talwar, A. Thakurta, L. Zhang. "Analyze Gauss:
       optimal bounds for privacy-preserving principal component analysis",
       STOC 2014, Algorithm 1.
    .. [2] J. Dong, A. Roth, W. J. Su. "Gaussian differential privacy",
       JRSS-B 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.decomposition import DPPCA
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_normal((20000, 4)) * [3.0, 1.0, 0.5, 0.2]
    >>> pca = DPPCA(n_components=2, epsilon=1.0, delta=1e-6, random_state=0).fit(X)
    >>> pca.components_.shape, round(pca.privacy_spent_.epsilon, 6)
    ((2, 4), 1.0)
    >>> np.round(np.abs(pca.components_[0]), 1)
    array([1., 0., 0., 0.])
    >>> pca.transform(X).shape
    (20000, 2)
    """

    _parameter_constraints = {
        **{k: v for k, v in PRIVACY_CONSTRAINTS.items() if k != "accounting"},
        "n_components": [Interval(Integral, 1, None, closed="left"), None],
        "with_mean": ["boolean"],
        "clip_norm": [CLIP_CONSTRAINT, StrOptions({"auto"})],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        n_components=None,
        *,
        epsilon=1.0,
        delta=1e-5,
        with_mean=True,
        clip_norm="auto",
        random_state=None,
        noise="fast",
        verbose=0,
    ):
        self.n_components = n_components
        self.epsilon = epsilon
        self.delta = delta
        self.with_mean = with_mean
        self.clip_norm = clip_norm
        self.random_state = random_state
        self.noise = noise
        self.verbose = verbose

    def _audit_canary(self):
        """skdp.audit's default canary: two records at the release's
        sensitivity, one of them far out (a clip read from the data is seen)."""
        return "FarGramCanary", {}

    def _audit_record_bounds(self, n_features):
        """``(clip, centring constant)`` of a fit on ``n_features`` columns.

        What :class:`~skdp.audit.GramCanary` needs to build its worst-case
        records (the constant is 0 without centring), as :meth:`fit` sets them.
        """
        clip = (
            _auto_clip_norm(n_features) if self.clip_norm == "auto" else self.clip_norm
        )
        return float(clip), (_CENTRING_SHARE * clip if self.with_mean else 0.0)

    @private_fit
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Fit the principal axes with (``epsilon``, ``delta``)-DP.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Training data (centred and scaled, ideally), or a Dask array.
        y : None
            Ignored.

        Returns
        -------
        self : DPPCA
            The fitted transformer.
        """
        require_positive_delta(self)
        if is_dask_array(X):
            from .. import _dask

            X, _ = _dask.validate(self, X, dtype=(np.float64, np.float32))
        else:
            X = validate_data(self, X, dtype=[np.float64, np.float32])
        n, d = X.shape
        k = d if self.n_components is None else self.n_components
        if k > d:
            raise ValueError(f"n_components={k} must be at most n_features={d}.")
        warn_if_delta_is_large(self, n)
        clip = _auto_clip_norm(d) if self.clip_norm == "auto" else self.clip_norm
        constant = _CENTRING_SHARE * clip if self.with_mean else None
        bound = row_norm_bound(clip, constant or 0.0)
        z = gaussian_noise_multiplier(self.epsilon, self.delta, noise=self.noise)
        rng = as_generator(self.random_state, self.noise)
        gram = clipped_gram(X, x_clip=clip, constant=constant)
        noisy = gram_mechanism(gram, row_norm_bound=bound, noise_multiplier=z, rng=rng)
        if constant is None:
            mean = np.zeros(d)
        else:
            mean = noisy[:d, d] / (constant * n)
            warn_if_rows_point_one_way(
                noisy,
                n,
                d,
                constant,
                clip,
                z * gram_sensitivity(bound),
                name="DPPCA",
                remedy="Centre and scale X first (DPStandardScaler in a pipeline) "
                "or give clip_norm.",
                stacklevel=4,  # the caller of fit (through its two decorators)
            )
        cov = noisy[:d, :d] / n - np.outer(mean, mean)
        eigenvalues, eigenvectors = scipy.linalg.eigh(cov)
        if k < d:
            noise_norm = gram_noise_norm_bound(z * gram_sensitivity(bound), d) / n
            _warn_if_unresolved(eigenvalues[::-1], k, noise_norm)
        eigenvalues = np.maximum(eigenvalues[::-1], 0.0)
        components = eigenvectors[:, ::-1].T[:k]
        # Deterministic signs (as scikit-learn's svd_flip): the largest
        # entry of each axis in absolute value is positive.
        top = np.argmax(np.abs(components), axis=1)
        components *= np.sign(components[np.arange(k), top])[:, None]
        total = eigenvalues.sum()
        self.mean_ = mean
        self.covariance_ = cov
        self.components_ = components
        self.explained_variance_ = eigenvalues[:k]
        self.explained_variance_ratio_ = (
            eigenvalues[:k] / total if total > 0 else np.zeros(k)
        )
        self.n_components_ = k
        self.clip_norm_ = float(clip)
        self.n_samples_ = n
        self.n_iter_ = 1
        self.noise_multiplier_ = z
        self.privacy_spent_ = gaussian_cost(
            z,
            1,
            noise=self.noise,
            delta=self.delta,
            adjacency=REPLACE_ONE,
            mechanism=(
                "DPPCA: noisy second moment of clipped rows"
                + (" with their sums (centring)" if constant is not None else "")
            ),
        )
        if self.verbose:
            sigma = z * gram_sensitivity(bound)
            print(
                f"[DPPCA] {self.privacy_spent_}; noise std {sigma / n:.4g} on the "
                f"covariance's diagonal (row bound {bound:.4g})"
            )
        return self

    @property
    def _n_features_out(self):
        return self.components_.shape[0]

    @private_transform
    def transform(self, X):
        """Project X on the principal axes: ``(X - mean_) @ components_.T``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
            Data (not clipped), or a Dask array.

        Returns
        -------
        X_new : ndarray of shape (n_samples, n_components)
            Projections.
        """
        check_is_fitted(self)
        if is_dask_array(X):
            from .. import _dask

            return _dask.map_rows(self.transform, self, X)
        X = validate_data(self, X, reset=False, dtype=[np.float64, np.float32])
        return scaled_product(X - self.mean_, self.components_.T)

    @private_transform
    def inverse_transform(self, X):
        """Map projections back: ``X @ components_ + mean_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_components)
            Projections.

        Returns
        -------
        X_original : ndarray of shape (n_samples, n_features)
            Points in the original space (on the span of the axes).
        """
        check_is_fitted(self)
        if is_dask_array(X):
            from .. import _dask

            return _dask.map_rows(
                self.inverse_transform, self, X, n_features=self.n_components_
            )
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.n_components_:
            raise ValueError(
                f"X has shape {X.shape}; expected (n_samples, {self.n_components_})."
            )
        return X @ self.components_ + self.mean_
