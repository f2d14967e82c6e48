"""Benchmark a private pipeline (scaler + logistic regression) end to end.

Run from the repository root::

    python benchmarks/bench_pipeline.py            # 5 seeds
    python benchmarks/bench_pipeline.py --quick    # 2 seeds

Data: ``make_classification`` (n = 60000: 50000 to train, 10000 to test,
d = 20, 10 informative and 5 redundant features), then every feature is
multiplied by ``10**U(-2, 2)`` and shifted by ``U(-100, 100)``: uncentred,
badly scaled features that a pipeline must standardise. Three pipelines, at
the same *total* privacy budget (ε, δ = 1e-6) over both steps:

* skdp: ``DPStandardScaler(bounds=None)`` + ``DPLogisticRegression``, all
  defaults. The budget is split in GDP terms, a quarter of μ² to the scaler:
  ``μ_s = μ/2``, ``μ_m = μ·sqrt(3)/2`` with ``μ = mu_from_epsilon(ε, δ)``,
  so that the two fits compose *exactly* to (ε, δ); the script checks that
  ``PrivacyLedger(delta=δ).record(pipeline).total().epsilon`` is ε.
* diffprivlib 0.6.6: ``StandardScaler`` (given the *true* per-feature
  minimum and maximum of the training data: its best case, and itself a
  leak) + ``LogisticRegression``; pure ε-DP, so the budget splits by basic
  composition. It gets the best, on the test set, of 2 splits (20% or 50% to
  the scaler) x 4 a-priori row-norm bounds ``data_norm`` (1, 2, 5, sqrt(d)).
* scikit-learn's non-private ``StandardScaler`` + ``LogisticRegression``.

diffprivlib does not import on scikit-learn >= 1.8: it runs in
``benchmarks/.venv-diffprivlib`` (created on first use, as for
``bench_logistic.py``) by this same script in ``--worker`` mode, which
imports nothing from skdp. Prints a Markdown section on stdout.
"""

import argparse
import json
import math
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent

EPSILONS = (0.5, 1.0, 2.0)
DELTA = 1e-6
N_TRAIN, N_TEST, N_FEATURES = 50000, 10000, 20
SCALER_SHARE = 0.25  # of μ², for skdp
DIFFPRIVLIB_SPLITS = (0.2, 0.5)  # of ε, for diffprivlib's scaler


def log(message):
    print(message, file=sys.stderr, flush=True)


def make_data(seed):
    """Uncentred, badly scaled classification data (train, test)."""
    from sklearn.datasets import make_classification

    X, y = make_classification(
        n_samples=N_TRAIN + N_TEST,
        n_features=N_FEATURES,
        n_informative=10,
        n_redundant=5,
        random_state=seed,
    )
    rng = np.random.default_rng(seed)
    X = X * 10.0 ** rng.uniform(-2, 2, N_FEATURES) + rng.uniform(-100, 100, N_FEATURES)
    return X[:N_TRAIN], y[:N_TRAIN], X[N_TRAIN:], y[N_TRAIN:]


# --------------------------------------------------------------------------
# Worker mode (inside the diffprivlib venv; no skdp)
# --------------------------------------------------------------------------


def data_norms(n_features):
    """Row-norm bounds tried for diffprivlib, fixed before seeing any data."""
    return [1.0, 2.0, 5.0, float(np.sqrt(n_features))]


def worker():
    import diffprivlib
    import sklearn
    from diffprivlib.models import LogisticRegression, StandardScaler
    from sklearn.pipeline import make_pipeline

    config = json.load(sys.stdin)
    runs = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for seed in config["seeds"]:
            with np.load(Path(config["data_dir"]) / f"seed{seed}.npz") as npz:
                X, y, X_test, y_test = (npz[k] for k in ("X", "y", "X_test", "y_test"))
            bounds = (X.min(axis=0), X.max(axis=0))  # the true bounds: a gift
            for epsilon in config["epsilons"]:
                for split in config["splits"]:
                    for norm in data_norms(X.shape[1]):
                        pipe = make_pipeline(
                            StandardScaler(
                                epsilon=split * epsilon,
                                bounds=bounds,
                                random_state=seed,
                            ),
                            LogisticRegression(
                                epsilon=(1 - split) * epsilon,
                                data_norm=norm,
                                random_state=seed,
                            ),
                        )
                        start = time.perf_counter()
                        pipe.fit(X, y)
                        runs.append(
                            {
                                "seed": seed,
                                "epsilon": epsilon,
                                "split": split,
                                "data_norm": norm,
                                "accuracy": float(pipe.score(X_test, y_test)),
                                "fit_time": time.perf_counter() - start,
                            }
                        )
    json.dump(
        {
            "versions": {
                "python": platform.python_version(),
                "scikit-learn": sklearn.__version__,
                "diffprivlib": diffprivlib.__version__,
            },
            "runs": runs,
            "warnings": sorted({f"{w.category.__name__}: {w.message}" for w in caught}),
        },
        sys.stdout,
    )


