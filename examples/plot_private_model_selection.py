"""
=====================================================
Choosing hyperparameters privately: what it costs
=====================================================

The defaults of :class:`skdp.DPLogisticRegression` assume standardised
features. When the data are far from that, other hyperparameters do better,
but choosing them by looking at the private data is itself a release. This
example compares four ways to fit a model at a budget of ε = 2, on data whose
features are 30 times smaller than the defaults expect:

* **(a)** one fit with the defaults, at ε = 2;
* **(b)** :class:`skdp.model_selection.DPRandomSearchCV` at a *total* ε = 2:
  the candidates, their training and the choice of the winner all fit in
  that budget;
* **(b')** the same search over a pipeline with a
  :class:`skdp.DPStandardScaler` in front, at the same total ε = 2;
* **(c)** the naive way: scikit-learn's
  :class:`~sklearn.model_selection.GridSearchCV` with every candidate at
  ε = 2. Its true cost, read from a :class:`skdp.PrivacyLedger`, is far
  above 2, and even that total leaves the choice of the winner uncovered.

Each is repeated ten times with different noise; the plot shows the mean and
standard deviation of the held-out accuracy.
"""

# %%
# Data
# ----
# A binary problem with 20 features, 10 of them informative. The features are
# standardised and then multiplied by 0.03, as if they had been recorded in a
# unit 30 times too large. (The scaler reads the raw data and is not private:
# it only sets up the example.)

import os
import time
import warnings

import matplotlib.pyplot as plt
import numpy as np
from scipy.stats import loguniform
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import GridSearchCV, KFold, train_test_split
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler

from skdp import DPLogisticRegression, DPStandardScaler, PrivacyLedger
from skdp.model_selection import DPRandomSearchCV

start = time.perf_counter()
X, y = make_classification(
    n_samples=5000, n_features=20, n_informative=10, class_sep=1.5, random_state=0
)
X = 0.03 * StandardScaler().fit_transform(X)
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=0.3, stratify=y, random_state=0
)
print(f"n_train = {X_train.shape[0]}, d = {X_train.shape[1]}")
print(
    "non-private LogisticRegression: held-out accuracy "
    f"{LogisticRegression().fit(X_train, y_train).score(X_test, y_test):.3f}"
)

epsilon, delta = 2.0, 1e-5
# The documentation build in CI sets SKDP_EXAMPLES_SMALL=1 to run a smaller
# version, only to check that the example works.
SMALL = os.environ.get("SKDP_EXAMPLES_SMALL") == "1"
n_repeats = 2 if SMALL else 10

# %%
# (a) One fit with the defaults
# -----------------------------
# Every private fit below leaves ``random_state=None`` and draws fresh
# noise: fits given one seed (a default fit and a search of the same
# repetition, say) would share their noise, which their releases together
# can cancel. So the numbers on this page move a little from run to run.

default_acc = []
for _ in range(n_repeats):
    clf = DPLogisticRegression(epsilon=epsilon, delta=delta, classes=[0, 1])
    default_acc.append(clf.fit(X_train, y_train).score(X_test, y_test))
print(f"(a) default fit: {clf.privacy_spent_}")

# %%
# (b) A private search at total ε = 2
# -----------------------------------
# Log-uniform distributions over the parameters that matter here: the clip
# (the noise is proportional to it, and these small features need a small
# one), the step size (small features need large coefficients) and whether to
# fit an intercept (its gradient takes up part of the clip). The number of
# candidates K is random with mean ``n_iter``; ``n_iter_shape=1`` (the
# default) makes it geometric, so that a search rarely stops after one or two
# candidates.

search_space = {
    "clip_norm": loguniform(0.05, 1.0),
    "learning_rate": loguniform(0.05, 2.0),
    "fit_intercept": [True, False],
}
search_acc = []
for _ in range(n_repeats):
    search = DPRandomSearchCV(
        DPLogisticRegression(classes=[0, 1]),
        search_space,
        n_iter=10,
        n_iter_shape=1.0,
        epsilon=epsilon,
        delta=delta,
    ).fit(X_train, y_train)
    search_acc.append(search.score(X_test, y_test))
print(f"(b) private search, whole run: {search.privacy_spent_}")
print(f"    each candidate: {search.candidate_budget_}")
print(f"    last winner: {search.best_params_}")

# %%
# (b') The same search behind a private scaler
# --------------------------------------------
# The features' scale is the real problem here. A
# :class:`skdp.DPStandardScaler` in front standardises them privately; the
# search then splits each candidate's budget equally between the scaler and
# the classifier, and its space names the classifier's parameters with the
# step's prefix.

