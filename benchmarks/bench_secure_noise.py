"""Secure noise (issues 22 and 32): throughput, fixed cost per call, fit times.

Run from the repository root::

    python benchmarks/bench_secure_noise.py            # 10^6 draws, ~6 s per fit cell
    python benchmarks/bench_secure_noise.py --quick    # 10^5 draws, ~1 s per fit cell

1. **Throughput.** Each cell is the best of three timed calls drawing ``n``
   values in one call (this thread's CPU time): numpy's
   ``Generator.normal`` / ``Generator.laplace`` (PCG64, floating point)
   against skdp's exact samplers (``add_gaussian_noise`` /
   ``add_laplace_noise`` on a :class:`~skdp._secure.SecureNoise`, i.e. grid
   rounding plus the discrete Gaussian / Laplace of Canonne, Kamath &
   Steinke 2020, bits from ``os.urandom``), and the same call with the
   samplers of the baseline revision (``--baseline``, default the commit
   before issue 32). It also times ``os.urandom`` itself and counts the
   random bytes one secure draw consumes.
2. **Fixed cost per call.** One ``add_gaussian_noise`` call of d values
   (d = 1, 21, 231, 1001), median of many, in this thread's CPU time (other
   processes on the machine do not count): numpy; the baseline's samplers;
   this checkout's samplers on a fresh source (no batching across calls:
   the cost of a one-off release); and this checkout in a fit (one source,
   50 calls of the same size and scale, as the DP-GD engine makes them: the
   draws are batched across calls).
3. **Fit times at n = 2·10⁴.** Every estimator with a secure path, fitted
   with ``noise="fast"``, ``noise="secure"`` and ``noise="secure"`` on the
   baseline's samplers, interleaved (one fit of each per repeat, so that a
   change of load hits all three), median over the repeats of the wall-clock
   time (default thread pools) and of the thread's CPU time (BLAS limited to
   one thread: robust to other jobs on the machine); the ratios secure/fast
   are the issue's target (<= 1.5x).

The baseline's samplers are loaded from ``git show REV:skdp/_secure.py``
and replace :meth:`SecureNoise._draws` (one sampler call per noise call, no
batching); everything else (grid, accounting) is this checkout's. Prints
Markdown for docs/benchmarks.md.
"""

import argparse
import importlib.util
import os
import platform
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
from _common import best_time, load_average, markdown_table, use_checkout

REPO_ROOT = Path(__file__).resolve().parents[1]
use_checkout(REPO_ROOT)

from sklearn.datasets import make_classification  # noqa: E402

import skdp  # noqa: E402
from skdp._secure import SecureNoise  # noqa: E402
from skdp.datasets import make_btl_comparisons, make_sparse_glm  # noqa: E402
from skdp.mechanisms import add_gaussian_noise, add_laplace_noise  # noqa: E402
from skdp.ranking import pairs_to_design  # noqa: E402

#: The last commit before issue 32 changed the samplers.
BASELINE = "74a6c68"
N_FIT = 20000


