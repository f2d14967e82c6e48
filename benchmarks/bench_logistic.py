"""Benchmark ``skdp.DPLogisticRegression`` against diffprivlib and scikit-learn.

Run from the repository root::

    python benchmarks/bench_logistic.py            # full run (10 seeds)
    python benchmarks/bench_logistic.py --quick    # smoke run (2 seeds)
    python benchmarks/bench_logistic.py --out report.md  # for docs/benchmarks.md

Three estimators are compared on the same train/test splits:

* ``skdp.DPLogisticRegression`` with its default hyper-parameters, the data
  set's label set declared in ``classes`` and ``delta=1e-5`` (``1e-6`` on a
  data set whose training part has ``n >= 1e5``, so that ``delta < 1/n``);
* IBM diffprivlib 0.6.6 ``diffprivlib.models.LogisticRegression`` (pure
  epsilon-DP, one-vs-rest with epsilon split over the classes when there are
  more than two), with the best of four a-priori row-norm bounds
  ``data_norm``;
* scikit-learn's non-private ``LogisticRegression`` (lbfgs, ``C=1.0``).

Data sets: (a) a large synthetic binary problem, (b) digits 0-4 vs 5-9,
(c) two small ones (breast cancer, wine), (d) digits with all ten classes and
(e) a sparse TF-IDF text problem (CSR, d=20000), on which diffprivlib is not
run (it needs dense input) and the near-non-private epsilon=1e6 is added.

diffprivlib does not import on scikit-learn >= 1.8, so it runs in a separate
virtual environment (``benchmarks/.venv-diffprivlib``, created on first use)
through ``benchmarks/_diffprivlib_worker.py``. The splits are handed to the
worker in a temporary ``.npz`` file and the worker answers in JSON.

The script prints a Markdown report (machine, protocol, one accuracy table per
dataset, a fit-time table) on stdout; progress goes to stderr.
"""

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path
from statistics import median

import numpy as np
import scipy
import sklearn
from _common import (
    best_time,
    cpu_model_name,
    distinct_warnings,
    load_average,
    markdown_table,
    mean_std,
)
from sklearn.datasets import (
    load_breast_cancer,
    load_digits,
    load_wine,
    make_classification,
)
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_info

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
WORKER_PATH = BENCH_DIR / "_diffprivlib_worker.py"
DIFFPRIVLIB_VENV = BENCH_DIR / ".venv-diffprivlib"
DIFFPRIVLIB_VERSION = "0.6.6"
DIFFPRIVLIB_REQUIREMENTS = (
    "scikit-learn>=1.6,<1.8",
    f"diffprivlib=={DIFFPRIVLIB_VERSION}",
)

EPSILONS = (0.1, 0.5, 1.0, 2.0, 5.0)
DELTA = 1e-5
# delta for a data set whose training part has DELTA >= 1/n_train (skdp warns
# at delta >= 1/n: such a guarantee allows publishing a whole record).
FALLBACK_DELTA = 1e-6
FULL_SEEDS = tuple(range(10))
QUICK_SEEDS = (0, 1)
# Dataset (e): sparse text. epsilon=1e6 is the near-non-private limit, where
# skdp should be within SPARSE_ACCEPTANCE_POINTS accuracy points of sklearn.
SPARSE_EPSILONS = (0.5, 1.0, 2.0, 5.0, 1e6)
NEAR_NON_PRIVATE_EPSILON = 1e6
SPARSE_ACCEPTANCE_POINTS = 3.0
SPARSE_N_SAMPLES = 50000
SPARSE_N_FEATURES = 20000
# Seeds on (e) (each skdp fit there took 0.25-0.5 s on the reference
# machine); cut this tuple if the estimator gets slower.
SPARSE_FULL_SEEDS = tuple(range(10))
DIFFPRIVLIB_MAX_ITER = 1000
TIMING_EPSILON = 1.0
FULL_TIMING_REPEATS = 21
QUICK_TIMING_REPEATS = 2
# Fit time at scale (issue 20, item 13): n x d standardised Gaussian-mixture
# features, fits interleaved skdp / lbfgs so that drift hits both alike.
LARGE_N, LARGE_D = 1_000_000, 50
LARGE_DELTA = 1e-7
FULL_LARGE_REPEATS, QUICK_LARGE_REPEATS = 5, 1
REPRODUCE_COMMAND = "python benchmarks/bench_logistic.py"


def log(message):
    print(f"[bench_logistic] {message}", file=sys.stderr, flush=True)


# --------------------------------------------------------------------------
# Datasets
# --------------------------------------------------------------------------


def delta_for(n_train):
    """``DELTA``, or ``FALLBACK_DELTA`` when ``DELTA >= 1/n_train``."""
    return DELTA if DELTA < 1.0 / n_train else FALLBACK_DELTA


def finish_dataset(dataset, **options):
    """Add the options shared by every dataset (and their defaults)."""
    dataset.update(
        {
            "n_train": dataset["X_train"].shape[0],
            "epsilons": EPSILONS,
            "delta": delta_for(dataset["X_train"].shape[0]),
            "diffprivlib": True,
            "log_loss": False,
            "full_seeds": FULL_SEEDS,
            **options,
        }
    )
    return dataset


