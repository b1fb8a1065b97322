"""The SQL of the home's hot writes, written once per database vendor and run directly.

Building and compiling a queryset (`select_for_update().first()`, `save()`,
`objects.create()`) costs several times what the database takes to run the statement, and
every agent's and dashboard's change pays it. These are the same statements the ORM would
run, with table and column names taken from the models; values are prepared by the model
fields, so dates and JSON are stored exactly as the ORM stores them: for the common values
(aware datetimes, dicts for JSON, plain strings and booleans) by the backend adapter that
`get_db_prep_save` ends in, called directly (`_preparer`); anything else by
`get_db_prep_save` itself.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from datetime import datetime
from sqlite3 import Cursor
from typing import Any

from django.db import connections, router
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import BooleanField, CharField, DateTimeField, JSONField, Model

from devices.models import Event

EVENT_COLUMNS = ("at", "actor", "interface", "action", "target", "before", "after")


@functools.cache
def _dialect(alias: str) -> BaseDatabaseWrapper:
    """A wrapper of `alias` used only for its SQL dialect and its value adaptation, never
    connected. (On an event loop `connections[alias]` is per task context: every request
    would build a new wrapper, which costs more than the statement.)"""
    return connections.create_connection(alias)


def _q(connection: BaseDatabaseWrapper, name: str) -> str:
    return connection.ops.quote_name(name)


def _column(model: type[Model], field: str) -> str:
    return model._meta.get_field(field).column


@functools.cache
def _select_sql(vendor: str, model: type[Model], key: str, columns: tuple[str, ...], for_update: bool) -> str:
    connection = _dialect(router.db_for_write(model))
    cols = ", ".join(_q(connection, _column(model, c)) for c in columns)
    table, where = _q(connection, model._meta.db_table), _q(connection, _column(model, key))
    sql = f"SELECT {cols} FROM {table} WHERE {where} = %s"
    return sql + (" FOR UPDATE" if for_update else "")


@functools.cache
def _update_sql(vendor: str, model: type[Model], columns: tuple[str, ...]) -> str:
    connection = _dialect(router.db_for_write(model))
    sets = ", ".join(f"{_q(connection, _column(model, c))} = %s" for c in columns)
    return f"UPDATE {_q(connection, model._meta.db_table)} SET {sets} WHERE {_q(connection, 'id')} = %s"


@functools.cache
def _insert_sql(vendor: str, model: type[Model], columns: tuple[str, ...]) -> str:
    connection = _dialect(router.db_for_write(model))
    cols = ", ".join(_q(connection, _column(model, c)) for c in columns)
    marks = ", ".join(["%s"] * len(columns))
    return f"INSERT INTO {_q(connection, model._meta.db_table)} ({cols}) VALUES ({marks})"


@functools.cache
def _qmark(sql: str) -> str:
    """The SQL with sqlite3's own placeholders (what Django's SQLite backend does per call)."""
    return sql.replace("%s", "?")


@functools.cache
def _preparer(alias: str, model: type[Model], name: str) -> Callable[[Any], Any]:
    """What `get_db_prep_save` does to a value of field `name`, without the generic steps it
    takes first (to_python, naive-datetime warnings, expression checks), which cost more
    than the statement for the values the home writes. Other values take the field's path."""
    field = model._meta.get_field(name)
    connection = _dialect(alias)

    def generic(value: Any) -> Any:
        return field.get_db_prep_save(value, connection)

    if isinstance(field, JSONField):
        adapt_json, encoder = connection.ops.adapt_json_value, field.encoder

        def json_value(value: Any) -> Any:
            if value is None:  # SQL NULL, as the field stores None
                return None
            return adapt_json(value, encoder) if type(value) in (dict, list) else generic(value)

        return json_value
    if isinstance(field, DateTimeField):
        adapt_datetime = connection.ops.adapt_datetimefield_value

        def datetime_value(value: Any) -> Any:
            if type(value) is datetime and value.tzinfo is not None:
                return adapt_datetime(value)
            return generic(value)  # naive (USE_TZ off, or a mistake the field warns about)

        return datetime_value
    if type(field) in (CharField, BooleanField):
        plain = str if isinstance(field, CharField) else bool
        return lambda value: value if type(value) is plain else generic(value)
    return generic


def prepare(model: type[Model], values: dict[str, Any]) -> list[Any]:
    """`values` (field name -> Python value) as the database takes them, in order."""
    alias = router.db_for_write(model)
    return [_preparer(alias, model, name)(value) for name, value in values.items()]


def _execute(model: type[Model], sql: str, params: list[Any], raw: Cursor | None, *, fetch: bool = False):
    """Run one statement through Django's connection, or through `raw`, a sqlite3 cursor
    inside a transaction opened by `devices.loop_writes`."""
    if raw is not None:
        raw.execute(_qmark(sql), params)
        return raw.fetchone() if fetch else None
    with connections[router.db_for_write(model)].cursor() as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone() if fetch else None


def select_for_update(
    model: type[Model], key: str, value: Any, columns: tuple[str, ...], raw: Cursor | None = None
) -> tuple | None:
    """`columns` of the row whose `key` is `value`, locked until the transaction ends.

    On SQLite the transaction itself holds the write lock (it starts IMMEDIATE)."""
    connection = _dialect(router.db_for_write(model))
    for_update = raw is None and connection.features.has_select_for_update
    sql = _select_sql(connection.vendor, model, key, columns, for_update)
    return _execute(model, sql, [value], raw, fetch=True)


def update(model: type[Model], pk: int, values: dict[str, Any], raw: Cursor | None = None) -> None:
    """UPDATE one row by primary key (no signals, as `QuerySet.update`)."""
    connection = _dialect(router.db_for_write(model))
    sql = _update_sql(connection.vendor, model, tuple(values))
    _execute(model, sql, [*prepare(model, values), pk], raw)


def _event_params(alias: str, row: dict[str, Any]) -> list[Any]:
    return [_preparer(alias, Event, c)(row[c]) for c in EVENT_COLUMNS]


def insert_events(rows: list[dict[str, Any]], raw: Cursor | None = None) -> None:
    """INSERT audit events (dicts with every column of `EVENT_COLUMNS`), `at` as given (the
    moment of the change, not of the insert)."""
    if not rows:
        return
    alias = router.db_for_write(Event)
    connection = _dialect(alias)
    sql = _insert_sql(connection.vendor, Event, EVENT_COLUMNS)
    if len(rows) == 1:
        _execute(Event, sql, _event_params(alias, rows[0]), raw)
        return
    params = [_event_params(alias, row) for row in rows]
    if raw is not None:
        raw.executemany(_qmark(sql), params)
        return
    with connections[alias].cursor() as cursor:
        cursor.executemany(sql, params)


def event_row(
    *, at: datetime, actor: str, interface: str, action: str, target: str, before: Any, after: Any
) -> dict[str, Any]:
    return {
        "at": at,
        "actor": actor[:150],
        "interface": interface,
        "action": action,
        "target": target,
        "before": before,
        "after": after,
    }
