"""Are ``DPLogisticRegression``'s defaults near the best of a small grid?

Run from the repository root::

    python benchmarks/bench_logistic_defaults.py            # full run
    python benchmarks/bench_logistic_defaults.py --quick    # smoke run
    python benchmarks/bench_logistic_defaults.py --out docs/benchmarks_defaults.md

For every data set and epsilon, the held-out accuracy of
``DPLogisticRegression(epsilon=eps, delta=delta)`` with every other
optimisation parameter at its default is compared with the best setting of a
grid over ``max_iter`` x ``learning_rate`` x ``clip_norm``. Accuracies are
means over stratified splits (one DP seed per split). The grid is defined by
the module constants ``MAX_ITERS``, ``HORIZONS`` (``learning_rate = horizon /
max_iter``) and ``CLIP_NORMS``; edit them to change it. The grid best is chosen
on the same held-out parts it is scored on and each grid point is a separate
fit that would spend its own budget, so it is an optimistic oracle, not a
private procedure.

Grid points run in parallel with joblib (``N_JOBS`` workers). The script
prints a Markdown report on stdout; progress goes to stderr.
"""

import argparse
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import scipy
import sklearn
from _common import (
    cpu_model_name,
    distinct_warnings,
    load_average,
    markdown_table,
    mean_std,
    use_checkout,
)
from joblib import Parallel, delayed
from sklearn.datasets import (
    load_breast_cancer,
    load_digits,
    load_wine,
    make_classification,
)
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
REPRODUCE_COMMAND = "python benchmarks/bench_logistic_defaults.py"

# --- The grid (learning_rate = horizon / max_iter) -------------------------
MAX_ITERS = (50, 100, 200)
HORIZONS = (2.5, 5, 10, 20)
CLIP_NORMS = (0.3, 1.0, 3.0)
# --quick keeps the first and last value of each axis.
QUICK_MAX_ITERS = (MAX_ITERS[0], MAX_ITERS[-1])
QUICK_HORIZONS = (HORIZONS[0], HORIZONS[-1])
QUICK_CLIP_NORMS = (CLIP_NORMS[0], CLIP_NORMS[-1])

# --- Protocol ---------------------------------------------------------------
EPSILONS = (1.0, 2.0)
# Added on the sparse text set only, against scikit-learn's accuracy.
NEAR_NON_PRIVATE_EPSILON = 1e6
DELTA = 1e-5
# delta where DELTA >= 1/n_train (skdp warns at delta >= 1/n).
FALLBACK_DELTA = 1e-6
TEST_SIZE = 0.25
FULL_SPLITS = 5
QUICK_SPLITS = 2
N_JOBS = 2
# Parameters reported as "the defaults" (read from the estimator at run time).
OPTIMISER_PARAMS = ("max_iter", "learning_rate", "clip_norm")


def log(message):
    print(f"[bench_logistic_defaults] {message}", file=sys.stderr, flush=True)


def delta_for(n_train):
    """``DELTA``, or ``FALLBACK_DELTA`` when ``DELTA >= 1/n_train``."""
    return DELTA if DELTA < 1.0 / n_train else FALLBACK_DELTA


# --------------------------------------------------------------------------
# Data sets
# --------------------------------------------------------------------------


def sklearn_dataset(loader, name, key):
    bunch = loader()
    return {
        "key": key,
        "name": name,
        "X": bunch.data,
        "y": bunch.target,
        # The documented label set 0..k-1, declared rather than read from y.
        "classes": np.arange(len(bunch.target_names)),
        "standardise": True,
    }


def synthetic_dataset():
    X, y = make_classification(
        n_samples=600, n_features=20, n_classes=3, n_informative=10, random_state=1
    )
    return {
        "key": "synthetic3",
        "name": "make_classification (n=600, 3 classes)",
        "X": X,
        "y": y,
        "classes": np.arange(3),
        "standardise": True,
    }


def sparse_text_dataset():
    from skdp.datasets import make_sparse_text_classification

    X, y = make_sparse_text_classification(10000, 5000, random_state=0)
    return {
        "key": "sparse_text",
        "name": "sparse text (n=10000, CSR)",
        "X": X,
        "y": y,
        "classes": np.arange(2),
        "standardise": False,
        "extra_epsilons": (NEAR_NON_PRIVATE_EPSILON,),
    }


def all_datasets():
    yield sklearn_dataset(load_breast_cancer, "breast_cancer", "breast_cancer")
    yield sklearn_dataset(load_wine, "wine", "wine")
    yield sklearn_dataset(load_digits, "digits (10 classes)", "digits10")
    yield synthetic_dataset()
    yield sparse_text_dataset()


