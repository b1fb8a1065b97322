"""Money as seed 002 wants it: `Decimal` from the raw strings, two decimals, ROUND_HALF_UP."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal

CENT = Decimal("0.01")
_MICRO = Decimal("0.000001")


def q2(value: Decimal) -> Decimal:
    """Round to cents, half up (never banker's rounding)."""
    return value.quantize(CENT, rounding=ROUND_HALF_UP)


def money(value: Decimal) -> str:
    """`1234.5` -> `"1234.50"`: the machine form used in tool results and the QR URL."""
    return f"{q2(value):f}"


def money_grouped(value: Decimal) -> str:
    """`1234.5` -> `"1,234.50"`: the form printed for people."""
    return f"{q2(value):,.2f}"


def exact(value: Decimal) -> str:
    """At least two decimals and up to six, without trailing zeros: `3.2004`, `25.00`, `1.8704`.

    Issues print expected values and differences this way, so a sub-cent difference is not
    rounded away into a confusing "expected 3.20, found 3.20".
    """
    text = f"{value.quantize(_MICRO, rounding=ROUND_HALF_UP):f}"
    whole, _, frac = text.partition(".")
    frac = frac.rstrip("0").ljust(2, "0")
    return f"{whole}.{frac}"
