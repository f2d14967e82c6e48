"""DPLogisticRegression on a Dask array of n = 10⁷ rows, d = 100, on a 2-worker cluster.

The data are generated chunk by chunk on the workers (a seeded generator per
chunk, float32) and kept there (``persist``): the client never holds them.
The fit runs on a ``LocalCluster`` of two worker processes with one thread
each, and is compared with the in-memory fit of the first 10⁶ rows in this
process. Reported:

* time of the validation pass (finite values, labels), of the row-norm pass
  and of each noisy step (one reduction of d + 1 floats per chunk);
* peak resident memory of each worker during the fit (its data included;
  VmHWM, reset before the fit)
  and the client's growth during the fit, sampled every 20 ms with
  ``psutil`` (the client must not grow with n: it holds O(d) floats per
  step);
* the same for a Dask fit at n = 10⁶, to show the client's memory does not
  depend on n.

Run ``python benchmarks/bench_dask.py`` (a few minutes, ~6 GB of RAM over
the two workers) or ``--quick`` (n = 2·10⁵, d = 20: seconds).
"""

import argparse
import os
import platform
import resource
import threading
import time
import warnings

import numpy as np
import psutil

import skdp._dask
import skdp._dpgd
from skdp import DPLogisticRegression

MB = 2.0**20


def make_chunk(block_info=None, *, d, seed):
    """One chunk of X: rows drawn from a generator seeded by the chunk's index."""
    info = block_info[None]
    (start, stop), _ = info["array-location"]
    rng = np.random.default_rng([seed, info["chunk-location"][0]])
    return rng.standard_normal((stop - start, d), dtype=np.float32)


def labels(X, block_info=None, *, d, seed):
    """y = 1{x·β + logistic noise > 0} for one chunk (β fixed by the seed)."""
    beta = np.random.default_rng(seed).standard_normal(d) / np.sqrt(d)
    chunk = block_info[None]["chunk-location"][0]
    rng = np.random.default_rng([seed + 1, chunk])
    z = X.astype(np.float64) @ beta + rng.logistic(size=X.shape[0])
    return (z > 0).astype(np.int64)


