"""
========================================================
A private pipeline, end to end, and what it really spent
========================================================

A pipeline releases every fitted step. A plain
:class:`~sklearn.preprocessing.StandardScaler` in front of a private model
reads the raw means and variances of the training data and ships them with
the model: the pipeline is not private, whatever the model's ε.
:class:`skdp.PrivacyLedger` spots this and names the step; replacing it with
:class:`skdp.preprocessing.DPStandardScaler` makes the whole pipeline
private, and the ledger then reports its exact total. Finally, a grid search
over the same pipeline shows how many fits a search really pays for.
"""

# %%
# Data with raw, badly scaled features
# ------------------------------------
# Every feature is multiplied by 10^U(-2, 2) and shifted by U(-100, 100), so
# a pipeline has to standardise it. Seeds fix the data, the train/test split
# and the folds below, never the privacy noise: every DP step keeps
# ``random_state=None``, so each fit draws fresh noise and the accuracies
# printed below vary a little from run to run. (A seeded DP step would share
# its noise with every clone a search fits, and the ledger would refuse it.)

import math
import warnings

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_classification
from sklearn.model_selection import GridSearchCV, KFold, train_test_split
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from skdp import DPLogisticRegression, PrivacyLedger
from skdp.accounting import epsilon_from_mu, mu_from_epsilon
from skdp.preprocessing import DPStandardScaler

X, y = make_classification(
    n_samples=30000, n_features=10, n_informative=5, random_state=0
)
rng = np.random.default_rng(0)
X = X * 10 ** rng.uniform(-2, 2, X.shape[1]) + rng.uniform(-100, 100, X.shape[1])
X_train, X_test, y_train, y_test = train_test_split(
    X, y, test_size=5000, random_state=0
)
delta = 1e-6

# %%
# The leaking pipeline
# --------------------
# The model is private at ε = 1, but the scaler is not. The ledger warns and
# names the step; its total covers only the model.

leaky = make_pipeline(
    StandardScaler(),
    DPLogisticRegression(epsilon=1.0, delta=delta, classes=[0, 1]),
).fit(X_train, y_train)

with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    leaky_total = PrivacyLedger(delta=delta).record(leaky).total()
for w in caught:
    print(f"{w.category.__name__}: {w.message}\n")
print(f"accuracy {leaky.score(X_test, y_test):.3f}; covered: {leaky_total}")

# %%
# The private replacement
# -----------------------
# Split the total budget ε = 1 in GDP terms, a quarter of μ² to the scaler,
# so that the two fits compose exactly to ε = 1. The scaler finds its own
# clipping bounds privately (``bounds=None``).

mu = mu_from_epsilon(1.0, delta)
eps_scaler = epsilon_from_mu(math.sqrt(0.25) * mu, delta)
eps_model = epsilon_from_mu(math.sqrt(0.75) * mu, delta)
private = make_pipeline(
    DPStandardScaler(epsilon=eps_scaler, delta=delta),
    DPLogisticRegression(epsilon=eps_model, delta=delta, classes=[0, 1]),
).fit(X_train, y_train)

ledger = PrivacyLedger(delta=delta).record(private)  # silent: nothing leaks
print(f"scaler epsilon {eps_scaler:.3f}, model epsilon {eps_model:.3f}")
print(f"accuracy {private.score(X_test, y_test):.3f}; total: {ledger.total()}")

# %%
# What a grid search really costs
# -------------------------------
# Three candidates, 3 folds: every record is in 2 of the 3 training folds, so
# it is used by 2 x 3 candidate fits, plus the refit on all the data, and each
# fit releases both steps. The ledger counts them (each candidate from
# ``cv_results_["params"]``) and warns that choosing the best by private
# validation scores is not covered
# (:class:`~skdp.model_selection.DPRandomSearchCV` makes that choice private).
#
# The folds must not depend on the data. ``cv=3`` on a classifier means
# ``StratifiedKFold``, which assigns records to folds by their labels: changing
# one record's label can move other records between folds, so the ledger
# refuses it. An explicit ``KFold`` depends only on n and its own seed.

search = GridSearchCV(
    private,
    {"dplogisticregression__clip_norm": [0.5, 1.0, 2.0]},
    cv=KFold(n_splits=3, shuffle=True, random_state=0),
).fit(X_train, y_train)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    search_ledger = PrivacyLedger(delta=delta).record(search)
print(f"{len(search_ledger)} releases: {search_ledger.total()}")
print(caught[-1].message)

# %%
# The three totals side by side: the leaking pipeline's ε covers only part of
# what it released; the search costs several times one fit.

labels = ["leaking pipeline\n(covered part only)", "private pipeline", "grid search"]
totals = [leaky_total.epsilon, ledger.total().epsilon, search_ledger.total().epsilon]
fig, ax = plt.subplots(figsize=(6, 3))
ax.bar(labels, totals, color=["tab:red", "tab:green", "tab:orange"])
ax.set_ylabel(f"total epsilon at delta={delta:g}")
fig.tight_layout()
plt.show()
