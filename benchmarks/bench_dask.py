"""DPLogisticRegression on Dask arrays against the in-memory fit: step time and memory.

Printed as markdown tables, with the command that reproduces them:

0. **One chunk's data pass** (10⁵ rows, d = 50, float64, one BLAS thread):
   the chunk read in its own (row-major) order, as the Dask design does;
   copied to Fortran order first, as it did at every step before issue 32;
   already Fortran-ordered; and the copy alone.
1. **Time per step** (issue 32). n = 5·10⁵, d = 50, float64 in row-major
   order (as generated), chunks of 10⁵ rows, 20 steps of the default solver.
   The same data (each chunk drawn from a generator seeded by its index) are
   fitted in memory, on a Dask array with the threaded scheduler (the numpy
   array wrapped by ``da.from_array``), and on a ``LocalCluster`` of 2 worker
   processes with 1 thread each (the chunks generated on the workers and
   persisted there; also with every step a task graph, as before the
   actors); the in-memory fit also with BLAS limited to one thread
   (on a loaded machine a multithreaded BLAS can be many times slower, so
   this anchor is the steadier one). The fits are interleaved, ``--repeats``
   rounds.
   A step's time is that of its data pass, the ``gradient_sum`` of the
   engine's design (``InMemoryDesign``, ``DaskDesign``; the client's noise
   and update take microseconds); the table gives the median over all
   steps of all rounds, the ratio to the in-memory step, the whole fit (its
   validation pass and the once-per-fit preparation included) and the
   largest relative difference of ``coef_`` from the in-memory fit.
2. **Client memory** (issue 32): a fresh client process fits on a
   ``LocalCluster`` (2 worker processes) whose workers generate and persist
   the data, at n = 5·10⁵ and 5·10⁶ (``--memory-rows``); reported: the
   client's RSS before the fit and its peak during it (sampled every 20 ms
   with psutil; the scheduler runs in the client process), and each
   worker's peak RSS during the fit (VmHWM, reset before it).
3. ``--large``: n = 10⁷, d = 100, float32 on the 2-worker cluster against
   the in-memory fit of the first 10⁶ rows (issue 19; ~6 GB over the two
   workers, minutes).

Run from the repository root::

    python benchmarks/bench_dask.py            # parts 1 and 2 (a few minutes)
    python benchmarks/bench_dask.py --quick    # small sizes, seconds
    python benchmarks/bench_dask.py --large    # part 3 as well
    python benchmarks/bench_dask.py --no-memory  # parts 0 and 1 only
"""

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import numpy as np
import psutil
from _common import load_average, markdown_table, use_checkout

REPO = Path(__file__).resolve().parent.parent
use_checkout(REPO)  # here and in the workers (they inherit PYTHONPATH)

import skdp._clipping  # noqa: E402
import skdp._dask  # noqa: E402
import skdp._dpgd  # noqa: E402
from skdp import DPLogisticRegression  # noqa: E402

MB = 2.0**20


def make_chunk(block_info=None, *, d, seed, kind):
    """One chunk of X: rows drawn from a generator seeded by the chunk's index."""
    info = block_info[None]
    (start, stop), _ = info["array-location"]
    rng = np.random.default_rng([seed, info["chunk-location"][0]])
    return rng.standard_normal((stop - start, d), dtype=kind)


def labels(X, block_info=None, *, d, seed):
    """y = 1{x·β + logistic noise > 0} for one chunk (β fixed by the seed)."""
    beta = np.random.default_rng(seed).standard_normal(d) / np.sqrt(d)
    chunk = block_info[None]["chunk-location"][0]
    rng = np.random.default_rng([seed + 1, chunk])
    z = X.astype(np.float64) @ beta + rng.logistic(size=X.shape[0])
    return (z > 0).astype(np.int64)


