"""Benchmark ``skdp.DPRandomFeaturesRegressor``: fit time and peak memory.

Run from the repository root::

    python benchmarks/bench_random_features.py              # full run (~7 min)
    python benchmarks/bench_random_features.py --quick      # p = 1e4 only
    python benchmarks/bench_random_features.py --calibrate  # throughputs (_RATE_*)
    python benchmarks/bench_random_features.py --out report.md

Algorithm 1 of Bombari & Mondelli ("Privacy for Free", paper 002): full-batch
DP gradient descent on the random-features model ``φ(x) = tanh(Vx)``, at
n = 2000, d = 100 (x ~ N(0, I), y = sign(uᵀx)), T = 500 steps and
p ∈ {1e4, 4e4, 2e5}. Implementations compared, all with the same step size,
clip and noise (skdp's defaults at these sizes: η = 1/p, C = 0.5·sqrt(p),
exact calibration of ε = 4, δ = 1e-4):

(a) ``loop``: a per-sample Python loop written for this benchmark with the
    structure of the authors' public script ``main_RF.py``: Φ = tanh(XVᵀ) is
    stored, and every step computes each record's gradient, clips it, stacks
    the n clipped gradients into an n × p array, averages and adds noise.
    (The authors' script also evaluates the train and test loss at every
    step and computes ``pinv(Φ)``; that work is left out, which favours the
    loop.) It runs the full T = 50 at p = 1000 only. At the large p it runs
    three steps; the T = 500 time reported there is *extrapolated* from those
    measured steps (feature time + 500 × median step time).
    ``loop + np.vectorize tanh`` is the same loop with the authors'
    element-wise feature map (a Python scalar tanh through ``np.vectorize``)
    in place of ``np.tanh``; it is reported separately, at p = 1000 only.
(b) The vectorised primal: ``DPRandomFeaturesRegressor(solver="primal")``
    (the shared DP-GD engine on the stored n × p matrix Φ: two matrix-vector
    products per step), and ``numpy primal``, the same algorithm as a
    twelve-line numpy loop written here, as a second reference.
(c) ``DPRandomFeaturesRegressor(solver="auto")`` (the exact kernel form when
    p ≳ n and T ≳ n/40).

Every configuration runs in its own subprocess (this script with
``--worker``); the fit time is ``time.perf_counter`` around the fit (for the
hand-written loops: feature map and steps) and the peak memory is the
worker's ``ru_maxrss`` (resident-set high-water mark of the whole process,
interpreter and imports included; the footprint before the fit is shown
too). ``--calibrate`` measures the throughputs behind the ``_RATE_*``
constants that ``solver="auto"`` uses to predict each solver's time.

The script prints a Markdown report on stdout; progress goes to stderr.
"""

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import scipy
import sklearn
from _common import cpu_model_name, load_average, markdown_table

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent
REPRODUCE_COMMAND = "python benchmarks/bench_random_features.py"

N_SAMPLES = 2000
N_FEATURES = 100
N_TEST = 1000
N_ITER = 500
SIZES = (10_000, 40_000, 200_000)
QUICK_SIZES = (10_000,)
SMALL_P = 1000
SMALL_ITER = 50
SMALL_REPEATS = 3
# Measured steps of the per-sample loop at the large p (its T = 500 time is
# extrapolated from them).
LOOP_STEPS = 3
EPSILON = 4.0
DELTA = 1e-4  # below 1/n = 5e-4 (the paper's δ = 1/n is not needed for timing)
DATA_SEED = 0
# Acceptance targets (issue 6).
TARGET_LOOP_SPEEDUP = 100.0
TARGET_PRIMAL_SPEEDUP = {40_000: 4.0, 200_000: 5.0}
TARGET_SECONDS = 60.0
TARGET_PEAK_BYTES = 2e9


def log(message):
    print(f"[bench_random_features] {message}", file=sys.stderr, flush=True)


def import_skdp():
    sys.path.insert(0, str(REPO_ROOT))
    try:
        import skdp
        from skdp import DPRandomFeaturesRegressor
    except ImportError as exc:
        raise SystemExit(
            "error: cannot import skdp.DPRandomFeaturesRegressor "
            f"({type(exc).__name__}: {exc})."
        ) from exc
    return skdp, DPRandomFeaturesRegressor


# --------------------------------------------------------------------------
# Data and the schedule shared by every implementation
# --------------------------------------------------------------------------


