"""The hub in English and Spanish: the browser's Accept-Language picks, an account's own choice
wins and stays, REST errors and notifications follow, numbers and dates are localized, the seed's
tool texts stay as the seed writes them, and the Spanish catalog is complete and compiled."""

from __future__ import annotations

import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from django.utils import timezone

from audit.models import Event
from automations.notifications.models import Notification
from dashboard.models import AccountLanguage
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
    from django.utils import translation

    moment = datetime(2026, 11, 27, 18, 30, tzinfo=UTC)  # 12:30 in Guatemala City
    template = Template('{{ when|date:"SHORT_DATETIME_FORMAT" }}')
    with timezone.override("America/Guatemala"), translation.override("es"):
        assert template.render(Context({"when": moment})) == "27/11/2026 12:30"


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
