"""Benchmark ``skdp.fedrep.DPFedRep``: fit time against a per-user Python loop.

Run from the repository root::

    python benchmarks/bench_fedrep.py            # paper size, 3 repeats
    python benchmarks/bench_fedrep.py --quick    # 2000 users

The paper's synthetic task (Snedeker, Zhou & Bassily, §3.4): n = 20000 users,
m = 10 rows each, d = 50, k = 2, x ~ N(0, I), y = xᵀU*v_i* + N(0, 0.01²) with
unit-norm v_i*; T = 5 rounds, η = 1, ψ = 10, ε = 1, δ = 1e-6, private
initialisation. Both implementations run the *same* algorithm with the same
noise multiplier and the same within-user split (taken from skdp's layout, so
that their outputs can be compared):

(a) ``loop``: written for this benchmark, one user at a time, the way a
    federated simulation is usually written: per user, Algorithm 2's
    matrix Z_i (the cross-half estimator, clipped by its norm), then per
    round and per user the least-squares head on the v-half
    (``np.linalg.lstsq``) and the clipped gradient on the other half; then
    the cold-start statistics and the final heads.
(b) ``skdp``: ``DPFedRep.fit`` (vectorised across users: segment sums via
    sparse indicator matrices and one stacked k × k pseudo-inverse per
    round), with ``n_jobs=1`` and with ``n_jobs=2`` (the users split over
    two threads).

The script checks that (a) and (b) release the same ``components_`` (same
noise draws) before timing. The loop is single-threaded by nature (its BLAS
calls are tiny); the machine has 2 cores.
"""

import argparse
import math
import platform
import sys
import time

import numpy as np
import sklearn
from _common import cpu_model_name, load_average, markdown_table
from sklearn.base import clone

from skdp.fedrep import DPFedRep
from skdp.fedrep import _fedrep as fr
from skdp.mechanisms import as_generator


def make_task(n_users, m=10, d=50, k=2, seed=0):
    rng = np.random.default_rng(seed)
    U = np.linalg.qr(rng.standard_normal((d, k)))[0]
    V = rng.standard_normal((n_users, k))
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    groups = np.repeat(np.arange(n_users), m)
    X = rng.standard_normal((n_users * m, d))
    y = np.einsum("ij,ij->i", X @ U, V[groups])
    y += 0.01 * rng.standard_normal(len(groups))
    return X, y, groups


