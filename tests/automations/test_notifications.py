"""Notifications: kept on the dashboard and sent through Apprise to real local receivers (an
HTTP endpoint taking `json://` posts, an SMTP server taking `mailto://` e-mails); a failing
service loses nothing and leaks no secret; a dangerous call waiting for a person notifies the
owners; the page, the banner and the live socket per household role."""

import logging
import threading
import time

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from prometheus_client import REGISTRY

from automations.notifications import services
from automations.notifications.models import Notification, NotifyTarget
from dashboard.consumers import HomeConsumer
from devices.home import selectors
from devices.home import services as home_services
from mcp_endpoint.controls import confirmation
from mcp_endpoint.engine.pipeline import call_tool
from mcp_endpoint.engine.tools import Caller, ToolContext
from tests.hub_support import create_account

pytestmark = pytest.mark.django_db(transaction=True)

AGENT = Caller(actor="Claude", interface="/mcp", audited=True, rate_key="k1", confirms=True)


def failed_count() -> float:
    return REGISTRY.get_sample_value("homehub_notification_deliveries_total", {"outcome": "failed"}) or 0.0


def test_a_notification_reaches_ntfy_style_http_and_email_and_stays_on_the_dashboard(
    settings, http_receiver, smtp_receiver
):
    settings.NOTIFY_URLS = [http_receiver.url("household"), smtp_receiver.url("home@example.com")]
    member = create_account("mia", "a-long-password-1", "member")
    NotifyTarget.objects.create(account=member, urls=http_receiver.url("mia"))

    services.notify("CO2 above 1000 ppm in the salon", title="Air", source="automation", level="warning")

    posts = http_receiver.wait(2)
    assert sorted(p["path"] for p in posts) == ["/household", "/mia"]
    assert {(p["title"], p["message"], p["type"]) for p in posts} == {
        ("Air", "CO2 above 1000 ppm in the salon", "warning")
    }
    (mail,) = smtp_receiver.wait(1)
    assert mail["Subject"] == "Air" and mail["To"] == "home@example.com"
    assert "CO2 above 1000 ppm" in mail.as_string()
    row = Notification.objects.get()
    assert (row.source, row.level, row.dismissed_at) == ("automation", "warning", None)


def test_sending_never_holds_the_caller(settings):
    """A service that never answers: notify returns at once, the row is there."""
    import socket

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen()  # accepts connections, never answers
    try:
        settings.NOTIFY_URLS = [f"json://127.0.0.1:{silent.getsockname()[1]}/slow"]
        started = time.monotonic()
        services.notify("slow service")
        assert time.monotonic() - started < 0.5
        assert Notification.objects.filter(text="slow service").exists()
    finally:
        silent.close()


def test_a_failing_service_keeps_the_dashboard_copy_and_logs_no_secret(
    settings, http_receiver, caplog, capfd
):
    import socket

    with socket.socket() as closed:
        closed.bind(("127.0.0.1", 0))
        dead_port = closed.getsockname()[1]
    settings.NOTIFY_URLS = [
        f"json://admin:hunter2-pass@127.0.0.1:{dead_port}/topic-s3cret-token",
        "nosuchservice://tok-XYZZY-123@example.com",
        http_receiver.url("still-works"),
    ]
    before = failed_count()
    caplog.set_level(logging.DEBUG)

    services.notify("The alarm tripped", source="alarm", level="alert")

    assert [p["path"] for p in http_receiver.wait(1)] == ["/still-works"]  # one failure stops no other
    deadline = time.monotonic() + 10
    while failed_count() < before + 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert failed_count() == before + 1
    assert Notification.objects.get().text == "The alarm tripped"
    logged = caplog.text + capfd.readouterr().err
    assert "NOTIFY_URLS #1" in logged and "NOTIFY_URLS #2" in logged
    for secret in ("hunter2-pass", "topic-s3cret-token", "tok-XYZZY-123", "admin:"):
        assert secret not in logged


def _owner_approves_later(decided: list[bool]) -> threading.Thread:
    def answer() -> None:
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            waiting = confirmation.open_requests()
            if waiting:
                decided.append(confirmation.decide(waiting[0].pk, approve=True, by="olga"))
                return
            time.sleep(0.05)

    thread = threading.Thread(target=answer)
    thread.start()
    return thread


