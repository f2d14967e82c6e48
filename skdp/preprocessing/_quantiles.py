"""Private per-feature bounds from noisy histograms (Gaussian mechanism only).

:func:`private_bounds` finds, for every feature at once, an interval that
holds the bulk of the data, reading the data only through Gaussian-noised
histograms:

1. a first round that finds where the column lies, in one of two ways
   (``first_round``). The *extent* search (naive Bayes, the quantile
   transformers' grids, the sampler's ball) counts ``|x|`` on a public
   logarithmic grid over ``[0, data_range]`` (``_PER_DECADE`` bins per
   decade over ``_DECADES`` decades, plus ``[0, data_range·1e-12]``) and
   starts the zoom rounds from ``[-M, M]`` around the magnitude ``M`` of the
   bulk, which keeps a column's extent (0 included, for a nonnegative
   column). The *bulk* search (:class:`DPStandardScaler`, for a mean and a
   variance) reads the one-histogram schedule's signed grid
   (:func:`signed_grid`: bins a factor sqrt(10) wide on each sign, and a
   zero bin) with :func:`located_bounds`, which finds the bulk even where it
   is spread over a decade or over both signs (the bins read folded), with
   ``_FIRST_SHARE`` of the rounds' budget: a failed first round leaves the
   zoom rounds a range they cannot narrow enough, a failed zoom round only
   keeps its interval. A column the first round does not see starts from the
   public range ``[-data_range, data_range]``;
2. ``_ZOOM_ROUNDS`` histograms with ``_ZOOM_BINS`` equal bins on the
   interval found by the round before, each of which narrows it to the bins
   that hold the bulk. A feature whose bulk fitted in ``_NARROW_RUN`` bins
   or fewer is narrower than the grid: its next round uses ``_FINE_BINS``
   equal bins (with a higher signal threshold, ``_FINE_SIGNAL_SDS``, for the
   larger number of empty bins), so that a large offset with a small spread
   (10⁵ and 10⁻³: a ratio of 10⁸) is resolved in the same number of rounds
   instead of ending ~64³ times coarser than the offset. The choice reads
   only earlier noisy counts.

In every zoom round the bulk is a run of bins grown greedily from the bin
with the largest noisy count, one neighbour at a time (the larger first),
until its noisy count reaches ``(1 - 2·_TAIL)·n`` less one noise standard
deviation of the run's sum. Only sums over the
run are used, never sums over the many empty bins far from the data, whose
noise would swamp small data sets. If no bin stands out of the noise, the
round keeps its whole interval. Values outside the current interval are
counted in its end bins, so every round's tail mass is measured against the
whole data set and the rounds do not compound the clipping. The values
below and above the interval are counted apart (two more bins of the same
release) and added to the end bins for the run; more than both tails
together outside (``2·_TAIL·n``, plus ``_END_SDS`` noise
standard deviations) shows that an earlier round cut off real mass (a greedy
run can close on a spike with noise bins before it reaches the values
beyond it: a discrete, zero-inflated column), and that side returns to the
interval the earlier round narrowed (the public range
``[-data_range, data_range]`` for the first round's interval). The final
interval is widened by ``_PAD`` of its width on each side, which clips less
of the tails at a small cost in resolution.

A point mass (the zeros of a zero-inflated column) needs one more rule. Its
bin holds most of the data with nothing beside it, at every resolution, and
a run grown from it one neighbour at a time adds only empty bins: their
noise, a random walk (biased upwards by taking the larger of two neighbours),
sooner or later crosses the falling threshold ``target - sd·sqrt(b - a)``
and closes the run far short of the values beyond the spike. The rounds then
zoom into the spike, and a scale read from data clipped to it collapses
(digits at ratio 43: 5-10 of 64 scales below 0.1). The end-bin check above
catches such a loss only in the next round, only beyond the noise of one
count, and never after the last round. So a largest bin that visibly falls
short of the target (by more than ``_SHORT_SDS`` noise standard deviations:
n is public, so the rest of the data is elsewhere) and whose neighbours each
hold less than ``_BESIDE`` of it is an *isolated spike*
(:func:`isolated_spikes`): its run is grown over the bins that stand out of
the noise only (the round's signal threshold), skipping the empty bins
between, whose noise is never summed (:func:`_sparse_run`); if those bins
cannot reach the target (the rest is spread too thinly to be seen), the round
keeps its whole interval. The largest bin of a continuous distribution has
neighbours of comparable size and is grown as before. Every choice reads
only the round's noisy counts, n and public constants.

The constants were chosen on Gaussian features with offsets and scales from
1e-2 to 5e4, n from 1000 to 50000, d = 5 and 30, at ε = 1.

Every round is one joint Gaussian release of the ``d x bins`` count matrix
(``bins`` the largest grid of the round; the columns beyond a feature's own
grid hold no records, and their noise is never read). Replacing one record
moves it from one bin to another in every feature: two counts per feature
change by one, so the L2 sensitivity is ``sqrt(2 d)`` under replace-one
adjacency, whatever the data and whatever the grid sizes. Each round's grid depends on
the data only through earlier noisy releases, so the rounds compose
adaptively, and the bounds are post-processing. Nothing else (no count of
clipped values, no minimum or maximum) is read or kept.
"""

import math

import numpy as np

from .._base import sum_over_rows
from ..mechanisms import gaussian_mechanism

#: Decades of magnitude covered by each sign of the signed grid: its zero bin
#: is ``[-data_range·1e-12, data_range·1e-12]``.
_DECADES = 12
#: Bins per decade of the log grid of ``|x|`` (edges a factor 10**0.25 ≈ 1.78
#: apart), the first round of the extent search.
_PER_DECADE = 4
#: Equal-width bins of each zoom round.
_ZOOM_BINS = 64
#: Equal-width bins of a zoom round that follows a round whose bulk fitted in
#: ``_NARROW_RUN`` bins or fewer: the data are narrower than the grid, and a
#: finer one keeps the rounds from running out of resolution before they
#: reach the spread of a feature with a large offset (issue 20, item 11).
_FINE_BINS = 4096
_NARROW_RUN = 2
#: Signal threshold (in noise standard deviations) of a fine round: with
#: 4096 empty bins, the largest noise exceeds 5.5 with probability 8e-5.
_FINE_SIGNAL_SDS = 5.5
#: Zoom rounds after the log-grid round.
_ZOOM_ROUNDS = 3
#: Tail mass the bounds may leave out on each side.
_TAIL = 0.02
#: The run of bins stops growing once its noisy count is within this many
#: noise standard deviations (of the run's sum) of its target.
_MARGIN_SDS = 1.0
#: A round shrinks its interval only if its largest noisy count exceeds this
#: many noise standard deviations (an empty bin does with probability 3e-5).
_SIGNAL_SDS = 4.0

