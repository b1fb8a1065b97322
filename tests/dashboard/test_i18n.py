"""The hub in English and Spanish: the browser's Accept-Language picks, an account's own choice
wins and stays, REST errors and notifications follow, numbers and dates are localized, the seed's
tool texts stay as the seed writes them, and the Spanish catalog is complete and compiled."""

from __future__ import annotations

import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.utils import timezone, translation

from audit.models import Event
from automations import authoring
from automations.models import AutomationRun
from automations.notifications.models import Notification
from dashboard.models import AccountLanguage
from dashboard.toolresults import readable_result
from devices.telemetry.models import TelemetryReading
from mcp_endpoint.auth.tokens import create_token
from mcp_endpoint.controls import confirmation
from mcp_endpoint.models import PendingConfirmation
from tests.hub_support import create_account
from tests.telemetry_support import store_readings

CATALOG = Path(__file__).resolve().parents[2] / "locale" / "es" / "LC_MESSAGES"
SPANISH = {"HTTP_ACCEPT_LANGUAGE": "es-GT,es;q=0.9,en;q=0.5"}
ENGLISH = {"HTTP_ACCEPT_LANGUAGE": "en-US,en;q=0.9"}
needs_gettext = pytest.mark.skipif(shutil.which("msgfmt") is None, reason="Debian's gettext is not installed")


@pytest.fixture
def maria(db, client):
    user = create_account("maria", "pw-for-tests-only")
    client.force_login(user)
    return user


@pytest.mark.django_db
def test_the_login_page_follows_the_browser_and_english_is_the_default(client):
    spanish = client.get("/login/", **SPANISH).content.decode()
    assert 'lang="es"' in spanish and "Bienvenido a casa" in spanish and "Contraseña" in spanish
    english = client.get("/login/", **ENGLISH).content.decode()
    assert 'lang="en"' in english and "Welcome home" in english
    unknown = client.get("/login/", HTTP_ACCEPT_LANGUAGE="de-DE").content.decode()
    assert "Welcome home" in unknown


@pytest.mark.parametrize(
    ("url", "spanish", "english"),
    [
        ("/scenes/", "Sus escenas", "Your scenes"),
        ("/automations/", "Aún no hay automatizaciones.", "No automations yet."),
        ("/devices/", "Añadir un dispositivo", "Add a device"),
        ("/automations/edit/", "Cuándo (desencadenante)", "When (trigger)"),
        ("/access/", "Crear un token", "Create a token"),
        ("/accounts/", "Añadir una cuenta", "Add an account"),
        ("/notifications/", "Nada nuevo.", "Nothing new."),
        ("/invoices/", "Verificar facturas FEL", "Check FEL invoices"),
    ],
)
def test_pages_follow_the_browser(client, maria, url, spanish, english):
    assert spanish in client.get(url, **SPANISH).content.decode()
    assert english in client.get(url, **ENGLISH).content.decode()


def test_the_accounts_choice_wins_over_the_browser_and_stays(client, maria):
    answer = client.post("/language/", {"language": "es", "next": "/scenes/"}, **ENGLISH)
    assert answer.status_code == 302 and answer["Location"] == "/scenes/"
    assert AccountLanguage.objects.get(user=maria).language == "es"
    event = Event.objects.get(action="account.language")
    assert (event.actor, event.after) == ("maria", {"language": "es"})
    client.cookies.clear()  # another browser, in English: the account still reads Spanish
    client.force_login(maria)
    page = client.get("/scenes/", **ENGLISH)
    assert "Sus escenas" in page.content.decode() and page["Content-Language"] == "es"
    client.post("/language/", {"language": "en", "next": "/scenes/"})
    assert "Your scenes" in client.get("/scenes/", **SPANISH).content.decode()


@pytest.mark.django_db
def test_the_switcher_works_before_login_and_refuses_bad_input(client):
    assert client.post("/language/", {"language": "es", "next": "https://evil.example/"})["Location"] == "/"
    assert "Bienvenido a casa" in client.get("/login/", **ENGLISH).content.decode()
    refused = client.post("/language/", {"language": "xx"})
    assert refused.status_code == 400 and b"language" in refused.content
    assert not AccountLanguage.objects.exists()


def test_django_messages_are_translated(client, maria, home):
    armed = client.post("/alarm/", {"armed": "1"}, follow=True, **SPANISH)
    assert "Alarma armada." in armed.content.decode()