def make_data(seed=DATA_SEED):
    """x ~ N(0, I_d), y = sign(uᵀx) with u = randn(d)/sqrt(d); train and test."""
    rng = np.random.default_rng(seed)
    u = rng.standard_normal(N_FEATURES) / np.sqrt(N_FEATURES)
    X = rng.standard_normal((N_SAMPLES, N_FEATURES))
    X_test = rng.standard_normal((N_TEST, N_FEATURES))
    return X, np.sign(X @ u), X_test, np.sign(X_test @ u)


def schedule(p, n_iter):
    """Step size, clip and noise std on θ per step, as skdp's defaults.

    ``η = max(1/p, 5d/(pT))`` (training time ηTp/d = 5), ``C = 0.5·sqrt(p)``
    and the exact (ε, δ) calibration of the T Gaussian steps; the std of the
    noise added to θ is ``η·z·2C/n`` (z the noise multiplier), i.e.
    Algorithm 1's ``sqrt(η)·(2C/n)·σ``. The skdp workers check that the
    fitted estimator used the same values.
    """
    from skdp.accounting import gaussian_noise_multiplier

    learning_rate = max(1.0 / p, 5.0 * N_FEATURES / (p * n_iter))
    clip_norm = 0.5 * np.sqrt(p)
    multiplier = gaussian_noise_multiplier(EPSILON, DELTA, n_iter)
    noise_std = learning_rate * multiplier * 2.0 * clip_norm / N_SAMPLES
    return {
        "learning_rate": learning_rate,
        "clip_norm": clip_norm,
        "noise_multiplier": multiplier,
        "noise_std": noise_std,
    }


def reference_weights(p, seed=1):
    """V ∈ R^{p×d}, V_ij ~ N(0, 1/d), for the hand-written implementations."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((p, N_FEATURES)) / np.sqrt(N_FEATURES)


# --------------------------------------------------------------------------
# (a) The per-sample loop, structured as the authors' main_RF.py
# --------------------------------------------------------------------------


def _scalar_tanh(z):
    """tanh of one number from its definition, with numpy scalar exponentials."""
    return (np.exp(z) - np.exp(-z)) / (np.exp(z) + np.exp(-z))


def elementwise_tanh(A):
    """The element-wise feature map of the authors' script: Python per entry."""
    return np.vectorize(_scalar_tanh)(A)


def per_sample_loop(X, y, V, feature_map, *, n_steps, params, rng, timings):
    """Algorithm 1 one record at a time; returns θ after ``n_steps`` steps.

    ``timings`` receives the feature-map time and every step's time.
    """
    n, p = X.shape[0], V.shape[0]
    eta, clip = params["learning_rate"], params["clip_norm"]
    start = time.perf_counter()
    Phi = feature_map(X @ V.T)
    timings["features"] = time.perf_counter() - start
    theta = np.zeros(p)
    timings["steps"] = []
    for _ in range(n_steps):
        start = time.perf_counter()
        clipped = []
        for i in range(n):
            grad = 2.0 * (Phi[i] @ theta - y[i]) * Phi[i]
            norm = np.linalg.norm(grad)
            if norm > clip:
                grad = grad * (clip / norm)
            clipped.append(grad)
        mean_grad = np.stack(clipped).mean(axis=0)
        theta = theta - eta * mean_grad + params["noise_std"] * rng.standard_normal(p)
        timings["steps"].append(time.perf_counter() - start)
    return theta


# --------------------------------------------------------------------------
# (b) A plain vectorised primal loop (second reference)
# --------------------------------------------------------------------------


def numpy_primal(X, y, V, *, n_iter, params, rng):
    """Algorithm 1 on the stored feature matrix, two products with Φ per step."""
    n, p = X.shape[0], V.shape[0]
    eta, clip = params["learning_rate"], params["clip_norm"]
    Phi = X @ V.T
    np.tanh(Phi, out=Phi)
    row_norm = np.sqrt(np.einsum("ij,ij->i", Phi, Phi))  # no n × p temporary
    theta = np.zeros(p)
    for _ in range(n_iter):
        residual = Phi @ theta - y
        grad_norm = 2.0 * np.abs(residual) * row_norm
        scale = clip / np.maximum(grad_norm, clip)  # min(1, C/‖g_i‖)
        theta -= (eta * 2.0 / n) * (Phi.T @ (scale * residual))
        theta += params["noise_std"] * rng.standard_normal(p)
    return theta


def test_mse(X_test, y_test, V, theta):
    return float(np.mean((np.tanh(X_test @ V.T) @ theta - y_test) ** 2))