#: A zoom round's end bin (which also counts everything outside its
#: interval) holding more than ``2·_TAIL·n`` plus this many noise standard
#: deviations returns its side to the wider interval of the round before:
#: noise alone does so with probability below 1.3e-3 per side and round.
_END_SDS = 3.0

#: A bin that stands out of the noise and falls visibly short of the run's
#: target is an isolated spike if each of its neighbours holds less than
#: this fraction of it (see :func:`isolated_spikes`). Visibly short: by more
#: than ``_SHORT_SDS`` noise standard deviations.
_BESIDE = 0.25
_SHORT_SDS = 2.0

#: The final interval is widened by this fraction of its width on each side.
_PAD = 0.25

#: Mass beyond the bounds, in bins read as data (:func:`read_bins`), from
#: which the bulk search's final widening keeps a rare value (the 1s of an
#: indicator) instead of clipping it (:func:`_widen_to_heavy_tails`).
_RARE = 0.005
#: ... beside a spike: an interval no wider than this share of its reach
#: (or than ten zero bins, for a spike at 0).
_SPIKE_WIDTH = 1e-3

#: Gaussian releases spent on the bounds.
N_BOUND_RELEASES = 1 + _ZOOM_ROUNDS
#: Share of the bounds' μ² spent on the first round (the located histogram);
#: the zoom rounds share the rest equally. At a public ratio n·μ/sqrt(2d) of
#: 32, equal shares left a column spread over a decade, or centred on 0,
#: unseen by round 1 in 8-24% of fits, and the zoom rounds cannot come back
#: from the public range (docs/benchmarks.md, "the search's first round").
_FIRST_SHARE = 0.5


def magnitude_grid(data_range):
    """Edges of the public grid of ``|x|``: 0, then ``data_range·10**(-k/4)``."""
    k = np.arange(_DECADES * _PER_DECADE, -1, -1)
    return np.concatenate([[0.0], data_range * 10.0 ** (-k / _PER_DECADE)])


def histogram_sensitivity(n_features):
    """L2 sensitivity ``sqrt(2 d)`` of the ``d x bins`` count matrix (replace one)."""
    return math.sqrt(2.0 * n_features)


def bin_counts(bins, n_bins):
    """Counts, shape ``(d, n_bins)``, from bin indices of shape ``(n, d)``."""
    d = bins.shape[1]
    flat = bins + n_bins * np.arange(d)
    return np.bincount(flat.ravel(), minlength=d * n_bins).reshape(d, n_bins)


def bulk_window(noisy_counts, target, noise_std, signal_sds=None):
    """Bins ``[a, b)`` per feature holding the bulk of the data (see module doc).

    Grown from the largest noisy count, one neighbour at a time (the larger
    first), until the run's noisy count is at least
    ``target - _MARGIN_SDS · noise_std · sqrt(b - a)``. A feature whose
    largest count does not exceed ``signal_sds · noise_std`` (default
    ``_SIGNAL_SDS``) keeps the whole grid. A feature whose largest bin is an
    isolated spike (:func:`isolated_spikes`) grows its run over the bins
    that stand out of the noise only (:func:`_sparse_run`). Two neighbours
    whose sum exceeds ``signal_sds`` standard deviations of its noise
    (``sqrt(2)·noise_std``) are signal too, when no bin is alone: a bulk
    that a bin edge cuts in two, and they start the run. Vectorised over
    features; the loops are over bins and over isolated features.
    """
    signal_sds = _SIGNAL_SDS if signal_sds is None else signal_sds
    a, b = _grow_run(noisy_counts, target, noise_std, signal_sds)
    isolated = isolated_spikes(noisy_counts, target, noise_std, signal_sds)
    targets = np.broadcast_to(target, isolated.shape)  # one per feature, or shared
    for j in np.flatnonzero(isolated):  # a loop over features, never over samples
        a[j], b[j] = _sparse_run(noisy_counts[j], targets[j], noise_std, signal_sds)
    return a, b


def isolated_spikes(noisy_counts, target, noise_std, signal_sds):
    """Features whose largest bin is a spike with nothing beside it.

    The largest noisy count stands out of the noise (``signal_sds``), falls
    short of the run's target by more than ``_SHORT_SDS`` noise standard
    deviations (it visibly does not hold the bulk: ``n`` is public, so the
    rest of the data is elsewhere), and each of its neighbours holds less
    than ``_BESIDE`` of it. A point mass (the zeros of a zero-inflated
    column) looks so at every resolution; the largest bin of a continuous
    distribution has neighbours of comparable size. Post-processing of one
    noisy count matrix.
    """
    d, n_bins = noisy_counts.shape
    rows = np.arange(d)
    a = np.argmax(noisy_counts, axis=1)
    peak = noisy_counts[rows, a]
    left = np.where(a > 0, noisy_counts[rows, np.maximum(a - 1, 0)], -np.inf)
    right = np.where(
        a < n_bins - 1, noisy_counts[rows, np.minimum(a + 1, n_bins - 1)], -np.inf
    )
    return (
        (peak > signal_sds * noise_std)
        & (peak < target - _SHORT_SDS * noise_std)
        & (np.maximum(left, right) < _BESIDE * peak)
    )


def _sparse_run(noisy_counts, target, noise_std, signal_sds):
    """Run ``[a, b)`` of one feature over its bins that stand out of the noise.

    The bins above ``signal_sds`` noise standard deviations, in order, are
    grown into a run as by :func:`_grow_run` (neighbours in that list, the
    empty bins between them skipped: never summed, so their noise cannot
    close the run). If their run reaches its target, the interval spans it;
    if not (the rest of the data is spread too thinly to stand out), the
    whole grid is kept.
    """
    n_bins = noisy_counts.size
    signal = np.flatnonzero(noisy_counts > signal_sds * noise_std)
    counts = noisy_counts[signal][None, :]
    a, b = _grow_run(counts, target, noise_std, signal_sds)
    mass = counts[0, a[0] : b[0]].sum()
    if mass < target - _MARGIN_SDS * noise_std * math.sqrt(b[0] - a[0]):
        return 0, n_bins
    return signal[a[0]], signal[b[0] - 1] + 1


