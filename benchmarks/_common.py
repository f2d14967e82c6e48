"""Helpers shared by the benchmark scripts (reporting and machine description)."""

import os
import sys
import time

import numpy as np


def use_checkout(repo_root):
    """Import skdp from ``repo_root`` here and in joblib's worker processes."""
    sys.path.insert(0, str(repo_root))
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(repo_root), *filter(None, [os.environ.get("PYTHONPATH")])]
    )


def markdown_table(header, rows):
    lines = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" for _ in header) + "|",
    ]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def mean_std(values):
    if len(values) < 2:
        return f"{np.mean(values):.4f}"
    return f"{np.mean(values):.4f} ± {np.std(values, ddof=1):.4f}"


def cpu_model_name():
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def load_average():
    try:
        return ", ".join(f"{load:.2f}" for load in os.getloadavg())
    except (AttributeError, OSError):
        return "unknown"


def distinct_warnings(caught):
    return sorted({f"{w.category.__name__}: {w.message}" for w in caught})


def best_time(function, repeats, clock=time.perf_counter):
    """The shortest of ``repeats`` timings of ``function()`` by ``clock``."""
    best = np.inf
    for _ in range(repeats):
        start = clock()
        function()
        best = min(best, clock() - start)
    return best