# --------------------------------------------------------------------------
# Worker: one configuration in a fresh process
# --------------------------------------------------------------------------


class ForeignLoad:
    """CPU used by *other* processes while a block runs, in cores.

    Busy time of the whole machine (``/proc/stat``) minus this process's own
    CPU time, divided by the wall-clock time: 0 on an idle machine, up to
    the number of cores when other jobs compete for every core.
    """

    def __enter__(self):
        self._start = (_machine_busy_seconds(), _own_cpu_seconds(), time.time())
        return self

    def __exit__(self, *exc):
        busy, own, wall = (_machine_busy_seconds(), _own_cpu_seconds(), time.time())
        if busy is None or self._start[0] is None or wall <= self._start[2]:
            self.cores = None
        else:
            other = (busy - self._start[0]) - (own - self._start[1])
            self.cores = max(0.0, other / (wall - self._start[2]))
        return False


def _machine_busy_seconds():
    try:
        with open("/proc/stat") as stat:
            fields = [int(v) for v in stat.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    # user nice system idle iowait irq softirq steal ...: count all but idle,
    # iowait and steal (time the machine spent running something).
    busy = sum(fields[:3]) + sum(fields[5:7])
    return busy / os.sysconf("SC_CLK_TCK")


def _own_cpu_seconds():
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def max_rss_bytes():
    """This process's resident-set high-water mark (Linux: KiB → bytes)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def run_worker(config):
    import warnings

    _, estimator_class = import_skdp()
    X, y, X_test, y_test = make_data()
    p, n_iter = config["p"], config["n_iter"]
    params = schedule(p, n_iter)
    kind = config["kind"]
    result = {"config": config}
    if kind == "skdp":
        model_kwargs = dict(
            n_components=p,
            epsilon=EPSILON,
            delta=DELTA,
            max_iter=n_iter,
            solver=config["solver"],
            random_state=0,
        )
        result["rss_before"] = max_rss_bytes()
        times = []
        with warnings.catch_warnings(record=True) as caught, ForeignLoad() as load:
            warnings.simplefilter("always")
            for repeat in range(config.get("repeats", 1)):
                model = estimator_class(**{**model_kwargs, "random_state": repeat})
                start = time.perf_counter()
                model.fit(X, y)
                times.append(time.perf_counter() - start)
        result["warnings"] = sorted({str(w.message) for w in caught})
        result["other_load"] = load.cores
        result["peak_rss"] = max_rss_bytes()
        result["fit_seconds"] = times
        result["solver"] = model.solver_
        result["test_mse"] = float(np.mean((model.predict(X_test) - y_test) ** 2))
        result["same_schedule"] = bool(
            model.n_iter_ == n_iter
            and np.isclose(model.learning_rate_, params["learning_rate"])
            and np.isclose(model.clip_norm_, params["clip_norm"])
            and np.isclose(model.noise_multiplier_, params["noise_multiplier"])
        )
        return result
    V = reference_weights(p)
    result["rss_before"] = max_rss_bytes()
    times, step_times, feature_times = [], [], []
    with ForeignLoad() as load:
        for repeat in range(config.get("repeats", 1)):
            rng = np.random.default_rng(100 + repeat)
            start = time.perf_counter()
            if kind == "loop":
                timings = {}
                feature_map = elementwise_tanh if config["vectorize"] else np.tanh
                theta = per_sample_loop(
                    X,
                    y,
                    V,
                    feature_map,
                    n_steps=config["n_steps"],
                    params=params,
                    rng=rng,
                    timings=timings,
                )
                step_times += timings["steps"]
                feature_times.append(timings["features"])
            else:
                theta = numpy_primal(X, y, V, n_iter=n_iter, params=params, rng=rng)
            times.append(time.perf_counter() - start)
    result["other_load"] = load.cores
    result["peak_rss"] = max_rss_bytes()
    result["fit_seconds"] = times
    if kind == "loop":
        result["step_seconds"] = step_times
        result["feature_seconds"] = feature_times
    if kind != "loop" or config["n_steps"] == n_iter:
        result["test_mse"] = test_mse(X_test, y_test, V, theta)
    return result


def run_in_subprocess(config):
    log(f"running {config}")
    completed = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--worker", json.dumps(config)],
        capture_output=True,
        text=True,
        cwd=str(BENCH_DIR),
    )
    if completed.returncode != 0:
        raise SystemExit(f"error: worker failed on {config}:\n{completed.stderr}")
    result = json.loads(completed.stdout.strip().splitlines()[-1])
    log(
        f"  fit {', '.join(f'{t:.2f}' for t in result['fit_seconds'])} s, "
        f"peak {result['peak_rss'] / 1e9:.2f} GB, other load {load_label(result)}"
    )
    return result


def memory_available_bytes():
    try:
        with open("/proc/meminfo") as meminfo:
            for line in meminfo:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


# --------------------------------------------------------------------------
# Calibration of the throughputs behind solver="auto"
# --------------------------------------------------------------------------


def best_time(function, repeats=5):
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        function()
        times.append(time.perf_counter() - start)
    return min(times)


def calibrate():
    """Throughputs of each operation the ``_RATE_*`` constants stand for."""

    from skdp._datafits import Quadratic
    from skdp._dpgd import dpgd
    from skdp.random_features import _regressor
    from skdp.random_features._features import _finite, column_blocks
    from skdp.random_features._kernel import gram_jitter, gram_square_root

    n, d = N_SAMPLES, N_FEATURES
    X, y, _, _ = make_data()
    rng = np.random.default_rng(0)
    width = next(column_blocks(n, 10**9)).stop  # the solvers' block width
    W = rng.standard_normal((d, width)) / np.sqrt(d)
    Z = X @ W
    A = np.tanh(Z)
    project = best_time(lambda: X @ W)
    activation = best_time(lambda: _finite(np.tanh(Z)))
    gram = best_time(lambda: A @ A.T)
    # A pass over a stored Φ (matrix-vector products), beyond the caches.
    p_pass = 20_000
    Phi = np.tanh(X @ (rng.standard_normal((d, p_pass)) / np.sqrt(d)))
    theta, r = rng.standard_normal(p_pass), rng.standard_normal(n)
    forward = best_time(lambda: Phi @ theta)
    backward = best_time(lambda: Phi.T @ r)
    # The primal engine's steps (two passes each), net of its set-up.
    params = schedule(p_pass, 500)
    steps = 20

    def engine(n_iter):
        dpgd(
            Phi,
            y,
            Quadratic(),
            n_outputs=1,
            clip_norm=params["clip_norm"],
            noise_multiplier=params["noise_multiplier"],
            n_iter=n_iter,
            learning_rate=params["learning_rate"],
            delta=DELTA,
            rng=np.random.default_rng(0),
            fit_intercept=False,
        )

    engine_steps = (best_time(lambda: engine(steps + 1), 3)) - best_time(
        lambda: engine(1), 3
    )
    # The kernel form's per-step product with the n × n Gram matrix.
    K = A @ A.T + (Phi @ Phi.T)
    v = rng.standard_normal(n)
    gram_matvec = best_time(lambda: [K @ v for _ in range(100)], 3) / 100
    cholesky = best_time(lambda: gram_square_root(K, gram_jitter(n, width)), 3)
    measured = {
        "_RATE_PROJECT": (n * width * d / project, "n·p·d / s, X @ V (one block)"),
        "_RATE_ACTIVATION": (
            n * width / activation,
            "entries / s, tanh + finiteness rule (one block)",
        ),
        "_RATE_GEMM": (n * n * width / gram, "n²·p / s, A @ A.T (one block)"),
        "_RATE_MATVEC": (
            2 * n * p_pass / (forward + backward),
            f"n·p / s, Φθ and Φᵀr at p = {p_pass} (mean of the two)",
        ),
        "_RATE_MATVEC (primal engine)": (
            2 * n * p_pass * steps / engine_steps,
            f"n·p / s, 2 passes per step of skdp's engine at p = {p_pass}",
        ),
        "_RATE_MATVEC (kernel step)": (
            n * n / gram_matvec,
            "n² / s, K @ v with the n × n Gram matrix",
        ),
        "_RATE_CHOLESKY": (
            n**3 / cholesky,
            "n³ / s, gram_square_root(K, λ) (Cholesky of K + λI)",
        ),
    }
    rows = []
    for name, (rate, unit) in measured.items():
        constant = getattr(_regressor, name.split(" ")[0], None)
        rows.append(
            [
                f"`{name}`",
                f"{rate:.3g}",
                f"{constant:.3g}" if constant is not None else "—",
                f"{rate / constant:.2f}" if constant is not None else "—",
                unit,
            ]
        )
    return markdown_table(
        ["constant", "measured", "in _regressor.py", "measured / constant", "unit"],
        rows,
    )


# --------------------------------------------------------------------------
# Report
# --------------------------------------------------------------------------


def seconds(value):
    if value < 1.0:
        return f"{value * 1000:.0f} ms"
    return f"{value:.2f} s" if value < 100 else f"{value:.0f} s"


def load_label(result):
    cores = result.get("other_load")
    return "?" if cores is None else f"{cores:.1f}"


def gigabytes(value):
    return f"{value / 1e9:.2f} GB"


def threadpool_summary():
    from threadpoolctl import threadpool_info

    pools = threadpool_info()
    return "; ".join(
        f"{pool.get('internal_api', '?')} {pool.get('version', '?')} "
        f"({pool.get('user_api', '?')}, num_threads={pool.get('num_threads', '?')})"
        for pool in pools
    )


def machine_lines(skdp_module, load_at_start, load_at_end, command=REPRODUCE_COMMAND):
    return [
        f"- Machine: {platform.platform()}; CPU {cpu_model_name()} "
        f"(`os.cpu_count()` {os.cpu_count()}); "
        f"{(memory_available_bytes() or 0) / 2**30:.0f} GiB available memory.",
        f"- Python {platform.python_version()}, numpy {np.__version__}, "
        f"scipy {scipy.__version__}, scikit-learn {sklearn.__version__}, "
        f"skdp {getattr(skdp_module, '__version__', '?')}; thread pools: "
        f"{threadpool_summary()}.",
        f"- Load average (1, 5, 15 min): {load_at_start} at start, "
        f"{load_at_end} at the end. The machine is shared: other jobs "
        "competing for its 2 cores slow every time below.",
        f"- Date: {time.strftime('%Y-%m-%d')}. Command: `{command}`.",
    ]


def main_run(sizes, quick):
    skdp_module, _ = import_skdp()
    from skdp.random_features._regressor import _solver_seconds

    load_at_start = load_average()
    started = time.perf_counter()
    small = {"p": SMALL_P, "n_iter": SMALL_ITER, "repeats": SMALL_REPEATS}
    results = {}
    results["loop", SMALL_P] = run_in_subprocess(
        {**small, "kind": "loop", "vectorize": False, "n_steps": SMALL_ITER}
    )
    results["loop_vectorize", SMALL_P] = run_in_subprocess(
        {
            **small,
            "repeats": 1,
            "kind": "loop",
            "vectorize": True,
            "n_steps": SMALL_ITER,
        }
    )
    for solver in ("auto", "primal", "kernel"):
        results[f"skdp_{solver}", SMALL_P] = run_in_subprocess(
            {**small, "kind": "skdp", "solver": solver}
        )
    results["numpy_primal", SMALL_P] = run_in_subprocess(
        {**small, "kind": "numpy_primal"}
    )
    skipped = []
    for p in sizes:
        big = {"p": p, "n_iter": N_ITER, "repeats": 1}
        need = 3.2 * N_SAMPLES * p * 8 + 1e9  # Φ twice at start, then Φ + 2 copies
        available = memory_available_bytes()
        if available is not None and need > 0.9 * available:
            skipped.append(
                f"per-sample loop at p = {p}: needs about {gigabytes(need)}, "
                f"{gigabytes(available)} available"
            )
        else:
            results["loop", p] = run_in_subprocess(
                {**big, "kind": "loop", "vectorize": False, "n_steps": LOOP_STEPS}
            )
        results["skdp_auto", p] = run_in_subprocess(
            {**big, "kind": "skdp", "solver": "auto"}
        )
        results["skdp_primal", p] = run_in_subprocess(
            {**big, "kind": "skdp", "solver": "primal"}
        )
        results["numpy_primal", p] = run_in_subprocess({**big, "kind": "numpy_primal"})
    load_at_end = load_average()
    elapsed = time.perf_counter() - started
    return report(
        skdp_module,
        results,
        sizes,
        _solver_seconds,
        load_at_start,
        load_at_end,
        elapsed,
        skipped,
        quick,
    )


def fit_time(result):
    """Best of the repeats (the repeats are listed in the Notes)."""
    return min(result["fit_seconds"])


def extrapolated_loop_time(result, n_iter):
    return np.mean(result["feature_seconds"]) + n_iter * np.median(
        result["step_seconds"]
    )


def report(
    skdp_module,
    results,
    sizes,
    solver_seconds,
    load_at_start,
    load_at_end,
    elapsed,
    skipped,
    quick,
):
    lines = [
        "## Benchmark: DPRandomFeaturesRegressor",
        "",
        "Fit time and peak memory of Algorithm 1 of Bombari & Mondelli "
        "(DP-GD on tanh random features) at n = 2000, d = 100 "
        "(x ~ N(0, I), y = sign(uᵀx)), generated by "
        f"`{REPRODUCE_COMMAND}`{' --quick' if quick else ''}.",
        "",
        "### Machine",
        "",
        *machine_lines(
            skdp_module,
            load_at_start,
            load_at_end,
            command=REPRODUCE_COMMAND + (" --quick" if quick else ""),
        ),
        "",
        "### Protocol",
        "",
        "- Every implementation runs the same schedule: skdp's defaults "
        "(η = max(1/p, 5d/(pT)), so ηTp/d = 5; C = 0.5·sqrt(p); noise "
        f"calibrated exactly to ε = {EPSILON:g}, δ = {DELTA:g}). The skdp "
        "workers check that the fitted `learning_rate_`, `clip_norm_` and "
        "`noise_multiplier_` equal the ones the hand-written loops use.",
        "- Each configuration runs in a fresh subprocess. Fit time: "
        "`time.perf_counter` around `fit` (hand-written loops: feature map + "
        "steps); best of "
        f"{SMALL_REPEATS} fits at p = {SMALL_P} (one fit for the np.vectorize "
        "variant), one fit at the large p. Peak memory: the worker's "
        "`ru_maxrss` (whole process, with the interpreter and imports; the "
        "footprint before the fit is in the last table).",
        "- `per-sample loop`: written for this benchmark with the structure of "
        "the authors' `main_RF.py` (Φ = tanh(XVᵀ) stored; per step: each "
        "record's gradient, its clip, `np.stack` of the n clipped gradients, "
        "mean, noise), without that script's per-step train/test loss and "
        "its `pinv(Φ)` (which favours the loop). `+ np.vectorize tanh`: the "
        "same loop with the authors' element-wise Python tanh as feature map.",
        f"- At the large p the per-sample loop runs {LOOP_STEPS} steps; its "
        f"T = {N_ITER} time is **extrapolated** as feature time + {N_ITER} × "
        "median measured step time, and its peak memory is that of those steps "
        "(every step rebuilds the same arrays).",
        '- `skdp primal`: `DPRandomFeaturesRegressor(solver="primal")`, the '
        "vectorised primal (shared DP-GD engine on the stored n × p Φ). "
        "`numpy primal`: the same algorithm as a plain numpy loop in the "
        "script (Φ stored, two matrix-vector products per step). "
        '`skdp auto`: `solver="auto"`.',
        "- Other load: CPU time used by other processes on the machine "
        "during the fits (from `/proc/stat`, minus the worker's own CPU "
        "time), in cores out of 2. With OpenBLAS's two threads, a matrix-"
        "vector product can run several times slower when one core is busy "
        "elsewhere, so rows with a high value are slowed down.",
        '- Predicted: the seconds `solver="auto"` predicts for each solver '
        "(`_solver_seconds`, from the `_RATE_*` constants).",
        "",
    ]
    lines += small_size_section(results, solver_seconds)
    lines += large_size_section(results, sizes, solver_seconds)
    lines += acceptance_section(results, sizes)
    lines += memory_section(results)
    lines += ["### Notes", ""]
    lines += notes(results, sizes, skipped, elapsed)
    return "\n".join(lines)


def small_size_section(results, solver_seconds):
    loop = fit_time(results["loop", SMALL_P])
    predicted = solver_seconds(N_SAMPLES, N_FEATURES, SMALL_P, SMALL_ITER)
    rows = []
    entries = [
        ("per-sample loop (np.tanh features)", "loop", None),
        (
            "per-sample loop + np.vectorize tanh (authors' feature map)",
            "loop_vectorize",
            None,
        ),
        ("numpy primal", "numpy_primal", None),
        ("skdp primal", "skdp_primal", predicted[0]),
        ("skdp kernel", "skdp_kernel", predicted[1]),
        ("skdp auto", "skdp_auto", None),
    ]
    for label, key, pred in entries:
        result = results[key, SMALL_P]
        if key == "skdp_auto":
            label = f"skdp auto (→ {result['solver']})"
        rows.append(
            [
                label,
                seconds(fit_time(result)),
                seconds(pred) if pred is not None else "—",
                gigabytes(result["peak_rss"]),
                f"{loop / fit_time(result):.1f}×",
                f"{result['test_mse']:.3f}" if "test_mse" in result else "—",
                load_label(result),
            ]
        )
    return [
        f"### Same size: p = {SMALL_P}, T = {SMALL_ITER} (every implementation "
        "measured in full)",
        "",
        markdown_table(
            [
                "implementation",
                "fit time",
                "predicted",
                "peak memory",
                "per-sample loop / this",
                "test MSE",
                "other load",
            ],
            rows,
        ),
        "",
    ]


def large_size_section(results, sizes, solver_seconds):
    rows = []
    for p in sizes:
        predicted = solver_seconds(N_SAMPLES, N_FEATURES, p, N_ITER)
        auto = results["skdp_auto", p]
        auto_time = fit_time(auto)
        if ("loop", p) in results:
            loop = results["loop", p]
            loop_total = extrapolated_loop_time(loop, N_ITER)
            rows.append(
                [
                    f"{p:g}",
                    "per-sample loop (**extrapolated**)",
                    f"{seconds(loop_total)} (features "
                    f"{seconds(np.mean(loop['feature_seconds']))} + {N_ITER} × "
                    f"{seconds(np.median(loop['step_seconds']))}/step, median of "
                    f"{len(loop['step_seconds'])} measured)",
                    "—",
                    f"{gigabytes(loop['peak_rss'])} ({LOOP_STEPS} steps)",
                    f"{loop_total / auto_time:.0f}×",
                    "—",
                    load_label(loop),
                ]
            )
        for label, key, pred in (
            ("numpy primal", "numpy_primal", None),
            ("skdp primal", "skdp_primal", predicted[0]),
            (f"skdp auto (→ {auto['solver']})", "skdp_auto", None),
        ):
            result = results[key, p]
            if key == "skdp_auto":
                pred = predicted[1] if auto["solver"] == "kernel" else predicted[0]
            rows.append(
                [
                    f"{p:g}",
                    label,
                    seconds(fit_time(result)),
                    seconds(pred) if pred is not None else "—",
                    gigabytes(result["peak_rss"]),
                    f"{fit_time(result) / auto_time:.2f}×",
                    f"{result['test_mse']:.3f}",
                    load_label(result),
                ]
            )
    return [
        f"### Large p: T = {N_ITER}",
        "",
        markdown_table(
            [
                "p",
                "implementation",
                "fit time",
                "predicted",
                "peak memory",
                "this / skdp auto",
                "test MSE",
                "other load",
            ],
            rows,
        ),
        "",
    ]


def acceptance_section(results, sizes):
    verdict = {True: "met", False: "**not met**"}
    lines = ["### Acceptance targets (issue 6)", ""]
    small_ratio = fit_time(results["loop", SMALL_P]) / fit_time(
        results["skdp_auto", SMALL_P]
    )
    vectorized = results["loop_vectorize", SMALL_P]
    per_entry = np.mean(vectorized["feature_seconds"]) / (N_SAMPLES * SMALL_P)
    large = []
    for p in sizes:
        if ("loop", p) not in results:
            continue
        loop = extrapolated_loop_time(results["loop", p], N_ITER)
        auto = fit_time(results["skdp_auto", p])
        with_map = loop - np.mean(results["loop", p]["feature_seconds"])
        with_map += per_entry * N_SAMPLES * p
        large.append(
            f"p = {p:g}, T = {N_ITER}: {loop / auto:.0f}× (loop extrapolated), "
            f"{with_map / auto:.0f}× with the authors' np.vectorize feature map "
            "(both extrapolated)"
        )
    lines.append(
        f"- ≥ {TARGET_LOOP_SPEEDUP:g}× faster than the per-sample loop: at the "
        f"same size (p = {SMALL_P}, T = {SMALL_ITER}, both measured) "
        f"{small_ratio:.1f}× with np.tanh features, "
        f"{fit_time(vectorized) / fit_time(results['skdp_auto', SMALL_P]):.1f}× "
        "with the np.vectorize feature map: "
        f"{verdict[small_ratio >= TARGET_LOOP_SPEEDUP]} at this size. "
        + "; ".join(large)
        + "."
    )
    for p, target in TARGET_PRIMAL_SPEEDUP.items():
        if p not in sizes:
            continue
        ratio = fit_time(results["skdp_primal", p]) / fit_time(results["skdp_auto", p])
        lines.append(
            f"- ≥ {target:g}× faster than the vectorised primal at p = {p:g}: "
            f"{ratio:.2f}×, {verdict[ratio >= target]}."
        )
    biggest = max(sizes)
    if biggest == max(SIZES):
        auto = results["skdp_auto", biggest]
        ok = fit_time(auto) < TARGET_SECONDS and auto["peak_rss"] < TARGET_PEAK_BYTES
        lines.append(
            f"- p = {biggest:g} under {TARGET_SECONDS:g} s and "
            f"{gigabytes(TARGET_PEAK_BYTES)}: {seconds(fit_time(auto))}, "
            f"{gigabytes(auto['peak_rss'])}, {verdict[ok]}."
        )
    return [*lines, ""]


def memory_section(results):
    rows = [
        [
            f"{p:g}",
            key,
            gigabytes(result["rss_before"]),
            gigabytes(result["peak_rss"]),
            gigabytes(result["peak_rss"] - result["rss_before"]),
        ]
        for (key, p), result in results.items()
    ]
    return [
        "### Memory: process footprint before the fit and peak",
        "",
        markdown_table(
            ["p", "configuration", "before fit", "peak", "peak − before"], rows
        ),
        "",
    ]


def notes(results, sizes, skipped, elapsed):
    lines = []
    mismatched = [
        f"{key} at p = {p}"
        for (key, p), result in results.items()
        if result.get("same_schedule") is False
    ]
    if mismatched:
        lines.append(
            "- skdp used another schedule than the loops for: " + ", ".join(mismatched)
        )
    else:
        lines.append(
            "- skdp's fitted schedule equals the hand-written loops' in every "
            "configuration."
        )
    for key in ("loop", "skdp_auto", "skdp_primal", "numpy_primal"):
        fits = results[key, SMALL_P]["fit_seconds"]
        lines.append(
            f"- p = {SMALL_P}, {key}: fits " + ", ".join(seconds(t) for t in fits) + "."
        )
    vectorized = results["loop_vectorize", SMALL_P]
    per_entry = np.mean(vectorized["feature_seconds"]) / (N_SAMPLES * SMALL_P)
    lines.append(
        "- The authors' element-wise feature map (`np.vectorize` of a Python "
        f"scalar tanh) took {per_entry * 1e6:.2f} µs per entry at p = "
        f"{SMALL_P}; at that rate the n × p training features alone would "
        "take "
        + ", ".join(f"{seconds(per_entry * N_SAMPLES * p)} at p = {p:g}" for p in sizes)
        + " (**extrapolated**, not run; not included in the loop rows above, "
        "which use `np.tanh`)."
    )
    lines += [f"- Skipped: {item}." for item in skipped]
    lines.append(
        "- Test MSE (1000 fresh points; 1 = predicting 0) is a sanity check "
        "that every implementation learns; the hand-written loops draw other "
        "random weights and noise than skdp."
    )
    lines.append(f"- Total run time of the script: {elapsed:.0f} s.")
    return [*lines, ""]


def calibration_section():
    """The ``--calibrate`` table as a report section (run in this process)."""
    log("measuring throughputs (calibration)")
    with ForeignLoad() as load:
        table = calibrate()
    return "\n".join(
        [
            '### Throughputs behind `solver="auto"`',
            "",
            "Best-of-several timings of each operation that `_solver_seconds` "
            "models, against the `_RATE_*` constants at the bottom of "
            "`skdp/random_features/_regressor.py` (only their ratios matter "
            f"for the choice). Other load during the measurements: "
            f"{load.cores:.1f} cores.",
            "",
            table,
            "",
        ]
    )


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument(
        "--quick", action="store_true", help=f"only p = {QUICK_SIZES[0]:g} at T = 500"
    )
    parser.add_argument(
        "--calibrate",
        action="store_true",
        help="measure the throughputs behind the _RATE_* constants and exit",
    )
    parser.add_argument(
        "--out", type=Path, help="also write the Markdown report to this file"
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    if args.worker:
        print(json.dumps(run_worker(json.loads(args.worker))))
        return
    if args.calibrate:
        skdp_module, _ = import_skdp()
        load_at_start = load_average()
        text = "\n".join(
            [
                calibration_section(),
                *machine_lines(
                    skdp_module,
                    load_at_start,
                    load_average(),
                    command=f"{REPRODUCE_COMMAND} --calibrate",
                ),
                "",
            ]
        )
    else:
        sizes = QUICK_SIZES if args.quick else SIZES
        text = main_run(sizes, args.quick) + "\n" + calibration_section()
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
