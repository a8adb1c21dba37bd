"""Census presets and quota rounding. Pure Python: nothing here touches the database."""

import math
import random
from fractions import Fraction
from itertools import product

import pytest

from raters.defaults import AGE_BANDS, ETHNICITIES, POLITICS
from stats.census import PRESETS, AxisShares, independent_cells, largest_remainder

AXES = ("age", "ethnicity", "politics")


def _exact_quotas(shares, total):
    weight = sum(Fraction(share) for share in shares.values())
    return {label: total * Fraction(share) / weight for label, share in shares.items()}


def _random_shares(rng, size):
    shares = {f"option {i}": rng.random() for i in range(size)}
    if size > 1 and rng.random() < 0.2:
        shares["option 0"] = 0.0  # zero shares must be allowed
    return shares


def test_it_has_every_axis_for_both_countries():
    assert set(PRESETS) == {"US", "UK"}
    for axes in PRESETS.values():
        assert set(axes) == set(AXES)


def test_it_sums_every_preset_axis_to_one():
    for axes in PRESETS.values():
        for preset in axes.values():
            assert abs(sum(preset.shares.values()) - 1) <= 1e-9
            assert all(0 < share < 1 for share in preset.shares.values())


def test_it_names_a_source_and_a_mapping_note_for_every_preset():
    for axes in PRESETS.values():
        for preset in axes.values():
            assert preset.source.strip()
            assert preset.note.strip()


@pytest.mark.parametrize("country", ["US", "UK"])
def test_it_uses_the_labels_of_the_default_groups(country):
    expected = {"age": AGE_BANDS, "ethnicity": ETHNICITIES, "politics": POLITICS[country]}
    for axis, labels in expected.items():
        assert list(PRESETS[country][axis].shares) == labels


def test_it_refuses_a_preset_whose_shares_do_not_sum_to_one():
    with pytest.raises(ValueError, match="sum to 1"):
        AxisShares({"a": 0.5, "b": 0.4}, source="somewhere")


def test_it_refuses_a_preset_without_a_source():
    with pytest.raises(ValueError, match="source"):
        AxisShares({"a": 0.5, "b": 0.5}, source=" ")


def test_it_works_a_small_example_by_hand():
    # Quotas 2.8, 2.45 and 1.75: floors give 5, and the two spare units go to A (.8) then C (.75).
    assert largest_remainder({"A": 0.4, "B": 0.35, "C": 0.25}, 7) == {"A": 3, "B": 2, "C": 2}


def test_it_sums_largest_remainder_targets_exactly_to_the_total():
    rng = random.Random(1234)
    for _ in range(2000):
        shares = _random_shares(rng, rng.randint(1, 12))
        total = rng.randint(0, 5000)
        targets = largest_remainder(shares, total)
        assert sum(targets.values()) == total
        assert list(targets) == list(shares)


def test_it_never_moves_a_target_a_whole_unit_from_its_exact_quota():
    rng = random.Random(5678)
    for _ in range(2000):
        shares = _random_shares(rng, rng.randint(1, 12))
        total = rng.randint(0, 5000)
        targets = largest_remainder(shares, total)
        for label, quota in _exact_quotas(shares, total).items():
            assert abs(targets[label] - quota) < 1


def test_it_keeps_whole_quotas_exact():
    assert largest_remainder({"a": 1, "b": 2, "c": 3, "d": 0}, 600) == {"a": 100, "b": 200, "c": 300, "d": 0}


def test_it_handles_a_total_of_zero():
    assert largest_remainder({"a": 0.7, "b": 0.3}, 0) == {"a": 0, "b": 0}


def test_it_breaks_ties_by_label_order():
    assert largest_remainder({"a": 1, "b": 1, "c": 1}, 2) == {"a": 1, "b": 1, "c": 0}
    assert largest_remainder({"c": 1, "a": 1, "b": 1}, 2) == {"c": 1, "a": 1, "b": 0}


def test_it_rounds_a_preset_into_a_sample():
    targets = largest_remainder(PRESETS["UK"]["politics"].shares, 500)
    assert sum(targets.values()) == 500
    assert targets["Labour"] > targets["Conservative"] > targets["Reform"] > targets["Green"]


@pytest.mark.parametrize(
    ("shares", "total", "message"),
    [
        ({"a": 0.5, "b": 0.5}, -1, "total"),
        ({"a": -0.1, "b": 1.1}, 10, "negative"),
        ({"a": 0.0, "b": 0.0}, 10, "sum to zero"),
        ({}, 10, "sum to zero"),
        ({"a": math.nan, "b": 1.0}, 10, "finite"),
        ({"a": math.inf, "b": 1.0}, 10, "finite"),
    ],
)
def test_it_rejects_bad_input_with_a_clear_message(shares, total, message):
    with pytest.raises(ValueError, match=message):
        largest_remainder(shares, total)


def test_it_refuses_a_total_that_is_not_a_whole_number():
    with pytest.raises(TypeError):
        largest_remainder({"a": 1.0}, 2.5)


@pytest.mark.parametrize("country", ["US", "UK"])
@pytest.mark.parametrize("total", [0, 1, 7, 100, 1013])
def test_it_gives_one_cell_per_combination_summing_to_the_total(country, total):
    margins = {axis: PRESETS[country][axis].shares for axis in AXES}
    cells = independent_cells(margins, total)
    assert sum(cells.values()) == total
    assert set(cells) == set(product(*(list(shares) for shares in margins.values())))
    assert len(cells) == math.prod(len(shares) for shares in margins.values())


def test_it_orders_each_cell_key_by_the_axes_given():
    cells = independent_cells({"age": {"young": 1, "old": 1}, "politics": {"left": 3, "right": 1}}, 8)
    assert cells == {("young", "left"): 3, ("young", "right"): 1, ("old", "left"): 3, ("old", "right"): 1}


def _assert_margins_hold(margins, total):
    cells = independent_cells(margins, total)
    assert sum(cells.values()) == total
    for position, (axis, shares) in enumerate(margins.items()):
        marginal_targets = largest_remainder(shares, total)
        for label in shares:
            row_sum = sum(count for key, count in cells.items() if key[position] == label)
            assert abs(row_sum - marginal_targets[label]) <= len(cells), (axis, label)


@pytest.mark.parametrize("country", ["US", "UK"])
def test_it_keeps_preset_row_and_column_sums_near_the_marginal_targets(country):
    margins = {axis: PRESETS[country][axis].shares for axis in AXES}
    for total in (0, 1, 13, 250, 1000, 4321):
        _assert_margins_hold(margins, total)


def test_it_keeps_random_row_and_column_sums_near_the_marginal_targets():
    rng = random.Random(91011)
    for _ in range(300):
        margins = {f"axis {a}": _random_shares(rng, rng.randint(1, 5)) for a in range(rng.randint(1, 3))}
        _assert_margins_hold(margins, rng.randint(0, 3000))


@pytest.mark.parametrize(
    ("margins", "total", "message"),
    [
        ({}, 10, "axis"),
        ({"age": {"a": 1.0}, "politics": {"x": 0.0, "y": 0.0}}, 10, "politics"),
        ({"age": {"a": 1.0}, "politics": {"x": -1.0, "y": 2.0}}, 10, "negative"),
        ({"age": {"a": 1.0}}, -5, "total"),
    ],
)
def test_it_rejects_bad_margins_with_a_clear_message(margins, total, message):
    with pytest.raises(ValueError, match=message):
        independent_cells(margins, total)
