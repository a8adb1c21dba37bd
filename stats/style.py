"""Style features of a battle: how long and how formatted each side's replies were, as covariates.

Pure Python/numpy (no Django). People tend to prefer longer, more formatted answers, so a pairwise
board partly ranks verbosity and markdown. Style control (as popularised by Chatbot Arena in 2024)
adds the *difference in style* between the two sides of a battle to the Bradley-Terry fit as
covariates; the model skills of that fit are then scores "with style held equal" (see
``stats.btd.fit_btd(features=...)``).

Features of one side (summed over every turn of the battle)
-----------------------------------------------------------
* ``length``: characters of reply text (characters, not tokens: no tokenizer is shared by every
  model, and the normalised difference below makes the unit cancel to first order);
* ``headers``: markdown ATX headers (``#`` to ``######`` then a space, at the start of a line);
* ``list_items``: bulleted (``-``, ``*``, ``+``) or numbered (``1.`` / ``1)``) list lines;
* ``bold``: ``**bold**`` or ``__bold__`` spans;
* ``code_blocks``: fenced code blocks (a pair of ```` ``` ```` or ``~~~`` fence lines; an unclosed
  fence at the end still counts as one block).
Headers, list items and bold are counted outside code blocks (a ``# comment`` in Python is no header).
* ``cut_off``: 1 if any reply of the side was cut off at the length limit, else 0 -- only when the
  battle records it; otherwise it is *unknown* (``None``) and the fit leaves the feature out entirely
  rather than treating it as 0 (see ``style_matrix``).

Normalised differences
----------------------
For every feature, with ``a`` and ``b`` the two sides' values, the battle's covariate is
``(a - b) / (a + b)`` (0 when both are 0), in [-1, 1]: relative, so one extra header matters more
between 0 and 1 headers than between 20 and 21, and antisymmetric, so swapping the sides negates it.
``style_matrix`` then divides each column by its root mean square over the battles being fitted, so a
coefficient is the effect of one typical style difference on the log-odds of winning. It deliberately
does not subtract the column mean (as Arena does): the side labelled "A" is arbitrary, and keeping
the covariates antisymmetric keeps the fit independent of that labelling.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "FEATURES",
    "BattleStyle",
    "SideStyle",
    "battle_style",
    "normalised_differences",
    "scaled_columns",
    "side_style",
    "style_matrix",
]

FEATURES = ("length", "headers", "list_items", "bold", "code_blocks", "cut_off")

_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_HEADER = re.compile(r"^\s{0,3}#{1,6}\s+\S")
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,9}[.)])\s+\S")
_BOLD = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*|__(?=\S)(.+?)(?<=\S)__")


@dataclass(frozen=True)
class SideStyle:
    """Raw style counts of one side's replies over a whole battle."""

    length: int
    headers: int
    list_items: int
    bold: int
    code_blocks: int
    cut_off: int | None  # None: not recorded for this battle

    def values(self) -> tuple[float | None, ...]:
        return tuple(getattr(self, name) for name in FEATURES)


@dataclass(frozen=True)
class BattleStyle:
    """Normalised A-minus-B differences, one per name in ``FEATURES`` (None: unknown)."""

    differences: tuple[float | None, ...]

    def as_dict(self) -> dict[str, float | None]:
        return dict(zip(FEATURES, self.differences, strict=True))


def _count_markdown(text: str) -> tuple[int, int, int, int]:
    headers = list_items = bold = blocks = 0
    in_code = False
    prose: list[str] = []
    for line in text.splitlines():
        if _FENCE.match(line):
            if not in_code:
                blocks += 1
            in_code = not in_code
            continue
        if in_code:
            continue
        prose.append(line)
        headers += bool(_HEADER.match(line))
        list_items += bool(_LIST_ITEM.match(line)) and not _HEADER.match(line)
    bold = len(_BOLD.findall("\n".join(prose)))
    return headers, list_items, bold, blocks


def side_style(replies: Sequence[str], truncated: Sequence[bool] | None = None) -> SideStyle:
    """Style counts of one side: its reply texts of every turn, and whether each was cut off
    (``None`` when the battle does not record it)."""
    headers = list_items = bold = blocks = 0
    for text in replies:
        h, li, b, c = _count_markdown(text or "")
        headers, list_items, bold, blocks = headers + h, list_items + li, bold + b, blocks + c
    return SideStyle(
        length=sum(len(text or "") for text in replies),
        headers=headers,
        list_items=list_items,
        bold=bold,
        code_blocks=blocks,
        cut_off=None if truncated is None else int(any(truncated)),
    )


def normalised_difference(a: float, b: float) -> float:
    """(a - b) / (a + b), 0 when both are 0; a and b are non-negative counts."""
    total = a + b
    return 0.0 if total <= 0 else (a - b) / total


def normalised_differences(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``normalised_difference`` element by element, for arrays of counts (e.g. a simulation)."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    total = a + b
    return np.divide(a - b, total, out=np.zeros(np.broadcast(a, b).shape), where=total > 0)


def scaled_columns(matrix: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Columns divided by their root mean square, the mask of columns kept (those that vary), and
    the kept columns' scales."""
    matrix = np.asarray(matrix, dtype=float).reshape(len(matrix), -1)
    scales = np.sqrt(np.mean(matrix**2, axis=0)) if len(matrix) else np.zeros(matrix.shape[1])
    kept = scales > 1e-12
    return matrix[:, kept] / scales[kept], kept, scales[kept]


def battle_style(side_a: SideStyle, side_b: SideStyle) -> BattleStyle:
    """The battle's covariates: normalised differences A minus B (unknown if either side is)."""
    return BattleStyle(
        differences=tuple(
            None if a is None or b is None else normalised_difference(a, b)
            for a, b in zip(side_a.values(), side_b.values(), strict=True)
        )
    )


def style_matrix(
    battles: Sequence[BattleStyle | Sequence[float | None]], *, names: Sequence[str] = FEATURES
) -> tuple[np.ndarray, tuple[str, ...], np.ndarray]:
    """(battles, K) covariates for the fit, the K feature names kept, and each kept column's scale.

    A feature is kept only if every battle knows it and it varies (a column of zeros carries no
    information and would make the fit singular), so an unrecorded ``cut_off`` is left out, never
    fitted as 0. Kept columns are divided by their root mean square (the returned scale).
    """
    raw = [b.differences if isinstance(b, BattleStyle) else tuple(b) for b in battles]
    known = [k for k in range(len(names)) if raw and all(row[k] is not None for row in raw)]
    matrix = np.array([[row[k] for k in known] for row in raw], dtype=float).reshape(len(raw), len(known))
    scaled, kept, scales = scaled_columns(matrix)
    return scaled, tuple(names[k] for k, keep in zip(known, kept, strict=True) if keep), scales
