"""Household roles at every door of the dashboard (issue 25: any account could do anything):
for a guest, a member and an owner, each page, each form, REST with the session, the live
socket and OAuth consent are allowed or refused with 403, and a refusal changes nothing."""

from urllib.parse import urlencode

import pytest
from asgiref.sync import async_to_sync, sync_to_async
from channels.testing import WebsocketCommunicator
from django.utils import timezone

from audit.models import Event
from audit.services import record_event
from dashboard.consumers import HomeConsumer
from devices.agents.models import Agent, AgentTool
from devices.home.models import Alarm, Light, Person
from mcp_endpoint.controls.confirmation import decide
from mcp_endpoint.models import OAuthGrant, PendingConfirmation
from tests.hub_support import create_account
from tests.oauth_support import pkce

pytestmark = pytest.mark.django_db

ROLES = ["guest", "member", "owner"]
LEAST = {"see": "guest", "member": "member", "owner": "owner"}
RANK = {"guest": 0, "member": 1, "owner": 2}
AGENT, TOOL = "aa:bb:cc", "self.audio_speaker.set_volume"


def allowed(role: str, least: str) -> bool:
    return RANK[role] >= RANK[least]


@pytest.fixture
def agent(db):
    agent = Agent.objects.create(
        agent_id=AGENT, name="Kitchen speaker", online=False, last_seen=timezone.now()
    )
    AgentTool.objects.create(
        agent=agent,
        name=TOOL,
        description="Set the volume",
        input_schema={
            "type": "object",
            "properties": {"volume": {"type": "integer"}},
            "required": ["volume"],
        },
    )
    return agent


def logged_in(client, role: str):
    client.force_login(create_account(f"a-{role}", "a-long-password-1", role))
    return client


PAGES = [
    ("/", "guest"),
    ("/sensors/", "guest"),
    ("/automations/", "guest"),
    ("/alarm/", "member"),
    ("/devices/", "member"),
    ("/invoices/", "member"),
    ("/activity/", "owner"),
    ("/notifications/", "member"),
    ("/requests/", "owner"),
    ("/access/", "owner"),
    ("/accounts/", "owner"),
]


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize(("url", "least"), PAGES)
def test_pages(client, home, role, url, least):
    response = logged_in(client, role).get(url)
    if allowed(role, least):
        assert response.status_code == 200
    else:
        assert response.status_code == 403
        assert f"This needs the {least} role; your account is a {role}." in response.content.decode()


@pytest.mark.parametrize("role", ROLES)
def test_navigation_shows_only_what_the_role_may_use(client, home, role):
    html = logged_in(client, role).get("/").content.decode()
    for url, least in PAGES:
        if url in ("/", "/alarm/", "/requests/"):
            continue
        assert (f'href="{url}"' in html) is allowed(role, least), url
    assert ('id="arm-btn"' in html) is allowed(role, "member")
    assert ("Mark home" in html or "Mark away" in html) is allowed(role, "member")


