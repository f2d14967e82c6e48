"""Command line: ``python -m skdp audit ESTIMATOR --epsilon 1``.

Runs the default audit of one estimator on generated data and prints the
:class:`~skdp.audit.AuditReport`. ``--setting worst-case`` (the default)
configures the estimator the way a tight audit needs (DP-GD: plain gradient
steps and a tiny learning rate, so that μ̂ measures the claimed μ exactly,
and a record canary stays clipped for ``--statistic loss``);
``--setting default`` audits the estimator near its own defaults (fewer
steps or features for speed): Adam, averaging and clipping make its μ̂ a
looser lower bound there (DPLogisticRegression at 20 steps on 50 records:
0.72-0.76 of the claim; half the noise is not always refuted), so use it to
see the defaults' loss, ``worst-case`` to test the claim. The exit status
is 1 when the claim is refuted, so that the command can gate a CI job.
"""

import argparse
import math
import os
import sys
import time
import traceback

import numpy as np

from ._audit import MIN_TRIALS

#: Estimators the command knows how to audit.
ESTIMATORS = (
    "DPLogisticRegression",
    "DPRandomFeaturesRegressor",
    "DPBradleyTerry",
    "DPGaussianSampler",
    "DPQuantileTransformer",
    "DPRobustScaler",
    "DPMinMaxScaler",
    "DPLinearRegression",
    "DPPCA",
)


#: Estimators whose default canary is a gradient canary (no black-box loss).
_DPGD = ("DPLogisticRegression", "DPRandomFeaturesRegressor")


def audit_setup(name, *, epsilon, delta, setting="worst-case", seed=0):
    """``(estimator, X, y, canary)`` of the default audit of estimator ``name``.

    The data are small and generated (n = 50 records with 3 standard normal
    features, also for the quantile transformers; 10 items compared twice
    per pair for DPBradleyTerry; 500 two-dimensional rows for
    DPGaussianSampler; 2000 rows for DPLinearRegression), so that an audit
    of a few hundred fits per data set takes seconds. ``setting="default"``
    keeps the estimator's defaults but for its size: DPLogisticRegression
    runs ``max_iter=20`` and DPRandomFeaturesRegressor has 50 features.
    """
    import skdp
    from skdp.audit import OutcomeCanary
    from skdp.datasets import make_btl_comparisons
    from skdp.ranking import pairs_to_design

    rng = np.random.default_rng(seed)
    tight = setting == "worst-case"
    privacy = dict(epsilon=epsilon, delta=delta)
    if name == "DPLogisticRegression":
        X = rng.normal(size=(50, 3))
        y = np.arange(50) % 2
        params = dict(classes=[0, 1], max_iter=20)
        if tight:
            params.update(solver="gd", learning_rate=1e-4, alpha=0.0, max_iter=10)
        return skdp.DPLogisticRegression(**privacy, **params), X, y, "auto"
    if name == "DPRandomFeaturesRegressor":
        X = rng.normal(size=(50, 3))
        if tight:
            params = dict(learning_rate=1e-4, max_iter=10, solver="primal")
            return (
                skdp.DPRandomFeaturesRegressor(50, **privacy, **params),
                X,
                np.zeros(50),
                "auto",
            )
        return (
            skdp.DPRandomFeaturesRegressor(50, **privacy),
            X,
            np.sign(X[:, 0]),
            "auto",
        )
    if name == "DPBradleyTerry":
        pairs, y, _ = make_btl_comparisons(10, 1.0, 2, random_state=seed)
        # worst-case: the released win counts, recovered from the scores.
        canary = OutcomeCanary(kind="win_counts") if tight else "auto"
        return (
            skdp.DPBradleyTerry(**privacy, classes=[0, 1]),
            pairs_to_design(pairs, 10),
            y,
            canary,
        )
    if name == "DPGaussianSampler":
        X = rng.normal(size=(500, 2))
        params = dict(center=0.0, radius=3.0)
        if tight:
            params.update(min_variance=1e-9)
        return skdp.DPGaussianSampler(**privacy, **params), X, None, "auto"
    if name in ("DPQuantileTransformer", "DPRobustScaler", "DPMinMaxScaler"):
        # worst-case: public bounds, one histogram, which the histogram
        # canary moves by its whole sensitivity (the claimed μ is attained).
        params = dict(bounds=(-3.0, 3.0)) if tight else {}
        X = rng.normal(size=(50, 3))
        return getattr(skdp, name)(**privacy, **params), X, None, "auto"
    if name == "DPLinearRegression":
        # Enough rows that XᵀX dominates its noise: the coefficients are then
        # close to a linear function of the noisy Xᵀy the canary moves.
        X = rng.normal(size=(2000, 3))
        y = X @ [0.5, 0.3, 0.1] + 0.5 * rng.normal(size=2000)
        return skdp.DPLinearRegression(**privacy), X, y, "auto"
    if name == "DPPCA":
        # The Gram canary attains the sensitivity at any setting.
        return skdp.DPPCA(**privacy), rng.normal(size=(50, 3)), None, "auto"
    raise ValueError(f"Unknown estimator {name!r}; expected one of {ESTIMATORS}.")


