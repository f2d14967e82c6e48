"""DPSparseGLM after issue 20 (items 1-2): no response truncation, T per family.

Run from the repository root::

    python benchmarks/bench_sparse_glm_bias.py            # 5 noise seeds
    python benchmarks/bench_sparse_glm_bias.py --quick    # 2 noise seeds

Data: ``skdp.datasets.make_sparse_glm`` (x ~ N(0, I), s* = 10 coefficients of
magnitude in [0.5, 1] for gaussian and logistic, [0.16, 0.32] for poisson),
d = 800, data seed 0, n = 3·10⁴ and 10⁵. Every DPSparseGLM runs at its
defaults (``residual_bound=3``, ``x_bound=3``, ``max_iter="auto"``) with
``sparsity=10``, ε = 1, δ = 1e-5. The script reports

* item 1 (gaussian and poisson): the ℓ2 error of the noise-free IHT (the fit
  with both noises off, ``nonprivate_iht``) and its shrinkage
  ``||β̂|| / ||β*||``, then the DP ℓ2 error (mean ± sd over the noise seeds),
  beside three non-private Lassos: ``Lasso(alpha=0.05)`` (the reference the
  issue quotes, 0.160), ``Lasso`` at the universal ``alpha = σ·sqrt(2·log d/n)``
  with the true σ = 1, and ``LassoCV(cv=3)``;
* item 2 (logistic): the DP ℓ2 error with the automatic T against the old
  ``T = ceil(0.6·log n)``.

The report (Markdown) goes to stdout, progress to stderr.
"""

import argparse
import math
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import sklearn
from _common import cpu_model_name, load_average, markdown_table, mean_std, use_checkout
from sklearn.linear_model import Lasso, LassoCV

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
REPRODUCE_COMMAND = "python benchmarks/bench_sparse_glm_bias.py"
D, S, EPSILON, DELTA = 800, 10, 1.0, 1e-5
NS = (30000, 100000)


def l2(fitted, truth):
    return float(np.linalg.norm(fitted - truth))


def dp_errors(DPSparseGLM, family, X, y, coef, seeds, **params):
    errors, n_iter = [], None
    for seed in seeds:
        model = DPSparseGLM(
            family=family, sparsity=S, epsilon=EPSILON, delta=DELTA, **params
        )
        model.set_params(random_state=seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the seeded-noise warning
            errors.append(l2(model.fit(X, y).coef_, coef))
        n_iter = model.n_iter_
    return errors, n_iter


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 noise seeds")
    args = parser.parse_args(argv)
    use_checkout(REPO_ROOT)
    from skdp.datasets import make_sparse_glm
    from skdp.linear_model import DPSparseGLM
    from skdp.linear_model._sparse_glm import nonprivate_iht

    seeds = range(2) if args.quick else range(5)
    started = time.perf_counter()
    item1, item2 = [], []
    for family in ("gaussian", "poisson"):
        for n in NS:
            print(f"{family} n={n}...", file=sys.stderr, flush=True)
            X, y, coef = make_sparse_glm(n, D, S, family=family, random_state=0)
            reference = nonprivate_iht(DPSparseGLM(family=family, sparsity=S), X, y)
            errors, n_iter = dp_errors(DPSparseGLM, family, X, y, coef, seeds)
            row = [
                family,
                f"{n:,}",
                n_iter,
                f"{l2(reference, coef):.4f}",
                f"{np.linalg.norm(reference) / np.linalg.norm(coef):.3f}",
                mean_std(errors),
            ]
            if family == "gaussian":
                universal = math.sqrt(2.0 * math.log(D) / n)
                lassos = [
                    Lasso(alpha=0.05),
                    Lasso(alpha=universal),
                    LassoCV(cv=3, n_jobs=1),
                ]
                row += [f"{l2(m.fit(X, y).coef_, coef):.4f}" for m in lassos]
            else:
                row += ["", "", ""]  # scikit-learn has no L1 Poisson GLM
            item1.append(row)
    X, y, coef = make_sparse_glm(100000, D, S, family="logistic", random_state=0)
    for label, max_iter in (("auto", "auto"), ("old: ceil(0.6·log n)", 7)):
        print(f"logistic T={max_iter}...", file=sys.stderr, flush=True)
        errors, n_iter = dp_errors(
            DPSparseGLM, "logistic", X, y, coef, seeds, max_iter=max_iter
        )
        item2.append([label, n_iter, mean_std(errors)])
    total = time.perf_counter() - started
    print(
        f"Command: `{REPRODUCE_COMMAND}{' --quick' if args.quick else ''}`; "
        f"{len(seeds)} noise seed(s); d = {D}, s* = {S}, ε = {EPSILON:g}, "
        f"δ = {DELTA:g}; Python {platform.python_version()}, numpy "
        f"{np.__version__}, scikit-learn {sklearn.__version__}; "
        f"{cpu_model_name()}; load average {load_average()}; total {total:.0f} s.\n"
    )
    print("**Item 1: no response truncation (ε = 1)**\n")
    header = (
        "family",
        "n",
        "T",
        "IHT ℓ2 (no noise)",
        "IHT ‖β̂‖/‖β*‖",
        "DPSparseGLM ℓ2",
        "Lasso α=0.05",
        "Lasso α=σ√(2 log d/n)",
        "LassoCV",
    )
    print(markdown_table(header, item1))
    print("\n**Item 2: logistic steps (n = 100,000, ε = 1)**\n")
    print(markdown_table(("T", "n_iter_", "DPSparseGLM ℓ2"), item2))


if __name__ == "__main__":
    main()