def _grow_run(noisy_counts, target, noise_std, signal_sds):
    """The greedy run of :func:`bulk_window`, on every feature's bins as given."""
    d, n_bins = noisy_counts.shape
    rows = np.arange(d)
    a = np.argmax(noisy_counts, axis=1)
    b = a + 1
    mass = noisy_counts[rows, a].astype(float)
    no_signal = mass <= signal_sds * noise_std
    if n_bins > 1:
        # A bulk that a bin edge cuts in two (a column centred on 0 under the
        # middle edge of a symmetric interval) can leave both halves below
        # the threshold: two neighbours together, whose noise std is sqrt(2)
        # times a bin's, are tested at the same number of their own sds.
        pairs = noisy_counts[:, :-1] + noisy_counts[:, 1:]
        p = np.argmax(pairs, axis=1)
        pair = no_signal & (pairs[rows, p] > signal_sds * math.sqrt(2.0) * noise_std)
        a, b = np.where(pair, p, a), np.where(pair, p + 2, b)
        mass = np.where(pair, pairs[rows, p], mass)
        no_signal &= ~pair
    done = no_signal | (mass >= target - _MARGIN_SDS * noise_std * np.sqrt(b - a))
    for _ in range(n_bins - 1):  # a loop over bins, never over samples
        if done.all():
            break
        left = np.where(a > 0, noisy_counts[rows, np.maximum(a - 1, 0)], -np.inf)
        right = np.where(
            b < n_bins, noisy_counts[rows, np.minimum(b, n_bins - 1)], -np.inf
        )
        go_left = left >= right
        grow = ~done
        a = np.where(grow & go_left, a - 1, a)
        b = np.where(grow & ~go_left, b + 1, b)
        mass = mass + np.where(grow, np.where(go_left, left, right), 0.0)
        margin = _MARGIN_SDS * noise_std * np.sqrt(b - a)
        done |= (mass >= target - margin) | ((a == 0) & (b == n_bins))
    a = np.where(no_signal, 0, a)
    b = np.where(no_signal, n_bins, b)
    return a, b


def private_bounds(X, *, data_range, noise_multiplier, rng, first_round="extent"):
    """Per-feature ``(lower, upper)``, ``lower < upper``, from noisy histograms.

    Parameters
    ----------
    X : ndarray or Dask array of shape (n_samples, n_features)
        Finite data. A Dask array is read by one reduction per round (the
        counts of each chunk, summed); the noise is drawn here, once per
        round.
    data_range : float
        Public range: the bounds lie in ``[-data_range, data_range]``.
    noise_multiplier : float
        ``z``: the ``N_BOUND_RELEASES`` rounds together are
        ``sqrt(N_BOUND_RELEASES) / z``-GDP (replace one), as that many
        releases of noise multiplier ``z`` would be.
    rng : numpy.random.Generator
    first_round : {"extent", "bulk"}, default="extent"
        ``"extent"``: round 1 is the histogram of ``|x|`` on the log grid
        (:func:`magnitude_grid`) and the zoom rounds start from the
        symmetric ``[-M, M]`` it finds, every round with multiplier ``z``:
        bounds that keep a column's extent (naive Bayes, the quantile
        transformers' grids, the sampler's ball). ``"bulk"``: round 1 is
        the located histogram (:func:`located_bounds`) with ``_FIRST_SHARE``
        of the rounds' μ² (:func:`round_multipliers`): bounds around the
        bulk for a mean and a variance (:class:`DPStandardScaler`), which
        see a column spread over a decade or centred on 0 where no bin of
        ``|x|`` stands out. A zoom round that finds more than both tails
        beyond a side returns it to the interval of the round before; after
        the located round, to the extent that round read on its folded bins
        (the public range if it read none).

    Returns
    -------
    lower, upper : ndarray of shape (n_features,)
    """
    if first_round not in ("extent", "bulk"):
        raise ValueError(
            f"first_round must be 'extent' or 'bulk'; got {first_round!r}."
        )
    n, d = X.shape
    sensitivity = histogram_sensitivity(d)
    if first_round == "bulk":
        z_first, z_zoom = round_multipliers(noise_multiplier)
    else:
        z_first = z_zoom = noise_multiplier
    noise_std = z_zoom * sensitivity

    def release(counts):
        return gaussian_mechanism(
            counts, sensitivity=sensitivity, noise_multiplier=z_zoom, rng=rng
        )

    # The interval each side returns to if mass turns up beyond it (below).
    wider_lower = np.full(d, -float(data_range))
    wider_upper = np.full(d, float(data_range))
    if first_round == "bulk":
        lower, upper, widen, reach = _located_first_round(X, data_range, z_first, rng)
        # A side the located round cut short returns to the extent it read,
        # not to the public range, from which the zoom rounds left cannot
        # come back (a column centred on 0 read on one sign only).
        wider_lower = np.minimum(-reach, lower)
        wider_upper = np.maximum(reach, upper)
    else:
        lower, upper, widen = _magnitude_first_round(X, data_range, z_first, rng)
    fine = np.zeros(d, dtype=bool)  # which features get the fine grid
    was_fine = np.zeros(d, dtype=bool)  # which had it in the round before
    for _ in range(_ZOOM_ROUNDS):  # a loop over rounds, never over samples
        width = upper - lower
        n_bins = np.where(fine, _FINE_BINS, _ZOOM_BINS)
        # One joint release of a d x max-bins count matrix: a record still
        # moves one count per feature (sensitivity sqrt(2 d)); the columns a
        # coarse feature does not use hold pure noise and are never read.
        counts = sum_over_rows(
            _zoom_counts,
            X,
            (d, int(n_bins.max()) + 2),
            data_range=data_range,
            lower=lower,
            width=width,
            n_bins=n_bins,
        )
        noisy = release(counts)
        # Post-processing from here on. Column 0 counts the values below the
        # interval, column n_bins + 1 those above it; the run sees them in
        # the end bins, so that its target is measured against all n.
        rows = np.arange(d)
        below, above = noisy[:, 0], noisy[rows, n_bins + 1]
        grid = noisy[:, 1:].copy()
        grid[:, 0] += below
        grid[rows, n_bins - 1] += above
        lo = np.zeros(d, dtype=np.intp)
        hi = n_bins.copy()
        for mode, size, signal_sds in (
            (~fine, _ZOOM_BINS, _SIGNAL_SDS),
            (fine, _FINE_BINS, _FINE_SIGNAL_SDS),
        ):
            if mode.any():
                lo[mode], hi[mode] = bulk_window(
                    grid[mode, :size],
                    (1.0 - 2.0 * _TAIL) * n,
                    noise_std,
                    signal_sds=signal_sds,
                )
        # The new interval's edges, and whether the next round needs the fine
        # grid (a narrow run).
        new_upper = np.where(hi == n_bins, upper, lower + width * (hi / n_bins))
        new_lower = lower + width * (lo / n_bins)
        # More than both tails the bounds may leave out (2·_TAIL·n: a run may
        # stop short on either side) beyond the interval, past the noise: an
        # earlier round cut off real mass. Its greedy run can close on a
        # spike (a discrete, zero-inflated column) with noise bins before it
        # reaches the values beyond, or the spike's noisy count alone can
        # pass for the target. Return that side to the interval the earlier
        # round narrowed, which held the mass: later rounds never see it
        # again otherwise.
        outside = 2.0 * _TAIL * n + _END_SDS * noise_std
        lost_low, lost_high = below > outside, above > outside
        # After a fine round, whose bins hold fewer records than the noise,
        # the greedy run can close well short of the target (it picks the
        # noisier neighbour): what it cut off lies inside the fine round's
        # interval (at most two bins of the round before). A side goes back
        # by twice the interval's width, within that: back to the whole of
        # it, 20 times wider, the scale came out 17-27% off in 2 of 23000
        # fits (docs/benchmarks.md, "the tail of DPStandardScaler's scale").
        reach = 2.0 * width
        back_lower = np.where(
            was_fine, np.maximum(wider_lower, lower - reach), wider_lower
        )
        back_upper = np.where(
            was_fine, np.minimum(wider_upper, upper + reach), wider_upper
        )
        new_lower = np.where(lost_low, back_lower, new_lower)
        new_upper = np.where(lost_high, back_upper, new_upper)
        wider_lower, wider_upper = lower, upper
        was_fine = fine
        lower = new_lower
        # Rounding must never collapse an interval.
        upper = np.maximum(new_upper, np.nextafter(lower, np.inf))
        fine = ((hi - lo) <= _NARROW_RUN) & ~(lost_low | lost_high)
    # Widen the final interval a little (post-processing): less clipping of
    # the tails, at a small cost in resolution.
    pad = _PAD * (upper - lower)
    return widen(lower - pad, upper + pad)


