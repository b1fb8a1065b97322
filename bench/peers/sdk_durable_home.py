"""The benchmarks' write peer: `sdk_home_server`'s six tools on the SDK's `MCPServer`, whose
writes commit to a database before they answer, as HomeHub's do.

`set_light_state` (and `set_alarm_state`) make the same durable write as HomeHub's service:
the light's row (`on`, `updated_at`) and one audit row in `devices_event` (time, actor,
interface, action, target, before and after as JSON), committed in one transaction per call,
with the database driver directly (`sqlite3`, or `psycopg` with its defaults) on one
connection opened at start. The database is `PEER_DATABASE_URL`, which the benchmarks make
as a copy of HomeHub's migrated and seeded one on the same server (same tables, same
indexes: a SQLite file beside HomeHub's, or a PostgreSQL database on the same server), so
both sides pay the same commit. SQLite runs as HomeHub's settings run it (WAL,
`synchronous=NORMAL`, `BEGIN IMMEDIATE`). Reads answer from memory, loaded from the database
at start and kept by the writes.

The driver runs on the event loop, without a hop to a thread: the cheapest way for this
server (one connection, every write in turn), so the figure is the best this peer can do.

    PEER_DATABASE_URL=sqlite:////tmp/peer.sqlite3 .venv/bin/python bench/peers/sdk_durable_home.py
    cd bench/peers && PEER_DATABASE_URL=postgres://... ../../.venv/bin/daphne -p 8765 sdk_durable_http:app
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
from datetime import UTC, datetime
from typing import Any

from mcp.server.mcpserver import MCPServer
from sdk_home_server import Home, build_server

ACTOR = "sdk-peer"
UPDATE_LIGHT = 'UPDATE devices_light SET "on" = {p}, updated_at = {p} WHERE name = {p}'
UPDATE_ALARM = "UPDATE devices_alarm SET armed = {p}, updated_at = {p} WHERE id = 1"
INSERT_EVENT = (
    "INSERT INTO devices_event (at, actor, interface, action, target, before, after) "
    "VALUES ({p}, {p}, {p}, {p}, {p}, {p}, {p})"
)


class SqliteDriver:
    def __init__(self, path: str) -> None:
        self.conn = sqlite3.connect(path, isolation_level=None, timeout=20)
        self.conn.execute("PRAGMA journal_mode=WAL")
        self.conn.execute("PRAGMA synchronous=NORMAL")

    @staticmethod
    def sql(statement: str) -> str:
        return statement.format(p="?")

    @staticmethod
    def timestamp(moment: datetime) -> str:
        return moment.replace(tzinfo=None).strftime("%Y-%m-%d %H:%M:%S.%f")  # as Django stores it

    @staticmethod
    def json(value: Any) -> str:
        return json.dumps(value)

    def query(self, statement: str) -> list[tuple]:
        return self.conn.execute(statement).fetchall()

    def commit(self, statements: list[tuple[str, tuple]]) -> None:
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            for statement, params in statements:
                self.conn.execute(statement, params)
        except BaseException:
            self.conn.execute("ROLLBACK")
            raise
        self.conn.execute("COMMIT")


class PostgresDriver:
    def __init__(self, url: str) -> None:
        import psycopg
        from psycopg.types.json import Jsonb

        self.conn = psycopg.connect(url, autocommit=True)
        self._jsonb = Jsonb

    @staticmethod
    def sql(statement: str) -> str:
        return statement.format(p="%s")

    @staticmethod
    def timestamp(moment: datetime) -> datetime:
        return moment

    def json(self, value: Any) -> Any:
        return self._jsonb(value)

    def query(self, statement: str) -> list[tuple]:
        return self.conn.execute(statement).fetchall()

    def commit(self, statements: list[tuple[str, tuple]]) -> None:
        with self.conn.transaction():
            for statement, params in statements:
                self.conn.execute(statement, params)


def connect(url: str) -> SqliteDriver | PostgresDriver:
    if url.startswith("sqlite:///"):
        return SqliteDriver(url.removeprefix("sqlite://"))
    if url.startswith(("postgres://", "postgresql://")):
        return PostgresDriver(url)
    raise SystemExit(f"PEER_DATABASE_URL: a sqlite:/// or postgres:// URL, not {url!r}")


class DurableHome(Home):
    """The home in memory, each change committed to the database (row and audit) first."""

    def __init__(self, driver: SqliteDriver | PostgresDriver, interface: str) -> None:
        super().__init__()
        self.db, self.interface = driver, interface
        self.lights = dict(driver.query('SELECT name, "on" FROM devices_light ORDER BY id'))
        self.people = dict(driver.query("SELECT name, present FROM devices_person ORDER BY id"))
        self.armed = any(armed for (armed,) in driver.query("SELECT armed FROM devices_alarm"))
        self._update_light = driver.sql(UPDATE_LIGHT)
        self._update_alarm = driver.sql(UPDATE_ALARM)
        self._insert_event = driver.sql(INSERT_EVENT)

    def _event(self, now: datetime, action: str, target: str, before: Any, after: Any) -> tuple[str, tuple]:
        db = self.db
        values = (db.timestamp(now), ACTOR, self.interface, action, target, db.json(before), db.json(after))
        return self._insert_event, values

    def set_light(self, name: str, on: bool) -> None:
        now = datetime.now(UTC)
        before = self.lights[name]
        self.db.commit(
            [
                (self._update_light, (on, self.db.timestamp(now), name)),
                self._event(now, "light.set", f"light:{name}", {"on": before}, {"on": on}),
            ]
        )
        self.lights[name] = on

    def set_alarm(self, armed: bool) -> None:
        now = datetime.now(UTC)
        before = self.armed
        self.db.commit(
            [
                (self._update_alarm, (armed, self.db.timestamp(now))),
                self._event(now, "alarm.set", "alarm", {"armed": before}, {"armed": armed}),
            ]
        )
        self.armed = armed


def durable_server(interface: str) -> MCPServer:
    url = os.environ.get("PEER_DATABASE_URL")
    if not url:
        raise SystemExit("PEER_DATABASE_URL is required (a copy of HomeHub's database)")
    return build_server(DurableHome(connect(url), interface), "sdk-durable-home")


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    durable_server("mcp-stdio").run("stdio")
