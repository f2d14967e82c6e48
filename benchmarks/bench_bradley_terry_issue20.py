"""DPBradleyTerry, issue 20 items 7 and 9: rarely compared items, and the
comparison unit's sensitivity and excess error.

Prints markdown tables for ``docs/benchmarks.md``. Reproduce with::

    python benchmarks/bench_bradley_terry_issue20.py

Item 7 (``privacy_unit="outcome"``): 200 items with N(0, 1) scores; 40000
random comparisons among the first 190, and 0-3 comparisons of each of the
last 10 with random common items (the generator of
``skdp.datasets.make_btl_rare_items``). The penalty before the
issue (one value for every item, from the average information; passed here as
``alpha``) against the per-item ``alpha="auto"``; also on the uniform designs
of ``benchmarks/bench_bradley_terry.py``.

Item 9 (``privacy_unit="comparison"``): the design of
``bench_bradley_terry.py`` with 100 items (every pair compared 20 times). ℓ₂
error of the centred scores, and its excess over the non-private MLE, for the
default unit and for the comparison unit with the tight step sensitivity
sqrt(6) and with the generic 2·sqrt(2) (the code before the issue, restored
by patching the two module constants).
"""

import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import markdown_table, use_checkout  # noqa: E402

use_checkout(REPO_ROOT)


from skdp.datasets import make_btl_comparisons, make_btl_rare_items  # noqa: E402
from skdp.ranking import DPBradleyTerry, _bradley_terry, pairs_to_design  # noqa: E402
from skdp.ranking._solver import collapse_duplicate_rows, penalised_mle  # noqa: E402

DELTA = 1e-6
RARE_SEEDS = range(40)
COMPARISON_RARE_SEEDS = range(10)
UNIFORM = ((100, 1.0, 20), (1000, 0.2, 1))
SEEDS = range(3)
EPSILONS_9 = (1.0, 4.0, 1e6)


def rarely_compared_design(seed):
    pairs, won, scores = make_btl_rare_items(random_state=seed)
    return pairs_to_design(pairs, 200), won, scores


def fit(X, y, seed, **params):
    params = {"delta": DELTA, "classes": [0, 1], "random_state": seed, **params}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return DPBradleyTerry(**params).fit(X, y)


def average_rule(model, shape):
    """The ``alpha="auto"`` of the outcome unit before issue 20 (one value)."""
    m, n = shape
    return 1 + 2 * n * (math.sqrt(2) * model.noise_multiplier_) ** 2 / m


def l2(model, scores):
    return float(np.linalg.norm(model.scores_ - (scores - scores.mean())))


def item_7():
    rows = []
    stats = {k: {"top": 0, "prec": [], "l2": []} for k in ("average", "per item")}
    comparison = {"top": 0, "prec": [], "l2": []}
    for seed in RARE_SEEDS:
        X, y, scores = rarely_compared_design(seed)
        per_item = fit(X, y, seed, epsilon=1.0)
        average = fit(X, y, seed, epsilon=1.0, alpha=average_rule(per_item, X.shape))
        true_top = set(np.argsort(-scores)[:10])
        models = [("average", average), ("per item", per_item)]
        if seed in COMPARISON_RARE_SEEDS:
            models.append(
                ("comparison", fit(X, y, seed, epsilon=1.0, privacy_unit="comparison"))
            )
        for name, model in models:
            target = comparison if name == "comparison" else stats[name]
            target["top"] += int(model.ranking_[0] >= X.shape[1] - 10)
            target["prec"].append(len(true_top & set(model.ranking_[:10])) / 10)
            target["l2"].append(l2(model, scores))
    for name, label in (
        ("average", "one penalty from the average information (before)"),
        ("per item", "per-item penalty from the public design (now)"),
    ):
        s = stats[name]
        rows.append(
            [
                f'`"outcome"`, {label}',
                f"{s['top']} / {len(RARE_SEEDS)}",
                f"{np.mean(s['prec']):.3f}",
                f"{np.mean(s['l2']):.3f}",
            ]
        )
    rows.append(
        [
            '`"comparison"` (design private: average penalty)',
            f"{comparison['top']} / {len(COMPARISON_RARE_SEEDS)}",
            f"{np.mean(comparison['prec']):.3f}",
            f"{np.mean(comparison['l2']):.3f}",
        ]
    )
    print("### Item 7: 10 of 200 items compared 0-3 times (ε = 1, δ = 1e-6)\n")
    header = ["fit", "rare item ranked first", "precision@10", "ℓ₂ error"]
    print(markdown_table(header, rows))
    print()
    rows = []
    for n_items, p, L in UNIFORM:
        before, now = [], []
        for seed in SEEDS:
            pairs, y, scores = make_btl_comparisons(n_items, p, L, random_state=seed)
            X = pairs_to_design(pairs, n_items)
            per_item = fit(X, y, seed, epsilon=1.0)
            average = fit(
                X, y, seed, epsilon=1.0, alpha=average_rule(per_item, X.shape)
            )
            before.append(l2(average, scores))
            now.append(l2(per_item, scores))
        rows.append(
            [
                f"{n_items} items, p = {p}, L = {L}",
                f"{np.mean(before):.3f}",
                f"{np.mean(now):.3f}",
            ]
        )
    print("Uniform designs of `bench_bradley_terry.py` (ε = 1, seeds 0-2, mean ℓ₂):\n")
    print(markdown_table(["design", "one penalty (before)", "per item (now)"], rows))
    print()