def _magnitude_first_round(X, data_range, noise_multiplier, rng):
    """Round 1 of the extent search: ``[-M, M]`` from the noisy histogram of
    ``|x|``, and the final widening to a heavy tail it saw (a function of the
    final interval)."""
    n, d = X.shape
    sensitivity = histogram_sensitivity(d)
    edges = magnitude_grid(data_range)
    counts = sum_over_rows(
        _magnitude_counts, X, (d, edges.size - 1), edges=edges, data_range=data_range
    )
    magnitudes = gaussian_mechanism(
        counts, sensitivity=sensitivity, noise_multiplier=noise_multiplier, rng=rng
    )
    noise_std = noise_multiplier * sensitivity
    target = (1.0 - _TAIL) * n
    _, hi = bulk_window(magnitudes, target, noise_std)
    # A spike at |x| = 0 beside the bulk (5-15% exact zeros): the run had to
    # reach it across decades of empty bins, whose noise kept it from
    # closing, and M came out anywhere up to the public range (a column in
    # [0.09, 0.85] with 13% zeros: in 10 of 20 fits; review). Zeros never
    # extend the extent: the run then covers the rest of the target on the
    # bins above the zero bin (post-processing of the same counts).
    zero = magnitudes[:, 0]
    spike = (zero > _SIGNAL_SDS * noise_std) & (zero < target - _SHORT_SDS * noise_std)
    if spike.any():
        _, hi_rest = bulk_window(magnitudes[spike, 1:], target - zero[spike], noise_std)
        hi[spike] = hi_rest + 1
    upper = edges[hi]

    def widen(lower, upper):
        return _widen_to_heavy_tails(lower, upper, magnitudes, edges, noise_std, n)

    return -upper, upper, widen


def _located_first_round(X, data_range, noise_multiplier, rng):
    """Round 1 of the bulk search: the located histogram of the one-histogram
    schedule (one signed, coarse grid), which finds the bulk of a column
    spread over a decade or centred on 0; a column it does not see at all
    keeps the public range. With the final widening, as the extent
    search's, on its bins folded (the counts of ``|x|``), and the reach
    ``M`` of those bins: the top of the bin beyond the highest one read
    (:func:`read_bins`), the public range where none is."""
    n = X.shape[0]
    signed, edges, noise_std = private_signed_histogram(
        X, data_range=data_range, noise_multiplier=noise_multiplier, rng=rng
    )
    lower, upper, located, zero = located_bounds(signed, edges, noise_std, n_samples=n)
    lower = np.where(located | zero, lower, -float(data_range))
    upper = np.where(located | zero, upper, float(data_range))
    lower = np.maximum(lower, -float(data_range))
    upper = np.minimum(upper, float(data_range))
    folded, magnitude_edges = fold_signed(signed, edges)

    # The extent: one folded bin beyond the highest one read (a factor
    # sqrt(10) of magnitude, for a tail below the threshold), and at least
    # the located interval; the public range where no folded bin is read.
    folded_read = read_bins(folded, math.sqrt(2.0) * noise_std)

    def widen(lower, upper):
        return _widen_to_heavy_tails(
            lower,
            upper,
            folded,
            magnitude_edges,
            math.sqrt(2.0) * noise_std,
            n,
            read=folded_read,
            # ten zero bins: the zoom rounds leave a spike at 0 within a few
            spike_width=20.0 * data_range * 10.0**-_DECADES,
        )

    highest = folded_read.shape[1] - 1 - np.argmax(folded_read[:, ::-1], axis=1)
    reach = magnitude_edges[np.minimum(highest + 2, magnitude_edges.size - 1)]
    reach = np.where(folded_read.any(axis=1), reach, float(data_range))
    return lower, upper, widen, reach


def round_multipliers(noise_multiplier):
    """``(z_first, z_zoom)``: the rounds' noise multipliers for a bounds budget
    of ``N_BOUND_RELEASES`` releases at ``noise_multiplier``.

    ``1/z_first² + _ZOOM_ROUNDS/z_zoom² = N_BOUND_RELEASES/z²``: the same μ²
    (GDP composition), the share ``_FIRST_SHARE`` of it in the first round.
    A failed first round leaves the zoom rounds the whole public range, out of
    their reach, while a failed zoom round only keeps its interval.
    """
    mu2 = N_BOUND_RELEASES / noise_multiplier**2
    z_first = 1.0 / math.sqrt(_FIRST_SHARE * mu2)
    z_zoom = 1.0 / math.sqrt((1.0 - _FIRST_SHARE) * mu2 / _ZOOM_ROUNDS)
    return z_first, z_zoom


