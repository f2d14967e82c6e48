"""Private pipelines on real tables: private scaling + DPLogisticRegression.

Run from the repository root::

    python benchmarks/bench_real_data.py            # 10 splits
    python benchmarks/bench_real_data.py --quick    # 3 splits
    python benchmarks/bench_real_data.py --tables digits diabetes --epsilons 2

Data: scikit-learn's bundled tables (no download): breast_cancer, digits,
wine and iris; when ISLP is installed, six tables its wheel ships (CSV files
read directly): Carseats (Sales > 8; n = 400, d = 14 after one-hot encoding),
College (private; n = 777, d = 17, heavy-tailed counts), OJ (bought Minute
Maid; n = 1070, d = 18, zero-inflated discounts), Default (defaulted; n =
10000, d = 4, 3% positive), Caravan (bought insurance; n = 5822, d = 85, 6%
positive) and Wage (wage > 100; n = 3000, d = 23 with one-hot columns); and,
when statsmodels is installed, its bundled ``fair``
(target: any affair; n = 6366, d = 8) and ``anes96`` (target: vote;
n = 944, d = 9, with a heavy-tailed population column). For each total
budget ε ∈ {0.5, 1, 2} (δ = 1e-5) and each of the stratified splits
``train_test_split(random_state=split, stratify=y)`` (25% test):

* private: ``make_private_pipeline(DPStandardScaler(), DPLogisticRegression(
  classes=...), epsilon=ε)``, defaults otherwise (equal μ² split);
* private robust / private quantile: the same with ``DPRobustScaler()`` or
  ``DPQuantileTransformer(output_distribution="normal")`` in place of the
  standard scaler (scales read from private quantiles);
* free scaling: scikit-learn's non-private ``StandardScaler`` then
  ``DPLogisticRegression(epsilon=ε)``: the same DP model given the scaling
  for free (the scaling itself is not private);
* non-private: ``StandardScaler`` then scikit-learn's ``LogisticRegression()``.

Mean test accuracy (and ROC AUC on the binary tables) over the splits.

Regression: scikit-learn's bundled ``diabetes`` (n = 442, d = 10), R² on
``train_test_split(random_state=split)`` (25% test), for the same budgets:

* private: ``make_private_pipeline(DPStandardScaler(),
  TransformedTargetRegressor(DPLinearRegression(), transformer=
  DPStandardScaler()), epsilon=ε)``: features and target scaled privately,
  one total ε over the three DP steps;
* free scaling: ``StandardScaler`` then ``TransformedTargetRegressor(
  DPLinearRegression(epsilon=ε), transformer=StandardScaler())``;
* non-private: ``StandardScaler`` then ``LinearRegression()``.

Prints a Markdown section on stdout (issue 30, item 6).
"""

import argparse
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
sys.path.insert(0, str(BENCH_DIR))

from _common import markdown_table, use_checkout  # noqa: E402

use_checkout(REPO_ROOT)

EPSILONS = (0.5, 1.0, 2.0)
DELTA = 1e-5


def tables():
    from sklearn import datasets

    out = {
        name: loader(return_X_y=True)
        for name, loader in [
            ("breast_cancer", datasets.load_breast_cancer),
            ("digits", datasets.load_digits),
            ("wine", datasets.load_wine),
            ("iris", datasets.load_iris),
        ]
    }
    out.update(islp_tables())
    try:
        import statsmodels.datasets as smd
    except ImportError:
        return out
    fair = smd.fair.load_pandas().data
    out["fair (statsmodels)"] = (
        fair.drop(columns="affairs").to_numpy(float),
        (fair.affairs > 0).to_numpy(int),
    )
    anes = smd.anes96.load_pandas().data
    out["anes96 (statsmodels)"] = (
        anes.drop(columns=["vote", "logpopul"]).to_numpy(float),
        anes.vote.to_numpy(int),
    )
    return out


#: ISLP's bundled tables (binary targets; categorical columns one-hot
#: encoded over the categories the table documents), read from the CSV files
#: its wheel ships: ``pip install --no-deps ISLP`` is enough, the package
#: itself is not imported.
ISLP_TARGETS = {
    "Carseats": ("Sales", lambda v: v > 8),  # ISLR's "High"
    "College": ("Private", lambda v: v == "Yes"),
    "OJ": ("Purchase", lambda v: v == "MM"),
    "Default": ("default", lambda v: v == "Yes"),
    "Caravan": ("Purchase", lambda v: v == "Yes"),
    "Wage": ("wage", lambda v: v > 100),  # logwage, its log, dropped
}


