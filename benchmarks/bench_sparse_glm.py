"""Benchmark ``skdp.linear_model.DPSparseGLM`` against Lasso and non-private IHT.

Run from the repository root::

    python benchmarks/bench_sparse_glm.py            # 3 seeds
    python benchmarks/bench_sparse_glm.py --quick    # 1 seed, smoke run

Data: ``skdp.datasets.make_sparse_glm`` with n = 20000, d = 1000, s* = 10
(x ~ N(0, I), coefficient magnitudes uniform in [signal/2, signal], random
signs), one data set per seed and family. On each the script fits

* ``DPSparseGLM(sparsity=10)`` at ε ∈ {0.5, 1, 2, 5}, δ = 1e-6, with
  ``accounting="exact"`` (Gumbel peeling + Gaussian release, zCDP) and
  ``accounting="paper"`` (the paper's Laplace peeling at (ε/T, δ/T)),
  other parameters at their defaults (``residual_bound=3``, ``x_bound=3``,
  ``max_iter="auto"``: T from the proof of Theorem 5.2 for each family);
* the non-private IHT: the same algorithm, steps and step size with the
  noise off;
* scikit-learn's ``LassoCV`` (gaussian; 10 alphas, 3-fold CV) and an
  L1-penalised ``LogisticRegressionCV`` (logistic; 6 values of C, 3-fold CV,
  liblinear). scikit-learn has no L1-penalised Poisson GLM, so Poisson is
  compared with IHT only.

It reports the ℓ₂ error ``||coef - coef*||``, the support F1 score (non-zeros
of the fitted vs the true coefficients) and fit times (``time.perf_counter``
around the fit only), as means over the seeds. The report (Markdown) goes to
stdout, progress to stderr.
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
from sklearn.linear_model import LassoCV, LogisticRegressionCV

# The checkout this script belongs to, not whichever skdp is installed.
use_checkout(Path(__file__).resolve().parent.parent)

from skdp.datasets import make_sparse_glm  # noqa: E402
from skdp.linear_model import DPSparseGLM  # noqa: E402
from skdp.linear_model._sparse_glm import nonprivate_iht  # noqa: E402

REPRODUCE_COMMAND = "python benchmarks/bench_sparse_glm.py"
N, D, S = 20000, 1000, 10
EPSILONS = (0.5, 1.0, 2.0, 5.0)
DELTA = 1e-6


def f1(fitted, truth):
    fitted, truth = fitted != 0, truth != 0
    hits = np.sum(fitted & truth)
    if hits == 0:
        return 0.0
    precision, recall = hits / fitted.sum(), hits / truth.sum()
    return 2 * precision * recall / (precision + recall)


def timed(fit):
    start = time.perf_counter()
    coef = fit()
    return coef, time.perf_counter() - start


def run(family, seed, results):
    X, y, coef = make_sparse_glm(N, D, S, family=family, random_state=seed)

    def record(name, fitted, seconds):
        row = results.setdefault((family, name), {"l2": [], "f1": [], "time": []})
        row["l2"].append(np.linalg.norm(fitted - coef))
        row["f1"].append(f1(fitted, coef))
        row["time"].append(seconds)

    for epsilon in EPSILONS:
        for accounting in ("exact", "paper"):
            model = DPSparseGLM(
                family=family,
                sparsity=S,
                epsilon=epsilon,
                delta=DELTA,
                accounting=accounting,
                random_state=seed,
            )
            fitted, seconds = timed(lambda m=model: m.fit(X, y).coef_)
            name = f"DPSparseGLM {accounting}, ε={epsilon:g} (T={model.n_iter_})"
            record(name, fitted, seconds)
    reference = DPSparseGLM(family=family, sparsity=S)  # T of ε = 1, exact
    record("IHT (non-private)", *timed(lambda: nonprivate_iht(reference, X, y)))
    if family == "gaussian":
        lasso = LassoCV(alphas=10, cv=3)
        record("LassoCV (non-private)", *timed(lambda: lasso.fit(X, y).coef_))
    elif family == "logistic":
        l1 = LogisticRegressionCV(
            Cs=np.logspace(-3, 0, 6), cv=3, l1_ratios=(1.0,), solver="liblinear"
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # FutureWarnings of the l1 API
            record(
                "L1 LogisticRegressionCV (non-private)",
                *timed(lambda: l1.fit(X, y).coef_.ravel()),
            )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one seed")
    args = parser.parse_args(argv)
    seeds = [0] if args.quick else [0, 1, 2]
    # The fits are seeded to be reproducible; their warning says so, per fit.
    warnings.filterwarnings("ignore", message="random_state=.* seeds the privacy")
    results = {}
    started = time.perf_counter()
    for family in ("gaussian", "poisson", "logistic"):
        for seed in seeds:
            print(f"{family} seed {seed}...", file=sys.stderr, flush=True)
            run(family, seed, results)
    total = time.perf_counter() - started
    print(
        f"Command: `{REPRODUCE_COMMAND}`; {len(seeds)} seed(s); n = {N}, d = {D}, "
        f"s* = {S}, δ = {DELTA:g}; Python {platform.python_version()}, "
        f"numpy {np.__version__}, scikit-learn {sklearn.__version__}; "
        f"{cpu_model_name()}; load average {load_average()}; total {total:.0f} s.\n"
    )
    for family in ("gaussian", "poisson", "logistic"):
        rows = []
        iht_l2 = np.mean(results[(family, "IHT (non-private)")]["l2"])
        for (fam, name), row in results.items():
            if fam != family:
                continue
            l2 = np.mean(row["l2"])
            rows.append(
                (
                    name,
                    f"{l2:.4f}",
                    f"{l2 / iht_l2:.2f}",
                    f"{np.mean(row['f1']):.3f}",
                    f"{np.mean(row['time']):.2f}",
                )
            )
        print(f"**{family}**\n")
        print(
            markdown_table(
                ("estimator", "ℓ₂ error", "ℓ₂ / IHT", "support F1", "fit s"), rows
            )
        )
        print()


if __name__ == "__main__":
    main()
