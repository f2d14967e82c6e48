"""Certified sample sizes for the unbounded Gaussian sampler (paper 004).

The paper (Iverson, Kamath & Mouzakis, Theorem 4.1) proves privacy for
``n1 >= C1·sqrt(λ0)·log(1/δ)/ε`` and ``n2 >= C2·λ0·log(1/δ)/ε`` with absolute
constants C1, C2 it never fixes, because its tail bounds (Hanson–Wright, a
Beta tail of Zhang & Zhou) carry unspecified constants. This module replaces
those two bounds by computable ones and checks every *explicit* sufficient
condition of the privacy proof numerically, so no constant is guessed:

* the Beta tails of the first coordinates of a uniform point on the sphere
  (Fact B.5: ``||z_{<=d}||² ~ Beta(d/2, (n2-d)/2)``) are evaluated exactly with
  :func:`scipy.special.betaincc` (eqs. (36), (43), (44));
* the Hanson–Wright step (eq. (37)) is replaced by the Chernoff bound
  ``P[gᵀAg > 0] <= inf_t prod_i (1 - 2 t a_i)^(-1/2)`` for a standard Gaussian g,
  evaluated at the worst spectrum Lemma 3.1 allows (one eigenvalue of
  ``(M - I)_+`` at ``γ/(1-γ)``, the rest of the trace budget
  ``(1+2γ)γ/(1-γ)`` on a second one; the log-MGF is convex, so a vertex of
  that polytope is the worst case).

The PTR step is the truncated-Laplace threshold test (see
:func:`ptr_threshold`), which is optimal for scores of sensitivity 2. The
paper's Lemma 3.4 promises a fail threshold of ``2·log(1/δ)/ε + 4`` that no
(ε/3, δ/6)-DP test achieves for sensitivity-2 scores (spec review, §2), so the
paper's discretisation ``k = ⌈6·log(6/δ)/ε⌉ + 4`` is kept and the PTR gets the
smallest ε_p for which its fail threshold is ``<= k``; the release step gets the
rest, ``ε_r = ε - ε_p`` (about 0.4ε), and ``2δ/3``. R fails to be
degree-representative with probability ``<= δ/6`` (checked directly), the PTR
costs ``(ε_p, δ/6)``.

Everything here depends only on public quantities (n, d, ε, δ, tv_error).
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy.optimize import brentq, minimize_scalar

try:
    from scipy.special import betaincc
except ImportError:  # scipy < 1.11: the same Boost ibetac, through scipy.stats
    from scipy.stats import beta as _beta

    def betaincc(a, b, x):
        with np.errstate(all="ignore"):  # an underflow to 0 warns here only
            return _beta.sf(x, a, b)


__all__ = ["SamplerPlan", "certify", "plan", "ptr_threshold", "required_n_samples"]

E2 = math.e**2

# The release step's two hockey-stick terms (eq. (4), Lemma B.13):
# D_{e^ε}(P||R) <= D_{e^{ε/2}}(P||Q) + e^{ε/2} D_{e^{ε/2}}(Q||R). Each term is
# given the same budget δ_r / (1 + e^{ε_r/2}), whichever comes first.


def lambda0(n, n_features, tv_error):
    """Outlier threshold λ0 of Algorithm 2, line 3 (natural logs)."""
    log_term = math.log(3.0 * n / tv_error)
    return 4.0 * n_features + 8.0 * math.sqrt(n_features * log_term) + 8.0 * log_term


def discretisation(epsilon, delta):
    """The paper's k = ⌈6·log(6/δ)/ε⌉ + 4 (Algorithm 2, line 6)."""
    return math.ceil(6.0 * math.log(6.0 / delta) / epsilon) + 4


def reference_size(k, n, delta):
    """|R| = M = 6k + ⌈18·log(16n/δ)⌉ (Algorithm 2, line 6)."""
    return 6 * k + math.ceil(18.0 * math.log(16.0 * n / delta))


def ptr_threshold(epsilon_p, delta_p, sensitivity=2.0):
    """Truncation B of the truncated-Laplace PTR and its fail threshold 2B.

    Noise ``ξ ~ Laplace(b)`` with ``b = sensitivity/ε_p`` truncated to
    ``[-B, B]``, ``B = b·log(1 + (e^{ε_p} - 1)/(2δ_p))``; the test passes iff
    ``score + ξ < B``. It is (ε_p, δ_p)-DP for scores of the given
    sensitivity, passes surely at score 0 and fails surely at ``score >= 2B``.
    """
    b = sensitivity / epsilon_p
    return b * math.log1p(math.expm1(epsilon_p) / (2.0 * delta_p))


