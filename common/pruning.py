"""Deleting old rows without long transactions: a bounded chunk at a time."""

from __future__ import annotations

import re
from datetime import timedelta

from django.core.management.base import CommandError
from django.db import transaction
from django.db.models import QuerySet

CHUNK = 5000
UNITS = {"d": "days", "h": "hours", "m": "minutes", "w": "weeks"}


def delete_in_chunks(rows: QuerySet, chunk: int = CHUNK) -> int:
    """Delete `rows`, `chunk` of them per transaction (short locks, bounded memory); how many."""
    total = 0
    while True:
        ids = list(rows.values_list("pk", flat=True)[:chunk])
        if not ids:
            return total
        with transaction.atomic(using=rows.db):
            rows.filter(pk__in=ids).delete()
        total += len(ids)


def parse_age(text: str) -> timedelta:
    """A command's age argument (`30d`, `12h`, `2w`, `45m`) as a timedelta."""
    match = re.fullmatch(r"\s*(\d+)\s*([wdhm])\s*", text)
    if not match:
        raise CommandError(f"an age is a number and a unit (w, d, h, m), e.g. 30d, not {text!r}")
    return timedelta(**{UNITS[match.group(2)]: int(match.group(1))})
