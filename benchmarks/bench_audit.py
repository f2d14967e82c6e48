"""Does the default audit see under-noising? Claimed vs audited μ, per estimator.

Run from the repository root::

    python benchmarks/bench_audit.py            # full run (~25 min on one core)
    python benchmarks/bench_audit.py --part random_features   # one estimator
    python benchmarks/bench_audit.py --quick    # smoke run (50 trials)

For each DP-GD estimator at its defaults, :func:`skdp.audit.audit_estimator`
runs with all its defaults (the estimator's default canary and statistic,
500 trials, α = 0.05) on the estimator as shipped ("noise × 1") and on
variants that add a half, a third or a tenth of the noise while reporting
the same guarantee (the engine's noise draw is divided inside this process, as the
tests do with monkeypatch). A row reports the claimed μ, the μ the noise
actually added attains (claimed × factor), the audit's μ̂ and its standard
error, the ratio μ̂ / actual μ, the ε and μ lower bounds and the verdict.

Data: issue 20, item 12's ``make_classification(500, 5)``, standardised, for
DPLogisticRegression; for DPRandomFeaturesRegressor 100 standard normal rows
with 5 features and target ``sign(x_1)``, with ``n_components`` 200 (more
features than records: the canary's direction is one no other record uses)
and 50 (fewer: it is only the least-used one), ``solver="primal"`` (the
gradient canary enters the engine's clipped sum, which the kernel solver does
not run). The "GLMCanary" rows audit the same estimators with the canary the
default used to be (a record, score attack), for comparison.

Two under-noised variants: "noise /k" divides the engine's noise draw by k;
"budget /k" does too and also lets the automatic schedule see the μ the noise
really attains (k × claimed; a larger learning rate), as an estimator that
misreports its budget would.

The script prints a Markdown report on stdout; progress goes to stderr.
"""

import argparse
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import sklearn
from _common import cpu_model_name, load_average, markdown_table, use_checkout

REPO = Path(__file__).resolve().parents[1]
use_checkout(REPO)

import skdp  # noqa: E402
import skdp._dpgd  # noqa: E402
import skdp.linear_model._logistic as _logistic  # noqa: E402
from skdp import DPLogisticRegression, DPRandomFeaturesRegressor  # noqa: E402
from skdp import mechanisms as mech  # noqa: E402
from skdp.accounting import epsilon_from_mu  # noqa: E402
from skdp.audit import GLMCanary, audit_estimator  # noqa: E402

DELTA = 1e-5
_NOISE = skdp._dpgd.add_gaussian_noise
_MU_FROM_EPSILON = _logistic.mu_from_epsilon


def _divide_noise(factor, budget=False):
    def weak(value, std, rng):
        return mech.add_gaussian_noise(value, std / factor, rng)

    def true_mu(epsilon, delta):
        return factor * _MU_FROM_EPSILON(epsilon, delta)

    skdp._dpgd.add_gaussian_noise = _NOISE if factor == 1 else weak
    _logistic.mu_from_epsilon = true_mu if budget else _MU_FROM_EPSILON


def logistic_data():
    from sklearn.datasets import make_classification
    from sklearn.preprocessing import StandardScaler

    X, y = make_classification(500, 5, random_state=0)
    return StandardScaler().fit_transform(X), y


def random_features_data():
    X = np.random.default_rng(0).normal(size=(100, 5))
    return X, np.sign(X[:, 0])


def cases(part="all"):
    """``(label, estimator, data, canary, factor, budget)``."""
    if part in ("all", "logistic"):
        yield from logistic_cases()
    if part in ("all", "random_features"):
        yield from random_features_cases()


def logistic_cases():
    lr_data = logistic_data()
    for mu in (0.25, 0.5, 1.0, 2.0, 3.0):
        eps = float(epsilon_from_mu(mu, DELTA))
        est = DPLogisticRegression(epsilon=eps, delta=DELTA, classes=[0, 1])
        label = f"DPLogisticRegression(epsilon={eps:.3g})"
        for canary in ("auto", "record") if mu == 3.0 else ("auto",):
            yield label, est, lr_data, canary, 1, False
    est = DPLogisticRegression(epsilon=1.0, delta=DELTA, classes=[0, 1])
    label = "DPLogisticRegression(epsilon=1)"
    yield label, est, lr_data, "record", 1, False
    for budget in (False, True):
        for factor in (2, 3, 10):
            for canary in ("auto", "record"):
                yield label, est, lr_data, canary, factor, budget


def random_features_cases():
    rf_data = random_features_data()
    for p in (200, 50):
        est = DPRandomFeaturesRegressor(p, epsilon=1.0, delta=DELTA, solver="primal")
        label = f"DPRandomFeaturesRegressor({p}, epsilon=1)"
        for factor in (1, 10):
            yield label, est, rf_data, "auto", factor, False


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="50 trials")
    parser.add_argument(
        "--part", choices=("all", "logistic", "random_features"), default="all"
    )
    args = parser.parse_args(argv)
    n_trials = 50 if args.quick else 500
    rows = []
    for label, est, (X, y), canary_label, factor, budget in cases(args.part):
        _divide_noise(factor, budget)
        canary = GLMCanary() if canary_label == "record" else "auto"
        started = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            r = audit_estimator(
                est, X, y, canary=canary, n_trials=n_trials, random_state=0
            )
        seconds = time.perf_counter() - started
        _divide_noise(1)
        actual = factor * r.claimed_mu
        canary_name = r.canary.split("(")[0]
        rows.append(
            [
                label,
                canary_name,
                "as shipped"
                if factor == 1
                else f"{'budget' if budget else 'noise'} /{factor}",
                f"{r.claimed_mu:.3f}",
                f"{actual:.3f}",
                f"{r.mu_hat:.3f} ± {r.mu_hat_se:.3f}",
                f"{r.mu_hat / actual:.2f}",
                f"{r.epsilon_lower_bound:.2f} (claimed {r.claimed_epsilon:.3g})",
                f"{r.mu_lower_bound:.3f}",
                "**refuted**" if r.refuted else "not refuted",
                f"{seconds:.0f}",
            ]
        )
        print(" | ".join(rows[-1]), file=sys.stderr, flush=True)
    quick = (" --quick" if args.quick else "") + (
        f" --part {args.part}" if args.part != "all" else ""
    )
    print(f"Command: `python benchmarks/bench_audit.py{quick}`")
    print(
        f"\nMachine: {cpu_model_name()}, Python {platform.python_version()}, "
        f"numpy {np.__version__}, scikit-learn {sklearn.__version__}, "
        f"load average {load_average()}; {n_trials} trials per audit, "
        "random_state=0, n_jobs=1.\n"
    )
    print(
        markdown_table(
            [
                "estimator",
                "canary",
                "noise",
                "claimed μ",
                "actual μ",
                "μ̂ ± s.e.",
                "μ̂ / actual",
                "ε lower bound",
                "μ lower bound",
                "verdict",
                "s",
            ],
            rows,
        )
    )


if __name__ == "__main__":
    main()