def synthetic_dataset():
    """Dataset (a): 25 000 synthetic samples, 5 000 held out, standardised."""
    X, y = make_classification(
        n_samples=25000,
        n_features=20,
        n_informative=10,
        class_sep=2.0,
        random_state=0,
    )
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=5000, stratify=y, random_state=0
    )
    scaler = StandardScaler().fit(X_train)
    dataset = {
        "key": "synthetic",
        "title": "(a) synthetic: make_classification, n=25000, d=20",
        "description": (
            "`make_classification(n_samples=25000, n_features=20, "
            "n_informative=10, class_sep=2.0, random_state=0)`; 5000 samples "
            "held out (stratified, `random_state=0`); `StandardScaler` fitted "
            "on the training part."
        ),
        "X_train": scaler.transform(X_train),
        "X_test": scaler.transform(X_test),
        "y_train": y_train,
        "y_test": y_test,
        # make_classification's label set for n_classes=2.
        "classes": np.arange(2),
    }
    return finish_dataset(dataset)


def digits_dataset():
    """Dataset (b): sklearn digits, binary 0-4 vs 5-9, pixels divided by 16."""
    digits = load_digits()
    X = digits.data / 16.0
    y = (digits.target >= 5).astype(int)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.25, stratify=y, random_state=0
    )
    dataset = {
        "key": "digits",
        "title": "(b) digits: load_digits, binary 0-4 vs 5-9, d=64",
        "description": (
            "`load_digits()`, target digit 0-4 -> 0 and 5-9 -> 1, pixels "
            "divided by 16 (data-independent scaling to [0, 1]); 25% held out "
            "(stratified, `random_state=0`)."
        ),
        "X_train": X_train,
        "X_test": X_test,
        "y_train": y_train,
        "y_test": y_test,
        "classes": np.arange(2),
    }
    return finish_dataset(dataset)


def small_dataset(loader, key, title, name):
    """Datasets (c): a small sklearn data set, 25% held out, standardised."""
    bunch = loader()
    X_train, X_test, y_train, y_test = train_test_split(
        bunch.data, bunch.target, test_size=0.25, stratify=bunch.target, random_state=0
    )
    scaler = StandardScaler().fit(X_train)
    n_classes = len(bunch.target_names)
    dataset = {
        "key": key,
        "title": title,
        "description": (
            f"`{name}()` ({n_classes} classes); 25% held out (stratified, "
            "`random_state=0`); `StandardScaler` fitted on the training part."
        ),
        "X_train": scaler.transform(X_train),
        "X_test": scaler.transform(X_test),
        "y_train": y_train,
        "y_test": y_test,
        # The documented label set 0..n_classes-1 (declared, not read from y).
        "classes": np.arange(n_classes),
    }
    return finish_dataset(dataset)


def breast_cancer_dataset():
    """Dataset (c1): breast cancer, n=569, d=30, binary."""
    return small_dataset(
        load_breast_cancer,
        "breast_cancer",
        "(c) small n: load_breast_cancer, n=569, d=30, 2 classes",
        "load_breast_cancer",
    )


def wine_dataset():
    """Dataset (c2): wine, n=178, d=13, three classes."""
    return small_dataset(
        load_wine,
        "wine",
        "(c) small n: load_wine, n=178, d=13, 3 classes",
        "load_wine",
    )


def digits_multiclass_dataset():
    """Dataset (d): sklearn digits, all ten classes, pixels divided by 16."""
    digits = load_digits()
    X = digits.data / 16.0
    X_train, X_test, y_train, y_test = train_test_split(
        X, digits.target, test_size=0.25, stratify=digits.target, random_state=0
    )
    dataset = {
        "key": "digits10",
        "title": "(d) multiclass: load_digits, 10 classes, d=64",
        "description": (
            "`load_digits()`, all ten digits as classes, pixels divided by 16 "
            "(data-independent scaling to [0, 1]); 25% held out (stratified, "
            "`random_state=0`)."
        ),
        "X_train": X_train,
        "X_test": X_test,
        "y_train": y_train,
        "y_test": y_test,
        "classes": np.arange(len(digits.target_names)),
    }
    return finish_dataset(dataset)


