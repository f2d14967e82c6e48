"""Pairwise comparisons under the Bradley–Terry–Luce model (Cai, Wang & Zhang, §4)."""

from numbers import Integral, Real

import numpy as np
from scipy.special import expit
from sklearn.utils import check_random_state
from sklearn.utils._param_validation import Interval, validate_params


@validate_params(
    {
        "n_items": [Interval(Integral, 2, None, closed="left")],
        "edge_probability": [Interval(Real, 0, 1, closed="right")],
        "comparisons_per_edge": [Interval(Integral, 1, None, closed="left")],
        "score_scale": [Interval(Real, 0, None, closed="left")],
        "random_state": ["random_state"],
    },
    prefer_skip_nested_validation=True,
)
def make_btl_comparisons(
    n_items=100,
    edge_probability=0.5,
    comparisons_per_edge=1,
    *,
    score_scale=1.0,
    random_state=None,
):
    """Pairwise comparisons on an Erdős–Rényi graph under the Bradley–Terry model.

    The setting of Cai, Wang & Zhang (Score Attack, §4): each pair of items
    ``i < j`` is an edge of the comparison graph independently with
    probability ``edge_probability``; each edge is compared
    ``comparisons_per_edge`` times, and item i beats item j with probability
    ``σ(θ_i − θ_j)``. The scores θ are drawn i.i.d. from
    ``N(0, score_scale²)`` and centred (the paper takes θ in [−1, 1]; normal
    scores give a realistic spread). Each comparison is listed in a random
    orientation ([i, j] or [j, i], with the outcome from the first item's
    point of view), and the rows are shuffled.

    Parameters
    ----------
    n_items : int, default=100
        Number of items (at least 2).
    edge_probability : float in (0, 1], default=0.5
        Probability p that a pair is compared.
    comparisons_per_edge : int, default=1
        Comparisons L of each compared pair; about
        ``L·p·n_items·(n_items − 1)/2`` comparisons in all.
    score_scale : float, default=1.0
        Standard deviation of the scores.
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    pairs : ndarray of shape (n_comparisons, 2)
        Item ids ``[i, j]`` (int64) of each comparison.
    y : ndarray of shape (n_comparisons,)
        1 if the first item won, else 0 (int64).
    scores : ndarray of shape (n_items,)
        The true scores θ, summing to zero.

    Notes
    -----
    Memory O(n_items²) for drawing the graph (16 bytes per candidate pair:
    about 8 MB at 1000 items) plus O(n_comparisons).

    Examples
    --------
    >>> from skdp.datasets import make_btl_comparisons
    >>> pairs, y, scores = make_btl_comparisons(
    ...     n_items=10, edge_probability=1.0, comparisons_per_edge=3, random_state=0
    ... )
    >>> pairs.shape, y.shape, scores.shape
    ((135, 2), (135,), (10,))
    >>> bool(abs(scores.sum()) < 1e-12)
    True
    """
    rng = check_random_state(random_state)
    scores = rng.normal(0.0, score_scale, n_items)
    scores -= scores.mean()
    first, second = np.triu_indices(n_items, k=1)
    compared = rng.random_sample(first.size) < edge_probability
    first = np.repeat(first[compared], comparisons_per_edge)
    second = np.repeat(second[compared], comparisons_per_edge)
    swap = rng.random_sample(first.size) < 0.5
    pairs = np.column_stack(
        [np.where(swap, second, first), np.where(swap, first, second)]
    ).astype(np.int64)
    wins = rng.random_sample(first.size) < expit(
        scores[pairs[:, 0]] - scores[pairs[:, 1]]
    )
    order = rng.permutation(first.size)
    return pairs[order], wins[order].astype(np.int64), scores


@validate_params(
    {
        "n_items": [Interval(Integral, 3, None, closed="left")],
        "n_rare": [Interval(Integral, 1, None, closed="left")],
        "n_common_comparisons": [Interval(Integral, 1, None, closed="left")],
        "max_rare_comparisons": [Interval(Integral, 0, None, closed="left")],
        "random_state": [Interval(Integral, 0, None, closed="left"), None],
    },
    prefer_skip_nested_validation=True,
)
def make_btl_rare_items(
    n_items=200,
    n_rare=10,
    n_common_comparisons=40000,
    *,
    max_rare_comparisons=3,
    random_state=None,
):
    """Bradley–Terry comparisons in which a few items are hardly ever compared.

    The design behind issue 20's item 7 (a rarely compared item's private
    score is mostly noise, and must not take the top of the ranking): the
    first ``n_items - n_rare`` items are compared ``n_common_comparisons``
    times in all, in random pairs (pairs of an item with itself dropped);
    each of the last ``n_rare`` items is compared 0 to
    ``max_rare_comparisons`` times (uniformly), each time against a random
    common item. Scores are i.i.d. ``N(0, 1)`` (not centred) and item i beats
    item j with probability ``σ(θ_i − θ_j)``.

    Parameters
    ----------
    n_items : int, default=200
        Number of items.
    n_rare : int, default=10
        Number of rarely compared items (the last ones); below ``n_items - 1``.
    n_common_comparisons : int, default=40000
        Random pairs drawn among the common items (before dropping self-pairs).
    max_rare_comparisons : int, default=3
        Each rare item is compared 0 to this many times.
    random_state : int or None, default=None
        Seed of :func:`numpy.random.default_rng` (the generator behind the
        measurements in ``docs/benchmarks.md``).

    Returns
    -------
    pairs : ndarray of shape (n_comparisons, 2)
        Item ids ``[i, j]`` (int64); the rare items' comparisons come last.
    y : ndarray of shape (n_comparisons,)
        1 if the first item won, else 0 (int64).
    scores : ndarray of shape (n_items,)
        The true scores θ.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.datasets import make_btl_rare_items
    >>> pairs, y, scores = make_btl_rare_items(random_state=0)
    >>> counts = np.bincount(pairs.ravel(), minlength=200)
    >>> bool(counts[-10:].max() <= 3 and counts[:190].min() > 300)
    True
    """
    common = n_items - n_rare
    if common < 2:
        raise ValueError(
            f"n_rare={n_rare} leaves {common} common item(s); at least 2 are needed."
        )
    rng = np.random.default_rng(random_state)
    scores = rng.standard_normal(n_items)
    pairs = rng.integers(0, common, size=(n_common_comparisons, 2))
    pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    counts = rng.integers(0, max_rare_comparisons + 1, n_rare)
    rare = np.column_stack(
        [
            np.repeat(np.arange(common, n_items), counts),
            rng.integers(0, common, counts.sum()),
        ]
    )
    pairs = np.vstack([pairs, rare]).astype(np.int64)
    won = rng.random(len(pairs)) < expit(scores[pairs[:, 0]] - scores[pairs[:, 1]])
    return pairs, won.astype(np.int64), scores
