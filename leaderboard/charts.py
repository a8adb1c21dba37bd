"""Server-side SVG charts from plain data: no Django, no JavaScript, nothing fetched from elsewhere.

Each function returns SVG markup as a string, every piece of text escaped, with <title> and <desc> for
screen readers; pages put a table of the same figures beside each chart. Styling comes from SVG
presentation attributes and classes (the content security policy forbids style attributes), and every
data mark carries the class "mark".
"""

from dataclasses import dataclass
from html import escape

PALETTE = ["#2f5bd3", "#e8743b", "#19a979", "#ed4a7b", "#945ecf", "#13a4b4", "#525df4", "#bf399e", "#6c8893"]
FONT = 'font-family="system-ui, sans-serif"'
LABEL_CHARS = 26


@dataclass(frozen=True)
class Interval:
    label: str
    estimate: float | None  # None: not fitted yet (listed, with no mark)
    low: float | None = None
    high: float | None = None
    muted: bool = False  # provisional or withdrawn: drawn lighter


@dataclass(frozen=True)
class Cell:
    shade: float | None  # 0..1 on the chart's colour scale; None: no data (grey)
    text: str = ""
    tooltip: str = ""


@dataclass(frozen=True)
class Series:
    label: str
    values: list[float | None]  # one per x position; None leaves a gap


def _text(value) -> str:
    return escape(str(value), quote=True)


def _short(label: str) -> str:
    return label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"


def _number(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".") if value != int(value) else str(int(value))


def _frame(chart_id: str, width: float, height: float, title: str, description: str, body: list[str]) -> str:
    return "\n".join(
        [
            f'<svg class="chart" id="{_text(chart_id)}" xmlns="http://www.w3.org/2000/svg" role="img" '
            f'viewBox="0 0 {_number(width)} {_number(height)}" width="{_number(width)}" '
            f'height="{_number(height)}" aria-labelledby="{_text(chart_id)}-title" '
            f'aria-describedby="{_text(chart_id)}-desc" '
            f"{FONT}>",
            f'<title id="{_text(chart_id)}-title">{_text(title)}</title>',
            f'<desc id="{_text(chart_id)}-desc">{_text(description)}</desc>',
            *body,
            "</svg>",
        ]
    )


def _ticks(low: float, high: float, count: int = 5) -> list[float]:
    step = (high - low) / (count - 1)
    return [low + step * i for i in range(count)]


def interval_plot(
    rows: list[Interval], *, chart_id: str, title: str, description: str, domain: tuple[float, float] = (0, 1)
) -> str:
    """One row per entry: a dot at the estimate and a bar over its interval, on a shared axis."""
    left, right, top, row_height = 190, 24, 34, 26
    width = 680
    height = top + row_height * max(len(rows), 1) + 14
    fitted = [r for r in rows if r.estimate is not None]
    low = min([domain[0], *(r.low for r in fitted if r.low is not None)])
    high = max([domain[1], *(r.high for r in fitted if r.high is not None)])
    plot_width = width - left - right

    def x(value: float) -> float:
        return left + (value - low) / ((high - low) or 1) * plot_width

    body = []
    for tick in _ticks(low, high):
        body.append(
            f'<line x1="{x(tick):.1f}" x2="{x(tick):.1f}" y1="{top - 6}" y2="{height - 10}" '
            'stroke="#d9dee8" stroke-width="1"/>'
        )
        body.append(
            f'<text x="{x(tick):.1f}" y="{top - 12}" font-size="11" text-anchor="middle" '
            f'fill="#5d6678">{tick:.2f}</text>'
        )
    for index, row in enumerate(rows):
        y = top + row_height * index + row_height / 2
        opacity = ' opacity="0.55"' if row.muted else ""
        body.append(
            f'<text x="{left - 10}" y="{y + 4:.1f}" font-size="12" text-anchor="end" fill="#1d2330">'
            f"{_text(_short(row.label))}<title>{_text(row.label)}</title></text>"
        )
        if row.estimate is None:
            body.append(
                f'<text x="{left + 4}" y="{y + 4:.1f}" font-size="11" fill="#5d6678">not fitted yet</text>'
            )
            continue
        tooltip = f"{row.label}: {row.estimate:.3f}"
        if row.low is not None and row.high is not None:
            tooltip += f" (95% interval {row.low:.3f} to {row.high:.3f})"
            body.append(
                f'<line class="mark interval" x1="{x(row.low):.1f}" x2="{x(row.high):.1f}" y1="{y:.1f}" '
                f'y2="{y:.1f}" stroke="#2f5bd3" stroke-width="4" stroke-linecap="round"{opacity}>'
                f"<title>{_text(tooltip)}</title></line>"
            )
        body.append(
            f'<circle class="mark estimate" cx="{x(row.estimate):.1f}" cy="{y:.1f}" r="5" fill="#1d2330"'
            f"{opacity}><title>{_text(tooltip)}</title></circle>"
        )
    return _frame(chart_id, width, height, title, description, body)


def _shade_rgb(shade: float | None, *, diverging: bool) -> tuple[int, int, int]:
    if shade is None:
        return (236, 238, 243)
    shade = min(max(shade, 0.0), 1.0)
    if diverging:  # orange (0) through white (0.5) to blue (1)
        base, t = ((232, 116, 59), 1 - shade * 2) if shade < 0.5 else ((47, 91, 211), shade * 2 - 1)
    else:  # white (0) to blue (1)
        base, t = (47, 91, 211), shade
    red, green, blue = (round(255 + (channel - 255) * t) for channel in base)
    return red, green, blue


def _hex(rgb: tuple[int, int, int]) -> str:
    return "#{:02x}{:02x}{:02x}".format(*rgb)


