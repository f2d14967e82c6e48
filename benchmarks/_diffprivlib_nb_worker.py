"""Fit IBM diffprivlib's GaussianNB for ``bench_naive_bayes.py``.

diffprivlib 0.6.6 does not import on scikit-learn >= 1.8, so this worker runs
inside the virtual environment ``benchmarks/.venv-diffprivlib`` (created by
``bench_logistic.ensure_diffprivlib_venv``). It must not import ``skdp``.

Protocol (all JSON):

* stdin: ``{"splits": [{"data_path": ..., "classes": [...]}, ...],
  "epsilons": [...], "seeds": [...], "bounds": "data" | "none"}``; each
  ``.npz`` holds ``X_train``, ``y_train``, ``X_test``, ``y_test``.
  ``bounds="data"`` hands diffprivlib the training data's own minimum and
  maximum (what it reads itself when given none, with a PrivacyLeakWarning:
  not private, and favourable to diffprivlib).
* stdout: ``{"environment": ..., "runs": [{"split", "epsilon", "seed",
  "accuracy", "fit_time"}], "warnings": [...]}``.
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


def main():
    from diffprivlib.models import GaussianNB

    config = json.load(sys.stdin)
    runs = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for index, split in enumerate(config["splits"]):
            with np.load(split["data_path"]) as npz:
                data = {key: npz[key] for key in npz.files}
            X_train, y_train = data["X_train"], data["y_train"]
            bounds = None
            if config["bounds"] == "data":
                bounds = (X_train.min(axis=0), X_train.max(axis=0))
            for epsilon in config["epsilons"]:
                for seed in config["seeds"]:
                    model = GaussianNB(
                        epsilon=epsilon, bounds=bounds, random_state=seed
                    )
                    start = time.perf_counter()
                    model.fit(X_train, y_train)
                    fit_time = time.perf_counter() - start
                    accuracy = model.score(data["X_test"], data["y_test"])
                    runs.append(
                        {
                            "split": index,
                            "epsilon": epsilon,
                            "seed": seed,
                            "accuracy": float(accuracy),
                            "fit_time": fit_time,
                        }
                    )
    result = {
        "environment": describe_environment(),
        "runs": runs,
        "warnings": sorted({f"{w.category.__name__}: {w.message}" for w in caught}),
    }
    json.dump(result, sys.stdout)


if __name__ == "__main__":
    main()