def make_splits(dataset, n_splits):
    """Stratified splits ``random_state = 0..n_splits-1``, scaled on train."""
    splits = []
    for split in range(n_splits):
        X_train, X_test, y_train, y_test = train_test_split(
            dataset["X"],
            dataset["y"],
            test_size=TEST_SIZE,
            stratify=dataset["y"],
            random_state=split,
        )
        if dataset["standardise"]:
            scaler = StandardScaler().fit(X_train)
            X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
        splits.append((X_train, X_test, y_train, y_test))
    return splits


# --------------------------------------------------------------------------
# Grid
# --------------------------------------------------------------------------


def grid_settings(max_iters, horizons, clip_norms):
    """Every grid point as a dict of DPLogisticRegression parameters."""
    return [
        {
            "max_iter": max_iter,
            "learning_rate": horizon / max_iter,
            "clip_norm": clip_norm,
            "horizon": horizon,
        }
        for max_iter in max_iters
        for horizon in horizons
        for clip_norm in clip_norms
    ]


def setting_label(setting):
    if setting is None:
        return "defaults"
    return (
        f"max_iter={setting['max_iter']}, lr={setting['learning_rate']:.4g} "
        f"(horizon {setting['horizon']:g}), clip_norm={setting['clip_norm']:g}"
    )


def estimator_params(setting):
    if setting is None:
        return {}
    return {name: setting[name] for name in OPTIMISER_PARAMS}


# --------------------------------------------------------------------------
# One task: one (epsilon, setting) on every split
# --------------------------------------------------------------------------


def evaluate(splits, epsilon, delta, classes, setting):
    """Held-out accuracy per split, or the reason the setting was skipped.

    The DP seed of split ``i`` is ``i``. Runs in a joblib worker.
    """
    from skdp import DPLogisticRegression
    from skdp.exceptions import MechanismFailedError

    accuracies = []
    start = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for seed, (X_train, X_test, y_train, y_test) in enumerate(splits):
            model = DPLogisticRegression(
                epsilon=epsilon,
                delta=delta,
                classes=classes,
                random_state=seed,
                **estimator_params(setting),
            )
            try:
                model.fit(X_train, y_train)
            except (ValueError, MechanismFailedError) as exc:
                return {
                    "epsilon": epsilon,
                    "setting": setting,
                    "skipped": f"{type(exc).__name__}: {exc}",
                    "warnings": distinct_warnings(caught),
                    "seconds": time.perf_counter() - start,
                }
            accuracies.append(float(model.score(X_test, y_test)))
    return {
        "epsilon": epsilon,
        "setting": setting,
        "accuracies": accuracies,
        "warnings": distinct_warnings(caught),
        "seconds": time.perf_counter() - start,
    }


def sklearn_accuracy(splits):
    return float(
        np.mean(
            [
                LogisticRegression().fit(X_train, y_train).score(X_test, y_test)
                for X_train, X_test, y_train, y_test in splits
            ]
        )
    )


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------


def eps_label(eps, digits=6):
    """``0.5``, ``1``, ``1e6`` (not ``1e+06``)."""
    return f"{eps:.{digits}g}".replace("e+0", "e").replace("e+", "e")


def machine_line(skdp_module, load_at_start):
    return (
        f"Machine: {platform.platform()}; CPU {cpu_model_name()} "
        f"(`os.cpu_count()` {os.cpu_count()}); load average {load_at_start} at "
        f"start; Python {platform.python_version()}, numpy {np.__version__}, "
        f"scipy {scipy.__version__}, scikit-learn {sklearn.__version__}, "
        f"skdp {getattr(skdp_module, '__version__', '(no __version__)')}."
    )


def protocol_section(defaults, grid, n_splits, quick):
    eps_list = ", ".join(eps_label(eps) for eps in EPSILONS)
    default_text = ", ".join(f"`{name}={defaults[name]!r}`" for name in defaults)
    max_iters = sorted({s["max_iter"] for s in grid})
    horizons = sorted({s["horizon"] for s in grid})
    clip_norms = sorted({s["clip_norm"] for s in grid})
    return "\n".join(
        [
            "## Protocol",
            "",
            f"- ε ∈ {{{eps_list}}} on every data set, plus "
            f"ε = {eps_label(NEAR_NON_PRIVATE_EPSILON)} (near-non-private) on "
            f"the sparse text set; δ = {DELTA:g}, or {FALLBACK_DELTA:g} where "
            f"δ ≥ 1/n_train (none here).",
            f"- {n_splits} stratified splits ({TEST_SIZE:.0%} held out, "
            f"`random_state` = 0..{n_splits - 1}); the DP seed of split i is i. "
            "Accuracy on the held-out part, mean ± sample std over splits. "
            "breast_cancer, wine, digits and make_classification are "
            "standardised with a `StandardScaler` fitted on each training "
            "part; the sparse text set (unit-norm TF-IDF rows) is not scaled.",
            "- Default: `DPLogisticRegression(epsilon=eps, delta=δ, "
            "classes=labels, random_state=i)`, labels = the documented label "
            f"set 0..k-1; at run time the defaults were {default_text}.",
            f"- Grid ({len(grid)} settings"
            + (", reduced by `--quick`" if quick else "")
            + f"): `max_iter` ∈ {{{', '.join(map(str, max_iters))}}} × "
            f"horizon ∈ {{{', '.join(f'{h:g}' for h in horizons)}}} with "
            "`learning_rate = horizon / max_iter` × `clip_norm` ∈ "
            f"{{{', '.join(f'{c:g}' for c in clip_norms)}}}; every other "
            "parameter as in the default fit. The best setting is the one with "
            "the highest mean accuracy over the splits, chosen on the held-out "
            "parts themselves: an optimistic oracle (tuning on private data "
            "would also spend budget per setting).",
            "- gap = default − grid best, in accuracy points (negative: the "
            "defaults lose to the best grid setting).",
        ]
    )


