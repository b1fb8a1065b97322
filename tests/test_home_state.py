"""The home state kept in process for MCP reads: never staler than the database."""

import subprocess
import sys
from pathlib import Path

import pytest
from asgiref.sync import async_to_sync
from django.db import connection

from devices import home_state, selectors, services

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def fresh_copy():
    home_state.forget()
    yield
    home_state.forget()


def read_all() -> dict:
    return async_to_sync(selectors.aget_all_states)()


def test_a_change_made_by_another_process_is_read_at_once(live_env, fresh_copy):
    assert read_all()["lights"]["salon"] is False
    subprocess.run(
        [
            sys.executable,
            "manage.py",
            "shell",
            "-c",
            "from devices.models import Light; Light.objects.filter(name='salon').update(on=True)",
        ],
        cwd=ROOT,
        env=live_env,
        check=True,
    )
    assert read_all()["lights"]["salon"] is True
    assert async_to_sync(selectors.alist_lights_on)() == {"on": ["salon"]}


def test_a_change_through_the_services_is_read_at_once(transactional_db, fresh_copy):
    services.seed_home()
    assert async_to_sync(selectors.aget_alarm_status)() == {"armed": False}
    services.set_alarm_state(True, actor="t", interface="system")
    services.set_person_presence("Ana", True, actor="t", interface="system")
    assert async_to_sync(selectors.aget_alarm_status)() == {"armed": True}
    assert async_to_sync(selectors.aget_presence)() == {"present": True, "known_people": ["Ana"]}


@pytest.mark.skipif(connection.vendor != "sqlite", reason="only SQLite can prove the copy current cheaply")
def test_unchanged_database_is_not_read_again(transactional_db, fresh_copy, monkeypatch):
    services.seed_home()
    reads = []
    real = home_state._aread

    async def counting():
        reads.append(1)
        return await real()

    monkeypatch.setattr(home_state, "_aread", counting)
    first = read_all()
    assert read_all() == first and len(reads) == 1
    services.set_light_state("cocina", True, actor="t", interface="system")
    assert read_all()["lights"]["cocina"] is True and len(reads) == 2


def test_nothing_read_inside_a_transaction_is_kept(db, fresh_copy):
    services.seed_home()  # uncommitted: the test's transaction rolls it back
    assert read_all()["lights"] == {n: False for n in ("salon", "cocina", "dormitorio", "bano", "garage")}
    assert home_state._snapshot is None