def sparse_text_dataset():
    """Dataset (e): seeded Zipf TF-IDF text data, CSR, rows of unit L2 norm."""
    from skdp.datasets import make_sparse_text_classification

    X, y = make_sparse_text_classification(
        SPARSE_N_SAMPLES, SPARSE_N_FEATURES, random_state=0
    )
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=0.25, stratify=y, random_state=0
    )
    dataset = {
        "key": "sparse_text",
        "title": (
            f"(e) sparse: make_sparse_text_classification, n={SPARSE_N_SAMPLES}, "
            f"d={SPARSE_N_FEATURES}"
        ),
        "description": (
            "`skdp.datasets.make_sparse_text_classification("
            f"{SPARSE_N_SAMPLES}, {SPARSE_N_FEATURES}, random_state=0)` (seeded "
            "Zipf bag of words as TF-IDF, CSR, rows of unit L2 norm, "
            f"{X.nnz / X.shape[0]:.0f} non-zeros per row on average); 25% held "
            "out (stratified, `random_state=0`); no scaling."
        ),
        "X_train": X_train,
        "X_test": X_test,
        "y_train": y_train,
        "y_test": y_test,
        # The generator's label set for its default n_classes=2.
        "classes": np.arange(2),
    }
    return finish_dataset(
        dataset,
        epsilons=SPARSE_EPSILONS,
        diffprivlib=False,
        log_loss=True,
        full_seeds=SPARSE_FULL_SEEDS,
    )


def all_datasets():
    """Every dataset, in report order ((a), (b), (c) x2, (d), (e))."""
    yield synthetic_dataset()
    yield digits_dataset()
    yield breast_cancer_dataset()
    yield wine_dataset()
    yield digits_multiclass_dataset()
    yield sparse_text_dataset()


def a_priori_data_norms(n_features):
    """Row-norm bounds tried for diffprivlib, fixed before seeing any data."""
    return [1.0, 2.0, 5.0, float(np.sqrt(n_features))]


# --------------------------------------------------------------------------
# Timing helper
# --------------------------------------------------------------------------


def timed_fit(model, X, y):
    """Fit ``model`` and return the wall-clock seconds spent in ``fit`` only."""
    start = time.perf_counter()
    model.fit(X, y)
    return time.perf_counter() - start


def large_dataset():
    """``LARGE_N x LARGE_D`` standardised features (C order) and binary labels."""
    X, y = make_classification(
        n_samples=LARGE_N,
        n_features=LARGE_D,
        n_informative=LARGE_D // 2,
        class_sep=2.0,
        random_state=0,
    )
    return StandardScaler().fit_transform(X), y


def kernel_floor(X, n_iter, repeats=3):
    """Seconds for ``n_iter`` x (one exp per record + X @ w + X.T @ g), F order.

    Every DP-GD step of the logistic loss needs at least this: the two passes
    over X and the sigmoid of each record's predictor. Best of ``repeats``
    runs of ``n_iter`` steps each.
    """
    Xf = np.asfortranarray(X)
    w = np.full(X.shape[1], 0.01)

    def steps():
        for _ in range(n_iter):
            z = Xf @ w
            np.exp(z, out=z)
            Xf.T @ z

    return best_time(steps, repeats)


def time_large(estimator_class, repeats):
    """Interleaved fit times at LARGE_N x LARGE_D: skdp (C and F order), lbfgs."""
    X, y = large_dataset()
    X_fortran = np.asfortranarray(X)
    classes = np.arange(2)

    def skdp_fit(data):
        model = estimator_class(
            epsilon=TIMING_EPSILON, delta=LARGE_DELTA, classes=classes
        )
        return timed_fit(model, data, y), model

    times = {"skdp": [], "skdp_fortran": [], "sklearn": []}
    skdp_fit(X)  # warm-up: the first large allocation of a process is slow here
    for _ in range(repeats):
        seconds_taken, model = skdp_fit(X)
        times["skdp"].append(seconds_taken)
        times["skdp_fortran"].append(skdp_fit(X_fortran)[0])
        times["sklearn"].append(timed_fit(LogisticRegression(), X, y))
    n_iter = model.n_iter_
    return times, n_iter, kernel_floor(X, n_iter)


def large_timing_section(times, n_iter, floor, repeats):
    skdp_median = median(times["skdp"])
    sklearn_median = median(times["sklearn"])
    rows = [
        [
            f"skdp `DPLogisticRegression` (ε={TIMING_EPSILON:g}, δ={LARGE_DELTA:g}), "
            "C-ordered X (copied once to F order)",
            seconds(skdp_median),
            f"{skdp_median / sklearn_median:.2f}",
        ],
        [
            "the same on a Fortran-ordered X (no copy)",
            seconds(median(times["skdp_fortran"])),
            f"{median(times['skdp_fortran']) / sklearn_median:.2f}",
        ],
        [
            "scikit-learn `LogisticRegression` (lbfgs, non-private), C-ordered X",
            seconds(sklearn_median),
            "1.00",
        ],
        [
            f"floor: {n_iter} x (X @ w, one exp per record, X.T @ g)",
            seconds(floor),
            f"{floor / sklearn_median:.2f}",
        ],
    ]
    return "\n".join(
        [
            f"### Fit time at scale (n={LARGE_N}, d={LARGE_D})",
            "",
            f"`make_classification(n_samples={LARGE_N}, n_features={LARGE_D}, "
            f"n_informative={LARGE_D // 2}, class_sep=2.0, random_state=0)`, "
            f"standardised; median of {repeats} fits of each, interleaved "
            "(skdp, skdp on F order, lbfgs), after one warm-up skdp fit. skdp "
            f"runs its default {n_iter} steps. The floor row times the work "
            "that no implementation of those steps avoids (best of 3, F order).",
            "",
            markdown_table(["estimator", "median fit time", "time / lbfgs"], rows),
        ]
    )