def dask_data(n, d, chunk_rows, dtype, seed=0):
    """Lazy (X, y): each chunk generated where it is computed."""
    import dask.array as da

    n_chunks = -(-n // chunk_rows)
    rows = tuple(min(chunk_rows, n - i * chunk_rows) for i in range(n_chunks))
    X = da.map_blocks(
        make_chunk,
        d=d,
        seed=seed,
        kind=dtype,
        dtype=dtype,
        chunks=(rows, (d,)),
        meta=np.empty((0, 0), dtype),
    )
    y = X.map_blocks(
        labels,
        d=d,
        seed=seed,
        drop_axis=1,
        dtype=np.int64,
        meta=np.empty((0,), np.int64),
    )
    return X, y


class PeakSampler:
    """Peak RSS of this process (and peak RSS of its children)."""

    def __init__(self, interval=0.02):
        self.interval = interval
        self.process = psutil.Process()
        self.base = self.process.memory_info().rss
        self.peak = self.base
        self.children = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self.process.memory_info().rss)
            for child in self.process.children(recursive=True):
                try:
                    rss = child.memory_info().rss
                except psutil.Error:
                    continue
                self.children[child.pid] = max(self.children.get(child.pid, 0), rss)
            time.sleep(self.interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()

    @property
    def growth(self):
        return self.peak - self.base


class StepTimer:
    """Times every ``gradient_sum`` of the engine's designs (one per step)."""

    DESIGNS = (skdp._dpgd.InMemoryDesign, skdp._dask.DaskDesign)

    def __init__(self):
        self.times = []
        self._originals = [d.gradient_sum for d in self.DESIGNS]

    def __enter__(self):
        for design, original in zip(self.DESIGNS, self._originals, strict=True):
            design.gradient_sum = self._timed(original)
        return self

    def _timed(self, original):
        def gradient_sum(*args, **kwargs):
            start = time.perf_counter()
            out = original(*args, **kwargs)
            self.times.append(time.perf_counter() - start)
            return out

        return gradient_sum

    def __exit__(self, *exc):
        for design, original in zip(self.DESIGNS, self._originals, strict=True):
            design.gradient_sum = original


def model(n_iter):
    return DPLogisticRegression(
        epsilon=1.0, delta=1e-12, classes=[0, 1], max_iter=n_iter, random_state=0
    )


def timed_fit(X, y, n_iter):
    with StepTimer() as steps:
        start = time.perf_counter()
        clf = model(n_iter).fit(X, y)
        total = time.perf_counter() - start
    assert len(steps.times) == n_iter
    return dict(steps=steps.times, total=total, coef=clf.coef_)


def _reset_peak():
    # Linux: writing 5 to clear_refs resets the peak RSS (VmHWM) of the process.
    try:
        with open(f"/proc/{os.getpid()}/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _worker_peak():
    """Peak RSS since the last reset (VmHWM on Linux; else the lifetime peak)."""
    try:
        with open(f"/proc/{os.getpid()}/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def local_cluster(memory_limit="6GiB"):
    from dask.distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        memory_limit=memory_limit,
    )
    return cluster, Client(cluster)


# ---------------------------------------------------------------------------
# 0. One chunk's data pass, by memory order
# ---------------------------------------------------------------------------


def chunk_kernel(rows, d, repeats=15):
    """One chunk's clipped gradient sum, one thread: why chunks are not copied."""
    from threadpoolctl import threadpool_limits

    from skdp._datafits import BinomialLogistic

    rng = np.random.default_rng(0)
    X = rng.standard_normal((rows, d))
    XF = skdp._clipping._column_major(X)
    y = (rng.random(rows) < 0.5).astype(np.float64)
    norms = np.hypot(skdp._dpgd.row_norms(X), 1.0)
    coef, intercept = rng.standard_normal((d, 1)) / np.sqrt(d), np.zeros(1)

    def step(A):
        return skdp._dpgd.sum_over_row_blocks(
            A, y, BinomialLogistic(), coef, intercept, norms, 1.0
        )

    cases = [
        ("row-major chunk, read as stored (now)", lambda: step(X)),
        (
            "Fortran copy, then the pass (before)",
            lambda: step(skdp._clipping._column_major(X)),
        ),
        ("Fortran-ordered chunk (a copy kept)", lambda: step(XF)),
        ("the Fortran copy alone", lambda: skdp._clipping._column_major(X)),
    ]
    times = {name: [] for name, _ in cases}
    with threadpool_limits(1):
        for _ in range(repeats):  # interleaved
            for name, run in cases:
                start = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - start)
        # Two row-major chunks' passes at once in two threads (as the
        # threaded scheduler runs them): time for the pair over one pass.
        X2 = X.copy()
        pair = []
        for _ in range(repeats):
            threads = [threading.Thread(target=step, args=(A,)) for A in (X, X2)]
            start = time.perf_counter()
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            pair.append(time.perf_counter() - start)
    reference = np.median(times[cases[2][0]])
    rows_out = [
        [name, f"{np.median(t) * 1e3:.1f}", f"{np.median(t) / reference:.2f}"]
        for name, t in times.items()
    ]
    rows_out.append(
        [
            "two row-major chunks in two threads (the pair)",
            f"{np.median(pair) * 1e3:.1f}",
            f"{np.median(pair) / reference:.2f}",
        ]
    )
    header = ["one chunk", "time (ms)", "/ Fortran-ordered pass"]
    return markdown_table(header, rows_out)


# ---------------------------------------------------------------------------
# 1. Time per step
# ---------------------------------------------------------------------------


STEP_FITS = (
    "in memory",
    "in memory, BLAS on 1 thread",
    "Dask, threaded scheduler",
    "Dask, LocalCluster (2 processes)",
    "Dask, LocalCluster, a task graph per step (before)",
)


class GraphSteps:
    """Every pass as a task graph, as before the actors (the A/B anchor)."""

    def __enter__(self):
        self._original = skdp._dask.RowChunks._actors
        skdp._dask.RowChunks._actors = lambda chunks: None
        return self

    def __exit__(self, *exc):
        skdp._dask.RowChunks._actors = self._original


def step_times(n, d, chunk_rows, n_iter, repeats):
    import dask
    import dask.array as da
    from dask.distributed import wait

    X_lazy, y_lazy = dask_data(n, d, chunk_rows, np.float64)
    with dask.config.set(scheduler="threads"):
        X, y = dask.compute(X_lazy, y_lazy)  # row-major, as generated
    X_threads = da.from_array(X, chunks=(chunk_rows, d))
    y_threads = da.from_array(y, chunks=(chunk_rows,))
    from threadpoolctl import threadpool_limits

    names = STEP_FITS
    runs = {name: [] for name in names}
    cluster, client = local_cluster()
    with cluster, client:
        X_cluster, y_cluster = client.persist([X_lazy, y_lazy])
        wait([X_cluster, y_cluster])
        for _ in range(repeats):  # interleaved: the same load for all four
            runs[names[0]].append(timed_fit(X, y, n_iter))
            with threadpool_limits(1, user_api="blas"):
                runs[names[1]].append(timed_fit(X, y, n_iter))
            with dask.config.set(scheduler="threads"):
                runs[names[2]].append(timed_fit(X_threads, y_threads, n_iter))
            with client.as_current(), dask.config.set(scheduler=client):
                runs[names[3]].append(timed_fit(X_cluster, y_cluster, n_iter))
                with GraphSteps():
                    runs[names[4]].append(timed_fit(X_cluster, y_cluster, n_iter))
        with client.as_current(), dask.config.set(scheduler=client):
            floor = scheduler_floor(client, X_cluster, y_cluster)
    reference = runs["in memory"][0]["coef"]

    def median_step(fits):
        return np.median(np.concatenate([r["steps"] for r in fits]))

    memory_step = median_step(runs[names[0]])
    memory_step_1 = median_step(runs[names[1]])
    rows = []
    ratios = {}
    for name, fits in runs.items():
        step = median_step(fits)
        ratios[name] = (step / memory_step, step / memory_step_1)
        diff = max(
            np.max(np.abs(r["coef"] - reference) / np.abs(reference)) for r in fits
        )
        rows.append(
            [
                name,
                f"{step * 1e3:.1f}",
                f"{ratios[name][0]:.2f}",
                f"{ratios[name][1]:.2f}",
                f"{np.median([r['total'] for r in fits]):.2f}",
                f"{diff:.1e}",
            ]
        )
    header = [
        "fit",
        "time per step (ms)",
        "/ in-memory step",
        "/ in-memory step on 1 BLAS thread",
        "whole fit (s)",
        "max rel. diff. of coef_",
    ]
    return markdown_table(header, rows), ratios, floor


def _no_work(X, y, start=0):
    return np.zeros(1)


def scheduler_floor(client, X, y, repeats=40):
    """Medians (s) of a pass that reads no data: on the actors (as a step on
    persisted chunks now runs), as a step's task graph (as it ran before, and
    still runs on a lazy X), and of one task's round trip: what a step on the
    cluster costs besides its data pass."""
    from skdp._dask import RowChunks

    chunks = RowChunks(X, y)
    chunks.sum(_no_work)  # starts the actors
    assert chunks._actors() is not None
    actors, graphs, trips = [], [], []
    for _ in range(repeats):
        start = time.perf_counter()
        chunks.sum(_no_work)
        actors.append(time.perf_counter() - start)
        start = time.perf_counter()
        chunks._graph_sum(_no_work, {})
        graphs.append(time.perf_counter() - start)
        start = time.perf_counter()
        client.submit(np.zeros, 1, pure=False).result()
        trips.append(time.perf_counter() - start)
    return tuple(float(np.median(t)) for t in (actors, graphs, trips))


# ---------------------------------------------------------------------------
# 2. Client memory (each n in a fresh process)
# ---------------------------------------------------------------------------


def client_memory(n, d, chunk_rows, n_iter):
    """One fit on a fresh LocalCluster; run in its own process (``--client-memory``)."""
    from dask.distributed import wait

    warnings.filterwarnings("ignore", category=UserWarning)
    cluster, client = local_cluster(memory_limit="8GiB")
    with cluster, client:
        X, y = client.persist(list(dask_data(n, d, chunk_rows, np.float64)))
        wait([X, y])
        client.run(_reset_peak)
        with PeakSampler() as mem, client.as_current(), StepTimer() as steps:
            model(n_iter).fit(X, y)
        workers = sorted(client.run(_worker_peak).values())
    return dict(
        n=n,
        before=mem.base,
        peak=mem.peak,
        step=float(np.median(steps.times)),
        workers=workers,
    )


def client_memory_table(sizes, d, chunk_rows, n_iter):
    rows = []
    for n in sizes:
        out = subprocess.run(
            [
                sys.executable,
                __file__,
                *("--client-memory", str(n), "--d", str(d)),
                *("--chunk-rows", str(chunk_rows), "--steps", str(n_iter)),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        rows.append(
            [
                f"{n:.0e}",
                f"{n * (d * 8 + 8) / MB:.0f}",
                f"{r['before'] / MB:.0f}",
                f"{r['peak'] / MB:.0f}",
                f"{(r['peak'] - r['before']) / MB:.0f}",
                " / ".join(f"{w / MB:.0f}" for w in r["workers"]),
                f"{r['step'] * 1e3:.0f}",
            ]
        )
    header = [
        "n",
        "data (MB)",
        "client RSS before fit (MB)",
        "client peak RSS during fit (MB)",
        "client growth (MB)",
        "peak RSS per worker (MB)",
        "time per step (ms)",
    ]
    return markdown_table(header, rows)


# ---------------------------------------------------------------------------
# 3. --large: 10⁷ rows on the cluster (issue 19)
# ---------------------------------------------------------------------------


def large(n_big, n_small, d, chunk_rows, n_iter):
    import dask
    from dask.distributed import wait

    X, y = dask_data(n_small, d, chunk_rows, np.float32)
    with dask.config.set(scheduler="threads"):
        X, y = dask.compute(X, y)
    with PeakSampler() as mem:
        memory = timed_fit(X, y, n_iter)
    memory.update(n=n_small, client_growth=mem.growth)
    del X, y
    results = []
    cluster, client = local_cluster(memory_limit="8GiB")
    with cluster, client:
        for n in (n_small, n_big):
            X, y = dask_data(n, d, chunk_rows, np.float32)
            start = time.perf_counter()
            X, y = client.persist([X, y])
            wait([X, y])
            generate = time.perf_counter() - start
            client.run(_reset_peak)
            with PeakSampler() as mem, client.as_current():
                fit = timed_fit(X, y, n_iter)
            fit.update(
                n=n,
                generate=generate,
                client_growth=mem.growth,
                workers=client.run(_worker_peak),
            )
            results.append(fit)
            del X, y
    rows = []
    for name, r in [("in memory", memory)] + [("Dask, 2 workers", r) for r in results]:
        workers = (
            " / ".join(f"{v / MB:.0f}" for v in r["workers"].values())
            if "workers" in r
            else "-"
        )
        rows.append(
            [
                name,
                f"{r['n']:.0e}",
                f"{np.median(r['steps']):.3f}",
                f"{r['total']:.1f}",
                f"{r['client_growth'] / MB:.0f}",
                workers,
                f"{r['n'] * (d * 4 + 8) / MB:.0f}",
            ]
        )
    header = [
        "fit",
        "n",
        "time per step (s)",
        "whole fit (s)",
        "client growth (MB)",
        "peak per worker (MB)",
        "data (MB)",
    ]
    small, big = results
    same = np.max(np.abs(small["coef"] - memory["coef"]) / np.abs(memory["coef"]))
    notes = (
        f"Dask at n = {n_small:.0e} vs in memory: max relative difference of coef_ "
        f"{same:.1e} (same seed). Generating and persisting the n = {n_big:.0e} "
        f"data on the workers: {big['generate']:.1f} s. Per worker (one thread): "
        f"{(n_big / 2) / np.median(big['steps']):.3g} rows of d = {d} per second "
        "and step."
    )
    return markdown_table(header, rows), notes


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: seconds")
    parser.add_argument("--large", action="store_true", help="also n = 1e7 (minutes)")
    parser.add_argument("--repeats", type=int, default=3, help="rounds of part 1")
    parser.add_argument("--memory-rows", type=float, nargs="*", default=None)
    parser.add_argument(
        "--no-memory", action="store_true", help="skip part 2 (client memory)"
    )
    parser.add_argument("--client-memory", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--d", type=int, default=50, help=argparse.SUPPRESS)
    parser.add_argument("--chunk-rows", type=int, default=100_000)
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", category=UserWarning)
    if args.client_memory:
        r = client_memory(args.client_memory, args.d, args.chunk_rows, args.steps)
        print(json.dumps(r))
        return
    if args.quick:
        n, chunk_rows, memory_rows = 50_000, 10_000, [50_000, 200_000]
    else:
        n, chunk_rows = 500_000, args.chunk_rows
        memory_rows = [500_000, 5_000_000]
    if args.memory_rows:
        memory_rows = [int(m) for m in args.memory_rows]
    d, n_iter = args.d, args.steps
    print(
        f"# bench_dask: {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, {psutil.virtual_memory().total / 2**30:.0f} GB; "
        f"load average before: {load_average()}"
    )
    print(
        f"\n## One chunk's data pass: {chunk_rows} rows, d = {d}, float64, "
        "one BLAS thread, median of 15 interleaved runs\n"
    )
    print(chunk_kernel(chunk_rows, d))
    print(
        f"\n## Time per step: n = {n:.0e}, d = {d}, float64 (row-major), chunks "
        f"of {chunk_rows} rows, {n_iter} steps, {args.repeats} interleaved rounds\n"
    )
    table, ratios, floor = step_times(n, d, chunk_rows, n_iter, args.repeats)
    print(table)
    threads, cluster = ratios[STEP_FITS[2]], ratios[STEP_FITS[3]]
    graph = ratios[STEP_FITS[4]]
    print(
        f"\nDask step / in-memory step: threaded scheduler {threads[0]:.2f}x "
        f"({threads[1]:.2f}x against the in-memory step on one BLAS thread; target "
        f"<= 1.5), LocalCluster of 2 worker processes {cluster[0]:.2f}x "
        f"({cluster[1]:.2f}x; target <= 2); with a task graph per step, as "
        f"before, {graph[0]:.2f}x ({graph[1]:.2f}x)."
    )
    print(
        f"\nLocalCluster floor, a pass over the {-(-n // chunk_rows)} chunks that "
        f"reads no data: on the actors (a step now) {floor[0] * 1e3:.1f} ms, as a "
        f"task graph (a step before; a lazy X) {floor[1] * 1e3:.1f} ms; one task's "
        f"round trip (client.submit(...).result()) {floor[2] * 1e3:.1f} ms (medians "
        "of 40)."
    )
    if not args.no_memory:
        print(
            f"\n## Client memory: LocalCluster of 2 worker processes, data "
            f"generated and persisted on the workers, d = {d}, float64, "
            f"{n_iter} steps\n"
        )
        print(client_memory_table(memory_rows, d, chunk_rows, n_iter))
    if args.large:
        n_big, n_small = (200_000, 50_000) if args.quick else (10_000_000, 1_000_000)
        big_d, big_chunk, big_iter = (
            (20, 25_000, 5) if args.quick else (100, 250_000, 10)
        )
        print(
            f"\n## n = {n_big:.0e} on the cluster: d = {big_d}, float32, chunks of "
            f"{big_chunk} rows, {big_iter} steps\n"
        )
        table, notes = large(n_big, n_small, big_d, big_chunk, big_iter)
        print(table)
        print("\n" + notes)
    print(f"\nload average after: {load_average()}")
    flags = " ".join(
        f
        for f, on in [
            ("--quick", args.quick),
            ("--large", args.large),
            ("--no-memory", args.no_memory),
            (f"--repeats {args.repeats}", args.repeats != 3),
        ]
        if on
    )
    print(f"Reproduce: python benchmarks/bench_dask.py {flags}".rstrip())


if __name__ == "__main__":
    main()
