"""Style features of a battle (stats.style). No database."""

import numpy as np
import pytest

from stats.style import FEATURES, BattleStyle, battle_style, normalised_difference, side_style, style_matrix

FORMATTED = """# Answer

Here is **the short version** and __another bold__ bit.

## Steps
- first
* second
+ third
1. numbered
2) numbered too

```python
# not a header
- not a list item
**not bold**
```
"""


def test_it_counts_headers_lists_bold_and_code_blocks_outside_code():
    style = side_style([FORMATTED])
    assert (style.headers, style.list_items, style.bold, style.code_blocks) == (2, 5, 2, 1)
    assert style.length == len(FORMATTED)
    assert style.cut_off is None


def test_it_sums_every_turn_of_a_side():
    style = side_style(["# One\n- a", "plain", "```\ncode\n```\n```\nmore"], truncated=[False, True, False])
    assert style.length == len("# One\n- a") + len("plain") + len("```\ncode\n```\n```\nmore")
    assert (style.headers, style.list_items, style.code_blocks, style.cut_off) == (1, 1, 2, 1)


def test_it_does_not_count_emphasis_rules_or_hashtags_as_formatting():
    style = side_style(["*italic* and #hashtag\n---\n**\n-no space"])
    assert (style.headers, style.list_items, style.bold) == (0, 0, 0)


def test_it_normalises_differences_antisymmetrically():
    assert normalised_difference(3, 1) == pytest.approx(0.5)
    assert normalised_difference(0, 0) == 0.0
    a, b = side_style(["# H\nlong text here"]), side_style(["short"])
    forward, backward = battle_style(a, b), battle_style(b, a)
    assert forward.as_dict()["headers"] == 1.0
    assert forward.as_dict()["cut_off"] is None
    for x, y in zip(forward.differences[:-1], backward.differences[:-1], strict=True):
        assert x == pytest.approx(-y)


def test_it_leaves_out_unknown_or_constant_features_and_scales_columns_to_unit_rms():
    rng = np.random.default_rng(0)
    rows = [
        BattleStyle(differences=(*rng.uniform(-1, 1, 3), 0.0, rng.uniform(-1, 1), None)) for _ in range(50)
    ]
    matrix, names, scales = style_matrix(rows)
    assert names == ("length", "headers", "list_items", "code_blocks")
    assert matrix.shape == (50, 4)
    assert np.sqrt((matrix**2).mean(axis=0)) == pytest.approx(np.ones(4))
    raw_length = np.array([row.differences[0] for row in rows])
    assert matrix[:, 0] * scales[0] == pytest.approx(raw_length)


def test_it_keeps_cut_off_once_battles_record_it():
    rows = [BattleStyle(differences=(0.1, 0, 0, 0, 0, 1.0)), BattleStyle(differences=(-0.2, 0, 0, 0, 0, 0.0))]
    _, names, _ = style_matrix(rows)
    assert names == ("length", "cut_off")
    assert FEATURES[-1] == "cut_off"
