"""Where a default ``DPLogisticRegression`` fit spends its time (issue 20, item 13).

Run from the repository root::

    python benchmarks/bench_logistic_breakdown.py

Dataset (a) of ``bench_logistic.py`` (``make_classification``, n = 20000,
d = 20, standardised), ε = 1, δ = 1e-5, the declared label set. Two tables:

1. The parts of one fit, in thread CPU time with BLAS on one thread (so that
   the machine's load and thread hand-offs do not blur them; best of
   ``REPEATS``): the 50 clipped gradient sums through the engine, the same
   arithmetic as a bare numpy sequence, the step loop with the gradient sum
   stubbed out, building the engine's design, and the rest of the fit
   (validation, label encoding, accounting).
2. Wall-clock medians of ``REPEATS`` interleaved runs of the fit, of a bare
   numpy loop doing exactly the fit's arithmetic (same steps, clip, noise
   draws, Adam and averaging; no validation, accounting or layering), and of
   scikit-learn's lbfgs.

The bare loop is not a private estimator: it is the floor that numpy
reaches for these steps, against which the fit's overhead is measured.
"""

import time
import warnings
from pathlib import Path
from statistics import median
from unittest import mock

import numpy as np
from _common import best_time, markdown_table, use_checkout
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from threadpoolctl import threadpool_limits

use_checkout(Path(__file__).resolve().parent.parent)

from skdp import DPLogisticRegression, _dpgd  # noqa: E402
from skdp._datafits import BinomialLogistic  # noqa: E402

REPEATS = 31
PARAMS = dict(epsilon=1.0, delta=1e-5, classes=np.arange(2), random_state=0)


def dataset():
    X, y = make_classification(
        n_samples=25000, n_features=20, n_informative=10, class_sep=2.0, random_state=0
    )
    X, _, y, _ = train_test_split(X, y, test_size=5000, stratify=y, random_state=0)
    return StandardScaler().fit(X).transform(X), y


def bare_gradient_sum(Xf, y, limit, coef, intercept):
    """The engine's clipped gradient sum as a plain numpy sequence."""
    z = Xf @ coef
    z += intercept
    np.negative(z, out=z)
    np.exp(z, out=z)
    z += 1.0
    np.divide(1.0, z, out=z)
    g = z[:, 0]
    g -= y
    np.maximum(g, -limit, out=g)
    np.minimum(g, limit, out=g)
    total = np.empty((Xf.shape[1] + 1, 1))
    total[:-1] = Xf.T @ z
    total[-1] = g.sum()
    return total


def bare_fit(X, y, model):
    """The fit's arithmetic with nothing around it (the steps of ``model``)."""
    Xf = _dpgd.canonical_design(np.asarray(X, dtype=float))
    n, d = Xf.shape
    y = y.astype(float)
    limit = model.clip_norm_ / np.hypot(_dpgd.row_norms(Xf), 1.0)
    std = model.noise_multiplier_ * 2 * model.clip_norm_
    rng = np.random.default_rng(0)
    theta = np.zeros((d + 1, 1))
    m, v, mean = np.zeros_like(theta), np.zeros_like(theta), np.zeros_like(theta)
    for t in range(1, model.n_iter_ + 1):
        grad = bare_gradient_sum(Xf, y, limit, theta[:d], theta[d])
        grad += rng.normal(0.0, std, size=grad.shape)
        grad /= n
        grad[:d] += model.alpha_ * theta[:d]
        m = 0.9 * m + 0.1 * grad
        v = 0.999 * v + 0.001 * grad**2
        scale = np.sqrt(v / (1 - 0.999**t)) + std / n
        theta = theta - model.learning_rate_ * (m / (1 - 0.9**t)) / scale
        mean = 0.9 * mean + 0.1 * theta
    return mean / (1 - 0.9**model.n_iter_)


def best_cpu_time(function):
    return best_time(function, REPEATS, clock=time.thread_time)


def parts(X, y, model):
    design = _dpgd.InMemoryDesign(X, y.astype(float), fit_intercept=True)
    datafit = BinomialLogistic()
    coef, intercept = np.full((X.shape[1], 1), 0.05), np.zeros(1)
    limit = model.clip_norm_ / design.row_norm
    steps = model.n_iter_
    stub = np.ones((X.shape[1] + 1, 1))

    class StubDesign:
        shape = X.shape

        def gradient_sum(self, *args):
            return stub.copy()

    def fit_without_gradient_sums():
        with mock.patch.object(_dpgd, "design_of", lambda *a, **k: StubDesign()):
            DPLogisticRegression(**PARAMS).fit(X, y)

    def step_loop_only():
        with mock.patch.object(_dpgd, "design_of", lambda *a, **k: StubDesign()):
            _dpgd.dpgd(
                X,
                y,
                datafit,
                n_outputs=1,
                clip_norm=model.clip_norm_,
                noise_multiplier=model.noise_multiplier_,
                n_iter=steps,
                learning_rate=model.learning_rate_,
                alpha=model.alpha_,
                delta=PARAMS["delta"],
                rng=np.random.default_rng(0),
                solver="adam",
                average=0.9,
            )

    with threadpool_limits(1):
        measured = {
            "whole fit": best_cpu_time(
                lambda: DPLogisticRegression(**PARAMS).fit(X, y)
            ),
            f"{steps} gradient sums through the engine": best_cpu_time(
                lambda: [
                    design.gradient_sum(datafit, coef, intercept, model.clip_norm_)
                    for _ in range(steps)
                ]
            ),
            f"{steps} bare numpy gradient sums": best_cpu_time(
                lambda: [
                    bare_gradient_sum(design.X, design.y, limit, coef, intercept)
                    for _ in range(steps)
                ]
            ),
            "step loop (noise, Adam, averaging)": best_cpu_time(step_loop_only),
            "design (Fortran copy, row norms)": best_cpu_time(
                lambda: _dpgd.InMemoryDesign(X, y, fit_intercept=True)
            ),
            "fit, design and gradient sums stubbed (validation, accounting, "
            "step loop)": best_cpu_time(fit_without_gradient_sums),
        }
    return measured


def interleaved(X, y, model):
    runs = {
        "skdp DPLogisticRegression": lambda: DPLogisticRegression(**PARAMS).fit(X, y),
        "bare numpy loop of the same steps": lambda: bare_fit(X, y, model),
        "scikit-learn lbfgs": lambda: LogisticRegression().fit(X, y),
    }
    times = {name: [] for name in runs}
    for _ in range(REPEATS):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return {name: median(values) for name, values in times.items()}


def main():
    warnings.filterwarnings("ignore", "random_state=.* seeds the privacy")
    X, y = dataset()
    model = DPLogisticRegression(**PARAMS).fit(X, y)
    cpu = parts(X, y, model)
    wall = interleaved(X, y, model)
    lbfgs = wall["scikit-learn lbfgs"]
    print(
        f"### Parts of one fit (thread CPU time, BLAS on one thread, best of {REPEATS})"
    )
    print()
    rows = [[k, f"{v * 1e3:.2f}"] for k, v in cpu.items()]
    print(markdown_table(["part", "ms"], rows))
    print()
    print(f"### Wall clock (medians of {REPEATS} interleaved runs)")
    print()
    rows = [[k, f"{v * 1e3:.1f}", f"{v / lbfgs:.2f}"] for k, v in wall.items()]
    print(markdown_table(["run", "ms", "/ lbfgs"], rows))


if __name__ == "__main__":
    main()
