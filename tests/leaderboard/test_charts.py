"""Server-side SVG charts: well-formed, accessible, escaped, and drawing one mark per figure."""

import xml.etree.ElementTree as ET

from leaderboard.charts import Cell, Interval, Series, grid, interval_plot, rank_lines

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = '<script>alert("x")</script> & "quotes"'


def parsed(svg: str) -> ET.Element:
    return ET.fromstring(svg)  # noqa: S314 - our own output


def marks(root: ET.Element, tag: str) -> list[ET.Element]:
    return [e for e in root.iter(f"{SVG}{tag}") if "mark" in e.get("class", "").split()]


def test_an_interval_plot_draws_a_dot_and_a_bar_per_fitted_row():
    svg = interval_plot(
        [
            Interval("Alpha", 0.7, 0.6, 0.8),
            Interval("Beta", 0.4, 0.3, 0.5, muted=True),
            Interval("Newcomer", None),
        ],
        chart_id="c1",
        title="Scores",
        description="Three models",
    )
    root = parsed(svg)
    assert root.get("role") == "img" and root.get("aria-labelledby") == "c1-title"
    assert root.find(f"{SVG}title").text == "Scores" and root.find(f"{SVG}desc").text == "Three models"
    assert len(marks(root, "circle")) == 2 and len(marks(root, "line")) == 2
    assert "not fitted yet" in svg
    alpha, beta = marks(root, "circle")
    assert float(alpha.get("cx")) > float(beta.get("cx"))  # the higher score sits further right
    assert beta.get("opacity") == "0.55" and alpha.get("opacity") is None


def test_every_piece_of_text_is_escaped():
    svg = interval_plot(
        [Interval(HOSTILE, 0.5, 0.4, 0.6)], chart_id='x"><script>', title=HOSTILE, description=HOSTILE
    )
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    root = parsed(svg)
    assert root.find(f"{SVG}title").text == HOSTILE
    grid_svg = grid(
        [HOSTILE], [HOSTILE], [[Cell(0.5, HOSTILE, HOSTILE)]], chart_id="g", title=HOSTILE, description="d"
    )
    assert "<script>" not in grid_svg
    parsed(grid_svg)
    lines_svg = rank_lines(
        [Series(HOSTILE, [1, 2])], [HOSTILE, "b"], chart_id="h", title="t", description="d"
    )
    assert "<script>" not in lines_svg
    parsed(lines_svg)


def test_long_labels_are_shortened_with_the_full_name_in_a_tooltip():
    name = "An extremely long model name that would not fit beside the chart"
    root = parsed(interval_plot([Interval(name, 0.5, 0.4, 0.6)], chart_id="c", title="t", description="d"))
    label = next(t for t in root.iter(f"{SVG}text") if t.find(f"{SVG}title") is not None)
    assert label.text.endswith("…") and len(label.text) < len(name)
    assert label.find(f"{SVG}title").text == name


def test_a_grid_shades_cells_with_data_and_greys_the_rest():
    svg = grid(
        ["A", "B"],
        ["A", "B"],
        [[Cell(None, "-"), Cell(1.0, "100%")], [Cell(0.0, "0%"), Cell(None, "-")]],
        chart_id="m",
        title="Win rates",
        description="d",
        diverging=True,
    )
    root = parsed(svg)
    cells = marks(root, "rect")
    assert len(cells) == 2
    assert {c.get("fill") for c in cells} == {"#2f5bd3", "#e8743b"}  # blue for winning, orange for losing
    empty = [r for r in root.iter(f"{SVG}rect") if "empty" in r.get("class", "")]
    assert len(empty) == 2 and {r.get("fill") for r in empty} == {"#eceef3"}
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "100%" in texts and "0%" in texts


def test_a_sequential_grid_writes_light_text_on_dark_cells():
    root = parsed(
        grid(["A"], ["x", "y"], [[Cell(1.0, "9"), Cell(0.05, "1")]], chart_id="s", title="t", description="d")
    )
    figures = {t.text: t.get("fill") for t in root.iter(f"{SVG}text") if t.text in {"9", "1"}}
    assert figures == {"9": "#ffffff", "1": "#1d2330"}


def test_rank_lines_leave_a_gap_where_a_board_was_not_published():
    svg = rank_lines(
        [Series("Alpha", [1, 1, None, 1]), Series("Beta", [2, 2, None, 2])],
        ["1 Jan", "2 Jan", "3 Jan", "4 Jan"],
        chart_id="h",
        title="History",
        description="d",
    )
    root = parsed(svg)
    assert len(marks(root, "polyline")) == 2  # each line's first two fits; the last point stands alone
    assert len(marks(root, "circle")) == 6
    alpha_points = [c for c in marks(root, "circle") if c.find(f"{SVG}title").text.startswith("Alpha")]
    beta_points = [c for c in marks(root, "circle") if c.find(f"{SVG}title").text.startswith("Beta")]
    assert float(alpha_points[0].get("cy")) < float(beta_points[0].get("cy"))  # rank 1 drawn on top


def test_tied_models_have_their_names_stacked_not_overwritten():
    root = parsed(
        rank_lines([Series("A", [1]), Series("B", [1])], ["now"], chart_id="t", title="t", description="d")
    )
    names = {t.text: float(t.get("y")) for t in root.iter(f"{SVG}text") if t.text in {"A", "B"}}
    assert names["A"] != names["B"]
