"""Throughput of secure noise (issue 22) against numpy's floating-point samplers.

Run from the repository root::

    python benchmarks/bench_secure_noise.py            # 10^6 draws per cell
    python benchmarks/bench_secure_noise.py --quick    # 10^5 draws per cell

Each cell is the best of three timed calls drawing ``n`` values in one call:
numpy's ``Generator.normal`` / ``Generator.laplace`` (PCG64, floating point)
against skdp's exact samplers (``skdp.mechanisms.add_gaussian_noise`` /
``add_laplace_noise`` on a :class:`~skdp._secure.SecureNoise`, i.e. grid
rounding plus the discrete Gaussian / Laplace of Canonne, Kamath & Steinke
2020, bits from ``os.urandom``). It also times ``os.urandom`` itself and
counts the random bytes one secure draw consumes, which bound the secure
throughput. Prints a Markdown table for docs/benchmarks.md.
"""

import argparse
import os
import platform

import numpy as np
from _common import best_time

from skdp._secure import SecureNoise
from skdp.mechanisms import add_gaussian_noise, add_laplace_noise


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n = 10**5 if args.quick else 10**6
    rng = np.random.default_rng()
    counted = [0]

    def counting_urandom(k):
        counted[0] += k
        return os.urandom(k)

    rows = []
    for name, fast, secure_add, scale in [
        ("Gaussian, std 1", lambda: rng.normal(0.0, 1.0, n), add_gaussian_noise, 1.0),
        ("Gaussian, std 1e3", lambda: rng.normal(0.0, 1e3, n), add_gaussian_noise, 1e3),
        ("Laplace, scale 1", lambda: rng.laplace(0.0, 1.0, n), add_laplace_noise, 1.0),
    ]:
        t_fast = best_time(fast, 3)
        zeros = np.zeros(n)
        t_secure = best_time(
            lambda add=secure_add, z=zeros, s=scale: add(z, s, SecureNoise()), 3
        )
        counted[0] = 0
        secure_add(zeros, scale, SecureNoise(bytes_source=counting_urandom))
        rows.append((name, n / t_fast, n / t_secure, t_secure / t_fast, counted[0] / n))
    t_os = best_time(lambda: os.urandom(8 * n), 3)
    print(
        f"Machine: {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores, numpy {np.__version__}; n = {n:.0e} draws per call."
    )
    print(f"os.urandom: {8 * n / t_os / 1e6:.0f} MB/s.\n")
    print("| noise | numpy draws/s | secure draws/s | time ratio | bytes/draw |")
    print("|---|---:|---:|---:|---:|")
    for name, fast, secure, ratio, per in rows:
        print(f"| {name} | {fast:.3g} | {secure:.3g} | {ratio:.1f}x | {per:.0f} |")
    print("\nReproduce: python benchmarks/bench_secure_noise.py")


if __name__ == "__main__":
    main()