@pytest.mark.django_db
def test_rest_errors_follow_accept_language_but_the_seeds_texts_do_not(client, home):
    token = create_token("integrator", ["read"], actor="test", interface="system")[1]
    auth = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    refused = client.patch(
        "/api/lights/salon", {"on": True}, content_type="application/json", **auth, **SPANISH
    )
    assert refused.status_code == 403
    assert refused.json()["detail"] == "A este token le falta el alcance «control» que se necesita aquí."
    anonymous = client.get("/api/lights", **SPANISH)
    assert anonymous.status_code == 401 and anonymous.json()["detail"].startswith("Se requiere autenticación")
    missing = client.get("/api/no-such-thing", **auth, **SPANISH)
    assert missing.json()["detail"] == "No encontrado: no hay GET /api/no-such-thing en la API."
    assert client.get("/api/no-such-thing", **auth, **ENGLISH).json()["detail"].startswith("Not found")
    for language in (SPANISH, ENGLISH):  # seed 000's own text, in its own words
        assert (
            client.get("/api/lights/nope", **auth, **language).json()["detail"] == "Luz 'nope' no encontrada"
        )


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("hub_language", "title"), [("es", "Se necesita aprobación"), ("en", "Approval needed")]
)
def test_notifications_are_written_in_the_hubs_language(settings, hub_language, title):
    settings.LANGUAGE_CODE = hub_language
    row = PendingConfirmation.objects.create(
        tool="set_alarm_state",
        summary="disarm",
        actor="assistant",
        interface="mcp-http",
        arguments={"armed": False},
        expires_at=timezone.now() + timedelta(minutes=1),
    )
    confirmation.request_made.send(PendingConfirmation, request=row)
    assert Notification.objects.get().title == title


def test_numbers_and_dates_are_localized_in_the_homes_time_zone(client, maria, settings):
    settings.TIME_ZONE = "America/Guatemala"
    store_readings(
        [
            TelemetryReading(
                zone="salon",
                device_type="sensor",
                device_id="esp1",
                channel="temperature",
                value=21.6,
                unit="°C",
                measured_at=timezone.now(),
            )
        ]
    )
    assert "21,6" in client.get("/sensors/", **SPANISH).content.decode()
    assert "21.6" in client.get("/sensors/", **ENGLISH).content.decode()
    from django.template import Context, Template

    moment = datetime(2026, 11, 27, 18, 30, tzinfo=UTC)  # 12:30 in Guatemala City
    template = Template('{{ when|date:"SHORT_DATETIME_FORMAT" }}')
    with timezone.override("America/Guatemala"), translation.override("es"):
        assert template.render(Context({"when": moment})) == "27/11/2026 12:30"


def a_request(tool: str = "set_alarm_state", arguments: dict | None = None, **fields) -> PendingConfirmation:
    arguments = {"armed": False} if arguments is None else arguments
    return PendingConfirmation.objects.create(
        tool=tool,
        summary="disarm",
        actor="assistant",
        interface="mcp-http",
        arguments=arguments,
        arguments_hash=confirmation.arguments_hash(arguments),
        expires_at=timezone.now() + timedelta(minutes=1),
        **fields,
    )


def test_a_request_its_decision_and_its_detail_follow_the_page(client, maria, home):
    waiting = a_request("automation_set_enabled", {"name": "Noche", "enabled": True, "version": 3})
    page = client.get(f"/requests/{waiting.pk}/", **SPANISH).content.decode()
    assert "<h2>Definición</h2>" in page and "La automatización «Noche» no tiene la versión 3." in page
    assert (
        "Automation &#x27;Noche&#x27; has no version 3."
        in client.get(f"/requests/{waiting.pk}/", **ENGLISH).content.decode()
    )
    decided = client.post(f"/requests/{waiting.pk}/", {"decision": "approve"}, follow=True, **SPANISH)
    assert "Aprobada: la acción se ejecuta ahora." in decided.content.decode()
    again = client.post(f"/requests/{waiting.pk}/", {"decision": "deny"}, follow=True, **SPANISH)
    assert "Esa solicitud ya no está en espera: ya se decidió o venció." in again.content.decode()
    assert (
        "Esta solicitud ya no está en espera: aprobada por maria."
        in client.get(f"/requests/{waiting.pk}/", **SPANISH).content.decode()
    )
    a_request(decision=PendingConfirmation.Decision.EXPIRED)
    recent = client.get("/requests/", **SPANISH).content.decode()
    assert "<td>Aprobada por maria</td>" in recent and "<td>Vencida</td>" in recent
    recent = client.get("/requests/", **ENGLISH).content.decode()
    assert "<td>Approved by maria</td>" in recent and "<td>Expired</td>" in recent


EDITOR_FORM = {
    "name": "Cocina",
    "trigger_type": "light",
    "trigger_light": "nope",
    "trigger_light_to": "on",
    "action_0_kind": "tool",
    "action_0_tool": "no_such_tool",
    "action_0_arguments": "{}",
    "days": "7",
}


def test_the_automation_editors_field_errors_follow_the_page(client, maria, home):
    spanish = client.post("/automations/edit/", EDITOR_FORM, **SPANISH)
    assert spanish.status_code == 400
    html = spanish.content.decode()
    assert "triggers[0].name: no hay ninguna luz llamada «nope»" in html
    assert "actions[0].tool: no hay ninguna herramienta llamada «no_such_tool»" in html
    english = client.post("/automations/edit/", EDITOR_FORM, **ENGLISH).content.decode()
    assert "triggers[0].name: no light named &#x27;nope&#x27;" in english
    json_form = {
        "name": "x",
        "definition_json": '{"name": "x", "triggers": [{"type": "light", "name": "salon", "to": "dim"}]}',
    }
    shape = client.post("/automations/edit/", json_form, **SPANISH).content.decode()
    assert (
        "triggers[0].to: debe ser &#x27;on&#x27; o &#x27;off&#x27;" in shape
        and "actions: obligatorio" in shape
    )
    shape = client.post("/automations/edit/", json_form, **ENGLISH).content.decode()
    assert "triggers[0].to: Input should be &#x27;on&#x27; or &#x27;off&#x27;" in shape