# --------------------------------------------------------------------------
# skdp
# --------------------------------------------------------------------------


def import_skdp_estimator():
    """Import ``skdp.DPLogisticRegression`` from this checkout, or exit clearly."""
    sys.path.insert(0, str(REPO_ROOT))
    try:
        import skdp
        from skdp import DPLogisticRegression
    except ImportError as exc:
        raise SystemExit(
            "error: cannot import skdp.DPLogisticRegression "
            f"({type(exc).__name__}: {exc}).\n"
            "Run this script from a checkout whose skdp package provides it, "
            "or install the package with `pip install -e .`."
        ) from exc
    return skdp, DPLogisticRegression


def spent_epsilon(model):
    """The epsilon reported by ``privacy_spent_``, or NaN if it is missing."""
    spent = getattr(model, "privacy_spent_", None)
    return float(getattr(spent, "epsilon", np.nan))


def make_skdp(estimator_class, dataset, epsilon, seed):
    """skdp at its defaults, with the dataset's delta and declared label set."""
    return estimator_class(
        epsilon=epsilon,
        delta=dataset["delta"],
        classes=dataset["classes"],
        random_state=seed,
    )


def run_skdp(estimator_class, dataset, seeds):
    """Accuracy, fit time and spent epsilon of skdp for every epsilon and seed."""
    runs = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        # Every fit here is seeded on purpose (reproducible accuracies), so
        # skdp's warning that seeded noise is predictable is expected.
        warnings.filterwarnings("ignore", message=r"random_state=\d+ seeds the privacy")
        for epsilon in dataset["epsilons"]:
            for seed in seeds:
                model = make_skdp(estimator_class, dataset, epsilon, seed)
                fit_time = timed_fit(model, dataset["X_train"], dataset["y_train"])
                run = {
                    "epsilon": epsilon,
                    "seed": seed,
                    "accuracy": model.score(dataset["X_test"], dataset["y_test"]),
                    "fit_time": fit_time,
                    "spent_epsilon": spent_epsilon(model),
                }
                if dataset["log_loss"]:
                    run["log_loss"] = held_out_log_loss(model, dataset)
                runs.append(run)
    return runs, distinct_warnings(caught)


def held_out_log_loss(model, dataset):
    """Log loss of ``model``'s probabilities on the held-out part."""
    return float(
        log_loss(
            dataset["y_test"],
            model.predict_proba(dataset["X_test"]),
            labels=model.classes_,
        )
    )


def time_skdp_and_lbfgs(estimator_class, dataset, repeats):
    """Fit times of skdp at ``TIMING_EPSILON`` (seed 0) and of lbfgs, interleaved
    (so that a change in the machine's load hits both alike), the floor of
    skdp's steps (see :func:`kernel_floor`) and its number of steps."""
    X, y = dataset["X_train"], dataset["y_train"]
    times = {"skdp": [], "sklearn": []}
    for _ in range(repeats):
        model = make_skdp(estimator_class, dataset, TIMING_EPSILON, 0)
        times["skdp"].append(timed_fit(model, X, y))
        times["sklearn"].append(timed_fit(LogisticRegression(), X, y))
    return times, kernel_floor(X, model.n_iter_, repeats), model.n_iter_


# --------------------------------------------------------------------------
# scikit-learn (non-private reference)
# --------------------------------------------------------------------------


def run_sklearn(dataset, repeats):
    """Accuracy and repeated fit times of the default lbfgs LogisticRegression."""
    fit_times = []
    for _ in range(repeats):
        model = LogisticRegression()
        fit_times.append(timed_fit(model, dataset["X_train"], dataset["y_train"]))
    result = {
        "accuracy": model.score(dataset["X_test"], dataset["y_test"]),
        "fit_times": fit_times,
    }
    if dataset["log_loss"]:
        result["log_loss"] = held_out_log_loss(model, dataset)
    return result


# --------------------------------------------------------------------------
# diffprivlib, in its own virtual environment
# --------------------------------------------------------------------------


def venv_python(venv_dir):
    if os.name == "nt":
        return venv_dir / "Scripts" / "python.exe"
    return venv_dir / "bin" / "python"


def diffprivlib_venv_works(python):
    check = (
        "import diffprivlib, diffprivlib.models; "
        f"assert diffprivlib.__version__ == '{DIFFPRIVLIB_VERSION}'"
    )
    if not python.exists():
        return False
    completed = subprocess.run([str(python), "-c", check], capture_output=True)
    return completed.returncode == 0


def ensure_diffprivlib_venv(venv_dir=DIFFPRIVLIB_VENV):
    """Return the venv's python, creating the venv first if it does not work."""
    python = venv_python(venv_dir)
    if diffprivlib_venv_works(python):
        return python
    log(f"creating {venv_dir} with {', '.join(DIFFPRIVLIB_REQUIREMENTS)}")
    subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv_dir)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", *DIFFPRIVLIB_REQUIREMENTS],
        check=True,
    )
    if not diffprivlib_venv_works(python):
        raise SystemExit(f"error: diffprivlib still does not import in {venv_dir}")
    return python