def results_table(rows):
    header = [
        "data set",
        "n_train",
        "d",
        "classes",
        "ε",
        "default acc",
        "grid best acc",
        "best setting",
        "gap (points)",
    ]
    return markdown_table(header, rows)


def summarise(dataset, results, n_train, n_features):
    """One table row per epsilon of ``dataset``; also the skipped settings."""
    rows, skipped, summary = [], [], []
    epsilons = sorted({r["epsilon"] for r in results})
    for eps in epsilons:
        at_eps = [r for r in results if r["epsilon"] == eps]
        default = next(r for r in at_eps if r["setting"] is None)
        grid = [r for r in at_eps if r["setting"] is not None]
        skipped += [
            (dataset["key"], eps, setting_label(r["setting"]), r["skipped"])
            for r in grid
            if "skipped" in r
        ]
        fitted = [r for r in grid if "accuracies" in r]
        best = max(fitted, key=lambda r: np.mean(r["accuracies"]), default=None)
        if "accuracies" in default:
            default_cell = mean_std(default["accuracies"])
            default_mean = np.mean(default["accuracies"])
        else:
            default_cell = f"failed ({default['skipped']})"
            default_mean = np.nan
        if best is None:
            best_cell, best_label, gap = "all skipped", "—", "—"
            best_mean = np.nan
        else:
            best_mean = np.mean(best["accuracies"])
            best_cell = mean_std(best["accuracies"])
            best_label = setting_label(best["setting"])
            gap = f"{100 * (default_mean - best_mean):+.2f}"
        rows.append(
            [
                dataset["name"],
                n_train,
                n_features,
                len(dataset["classes"]),
                eps_label(eps),
                default_cell,
                best_cell,
                best_label,
                gap,
            ]
        )
        summary.append((eps, default_mean, best_mean, best))
    return rows, skipped, summary


# --------------------------------------------------------------------------
# Main
# --------------------------------------------------------------------------


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help=f"smoke run: {QUICK_SPLITS} splits and a reduced grid "
        "(first and last value of each axis)",
    )
    parser.add_argument(
        "--out", type=Path, help="also write the Markdown report to this file"
    )
    return parser.parse_args(argv)


def import_skdp():
    use_checkout(REPO_ROOT)
    try:
        import skdp
        from skdp import DPLogisticRegression
    except ImportError as exc:
        raise SystemExit(
            "error: cannot import skdp.DPLogisticRegression "
            f"({type(exc).__name__}: {exc})."
        ) from exc
    return skdp, DPLogisticRegression