def _widen_to_heavy_tails(
    lower, upper, magnitudes, edges, noise_std, n, read=None, spike_width=0.0
):
    """Widen the final interval to a heavy tail that round 1 saw beyond it.

    A heavy tail beyond a spike (zero inflation: ~97% zeros and a few large
    values) is outside the bulk the zoom rounds keep: the interval would
    shrink to the spike and clip the tail away, and the transform would then
    blow the tail up. Where round 1's noisy counts of ``|x|`` (``magnitudes``
    on the grid ``edges`` of ``|x|``, noise std ``noise_std``) beyond the
    final interval add up to more than ``_TAIL·n`` (plus two standard
    deviations of their noise) and one of them stands out of the noise,
    widen the interval to the top of the highest such bin on both sides
    (round 1 can overshoot a heavy tail by decades). Post-processing of
    round 1.

    ``read``: the bins of round 1 read as data (:func:`read_bins`), if
    given, and ``spike_width``: where the interval is a spike (no wider
    than ``spike_width`` or than ``_SPIKE_WIDTH`` of its reach: the
    resolution of the search, not a spread), the mass
    of those bins beyond it, with the noise of those bins alone, counts
    from ``_RARE·n``: a rare value read on its own beside a point mass (the
    1s of an indicator with 2-5% ones, in one bin decades from the spike at
    0) is not a tail to clip. Summed with every empty bin beyond (24 of
    them: a noise std 5 times a bin's) its mass fell short of ``_TAIL·n``,
    the bounds closed on the spike, and the column came out constant (an
    indicator with 3% ones at n = 30000 in 3 of 4 fits; review). Beside a
    spread bulk the 2% rule stands: 1% of outliers at 1000 beside N(0, 1)
    would have scaled the bulk to a hundredth (review).
    """
    n_log = magnitudes.shape[1]
    reach = np.maximum(np.abs(lower), np.abs(upper))
    beyond = edges[None, :-1] >= reach[:, None]  # bins wholly beyond the interval
    mass = np.where(beyond, magnitudes, 0.0).sum(axis=1)
    cut = mass > _TAIL * n + 2.0 * noise_std * np.sqrt(beyond.sum(axis=1))
    significant = beyond & (magnitudes > _SIGNAL_SDS * noise_std)
    cut &= significant.any(axis=1)
    if read is not None:
        spike = (upper - lower) <= np.maximum(spike_width, _SPIKE_WIDTH * reach)
        seen = beyond & read & spike[:, None]
        seen_mass = np.where(seen, magnitudes, 0.0).sum(axis=1)
        rare = seen_mass > _RARE * n + 2.0 * noise_std * np.sqrt(seen.sum(axis=1))
        rare &= seen.any(axis=1)
        significant |= seen
        cut |= rare
    highest = n_log - 1 - np.argmax(significant[:, ::-1], axis=1)
    top = edges[1:][highest]
    lower = np.where(cut, np.minimum(lower, -top), lower)
    upper = np.where(cut, np.maximum(upper, top), upper)
    return lower, upper


def _magnitude_counts(X, *, edges, data_range):
    """Counts of ``|x|`` (x clipped to the public range) on the log grid, per feature.

    A sum over rows: :func:`private_bounds` calls it on X, or on every row
    chunk of a Dask X (see :func:`skdp._base.sum_over_rows`).
    """
    X = np.clip(X, -data_range, data_range)  # the public range; no overflow below
    n_log_bins = edges.size - 1
    bins = np.clip(
        np.searchsorted(edges, np.abs(X), side="right") - 1, 0, n_log_bins - 1
    )
    return bin_counts(bins, n_log_bins)


def _zoom_counts(X, *, data_range, lower, width, n_bins):
    """Counts of x (clipped to the public range) on each feature's equal-width grid.

    Column 0 counts the values below ``lower``, columns 1 to ``n_bins`` the
    grid's bins, column ``n_bins + 1`` the values above ``lower + width``
    (the top edge belongs to the last bin). A sum over rows, as
    :func:`_signed_counts`.
    """
    X = np.clip(X, -data_range, data_range)
    position = (X - lower) / width * n_bins
    bins = np.floor(position)
    # The top edge itself (position == n_bins) belongs to the last bin.
    bins = np.where(position == n_bins, n_bins - 1, bins)
    bins = np.clip(bins, -1, n_bins).astype(np.intp) + 1
    return bin_counts(bins, int(n_bins.max()) + 2)


# --------------------------------------------------------------------------
# One-release scale estimate for small n·μ/sqrt(d) (issue 30, item 1)
# --------------------------------------------------------------------------

#: Bins per decade of the signed grid of the one-release estimate (edges a
#: factor sqrt(10) ≈ 3.2 apart): few, wide bins, so that the bulk of a
#: feature falls in one to three of them and stands out of the noise.
_COARSE_PER_DECADE = 2
#: A bin of the signed grid counts only if its noisy count exceeds this many
#: noise standard deviations: an empty bin does with probability 2.3e-4, so
#: a feature's 49 empty bins hold a false one with probability about 1%.
_COARSE_SIGNAL_SDS = 3.5
#: ... and, unless it lies within two bins of the fullest bin or of another
#: bin read (see :func:`read_bins`), only above this many: a false bin
#: alone, decades from the data, would stretch the bounds by as much
#: (probability 2.9e-7 a bin above 5).
_LONE_SIGNAL_SDS = 5.0