@pytest.mark.parametrize("role", ROLES)
def test_light_form_for_everyone(client, home, role):
    response = logged_in(client, role).post("/lights/salon/", {"on": "1"}, HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    assert Light.objects.get(name="salon").on is True


@pytest.mark.parametrize("role", ROLES)
def test_alarm_form_for_members(client, home, role):
    response = logged_in(client, role).post("/alarm/", {"armed": "1"}, HTTP_ACCEPT="application/json")
    if allowed(role, "member"):
        assert response.status_code == 200
        assert Alarm.objects.get().armed is True
    else:
        assert response.status_code == 403
        assert response.json() == {"detail": "This needs the member role; your account is a guest."}
        assert Alarm.objects.get().armed is False
        assert not Event.objects.filter(action="alarm.set").exists()


@pytest.mark.parametrize("role", ROLES)
def test_presence_form_for_members(client, home, role):
    response = logged_in(client, role).post("/people/Ana/", {"present": "1"})
    assert response.status_code == (302 if allowed(role, "member") else 403)
    assert Person.objects.get(name="Ana").present is allowed(role, "member")


@pytest.mark.parametrize("role", ROLES)
def test_device_tool_form_for_members(client, home, agent, role):
    form = {"agent_id": AGENT, "tool": TOOL, "arg-volume": "30"}
    response = logged_in(client, role).post("/devices/", form, HTTP_ACCEPT="application/json")
    if allowed(role, "member"):
        assert response.status_code != 403  # the device is not connected: the call fails there
        assert Event.objects.filter(action="agent.call").exists()
    else:
        assert response.status_code == 403
        assert not Event.objects.filter(action="agent.call").exists()


@pytest.mark.parametrize("role", ROLES)
def test_add_and_unbind_device_for_owners(client, home, role):
    browser = logged_in(client, role)
    added = browser.post("/devices/add/", {"code": "123456"})
    unbound = browser.post("/devices/unbind/", {"agent_id": AGENT})
    expected = 302 if allowed(role, "owner") else 403  # an owner hears the code is unknown
    assert (added.status_code, unbound.status_code) == (expected, expected)


@pytest.mark.parametrize("role", ROLES)
def test_approving_an_announced_device_is_for_owners(client, home, role):
    Agent.objects.create(agent_id="stranger", name="stranger", transport="mqtt", approved=False)
    answer = logged_in(client, role).post("/devices/approve/", {"agent_id": "stranger"})
    assert answer.status_code == (302 if allowed(role, "owner") else 403)
    assert Agent.objects.get(agent_id="stranger").approved is allowed(role, "owner")


def pending(tool: str = "set_alarm_state") -> PendingConfirmation:
    return PendingConfirmation.objects.create(
        tool=tool,
        summary="assistant asks to disarm",
        arguments={"armed": False},
        actor="assistant",
        interface="mcp-http",
        expires_at=timezone.now() + timezone.timedelta(minutes=2),
    )


@pytest.mark.parametrize("role", ROLES)
def test_deciding_requests_is_for_owners(client, home, role):
    request = pending()
    response = logged_in(client, role).post(f"/requests/{request.pk}/", {"decision": "approve"})
    request.refresh_from_db()
    if allowed(role, "owner"):
        assert response.status_code == 302 and request.decision == "approved"
    else:
        assert response.status_code == 403 and request.decision == "pending"


def test_the_banner_of_waiting_requests_is_for_owners(client, home):
    pending()
    assert "for your approval" not in logged_in(client, "member").get("/").content.decode()
    client.logout()
    assert "for your approval" in logged_in(client, "owner").get("/").content.decode()


def test_an_owner_decides_only_what_they_could_do(client, home, monkeypatch):
    """The decision checks the capability the requested tool needs (here made one owners lack,
    as a future narrower role would)."""
    from common import roles

    request = pending()
    browser = logged_in(client, "owner")
    monkeypatch.setitem(roles.GRANTS, "owner", roles.GRANTS["owner"] - {roles.ARM_ALARM})
    assert browser.post(f"/requests/{request.pk}/", {"decision": "approve"}).status_code == 403
    request.refresh_from_db()
    assert request.decision == "pending"


@pytest.fixture
def grant(db):
    from mcp_endpoint.models import OAuthClient

    owner = create_account("granter", "a-long-password-1")
    app = OAuthClient.objects.create(
        client_id="https://app.example/client.json", kind="document", client_name="App", redirect_uris=[]
    )
    return OAuthGrant.objects.create(
        client=app, owner=owner, scopes=["read"], resource="http://testserver/mcp"
    )


@pytest.mark.parametrize("role", ROLES)
def test_revoking_an_app_is_for_owners(client, grant, role):
    response = logged_in(client, role).post(f"/connected-apps/{grant.pk}/revoke/")
    grant.refresh_from_db()
    assert response.status_code == (302 if allowed(role, "owner") else 403)
    assert (grant.revoked_at is not None) is allowed(role, "owner")


@pytest.mark.parametrize("role", ROLES)
def test_oauth_consent_is_for_owners(client, role, settings):
    settings.MCP_OAUTH_REGISTRATIONS_PER_HOUR = 0
    body = {"client_name": "Registered app", "redirect_uris": ["http://127.0.0.1:9/callback"]}
    client_id = client.post("/oauth/register", body, content_type="application/json").json()["client_id"]
    query = {
        "response_type": "code",
        "client_id": client_id,
        "redirect_uri": "http://127.0.0.1:9/callback",
        "state": "st",
        "code_challenge": pkce()[1],
        "code_challenge_method": "S256",
        "scope": "read control",
        "resource": "http://testserver/mcp",
    }
    url = "/oauth/authorize?" + urlencode(query)
    browser = logged_in(client, role)
    page = browser.get(url)
    answer = browser.post(url, {"decision": "allow", "scope": ["read", "control"]})
    if allowed(role, "owner"):
        assert page.status_code == 200 and answer.status_code == 302
        assert OAuthGrant.objects.count() == 1
    else:
        assert page.status_code == answer.status_code == 403
        assert not OAuthGrant.objects.exists()


@pytest.mark.parametrize("role", ROLES)
def test_accounts_forms_are_for_owners(client, role):
    browser = logged_in(client, role)
    browser.post("/accounts/add/", {"username": "newcomer", "password": "a-long-password-2", "role": "owner"})
    target = create_account("target", "a-long-password-3", "guest")
    role_change = browser.post("/accounts/target/role/", {"role": "owner"})
    deactivation = browser.post("/accounts/target/deactivate/")
    target.refresh_from_db()
    from common import roles

    if allowed(role, "owner"):
        assert roles.role_of(target) is None  # made an owner, then deactivated
        assert not target.is_active
        assert roles.role_of(type(target).objects.get(username="newcomer")) == "owner"
    else:
        assert role_change.status_code == deactivation.status_code == 403
        assert target.is_active and roles.role_of(target) == "guest"
        assert not type(target).objects.filter(username="newcomer").exists()


# --- REST with the session ------------------------------------------------------------------


@pytest.mark.parametrize("role", ROLES)
def test_rest_with_a_session(client, home, agent, role):
    browser = logged_in(client, role)
    assert browser.get("/api/lights").status_code == 200
    light = browser.patch("/api/lights/salon", {"on": True}, content_type="application/json")
    assert light.status_code == 200
    alarm = browser.patch("/api/alarm", {"armed": True}, content_type="application/json")
    assert alarm.status_code == (200 if allowed(role, "member") else 403)
    assert Alarm.objects.get().armed is allowed(role, "member")
    call = browser.post(
        f"/api/agents/{AGENT}/tools/{TOOL}/call",
        {"arguments": {"volume": 5}},
        content_type="application/json",
    )
    assert (call.status_code != 403) is allowed(role, "member")
    assert Event.objects.filter(action="agent.call").exists() is allowed(role, "member")
    assert (browser.get("/api/invoices").status_code == 200) is allowed(role, "member")
    events = browser.get("/api/events")
    assert events.status_code == (200 if allowed(role, "owner") else 403)
    if not allowed(role, "owner"):
        assert "the owner role" in events.json()["detail"]


def test_a_token_keeps_its_scopes(client, home, make_token):
    auth = {"HTTP_AUTHORIZATION": f"Bearer {make_token(scopes=('read',))}"}
    assert client.get("/api/events", **auth).status_code == 200  # no role: the token's scopes
    assert (
        client.patch("/api/lights/salon", {"on": True}, content_type="application/json", **auth).status_code
        == 403
    )


# --- the live socket ------------------------------------------------------------------------


async def socket_of(user):
    comm = WebsocketCommunicator(HomeConsumer.as_asgi(), "/ws/home/")
    comm.scope["user"] = user
    connected, _ = await comm.connect()
    assert connected
    hello = await comm.receive_json_from()
    return comm, hello


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("role", ROLES)
def test_live_socket_sends_what_the_role_may_see(role):
    async def run():
        user = await sync_to_async(create_account)(f"s-{role}", "a-long-password-1", role)
        comm, hello = await socket_of(user)
        assert hello["role"] == role
        waiting = await sync_to_async(pending)()
        await sync_to_async(decide)(waiting.pk, approve=False, by="boss")  # only owners hear of it
        await sync_to_async(record_event)(
            actor="ana",
            interface="dashboard",
            action="invoice.create",
            target="invoice:1",
            broadcast={"kind": "invoice", "id": 1, "total": "12.00"},
        )
        await sync_to_async(record_event)(
            actor="ana",
            interface="dashboard",
            action="light.set",
            target="light:salon",
            broadcast={"kind": "light", "name": "salon", "on": True},
        )
        heard = []
        while True:
            frame = await comm.receive_json_from(timeout=3)
            heard.append(frame)
            if frame.get("event", {}).get("kind") == "light":
                break
        await comm.disconnect()
        return heard

    heard = async_to_sync(run)()
    kinds = [f["event"]["kind"] if f["type"] == "event" else f["type"] for f in heard]
    assert ("requests" in kinds) is allowed(role, "owner")
    assert ("invoice" in kinds) is allowed(role, "member")
    light = heard[-1]["event"]
    assert light["on"] is True
    assert ("actor" in light) is allowed(role, "owner")


@pytest.mark.django_db(transaction=True)
def test_a_role_change_closes_the_accounts_socket():
    from dashboard.account_services import change_role

    async def run():
        user = await sync_to_async(create_account)("member1", "a-long-password-1", "member")
        comm, _ = await socket_of(user)
        await sync_to_async(change_role)("member1", "guest", by="boss")
        closed = await comm.receive_output(timeout=3)
        assert closed == {"type": "websocket.close", "code": 4000}

    async_to_sync(run)()


@pytest.mark.parametrize("role", ["member", "owner"])
def test_tokens_in_the_admin_are_for_owners(client, role):
    """Staff with every token permission still needs the owner role to see or make tokens."""
    from django.contrib.auth.models import Permission

    staff = create_account(f"staff-{role}", "a-long-password-1", role)
    staff.is_staff = True
    staff.save()
    staff.user_permissions.add(*Permission.objects.filter(codename__endswith="accesstoken"))
    client.force_login(staff)
    listing = client.get("/admin/mcp_endpoint/accesstoken/")
    adding = client.get("/admin/mcp_endpoint/accesstoken/add/")
    expected = 200 if role == "owner" else 403
    assert (listing.status_code, adding.status_code) == (expected, expected)
