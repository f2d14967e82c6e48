"""Pairs of item ids → Bradley–Terry design rows ``e_i − e_j``."""

from numbers import Integral

import numpy as np
import scipy.sparse as sp
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.utils._param_validation import Interval, validate_params
from sklearn.utils.validation import check_array, validate_data

from .._base import data_parameters_unquoted, silent_release


def _refuse_names(pairs):
    """``pairs``, with ids written as text read as numbers; item names
    (strings, objects) refused with a message that says what to give
    instead (scikit-learn's said only "dtype='numeric' is not compatible
    with arrays of bytes/strings"; review). Never quotes a value."""
    if sp.issparse(pairs) or np.asarray(pairs).dtype.kind not in "OUSV":
        return pairs  # (a sparse matrix: scikit-learn's own refusal)
    try:
        if hasattr(pairs, "columns"):  # a DataFrame stays one: its names
            return pairs.astype(np.float64)  # (nullable Int64 frames; review)
        return np.asarray(pairs, dtype=np.float64)
    except (TypeError, ValueError):
        raise ValueError(
            "pairs holds item names or other non-numbers (not shown: they may "
            "be private); give integer ids in [0, n_items), e.g. the positions "
            "of the names in a public list of the items."
        ) from None


def _check_pairs(pairs, n_items):
    """Validated ``(m, 2)`` int64 array of item ids in ``[0, n_items)``.

    Error messages state what is wrong but never quote an id: under
    ``privacy_unit="comparison"`` the pairs themselves are private.
    """
    pairs = check_array(_refuse_names(pairs), dtype="numeric", input_name="pairs")
    if pairs.shape[1] != 2:
        raise ValueError(
            "pairs must have shape (n_comparisons, 2): one row [i, j] per "
            f"comparison; got {pairs.shape[1]} columns."
        )
    if not np.issubdtype(pairs.dtype, np.integer):
        if not np.array_equal(pairs, np.round(pairs)):
            raise ValueError("Item ids must be integers; pairs holds non-integers.")
    if (pairs < 0).any() or (pairs >= n_items).any():
        raise ValueError(
            f"Item ids must lie in [0, n_items) = [0, {n_items}); pairs holds ids "
            "outside this range."
        )
    pairs = pairs.astype(np.int64)
    if (pairs[:, 0] == pairs[:, 1]).any():
        raise ValueError(
            "A pair compares an item with itself (i == j); every comparison "
            "must involve two different items."
        )
    return pairs


@data_parameters_unquoted("pairs")
@validate_params(
    {"pairs": ["array-like"], "n_items": [Interval(Integral, 1, None, closed="left")]},
    prefer_skip_nested_validation=True,
)
@silent_release  # the pairs may be private: no id in an error
def pairs_to_design(pairs, n_items):
    """Comparison design matrix: row ``r`` is ``e_i − e_j`` for pair ``[i, j]``.

    This is the input :class:`~skdp.ranking.DPBradleyTerry` expects: with
    scores θ, the Bradley–Terry model says that the first item of row r
    wins with probability ``σ(x_r · θ) = σ(θ_i − θ_j)`` (Cai, Wang & Zhang,
    Score Attack, §4, the design of the likelihood above (4.4)).

    Parameters
    ----------
    pairs : array-like of shape (n_comparisons, 2)
        Integer item ids ``[i, j]``, each in ``[0, n_items)``, ``i != j``.
        Repeated pairs are allowed (each row is one comparison).
    n_items : int
        Number of items (columns of the design), fixed in advance: it is not
        read from ``pairs``.

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_comparisons, n_items)
        ``+1`` in column ``i``, ``−1`` in column ``j``; float64, canonical
        CSR (sorted indices, no duplicates).

    Raises
    ------
    ValueError
        If ``pairs`` is not of shape ``(m, 2)``, holds non-integers, ids
        outside ``[0, n_items)`` or a pair ``[i, i]``. The message never
        quotes an id.

    Examples
    --------
    >>> from skdp.ranking import pairs_to_design
    >>> pairs_to_design([[0, 2], [1, 0]], n_items=3).toarray()
    array([[ 1.,  0., -1.],
           [-1.,  1.,  0.]])
    """
    pairs = _check_pairs(pairs, n_items)
    m = pairs.shape[0]
    design = sp.csr_matrix(
        (
            np.tile([1.0, -1.0], m),
            pairs.ravel(),
            np.arange(0, 2 * m + 1, 2, dtype=np.int64),
        ),
        shape=(m, n_items),
    )
    design.sort_indices()  # i != j, so there are no duplicates to sum
    return design


class PairsEncoder(TransformerMixin, BaseEstimator):
    """Turn ``(n_comparisons, 2)`` arrays of item ids into Bradley–Terry design rows.

    A stateless transformer around :func:`pairs_to_design`, so that a
    pipeline takes pairs directly::

        make_pipeline(PairsEncoder(n_items), DPBradleyTerry())

    Parameters
    ----------
    n_items : int
        Number of items, fixed in advance (never read from the data: under
        ``privacy_unit="comparison"`` the largest id present would be
        private).

    Attributes
    ----------
    n_features_in_ : int
        Always 2 (the two item ids of a comparison).

    See Also
    --------
    pairs_to_design : The function this transformer applies.
    DPBradleyTerry : The estimator that takes its output.

    Examples
    --------
    >>> from skdp.ranking import PairsEncoder
    >>> PairsEncoder(n_items=3).fit_transform([[0, 1], [2, 1]]).toarray()
    array([[ 1., -1.,  0.],
           [ 0., -1.,  1.]])
    """

    # The privacy ledger's protocol (skdp._ledger.READS_ONLY_SHAPE): fit
    # reads only the shape and checks ids against the n_items parameter.
    __skdp_reads_only_shape__ = True

    _parameter_constraints = {"n_items": [Interval(Integral, 1, None, closed="left")]}

    def __init__(self, n_items):
        self.n_items = n_items

    @_fit_context(prefer_skip_nested_validation=True)
    @silent_release  # the pairs may be private: no id in an error
    def fit(self, X, y=None):
        """Check ``X`` (nothing is learnt).

        Parameters
        ----------
        X : array-like of shape (n_comparisons, 2)
            Item ids.
        y : None
            Ignored.

        Returns
        -------
        self : PairsEncoder
        """
        X = validate_data(self, _refuse_names(X), dtype="numeric")
        _check_pairs(X, self.n_items)
        return self

    @silent_release
    def transform(self, X):
        """Design rows ``e_i − e_j``, one per pair.

        Parameters
        ----------
        X : array-like of shape (n_comparisons, 2)
            Item ids in ``[0, n_items)``.

        Returns
        -------
        X_design : scipy.sparse.csr_matrix of shape (n_comparisons, n_items)
        """
        X = validate_data(self, _refuse_names(X), dtype="numeric", reset=False)
        return pairs_to_design(X, self.n_items)

    def get_feature_names_out(self, input_features=None):
        """``item0, …, item{n_items-1}``: one column per item."""
        return np.char.add("item", np.arange(self.n_items).astype(str)).astype(object)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.requires_fit = False
        return tags