def islp_frames():
    """ISLP's tables as ``{name: (DataFrame of features, binary y)}``."""
    import importlib.util

    spec = importlib.util.find_spec("ISLP")
    if spec is None:
        return {}
    import pandas as pd

    folder = Path(next(iter(spec.submodule_search_locations))) / "data"
    out = {}
    for name, (target, positive) in ISLP_TARGETS.items():
        frame = pd.read_csv(folder / f"{name}.csv")
        frame = frame.drop(columns=["logwage"], errors="ignore")
        out[name] = (frame, positive(frame.pop(target)).to_numpy(int))
    return out


def islp_tables():
    import pandas as pd

    return {
        f"{name} (ISLP)": (pd.get_dummies(frame, dtype=float).to_numpy(float), y)
        for name, (frame, y) in islp_frames().items()
    }


def column_transformer_rows(n_splits, epsilons):
    """ISLP's tables with categorical columns, as a user would write it: a
    ``ColumnTransformer`` with ``DPStandardScaler`` on the numeric columns
    and ``OneHotEncoder`` given the documented categories (public) on the
    others, then ``DPLogisticRegression``, one total ε; against
    ``StandardScaler`` in the scaler's place with ``DPLogisticRegression(
    epsilon=ε)`` (free scaling). ROC AUC, mean over the splits."""
    from sklearn.compose import ColumnTransformer, make_column_selector
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder, StandardScaler

    from skdp import DPLogisticRegression, DPStandardScaler
    from skdp.pipeline import make_private_pipeline

    numeric = make_column_selector(dtype_include="number")
    rows = []
    for name, (frame, y) in islp_frames().items():
        text = [c for c in frame.columns if c not in numeric(frame)]
        if not text:
            continue
        categories = [sorted(frame[c].unique()) for c in text]  # documented

        def pre(scaler, text=text, categories=categories):
            return ColumnTransformer(
                [
                    ("num", scaler, numeric),
                    (
                        "cat",
                        OneHotEncoder(categories=categories, handle_unknown="ignore"),
                        text,
                    ),
                ]
            )

        for epsilon in epsilons:
            auc = {"private": [], "free": []}
            for split in range(n_splits):
                Xtr, Xte, ytr, yte = train_test_split(
                    frame, y, random_state=split, stratify=y
                )
                models = {
                    "private": make_private_pipeline(
                        pre(DPStandardScaler()),
                        DPLogisticRegression(classes=[0, 1]),
                        epsilon=epsilon,
                        delta=DELTA,
                    ),
                    "free": make_pipeline(
                        pre(StandardScaler()),
                        DPLogisticRegression(
                            classes=[0, 1], epsilon=epsilon, delta=DELTA
                        ),
                    ),
                }
                for key, model in models.items():
                    model.fit(Xtr, ytr)
                    auc[key].append(roc_auc_score(yte, model.predict_proba(Xte)[:, 1]))
            gap = np.subtract(auc["free"], auc["private"])
            rows.append(
                [
                    f"{name} (ISLP)",
                    f"{len(numeric(frame))} + {len(text)}",
                    f"{epsilon:g}",
                    f"{np.mean(auc['private']):.3f}",
                    f"{np.mean(auc['free']):.3f}",
                    f"{gap.mean():+.3f} ± {gap.std() / np.sqrt(n_splits):.3f}",
                ]
            )
            print(rows[-1], file=sys.stderr, flush=True)
    return rows


def scores(model, X, y, binary):
    from sklearn.metrics import roc_auc_score

    accuracy = model.score(X, y)
    auc = roc_auc_score(y, model.predict_proba(X)[:, 1]) if binary else np.nan
    return accuracy, auc