def loop_fit(X, y, groups, est):
    """The same algorithm as ``est.fit``, one user at a time."""
    d = X.shape[1]
    k = est.n_components
    users, codes = np.unique(groups, return_inverse=True)
    n = len(users)
    clip, init_clip, cold_clip = est._clips(d)
    n_iter = est.n_rounds + 1 + (est.init == "private")
    z = est._noise_multiplier(n_iter)
    split_rng, _, noise_rng = as_generator(est.random_state).spawn(3)
    v_half = fr._split_halves(codes, np.bincount(codes), split_rng)
    by_user = np.argsort(codes, kind="stable")
    rows = np.split(by_user, np.cumsum(np.bincount(codes))[:-1])
    # Algorithm 2
    total = np.zeros((d, d))
    for r in rows:
        A, B = r[v_half[r]], r[~v_half[r]]
        if len(B) == 0:
            continue
        a, b = X[A].T @ y[A] / len(A), X[B].T @ y[B] / len(B)
        Z = (np.outer(a, b) + np.outer(b, a)) / 2
        total += Z * min(1.0, init_clip / np.linalg.norm(Z))
    Zhat = total / n + noise_rng.normal(0.0, z * 2 * init_clip / n, (d, d))
    U = np.linalg.eigh((Zhat + Zhat.T) / 2)[1][:, ::-1][:, :k]
    # Algorithm 1
    for _ in range(est.n_rounds):
        grad = np.zeros((d, k))
        for r in rows:
            A, B = r[v_half[r]], r[~v_half[r]]
            v = np.linalg.lstsq(X[A] @ U, y[A], rcond=None)[0]
            if len(B) == 0:
                continue
            g = 2.0 / len(B) * np.outer(X[B].T @ (X[B] @ U @ v - y[B]), v)
            norm = np.linalg.norm(g)
            grad += g * (clip / norm if norm > clip else 1.0)
        grad = grad / n + noise_rng.normal(0.0, z * 2 * clip / n, (d, k))
        U = np.linalg.qr(U - est.learning_rate * grad)[0]
    # cold-start statistics
    G, h = np.zeros((d, d)), np.zeros(d)
    for r in rows:
        Xi, yi = X[r], y[r]
        Gi, hi = Xi.T @ Xi / len(r), Xi.T @ yi / len(r)
        c = min(1.0, cold_clip / math.hypot(np.trace(Gi), np.linalg.norm(hi)))
        G += c * Gi
        h += c * hi
    std = z * 2 * cold_clip / n
    G = G / n + noise_rng.normal(0.0, std, (d, d))
    h = h / n + noise_rng.normal(0.0, std, d)
    cold = fr._floored_solve(G, h, 4.0 * std * math.sqrt(d))
    # heads
    heads = np.stack([np.linalg.lstsq(X[r] @ U, y[r], rcond=None)[0] for r in rows])
    return U, cold, heads


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    n_users = 2000 if args.quick else 20000
    X, y, groups = make_task(n_users)
    est = DPFedRep(
        2, epsilon=1.0, delta=1e-6, n_rounds=5, learning_rate=1.0, random_state=0
    )
    U_loop, cold_loop, heads_loop = loop_fit(X, y, groups, est)
    fits = {n_jobs: clone(est).set_params(n_jobs=n_jobs) for n_jobs in (1, 2)}
    gaps = []
    for fit in fits.values():
        fit.fit(X, y, groups)
        # the eigenvector signs may differ; span is what matters
        gaps.append(
            max(
                np.linalg.norm(fit.components_.T @ fit.components_ - U_loop @ U_loop.T),
                np.abs(fit.cold_start_coef_ - cold_loop).max(),
                np.abs(fit.user_coef_ @ fit.components_ - heads_loop @ U_loop.T).max(),
            )
        )
    times = {"loop": [], 1: [], 2: []}
    for _ in range(args.repeats):
        start = time.perf_counter()
        loop_fit(X, y, groups, est)
        times["loop"].append(time.perf_counter() - start)
        for n_jobs, fit in fits.items():
            start = time.perf_counter()
            clone(fit).fit(X, y, groups)
            times[n_jobs].append(time.perf_counter() - start)
    median = {key: np.median(value) for key, value in times.items()}
    cmd = "python benchmarks/bench_fedrep.py" + (" --quick" if args.quick else "")
    print(f"Command: `{cmd}` (median of {args.repeats} fits each).")
    print(
        f"Machine: {cpu_model_name()}, load average {load_average()}; Python "
        f"{platform.python_version()}, numpy {np.__version__}, scikit-learn "
        f"{sklearn.__version__}."
    )
    print(
        f"n = {n_users} users × 10 rows, d = 50, k = 2, T = 5, ε = 1, δ = 1e-6. "
        "Same output check (largest gap to the loop in UUᵀ, the cold-start "
        "model and the users' models U v_i): "
        f"{gaps[0]:.1e} (n_jobs=1), {gaps[1]:.1e} (n_jobs=2)."
    )
    print()
    rows = [["per-user Python loop", f"{median['loop']:.2f}", "1.0"]]
    for n_jobs in (1, 2):
        rows.append(
            [
                f"skdp DPFedRep.fit, n_jobs={n_jobs}",
                f"{median[n_jobs]:.3f}",
                f"{median['loop'] / median[n_jobs]:.1f}",
            ]
        )
    print(markdown_table(["implementation", "fit time (s)", "speed-up"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