def ptr_epsilon(k, delta_p, epsilon_max):
    """Smallest ε_p <= epsilon_max whose fail threshold 2B is <= k."""

    def excess(eps_p):
        return 2.0 * ptr_threshold(eps_p, delta_p) - k

    if excess(epsilon_max) > 0:
        raise ValueError(
            f"No PTR with epsilon <= {epsilon_max:g} fails surely at score {k}."
        )
    lo = 1e-6
    eps_p = brentq(excess, lo, epsilon_max, xtol=1e-14, rtol=1e-14)
    # Err on the side of a surely-failing score k.
    while excess(eps_p) > 0:
        eps_p = math.nextafter(eps_p, math.inf)
    return eps_p


def _beta_sf(x, a, b):
    """P[Beta(a, b) > x]."""
    return float(betaincc(a, b, x))


def _chernoff_log_tail(n2, n_features, gamma, epsilon_r):
    """log of the Chernoff bound on P[sᵀ(M - I)s > ε_r/(4 n2)] (eq. (37)).

    s = g_{<=d}/||g|| for g ~ N(0, I_{n2}); the event is ``gᵀAg > 0`` with A
    block-diagonal: ``(M - I)_+ - c I`` on the first d coordinates and ``-c``
    on the other ``n2 - d``, ``c = ε_r/(4 n2)``.
    """
    c = epsilon_r / (4.0 * n2)
    top = gamma / (1.0 - gamma)
    trace = (1.0 + 2.0 * gamma) * gamma / (1.0 - gamma)
    if n_features == 1:
        positive = [min(top, trace)]
    else:
        positive = [top, trace - top]
    pos = np.array([p - c for p in positive])
    n_neg = n2 - len(positive)
    a_max = pos.max()
    if a_max <= 0:
        return -math.inf

    def log_bound(t):
        return -0.5 * (np.log1p(-2.0 * t * pos).sum() + n_neg * math.log1p(2.0 * t * c))

    hi = 0.5 / a_max
    res = minimize_scalar(
        log_bound,
        bounds=(0.0, hi * (1 - 1e-12)),
        method="bounded",
        options={"xatol": hi * 1e-10},
    )
    return float(min(res.fun, 0.0))


@dataclass(frozen=True)
class SamplerPlan:
    """Data-independent configuration of one run of Algorithm 2.

    Attributes are public functions of (n, d, ε, δ, tv_error).
    """

    n_required: int  # the certified minimum (required_n_samples)
    n_samples: int  # rows used (n1 + 2 n2)
    n1: int  # rows for the mean half (StableMean)
    n2: int  # pairs for the covariance half (StableCov)
    lambda0: float
    k: int
    reference_size: int  # M = |R|
    epsilon_ptr: float
    delta_ptr: float
    epsilon_release: float
    delta_release: float
    ptr_bound: float  # B of the truncated-Laplace PTR


