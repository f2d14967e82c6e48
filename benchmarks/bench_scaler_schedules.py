"""DPStandardScaler's three bound schedules, each forced, on real and mixed tables.

Without public bounds, ``DPStandardScaler`` chooses from public values (n, d,
ε, δ) between one coarse histogram (``"histogram"``), one coarse histogram
that locates each feature followed by the noisy moments within
(``"located"``), and a four-round search for the bounds followed by noisy
moments (``"search"``), switching at the signal-to-noise ratio
``n·μ/sqrt(2d) = 8`` (``_scaler._MIN_SNR``) and 30
(``_scaler._SEARCH_SNR``). This
script forces each schedule on every table and budget and prints the
accuracy of ``make_private_pipeline(DPStandardScaler(),
DPLogisticRegression(classes=...), epsilon=ε)`` (ROC AUC on binary
tables), mean ± standard error over stratified splits, next to the ratio, and
how many of the scaler's scales fall below 0.1 on ``load_digits`` (a sign of
bounds collapsed onto an atom of a discrete column).

    python benchmarks/bench_scaler_schedules.py            # 8 splits
    python benchmarks/bench_scaler_schedules.py --splits 3
"""

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

from _common import use_checkout  # noqa: E402

use_checkout(BENCH_DIR.parent)

from bench_mixed_table import mixed_table  # noqa: E402
from bench_real_data import DELTA, EPSILONS, tables  # noqa: E402
from sklearn.datasets import load_digits  # noqa: E402
from sklearn.metrics import roc_auc_score  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

import skdp.preprocessing._scaler as scaler_module  # noqa: E402
from skdp import DPLogisticRegression, DPStandardScaler  # noqa: E402
from skdp.pipeline import make_private_pipeline  # noqa: E402

#: (_SEARCH_SNR, _MIN_SNR) values that force each schedule.
FORCE = {"search": (0.0, 0.0), "located": (np.inf, 0.0), "histogram": (np.inf, np.inf)}


def pipeline(classes, epsilon):
    return make_private_pipeline(
        DPStandardScaler(), DPLogisticRegression(classes=classes), epsilon=epsilon
    )


def score(X, y, epsilon, n_splits, auc):
    classes = np.unique(y)
    out = []
    for split in range(n_splits):
        X_tr, X_te, y_tr, y_te = train_test_split(X, y, random_state=split, stratify=y)
        model = pipeline(classes, epsilon).fit(X_tr, y_tr)
        if auc:
            out.append(roc_auc_score(y_te, model.predict_proba(X_te)[:, 1]))
        else:
            out.append(np.mean(model.predict(X_te) == y_te))
    return np.mean(out), np.std(out) / np.sqrt(n_splits)


def snr(n_train, d, epsilon):
    params = pipeline([0, 1], epsilon).get_params()
    eps, delta = params["dpstandardscaler__epsilon"], params["dpstandardscaler__delta"]
    return scaler_module.histogram_snr(n_train, d, eps, delta)


def diabetes_rows(n_splits):
    """Median test R² (heavy-tailed over splits) of the private regression
    pipeline of bench_real_data on diabetes, every schedule forced on both
    scalers (the features' and the target's)."""
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.datasets import load_diabetes

    from skdp import DPLinearRegression

    X, y = load_diabetes(return_X_y=True)
    print("\ndiabetes, private features and target, median R² over splits:\n")
    print("| ε | " + " | ".join(FORCE) + " |")
    print("|---" * (len(FORCE) + 1) + "|")
    for epsilon in EPSILONS:
        cells = []
        for values in FORCE.values():
            scaler_module._SEARCH_SNR, scaler_module._MIN_SNR = values
            r2 = []
            for split in range(n_splits):
                X_tr, X_te, y_tr, y_te = train_test_split(X, y, random_state=split)
                model = make_private_pipeline(
                    DPStandardScaler(),
                    TransformedTargetRegressor(
                        DPLinearRegression(), transformer=DPStandardScaler()
                    ),
                    epsilon=epsilon,
                ).fit(X_tr, y_tr)
                r2.append(model.score(X_te, y_te))
            cells.append(f"{np.median(r2):.3f}")
        print(f"| {epsilon:g} | " + " | ".join(cells) + " |", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=8)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    data = {
        name + (", AUC" if np.unique(y).size == 2 else ""): (
            X,
            y,
            np.unique(y).size == 2,
        )
        for name, (X, y) in tables().items()
    }
    for n in (1000, 2000, 4000):
        X, y = mixed_table(n)
        data[f"mixed table (n = {n}), AUC"] = (X, y, True)
    print(f"python benchmarks/bench_scaler_schedules.py --splits {args.splits}\n")
    print(f"Total ε per pipeline, δ = {DELTA}; 25% test; mean ± s.e. over splits.\n")
    print(
        "| table | ε | n·μ/sqrt(2d) | search | located | histogram "
        "| located − histogram |"
    )
    print("|---|---|---|---|---|---|---|")
    original = scaler_module._SEARCH_SNR, scaler_module._MIN_SNR
    try:
        for name, (X, y, auc) in data.items():
            for epsilon in EPSILONS:
                cells = {}
                for schedule, values in FORCE.items():
                    scaler_module._SEARCH_SNR, scaler_module._MIN_SNR = values
                    cells[schedule] = score(X, y, epsilon, args.splits, auc)
                ratio = snr(int(0.75 * len(y)), X.shape[1], epsilon)
                text = " | ".join(f"{m:.3f} ± {se:.3f}" for m, se in cells.values())
                gap = cells["located"][0] - cells["histogram"][0]
                print(
                    f"| {name} | {epsilon:g} | {ratio:.1f} | {text} | {gap:+.3f} |",
                    flush=True,
                )
        diabetes_rows(args.splits)
        X, _ = load_digits(return_X_y=True)
        print("\nload_digits, DPStandardScaler(epsilon=1) alone, search forced:")
        scaler_module._SEARCH_SNR, scaler_module._MIN_SNR = FORCE["search"]
        for seed in range(3):
            fitted = DPStandardScaler(random_state=seed).fit(X)
            small = np.sort(fitted.scale_[fitted.scale_ < 0.1])
            print(
                f"- seed {seed}: {small.size} of 64 scales below 0.1"
                + (f" (smallest {small[0]:.1e})" if small.size else "")
            )
        std = X.std(axis=0)
        live = std > 0.5
        print(f"\nOver seeds 0-9, per fit ({live.sum()} columns of std > 0.5):")
        for epsilon in (1.0, 2.0):
            stats = []
            for seed in range(10):
                fitted = DPStandardScaler(epsilon=epsilon, random_state=seed).fit(X)
                ratio = fitted.scale_[live] / std[live]
                stats.append(
                    [
                        np.sum(fitted.scale_ < 0.1),
                        np.sum(ratio < 0.5),
                        np.median(ratio),
                        np.abs(fitted.transform(X)).max(),
                    ]
                )
            mean = np.mean(stats, axis=0)
            print(
                f"- ε = {epsilon:g}: scales below 0.1 {mean[0]:.1f}, scale/std "
                f"below 0.5 {mean[1]:.1f}, median scale/std {mean[2]:.2f}, "
                f"largest |transform(X)| {np.max(np.array(stats)[:, 3]):.1f}"
            )
    finally:
        scaler_module._SEARCH_SNR, scaler_module._MIN_SNR = original


if __name__ == "__main__":
    main()