def run_diffprivlib(python, dataset, seeds, timing_repeats):
    """Fit diffprivlib in the worker subprocess and return its JSON answer."""
    with tempfile.TemporaryDirectory(prefix="bench_logistic_") as tmp:
        data_path = Path(tmp) / f"{dataset['key']}.npz"
        np.savez(
            data_path,
            **{key: dataset[key] for key in ("X_train", "y_train", "X_test", "y_test")},
        )
        config = {
            "data_path": str(data_path),
            "epsilons": list(dataset["epsilons"]),
            "seeds": list(seeds),
            "data_norms": a_priori_data_norms(dataset["X_train"].shape[1]),
            "max_iter": DIFFPRIVLIB_MAX_ITER,
            "timing_epsilon": TIMING_EPSILON,
            "timing_repeats": timing_repeats,
        }
        completed = subprocess.run(
            [str(python), str(WORKER_PATH)],
            input=json.dumps(config),
            capture_output=True,
            text=True,
        )
    if completed.returncode != 0:
        raise SystemExit(
            f"error: diffprivlib worker failed on {dataset['key']}:\n{completed.stderr}"
        )
    return json.loads(completed.stdout)


def best_data_norm(diffprivlib_result):
    """The data_norm with the highest accuracy averaged over all epsilons/seeds.

    This selection looks at the test set, which favours diffprivlib.
    """
    by_norm = group_values(diffprivlib_result["runs"], "data_norm", "accuracy")
    return max(by_norm, key=lambda norm: np.mean(by_norm[norm]))


# --------------------------------------------------------------------------
# Aggregation and Markdown formatting
# --------------------------------------------------------------------------


def group_values(runs, key, value, **filters):
    """Map each value of ``runs[key]`` to the list of ``runs[value]``."""
    groups = {}
    for run in runs:
        if all(run[name] == wanted for name, wanted in filters.items()):
            groups.setdefault(run[key], []).append(run[value])
    return groups


def eps_label(eps, digits=6):
    """``0.5``, ``1``, ``1e6`` (not ``1e+06``)."""
    return f"{eps:.{digits}g}".replace("e+0", "e").replace("e+", "e")


def seconds(value):
    if value < 1.0:
        return f"{value * 1000:.1f} ms"
    return f"{value:.2f} s"


def norm_label(data_norm, n_features):
    """``5`` for a plain bound, ``√d=8`` or ``√d≈4.472`` for the √d bound."""
    if data_norm != float(np.sqrt(n_features)):
        return f"{data_norm:g}"
    if float(data_norm).is_integer():
        return f"√d={data_norm:g}"
    return f"√d≈{data_norm:.3f}"


def threadpool_summary(threadpools):
    if not threadpools:
        return "none loaded"
    return "; ".join(
        f"{pool.get('internal_api', '?')} {pool.get('version', '?')} "
        f"({pool.get('user_api', '?')}, num_threads={pool.get('num_threads', '?')}"
        + (f", {pool['architecture']}" if pool.get("architecture") else "")
        + ")"
        for pool in threadpools
    )


def machine_section(skdp_module, diffprivlib_env, load_at_start):
    openblas_vars = ", ".join(
        f"`{name}={os.environ.get(name, '(unset)')}`"
        for name in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
    )
    lines = [
        "### Machine",
        "",
        f"- Platform: {platform.platform()}",
        f"- CPU: {cpu_model_name()} (`platform.processor()`: "
        f"{platform.processor() or 'empty'}; `os.cpu_count()`: {os.cpu_count()})",
        f"- Environment: {openblas_vars} (left as set by the machine)",
        f"- Load average (1, 5, 15 min) when the script started: "
        f"{load_at_start} (other processes competing for the cores slow "
        "down every fit time below)",
        f"- Main environment: Python {platform.python_version()}, "
        f"numpy {np.__version__}, scipy {scipy.__version__}, "
        f"scikit-learn {sklearn.__version__}, "
        f"skdp {getattr(skdp_module, '__version__', '(no __version__)')}",
        f"- Main thread pools: {threadpool_summary(threadpool_info())}",
        f"- diffprivlib environment: Python {diffprivlib_env['python']}, "
        f"numpy {diffprivlib_env['numpy']}, "
        f"scikit-learn {diffprivlib_env['scikit-learn']}, "
        f"diffprivlib {diffprivlib_env['diffprivlib']}",
        "- diffprivlib thread pools: "
        f"{threadpool_summary(diffprivlib_env['threadpools'])}",
    ]
    return "\n".join(lines)


def seeds_label(seeds):
    return f"{len(seeds)} DP fits with `random_state` = {seeds[0]}..{seeds[-1]}"