def run(X, y, epsilon, n_splits):
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from skdp import (
        DPLogisticRegression,
        DPQuantileTransformer,
        DPRobustScaler,
        DPStandardScaler,
    )
    from skdp.pipeline import make_private_pipeline

    classes = np.unique(y).tolist()  # the documented label set of each table
    binary = len(classes) == 2
    results = {
        "private": [],
        "private robust": [],
        "private quantile": [],
        "free scaling": [],
        "non-private": [],
    }
    for split in range(n_splits):
        Xtr, Xte, ytr, yte = train_test_split(X, y, random_state=split, stratify=y)
        models = {
            "private": make_private_pipeline(
                DPStandardScaler(),
                DPLogisticRegression(classes=classes),
                epsilon=epsilon,
                delta=DELTA,
            ),
            "private robust": make_private_pipeline(
                DPRobustScaler(),
                DPLogisticRegression(classes=classes),
                epsilon=epsilon,
                delta=DELTA,
            ),
            "private quantile": make_private_pipeline(
                DPQuantileTransformer(output_distribution="normal"),
                DPLogisticRegression(classes=classes),
                epsilon=epsilon,
                delta=DELTA,
            ),
            "free scaling": make_pipeline(
                StandardScaler(),
                DPLogisticRegression(epsilon=epsilon, delta=DELTA, classes=classes),
            ),
            "non-private": make_pipeline(
                StandardScaler(), LogisticRegression(max_iter=1000)
            ),
        }
        for name, model in models.items():
            results[name].append(scores(model.fit(Xtr, ytr), Xte, yte, binary))
    out = {name: np.mean(values, axis=0) for name, values in results.items()}
    # Standard error over the splits of the private pipeline's accuracy.
    out["private s.e."] = np.std(results["private"], axis=0)[0] / np.sqrt(n_splits)
    return out


def run_regression(X, y, epsilon, n_splits):
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.linear_model import LinearRegression
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from skdp import DPLinearRegression, DPStandardScaler
    from skdp.pipeline import make_private_pipeline

    results = {"private": [], "free scaling": [], "non-private": []}
    for split in range(n_splits):
        Xtr, Xte, ytr, yte = train_test_split(X, y, random_state=split)
        models = {
            "private": make_private_pipeline(
                DPStandardScaler(),
                TransformedTargetRegressor(
                    DPLinearRegression(), transformer=DPStandardScaler()
                ),
                epsilon=epsilon,
                delta=DELTA,
            ),
            "free scaling": make_pipeline(
                StandardScaler(),
                TransformedTargetRegressor(
                    DPLinearRegression(epsilon=epsilon, delta=DELTA),
                    transformer=StandardScaler(),
                ),
            ),
            "non-private": make_pipeline(StandardScaler(), LinearRegression()),
        }
        for name, model in models.items():
            results[name].append(model.fit(Xtr, ytr).score(Xte, yte))
    out = {name: float(np.mean(values)) for name, values in results.items()}
    out["private s.e."] = float(np.std(results["private"]) / np.sqrt(n_splits))
    return out