def test_a_dangerous_call_waiting_for_a_person_notifies_the_owners_only(settings, http_receiver, home):
    home_services.set_alarm_state(True, actor="test", interface="system")
    settings.HUB_URL = "https://hub.example.com"
    settings.NOTIFY_URLS = [http_receiver.url("household")]
    owner = create_account("olga", "a-long-password-1", "owner")
    member = create_account("mia", "a-long-password-1", "member")
    NotifyTarget.objects.create(account=owner, urls=http_receiver.url("olga"))
    NotifyTarget.objects.create(account=member, urls=http_receiver.url("mia"))

    decided: list[bool] = []
    owner_thread = _owner_approves_later(decided)
    result = async_to_sync(call_tool)("set_alarm_state", {"armed": False}, ToolContext(caller=AGENT))
    owner_thread.join()
    assert decided == [True] and not result.is_error and selectors.alarm()["armed"] is False

    request = confirmation.recent_requests()[0]
    posts = http_receiver.wait(2)
    time.sleep(0.3)  # a third (to the member) would have come by now
    assert sorted(p["path"] for p in http_receiver.posts) == ["/household", "/olga"]
    for post in posts:
        assert post["title"] == "Approval needed"
        assert post["message"].startswith("Claude (through /mcp) asks to run")
        assert '{"armed": false}' in post["message"]
        assert post["message"].endswith(f"https://hub.example.com/requests/{request.pk}/")
    row = Notification.objects.get()
    assert (row.source, row.owners_only, row.link) == ("request", True, f"/requests/{request.pk}/")


def test_notifications_are_kept_bounded(monkeypatch):
    monkeypatch.setattr(services, "KEEP_COUNT", 3)
    for i in range(5):
        services.notify(f"note {i}")
    assert list(Notification.objects.values_list("text", flat=True)) == ["note 4", "note 3", "note 2"]


@pytest.fixture
def notes(db):
    services.notify("The lights went off", source="automation")
    services.notify(
        "Claude asks to disarm the alarm", source="request", owners_only=True, link="/requests/1/"
    )


def logged_in(client, role: str):
    client.force_login(create_account(f"a-{role}", "a-long-password-1", role))
    return client


@pytest.mark.parametrize(
    ("role", "status", "seen", "banner"),
    [
        ("guest", 403, [], None),
        ("member", 200, ["The lights went off"], "1 unread notification."),
        ("owner", 200, ["The lights went off", "Claude asks to disarm the alarm"], "2 unread notifications."),
    ],
)
def test_the_page_and_banner_per_role(client, home, notes, role, status, seen, banner):
    client = logged_in(client, role)
    page = client.get("/notifications/")
    assert page.status_code == status
    html = client.get("/").content.decode()
    if banner is None:
        assert "unread notification" not in html and 'href="/notifications/"' not in html
        assert client.post("/notifications/dismiss/").status_code == 403
        assert Notification.objects.filter(dismissed_at=None).count() == 2
        return
    assert banner in html and 'href="/notifications/"' in html
    text = page.content.decode()
    for note in ["The lights went off", "Claude asks to disarm the alarm"]:
        assert (note in text) is (note in seen)


def test_dismissing(client, home, notes):
    client = logged_in(client, "member")
    hidden = Notification.objects.get(owners_only=True)
    client.post("/notifications/dismiss/", {"pk": hidden.pk})  # not the member's to see
    assert Notification.objects.get(pk=hidden.pk).dismissed_at is None
    shown = Notification.objects.get(owners_only=False)
    client.post("/notifications/dismiss/", {"pk": shown.pk})
    shown.refresh_from_db()
    assert shown.dismissed_by == "a-member"
    assert "unread notification" not in client.get("/").content.decode()
    assert Notification.objects.get(pk=hidden.pk).dismissed_at is None  # the owner's still waits


async def _live(role: str, owners_only: bool) -> bool:
    user = await sync_to_async(create_account)(f"live-{role}", "a-long-password-1", role)
    comm = WebsocketCommunicator(HomeConsumer.as_asgi(), "/ws/home/")
    comm.scope["user"] = user
    connected, _ = await comm.connect()
    assert connected and (await comm.receive_json_from())["type"] == "hello"
    await sync_to_async(services.notify)("live one", owners_only=owners_only)
    heard = not await comm.receive_nothing(timeout=1)
    if heard:
        assert await comm.receive_json_from() == {"type": "notifications"}
    await comm.disconnect()
    return heard


@pytest.mark.parametrize(
    ("role", "owners_only", "heard"),
    [("guest", False, False), ("member", False, True), ("member", True, False), ("owner", True, True)],
)
def test_the_live_socket_tells_who_may_see_it(role, owners_only, heard):
    assert async_to_sync(_live)(role, owners_only) is heard