def run_diffprivlib(seeds, data_dir):
    sys.path.insert(0, str(BENCH_DIR))
    from bench_logistic import ensure_diffprivlib_venv

    python = ensure_diffprivlib_venv()
    config = {
        "seeds": list(seeds),
        "epsilons": list(EPSILONS),
        "splits": list(DIFFPRIVLIB_SPLITS),
        "data_dir": str(data_dir),
    }
    completed = subprocess.run(
        [str(python), str(Path(__file__).resolve()), "--worker"],
        input=json.dumps(config),
        capture_output=True,
        text=True,
    )
    if completed.returncode != 0:
        raise SystemExit(f"error: diffprivlib worker failed:\n{completed.stderr}")
    return json.loads(completed.stdout)


# --------------------------------------------------------------------------
# skdp and scikit-learn (main environment)
# --------------------------------------------------------------------------


def run_skdp(seeds, datasets):
    sys.path.insert(0, str(REPO_ROOT))
    from sklearn.pipeline import make_pipeline

    from skdp import DPLogisticRegression, PrivacyLedger
    from skdp.accounting import epsilon_from_mu, mu_from_epsilon
    from skdp.preprocessing import DPStandardScaler

    runs = []
    for seed in seeds:
        X, y, X_test, y_test = datasets[seed]
        for epsilon in EPSILONS:
            mu = mu_from_epsilon(epsilon, DELTA)
            eps_scaler = epsilon_from_mu(math.sqrt(SCALER_SHARE) * mu, DELTA)
            eps_model = epsilon_from_mu(math.sqrt(1 - SCALER_SHARE) * mu, DELTA)
            pipe = make_pipeline(
                DPStandardScaler(epsilon=eps_scaler, delta=DELTA, random_state=seed),
                DPLogisticRegression(
                    epsilon=eps_model, delta=DELTA, classes=[0, 1], random_state=seed
                ),
            )
            start = time.perf_counter()
            pipe.fit(X, y)
            fit_time = time.perf_counter() - start
            total = PrivacyLedger(delta=DELTA).record(pipe).total()
            assert total.epsilon <= epsilon * (1 + 1e-9), total
            runs.append(
                {
                    "seed": seed,
                    "epsilon": epsilon,
                    "accuracy": float(pipe.score(X_test, y_test)),
                    "fit_time": fit_time,
                    "total_epsilon": total.epsilon,
                    "eps_scaler": eps_scaler,
                    "eps_model": eps_model,
                }
            )
    return runs


def run_sklearn(seeds, datasets):
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    runs = []
    for seed in seeds:
        X, y, X_test, y_test = datasets[seed]
        pipe = make_pipeline(StandardScaler(), LogisticRegression()).fit(X, y)
        runs.append(float(pipe.score(X_test, y_test)))
    return runs


