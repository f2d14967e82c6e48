"""Sparse, TF-IDF-like text classification data with Zipf word frequencies."""

import numpy as np
import scipy.sparse as sp
from sklearn.feature_extraction.text import TfidfTransformer
from sklearn.utils import check_random_state


def make_sparse_text_classification(
    n_samples=50000,
    n_features=20000,
    *,
    n_classes=2,
    zipf_exponent=1.1,
    informative_fraction=0.3,
    class_shift=0.35,
    doc_length=(20, 200),
    flip_y=0.2,
    random_state=None,
):
    """Bag-of-words documents as L2-normalised TF-IDF rows (CSR).

    Word ``j`` of a vocabulary of ``n_features`` words has base frequency
    ``∝ (j + 1) ** -zipf_exponent``, so most words are rare. A random
    ``informative_fraction`` of the vocabulary (rare words as often as common
    ones) has its frequency multiplied by ``exp(class_shift · u_cj)``,
    ``u_cj ~ N(0, 1)``, independently for each class ``c``. Each document draws
    a class, a length uniform in ``doc_length`` and its words i.i.d. from its
    class's distribution; a fraction ``flip_y`` of labels is then redrawn at
    random. Counts are turned into TF-IDF with scikit-learn's
    :class:`~sklearn.feature_extraction.text.TfidfTransformer` (rows of unit
    L2 norm). With the defaults a linear model reaches about 0.77 accuracy:
    a sparse, high-dimensional problem in which rare features matter.

    Parameters
    ----------
    n_samples, n_features : int
        Documents and vocabulary size.
    n_classes : int, default=2
    zipf_exponent : float, default=1.1
    informative_fraction : float, default=0.3
    class_shift : float, default=0.35
    doc_length : (int, int), default=(20, 200)
        Smallest and largest number of words per document.
    flip_y : float, default=0.2
    random_state : int, RandomState instance or None, default=None

    Returns
    -------
    X : scipy.sparse.csr_matrix of shape (n_samples, n_features)
    y : ndarray of shape (n_samples,)

    Examples
    --------
    >>> from skdp.datasets import make_sparse_text_classification
    >>> X, y = make_sparse_text_classification(1000, 500, random_state=0)
    >>> X.shape, X.format
    ((1000, 500), 'csr')
    """
    rng = check_random_state(random_state)
    base = 1.0 / np.arange(1, n_features + 1) ** zipf_exponent
    informative = rng.random_sample(n_features) < informative_fraction
    shifts = class_shift * rng.standard_normal((n_classes, n_features))
    word_probs = base * np.exp(np.where(informative, shifts, 0.0))
    word_cdf = np.cumsum(word_probs, axis=1)
    word_cdf /= word_cdf[:, -1:]

    y = rng.randint(n_classes, size=n_samples)
    lengths = rng.randint(doc_length[0], doc_length[1] + 1, size=n_samples)
    doc_of_word = np.repeat(np.arange(n_samples), lengths)
    # Inverse-CDF sampling of every word of every document at once.
    u = rng.random_sample(doc_of_word.size)
    class_of_word = y[doc_of_word]
    words = np.empty(doc_of_word.size, dtype=np.int64)
    for c in range(n_classes):  # a loop over classes, not over documents
        mask = class_of_word == c
        words[mask] = np.searchsorted(word_cdf[c], u[mask], side="right")
    np.minimum(words, n_features - 1, out=words)  # guards u rounding to 1
    counts = sp.csr_matrix(
        (np.ones(doc_of_word.size), (doc_of_word, words)),
        shape=(n_samples, n_features),
    )
    X = TfidfTransformer().fit_transform(counts).tocsr()

    flipped = rng.random_sample(n_samples) < flip_y
    y = np.where(flipped, rng.randint(n_classes, size=n_samples), y)
    return X, y