def protocol_section(datasets, quick, timing_repeats):
    eps_list = ", ".join(eps_label(eps) for eps in EPSILONS)
    sparse_eps = ", ".join(eps_label(eps) for eps in SPARSE_EPSILONS)
    deltas = "; ".join(
        f"{dataset['key']}: n_train={dataset['n_train']}, δ={dataset['delta']:g}"
        for dataset in datasets
    )
    seed_counts = sorted(
        {len(dataset_seeds(dataset, quick)) for dataset in datasets}, reverse=True
    )
    sparse = [d for d in datasets if not d["diffprivlib"]]
    sparse_seeds = (
        f" ({seeds_label(dataset_seeds(sparse[0], quick))} on (e))"
        if sparse and len(seed_counts) > 1
        else ""
    )
    return "\n".join(
        [
            "### Protocol",
            "",
            f"- ε ∈ {{{eps_list}}} on (a)-(d) and ε ∈ {{{sparse_eps}}} on (e) "
            "(ε = 1e6 is the near-non-private limit); for each ε, "
            f"{seeds_label(dataset_seeds(datasets[0], quick))}{sparse_seeds} "
            "on one fixed split; accuracy on the held-out part, mean ± sample "
            "std over seeds; mean fit time over the same fits.",
            "- skdp: `DPLogisticRegression(epsilon=eps, delta=δ, "
            "classes=labels, random_state=seed)`, every other parameter at its "
            "default (untuned). `labels` is the data set's documented label set "
            "(0..k-1), declared a priori rather than read from `y`. "
            f"δ = {DELTA:g}, or {FALLBACK_DELTA:g} on a data set whose training "
            f"part has δ ≥ 1/n_train (i.e. n_train ≥ {1 / DELTA:.0f}; none "
            f"here): {deltas}.",
            "- diffprivlib: `LogisticRegression(epsilon=eps, data_norm=D, "
            f"max_iter={DIFFPRIVLIB_MAX_ITER}, random_state=seed)`, pure ε-DP "
            "(δ = 0); rows are clipped to norm D inside diffprivlib. "
            "D ∈ {1, 2, 5, √d} is tried and the D with the best mean accuracy "
            "over all ε is reported (best-of-4, chosen on the test set). With "
            "k > 2 classes diffprivlib fits k one-vs-rest models, each at ε/k "
            "(basic composition); skdp fits one multinomial model at ε. "
            "diffprivlib is not run on (e) (see its table).",
            "- scikit-learn: `LogisticRegression()` (lbfgs, C=1.0), "
            "non-private reference.",
            f"- Fit time table: median of {timing_repeats} fits of each "
            f"estimator on dataset (a) at ε = {TIMING_EPSILON:g} "
            "(`time.perf_counter` around `fit` only).",
        ]
    )


def accuracy_section(dataset, skdp_runs, diffprivlib_result, sklearn_result):
    n_train, n_features = dataset["X_train"].shape
    epsilons = dataset["epsilons"]
    skdp_acc = group_values(skdp_runs, "epsilon", "accuracy")
    skdp_time = group_values(skdp_runs, "epsilon", "fit_time")
    skdp_spent = group_values(skdp_runs, "epsilon", "spent_epsilon")
    sklearn_acc = f"{sklearn_result['accuracy']:.4f}"

    if diffprivlib_result is not None:
        norm = best_data_norm(diffprivlib_result)
        dp_acc = group_values(
            diffprivlib_result["runs"], "epsilon", "accuracy", data_norm=norm
        )
        dp_time = group_values(
            diffprivlib_result["runs"], "epsilon", "fit_time", data_norm=norm
        )
        dp_header = f"diffprivlib acc (D={norm_label(norm, n_features)}, δ=0)"
    else:
        dp_header = "diffprivlib acc (not run)"

    def diffprivlib_cells(eps):
        if diffprivlib_result is None:
            return ["—", "—", "—"]
        return [
            mean_std(dp_acc[eps]),
            f"{np.mean(skdp_acc[eps]) / np.mean(dp_acc[eps]):.3f}",
            seconds(np.mean(dp_time[eps])),
        ]

    rows = []
    for eps in epsilons:
        dp_mean_acc, ratio, dp_mean_time = diffprivlib_cells(eps)
        rows.append(
            [
                eps_label(eps),
                mean_std(skdp_acc[eps]),
                dp_mean_acc,
                sklearn_acc,
                ratio,
                seconds(np.mean(skdp_time[eps])),
                dp_mean_time,
                eps_label(np.max(skdp_spent[eps]), 4),
            ]
        )
    header = [
        "ε",
        f"skdp acc (δ={dataset['delta']:g})",
        dp_header,
        "sklearn acc (non-private)",
        "acc ratio skdp / diffprivlib",
        "skdp mean fit",
        "diffprivlib mean fit",
        "skdp `privacy_spent_.epsilon` (max)",
    ]
    if dataset["log_loss"]:
        skdp_loss = group_values(skdp_runs, "epsilon", "log_loss")
        header += ["skdp log loss", "sklearn log loss"]
        for row, eps in zip(rows, epsilons, strict=True):
            row += [mean_std(skdp_loss[eps]), f"{sklearn_result['log_loss']:.4f}"]

    lines = [
        f"### Dataset {dataset['title']}",
        "",
        dataset["description"],
        f"Train n={n_train}, test n={dataset['X_test'].shape[0]}, d={n_features}, "
        f"{len(dataset['classes'])} classes.",
        "",
        markdown_table(header, rows),
        "",
    ]
    if diffprivlib_result is not None:
        lines += [
            "diffprivlib mean accuracy for every a-priori D "
            "(the bold column is reported above):",
            "",
            data_norm_table(diffprivlib_result, norm, n_features, epsilons),
        ]
    else:
        lines.append(
            "diffprivlib is not run on this data set: its LogisticRegression "
            "needs dense input, and a dense float64 copy of X_train would take "
            f"{n_train * n_features * 8 / 1e9:.1f} GB."
        )
    if NEAR_NON_PRIVATE_EPSILON in epsilons:
        lines += ["", acceptance_line(skdp_acc, sklearn_result)]
    return "\n".join(lines)


