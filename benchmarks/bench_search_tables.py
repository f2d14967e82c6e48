"""The private search on tables with categorical columns, against one default fit.

Run from the repository root::

    python benchmarks/bench_search_tables.py              # 10 splits, ε = 1, 2
    python benchmarks/bench_search_tables.py --splits 3 --epsilons 1

ISLP's tables with text columns (the CSV files its wheel ships; ``pip
install --no-deps ISLP``), written as a user would: a ``ColumnTransformer``
with ``DPStandardScaler`` on the numeric columns and ``OneHotEncoder`` given
the documented categories on the others, then ``DPLogisticRegression``. For
each total ε (δ = 1e-5) and stratified split (25% test), ROC AUC of:

* default: one fit of ``make_private_pipeline(...)`` at ε;
* search: ``DPRandomSearchCV`` over the same pipeline, ``clip_norm ~
  loguniform(0.2, 3)`` and ``max_iter`` in {50, 100, 200}, ``n_iter=5``,
  total ε for the whole run (selection included).

Both are seeded from the split (the search warns that its noise is
reproducible; silenced here). Prints a Markdown section on stdout; the
paired differences' standard errors are over the splits.
"""

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR))

from _common import markdown_table, use_checkout  # noqa: E402

use_checkout(BENCH_DIR.parent)

from bench_real_data import islp_frames  # noqa: E402

DELTA = 1e-5


def pipelines(frame, text):
    from scipy.stats import loguniform
    from sklearn.compose import ColumnTransformer, make_column_selector
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import OneHotEncoder

    from skdp import DPLogisticRegression, DPStandardScaler
    from skdp.model_selection import DPRandomSearchCV
    from skdp.pipeline import make_private_pipeline

    categories = [sorted(frame[c].unique()) for c in text]  # documented

    def pre():
        return ColumnTransformer(
            [
                (
                    "num",
                    DPStandardScaler(),
                    make_column_selector(dtype_include="number"),
                ),
                (
                    "cat",
                    OneHotEncoder(categories=categories, handle_unknown="ignore"),
                    text,
                ),
            ],
            # Always dense: the search refuses a sparse-or-dense choice read
            # from the data (make_private_pipeline sets it too).
            sparse_threshold=0,
        )

    def default(epsilon, seed):
        pipe = make_private_pipeline(
            pre(), DPLogisticRegression(classes=[0, 1]), epsilon=epsilon, delta=DELTA
        )
        return pipe.set_params(
            columntransformer__num__random_state=seed,
            dplogisticregression__random_state=seed + 1,
        )

    def search(epsilon, seed):
        return DPRandomSearchCV(
            make_pipeline(pre(), DPLogisticRegression(classes=[0, 1])),
            {
                "dplogisticregression__clip_norm": loguniform(0.2, 3.0),
                "dplogisticregression__max_iter": [50, 100, 200],
            },
            n_iter=5,
            epsilon=epsilon,
            delta=DELTA,
            random_state=seed,
        )

    return {"default": default, "search": search}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--splits", type=int, default=10)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 2.0])
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # seeded noise, every fit
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import train_test_split

    start = time.time()
    rows = []
    for name, (frame, y) in islp_frames().items():
        text = [c for c in frame.columns if frame[c].dtype.kind not in "biuf"]
        if not text:
            continue
        makers = pipelines(frame, text)
        for epsilon in args.epsilons:
            auc = {key: [] for key in makers}
            for split in range(args.splits):
                X_tr, X_te, y_tr, y_te = train_test_split(
                    frame, y, random_state=split, stratify=y
                )
                for key, make in makers.items():
                    model = make(epsilon, 1000 * split).fit(X_tr, y_tr)
                    auc[key].append(
                        roc_auc_score(y_te, model.predict_proba(X_te)[:, 1])
                    )
            gap = np.subtract(auc["search"], auc["default"])
            rows.append(
                [
                    f"{name} (ISLP)",
                    f"{len(frame)}",
                    f"{epsilon:g}",
                    f"{np.mean(auc['default']):.3f}",
                    f"{np.mean(auc['search']):.3f}",
                    f"{gap.mean():+.3f} ± {gap.std(ddof=1) / np.sqrt(len(gap)):.3f}",
                ]
            )
            print(rows[-1], file=sys.stderr, flush=True)
    command = "python benchmarks/bench_search_tables.py"
    if args.splits != 10 or args.epsilons != [1.0, 2.0]:
        command += f" --splits {args.splits} --epsilons " + " ".join(
            f"{e:g}" for e in args.epsilons
        )
    print("### The private search on tables with categorical columns\n")
    print(
        f"Generated by `{command}` ({args.splits} splits, δ = {DELTA:g}, "
        f"{time.time() - start:.0f} s). ROC AUC of the released model, mean over "
        "the splits; search − default paired over the splits (± one standard "
        "error).\n"
    )
    print(
        markdown_table(
            ["table", "n", "ε", "default", "search", "search − default"], rows
        )
    )


if __name__ == "__main__":
    main()
