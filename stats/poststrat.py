"""Post-stratification: weight the sample's demographic cells to match census margins (no Django).

A cell is a tuple with one category per axis, axes in the order of the ``margins`` mapping's keys. The
sample gives a joint distribution over cells (usually rater or vote counts); the census usually gives
only each axis's margin. Raking (iterative proportional fitting) rescales the sample's joint, one axis
at a time, until every margin matches. It keeps the sample's associations between axes (its odds
ratios) and never creates a cell the sample lacks, so cells with zero sample weight stay zero.

Raters who declined an axis have no category on it; decide before raking whether to drop them or to
impute a category, since a census margin cannot say how many people would decline.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping

import numpy as np

__all__ = ["population_weights", "rake"]

MARGIN_TOLERANCE = 1e-6


def _check_margins(margins: Mapping[int, Mapping[str, float]]) -> None:
    if not margins:
        raise ValueError("margins must name at least one axis")
    for axis, shares in margins.items():
        if any(share < 0 for share in shares.values()):
            raise ValueError(f"axis {axis!r} has a negative margin share")
        total = sum(shares.values())
        if abs(total - 1.0) > MARGIN_TOLERANCE:
            raise ValueError(f"the margin of axis {axis!r} sums to {total:.9g}, not 1")


def _category_codes(cells: list[tuple], axis_position: int, axis, shares: Mapping[str, float]) -> np.ndarray:
    """Each cell's category on one axis, as an index into that axis's margin."""
    index = {category: k for k, category in enumerate(shares)}
    codes = []
    for cell in cells:
        if cell[axis_position] not in index:
            raise ValueError(
                f"cell {cell!r} has category {cell[axis_position]!r}, not in the margin of axis {axis!r}"
            )
        codes.append(index[cell[axis_position]])
    return np.array(codes, dtype=np.intp)


def _check_coverage(weights: np.ndarray, codes: np.ndarray, axis, shares: Mapping[str, float]) -> None:
    """A category with a positive census share but no sample weight can never be matched."""
    present = np.bincount(codes, weights=weights, minlength=len(shares)) > 0
    missing = [category for k, (category, share) in enumerate(shares.items()) if share > 0 and not present[k]]
    if missing:
        raise ValueError(
            f"axis {axis!r}: margin categories {missing!r} have no sample cells, so their census shares "
            "cannot be matched; merge them with a neighbouring category or recruit raters in them"
        )


def rake(
    sample_joint: Mapping[tuple, float],
    margins: Mapping[int, Mapping[str, float]],
    *,
    max_iter: int = 200,
    tol: float = 1e-10,
) -> dict[tuple, float]:
    """Iterative proportional fitting of ``sample_joint`` to ``margins``; the weights sum to 1.

    ``tol`` bounds the largest difference between a fitted and a target margin share. Raises
    ValueError for malformed input, unmatchable margins, or no convergence within ``max_iter`` sweeps
    (margins that contradict the sample's empty cells).
    """
    _check_margins(margins)
    cells = list(sample_joint)
    weights = np.array([sample_joint[cell] for cell in cells], dtype=float)
    if not cells or (weights < 0).any() or weights.sum() <= 0 or not np.isfinite(weights).all():
        raise ValueError("the sample needs non-negative, finite weights with a positive total")
    if any(len(cell) != len(margins) for cell in cells):
        raise ValueError(f"every cell needs one category for each of the {len(margins)} axes")
    weights /= weights.sum()
    axes = []
    for position, (axis, shares) in enumerate(margins.items()):
        codes = _category_codes(cells, position, axis, shares)
        _check_coverage(weights, codes, axis, shares)
        axes.append((codes, np.array(list(shares.values()), dtype=float)))
    for _ in range(max_iter):
        for codes, target in axes:
            current = np.bincount(codes, weights=weights, minlength=len(target))
            factor = np.divide(target, current, out=np.zeros_like(target), where=current > 0)
            weights *= factor[codes]
        gap = max(
            np.abs(np.bincount(codes, weights=weights, minlength=len(target)) - target).max()
            for codes, target in axes
        )
        if gap <= tol:
            return dict(zip(cells, weights / weights.sum(), strict=True))
    raise ValueError(f"raking did not converge in {max_iter} sweeps (largest margin gap {gap:.3g})")


def population_weights(
    sample_counts: Mapping[tuple, float],
    margins: Mapping[int, Mapping[str, float]],
    *,
    to_groups: Callable[[tuple], Hashable] | None = None,
    max_iter: int = 200,
    tol: float = 1e-10,
) -> list[tuple[Hashable, float]]:
    """The pooled board's population: the sample's cells raked to the census, as (cell, weight) pairs.

    ``to_groups`` maps a category cell to the fit's cell (the tuple of group ids); cells that map to
    the same tuple are merged. Cells with zero weight are left out. Sorted by cell, weights sum to 1.
    """
    raked = rake(sample_counts, margins, max_iter=max_iter, tol=tol)
    merged: dict[Hashable, float] = {}
    for cell, weight in raked.items():
        if weight > 0:
            key = to_groups(cell) if to_groups else cell
            merged[key] = merged.get(key, 0.0) + weight
    return sorted(merged.items())