def _conditions(n1, n2, n_features, epsilon, delta, tv_error, n_total=None):
    """Check every explicit condition of the privacy proof.

    Returns a dict ``name -> bool`` plus the plan's constants.
    """
    n = n1 + 2 * n2 if n_total is None else n_total
    lam = lambda0(n, n_features, tv_error)
    k = discretisation(epsilon, delta)
    M = reference_size(k, n, delta)
    delta_p = delta / 6.0
    eps_p = ptr_epsilon(k, delta_p, epsilon)
    eps_r = epsilon - eps_p
    delta_r = 2.0 * delta / 3.0
    per_term = delta_r / (1.0 + math.exp(eps_r / 2.0))
    gamma = 8.0 * E2 * lam / n2
    ok = {}
    # Lemma 3.1 / 3.5 (covariance half) and Lemma 3.3 / 3.5 (mean half).
    ok["n2 >= 16e²λ0k (Lemma 3.1)"] = gamma <= 1.0 / (2 * k)
    ok["n1 >= 32e²k (Lemma 3.3)"] = n1 >= 32.0 * E2 * k
    ok["|R| > 6k and R ⊆ [n1]"] = 6 * k < M <= n1
    # R degree-representative for X and X' (Fact B.1, t = 1/6, union bound
    # over the n1 rows of both data sets): probability of failure <= δ/6.
    ok["R degree-representative (δ/6)"] = math.log(4.0 * n1) - M / 18.0 <= math.log(
        delta / 6.0
    )
    # Covariance term (Prop. 4.18): γ <= ε_r/4, eq. (30), and two tails.
    ok["γ <= ε_r/4"] = gamma <= eps_r / 4.0
    ok["n2 - 48e²λ0/ε_r >= n2/2 (eq. 30)"] = n2 - 48.0 * E2 * lam / eps_r >= n2 / 2
    cov_tail = _beta_sf(3.0 / 8.0, n_features / 2.0, (n2 - n_features) / 2.0)
    log_chernoff = _chernoff_log_tail(n2, n_features, gamma, eps_r)
    cov_delta = cov_tail + math.exp(log_chernoff)
    ok["covariance term δ"] = cov_delta <= per_term
    # Mean term (Props. 4.19-4.21): ||ℓ|| <= ε_r/(5 sqrt(n2)) and two tails.
    ok["n1 >= 5e·sqrt(114λ0)/ε_r (Lemma 4.20)"] = (
        n1 >= 5.0 * math.e * math.sqrt(114.0 * lam) / eps_r
    )
    ball_tail = _beta_sf(0.81, n_features / 2.0, (n2 - n_features) / 2.0)
    z1_threshold = (eps_r * n1) ** 2 / (285000.0 * E2 * lam * n2)
    z1_tail = _beta_sf(min(z1_threshold, 1.0), 0.5, (n2 - 1) / 2.0)
    mean_delta = ball_tail + z1_tail
    ok["mean term δ"] = mean_delta <= per_term
    constants = dict(
        lambda0=lam,
        k=k,
        reference_size=M,
        epsilon_ptr=eps_p,
        delta_ptr=delta_p,
        epsilon_release=eps_r,
        delta_release=delta_r,
        ptr_bound=ptr_threshold(eps_p, delta_p),
        covariance_delta=cov_delta,
        mean_delta=mean_delta,
        term_budget=per_term,
    )
    return ok, constants


_COV_KEYS = (
    "n2 >= 16e²λ0k (Lemma 3.1)",
    "γ <= ε_r/4",
    "n2 - 48e²λ0/ε_r >= n2/2 (eq. 30)",
    "covariance term δ",
)


def _min_int(pred, lo):
    """Smallest integer >= lo with pred true (pred monotone)."""
    hi = max(lo, 1)
    while not pred(hi):
        hi *= 2
        if hi > 2**62:
            raise ValueError("No certifiable sample size below 2**62.")
    while lo < hi:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid + 1
    return lo


def _split_at(n, n_features, epsilon, delta, tv_error):
    """Minimal (n1, n2) certified with λ0 and M evaluated at total size n."""

    def cov_ok(n2):
        ok, _ = _conditions(n, n2, n_features, epsilon, delta, tv_error, n_total=n)
        return all(ok[key] for key in _COV_KEYS)

    n2 = _min_int(cov_ok, n_features + 3)

    def mean_ok(n1):
        ok, _ = _conditions(n1, n2, n_features, epsilon, delta, tv_error, n_total=n)
        return all(v for key, v in ok.items() if key not in _COV_KEYS)

    n1 = _min_int(mean_ok, 2)
    return n1, n2


def _check_privacy_parameters(n_features, epsilon, delta, tv_error):
    if not (isinstance(n_features, (int, np.integer)) and n_features >= 1):
        raise ValueError(f"n_features must be a positive integer; got {n_features}.")
    if not 0.0 < epsilon <= 1.0:
        raise ValueError(
            "The unbounded Gaussian sampler is certified for 0 < epsilon <= 1 only "
            f"(Theorem 4.1 of the paper); got epsilon={epsilon}."
        )
    if not 0.0 < delta <= epsilon / 10.0:
        raise ValueError(
            "The unbounded Gaussian sampler needs 0 < delta <= epsilon/10 "
            f"(Theorem 4.1 of the paper); got delta={delta}, epsilon={epsilon}."
        )
    if not 0.0 < tv_error < 1.0:
        raise ValueError(f"tv_error must be in (0, 1); got {tv_error}.")