def load_baseline(rev):
    """The module ``skdp/_secure.py`` of revision ``rev`` (None if git fails)."""
    try:
        source = subprocess.run(
            ["git", "show", f"{rev}:skdp/_secure.py"],
            cwd=REPO_ROOT,
            capture_output=True,
            check=True,
            text=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    path = Path(tempfile.mkdtemp()) / "_secure_baseline.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("skdp._secure_baseline", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # relative imports resolve in skdp
    return module


class baseline_samplers:
    """Within this context every SecureNoise draws with the baseline's samplers."""

    def __init__(self, module):
        self.module = module

    def __enter__(self):
        module = self.module

        def draws(self, sampler, scale, size):
            return getattr(module, sampler.__name__)(self._bits, scale, size)

        self.saved = SecureNoise._draws
        SecureNoise._draws = draws
        return self

    def __exit__(self, *exc):
        SecureNoise._draws = self.saved
        return False


def throughput(n, baseline):
    rng = np.random.default_rng()
    counted = [0]

    def counting_urandom(k):
        counted[0] += k
        return os.urandom(k)

    rows = []
    zeros = np.zeros(n)
    for name, fast, secure_add, scale in [
        ("Gaussian, std 1", lambda: rng.normal(0.0, 1.0, n), add_gaussian_noise, 1.0),
        ("Gaussian, std 1e3", lambda: rng.normal(0.0, 1e3, n), add_gaussian_noise, 1e3),
        ("Laplace, scale 1", lambda: rng.laplace(0.0, 1.0, n), add_laplace_noise, 1.0),
    ]:

        def secure(add=secure_add, s=scale):
            return add(zeros, s, SecureNoise())

        t_fast = best_time(fast, 3, clock=time.thread_time)
        t_secure = best_time(secure, 3, clock=time.thread_time)
        t_base = np.nan
        if baseline is not None:
            with baseline_samplers(baseline):
                t_base = best_time(secure, 3, clock=time.thread_time)
        counted[0] = 0
        secure_add(zeros, scale, SecureNoise(bytes_source=counting_urandom))
        rows.append(
            (
                name,
                f"{n / t_fast:.3g}",
                f"{n / t_base:.3g}",
                f"{n / t_secure:.3g}",
                f"{t_secure / t_fast:.1f}x",
                f"{counted[0] / n:.0f}",
            )
        )
    t_os = best_time(lambda: os.urandom(8 * n), 3, clock=time.thread_time)
    header = (
        "noise",
        "numpy draws/s",
        "baseline draws/s",
        "secure draws/s",
        "secure/numpy time",
        "bytes/draw",
    )
    return t_os, markdown_table(header, rows)


def median_ms(function, repeats, clock=time.thread_time):
    """Median over ``repeats`` calls, in ms of this thread's CPU time (so that
    other processes on the machine do not count)."""
    times = []
    for _ in range(repeats):
        start = clock()
        function()
        times.append(clock() - start)
    return 1e3 * float(np.median(times))


def fixed_cost(baseline, repeats):
    rng = np.random.default_rng()
    rows = []
    for d in (1, 21, 231, 1001):
        zeros = np.zeros(d)

        def one_off(zeros=zeros):
            add_gaussian_noise(zeros, 1.0, SecureNoise())

        def in_a_fit(zeros=zeros):
            source = SecureNoise()
            for _ in range(50):
                add_gaussian_noise(zeros, 1.0, source)

        def numpy_call(zeros=zeros):
            return zeros + rng.normal(0.0, 1.0, zeros.shape)

        t_numpy = median_ms(numpy_call, repeats)
        t_base = np.nan
        if baseline is not None:
            with baseline_samplers(baseline):
                t_base = median_ms(one_off, repeats)
        t_one = median_ms(one_off, repeats)
        t_fit = median_ms(in_a_fit, max(3, repeats // 10)) / 50
        rows.append(
            (
                d,
                f"{t_numpy:.3f}",
                f"{t_base:.3f}",
                f"{t_one:.3f}",
                f"{t_fit:.3f}",
                f"{t_base / t_one:.1f}x",
                f"{t_base / t_fit:.0f}x",
            )
        )
    header = (
        "d",
        "numpy ms",
        "baseline ms",
        "one-off ms",
        "in a fit ms/call",
        "baseline/one-off",
        "baseline/in a fit",
    )
    return markdown_table(header, rows)


def fit_cases():
    """(name, estimator, fit arguments) at n = 2·10⁴, every secure path."""
    rng = np.random.default_rng(0)
    Xc, yc = make_classification(N_FIT, 20, n_informative=10, random_state=0)
    Xc = (Xc - Xc.mean(axis=0)) / Xc.std(axis=0)
    Xs, ys, _ = make_sparse_glm(N_FIT, 100, 5, random_state=0)
    pairs, yb, _ = make_btl_comparisons(100, 0.5, 8, random_state=0)
    Xb = pairs_to_design(pairs, 100)
    Xr = rng.normal(size=(N_FIT, 20))
    yr = np.tanh(Xr[:, 0])
    d, k, m = 50, 2, 10
    U = np.linalg.qr(rng.standard_normal((d, k)))[0]
    groups = np.repeat(np.arange(N_FIT // m), m)
    Xf = rng.standard_normal((N_FIT, d))
    V = rng.standard_normal((N_FIT // m, k))
    yf = np.einsum("ij,ij->i", Xf @ U, V[groups])
    cases = [
        (skdp.DPLogisticRegression(classes=[0, 1]), "d = 20", (Xc, yc), {}),
        (skdp.DPSparseGLM(accounting="paper"), "d = 100", (Xs, ys), {}),
        (skdp.DPBradleyTerry(classes=[0, 1]), "100 items", (Xb, yb), {}),
        (skdp.DPRandomFeaturesRegressor(100), "d = 20", (Xr, yr), {}),
        (skdp.DPGaussianSampler(radius=5.0), "d = 20", (Xr,), {}),
        (skdp.DPFedRep(), "2000 users, d = 50", (Xf, yf), {"groups": groups}),
        (skdp.DPStandardScaler(), "d = 20", (Xr,), {}),
    ]
    return [(f"`{est!r}`, {data}", est, a, kw) for est, data, a, kw in cases]


def fit_times(baseline, budget):
    """Median fit times; each variant is fitted for about ``budget`` seconds.

    Each repeat fits every variant twice: timed by the wall clock with the
    default thread pools (what a user waits), and timed by this thread's CPU
    time with BLAS/OpenMP limited to one thread (threadpoolctl), which other
    jobs on a shared machine barely disturb (two BLAS threads on a busy
    2-core machine wait on each other: a 0.1 s fit then takes seconds).
    """
    from sklearn.base import clone
    from threadpoolctl import threadpool_limits

    rows = []
    for name, estimator, args, kwargs in fit_cases():
        variants = [("fast", "fast", None), ("secure", "secure", None)]
        if baseline is not None:
            variants.append(("baseline", "secure", baseline))
        wall = {label: [] for label, _, _ in variants}
        cpu = {label: [] for label, _, _ in variants}

        def fit(noise, module, estimator=estimator, args=args, kwargs=kwargs):
            est = clone(estimator).set_params(noise=noise)
            if module is None:
                return est.fit(*args, **kwargs)
            with baseline_samplers(module):
                return est.fit(*args, **kwargs)

        repeats, done = 5, 0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # seedless fast fits, small eps
            while done < repeats:
                for label, noise, module in variants:
                    start = time.perf_counter()
                    est = fit(noise, module)
                    wall[label].append(time.perf_counter() - start)
                    with threadpool_limits(1):
                        start = time.thread_time()
                        fit(noise, module)
                        cpu[label].append(time.thread_time() - start)
                done += 1
                if done == 2:  # enough to size the run
                    per_fit = max(np.mean(t) for t in wall.values())
                    repeats = int(np.clip(budget / per_fit, 5, 300))
        ms = {label: 1e3 * float(np.median(t)) for label, t in wall.items()}
        cpu_ms = {label: 1e3 * float(np.median(t)) for label, t in cpu.items()}
        nan = float("nan")
        rows.append(
            (
                name,
                getattr(est, "n_iter_", ""),
                repeats,
                f"{ms['fast']:.1f}",
                f"{ms.get('baseline', nan) / ms['fast']:.2f}x",
                f"{ms['secure'] / ms['fast']:.2f}x",
                f"{cpu_ms['fast']:.1f}",
                f"{cpu_ms.get('baseline', nan) / cpu_ms['fast']:.2f}x",
                f"**{cpu_ms['secure'] / cpu_ms['fast']:.2f}x**",
            )
        )
        print(f"  {name}: done", file=sys.stderr, flush=True)
    header = (
        "estimator, data",
        "steps",
        "repeats",
        "fast, wall ms",
        "baseline/fast, wall",
        "secure/fast, wall",
        "fast, CPU ms (1 thread)",
        "baseline/fast, CPU",
        "secure/fast, CPU",
    )
    return markdown_table(header, rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--baseline", default=BASELINE)
    parser.add_argument(
        "--skip", nargs="*", default=[], choices=["draws", "calls", "fits"]
    )
    args = parser.parse_args()
    n = 10**5 if args.quick else 10**6
    budget = 1.0 if args.quick else 6.0  # seconds of fits per variant
    baseline = load_baseline(args.baseline)
    command = "python benchmarks/bench_secure_noise.py" + (
        " --quick" if args.quick else ""
    )
    print(
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} "
        f"cores, numpy {np.__version__}; load average at start {load_average()}; "
        f"baseline {args.baseline}{'' if baseline else ' (not found)'}.\n"
    )
    if "draws" not in args.skip:
        t_os, table = throughput(n, baseline)
        rate = 8 * n / t_os / 1e6
        print(f"Throughput, {n:.0e} draws per call; os.urandom: {rate:.0f} MB/s.\n")
        print(table + "\n")
    if "calls" not in args.skip:
        print("Fixed cost of one call of d values (median):\n")
        print(fixed_cost(baseline, 200 if args.quick else 1000) + "\n")
    if "fits" not in args.skip:
        print(f"Fit times at n = {N_FIT}, medians of interleaved fits:\n")
        print(fit_times(baseline, budget) + "\n")
    print(f"Load average at the end: {load_average()}.")
    print(f"\nReproduce: {command}")


if __name__ == "__main__":
    main()
