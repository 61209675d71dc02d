"""Small inline SVG charts for the admin dashboard: no JavaScript, no chart library.

Each function returns safe markup (every label is escaped) sized by a viewBox,
so the page scales it; bar heights are relative to the largest value shown.
"""

from __future__ import annotations

from collections.abc import Sequence

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

SUCCEEDED = "#2e7d32"
DEAD = "#c62828"
LATE = "#ef6c00"
NEUTRAL = "#417690"  # the admin's own blue
CANCELLED = "#757575"  # grey: will never run


def _svg(width: int, height: int, body: list[str], label: str) -> SafeString:
    return mark_safe(
        f'<svg class="dashboard-chart" role="img" aria-label="{escape(label)}" viewBox="0 0 {width} {height}" '
        f'width="100%" preserveAspectRatio="xMinYMin meet" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{escape(label)}</title>{''.join(body)}</svg>"
    )


def stacked_columns(
    columns: Sequence[tuple[str, Sequence[tuple[int, str, str]]]],
    *,
    label: str,
    height: int = 120,
    column_width: int = 28,
    unit: str = "",
) -> SafeString:
    """Columns left to right, each a stack of (value, colour, name) from the bottom, with a caption under it.

    The scale's top reads "max <top> <unit>": a bare number hides whether it counts jobs or milliseconds.
    """
    top = max((sum(value for value, _, _ in stack) for _, stack in columns), default=0) or 1
    plot = height - 18
    body = [f'<line x1="0" y1="{plot}" x2="{len(columns) * column_width}" y2="{plot}" stroke="#999" />']
    for index, (caption, stack) in enumerate(columns):
        x = index * column_width + 2
        y = plot
        for value, colour, name in stack:
            if value <= 0:
                continue
            bar = max(1, round(value / top * (plot - 4)))
            y -= bar
            body.append(
                f'<rect x="{x}" y="{y}" width="{column_width - 4}" height="{bar}" fill="{colour}">'
                f"<title>{escape(caption)}: {value} {escape(name)}</title></rect>"
            )
        body.append(
            f'<text x="{x + (column_width - 4) / 2}" y="{height - 4}" font-size="9" text-anchor="middle" '
            f'fill="#666">{escape(caption)}</text>'
        )
    scale = f"max {top} {unit}" if unit else f"max {top}"
    body.append(f'<text x="2" y="10" font-size="9" fill="#666">{escape(scale)}</text>')
    return _svg(len(columns) * column_width, height, body, label)


def horizontal_bars(rows: Sequence[tuple[str, int, str]], *, label: str, width: int = 420) -> SafeString:
    """One bar per (name, value, colour), the value written after it."""
    top = max((value for _, value, _ in rows), default=0) or 1
    row_height = 22
    name_width = 90
    room = width - name_width - 70
    body = []
    for index, (name, value, colour) in enumerate(rows):
        y = index * row_height
        bar = round(value / top * room) if value else 0
        body.append(f'<text x="0" y="{y + 15}" font-size="12" fill="#333">{escape(name)}</text>')
        body.append(
            f'<rect x="{name_width}" y="{y + 4}" width="{max(bar, 1)}" height="{row_height - 8}" fill="{colour}" />'
        )
        body.append(f'<text x="{name_width + bar + 6}" y="{y + 15}" font-size="12" fill="#333">{value}</text>')
    return _svg(width, max(row_height * len(rows), row_height), body, label)


def sparkline(values: Sequence[int], *, label: str, width: int = 240, height: int = 28) -> SafeString:
    """A line over the values (oldest first) with the last point marked."""
    if not values:
        return _svg(width, height, [], label)
    top = max(values) or 1
    step = width / max(len(values) - 1, 1)
    points = [(round(i * step, 1), round(height - 3 - value / top * (height - 6), 1)) for i, value in enumerate(values)]
    path = " ".join(f"{x},{y}" for x, y in points)
    last_x, last_y = points[-1]
    body = [
        f'<polyline points="{path}" fill="none" stroke="{DEAD}" stroke-width="1.5" />',
        f'<circle cx="{last_x}" cy="{last_y}" r="2.5" fill="{DEAD}" />',
    ]
    return _svg(width, height, body, label)
