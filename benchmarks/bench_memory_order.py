"""Row-major against column-major X for the two products of a DP-GD step.

Run from the repository root::

    python benchmarks/bench_memory_order.py

Each step of the engine computes ``X @ w`` and ``X.T @ g``. For dense float64
X with n·d = 8·10⁶ values (64 MB) and d from 10 to 1600, this prints the best
of ``REPEATS`` times of both products on a C-ordered and on an F-ordered X,
and the time of the engine's one-time Fortran copy
(:func:`skdp._clipping._column_major`), with the number of steps after which the
copy has paid for itself. The DP-GD estimators run 50 steps or more, so the
engine copies a row-major float64 X; DPSparseGLM's IHT runs a few steps
(2 at n = 3·10⁴, d = 800) and keeps its clipped copy in X's own order.
"""

from pathlib import Path

import numpy as np
from _common import best_time, markdown_table, use_checkout

use_checkout(Path(__file__).resolve().parent.parent)

from skdp import _clipping  # noqa: E402

N_VALUES = 8_000_000
COLUMNS = (10, 20, 50, 100, 200, 400, 800, 1600)
REPEATS = 15


def measure(d, rng):
    """One table row: step times on both orders and the copy's, for d columns."""
    n = N_VALUES // d
    X = rng.normal(size=(n, d))
    XF = np.asfortranarray(X)
    w, g = rng.normal(size=(d, 1)), rng.normal(size=(n, 1))
    step_c = best_time(lambda: X @ w, REPEATS) + best_time(lambda: X.T @ g, REPEATS)
    step_f = best_time(lambda: XF @ w, REPEATS) + best_time(lambda: XF.T @ g, REPEATS)
    copy = best_time(lambda: _clipping._column_major(X), 3)
    return [
        d,
        f"{step_c * 1e3:.2f}",
        f"{step_f * 1e3:.2f}",
        f"{step_c / step_f:.2f}",
        f"{copy * 1e3:.1f}",
        f"{copy / max(step_c - step_f, 1e-12):.1f}",
    ]


def main():
    rng = np.random.default_rng(0)
    header = [
        "d",
        "step on C order (ms)",
        "step on F order (ms)",
        "C / F",
        "Fortran copy (ms)",
        "steps to repay the copy",
    ]
    print(markdown_table(header, [measure(d, rng) for d in COLUMNS]))


if __name__ == "__main__":
    main()
