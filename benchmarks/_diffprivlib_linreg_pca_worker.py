"""Fit diffprivlib LinearRegression or PCA for bench_linear_regression.py, bench_pca.py.

diffprivlib 0.6.6 does not import on scikit-learn >= 1.8, so this worker runs
inside the separate virtual environment ``benchmarks/.venv-diffprivlib``
(created by the benchmark scripts, as for ``bench_logistic.py``). It must not
import anything from ``skdp``.

Protocol (JSON): stdin holds ``{"model": "LinearRegression" | "PCA",
"jobs": [...]}``; each job names an ``.npz`` file (``X_train``, ``y_train``,
``X_test``, ``y_test`` for regression; ``X`` for PCA), the ``params`` of the
model (``epsilon``, bounds, ...) and ``seeds``. stdout: ``{"environment":
..., "results": [...], "warnings": [...]}`` with one result per job: R² on
the test part for each seed (regression), or the fitted components for each
seed (PCA), and the fit times.
"""

import json
import platform
import sys
import time
import warnings

import numpy as np


def describe_environment():
    import diffprivlib
    import sklearn

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scikit-learn": sklearn.__version__,
        "diffprivlib": diffprivlib.__version__,
    }


def _bounds(value):
    return None if value is None else tuple(value)


def run_regression(job):
    from diffprivlib.models import LinearRegression

    data = np.load(job["data_path"])
    params = dict(job["params"])
    params["bounds_X"] = _bounds(params.get("bounds_X"))
    params["bounds_y"] = _bounds(params.get("bounds_y"))
    scores, times = [], []
    for seed in job["seeds"]:
        model = LinearRegression(random_state=seed, **params)
        start = time.perf_counter()
        model.fit(data["X_train"], data["y_train"])
        times.append(time.perf_counter() - start)
        scores.append(float(model.score(data["X_test"], data["y_test"])))
    return {"scores": scores, "fit_times": times}


def run_pca(job):
    from diffprivlib.models import PCA

    data = np.load(job["data_path"])
    params = dict(job["params"])
    params["bounds"] = _bounds(params.get("bounds"))
    components, times = [], []
    for seed in job["seeds"]:
        model = PCA(random_state=seed, **params)
        start = time.perf_counter()
        model.fit(data["X"])
        times.append(time.perf_counter() - start)
        components.append(model.components_.tolist())
    return {"components": components, "fit_times": times}


def main():
    config = json.load(sys.stdin)
    run = {"LinearRegression": run_regression, "PCA": run_pca}[config["model"]]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        results = [run(job) for job in config["jobs"]]
    json.dump(
        {
            "environment": describe_environment(),
            "results": results,
            "warnings": sorted({f"{w.category.__name__}: {w.message}" for w in caught}),
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()