scaled_space = {f"clf__{name}": dist for name, dist in search_space.items()}
scaled_acc = []
for _ in range(n_repeats):
    scaled_search = DPRandomSearchCV(
        Pipeline(
            [
                ("scale", DPStandardScaler()),
                ("clf", DPLogisticRegression(classes=[0, 1])),
            ]
        ),
        scaled_space,
        n_iter=10,
        epsilon=epsilon,
        delta=delta,
    ).fit(X_train, y_train)
    scaled_acc.append(scaled_search.score(X_test, y_test))
print(f"(b') private search over a DP-scaled pipeline: {scaled_search.privacy_spent_}")

# %%
# Only the winner is released: ``cv_results_`` holds its parameters and noisy
# validation score, and nothing about the other candidates (not even how many
# there were).
print(search.cv_results_)

# %%
# (c) The naive search, and what it really spends
# ------------------------------------------------
# Twelve candidates, three folds and a refit: 37 fits, each at ε = 2. A
# given record is in the training part of two of the three folds, so it is
# read by 12 × 2 + 1 = 25 of them; the ledger charges exactly those. The folds
# are assigned without looking at the labels (``KFold`` with shuffling): the
# ledger refuses stratified folds, whose assignment depends on the data. It
# also warns that the choice of the winner is not covered.

grid = {
    "clip_norm": [0.1, 0.3, 1.0],
    "learning_rate": [0.1, 1.0],
    "fit_intercept": [True, False],
}
naive_acc = []
for _ in range(n_repeats):
    naive = GridSearchCV(
        DPLogisticRegression(epsilon=epsilon, delta=delta, classes=[0, 1]),
        grid,
        cv=KFold(n_splits=3, shuffle=True, random_state=0),
    ).fit(X_train, y_train)
    naive_acc.append(naive.score(X_test, y_test))

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    naive_total = PrivacyLedger(delta=delta).record(naive).total()
print(f"(c) naive GridSearchCV, every fit at ε = {epsilon:g}: true total {naive_total}")
for warning in caught:
    print(f"    {warning.category.__name__}: {warning.message}")

# %%
# Accuracy and cost side by side
# ------------------------------

labels = [
    f"(a) default fit\nε = {clf.privacy_spent_.epsilon:.2f}",
    f"(b) DPRandomSearchCV\nε = {search.privacy_spent_.epsilon:.2f}",
    f"(b') same, DP-scaled\nε = {scaled_search.privacy_spent_.epsilon:.2f}",
    f"(c) naive GridSearchCV\nε ≥ {naive_total.epsilon:.1f} (+ selection)",
]
results = [default_acc, search_acc, scaled_acc, naive_acc]
for label, acc in zip(labels, results, strict=True):
    print(f"{label.replace(chr(10), ', ')}: {np.mean(acc):.3f} ± {np.std(acc):.3f}")

fig, ax = plt.subplots(figsize=(7.6, 4.2))
positions = np.arange(len(results))
ax.bar(
    positions,
    [np.mean(a) for a in results],
    yerr=[np.std(a) for a in results],
    capsize=4,
    color=["tab:gray", "tab:blue", "tab:cyan", "tab:red"],
)
ax.set_xticks(positions, labels)
ax.set_ylim(0.5, 0.9)
ax.set_ylabel(f"held-out accuracy (mean ± std, {n_repeats} runs)")
ax.set_title("Small-scale features: hyperparameters at a budget of ε = 2")
fig.tight_layout()
plt.show()
print(f"run time: {time.perf_counter() - start:.1f} s")

# %%
# The default fit is poor on these data: its clip and step size suit
# standardised features. The private search closes part of the gap within
# the same ε = 2, although each of its candidates gets a smaller budget
# (``candidate_budget_``: ε ≈ 0.85) and is trained on 80% of the records.
# Its results vary more from run to run than the means suggest: the
# number of candidates is random, and a search that happens to draw few of
# them releases the best of few (see the benchmark's spread). Behind a
# private scaler (b'), the search fixes the cause rather than working around
# it, and was the most accurate of the four in our runs (0.82 against 0.81
# for the naive search). The naive search spends far more: its fits compose
# to ε ≈ 13, and choosing its winner from scores computed on the raw records
# is not covered by any ledger entry.
#
# The search does not help everywhere: when the defaults already suit the
# data, it gives up a little accuracy for the budget it spends exploring, and
# when no setting of the hyperparameters fixes the problem (uncentred
# features, ``X * 50 + 300``) the search over the bare estimator loses to one
# default fit; behind a :class:`skdp.DPStandardScaler` it wins there too.
# See :ref:`model_selection` and the benchmark in :doc:`../benchmarks`.
