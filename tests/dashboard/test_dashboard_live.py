"""/ws/home/: logged-in users only; every home change arrives as one JSON frame."""

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import AnonymousUser

from dashboard.consumers import HomeConsumer
from devices.home import services
from tests.hub_support import create_account

pytestmark = pytest.mark.django_db(transaction=True)


def communicator(user):
    comm = WebsocketCommunicator(HomeConsumer.as_asgi(), "/ws/home/")
    comm.scope["user"] = user
    return comm


async def _anonymous_is_refused():
    comm = communicator(AnonymousUser())
    connected, code = await comm.connect()
    assert not connected and code == 4401


async def _user_receives_changes(django_user_model):
    await sync_to_async(services.seed_home)()
    user = await sync_to_async(create_account)("ana", "x-long-password")
    comm = communicator(user)
    connected, _ = await comm.connect()
    assert connected
    assert (await comm.receive_json_from())["type"] == "hello"
    await services.aset_light_state("salon", True, actor="claude", interface="mcp-http")
    message = await comm.receive_json_from(timeout=2)
    assert message["type"] == "event"
    assert message["event"] | {"at": None} == {
        "action": "light.set",
        "target": "light:salon",
        "actor": "claude",
        "interface": "mcp-http",
        "at": None,
        "kind": "light",
        "name": "salon",
        "on": True,
    }
    await comm.send_json_to({"type": "ping"})
    assert (await comm.receive_json_from())["type"] == "pong"
    await comm.disconnect()


async def _foreign_origin_is_refused():
    from homehub.asgi import application

    comm = WebsocketCommunicator(application, "/ws/home/", headers=[(b"origin", b"http://evil.example")])
    connected, _ = await comm.connect()
    assert not connected


def test_anonymous_is_refused():
    async_to_sync(_anonymous_is_refused)()


def test_user_receives_changes(django_user_model):
    async_to_sync(_user_receives_changes)(django_user_model)


def test_foreign_origin_is_refused():
    async_to_sync(_foreign_origin_is_refused)()