def required_n_samples(n_features, epsilon, delta, tv_error=0.1):
    """Smallest n for which the unbounded Gaussian sampler is certified.

    The sampler of Iverson, Kamath & Mouzakis (Algorithm 2) is
    (``epsilon``, ``delta``)-DP under replace-one adjacency, and its output
    is within total variation ``tv_error`` of N(μ, Σ), only above a sample
    size that the paper states up to unspecified constants. This function
    computes it from the paper's explicit sufficient conditions, with exact
    Beta tails and an explicit Chernoff bound in place of the constants (see
    the module docstring and the user guide). The answer depends only on
    public quantities and never on data.

    Parameters
    ----------
    n_features : int
        Dimension d.
    epsilon : float
        Privacy budget, ``0 < epsilon <= 1`` (Theorem 4.1).
    delta : float
        ``0 < delta <= epsilon/10``.
    tv_error : float, default=0.1
        Target total-variation distance α from N(μ, Σ) (over the data and the
        mechanism's coins), in (0, 1).

    Returns
    -------
    n_samples : int
        ``n1 + 2·n2`` at the smallest certified (n1, n2), solved jointly
        with λ0, which grows with n.

    Examples
    --------
    >>> from skdp.gaussian import required_n_samples
    >>> n = required_n_samples(2, epsilon=1.0, delta=1e-6, tv_error=0.1)
    >>> 8.5e6 < n < 1e7
    True
    """
    return plan(None, n_features, epsilon, delta, tv_error).n_required


def plan(n_samples, n_features, epsilon, delta, tv_error):
    """The certified configuration for ``n_samples`` rows (None: the minimum).

    With ``n_samples`` given, keep the minimal certified ratio n1 : n2, use
    all rows (dropping one if needed to make ``n - n1`` even) and re-check
    every condition at the actual (n, λ0(n), n1, n2); raise
    :class:`~skdp.exceptions.InsufficientSamplesError` if the check fails.
    """
    from ..exceptions import InsufficientSamplesError

    epsilon, delta, tv_error = float(epsilon), float(delta), float(tv_error)
    _check_privacy_parameters(n_features, epsilon, delta, tv_error)
    # Fixed point n = n1(λ0(n)) + 2 n2(λ0(n)); λ0 grows with n, so iterate
    # upwards from a lower bound until the split certifies at its own total.
    n = 1000
    for _ in range(100):
        n1, n2 = _split_at(n, n_features, epsilon, delta, tv_error)
        if n1 + 2 * n2 <= n:
            break
        n = n1 + 2 * n2
    else:  # pragma: no cover - λ0 is logarithmic in n
        raise RuntimeError("The sample-size fixed point did not converge.")
    n_min, n_min1 = n, n1
    if n_samples is None:
        n_samples = n_min
    else:
        n_samples = int(n_samples)
        if n_samples < n_min:
            raise InsufficientSamplesError(
                f"The unbounded Gaussian sampler needs at least {n_min} samples "
                f"for n_features={n_features}, epsilon={epsilon:g}, "
                f"delta={delta:g}, tv_error={tv_error:g} (certified from the "
                f"paper's explicit conditions); got {n_samples}. Use "
                "method='bounded' with a centre and radius for smaller data."
            )
    n1 = max(n_min1, round(n_samples * n_min1 / n_min))
    n2 = (n_samples - n1) // 2
    ok, constants = _conditions(n1, n2, n_features, epsilon, delta, tv_error)
    if not all(ok.values()):
        failed = [key for key, v in ok.items() if not v]
        raise InsufficientSamplesError(
            f"n_samples={n_samples} does not certify: {', '.join(failed)} fail."
        )
    return SamplerPlan(
        n_required=n_min,
        n_samples=n1 + 2 * n2,
        n1=n1,
        n2=n2,
        lambda0=constants["lambda0"],
        k=constants["k"],
        reference_size=constants["reference_size"],
        epsilon_ptr=constants["epsilon_ptr"],
        delta_ptr=constants["delta_ptr"],
        epsilon_release=constants["epsilon_release"],
        delta_release=constants["delta_release"],
        ptr_bound=constants["ptr_bound"],
    )


def certify(n1, n2, n_features, epsilon, delta, tv_error):
    """Every explicit privacy condition at (n1, n2): ``{name: holds}``."""
    ok, _ = _conditions(n1, n2, n_features, epsilon, delta, tv_error)
    return ok