def acceptance_line(skdp_acc, sklearn_result):
    """Is skdp within SPARSE_ACCEPTANCE_POINTS of sklearn at ε = 1e6?"""
    skdp_mean = np.mean(skdp_acc[NEAR_NON_PRIVATE_EPSILON])
    gap = 100 * (sklearn_result["accuracy"] - skdp_mean)
    verdict = "yes" if gap <= SPARSE_ACCEPTANCE_POINTS else "**no**"
    return (
        f"Near-non-private check (ε = {eps_label(NEAR_NON_PRIVATE_EPSILON)}): skdp "
        f"{skdp_mean:.4f} vs scikit-learn {sklearn_result['accuracy']:.4f}, "
        f"gap {gap:.2f} accuracy points; within "
        f"{SPARSE_ACCEPTANCE_POINTS:g} points: {verdict}."
    )


def data_norm_table(diffprivlib_result, best_norm, n_features, epsilons):
    """diffprivlib's mean accuracy for every data_norm (columns) and epsilon."""
    by_norm = {}
    for run in diffprivlib_result["runs"]:
        by_norm.setdefault(run["data_norm"], {}).setdefault(run["epsilon"], [])
        by_norm[run["data_norm"]][run["epsilon"]].append(run["accuracy"])
    norms = list(by_norm)
    header = ["ε"] + [
        f"**D={norm_label(n, n_features)}**"
        if n == best_norm
        else f"D={norm_label(n, n_features)}"
        for n in norms
    ]
    rows = [
        [eps_label(eps)] + [f"{np.mean(by_norm[n][eps]):.4f}" for n in norms]
        for eps in epsilons
    ]
    return markdown_table(header, rows)


def timing_section(dataset, times, floor, n_iter, diffprivlib_result):
    """Median fit times of the three estimators and skdp's time ratios."""
    skdp_times, sklearn_times = times["skdp"], times["sklearn"]
    n_train, n_features = dataset["X_train"].shape
    norm = best_data_norm(diffprivlib_result)
    dp_times = next(
        t["fit_times"] for t in diffprivlib_result["timings"] if t["data_norm"] == norm
    )
    skdp_median = median(skdp_times)
    rows = [
        [
            f"skdp `DPLogisticRegression` (ε={TIMING_EPSILON:g}, "
            f"δ={dataset['delta']:g})",
            seconds(skdp_median),
            "1.00",
        ],
        [
            "scikit-learn `LogisticRegression` (lbfgs, non-private)",
            seconds(median(sklearn_times)),
            f"{skdp_median / median(sklearn_times):.2f}",
        ],
        [
            f"diffprivlib `LogisticRegression` (ε={TIMING_EPSILON:g}, "
            f"D={norm_label(norm, n_features)})",
            seconds(median(dp_times)),
            f"{skdp_median / median(dp_times):.2f}",
        ],
        [
            f"floor: {n_iter} x (X @ w, one exp per record, X.T @ g)",
            seconds(floor),
            f"{skdp_median / floor:.2f}",
        ],
    ]
    return "\n".join(
        [
            f"### Fit time (dataset (a), n={n_train}, d={n_features})",
            "",
            markdown_table(["estimator", "median fit time", "skdp time / this"], rows),
            "",
            "skdp and lbfgs fits alternate (so that a change in the machine's "
            "load hits both alike); diffprivlib runs in its own environment (an "
            "older scikit-learn, see Machine), in a separate process on the same "
            "machine. The floor row is the best of as many runs of skdp's steps "
            "reduced to the work no implementation of them avoids (F order).",
        ]
    )


