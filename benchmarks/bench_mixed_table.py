"""The obvious private pipeline on a mixed, credit-like table, against free scaling.

Issue 30's acceptance: on real tables with mixed columns, heavy tails and
zero inflation, ``make_private_pipeline(DPStandardScaler(),
DPLogisticRegression())`` at total ε = 1 comes within 0.03 ROC AUC of the
same DP model after a free (non-private) ``StandardScaler``. This table is
generated (seeded) to have every kind of column that broke earlier defaults:
a year (large offset, small spread), a balance near 1e6, a log-normal income,
a debt column that is 85% zeros with a log-normal tail, an age, a column of
scale 1e-3, a constant, and four one-hot columns; the label is logistic in
them. Rows: ROC AUC (mean ± standard error over 4 stratified splits, fresh
noise per split) of the private pipeline with ``clip=True`` (the default) and
``clip=False``, and with the one-hot columns passed through (the scaler on
the numeric columns only, as a ``ColumnTransformer`` with a ``OneHotEncoder``
would do), and of the free-scaled DP model (all columns scaled, or the
numeric ones), for several n. The gaps are like for like: the default
pipeline against the free ``StandardScaler`` over all columns, and the one
with the one-hot columns passed through against the free one that passes
them through too.

    python benchmarks/bench_mixed_table.py            # n = 2000, 5000, 20000
    python benchmarks/bench_mixed_table.py 1000 50000
    python benchmarks/bench_mixed_table.py --splits 10 2000
"""

import argparse
import warnings

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.metrics import roc_auc_score
from sklearn.model_selection import train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skdp import DPLogisticRegression, DPStandardScaler
from skdp.pipeline import make_private_pipeline

N_SPLITS = 4


def mixed_table(n, seed=0):
    """Seeded credit-like table: (X of shape (n, 11), binary y)."""
    rng = np.random.default_rng(seed)
    year = rng.integers(1990, 2020, n).astype(float)
    balance = 1e6 + rng.normal(0, 2e4, n)
    income = rng.lognormal(10, 0.8, n)
    debt = np.where(rng.random(n) < 0.85, 0.0, rng.lognormal(8, 2.0, n))
    age = rng.normal(45, 12, n).clip(18, 95)
    tiny = rng.normal(0.001, 0.0003, n)
    constant = np.full(n, 7.0)
    category = rng.integers(0, 4, n)
    X = np.column_stack(
        [year, balance, income, debt, age, tiny, constant, np.eye(4)[category]]
    )
    logit = (
        -1.0
        + 0.08 * (year - 2005)
        + 3e-5 * (balance - 1e6)
        - 0.8 * np.log(income / 2e4)
        + 0.5 * np.log1p(debt / 1000)
        - 0.03 * (age - 45)
        + 1500 * (tiny - 0.001)
        + 0.5 * (category == 2)
    )
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(int)
    return X, y


#: Columns of mixed_table: seven numeric, then the four one-hot columns.
NUMERIC, ONE_HOT = list(range(7)), list(range(7, 11))


def numeric_only(scaler):
    """The scaler on the numeric columns, the one-hot columns passed through
    (a user's ColumnTransformer with a OneHotEncoder given the categories)."""
    return ColumnTransformer(
        [("num", scaler, NUMERIC), ("cat", "passthrough", ONE_HOT)]
    )


def models(epsilon):
    def private(scaler):
        return make_private_pipeline(
            scaler, DPLogisticRegression(classes=[0, 1]), epsilon=epsilon
        )

    def free(scaler):
        return make_pipeline(
            scaler, DPLogisticRegression(classes=[0, 1], epsilon=epsilon)
        )

    return {
        "private, clip=True": lambda: private(DPStandardScaler(clip=True)),
        "private, clip=False": lambda: private(DPStandardScaler(clip=False)),
        "private, one-hot passed through": lambda: private(
            numeric_only(DPStandardScaler())
        ),
        "free StandardScaler": lambda: free(StandardScaler()),
        "free, one-hot passed through": lambda: free(numeric_only(StandardScaler())),
    }


def main(sizes, n_splits=N_SPLITS):
    warnings.simplefilter("ignore")
    epsilon = 1.0
    print(
        f"python benchmarks/bench_mixed_table.py --splits {n_splits} "
        + " ".join(map(str, sizes))
    )
    names = list(models(epsilon))
    print(
        "| n | " + " | ".join(names) + " | gap (clip=True) | gap (one-hot passed "
        "through, to its free twin) |"
    )
    print("|---" * (len(names) + 3) + "|")
    for n in sizes:
        X, y = mixed_table(n)
        auc = {name: [] for name in names}
        for split in range(n_splits):
            X_tr, X_te, y_tr, y_te = train_test_split(
                X, y, random_state=split, stratify=y
            )
            for name, make in models(epsilon).items():
                model = make().fit(X_tr, y_tr)
                auc[name].append(roc_auc_score(y_te, model.predict_proba(X_te)[:, 1]))
        means = {name: np.mean(v) for name, v in auc.items()}
        errors = {name: np.std(v) / np.sqrt(n_splits) for name, v in auc.items()}
        # The gaps' standard errors over the splits (paired: same split).
        gaps = [
            np.subtract(auc["free StandardScaler"], auc["private, clip=True"]),
            np.subtract(
                auc["free, one-hot passed through"],
                auc["private, one-hot passed through"],
            ),
        ]
        cells = " | ".join(f"{means[name]:.3f} ± {errors[name]:.3f}" for name in names)
        cells += "".join(
            f" | {g.mean():+.3f} ± {g.std() / np.sqrt(n_splits):.3f}" for g in gaps
        )
        print(f"| {n} | {cells} |", flush=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", type=int, nargs="*", default=[2000, 5000, 20000])
    parser.add_argument("--splits", type=int, default=N_SPLITS)
    args = parser.parse_args()
    main(args.sizes, args.splits)