def main(argv=None):
    args = parse_args(argv)
    started = time.perf_counter()
    load_at_start = load_average()
    n_splits = QUICK_SPLITS if args.quick else FULL_SPLITS
    if args.quick:
        grid = grid_settings(QUICK_MAX_ITERS, QUICK_HORIZONS, QUICK_CLIP_NORMS)
    else:
        grid = grid_settings(MAX_ITERS, HORIZONS, CLIP_NORMS)

    skdp_module, estimator = import_skdp()
    all_params = estimator().get_params()
    defaults = {name: all_params[name] for name in OPTIMISER_PARAMS}

    rows, skipped, warnings_seen, references = [], [], set(), []
    with Parallel(n_jobs=N_JOBS, return_as="generator_unordered") as parallel:
        for dataset in all_datasets():
            splits = make_splits(dataset, n_splits)
            n_train, n_features = splits[0][0].shape
            delta = delta_for(n_train)
            epsilons = EPSILONS + dataset.get("extra_epsilons", ())
            tasks = [(eps, setting) for eps in epsilons for setting in [None, *grid]]
            log(
                f"{dataset['key']}: {len(tasks)} tasks x {n_splits} splits "
                f"(n_train={n_train}, d={n_features})"
            )
            dataset_start = time.perf_counter()
            results = []
            for done, result in enumerate(
                parallel(
                    delayed(evaluate)(splits, eps, delta, dataset["classes"], s)
                    for eps, s in tasks
                ),
                start=1,
            ):
                results.append(result)
                warnings_seen.update(result["warnings"])
                if done % max(1, len(tasks) // 10) == 0 or done == len(tasks):
                    log(
                        f"{dataset['key']}: {done}/{len(tasks)} "
                        f"({time.perf_counter() - dataset_start:.1f} s)"
                    )
            dataset_rows, dataset_skipped, summary = summarise(
                dataset, results, n_train, n_features
            )
            rows += dataset_rows
            skipped += dataset_skipped
            log(f"{dataset['key']}: scikit-learn reference")
            references.append(
                (dataset, n_train, n_features, sklearn_accuracy(splits), summary)
            )

    report = "\n\n".join(
        [
            "# Benchmark: DPLogisticRegression defaults vs a small grid",
            "Held-out accuracy of `skdp.DPLogisticRegression` at its default "
            "optimisation parameters against the best setting of a grid over "
            "`max_iter` × `learning_rate` × `clip_norm`, generated by "
            f"`{REPRODUCE_COMMAND}`"
            + (" (run with `--quick`: smoke run)." if args.quick else "."),
            machine_line(skdp_module, load_at_start),
            protocol_section(defaults, grid, n_splits, args.quick),
            "## Results",
            results_table(rows),
            reference_section(references),
            notes_section(
                skipped, sorted(warnings_seen), edge_note(grid, references), started
            ),
        ]
    )
    print(report)
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report + "\n", encoding="utf-8")
        log(f"wrote {args.out}")


def reference_section(references):
    """scikit-learn's non-private accuracy on the same splits."""
    rows = []
    for dataset, n_train, n_features, accuracy, summary in references:
        near = [s for s in summary if s[0] == NEAR_NON_PRIVATE_EPSILON]
        if near:
            _, default_mean, best_mean, _ = near[0]
            private = (
                f"default {default_mean:.4f} ({100 * (default_mean - accuracy):+.2f}),"
                f" grid best {best_mean:.4f} ({100 * (best_mean - accuracy):+.2f})"
            )
        else:
            private = "—"
        rows.append([dataset["name"], n_train, n_features, f"{accuracy:.4f}", private])
    header = [
        "data set",
        "n_train",
        "d",
        "sklearn `LogisticRegression()` acc",
        f"skdp at ε={eps_label(NEAR_NON_PRIVATE_EPSILON)} (points vs sklearn)",
    ]
    return "\n".join(
        [
            "## Non-private reference",
            "",
            "scikit-learn's `LogisticRegression()` (lbfgs, C=1.0), mean "
            "accuracy over the same splits.",
            "",
            markdown_table(header, rows),
        ]
    )


def edge_note(grid, references):
    """How often the best setting sits at the smallest/largest value of an axis.

    A best setting piled up at one end of an axis says the grid should be
    extended in that direction.
    """
    bests = [
        best["setting"]
        for *_, summary in references
        for *_, best in summary
        if best is not None
    ]
    parts = []
    for axis in ("max_iter", "horizon", "clip_norm"):
        values = sorted({setting[axis] for setting in grid})
        if len(values) < 2:
            continue
        low = sum(setting[axis] == values[0] for setting in bests)
        high = sum(setting[axis] == values[-1] for setting in bests)
        parts.append(
            f"{axis}: {low} at the smallest value ({values[0]:g}), "
            f"{high} at the largest ({values[-1]:g})"
        )
    return (
        f"- Best grid settings at an edge of the grid, out of {len(bests)} rows: "
        + "; ".join(parts)
        + "."
    )


def notes_section(skipped, warnings_seen, edge, started):
    lines = ["## Notes", "", edge]
    if skipped:
        lines.append(
            f"- {len(skipped)} (data set, ε, setting) combinations were "
            "rejected by the estimator and skipped:"
        )
        lines += [
            f"  - {key}, ε={eps_label(eps)}, {label}: `` {reason} ``"
            for key, eps, label, reason in skipped
        ]
    else:
        lines.append("- No grid setting was rejected by the estimator.")
    if warnings_seen:
        lines.append("- Warnings raised during skdp fits (deduplicated):")
        lines += [f"  - `` {message} ``" for message in warnings_seen]
    else:
        lines.append("- No warnings were raised during skdp fits.")
    lines.append(
        f"- Total run time of the script: {time.perf_counter() - started:.1f} s "
        f"({N_JOBS} joblib workers)."
    )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