def regression_rows(n_splits, epsilons=EPSILONS):
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True)
    n_train = len(y) - int(np.ceil(0.25 * len(y)))
    rows = []
    for epsilon in epsilons:
        r = run_regression(X, y, epsilon, n_splits)
        rows.append(
            [
                "diabetes",
                f"{n_train}×{X.shape[1]}",
                f"{epsilon:g}",
                f"{r['private']:.3f}",
                f"{r['free scaling']:.3f}",
                f"{r['non-private']:.3f}",
                f"{r['private'] - r['free scaling']:+.3f}",
            ]
        )
        print(
            rows[-1],
            f"private R² s.e. {r['private s.e.']:.3f}",
            file=sys.stderr,
            flush=True,
        )
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 splits, not 10")
    parser.add_argument(
        "--tables", nargs="*", help="only these tables (names as printed)"
    )
    parser.add_argument("--epsilons", type=float, nargs="*", default=EPSILONS)
    args = parser.parse_args()
    n_splits = 3 if args.quick else 10
    epsilons = tuple(args.epsilons)
    wanted = set(args.tables or [])
    warnings.simplefilter("ignore")  # the scaler's small-n warning, once per fit
    import sklearn

    import skdp

    start = time.time()
    rows = []
    for name, (X, y) in tables().items():
        if wanted and name not in wanted:
            continue
        n_train = len(y) - int(np.ceil(0.25 * len(y)))
        for epsilon in epsilons:
            r = run(X, y, epsilon, n_splits)
            cell = (
                (lambda a: f"{a[0]:.3f} / {a[1]:.3f}")
                if len(np.unique(y)) == 2
                else (lambda a: f"{a[0]:.3f}")
            )
            rows.append(
                [
                    name,
                    f"{n_train}×{X.shape[1]}",
                    f"{epsilon:g}",
                    cell(r["private"]),
                    cell(r["private robust"]),
                    cell(r["private quantile"]),
                    cell(r["free scaling"]),
                    cell(r["non-private"]),
                    f"{r['private'][0] - r['free scaling'][0]:+.3f}",
                ]
            )
            rows[-1].append(f"private accuracy s.e. {r['private s.e.']:.3f}")
            print(rows[-1], file=sys.stderr, flush=True)
    command = "python benchmarks/bench_real_data.py" + (
        " --quick" if args.quick else ""
    )
    if wanted:
        command += " --tables " + " ".join(sorted(wanted))
    if epsilons != EPSILONS:
        command += " --epsilons " + " ".join(f"{e:g}" for e in epsilons)
    rows = [row[:-1] for row in rows]  # the s.e. went to stderr
    print("## Benchmark: private scaling on real tables\n")
    print(f"Generated by `{command}` ({n_splits} stratified splits, 25% test; ")
    print(
        f"δ = {DELTA:g}; {time.time() - start:.0f} s). Python "
        f"{platform.python_version()}, numpy {np.__version__}, scikit-learn "
        f"{sklearn.__version__}, skdp {skdp.__version__}; "
        f"{platform.machine()}, {platform.system()}.\n"
    )
    print("Cells: mean test accuracy (binary tables: accuracy / ROC AUC). ")
    print(
        "*private*: `make_private_pipeline(DPStandardScaler(), "
        "DPLogisticRegression(classes=...), epsilon=ε)` (total ε over both "
        "steps); *private robust* / *private quantile*: the same with "
        "`DPRobustScaler()` / `DPQuantileTransformer(output_distribution="
        '"normal")` in place of `DPStandardScaler()`; *free scaling*: '
        "non-private `StandardScaler` + "
        "`DPLogisticRegression(epsilon=ε)`; *non-private*: `StandardScaler` + "
        "scikit-learn `LogisticRegression()`.\n"
    )
    print(
        markdown_table(
            [
                "table",
                "n_train×d",
                "ε",
                "private",
                "private robust",
                "private quantile",
                "free scaling",
                "non-private",
                "Δ accuracy (private − free)",
            ],
            rows,
        )
    )
    if not wanted or any(name.endswith("(ISLP)") for name in wanted):
        print(
            "\nTables with categorical columns, written with a `ColumnTransformer`: "
            "`DPStandardScaler` on the numeric columns and `OneHotEncoder(categories="
            "...)` (the documented categories: public, so the ledger counts the "
            "encoder as reading the shape only) on the others, then "
            "`DPLogisticRegression`, one total ε by `make_private_pipeline`; *free*: "
            "`StandardScaler` in the scaler's place and `DPLogisticRegression("
            "epsilon=ε)`. ROC AUC; the gap's standard error over the paired splits.\n"
        )
        print(
            markdown_table(
                [
                    "table",
                    "numeric + categorical columns",
                    "ε",
                    "private",
                    "free scaling",
                    "AUC gap (free − private)",
                ],
                column_transformer_rows(n_splits, epsilons),
            )
        )
    print(
        "\nRegression, R² on the test part: *private*: `make_private_pipeline("
        "DPStandardScaler(), TransformedTargetRegressor(DPLinearRegression(), "
        "transformer=DPStandardScaler()), epsilon=ε)` (features and target "
        "scaled privately; total ε over the three DP steps); *free scaling*: "
        "`StandardScaler` + `TransformedTargetRegressor(DPLinearRegression("
        "epsilon=ε), transformer=StandardScaler())`; *non-private*: "
        "`StandardScaler` + `LinearRegression()`.\n"
    )
    print(
        markdown_table(
            [
                "table",
                "n_train×d",
                "ε",
                "private",
                "free scaling",
                "non-private",
                "Δ R² (private − free)",
            ],
            regression_rows(n_splits, epsilons)
            if not wanted or "diabetes" in wanted
            else [],
        )
    )


if __name__ == "__main__":
    main()
