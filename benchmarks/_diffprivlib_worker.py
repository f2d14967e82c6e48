"""Fit IBM diffprivlib's LogisticRegression for ``bench_logistic.py``.

diffprivlib 0.6.6 does not import on scikit-learn >= 1.8, so this worker runs
inside a separate virtual environment (``benchmarks/.venv-diffprivlib``) that
``bench_logistic.py`` creates. It must not import anything from ``skdp``.

Protocol (all JSON):

* stdin: a configuration object with the keys ``data_path`` (an ``.npz`` file
  holding ``X_train``, ``y_train``, ``X_test``, ``y_test``), ``epsilons``,
  ``seeds``, ``data_norms``, ``max_iter``, ``timing_epsilon`` and
  ``timing_repeats``.
* stdout: one result object with the keys ``environment``, ``runs`` (one record
  per data norm, epsilon and seed), ``timings`` (repeated fit times per data
  norm at ``timing_epsilon``) and ``warnings`` (the distinct warnings that were
  raised and silenced during the fits).
"""

import json
import platform
import sys
import time
import warnings

import numpy as np


def describe_environment():
    """Versions and BLAS thread pools of this interpreter, for the report."""
    import diffprivlib
    import sklearn
    from threadpoolctl import threadpool_info

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "scikit-learn": sklearn.__version__,
        "diffprivlib": diffprivlib.__version__,
        "threadpools": threadpool_info(),
    }


def timed_fit(model, X, y):
    """Fit ``model`` and return the wall-clock seconds spent in ``fit``."""
    start = time.perf_counter()
    model.fit(X, y)
    return time.perf_counter() - start


def make_model(epsilon, data_norm, seed, max_iter):
    from diffprivlib.models import LogisticRegression

    return LogisticRegression(
        epsilon=epsilon, data_norm=data_norm, max_iter=max_iter, random_state=seed
    )


def accuracy_runs(data, config):
    """Accuracy and fit time for every (data norm, epsilon, seed) triple."""
    runs = []
    for data_norm in config["data_norms"]:
        for epsilon in config["epsilons"]:
            for seed in config["seeds"]:
                model = make_model(epsilon, data_norm, seed, config["max_iter"])
                fit_time = timed_fit(model, data["X_train"], data["y_train"])
                accuracy = model.score(data["X_test"], data["y_test"])
                runs.append(
                    {
                        "data_norm": data_norm,
                        "epsilon": epsilon,
                        "seed": seed,
                        "accuracy": float(accuracy),
                        "fit_time": fit_time,
                    }
                )
    return runs


def timing_runs(data, config):
    """Repeated fit times at ``timing_epsilon`` (seed 0) for every data norm."""
    timings = []
    for data_norm in config["data_norms"]:
        fit_times = [
            timed_fit(
                make_model(config["timing_epsilon"], data_norm, 0, config["max_iter"]),
                data["X_train"],
                data["y_train"],
            )
            for _ in range(config["timing_repeats"])
        ]
        timings.append({"data_norm": data_norm, "fit_times": fit_times})
    return timings


def main():
    config = json.load(sys.stdin)
    with np.load(config["data_path"]) as npz:
        data = {key: npz[key] for key in npz.files}

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        runs = accuracy_runs(data, config)
        timings = timing_runs(data, config)

    distinct_warnings = sorted({f"{w.category.__name__}: {w.message}" for w in caught})
    result = {
        "environment": describe_environment(),
        "runs": runs,
        "timings": timings,
        "warnings": distinct_warnings,
    }
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