def read_bins(noisy_counts, noise_std, *, mirrored=False):
    """The bins of a coarse histogram read as data (post-processing).

    A bin is read if its noisy count exceeds ``_COARSE_SIGNAL_SDS`` noise
    standard deviations and it is connected to the fullest bin, or to a bin
    above ``_LONE_SIGNAL_SDS``, through bins read at most two bins apart (a
    gap of one empty bin: a factor sqrt(10) of magnitude without data). A
    column fills neighbouring bins; a lone bin just above the noise, far
    from them, is most likely noise, and reading it would stretch the bounds
    by decades (0.5% of fits of one column at a public ratio of 32 before
    this rule, off by up to 38000 standard deviations; docs/benchmarks.md,
    "the tail of DPStandardScaler's error"). ``mirrored``: the bins of a
    signed grid, on which the bins within two of a bin's mirror image (the
    same magnitude on the other side of the zero bin) count as its
    neighbours too (a column on both sides of 0 fills both signs), and the
    zero bin is read like the fullest (a spike at 0 and a tail decades
    away: a zero-inflated column).
    """
    significant = noisy_counts > _COARSE_SIGNAL_SDS * noise_std
    seeds = np.zeros_like(significant)
    if mirrored:  # a spike at 0 is a bulk of its own, wherever the rest is
        seeds[:, noisy_counts.shape[1] // 2] = True
    return connected_bins(noisy_counts, significant, seeds, noise_std, mirrored)


def connected_bins(noisy_counts, significant, seeds, noise_std, mirrored=False):
    """The ``significant`` bins connected to a seed (post-processing).

    Seeds: the given ``seeds``, each row's fullest bin and every bin above
    ``_LONE_SIGNAL_SDS`` noise standard deviations, when significant
    themselves; from them the read bins grow through significant bins at
    most two apart (with ``mirrored``, a bin's mirror image on a symmetric
    grid counts as its neighbour). See :func:`read_bins`.
    """
    d, n_bins = noisy_counts.shape
    read = seeds | (noisy_counts > _LONE_SIGNAL_SDS * noise_std)
    read[np.arange(d), np.argmax(noisy_counts, axis=1)] = True
    read &= significant
    for _ in range(n_bins):  # a loop over bins, never over samples
        grow_from = read | read[:, ::-1] if mirrored else read
        grown = grow_from.copy()
        for step in (1, 2):
            grown[:, step:] |= grow_from[:, :-step]
            grown[:, :-step] |= grow_from[:, step:]
        grown &= significant
        if np.array_equal(grown, read):
            break
        read = grown
    return read


def fold_signed(noisy_counts, edges):
    """``(folded, magnitude_edges)``: a signed grid's counts read as counts of
    ``|x|`` above the zero bin (each positive bin plus its mirror, noise std
    ``sqrt(2)`` times the bins'), and their edges (the k-th folded bin spans
    ``[magnitude_edges[k], magnitude_edges[k + 1]]``)."""
    zero_bin = (edges.size - 1) // 2
    folded = noisy_counts[:, zero_bin + 1 :] + noisy_counts[:, zero_bin - 1 :: -1]
    return folded, edges[zero_bin + 1 :]


def signed_grid(data_range, per_decade=_COARSE_PER_DECADE):
    """Edges of the public signed grid of the one-release estimate.

    ``[-data_range, -data_range·1e-12]`` and ``[data_range·1e-12,
    data_range]`` are cut at ``data_range·10**(-k/per_decade)``; the zero bin
    ``[-data_range·1e-12, data_range·1e-12]`` sits between them: 49 bins at
    the default 2 per decade (97 at 4).
    """
    k = np.arange(_DECADES * per_decade, -1, -1)
    positive = data_range * 10.0 ** (-k / per_decade)
    return np.concatenate([-positive[::-1], positive])


def histogram_scale(noisy_counts, edges, noise_std, *, zero_bin, n_samples, read=None):
    """Mean, scale and bounds per feature from a noisy histogram (post-processing).

    ``read``: the bins :func:`read_bins` reads (computed here if None). Only
    the bins whose noisy count exceeds ``_COARSE_SIGNAL_SDS`` noise
    standard deviations are read, as a histogram of the data (their noisy
    counts as weights): the mean is the weighted mean of the bin centres,
    and the variance that of the bin centres plus each bin's own
    ``width²/12`` (the variance of a value spread evenly over its bin), so
    that a feature seen in one bin gets a scale of the bin's width, never 0.
    Bins below the threshold are ignored as empty: summing the noise of the
    many empty bins would swamp a small data set. Returns ``mean, scale,
    lower, upper, seen, zero`` (arrays of shape (d,)): ``[lower, upper]``
    spans the significant bins; ``seen`` is False for a feature with no
    significant bin, or whose only significant bin is the zero bin
    ``zero_bin`` while it holds visibly less than ``n_samples`` (its other
    outputs are then meaningless), ``zero`` True where the zero bin holds
    all the data, up to the noise.
    """
    left, right = edges[:-1], edges[1:]
    # The moments in units of a power of two near the grid's reach (exact
    # divisions): n·centre² overflowed from n·(1e153)² (data_range near its
    # largest, 6.7e153), a variance of inf (review).
    unit = np.ldexp(1.0, int(np.frexp(np.max(np.abs(edges)))[1]))
    centre = (left / 2.0 + right / 2.0) / unit
    width = (right - left) / unit
    if read is None:
        read = read_bins(noisy_counts, noise_std, mirrored=True)
    weight = np.where(read, noisy_counts, 0.0)
    total = weight.sum(axis=1)
    seen = total > 0
    total = np.where(seen, total, 1.0)
    mean = weight @ centre / total
    var = (weight @ (centre**2 + width**2 / 12.0)) / total - mean**2
    # Rounding may leave a tiny negative variance; the within-bin term keeps
    # it at least (min width)²/12 in exact arithmetic.
    scale = np.sqrt(np.maximum(var, (width.min() ** 2) / 12.0)) * unit
    mean = mean * unit
    significant = weight > 0
    first = np.argmax(significant, axis=1)
    last = significant.shape[1] - 1 - np.argmax(significant[:, ::-1], axis=1)
    only_zero = seen & (first == zero_bin) & (last == zero_bin)
    # Zero only if the zero bin holds all the data (up to 3 noise standard
    # deviations): a spike at 0 whose tail no bin saw (zero inflation) is
    # not a zero spread, and its scale cannot be told: not seen.
    zero = only_zero & (noisy_counts[:, zero_bin] >= n_samples - 3.0 * noise_std)
    seen &= ~(only_zero & ~zero)
    return mean, scale, left[first], right[last], seen, zero


def located_bounds(noisy_counts, edges, noise_std, *, n_samples):
    """Bounds of each feature's bulk from a noisy signed histogram (post-processing).

    The bins of :func:`signed_grid` read by :func:`histogram_scale` (those
    above ``_COARSE_SIGNAL_SDS`` noise standard deviations) span the bulk
    when their noisy counts add up to the data, ``n_samples`` (public), up
    to the tails (``2·_TAIL`` of it) and 2 noise standard deviations of the
    sum. When they visibly fall short, the data is spread over more bins
    than stand out alone (a feature centred on 0 splits its mass between
    the two signs and several decades of each; a zero-inflated one hides
    its tail). Then the magnitude bins are read folded (the count of
    ``|x|``: a positive bin plus its mirror, noise std ``sqrt(2)`` times
    larger), up to the top ``M`` of the highest one that stands out; each
    sign whose part of those folded bins visibly holds data (2 noise
    standard deviations of its sum) extends the interval to ``M`` on its
    side. Finally the interval is widened by ``_PAD`` of its width on each
    side, as the search's (:func:`private_bounds`).

    Returns ``lower, upper, located, zero`` (arrays of shape (d,)):
    ``located`` is False for a feature no bin shows (its bounds are then
    ``±edges[-1]``, the public range) and for ``zero`` ones, whose zero bin
    holds all the data (their bounds span the zero bin, unwidened).
    """
    n_bins = edges.size - 1
    zero_bin = n_bins // 2
    read = read_bins(noisy_counts, noise_std, mirrored=True)
    _, _, lower, upper, seen, zero = histogram_scale(
        noisy_counts,
        edges,
        noise_std,
        zero_bin=zero_bin,
        n_samples=n_samples,
        read=read,
    )
    mass = np.where(read, noisy_counts, 0.0).sum(axis=1)
    margin = 2.0 * noise_std * np.sqrt(read.sum(axis=1))
    short = ~zero & (mass + margin < (1.0 - 2.0 * _TAIL) * n_samples)
    # Magnitude bins k = 0, 1, ... outward from the zero bin, on each side.
    positive = noisy_counts[:, zero_bin + 1 :]
    negative = noisy_counts[:, zero_bin - 1 :: -1]
    folded, magnitude_edges = fold_signed(noisy_counts, edges)
    folded_read = read_bins(folded, math.sqrt(2.0) * noise_std)
    spread = short & folded_read.any(axis=1)
    highest = folded_read.shape[1] - 1 - np.argmax(folded_read[:, ::-1], axis=1)
    top = magnitude_edges[1:][highest]  # M: upper edge of the highest bin read
    sum_margin = 2.0 * noise_std * np.sqrt(folded_read.sum(axis=1))
    has_positive = np.where(folded_read, positive, 0.0).sum(axis=1) > sum_margin
    has_negative = np.where(folded_read, negative, 0.0).sum(axis=1) > sum_margin
    # Without signed bins read, the interval starts from 0 on a side that
    # holds data. At least one sign does: the r folded bins read hold more
    # than 3.5·sqrt(2)·r noise sds together, so the two signs' sums cannot
    # both stay below 2·sqrt(r) sds.
    start_lower = np.where(seen, lower, np.where(has_positive, 0.0, -top))
    start_upper = np.where(seen, upper, np.where(has_negative, 0.0, top))
    lower = np.where(
        spread,
        np.where(has_negative, np.minimum(start_lower, -top), start_lower),
        lower,
    )
    upper = np.where(
        spread, np.where(has_positive, np.maximum(start_upper, top), start_upper), upper
    )
    located = (seen | spread) & ~zero
    pad = _PAD * 2.0 * (upper / 2.0 - lower / 2.0)  # _PAD·(upper - lower), finite
    lower = np.where(located, lower - pad, np.where(zero, lower, edges[0]))
    upper = np.where(located, upper + pad, np.where(zero, upper, edges[-1]))
    return lower, upper, located, zero


def private_histogram_scale(
    X, *, data_range, noise_multiplier, rng, per_decade=_COARSE_PER_DECADE
):
    """One Gaussian release of every feature's histogram on the signed grid.

    The ``d x 49`` count matrix of ``x`` (clipped to the public range) on
    :func:`signed_grid` (``d x 97`` at ``per_decade=4``) has L2 sensitivity
    ``sqrt(2 d)`` under replace-one (one count leaves and one enters per
    feature), whatever the grid, and is released with noise std
    ``noise_multiplier·sqrt(2 d)``: ``1/noise_multiplier``-GDP.
    Everything else is :func:`histogram_scale`, post-processing.
    """
    noisy, edges, noise_std = private_signed_histogram(
        X,
        data_range=data_range,
        noise_multiplier=noise_multiplier,
        rng=rng,
        per_decade=per_decade,
    )
    return histogram_scale(
        noisy, edges, noise_std, zero_bin=(edges.size - 1) // 2, n_samples=X.shape[0]
    )


def private_signed_histogram(
    X, *, data_range, noise_multiplier, rng, per_decade=_COARSE_PER_DECADE
):
    """The noisy ``d x bins`` counts on :func:`signed_grid`, its edges, noise std.

    One Gaussian release, L2 sensitivity ``sqrt(2 d)`` under replace-one
    whatever the grid: ``1/noise_multiplier``-GDP.
    """
    d = X.shape[1]
    edges = signed_grid(data_range, per_decade)
    sensitivity = histogram_sensitivity(d)
    counts = sum_over_rows(_signed_counts, X, (d, edges.size - 1), edges=edges)
    noisy = gaussian_mechanism(
        counts, sensitivity=sensitivity, noise_multiplier=noise_multiplier, rng=rng
    )
    return noisy, edges, noise_multiplier * sensitivity


def _signed_counts(X, *, edges):
    """Counts of x (clipped to the grid's range) on the signed grid, per feature.

    A sum over rows: :func:`private_signed_histogram` calls it on X, or on
    every row chunk of a Dask X (see :func:`skdp._base.sum_over_rows`).
    """
    n_bins = edges.size - 1
    bins = np.clip(np.searchsorted(edges, X, side="right") - 1, 0, n_bins - 1)
    return bin_counts(bins, n_bins)


# --------------------------------------------------------------------------
# Noisy CDFs and quantiles of every feature (issue 30, item 2)
# --------------------------------------------------------------------------
#
# One more Gaussian release of a d x K count matrix, on a grid chosen from
# public values and earlier noisy releases only, gives every feature a noisy
# histogram; its CDF (monotone by construction) is post-processing, and so
# is every quantile read from it. Used by skdp.preprocessing.dp_quantiles
# and by the quantile transformers (DPQuantileTransformer, DPRobustScaler,
# DPMinMaxScaler).

#: Equal-width bins of the final grid: about ``snr / _BIN_SNR`` of them, so
#: that a bin of the bulk holds several noise standard deviations, clipped
#: to ``[_MIN_BINS, _MAX_BINS]``.
_BIN_SNR = 8.0
_MIN_BINS = 8
_MAX_BINS = 1024
#: An equal-width bin counts in the CDF only if its noisy count exceeds this
#: many noise standard deviations (an empty bin does with probability 2.3%,
#: adding about 2.4 standard deviations of spurious mass); a bin of the
#: signed logarithmic grid needs ``_COARSE_SIGNAL_SDS`` (it has few bins
#: and far from the bulk a spurious one would move the extreme quantiles
#: by decades).
_EQUAL_SIGNAL_SDS = 2.0


def n_equal_bins(n_samples, n_features, noise_multiplier):
    """Equal-width bins of the final grid, from public values only.

    ``n / (noise_multiplier·sqrt(2 d))`` is the number of records over the
    noise standard deviation of one count; the grid gets an eighth of it,
    clipped to [8, 1024].
    """
    snr = n_samples / (noise_multiplier * histogram_sensitivity(n_features))
    return int(np.clip(np.floor(snr / _BIN_SNR), _MIN_BINS, _MAX_BINS))


def equal_width_edges(lower, upper, n_bins):
    """Edges of ``n_bins`` equal bins on ``[lower_j, upper_j]``, shape (d, n_bins + 1).

    Computed from halves, so they stay finite for any finite bounds whose
    half-width is representable.
    """
    t = np.linspace(0.0, 1.0, n_bins + 1)
    half = upper / 2.0 - lower / 2.0
    edges = lower[:, None] + (2.0 * half)[:, None] * t[None, :]
    edges[:, -1] = upper  # exactly, whatever the rounding
    return np.maximum.accumulate(edges, axis=1)


#: Bins of a searched grid's margins: ``_MARGIN_BINS`` on each side of the
#: bounds found, each ``_MARGIN`` of their width wide, read as coarse bins.
_MARGIN_BINS = 2
_MARGIN = 0.125


def search_grid(lower, upper, n_bins, data_range):
    """Per-feature grid of the final release after the bounds search.

    ``n_bins`` equal bins on the bounds ``[lower_j, upper_j]`` found by
    :func:`private_bounds`, ``_MARGIN_BINS`` bins of ``_MARGIN`` of their
    width on each side (the near tails the search cut), all cut at the zero
    bin's edges ``±data_range·1e-12`` where they hold them (a spike of zeros
    has a bin of its own), and beyond them the bins of the signed
    logarithmic grid (:func:`signed_grid`) that lie beyond the margins, so
    that a heavy tail or a far spike beyond the bulk is still seen (at the
    logarithmic grid's resolution). Each feature's edges are sorted; a
    feature with fewer bins than the widest is padded with repeats of its
    last edge (empty bins of zero width, never read).

    Returns
    -------
    edges : ndarray of shape (d, K + 1)
    sizes : ndarray of shape (d,)
        Each feature's own number of bins ``K_j <= K``.
    equal : ndarray of shape (d, K), bool
        Which bins are equal-width bins on the bounds (the others are
        margin or logarithmic bins).
    """
    log_edges = signed_grid(data_range)
    zero_edges = log_edges[log_edges.size // 2 - 1 : log_edges.size // 2 + 1]
    inner = equal_width_edges(lower, upper, n_bins)
    step = _MARGIN * 2.0 * (upper / 2.0 - lower / 2.0)  # finite for any bounds
    offsets = np.arange(_MARGIN_BINS, 0, -1)
    rows, kinds = [], []
    for j in range(lower.shape[0]):  # a loop over features, never over samples
        # Margin bins just beyond the bounds: the search cuts a column's
        # tails where their counts meet the noise (1-3% of n at n = 5000,
        # d = 14, ε = 1), and a logarithmic bin holding them put the 1st
        # percentile of data near -1000 at -2456 (review).
        margin_low = lower[j] - step[j] * offsets
        margin_high = upper[j] + step[j] * offsets[::-1]
        below = log_edges[log_edges < margin_low[0]]
        above = log_edges[log_edges > margin_high[-1]]
        # The zero bin's edges within them too: a spike of exact zeros inside
        # a wide equal bin was spread over it, and a 90%-zero column's median
        # came out at 822 (review).
        middle = np.concatenate([margin_low, inner[j], margin_high])
        cuts = zero_edges[(zero_edges > middle[0]) & (zero_edges < middle[-1])]
        middle = np.union1d(middle, cuts)
        centres = middle[:-1] / 2.0 + middle[1:] / 2.0
        rows.append(np.concatenate([below, middle, above]))
        kinds.append(
            np.concatenate(
                [
                    np.zeros(below.size, bool),
                    (centres >= lower[j]) & (centres <= upper[j]),
                    np.zeros(above.size, bool),
                ]
            )
        )
    sizes = np.array([r.size - 1 for r in rows])
    width = int(sizes.max())
    edges = np.array([np.pad(r, (0, width + 1 - r.size), mode="edge") for r in rows])
    equal = np.array([np.pad(k, (0, width - k.size)) for k in kinds])
    return edges, sizes, equal


def grid_counts(X, *, edges, sizes, lower, upper):
    """Counts, shape (d, K), of ``clip(x_j, lower_j, upper_j)`` on each feature's grid.

    Record i lands in exactly one bin ``k < K_j`` of feature j (the bin
    whose half-open interval ``[e_k, e_(k+1))`` holds the clipped value; the
    top edge belongs to the last bin), a function of ``x_ij`` alone: that is
    all the sensitivity argument needs (see :func:`release_cdf`). A sum
    over rows, as :func:`_signed_counts`.
    """
    n, d = X.shape
    X = np.clip(X, lower, upper)
    bins = np.empty((n, d), dtype=np.intp)
    for j in range(d):  # a loop over features, never over samples
        e = edges[j, : sizes[j] + 1]
        bins[:, j] = np.clip(
            np.searchsorted(e, X[:, j], side="right") - 1, 0, sizes[j] - 1
        )
    return bin_counts(bins, edges.shape[1] - 1)


def cdf_from_counts(noisy_counts, edges, sizes, threshold):
    """Monotone CDF of every feature at its edges (post-processing).

    Bin k of feature j weighs its noisy count if that exceeds
    ``threshold[j, k]`` (in count units), else 0; a feature with no such
    bin, not seen through the noise, weighs every bin by its width (a
    uniform distribution over its grid). The CDF at the edges is the
    cumulative weight over the total: it starts at 0, ends at 1 and never
    decreases, whatever the noise, because the weights are non-negative.

    Returns
    -------
    cdf : ndarray of shape (d, K + 1)
    seen : ndarray of shape (d,), bool
    """
    d, k = noisy_counts.shape
    valid = np.arange(k)[None, :] < sizes[:, None]
    weight = np.where(valid & (noisy_counts > threshold), noisy_counts, 0.0)
    seen = weight.sum(axis=1) > 0
    width = np.where(valid, np.diff(edges, axis=1), 0.0)
    # A feature not seen, or whose grid has no width (rounding), is uniform
    # over its grid (over its bins, if they all have zero width).
    fallback = np.where(width.sum(axis=1, keepdims=True) > 0, width, valid * 1.0)
    weight = np.where(seen[:, None], weight, fallback)
    total = weight.sum(axis=1, keepdims=True)
    cdf = np.concatenate([np.zeros((d, 1)), np.cumsum(weight, axis=1) / total], axis=1)
    cdf = np.minimum(np.maximum.accumulate(cdf, axis=1), 1.0)
    # Exactly 1 from the right edge of the last bin with weight on (rounding
    # may leave the cumulative sum a little below the total), so that q = 1
    # lands in that bin, not in an empty bin after it.
    last = k - 1 - np.argmax(weight[:, ::-1] > 0, axis=1)
    return np.where(np.arange(k + 1)[None, :] > last[:, None], 1.0, cdf), seen


def quantile_bins(cdf, q):
    """The bin holding each quantile ``q`` of each piecewise-linear CDF
    (the bin :func:`inverse_cdf` interpolates in), shape (len(q), d)."""
    q = np.clip(np.asarray(q, dtype=float), 0.0, 1.0)
    target = np.maximum(q, np.finfo(float).tiny)  # q = 0: first bin with weight
    bins = np.empty((q.size, cdf.shape[0]), dtype=np.intp)
    for j in range(cdf.shape[0]):  # a loop over features, never over samples
        c = cdf[j]
        bins[:, j] = np.clip(np.searchsorted(c[1:], target, side="left"), 0, c.size - 2)
    return bins


def inverse_cdf(edges, cdf, q):
    """Quantiles ``F_j^-1(q)`` of the piecewise-linear CDFs, and their bins' widths.

    Within a bin the mass is spread evenly (the CDF is linear between its
    edges). ``q = 0`` gives the left edge of the first bin with weight,
    ``q = 1`` the right edge of the last one. Non-decreasing in ``q`` for
    every feature (the generalised inverse of a non-decreasing function).

    Returns
    -------
    values, widths : ndarrays of shape (len(q), d)
    """
    q = np.clip(np.asarray(q, dtype=float), 0.0, 1.0)
    d = edges.shape[0]
    values = np.empty((q.size, d))
    widths = np.empty((q.size, d))
    bins = quantile_bins(cdf, q)
    for j in range(d):  # a loop over features, never over samples
        c = cdf[j]
        k = bins[:, j]
        lo, hi = c[k], c[k + 1]
        step = hi - lo
        frac = np.clip(
            np.where(step > 0, (q - lo) / np.where(step > 0, step, 1.0), 0.0), 0.0, 1.0
        )
        left, right = edges[j, k], edges[j, k + 1]
        inside = left + (right / 2.0 - left / 2.0) * 2.0 * frac
        values[:, j] = np.clip(inside, left, right)  # rounding stays in the bin
        widths[:, j] = right - left
    return values, widths