def dask_data(n, d, chunk_rows, seed=0):
    import dask.array as da

    n_chunks = -(-n // chunk_rows)
    rows = tuple(min(chunk_rows, n - i * chunk_rows) for i in range(n_chunks))
    X = da.map_blocks(
        make_chunk,
        d=d,
        seed=seed,
        chunks=(rows, (d,)),
        dtype=np.float32,
        meta=np.empty((0, 0), np.float32),
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
    """Peak RSS growth of this process (and peak RSS of its children)."""

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
    """Times each call of the Dask gradient sum (one noisy step each)."""

    def __init__(self):
        self.times = []
        self._original = skdp._dask.clipped_gradient_sum

    def __enter__(self):
        def timed(*args, **kwargs):
            start = time.perf_counter()
            out = self._original(*args, **kwargs)
            self.times.append(time.perf_counter() - start)
            return out

        skdp._dask.clipped_gradient_sum = timed
        return self

    def __exit__(self, *exc):
        skdp._dask.clipped_gradient_sum = self._original


def model(n_iter):
    return DPLogisticRegression(
        epsilon=1.0, delta=1e-12, classes=[0, 1], max_iter=n_iter, random_state=0
    )


def fit_dask(client, n, d, chunk_rows, n_iter):
    from dask.distributed import wait

    X, y = dask_data(n, d, chunk_rows)
    start = time.perf_counter()
    X, y = client.persist([X, y])
    wait([X, y])
    generate = time.perf_counter() - start
    client.run(_reset_peak)
    with PeakSampler() as client_mem, StepTimer() as steps:
        start = time.perf_counter()
        clf = model(n_iter).fit(X, y)
        total = time.perf_counter() - start
    workers = client.run(_worker_peak)
    del X, y
    return dict(
        n=n,
        generate=generate,
        total=total,
        steps=steps.times,
        client_growth=client_mem.growth,
        workers=workers,
        coef=clf.coef_,
    )


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


def fit_memory(n, d, chunk_rows, n_iter):
    import dask

    X, y = dask_data(n, d, chunk_rows)
    with dask.config.set(scheduler="threads"):
        X, y = dask.compute(X, y)
    with PeakSampler() as mem:
        start = time.perf_counter()
        steps = []
        original = skdp._dpgd.clipped_gradient_sum

        def timed(*args, **kwargs):
            t0 = time.perf_counter()
            out = original(*args, **kwargs)
            steps.append(time.perf_counter() - t0)
            return out

        skdp._dpgd.clipped_gradient_sum = timed
        try:
            clf = model(n_iter).fit(X, y)
        finally:
            skdp._dpgd.clipped_gradient_sum = original
        total = time.perf_counter() - start
    return dict(
        n=n,
        total=total,
        steps=steps,
        client_growth=mem.growth,
        data=X.nbytes + y.nbytes,
        coef=clf.coef_,
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 2e5, d = 20")
    args = parser.parse_args()
    if args.quick:
        n_big, n_small, d, chunk_rows, n_iter = 200_000, 50_000, 20, 25_000, 5
    else:
        n_big, n_small, d, chunk_rows, n_iter = 10_000_000, 1_000_000, 100, 250_000, 10
    from dask.distributed import Client, LocalCluster

    warnings.filterwarnings("ignore", category=UserWarning)
    print(
        f"# bench_dask: n = {n_big:.0e} (Dask) and {n_small:.0e} (in memory and "
        f"Dask), d = {d}, float32, chunks of {chunk_rows} rows, {n_iter} steps; "
        f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
        f"{psutil.virtual_memory().total / 2**30:.0f} GB"
    )
    memory = fit_memory(n_small, d, chunk_rows, n_iter)
    with (
        LocalCluster(
            n_workers=2,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            memory_limit="8GiB",
        ) as cluster,
        Client(cluster) as client,
    ):
        small = fit_dask(client, n_small, d, chunk_rows, n_iter)
        big = fit_dask(client, n_big, d, chunk_rows, n_iter)
    same = np.max(np.abs(small["coef"] - memory["coef"]) / np.abs(memory["coef"]))
    rows = [
        ("in memory", memory, None),
        ("Dask, 2 workers", small, None),
        ("Dask, 2 workers", big, None),
    ]
    print()
    print(
        "| fit | n | time per step (s) | whole fit (s) | client growth (MB) | "
        "peak per worker (MB) | data (MB) |"
    )
    print("|---|---|---|---|---|---|---|")
    for name, r, _ in rows:
        per_step = np.median(r["steps"])
        workers = (
            " / ".join(f"{v / MB:.0f}" for v in r["workers"].values())
            if "workers" in r
            else "-"
        )
        data = r["n"] * (d * 4 + 8) / MB
        print(
            f"| {name} | {r['n']:.0e} | {per_step:.3f} | {r['total']:.1f} | "
            f"{r['client_growth'] / MB:.0f} | {workers} | {data:.0f} |"
        )
    print()
    print(
        f"Dask at n = {n_small:.0e} vs in memory: max relative difference of coef_ "
        f"{same:.1e} (same seed). Generating and persisting the n = {n_big:.0e} "
        f"data on the workers: {big['generate']:.1f} s. Time per step at "
        f"{n_big:.0e} / at {n_small:.0e}: "
        f"{np.median(big['steps']) / np.median(small['steps']):.1f}x."
    )
    rows_per_second = (n_big / 2) / np.median(big["steps"])
    print(
        f"Per worker (one thread): {rows_per_second:.3g} rows of d = {d} per second "
        "and step."
    )
    print(
        f"Reproduce: python benchmarks/bench_dask.py{' --quick' if args.quick else ''}"
    )


if __name__ == "__main__":
    main()
