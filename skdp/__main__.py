"""Command line: ``python -m skdp demo`` and ``python -m skdp audit``.

``demo`` fits every skdp estimator on generated data at several privacy
levels and prints a privacy/utility table next to the non-private
scikit-learn model. ``--seed`` fixes the generated data only: every private
fit leaves ``random_state=None`` and draws fresh noise (fits that shared a
seed would share their noise), so the private scores vary a little from run
to run. ``audit NAME --epsilon E`` runs an empirical privacy
audit of one estimator (:mod:`skdp.audit`) and prints its report.
"""

import argparse
import sys
import time
import warnings

import numpy as np

from .accounting import format_up

DEMO_EPSILONS = (0.1, 0.5, 1.0, 2.0, 5.0)


def _timed_fit(estimator, X, y):
    start = time.perf_counter()
    with warnings.catch_warnings():
        # The table shows what small ε costs; DPPCA's warning that its axes
        # are not resolved at ε = 0.1 says it again, in the table's middle.
        warnings.filterwarnings("ignore", message="DPPCA: the top")
        estimator.fit(X, y)
    return estimator, time.perf_counter() - start


def _dp_row(task, eps, est, score, seconds):
    """One table row for a fitted DP estimator."""
    spent = est.privacy_spent_
    return (
        type(est).__name__,
        task,
        f"{eps:g}",
        format_up(spent.epsilon, 4),
        "" if spent.mu is None else format_up(spent.mu, 4),
        f"{score:.3f}",
        "(secret)" if seconds is None else f"{seconds * 1e3:.0f}",
    )


def _logistic_rows(seed):
    """DPLogisticRegression vs LogisticRegression on a generated task."""
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    from skdp import DPLogisticRegression

    X, y = make_classification(
        n_samples=25000,
        n_features=20,
        n_informative=10,
        class_sep=2.0,
        random_state=seed,
    )
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=5000, random_state=seed
    )
    scaler = StandardScaler().fit(X_train)
    X_train, X_test = scaler.transform(X_train), scaler.transform(X_test)
    baseline, base_time = _timed_fit(LogisticRegression(), X_train, y_train)
    task = "classification n=20000 d=20, accuracy"
    yield from [
        (
            "LogisticRegression (non-private)",
            task,
            "inf",
            "",
            "",
            f"{baseline.score(X_test, y_test):.3f}",
            f"{base_time * 1e3:.0f}",
        )
    ]
    for eps in DEMO_EPSILONS:
        est = DPLogisticRegression(epsilon=eps, delta=1e-5, classes=[0, 1])
        est, seconds = _timed_fit(est, X_train, y_train)
        yield _dp_row(task, eps, est, est.score(X_test, y_test), seconds)


def _private_search_rows(seed):
    """DPRandomSearchCV vs one default fit at the same total ε, on features
    whose small scale the defaults do not suit."""
    from scipy.stats import loguniform
    from sklearn.datasets import make_classification
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    from skdp import DPLogisticRegression
    from skdp.model_selection import DPRandomSearchCV

    X, y = make_classification(
        n_samples=25000,
        n_features=20,
        n_informative=10,
        class_sep=1.5,
        random_state=seed,
    )
    X = 0.03 * StandardScaler().fit_transform(X)  # generated data: public scale
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=5000, random_state=seed
    )
    task = "classification n=20000 d=20, features x0.03, accuracy"
    space = {
        "clip_norm": loguniform(0.05, 1.0),
        "learning_rate": loguniform(0.05, 2.0),
    }
    for eps in (1.0, 2.0, 4.0):
        default = DPLogisticRegression(epsilon=eps, delta=1e-5, classes=[0, 1])
        default, seconds = _timed_fit(default, X_train, y_train)
        yield _dp_row(task, eps, default, default.score(X_test, y_test), seconds)
        search = DPRandomSearchCV(
            DPLogisticRegression(classes=[0, 1]),
            space,
            n_iter=10,
            n_iter_shape=1.0,
            epsilon=eps,
            delta=1e-5,
        )
        search, _ = _timed_fit(search, X_train, y_train)
        # Its run time is withheld: it grows with the number of candidates,
        # which the guarantee needs to stay secret.
        yield _dp_row(task, eps, search, search.score(X_test, y_test), None)