def notes_section(skdp_warnings, diffprivlib_warnings, total_seconds):
    lines = [
        "### Notes",
        "",
        "- skdp fits are (ε, δ)-DP (δ per data set, see Protocol); "
        "diffprivlib's LogisticRegression is pure ε-DP (δ = 0), a stronger "
        "guarantee at the same ε, so the δ difference is in skdp's favour.",
        "- diffprivlib's D is the best of 4 a-priori values, selected on the "
        "test set: this favours diffprivlib. skdp runs with its defaults.",
        "- Datasets (a) and (c) are standardised with a scaler fitted on the "
        "training part; that preprocessing step is not privatised (same for "
        "all estimators). (b) and (d) use the data-independent pixel scaling "
        "/16, (e) is used as generated (unit-norm TF-IDF rows).",
        "- On the multiclass data sets (wine, (d)) diffprivlib splits ε over "
        "its one-vs-rest models, which costs it accuracy; that is how its "
        "estimator spends the budget, not a choice of this benchmark.",
    ]
    lines.append(
        "- Every skdp fit is seeded (`random_state` = the seed) so that the "
        "accuracies are reproducible; skdp's PrivacyLeakWarning about seeded "
        "noise is expected and filtered."
    )
    for name, caught in (
        ("skdp", skdp_warnings),
        ("diffprivlib", diffprivlib_warnings),
    ):
        if caught:
            lines.append(f"- Warnings raised during {name} fits (deduplicated):")
            lines += [f"  - `` {message} ``" for message in caught]
        else:
            lines.append(f"- No warnings were raised during {name} fits.")
    lines.append(f"- Total run time of the script: {total_seconds:.1f} s.")
    return "\n".join(lines)


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"smoke run: {len(QUICK_SEEDS)} seeds and "
        f"{QUICK_TIMING_REPEATS} timing repeats",
    )
    parser.add_argument(
        "--out", type=Path, help="also write the Markdown report to this file"
    )
    return parser.parse_args(argv)


def dataset_seeds(dataset, quick):
    return QUICK_SEEDS if quick else dataset["full_seeds"]


def main(argv=None):
    args = parse_args(argv)
    started = time.perf_counter()
    load_at_start = load_average()
    timing_repeats = QUICK_TIMING_REPEATS if args.quick else FULL_TIMING_REPEATS

    skdp_module, skdp_estimator = import_skdp_estimator()
    diffprivlib_python = ensure_diffprivlib_venv()

    datasets = []
    sections = []
    timing = None
    diffprivlib_env = None
    skdp_warnings, diffprivlib_warnings = set(), set()
    for dataset in all_datasets():
        seeds = dataset_seeds(dataset, args.quick)
        is_timing_dataset = dataset["key"] == "synthetic"
        repeats = timing_repeats if is_timing_dataset else 1

        log(f"{dataset['key']}: scikit-learn")
        sklearn_result = run_sklearn(dataset, repeats)
        diffprivlib_result = None
        if dataset["diffprivlib"]:
            log(f"{dataset['key']}: diffprivlib (subprocess)")
            diffprivlib_result = run_diffprivlib(
                diffprivlib_python,
                dataset,
                seeds,
                timing_repeats if is_timing_dataset else 0,
            )
            diffprivlib_env = diffprivlib_result["environment"]
            diffprivlib_warnings.update(diffprivlib_result["warnings"])
        log(f"{dataset['key']}: skdp ({len(seeds)} seeds)")
        skdp_runs, caught = run_skdp(skdp_estimator, dataset, seeds)
        skdp_warnings.update(caught)

        sections.append(
            accuracy_section(dataset, skdp_runs, diffprivlib_result, sklearn_result)
        )
        if is_timing_dataset:
            log(f"{dataset['key']}: skdp timing")
            timing = timing_section(
                dataset,
                *time_skdp_and_lbfgs(skdp_estimator, dataset, timing_repeats),
                diffprivlib_result,
            )
        # The protocol needs the options only: drop the (large) arrays.
        datasets.append(
            {k: v for k, v in dataset.items() if not k.startswith(("X_", "y_"))}
        )
    sections.append(timing)
    log(f"fit time at n={LARGE_N}, d={LARGE_D}")
    large_repeats = QUICK_LARGE_REPEATS if args.quick else FULL_LARGE_REPEATS
    sections.append(
        large_timing_section(*time_large(skdp_estimator, large_repeats), large_repeats)
    )

    report = "\n\n".join(
        [
            "## Benchmark: DPLogisticRegression vs diffprivlib and scikit-learn",
            "Accuracy and fit time of `skdp.DPLogisticRegression` (default "
            "parameters) against IBM diffprivlib's `LogisticRegression` and "
            "non-private scikit-learn `LogisticRegression`, generated by "
            f"`{REPRODUCE_COMMAND}`"
            + (" (run with `--quick`: smoke run)." if args.quick else ".")
            + " Accuracies are seeded; fit times depend on the machine and on "
            "its load at the time (see Machine).",
            machine_section(skdp_module, diffprivlib_env, load_at_start),
            protocol_section(datasets, args.quick, timing_repeats),
            *sections,
            notes_section(
                sorted(skdp_warnings),
                sorted(diffprivlib_warnings),
                time.perf_counter() - started,
            ),
        ]
    )
    print(report)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report + "\n", encoding="utf-8")
        log(f"wrote {args.out}")


if __name__ == "__main__":
    main()
