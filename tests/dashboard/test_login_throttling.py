"""Login throttling on live hubs: after LOGIN_FAILURE_LIMIT wrong passwords for one username from
one address, even the right one is refused (with a page saying why) on the dashboard's and the
admin's forms, whichever hub process took the attempts; the lockout is in the audit trail; after
the cool-off the right password works again."""

from __future__ import annotations

import time

import httpx
import pytest

from audit.models import Event
from tests.hub_support import running_hub

pytestmark = pytest.mark.live

PASSWORD = "pw-for-tests-only"
LIMIT, COOLOFF = 5, 4


def attempt(browser: httpx.Client, password: str, *, login: str = "/login/") -> httpx.Response:
    browser.get(login)
    form = {"username": "boss", "password": password, "csrfmiddlewaretoken": browser.cookies["csrftoken"]}
    return browser.post(login, data=form)


@pytest.fixture
def boss(live_env, django_user_model):
    django_user_model.objects.create_superuser("boss", "boss@example.com", PASSWORD)
    return {**live_env, "LOGIN_FAILURE_LIMIT": str(LIMIT), "LOGIN_COOLOFF_SECONDS": str(COOLOFF)}


def test_wrong_passwords_lock_the_login_across_processes_until_the_cool_off(boss):
    with running_hub(boss) as one, running_hub(boss) as two:
        browsers = [httpx.Client(base_url=hub.base, timeout=10) for hub in (one, two)]
        for n in range(LIMIT - 1):  # the guesses alternate between the two processes
            assert attempt(browsers[n % 2], f"guess-{n}").status_code == 200  # the form again
        locked = attempt(browsers[1], "last-guess")
        started = time.monotonic()
        assert locked.status_code == 429 and "Too many failed logins" in locked.text

        # The right password is refused now, on either process, on the admin's form too.
        for browser in browsers:
            refused = attempt(browser, PASSWORD)
            assert refused.status_code == 429 and "even the right password is refused" in refused.text
            assert browser.get("/").status_code == 302  # not logged in
        assert attempt(browsers[0], PASSWORD, login="/admin/login/").status_code == 429

        lockouts = Event.objects.filter(action="login.lockout")
        assert [(e.actor, e.interface, e.target) for e in lockouts] == [("boss", "dashboard", "login:boss")]
        assert lockouts[0].after == {"address": "127.0.0.1", "failures": LIMIT, "cooloff_seconds": COOLOFF}

        time.sleep(max(0, COOLOFF + 0.5 - (time.monotonic() - started)))
        assert attempt(browsers[0], PASSWORD).status_code == 302
        assert browsers[0].get("/").status_code == 200
        for browser in browsers:
            browser.close()


def test_the_admin_login_is_throttled_and_its_lockout_audited(boss):
    with running_hub(boss) as hub, httpx.Client(base_url=hub.base, timeout=10) as browser:
        for n in range(LIMIT - 1):
            assert attempt(browser, f"guess-{n}", login="/admin/login/").status_code == 200
        assert attempt(browser, "last-guess", login="/admin/login/").status_code == 429
        assert attempt(browser, PASSWORD, login="/admin/login/").status_code == 429
        assert browser.get("/admin/").status_code == 302  # not logged in
        assert Event.objects.filter(action="login.lockout", interface="admin", actor="boss").count() == 1