def summarise(skdp_runs, dpl, sklearn_runs, seeds, elapsed):
    import sklearn
    from _common import cpu_model_name, load_average, markdown_table, mean_std

    # diffprivlib: best (split, data_norm) per epsilon by mean test accuracy.
    best = {}
    for epsilon in EPSILONS:
        options = {}
        for run in dpl["runs"]:
            if run["epsilon"] == epsilon:
                key = (run["split"], run["data_norm"])
                options.setdefault(key, []).append(run["accuracy"])
        best[epsilon] = max(options.items(), key=lambda kv: np.mean(kv[1]))
    rows = []
    for epsilon in EPSILONS:
        accs = [r["accuracy"] for r in skdp_runs if r["epsilon"] == epsilon]
        totals = [r["total_epsilon"] for r in skdp_runs if r["epsilon"] == epsilon]
        (split, norm), dpl_accs = best[epsilon]
        rows.append(
            [
                f"{epsilon:g}",
                mean_std(accs),
                f"{max(totals):.6f}",
                mean_std(dpl_accs),
                f"{split:g} / {norm:.3g}",
                mean_std(sklearn_runs),
                f"{100 * (np.mean(accs) - np.mean(sklearn_runs)):+.2f}",
                f"{100 * (np.mean(accs) - np.mean(dpl_accs)):+.2f}",
            ]
        )
    run0 = next(r for r in skdp_runs if r["epsilon"] == 1.0)
    lines = [
        "## Benchmark: private pipeline (DPStandardScaler + DPLogisticRegression)"
        " vs diffprivlib",
        "",
        f"Command: `python benchmarks/bench_pipeline.py` ({len(seeds)} seeds, "
        f"{elapsed:.0f} s). Machine: {cpu_model_name()}, load average "
        f"{load_average()}; Python {platform.python_version()}, "
        f"scikit-learn {sklearn.__version__} (diffprivlib "
        f"{dpl['versions']['diffprivlib']} in its venv with scikit-learn "
        f"{dpl['versions']['scikit-learn']}).",
        "",
        f"Data: `make_classification` (n = {N_TRAIN} train + {N_TEST} test, "
        f"d = {N_FEATURES}, 10 informative, 5 redundant), each feature × "
        "10^U(−2, 2) and + U(−100, 100), redrawn per seed. Total budget over "
        f"both steps (ε, δ = {DELTA:g}). skdp: `DPStandardScaler()` "
        "(bounds=None: the scaler finds its own bounds privately) + "
        "`DPLogisticRegression(classes=[0, 1])`, all defaults, the budget "
        f"split {SCALER_SHARE:g} / {1 - SCALER_SHARE:g} of μ² (at total ε = 1: "
        f"scaler ε = {run0['eps_scaler']:.3f}, model ε = "
        f"{run0['eps_model']:.3f}, both at δ = {DELTA:g}); the ledger's total "
        "(column 3, max over seeds) is the exact GDP composition of the two "
        "fits. diffprivlib: `StandardScaler` given the true bounds + "
        "`LogisticRegression`, pure ε-DP with basic composition, best on the "
        "test set of 2 budget splits (scaler share of ε) × 4 data_norm values. "
        "Non-private: scikit-learn `StandardScaler` + `LogisticRegression`. "
        "Test accuracy, mean ± std over seeds.",
        "",
        markdown_table(
            [
                "total ε",
                "skdp private pipeline",
                "ledger total ε",
                "diffprivlib (true bounds)",
                "diffprivlib split / data_norm",
                "non-private",
                "skdp − non-private (points)",
                "skdp − diffprivlib (points)",
            ],
            rows,
        ),
        "",
    ]
    at_one = rows[EPSILONS.index(1.0)]
    lines += [
        "### Acceptance (issue 12)",
        "",
        f"At total ε = 1, n = {N_TRAIN}: skdp − non-private = {at_one[6]} points "
        "(target: no worse than −3), skdp − diffprivlib = "
        f"{at_one[7]} points (target: ≥ 0).",
        "",
        "At this size both private pipelines are close to the non-private one "
        "(the DP models clip each record's gradient, which acts like a robust "
        "loss, hence skdp slightly above it); diffprivlib got the true minimum "
        "and maximum of every feature for free (itself a leak) and its best "
        "configuration chosen on the test set, while skdp found its bounds "
        "privately, within the same total budget. Below n ≈ 10000 (d = 5) the "
        "scaler's private bounds get coarse: see the DPStandardScaler notes.",
        "",
    ]
    if dpl["warnings"]:
        lines.append(
            f"diffprivlib raised {len(dpl['warnings'])} distinct warnings "
            "(silenced), e.g.: " + dpl["warnings"][0][:200]
        )
        lines.append("")
    return "\n".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="2 seeds")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker()
        return
    start = time.perf_counter()
    seeds = range(2) if args.quick else range(5)
    datasets = {seed: make_data(seed) for seed in seeds}
    with tempfile.TemporaryDirectory(prefix="bench_pipeline_") as tmp:
        for seed, (X, y, X_test, y_test) in datasets.items():
            np.savez(
                Path(tmp) / f"seed{seed}.npz", X=X, y=y, X_test=X_test, y_test=y_test
            )
        log("diffprivlib (subprocess)")
        dpl = run_diffprivlib(seeds, tmp)
    log("skdp")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a private pipeline must not warn
        skdp_runs = run_skdp(seeds, datasets)
    log("scikit-learn")
    sklearn_runs = run_sklearn(seeds, datasets)
    print(summarise(skdp_runs, dpl, sklearn_runs, seeds, time.perf_counter() - start))


if __name__ == "__main__":
    main()
