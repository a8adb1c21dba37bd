"""Raking sample cells to census margins (stats.poststrat). No database."""

import numpy as np
import pytest

from bench.fit import coverage_simulation
from stats.poststrat import population_weights, rake

MARGINS = {
    0: {"18-34": 0.30, "35-54": 0.32, "55+": 0.38},
    1: {"Democrat": 0.35, "Republican": 0.33, "Independent": 0.32},
}


def margin_of(weights, axis, category):
    return sum(weight for cell, weight in weights.items() if cell[axis] == category)


def skewed_sample():
    """Young and Independent raters over-represented, with an association between the axes."""
    counts = {}
    for age, age_tilt in zip(MARGINS[0], (4.0, 1.0, 0.3), strict=True):
        for party, party_tilt in zip(MARGINS[1], (1.0, 0.5, 2.0), strict=True):
            counts[(age, party)] = (
                100 * age_tilt * party_tilt * (1.5 if (age, party) == ("55+", "Republican") else 1)
            )
    return counts


def test_it_matches_the_census_margins():
    raked = rake(skewed_sample(), MARGINS)
    assert sum(raked.values()) == pytest.approx(1.0, abs=1e-12)
    for axis, shares in MARGINS.items():
        for category, share in shares.items():
            assert margin_of(raked, axis, category) == pytest.approx(share, abs=1e-8)
    assert margin_of(raked, 0, "18-34") != pytest.approx(
        margin_of({k: v / sum(skewed_sample().values()) for k, v in skewed_sample().items()}, 0, "18-34"),
        abs=0.05,
    )


def test_it_keeps_the_samples_odds_ratios():
    sample, raked = skewed_sample(), rake(skewed_sample(), MARGINS)

    def odds_ratio(w):
        return (w[("18-34", "Democrat")] * w[("55+", "Republican")]) / (
            w[("18-34", "Republican")] * w[("55+", "Democrat")]
        )

    assert odds_ratio(raked) == pytest.approx(odds_ratio(sample), rel=1e-9)


def test_it_keeps_cells_absent_from_the_sample_at_zero():
    sample = skewed_sample()
    sample[("35-54", "Republican")] = 0.0
    del sample[("55+", "Independent")]
    raked = rake(sample, MARGINS)
    assert raked[("35-54", "Republican")] == 0.0
    assert ("55+", "Independent") not in raked
    for axis, shares in MARGINS.items():
        for category, share in shares.items():
            assert margin_of(raked, axis, category) == pytest.approx(share, abs=1e-8)


def test_it_raises_a_clear_error_when_a_margin_category_has_no_sample_cells():
    sample = {cell: count for cell, count in skewed_sample().items() if cell[1] != "Independent"}
    with pytest.raises(ValueError, match=r"\['Independent'\] have no sample cells"):
        rake(sample, MARGINS)


def test_it_raises_when_margins_do_not_sum_to_one():
    margins = {0: {"18-34": 0.3, "35-54": 0.3, "55+": 0.3}, 1: MARGINS[1]}
    with pytest.raises(ValueError, match=r"sums to 0\.9, not 1"):
        rake(skewed_sample(), margins)


def test_it_raises_for_a_category_the_margins_do_not_know():
    sample = skewed_sample() | {("18-34", "Green"): 5}
    with pytest.raises(ValueError, match="'Green', not in the margin of axis 1"):
        rake(sample, MARGINS)


def test_it_leaves_an_already_matching_sample_unchanged():
    # Margins (0.30, 0.32, 0.38) and (0.35, 0.33, 0.32), with an association between the axes.
    joint = np.array([[0.15, 0.05, 0.10], [0.10, 0.12, 0.10], [0.10, 0.16, 0.12]])
    sample = {
        (age, party): joint[a, p] for a, age in enumerate(MARGINS[0]) for p, party in enumerate(MARGINS[1])
    }
    raked = rake(sample, MARGINS)
    assert all(raked[cell] == pytest.approx(sample[cell], abs=1e-12) for cell in sample)


def test_it_gives_population_weights_in_group_ids():
    groups = {label: k for k, label in enumerate([*MARGINS[0], *MARGINS[1]])}
    population = population_weights(
        skewed_sample(), MARGINS, to_groups=lambda cell: tuple(groups[c] for c in cell)
    )
    assert len(population) == 9
    assert sum(weight for _, weight in population) == pytest.approx(1.0)
    young = sum(weight for cell, weight in population if groups["18-34"] in cell)
    assert young == pytest.approx(0.30, abs=1e-8)


def test_it_runs_the_coverage_simulation_at_small_size():
    result = coverage_simulation(n_sims=3, seed=1, n_votes=10_000)
    assert result["n"] == 18
    for key in ("coverage", "naive_coverage", "model_group_coverage"):
        assert 0.0 <= result[key] <= 1.0
    assert result["coverage"] >= 0.5
    assert 0 < result["naive_width"] < result["width"]