def _sparse_glm_rows(seed):
    """DPSparseGLM vs the Lasso on a sparse linear model."""
    from sklearn.linear_model import Lasso

    from skdp import DPSparseGLM
    from skdp.datasets import make_sparse_glm

    n, d, s = 20000, 500, 5
    X, y, _ = make_sparse_glm(n + 5000, d, s, random_state=seed)
    X_train, X_test, y_train, y_test = X[:n], X[n:], y[:n], y[n:]
    baseline, base_time = _timed_fit(Lasso(alpha=0.01), X_train, y_train)
    task = f"sparse regression n={n} d={d} s*={s}, R²"
    yield from [
        (
            "Lasso alpha=0.01 (non-private)",
            task,
            "inf",
            "",
            "",
            f"{baseline.score(X_test, y_test):.3f}",
            f"{base_time * 1e3:.0f}",
        )
    ]
    for eps in DEMO_EPSILONS:
        est = DPSparseGLM(sparsity=s, epsilon=eps, delta=1e-5, residual_bound=4.0)
        est, seconds = _timed_fit(est, X_train, y_train)
        yield _dp_row(task, eps, est, est.score(X_test, y_test), seconds)


def _linear_regression_rows(seed):
    """DPLinearRegression vs LinearRegression on standardised synthetic data."""
    from sklearn.linear_model import LinearRegression
    from sklearn.preprocessing import StandardScaler

    from skdp import DPLinearRegression

    rng = np.random.default_rng(seed)
    n, d = 10000, 20
    X = rng.standard_normal((n + 5000, d))
    beta = rng.standard_normal(d)
    y = X @ beta + np.linalg.norm(beta) * rng.standard_normal(n + 5000)
    X = StandardScaler().fit_transform(X)
    y = (y - y.mean()) / y.std()  # generated data: public scale
    X_train, X_test, y_train, y_test = X[:n], X[n:], y[:n], y[n:]
    baseline, base_time = _timed_fit(LinearRegression(), X_train, y_train)
    task = f"linear regression n={n} d={d} (standardised), R²"
    yield from [
        (
            "LinearRegression (non-private)",
            task,
            "inf",
            "",
            "",
            f"{baseline.score(X_test, y_test):.3f}",
            f"{base_time * 1e3:.0f}",
        )
    ]
    for eps in DEMO_EPSILONS:
        est = DPLinearRegression(epsilon=eps, delta=1e-5)
        est, seconds = _timed_fit(est, X_train, y_train)
        yield _dp_row(task, eps, est, est.score(X_test, y_test), seconds)


def _pca_rows(seed):
    """DPPCA vs PCA: the largest principal angle to the true 5-dim signal."""
    from scipy.linalg import subspace_angles
    from sklearn.decomposition import PCA

    from skdp import DPPCA

    rng = np.random.default_rng(seed)
    n, d, k = 10000, 50, 5
    U = np.linalg.qr(rng.standard_normal((d, k)))[0]
    X = rng.standard_normal((n, k)) * np.sqrt([10.0, 8.0, 6.0, 5.0, 4.0]) @ U.T
    X += rng.standard_normal((n, d))

    def cos_angle(components):  # cosine of the largest angle: 1 is perfect
        return float(np.cos(subspace_angles(U, components.T).max()))

    baseline, base_time = _timed_fit(PCA(k), X, None)
    task = f"PCA n={n} d={d}, 5-dim signal, cos(largest angle)"
    yield from [
        (
            "PCA (non-private)",
            task,
            "inf",
            "",
            "",
            f"{cos_angle(baseline.components_):.3f}",
            f"{base_time * 1e3:.0f}",
        )
    ]
    for eps in DEMO_EPSILONS:
        est, seconds = _timed_fit(DPPCA(k, epsilon=eps, delta=1e-5), X, None)
        yield _dp_row(task, eps, est, cos_angle(est.components_), seconds)


def _random_features_rows(seed):
    """DPRandomFeaturesRegressor vs ridge regression on the same kind of features."""
    from sklearn.linear_model import RidgeCV

    from skdp import DPRandomFeaturesRegressor

    rng = np.random.default_rng(seed)
    n, d, p = 2000, 50, 4000
    u = rng.standard_normal(d) / np.sqrt(d)
    X = rng.standard_normal((n + 2000, d))
    y = np.sign(X @ u)
    X_train, X_test, y_train, y_test = X[:n], X[n:], y[:n], y[n:]
    weights = rng.standard_normal((d, p)) / np.sqrt(d)
    baseline, base_time = _timed_fit(
        RidgeCV(alphas=np.logspace(-2, 4, 13)), np.tanh(X_train @ weights), y_train
    )
    task = f"sign(uᵀx) n={n} d={d} p={p}, R²"
    yield from [
        (
            "RidgeCV on tanh features (non-private)",
            task,
            "inf",
            "",
            "",
            f"{baseline.score(np.tanh(X_test @ weights), y_test):.3f}",
            f"{base_time * 1e3:.0f}",
        )
    ]
    for eps in DEMO_EPSILONS:
        est = DPRandomFeaturesRegressor(p, epsilon=eps, delta=1e-5)
        est, seconds = _timed_fit(est, X_train, y_train)
        yield _dp_row(task, eps, est, est.score(X_test, y_test), seconds)