def item_9():
    errors = {}
    mle = []
    for seed in SEEDS:
        pairs, y, scores = make_btl_comparisons(100, 1.0, 20, random_state=seed)
        X = pairs_to_design(pairs, 100)
        rows, weights = collapse_duplicate_rows(X)
        theta, _ = penalised_mle(rows, X.T @ y, 1e-6, weights)
        mle.append(float(np.linalg.norm(theta - theta.mean() - scores + scores.mean())))
        for eps in EPSILONS_9:
            errors.setdefault(("outcome", eps), []).append(
                l2(fit(X, y, seed, epsilon=eps), scores)
            )
            errors.setdefault(("sqrt(6)", eps), []).append(
                l2(fit(X, y, seed, epsilon=eps, privacy_unit="comparison"), scores)
            )
            saved = (
                _bradley_terry.COMPARISON_STEP_SENSITIVITY,
                _bradley_terry.OTHER_ROW_NORM_BOUND,
            )
            _bradley_terry.COMPARISON_STEP_SENSITIVITY = 2 * math.sqrt(2)
            _bradley_terry.OTHER_ROW_NORM_BOUND = math.sqrt(2)
            try:
                errors.setdefault(("2sqrt(2)", eps), []).append(
                    l2(fit(X, y, seed, epsilon=eps, privacy_unit="comparison"), scores)
                )
            finally:
                (
                    _bradley_terry.COMPARISON_STEP_SENSITIVITY,
                    _bradley_terry.OTHER_ROW_NORM_BOUND,
                ) = saved
    base = np.mean(mle)
    rows = []
    for eps in EPSILONS_9:
        excess = {
            k: np.mean(errors[(k, eps)]) - base
            for k in ("outcome", "sqrt(6)", "2sqrt(2)")
        }
        rows.append(
            [
                f"{eps:g}",
                f"{np.mean(errors[('outcome', eps)]):.4f} (+{excess['outcome']:.4f})",
                f"{np.mean(errors[('2sqrt(2)', eps)]):.4f} (+{excess['2sqrt(2)']:.4f})",
                f"{np.mean(errors[('sqrt(6)', eps)]):.4f} (+{excess['sqrt(6)']:.4f})",
                f"{excess['2sqrt(2)'] / excess['outcome']:.1f}",
                f"{excess['sqrt(6)'] / excess['outcome']:.1f}",
            ]
        )
    print(
        "### Item 9: comparison unit, 100 items, 99000 comparisons "
        f"(δ = 1e-6, seeds 0-2; non-private MLE ℓ₂ {base:.4f})\n"
    )
    header = [
        "ε",
        '`"outcome"` ℓ₂ (excess)',
        '`"comparison"`, 2√2 (before)',
        '`"comparison"`, √6 (now)',
        "excess ratio before",
        "excess ratio now",
    ]
    print(markdown_table(header, rows))
    print()


def main():
    start = time.perf_counter()
    item_7()
    item_9()
    script = Path(__file__).relative_to(REPO_ROOT)
    print(f"(ran in {time.perf_counter() - start:.0f} s: `python {script}`)")


if __name__ == "__main__":
    main()
