"""A sensor's history as an inline SVG chart, drawn on the server (no library): it scales to
the page's width, so it reads on a phone as well as on a desktop. Values get round ticks (1, 2
or 5 times a power of ten); a two-state channel (presence) is drawn as bands where it was on.
The chart carries its points' positions and words (`data-points`), which `app.js` shows on
hover or touch; without script, the numbers are in the page's table."""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime, timedelta

from django.utils import dateformat, timezone
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from devices.telemetry import units
from devices.telemetry.selectors import SensorSeries

WIDTH, HEIGHT = 720, 300
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 28, 36
WIDTH_WIDE = WIDTH
NARROW = 360  # the phone's chart: same text size, fewer ticks
TICK_FORMATS = {"hour": "%H:%M", "day": "%H:%M", "week": "%a %d"}
TICK_STEPS = {"hour": timedelta(minutes=10), "day": timedelta(hours=4), "week": timedelta(days=1)}


HOVER_POINTS = 240  # at most this many hover targets per chart (the page stays light)


def nice_step(span: float, count: int = 5) -> float:
    """The round step (1, 2 or 5 times a power of ten) that cuts `span` into about `count`."""
    raw = span / count
    magnitude = 10 ** math.floor(math.log10(raw))
    return next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw * 0.999)


def nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round values from at or below `low` to at or above `high`: `[20, 21, 22, 23]`."""
    if low == high:
        pad = abs(low) * 0.1 or 1.0
        low, high = low - pad, high + pad
    step = nice_step(high - low, count)
    start, end = math.floor(low / step + 1e-9), math.ceil(high / step - 1e-9)
    return [round(i * step, 10) for i in range(start, end + 1)]


def tick_text(value: float, step: float) -> str:
    """A tick's value with as many decimals as its step needs (`0.5` -> one)."""
    return units.rounded(value, max(0, -math.floor(math.log10(step) + 1e-9)))


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
    series: SensorSeries, range_name: str, title: str, *, channel: str = "", width: int = WIDTH, css: str = ""
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
    bands = units.is_state(channel)
    ticks = [0.0, 1.0] if bands else nice_ticks(min(values), max(values))
    low, high = ticks[0], ticks[-1]

    def x(at: datetime) -> float:
        return LEFT + (at - since).total_seconds() / span * plot_w

    def y(value: float) -> float:
        return TOP + (high - value) / (high - low) * plot_h

    def said(value: float) -> str:
        return units.text(channel, value, unit)

    parts[0] = parts[0].replace("<svg ", f'<svg data-points="{_hover_points(points, x, y, said)}" ', 1)
    parts.append(
        f'<desc id="{ids}-desc">{len(points)} readings; lowest {escape(said(min(values)))}, '
        f"highest {escape(said(max(values)))}, latest {escape(said(values[-1]))}.</desc>"
    )
    if not bands:
        step_value = ticks[1] - ticks[0]
        for value in ticks:  # horizontal grid with round value labels
            gy = y(value)
            parts.append(f'<line class="grid" x1="{LEFT}" x2="{width - RIGHT}" y1="{gy:.1f}" y2="{gy:.1f}"/>')
            parts.append(
                f'<text class="axis" x="{LEFT - 8}" y="{gy + 4:.1f}" text-anchor="end">'
                f"{tick_text(value, step_value)}</text>"
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
    base = HEIGHT - BOTTOM
    if bands:
        for start, end in _occupied(points, until):
            parts.append(
                f'<rect class="band" x="{x(start):.1f}" y="{TOP}" width="{max(x(end) - x(start), 1):.1f}" '
                f'height="{plot_h}"/>'
            )
        parts.append(f'<line class="grid" x1="{LEFT}" x2="{width - RIGHT}" y1="{base}" y2="{base}"/>')
        occupied = units.channel(channel).states or ("", "")
        parts.append(
            f'<text class="axis unit" x="{LEFT}" y="{TOP - 10}">'
            f'<tspan class="band-key">■</tspan> {escape(str(occupied[1]))}</text>'
        )
    else:
        coords = " ".join(f"{x(at):.1f},{y(v):.1f}" for at, v in points)
        first_x, last_x = x(points[0][0]), x(points[-1][0])
        parts.append(f'<polygon class="area" points="{first_x:.1f},{base} {coords} {last_x:.1f},{base}"/>')
        parts.append(f'<polyline class="line" points="{coords}"/>')
        lx, ly = x(points[-1][0]), y(values[-1])
        parts.append(f'<circle class="dot" cx="{lx:.1f}" cy="{ly:.1f}" r="4"/>')
        shown_unit = units.channel(channel, unit).unit
        if shown_unit:
            parts.append(
                f'<text class="axis unit" x="{LEFT - 8}" y="{TOP - 16}" text-anchor="end">'
                f"{escape(shown_unit)}</text>"
            )
    parts.append(
        '<g class="hover" hidden><line class="hover-line"/><circle class="hover-dot" r="5"/>'
        '<rect class="hover-box" rx="4"/><text class="hover-text"></text></g>'
    )
    parts.append("</svg>")
    return mark_safe("".join(parts))


def _hover_points(
    points: list[tuple[datetime, float]],
    x: Callable[[datetime], float],
    y: Callable[[float], float],
    said: Callable[[float], str],
) -> str:
    """`x,y,words;…` for at most HOVER_POINTS points (evenly picked, the latest kept)."""
    step = max(1, math.ceil(len(points) / HOVER_POINTS))
    picked = points[::step]
    if picked[-1] is not points[-1]:
        picked.append(points[-1])
    return escape(
        ";".join(
            f"{x(at):.1f},{y(v):.1f},{dateformat.format(timezone.localtime(at), 'D j, H:i')} · {said(v)}"
            for at, v in picked
        )
    )


def _occupied(points: list[tuple[datetime, float]], until: datetime) -> list[tuple[datetime, datetime]]:
    """The stretches a two-state channel was on: from a reading of 1 to the next reading of 0
    (or `until`, if it is still on)."""
    stretches: list[tuple[datetime, datetime]] = []
    began: datetime | None = None
    for at, value in points:
        if value >= 0.5 and began is None:
            began = at
        elif value < 0.5 and began is not None:
            stretches.append((began, at))
            began = None
    if began is not None:
        stretches.append((began, until))
    return stretches
