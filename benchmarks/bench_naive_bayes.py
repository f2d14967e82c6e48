"""Benchmark ``skdp.DPGaussianNB`` against scikit-learn's and diffprivlib's GaussianNB.

Accuracy at the same ε on the same splits (breast cancer, wine, digits; 25%
held out, stratified, ``SPLITS`` splits × ``DRAWS`` noise draws, raw
features: no scaling; mean ± std over the fits), and the
fit time at n = 10⁶ (d = 20, two classes) next to scikit-learn's
``GaussianNB.fit``, interleaved.

* skdp: ``DPGaussianNB(epsilon, delta, classes=declared)`` at its defaults
  (bounds found privately from a share of the budget); δ = 1e-5 (1e-6 where
  1e-5 >= 1/n_train). On digits also with the pixel range the data set
  documents, ``bounds=(0, 16)`` (public: each pixel counts the set bits of a
  4x4 block), alone and with ``select_features=True``.
* diffprivlib 0.6.6 ``GaussianNB(epsilon, bounds=(min, max) of the training
  data)``: pure ε-DP Laplace noise, but its bounds are read from the data (what
  it does itself when given none, with a PrivacyLeakWarning): not private,
  and favourable to diffprivlib. It runs in its own virtual environment
  (``benchmarks/.venv-diffprivlib``, created by ``bench_logistic.py``'s
  helper) through ``benchmarks/_diffprivlib_nb_worker.py``.

Run: ``python benchmarks/bench_naive_bayes.py`` (``--quick``: 2 splits, one
timing repeat; ``--no-diffprivlib`` to skip the anchor).
"""

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import sklearn
from sklearn.datasets import load_breast_cancer, load_digits, load_wine
from sklearn.model_selection import train_test_split
from sklearn.naive_bayes import GaussianNB

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
sys.path.insert(0, str(BENCH_DIR))
from _common import cpu_model_name, markdown_table, mean_std, use_checkout  # noqa: E402

use_checkout(REPO_ROOT)
from skdp import DPGaussianNB  # noqa: E402

WORKER = BENCH_DIR / "_diffprivlib_nb_worker.py"
EPSILONS = (0.5, 1.0, 2.0, 5.0)
SPLITS = 20
#: Noise draws per split and ε (skdp: fresh noise, random_state=None;
#: diffprivlib: random_state 0..DRAWS-1).
DRAWS = 3
LARGE_N, LARGE_D = 1_000_000, 20
COMMAND = "python benchmarks/bench_naive_bayes.py"
DATASETS = {
    "breast_cancer": load_breast_cancer,
    "wine": load_wine,
    "digits": load_digits,
}
#: Bounds known without the data: load_digits' DESCR, "each element is an
#: integer in the range 0..16" (counts of set bits in 4x4 blocks).
PUBLIC_BOUNDS = {"digits": (0.0, 16.0)}


def log(message):
    print(f"[bench_naive_bayes] {message}", file=sys.stderr, flush=True)


def splits_of(loader, n_splits):
    data = loader()
    for seed in range(n_splits):
        yield train_test_split(
            data.data,
            data.target,
            test_size=0.25,
            stratify=data.target,
            random_state=seed,
        )


def delta_for(n_train):
    return 1e-5 if 1e-5 < 1.0 / n_train else 1e-6


def configurations(name):
    """The skdp configurations run on a data set: label -> extra parameters."""
    configs = {"skdp DPGaussianNB": {}}
    if name in PUBLIC_BOUNDS:
        bounds = PUBLIC_BOUNDS[name]
        label = f"bounds=({bounds[0]:g}, {bounds[1]:g})"
        configs[f"skdp {label}"] = {"bounds": bounds}
        configs[f"skdp {label}, select_features"] = {
            "bounds": bounds,
            "select_features": True,
        }
    return configs


def run_skdp_and_sklearn(name, n_splits, draws):
    configs = configurations(name)
    skdp_acc = {label: {eps: [] for eps in EPSILONS} for label in configs}
    sklearn_acc = []
    for X_train, X_test, y_train, y_test in splits_of(DATASETS[name], n_splits):
        classes = np.unique(np.concatenate([y_train, y_test]))  # documented set
        sklearn_acc.append(GaussianNB().fit(X_train, y_train).score(X_test, y_test))
        for eps in EPSILONS:
            for _ in range(draws):
                for label, params in configs.items():
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        model = DPGaussianNB(
                            epsilon=eps,
                            delta=delta_for(len(y_train)),
                            classes=classes,
                            **params,
                        ).fit(X_train, y_train)
                    skdp_acc[label][eps].append(model.score(X_test, y_test))
    return skdp_acc, sklearn_acc


