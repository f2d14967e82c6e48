"""Helpers shared by bench_linear_regression.py and bench_pca.py: the machine
line and running diffprivlib in its own environment."""

import json
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import scipy
import sklearn
from _common import cpu_model_name, load_average

BENCH_DIR = Path(__file__).resolve().parent
WORKER = BENCH_DIR / "_diffprivlib_linreg_pca_worker.py"


def log(tag, message):
    print(f"[{tag}] {message}", file=sys.stderr, flush=True)


def machine_lines():
    import skdp

    return [
        f"- Platform: {platform.platform()}",
        f"- CPU: {cpu_model_name()} (`os.cpu_count()`: {__import__('os').cpu_count()})",
        f"- Load average (1, 5, 15 min) at the start: {load_average()}",
        f"- Python {platform.python_version()}, numpy {np.__version__}, scipy "
        f"{scipy.__version__}, scikit-learn {sklearn.__version__}, skdp "
        f"{skdp.__version__}",
    ]


def diffprivlib_python(tag):
    """The diffprivlib venv's python (created as bench_logistic.py does), or
    None with the reason logged if it cannot be made."""
    try:
        from bench_logistic import ensure_diffprivlib_venv

        return ensure_diffprivlib_venv()
    except (SystemExit, OSError, subprocess.CalledProcessError) as exc:
        log(tag, f"diffprivlib unavailable: {exc}")
        return None


def run_diffprivlib(python, model, jobs, tag):
    """Run the worker on ``jobs`` (each with a ``data`` dict of arrays)."""
    with tempfile.TemporaryDirectory(prefix="bench_dpl_") as tmp:
        payload = []
        for i, job in enumerate(jobs):
            path = Path(tmp) / f"job{i}.npz"
            np.savez(path, **job["data"])
            payload.append(
                {"data_path": str(path), "params": job["params"], "seeds": job["seeds"]}
            )
        completed = subprocess.run(
            [str(python), str(WORKER)],
            input=json.dumps({"model": model, "jobs": payload}),
            capture_output=True,
            text=True,
        )
    if completed.returncode != 0:
        log(tag, f"diffprivlib worker failed:\n{completed.stderr}")
        return None
    return json.loads(completed.stdout)