def _bradley_terry_rows(seed):
    """DPBradleyTerry vs the non-private Bradley–Terry MLE on simulated comparisons."""
    from scipy.stats import kendalltau
    from sklearn.linear_model import LogisticRegression

    from skdp.datasets import make_btl_comparisons
    from skdp.ranking import DPBradleyTerry, pairs_to_design

    n_items = 100
    pairs, y, scores = make_btl_comparisons(n_items, 0.4, 10, random_state=seed)
    X = pairs_to_design(pairs, n_items)
    # The BTL MLE is a logistic regression without intercept on rows e_i − e_j.
    baseline, base_time = _timed_fit(
        LogisticRegression(fit_intercept=False, C=1e4, max_iter=1000), X, y
    )
    task = f"BTL ranking {n_items} items m={len(y)} (outcome private), Kendall τ"
    yield from [
        (
            "Bradley–Terry MLE (non-private)",
            task,
            "inf",
            "",
            "",
            f"{kendalltau(baseline.coef_.ravel(), scores).statistic:.3f}",
            f"{base_time * 1e3:.0f}",
        )
    ]
    for eps in DEMO_EPSILONS:
        est = DPBradleyTerry(epsilon=eps, delta=1e-5, classes=[0, 1])
        est, seconds = _timed_fit(est, X, y)
        yield (
            _dp_row(task, eps, est, kendalltau(est.scores_, scores).statistic, seconds)
        )


def _fedrep_rows(seed):
    """DPFedRep vs each user's own least squares, on new rows of each user."""
    from sklearn.metrics import r2_score

    from skdp import DPFedRep

    rng = np.random.default_rng(seed)
    n_users, m, m_fit, d, k = 10000, 15, 10, 20, 2
    U = np.linalg.qr(rng.standard_normal((d, k)))[0]
    V = rng.standard_normal((n_users, k))
    V /= np.linalg.norm(V, axis=1, keepdims=True)
    groups = np.repeat(np.arange(n_users), m)
    X = rng.standard_normal((n_users * m, d))
    y = np.einsum("ij,ij->i", X @ U, V[groups]) + 0.1 * rng.standard_normal(groups.size)
    test = np.tile(np.arange(m) >= m_fit, n_users)
    start = time.perf_counter()
    heads = np.linalg.pinv(X[~test].reshape(n_users, m_fit, d)) @ y[~test].reshape(
        n_users, m_fit, 1
    )
    local = r2_score(y[test], np.einsum("ij,ij->i", X[test], heads[groups[test], :, 0]))
    base_time = time.perf_counter() - start
    task = f"personalised regression {n_users} users×{m_fit} rows d={d} k={k}, R²"
    yield from [
        (
            "per-user least squares (non-private, local only)",
            task,
            "inf",
            "",
            "",
            f"{local:.3f}",
            f"{base_time * 1e3:.0f}",
        )
    ]
    for eps in DEMO_EPSILONS:
        est = DPFedRep(k, epsilon=eps, delta=1e-6, learning_rate=1.0)
        start = time.perf_counter()
        with warnings.catch_warnings():
            # The users' heads average to 0 here: no model of new users to
            # learn, which the fit says; the row scores known users only.
            warnings.filterwarnings("ignore", message=".*cold-start model is within")
            est.fit(X[~test], y[~test], groups[~test])
        seconds = time.perf_counter() - start
        score = est.score(X[test], y[test], groups[test])
        yield _dp_row(task, eps, est, score, seconds)


def _total_variation(mean_p, cov_p, mean_q, cov_q, rng, n_draws=20000):
    """TV(P, Q) = E_P[(1 − q/p)₊] for two Gaussians, by Monte Carlo."""
    from scipy.stats import multivariate_normal

    x = rng.multivariate_normal(mean_p, cov_p, n_draws)
    log_ratio = multivariate_normal(mean_q, cov_q).logpdf(x) - multivariate_normal(
        mean_p, cov_p
    ).logpdf(x)
    return float(np.mean(np.maximum(0.0, -np.expm1(log_ratio))))


