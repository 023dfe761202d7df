"""Bootstrap confidence intervals over tasks. Pure functions: no Django.

Tasks are the unit of resampling: a run's level score is a mean over tasks, and the tasks are
the sample we would draw again. The RNG is seeded, so the same scores always give the same
interval (pages, CSV and JSON agree, and caches can be rebuilt without changing a figure).
"""

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

BOOTSTRAP_SEED = 20240607
BOOTSTRAP_RESAMPLES = 2000


@dataclass(frozen=True)
class Interval:
    mean: float
    low: float
    high: float

    def overlaps(self, other: "Interval") -> bool:
        return self.low <= other.high and other.low <= self.high


def resample_indices(n: int, *, resamples: int = BOOTSTRAP_RESAMPLES, seed: int = BOOTSTRAP_SEED) -> np.ndarray:
    """The (resamples x n) task indices drawn with replacement; identical for the same n and seed."""
    return np.random.default_rng(seed).integers(0, n, size=(resamples, n))


def bootstrap_ci(
    values: Sequence[float],
    *,
    confidence: float,
    resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = BOOTSTRAP_SEED,
) -> Interval | None:
    """Percentile bootstrap interval of the mean of `values` (one value per task).

    None for no values; a single task gives a zero-width interval (nothing to resample).
    """
    data = np.asarray([v for v in values if v is not None], dtype=float)
    if data.size == 0:
        return None
    mean = float(data.mean())
    if data.size == 1:
        return Interval(round(mean, 4), round(mean, 4), round(mean, 4))
    means = data[resample_indices(data.size, resamples=resamples, seed=seed)].mean(axis=1)
    tail = (1.0 - confidence) / 2.0 * 100.0
    low, high = np.percentile(means, [tail, 100.0 - tail])
    return Interval(round(mean, 4), round(float(low), 4), round(float(high), 4))


def rank_with_ties(intervals: Sequence[Interval | None]) -> list[int | None]:
    """1 + the number of rows whose whole interval lies above this row's interval.

    Rows whose intervals overlap share a rank, so they are not read as ordered.
    """
    lows = sorted(i.low for i in intervals if i is not None)
    ranks: list[int | None] = []
    for interval in intervals:
        if interval is None:
            ranks.append(None)
            continue
        above = len(lows) - int(np.searchsorted(lows, interval.high, side="right"))
        ranks.append(1 + above)
    return ranks