#: ``python -m skdp audit --help``: plain text (argparse prints it as is).
AUDIT_DESCRIPTION = """\
Run the default empirical privacy audit of one estimator on small generated
data: fit it many times with and without a canary record, and test whether
the observed privacy loss refutes the claimed epsilon. Prints the report
(claimed and audited epsilon, the decision, the run time).

--setting worst-case (the default) configures the estimator the way a tight
audit needs (DP-GD: plain gradient steps and a tiny learning rate, so that
the worst-case canary attains the claimed privacy loss); --setting default
audits the estimator near its own defaults (fewer steps or features, for
speed; a looser bound). DPLogisticRegression's default canary injects a
gradient (so does DPRandomFeaturesRegressor's with solver="primal"): it tests
the noise, not the clipping of records' gradients; add --statistic loss (a
record canary, GLMCanary) for that. With the kernel solver, which --setting
default picks, and for DPSparseGLM the default canary is a record.

Exit status: 0 if the claim is not refuted, 1 if it is, 2 for bad arguments,
3 if the audit failed."""

AUDIT_EPILOG = """\
example:
  python -m skdp audit DPLogisticRegression --epsilon 1 --n-trials 500"""


def _checked(convert, accept, rule):
    """An argparse type: ``convert``, then ``accept`` or an argparse error
    (exit status 2, before any fit)."""

    def parse(text):
        try:
            value = convert(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {rule}") from None
        if not accept(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not {rule}")
        return value

    return parse


def add_audit_arguments(parser):
    """Add the ``audit`` command's arguments to an argparse parser."""
    parser.add_argument(
        "estimator",
        choices=ESTIMATORS,
        metavar="ESTIMATOR",
        help="one of: " + ", ".join(ESTIMATORS),
    )
    parser.add_argument(
        "--epsilon",
        type=_checked(float, lambda e: 0 < e < math.inf, "a finite epsilon > 0"),
        default=1.0,
        help="claimed epsilon (default 1)",
    )
    parser.add_argument(
        "--delta",
        type=_checked(float, lambda d: 0 < d < 1, "a delta in (0, 1)"),
        default=1e-5,
        help="claimed delta (default 1e-5)",
    )
    parser.add_argument(
        "--n-trials",
        type=_checked(int, lambda n: n >= MIN_TRIALS, f"an integer >= {MIN_TRIALS}"),
        default=500,
        help="fits per data set (default 500)",
    )
    parser.add_argument(
        "--setting",
        choices=("worst-case", "default"),
        default="worst-case",
        help="estimator hyperparameters: tight audit (default) or its defaults",
    )
    parser.add_argument(
        "--statistic",
        choices=("auto", "loss"),
        default="auto",
        help="white-box (auto) or black-box (the canary's loss)",
    )
    parser.add_argument(
        "--n-jobs",
        type=_checked(int, lambda j: j != 0, "a non-zero integer (joblib)"),
        default=1,
        help="parallel fits (joblib; default 1)",
    )
    parser.add_argument(
        "--seed",
        type=_checked(int, lambda s: s >= 0, "an integer >= 0"),
        default=0,
        help="seed of the audit's data, noise and canary draws (default 0)",
    )
    parser.add_argument("--plot", metavar="FILE", help="save the ROC plot (matplotlib)")
    parser.add_argument(
        "--quiet",
        dest="verbose",
        action="store_const",
        const=0,
        default=1,
        help="no progress lines (by default: fits done and time left, on stderr)",
    )
    return parser


def run_audit(args, file=None):
    """Run the audit described by parsed ``args``; print the report."""
    from . import audit_estimator

    file = sys.stdout if file is None else file
    if args.plot:  # before the fits, not after them
        _check_plot_path(args.plot)
    estimator, X, y, canary = audit_setup(
        args.estimator,
        epsilon=args.epsilon,
        delta=args.delta,
        setting=args.setting,
        seed=args.seed,
    )
    if args.statistic == "loss" and canary == "auto" and args.estimator in _DPGD:
        # The default gradient canary has no record to take the loss of.
        from . import GLMCanary

        canary = GLMCanary()
    if args.statistic == "loss":
        from . import default_canary
        from ._canary import Canary

        chosen = default_canary(estimator) if canary == "auto" else canary
        if type(chosen).loss is Canary.loss:
            _refuse(
                f"argument --statistic: {type(chosen).__name__}, the canary of "
                f"{args.estimator}, has no black-box loss; use --statistic auto"
            )
    start = time.perf_counter()
    try:
        report = audit_estimator(
            estimator,
            X,
            y,
            canary=canary,
            statistic=args.statistic,
            n_trials=args.n_trials,
            n_jobs=args.n_jobs,
            random_state=args.seed,
            verbose=args.verbose,
        )
    except Exception:  # not "refuted" (1) nor a bad argument (2)
        traceback.print_exc()
        print("python -m skdp audit: the audit failed (exit status 3)", file=sys.stderr)
        raise SystemExit(3) from None
    print(report, file=file)
    print(
        f"  {'time'.ljust(19)} : {time.perf_counter() - start:.1f} s for "
        f"{2 * args.n_trials + 2} fits ({args.setting} setting: "
        f"{' '.join(repr(estimator).split())})",
        file=file,
    )
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        try:
            ax = report.plot()
            ax.figure.savefig(args.plot, dpi=120, bbox_inches="tight")
        except Exception:  # the report is printed; the status says it failed
            traceback.print_exc()
            print(f"python -m skdp audit: could not save {args.plot}", file=sys.stderr)
            raise SystemExit(3) from None
        print(f"  saved {args.plot}", file=file)
    return 1 if report.refuted else 0


def _check_plot_path(path):
    """Refuse, before any fit, a plot the audit could not save."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        _refuse(f"argument --plot: no directory {folder!r} to save into")
    try:
        from matplotlib.figure import Figure
    except ImportError:
        _refuse("argument --plot: needs matplotlib")
    extension = os.path.splitext(path)[1].lstrip(".").lower()
    formats = Figure().canvas.get_supported_filetypes()
    if extension and extension not in formats:
        _refuse(
            f"argument --plot: matplotlib cannot save .{extension} files "
            f"(it can: {', '.join(sorted(formats))})"
        )


def _refuse(message):
    """An argument error found after parsing: argparse's form, exit status 2."""
    print(f"python -m skdp audit: error: {message}", file=sys.stderr)
    raise SystemExit(2)


def main_audit(argv=None):
    """``python -m skdp audit ...`` as a function (``argv`` without "audit")."""
    parser = argparse.ArgumentParser(
        prog="python -m skdp audit",
        description=AUDIT_DESCRIPTION,
        epilog=AUDIT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_audit_arguments(parser)
    return run_audit(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main_audit())