def _gaussian_sampler_rows(seed):
    """DPGaussianSampler (bounded mode) vs the sample mean and covariance."""
    from skdp import DPGaussianSampler

    rng = np.random.default_rng(seed)
    n, d = 10000, 5
    mean = np.array([1.0, -1.0, 0.5, 0.0, 2.0])
    rotation, _ = np.linalg.qr(rng.standard_normal((d, d)))
    cov = (rotation * np.linspace(0.5, 2.0, d)) @ rotation.T
    X = rng.multivariate_normal(mean, cov, n)

    def score(fitted_mean, fitted_cov):
        tv = _total_variation(mean, cov, fitted_mean, fitted_cov, rng)
        return 1.0 - tv

    start = time.perf_counter()
    sample_mean, sample_cov = X.mean(axis=0), np.cov(X, rowvar=False)
    base_time = time.perf_counter() - start
    task = f"Gaussian n={n} d={d} (ball radius 8), 1 − TV"
    yield from [
        (
            "sample mean and covariance (non-private)",
            task,
            "inf",
            "",
            "",
            f"{score(sample_mean, sample_cov):.3f}",
            f"{base_time * 1e3:.0f}",
        )
    ]
    for eps in DEMO_EPSILONS:
        est = DPGaussianSampler(epsilon=eps, delta=1e-5, center=0.0, radius=8.0)
        est, seconds = _timed_fit(est, X, None)
        yield _dp_row(task, eps, est, score(est.mean_, est.covariance_), seconds)


#: Column widths of the demo table, fixed so that each row prints as soon as
#: it is computed (a longer cell only shifts the rest of its row).
_DEMO_WIDTHS = (48, 58, 8, 7, 7, 6, 8)  # μ: 0.03253


def _preprocessing_rows(seed):
    """Private quantile transformers then DPLogisticRegression, one total ε,
    on breast cancer (scikit-learn's bundled table) vs non-private scaling."""
    import warnings

    from sklearn.datasets import load_breast_cancer
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    from skdp import (
        DPLogisticRegression,
        DPMinMaxScaler,
        DPQuantileTransformer,
        DPRobustScaler,
        DPStandardScaler,
        PrivacyLedger,
    )
    from skdp.pipeline import make_private_pipeline

    X, y = load_breast_cancer(return_X_y=True)
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, random_state=seed, stratify=y
    )
    task = "breast cancer n=426 d=30, pipeline accuracy (total ε)"
    baseline, base_time = _timed_fit(
        make_pipeline(StandardScaler(), LogisticRegression()), X_train, y_train
    )
    yield (
        "StandardScaler + LogisticRegression",
        task,
        "inf",
        "",
        "",
        f"{baseline.score(X_test, y_test):.3f}",
        f"{base_time * 1e3:.0f}",
    )
    transformers = (
        ("DPStandardScaler", DPStandardScaler),
        (
            "DPQuantileTransformer",
            lambda: DPQuantileTransformer(output_distribution="normal"),
        ),
        ("DPRobustScaler", DPRobustScaler),
        ("DPMinMaxScaler", lambda: DPMinMaxScaler(feature_range=(-1, 1))),
    )
    for name, make in transformers:
        for eps in (0.5, 1.0, 2.0):
            pipe = make_private_pipeline(
                make(), DPLogisticRegression(classes=[0, 1]), epsilon=eps
            )
            with warnings.catch_warnings():  # the small-data warning
                warnings.simplefilter("ignore", UserWarning)
                pipe, seconds = _timed_fit(pipe, X_train, y_train)
            total = PrivacyLedger().record(pipe).total()
            yield (
                f"{name} + DPLogisticRegression",
                task,
                f"{eps:g}",
                format_up(total.epsilon, 4),
                "" if total.mu is None else format_up(total.mu, 4),
                f"{pipe.score(X_test, y_test):.3f}",
                f"{seconds * 1e3:.0f}",
            )