def _ink_on(rgb: tuple[int, int, int]) -> str:
    """White text on dark cells, dark text on light ones."""
    red, green, blue = rgb
    return "#ffffff" if 0.299 * red + 0.587 * green + 0.114 * blue < 150 else "#1d2330"


def grid(
    row_labels: list[str],
    column_labels: list[str],
    cells: list[list[Cell]],
    *,
    chart_id: str,
    title: str,
    description: str,
    diverging: bool = False,
) -> str:
    """A heat grid: rows by columns, each cell shaded by its value with its figure written in it."""
    left, size = 190, 44
    # Column labels are written at 45 degrees: they reach up and to the right by about this much.
    reach = 4.6 * max((len(_short(label)) for label in column_labels), default=0)
    top = round(max(40, reach + 16))
    width = round(left + size * max(len(column_labels), 1) + reach + 10)
    height = top + size * max(len(row_labels), 1) + 10
    body = []
    for column, label in enumerate(column_labels):
        cx = left + size * column + size / 2
        body.append(
            f'<text x="{cx:.1f}" y="{top - 8}" font-size="11" fill="#1d2330" '
            f'transform="rotate(-45 {cx:.1f} {top - 8})">'
            f"{_text(_short(label))}<title>{_text(label)}</title></text>"
        )
    for row, label in enumerate(row_labels):
        y = top + size * row
        body.append(
            f'<text x="{left - 8}" y="{y + size / 2 + 4:.1f}" font-size="12" text-anchor="end" '
            'fill="#1d2330">'
            f"{_text(_short(label))}<title>{_text(label)}</title></text>"
        )
        for column, cell in enumerate(cells[row]):
            x = left + size * column
            rgb = _shade_rgb(cell.shade, diverging=diverging)
            mark = "mark cell" if cell.shade is not None else "cell empty"
            tooltip = cell.tooltip or cell.text
            body.append(
                f'<rect class="{mark}" x="{x}" y="{y}" width="{size - 2}" height="{size - 2}" rx="3" '
                f'fill="{_hex(rgb)}"><title>{_text(tooltip)}</title></rect>'
            )
            if cell.text:
                body.append(
                    f'<text x="{x + size / 2 - 1:.1f}" y="{y + size / 2 + 3:.1f}" font-size="11" '
                    f'text-anchor="middle" fill="{_ink_on(rgb)}">{_text(cell.text)}</text>'
                )
    return _frame(chart_id, width, height, title, description, body)


def rank_lines(
    series: list[Series], x_labels: list[str], *, chart_id: str, title: str, description: str
) -> str:
    """Ranks over time: one line per entry, rank 1 at the top, a gap where a rank is missing."""
    left, right, top, bottom = 40, 190, 20, 40
    worst = max([1, *(v for s in series for v in s.values if v is not None)])
    step_y = 28
    width = max(left + right + 60 * max(len(x_labels) - 1, 1), 480)
    height = top + bottom + step_y * (worst - 1) + 10
    plot_width = width - left - right

    def x(index: int) -> float:
        return left + (plot_width * index / (len(x_labels) - 1) if len(x_labels) > 1 else plot_width / 2)

    def y(rank: float) -> float:
        return top + step_y * (rank - 1)

    body = []
    for rank in range(1, int(worst) + 1):
        body.append(
            f'<text x="{left - 10}" y="{y(rank) + 4:.1f}" font-size="11" text-anchor="end" '
            f'fill="#5d6678">{rank}</text>'
        )
        body.append(
            f'<line x1="{left}" x2="{left + plot_width}" y1="{y(rank):.1f}" y2="{y(rank):.1f}" '
            'stroke="#eceef3" stroke-width="1"/>'
        )
    shown = range(0, len(x_labels), max(1, len(x_labels) // 6))
    for index in shown:
        body.append(
            f'<text x="{x(index):.1f}" y="{height - 12}" font-size="11" text-anchor="middle" '
            f'fill="#5d6678">{_text(x_labels[index])}</text>'
        )
    ends_at: dict[tuple[int, float], int] = {}
    for number, line in enumerate(series):
        colour = PALETTE[number % len(PALETTE)]
        segments, current = [], []
        for index, value in enumerate(line.values):
            if value is None:
                if current:
                    segments.append(current)
                current = []
            else:
                current.append((x(index), y(value), index, value))
        if current:
            segments.append(current)
        for segment in segments:
            if len(segment) > 1:
                points = " ".join(f"{px:.1f},{py:.1f}" for px, py, _, _ in segment)
                body.append(
                    f'<polyline class="mark line" points="{points}" fill="none" stroke="{colour}" '
                    f'stroke-width="2.5"/>'
                )
            for px, py, index, value in segment:
                point_title = f"{line.label}: rank {_number(value)} ({x_labels[index]})"
                body.append(
                    f'<circle class="mark point" cx="{px:.1f}" cy="{py:.1f}" r="4" fill="{colour}">'
                    f"<title>{_text(point_title)}</title></circle>"
                )
        last = next(((i, v) for i, v in reversed(list(enumerate(line.values))) if v is not None), None)
        if last is not None:
            # Tied models end on the same rank: stack their names instead of writing one over another.
            label_y = y(last[1]) + 4 + 12 * ends_at.get(last, 0)
            ends_at[last] = ends_at.get(last, 0) + 1
            body.append(
                f'<text x="{x(last[0]) + 10:.1f}" y="{label_y:.1f}" font-size="12" fill="{colour}">'
                f"{_text(_short(line.label))}</text>"
            )
    return _frame(chart_id, width, height, title, description, body)