def run_diffprivlib(name, n_splits, draws):
    from bench_logistic import ensure_diffprivlib_venv

    python = ensure_diffprivlib_venv()
    with tempfile.TemporaryDirectory(prefix="bench_nb_") as tmp:
        splits = []
        for i, (X_train, X_test, y_train, y_test) in enumerate(
            splits_of(DATASETS[name], n_splits)
        ):
            path = Path(tmp) / f"{name}{i}.npz"
            np.savez(
                path, X_train=X_train, y_train=y_train, X_test=X_test, y_test=y_test
            )
            splits.append({"data_path": str(path)})
        config = {
            "splits": splits,
            "epsilons": list(EPSILONS),
            "seeds": list(range(draws)),
            "bounds": "data",
        }
        done = subprocess.run(
            [str(python), str(WORKER)],
            input=json.dumps(config),
            capture_output=True,
            text=True,
        )
    if done.returncode != 0:
        raise SystemExit(f"diffprivlib worker failed:\n{done.stderr}")
    result = json.loads(done.stdout)
    accuracy = {eps: [] for eps in EPSILONS}
    for run in result["runs"]:
        accuracy[run["epsilon"]].append(run["accuracy"])
    return accuracy, result["environment"]


def time_large(repeats):
    """Best wall-clock and CPU (process) time of each fit, interleaved."""
    rng = np.random.default_rng(0)
    y = rng.integers(0, 2, size=LARGE_N)
    X = rng.normal(size=(LARGE_N, LARGE_D)) + y[:, None]
    fits = {
        "sklearn GaussianNB": lambda: GaussianNB().fit(X, y),
        "skdp DPGaussianNB (private bounds)": lambda: DPGaussianNB(
            delta=1e-7, classes=[0, 1]
        ).fit(X, y),
        "skdp DPGaussianNB (given bounds)": lambda: DPGaussianNB(
            delta=1e-7, classes=[0, 1], bounds=(-6.0, 7.0)
        ).fit(X, y),
    }
    best = {key: [np.inf, np.inf] for key in fits}
    for _ in range(repeats):
        for key, fit in fits.items():  # interleaved: drift hits all alike
            wall, cpu = time.perf_counter(), time.process_time()
            fit()
            best[key][0] = min(best[key][0], time.perf_counter() - wall)
            best[key][1] = min(best[key][1], time.process_time() - cpu)
    return best


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--no-diffprivlib", action="store_true")
    args = parser.parse_args()
    n_splits = 2 if args.quick else SPLITS
    draws = 1 if args.quick else DRAWS
    repeats = 1 if args.quick else 7
    print(f"Command: `{COMMAND}{' --quick' if args.quick else ''}`\n")
    print(
        f"Machine: {cpu_model_name()}, Python {platform.python_version()}, "
        f"numpy {np.__version__}, scikit-learn {sklearn.__version__}\n"
    )
    environment = None
    for name in DATASETS:
        log(f"{name}: skdp and scikit-learn")
        skdp_acc, sklearn_acc = run_skdp_and_sklearn(name, n_splits, draws)
        dpl_acc = None
        if not args.no_diffprivlib:
            log(f"{name}: diffprivlib")
            dpl_acc, environment = run_diffprivlib(name, n_splits, draws)
        rows = []
        labels = list(skdp_acc)
        for eps in EPSILONS:
            ours = np.mean(skdp_acc[labels[0]][eps])  # the defaults
            row = [f"{eps:g}"] + [mean_std(skdp_acc[label][eps]) for label in labels]
            if dpl_acc is not None:
                theirs = np.mean(dpl_acc[eps])
                row += [mean_std(dpl_acc[eps]), f"{ours - theirs:+.3f}"]
            row += [
                f"{np.mean(sklearn_acc) - np.mean(skdp_acc[label][eps]):.3f}"
                for label in labels
            ]
            rows.append(row)
        header = ["ε", *labels]
        if dpl_acc is not None:
            header += ["diffprivlib GaussianNB (data bounds)", "skdp − diffprivlib"]
        header += [f"sklearn − {label.removeprefix('skdp ')}" for label in labels]
        print(
            f"### {name} (n = {len(DATASETS[name]().target)}; {n_splits} splits "
            f"x {draws} noise draws; "
            f"sklearn GaussianNB {mean_std(sklearn_acc)})\n"
        )
        print(markdown_table(header, rows) + "\n")
    if environment is not None:
        print(f"diffprivlib environment: {json.dumps(environment)}\n")
    log("fit time at n = 1e6")
    best = time_large(repeats)
    wall0, cpu0 = best["sklearn GaussianNB"]
    rows = [
        [key, f"{wall:.3f}", f"{wall / wall0:.2f}", f"{cpu:.3f}", f"{cpu / cpu0:.2f}"]
        for key, (wall, cpu) in best.items()
    ]
    print(
        f"### Fit time, n = {LARGE_N}, d = {LARGE_D}, 2 classes "
        f"(best of {repeats}, interleaved)\n"
    )
    print(
        markdown_table(
            ["fit", "wall s", "wall ratio", "CPU s", "CPU ratio"],
            rows,
        )
    )


if __name__ == "__main__":
    main()
