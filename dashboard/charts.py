"""A sensor's history as an inline SVG line chart, drawn on the server (no JavaScript, no
library): it scales to the page's width, so it reads on a phone as well as on a desktop."""

from __future__ import annotations

from datetime import datetime, timedelta

from django.utils import timezone
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from devices.telemetry.selectors import SensorSeries

WIDTH, HEIGHT = 720, 300
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 28, 36
WIDTH_WIDE = WIDTH
NARROW = 360  # the phone's chart: same text size, fewer ticks
TICK_FORMATS = {"hour": "%H:%M", "day": "%H:%M", "week": "%a %d"}
TICK_STEPS = {"hour": timedelta(minutes=10), "day": timedelta(hours=4), "week": timedelta(days=1)}


def _nice_bounds(low: float, high: float) -> tuple[float, float]:
    if low == high:
        pad = abs(low) * 0.1 or 1.0
        return low - pad, high + pad
    pad = (high - low) * 0.08
    return low - pad, high + pad


def _fmt(value: float) -> str:
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.1f}"


def _first_tick(since: datetime, step: timedelta) -> datetime:
    local = timezone.localtime(since)
    if step >= timedelta(days=1):
        start = local.replace(hour=0, minute=0, second=0, microsecond=0)
    elif step >= timedelta(hours=1):
        start = local.replace(minute=0, second=0, microsecond=0)
        start -= timedelta(hours=start.hour % int(step.total_seconds() // 3600))
    else:
        minutes = int(step.total_seconds() // 60)
        start = local.replace(minute=local.minute - local.minute % minutes, second=0, microsecond=0)
    while start < local:
        start += step
    return start


def line_chart(
    series: SensorSeries, range_name: str, title: str, *, width: int = WIDTH, css: str = ""
) -> SafeString:
    """`series` as `devices.telemetry.selectors.sensor_series` returns it; `width` in SVG units (text stays
    13 units high, so a narrow chart shown at a phone's width keeps readable labels)."""
    ids = f"chart-{width}"
    points = series["points"]
    since, until, unit = series["since"], series["until"], series["unit"]
    plot_w, plot_h = width - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    span = (until - since).total_seconds() or 1.0
    parts = [
        f'<svg class="chart {css}" viewBox="0 0 {width} {HEIGHT}" role="img" '
        f'preserveAspectRatio="xMidYMid meet" aria-labelledby="{ids}-title {ids}-desc">',
        f'<title id="{ids}-title">{escape(title)}</title>',
    ]
    if not points:
        parts.append(f'<desc id="{ids}-desc">No readings in this range.</desc>')
        parts.append(
            f'<text x="{width / 2}" y="{HEIGHT / 2}" text-anchor="middle" class="chart-empty">'
            "No readings in this range</text></svg>"
        )
        return mark_safe("".join(parts))
    values = [v for _, v in points]
    low, high = _nice_bounds(min(values), max(values))

    def x(at: datetime) -> float:
        return LEFT + (at - since).total_seconds() / span * plot_w

    def y(value: float) -> float:
        return TOP + (high - value) / (high - low) * plot_h

    parts.append(
        f'<desc id="{ids}-desc">{len(points)} readings; lowest {_fmt(min(values))} {escape(unit)}, '
        f"highest {_fmt(max(values))} {escape(unit)}, latest {_fmt(values[-1])} {escape(unit)}.</desc>"
    )
    for i in range(5):  # horizontal grid with value labels
        value = low + (high - low) * i / 4
        gy = y(value)
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{width - RIGHT}" y1="{gy:.1f}" y2="{gy:.1f}"/>')
        parts.append(
            f'<text class="axis" x="{LEFT - 8}" y="{gy + 4:.1f}" text-anchor="end">{_fmt(value)}</text>'
        )
    step = TICK_STEPS[range_name] * (2 if width < WIDTH_WIDE else 1)
    tick = _first_tick(since, step)
    while tick <= until:
        tx = x(tick)
        parts.append(
            f'<line class="grid grid-v" x1="{tx:.1f}" x2="{tx:.1f}" y1="{TOP}" y2="{HEIGHT - BOTTOM}"/>'
        )
        parts.append(
            f'<text class="axis" x="{tx:.1f}" y="{HEIGHT - BOTTOM + 20}" text-anchor="middle">'
            f"{tick.strftime(TICK_FORMATS[range_name])}</text>"
        )
        tick += step
    coords = " ".join(f"{x(at):.1f},{y(v):.1f}" for at, v in points)
    base = HEIGHT - BOTTOM
    first_x, last_x = x(points[0][0]), x(points[-1][0])
    parts.append(f'<polygon class="area" points="{first_x:.1f},{base} {coords} {last_x:.1f},{base}"/>')
    parts.append(f'<polyline class="line" points="{coords}"/>')
    lx, ly = x(points[-1][0]), y(values[-1])
    parts.append(f'<circle class="dot" cx="{lx:.1f}" cy="{ly:.1f}" r="4"/>')
    if unit:
        parts.append(
            f'<text class="axis unit" x="{LEFT - 8}" y="{TOP - 16}" text-anchor="end">{escape(unit)}</text>'
        )
    parts.append("</svg>")
    return mark_safe("".join(parts))