def test_the_dry_run_and_a_runs_trace_follow_the_page(client, maria, home):
    dry = {
        **EDITOR_FORM,
        "trigger_type": "time",
        "trigger_cron": "0 * * * *",
        "action_0_tool": "set_light_state",
        "action_0_arguments": '{"name": "salon", "on": true}',
        "dry_run": "1",
    }
    spanish = client.post("/automations/edit/", dry, **SPANISH).content.decode()
    assert "Simulación: 168 disparos" in spanish and "llamaría a" in spanish
    assert "would call" in client.post("/automations/edit/", dry, **ENGLISH).content.decode()
    row = authoring.save_automation(
        {
            "name": "Noche",
            "triggers": [{"type": "time", "cron": "0 22 * * *"}],
            "actions": [{"delay_seconds": 1}],
        },
        actor="maria",
        interface="dashboard",
    )
    AutomationRun.objects.create(
        automation=row,
        version=1,
        status=AutomationRun.Status.SKIPPED,
        started_at=timezone.now(),
        trigger={"type": "time"},
        trace=[
            {"trigger": {"type": "time"}},
            {"condition": {"type": "alarm", "armed": False}, "ok": False, "why": "armed"},
            {"condition": {"type": "time", "after": "22:00"}, "ok": False, "why": "mon 07:30"},
        ],
    )
    spanish = client.get("/automations/automation/", {"name": "Noche"}, **SPANISH).content.decode()
    assert ">omitida</span>" in spanish and "<strong>condición</strong>" in spanish
    assert "— armada" in spanish and "— lun 07:30" in spanish and "<strong>desencadenante</strong>" in spanish
    assert ">omitida</span>" in client.get("/automations/", **SPANISH).content.decode()
    english = client.get("/automations/automation/", {"name": "Noche"}, **ENGLISH).content.decode()
    assert ">skipped</span>" in english and "<strong>condition</strong>" in english and "— armed" in english


def test_the_devices_page_and_a_tool_result_follow_the_page(client, maria):
    spanish = client.get("/devices/", **SPANISH).content.decode()
    assert '<span class="broker-no-worker">sin worker</span>' in spanish
    assert (
        '<span class="broker-no-worker">no worker</span>'
        in client.get("/devices/", **ENGLISH).content.decode()
    )
    unknown = client.post(
        "/devices/", {"agent_id": "door", "tool": "open"}, HTTP_ACCEPT="application/json", **SPANISH
    )
    assert unknown.json()["error"] == "El agente «door» no tiene la herramienta «open»."
    with translation.override("es"):
        assert readable_result({"content": [{"type": "text", "text": "true"}]})["texts"] == ["Hecho."]
        assert readable_result({"content": [], "isError": True})["texts"] == [
            "El dispositivo informó de un error sin detalles."
        ]
        assert readable_result({"content": [{"type": "image", "mimeType": "image/png"}]})["texts"] == [
            "El dispositivo envió una imagen (image/png)."
        ]


def test_the_upload_words_come_from_the_page(client, maria):
    spanish = client.get("/invoices/", **SPANISH).content.decode()
    assert 'data-one="Subiendo 1 archivo…" data-many="Subiendo {n} archivos…"' in spanish
    assert 'data-offline="La subida falló: revise la conexión e intente de nuevo."' in spanish
    assert 'data-many="Uploading {n} files…"' in client.get("/invoices/", **ENGLISH).content.decode()
    script = (
        Path(__file__).resolve().parents[2] / "dashboard" / "static" / "dashboard" / "app.js"
    ).read_text()
    assert (
        "label.dataset.many" in script and "<script>" not in spanish.split("</footer>")[0].split("<body")[1]
    )


@needs_gettext
def test_the_spanish_catalog_is_complete():
    counted = subprocess.run(
        ["msgfmt", "--statistics", "-o", "/dev/null", str(CATALOG / "django.po")],
        capture_output=True,
        text=True,
        check=True,
    ).stderr
    assert "translated message" in counted
    assert "fuzzy" not in counted and "untranslated" not in counted, counted


@needs_gettext
def test_the_compiled_catalog_is_the_po_file(tmp_path):
    fresh = tmp_path / "django.mo"
    subprocess.run(["msgfmt", "--check-format", "-o", str(fresh), str(CATALOG / "django.po")], check=True)
    assert fresh.read_bytes() == (CATALOG / "django.mo").read_bytes(), (
        "run `make messages` and commit the .mo"
    )