def _naive_bayes_rows(seed):
    """DPGaussianNB (private bounds) vs GaussianNB on a generated task."""
    from sklearn.datasets import make_classification
    from sklearn.model_selection import train_test_split
    from sklearn.naive_bayes import GaussianNB

    from skdp import DPGaussianNB

    X, y = make_classification(
        n_samples=25000,
        n_features=10,
        n_informative=6,
        n_classes=3,
        random_state=seed,
    )
    X = 50.0 + 10.0 * X  # an offset and a scale: the bounds are found privately
    X_train, X_test, y_train, y_test = train_test_split(
        X, y, test_size=5000, random_state=seed
    )
    baseline, base_time = _timed_fit(GaussianNB(), X_train, y_train)
    task = "3 classes n=20000 d=10, offset 50, accuracy"
    yield (
        "GaussianNB (non-private)",
        task,
        "inf",
        "",
        "",
        f"{baseline.score(X_test, y_test):.3f}",
        f"{base_time * 1e3:.0f}",
    )
    for eps in DEMO_EPSILONS:
        est = DPGaussianNB(epsilon=eps, delta=1e-5, classes=[0, 1, 2])
        est, seconds = _timed_fit(est, X_train, y_train)
        yield _dp_row(task, eps, est, est.score(X_test, y_test), seconds)


def demo(seed=0, file=sys.stdout):
    """Print the privacy/utility table of every estimator, one row as each
    fit finishes, and return the rows."""
    header = ("estimator", "task", "target ε", "spent ε", "μ", "score", "fit ms")
    widths = [max(w, len(h)) for w, h in zip(_DEMO_WIDTHS, header, strict=True)]

    def line(cells):
        return (
            "| "
            + " | ".join(str(c).ljust(w) for c, w in zip(cells, widths, strict=True))
            + " |"
        )

    print(
        "skdp demo: (ε, δ)-DP (δ=1e-5; 1e-6 for DPFedRep), each under its "
        "estimator's adjacency (one record; one comparison outcome for "
        "DPBradleyTerry; one user for DPFedRep); scores on held-out data, or "
        "against the true parameters where the row says so. About a minute on "
        "2 cores; rows print as they finish.",
        file=file,
        flush=True,
    )
    print(line(header), file=file)
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|", file=file, flush=True)
    rows = []
    for make_rows in (
        _logistic_rows,
        _sparse_glm_rows,
        _linear_regression_rows,
        _pca_rows,
        _random_features_rows,
        _bradley_terry_rows,
        _gaussian_sampler_rows,
        _fedrep_rows,
        _private_search_rows,
        _naive_bayes_rows,
        _preprocessing_rows,
    ):
        for row in make_rows(seed):
            print(line(row), file=file, flush=True)
            rows.append(row)
    return rows


#: ``python -m skdp --help``: plain text (argparse prints it as is).
DESCRIPTION = """\
skdp command line: a privacy/utility demo and empirical privacy audits.

commands:
  demo    fit every skdp estimator on generated data at several privacy
          levels; print a table next to the non-private scikit-learn model
  audit   run an empirical privacy audit of one estimator and print its
          report (does the observed privacy loss refute the claimed epsilon?)

Run "python -m skdp COMMAND --help" for a command's options."""

EPILOG = """\
examples:
  python -m skdp demo
  python -m skdp audit DPLogisticRegression --epsilon 1"""

DEMO_DESCRIPTION = """\
Fit every skdp estimator on generated data at several privacy levels
(epsilon = {eps}) and print a privacy/utility table next to the
non-private scikit-learn model.

--seed fixes the generated data only: every private fit draws fresh noise
(fits that shared a seed would share their noise), so the private scores
vary a little from run to run.""".format(eps=", ".join(f"{e:g}" for e in DEMO_EPSILONS))

DEMO_EPILOG = """\
example:
  python -m skdp demo --seed 1"""


def build_parser():
    """The ``python -m skdp`` argument parser (plain-text help)."""
    from skdp.audit._cli import AUDIT_DESCRIPTION, AUDIT_EPILOG, add_audit_arguments

    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="python -m skdp",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=raw,
    )
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    demo_parser = sub.add_parser(
        "demo",
        help="privacy/utility table on generated data",
        description=DEMO_DESCRIPTION,
        epilog=DEMO_EPILOG,
        formatter_class=raw,
    )
    demo_parser.add_argument(
        "--seed",
        type=int,
        default=0,
        help="seed of the generated data (the privacy noise is always fresh)",
    )
    add_audit_arguments(
        sub.add_parser(
            "audit",
            help="empirical privacy audit of one estimator",
            description=AUDIT_DESCRIPTION,
            epilog=AUDIT_EPILOG,
            formatter_class=raw,
        )
    )
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    if args.command == "audit":
        from skdp.audit._cli import run_audit

        return run_audit(args)
    if args.command == "demo":
        np.set_printoptions(precision=4)
        demo(seed=args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
