"""The Accounts page: an owner lists accounts with their roles, adds one (its password checked
by Django's validators), changes a role, deactivates one; never the last active owner, never
their own account; each change in the audit trail."""

import pytest

from audit.models import Event
from common import roles
from tests.hub_support import create_account

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(client):
    user = create_account("olga", "a-long-password-1")
    client.force_login(user)
    return user


def messages_of(response) -> str:
    return " ".join(str(m) for m in response.context["messages"])


def test_the_page_lists_accounts_with_their_roles(client, owner, django_user_model):
    create_account("gus", "a-long-password-2", "guest")
    django_user_model.objects.create_superuser("root", "", "a-long-password-3")
    html = client.get("/accounts/").content.decode()
    assert 'data-account="gus"' in html and 'data-account="root"' in html and "superuser" in html


def test_adding_an_account_with_a_role(client, owner, django_user_model):
    answer = client.post(
        "/accounts/add/", {"username": "mia", "password": "a-long-password-2", "role": "member"}, follow=True
    )
    assert "Account 'mia' added as member." in messages_of(answer)
    mia = django_user_model.objects.get(username="mia")
    assert mia.check_password("a-long-password-2") and roles.role_of(mia) == "member"
    event = Event.objects.get(action="account.create")
    assert (event.actor, event.interface, event.target, event.after) == (
        "olga",
        "dashboard",
        "account:mia",
        {"role": "member"},
    )


@pytest.mark.parametrize(
    ("username", "password", "said"),
    [
        ("weak", "123", "too short"),
        ("common", "password123", "too common"),
        ("olga", "a-long-password-2", "is taken"),
        ("bad name!", "a-long-password-2", "Enter a valid username"),
    ],
)
def test_a_bad_account_is_refused(client, owner, django_user_model, username, password, said):
    answer = client.post(
        "/accounts/add/", {"username": username, "password": password, "role": "guest"}, follow=True
    )
    assert said in messages_of(answer)
    assert django_user_model.objects.count() == 1
    assert not Event.objects.filter(action="account.create").exists()


def test_changing_a_role_is_audited_and_takes_effect(client, owner, django_user_model):
    create_account("gus", "a-long-password-2", "guest")
    answer = client.post("/accounts/gus/role/", {"role": "member"}, follow=True)
    assert "'gus' is now member." in messages_of(answer)
    assert roles.role_of(django_user_model.objects.get(username="gus")) == "member"
    event = Event.objects.get(action="account.role")
    assert (event.before, event.after) == ({"role": "guest"}, {"role": "member"})


def test_the_last_active_owner_stays(client, owner, django_user_model):
    answer = client.post("/accounts/olga/role/", {"role": "guest"}, follow=True)
    assert "last active owner" in messages_of(answer)
    assert roles.role_of(django_user_model.objects.get(username="olga")) == "owner"
    create_account("otto", "a-long-password-2", "owner")
    client.post("/accounts/otto/deactivate/")
    assert not django_user_model.objects.get(username="otto").is_active
    answer = client.post("/accounts/olga/role/", {"role": "member"}, follow=True)
    assert "last active owner" in messages_of(answer)  # otto is an owner, but deactivated
    assert not Event.objects.filter(action="account.role").exists()


def test_an_owner_may_step_down_when_another_remains(client, owner, django_user_model):
    create_account("otto", "a-long-password-2", "owner")
    client.post("/accounts/olga/role/", {"role": "member"})
    assert roles.role_of(django_user_model.objects.get(username="olga")) == "member"
    assert client.get("/accounts/").status_code == 403  # at once


def test_nobody_deactivates_themselves(client, owner, django_user_model):
    create_account("otto", "a-long-password-2", "owner")
    answer = client.post("/accounts/olga/deactivate/", follow=True)
    assert "your own account" in messages_of(answer)
    assert django_user_model.objects.get(username="olga").is_active


def test_a_deactivated_account_is_logged_out(client, owner, django_user_model):
    from django.contrib.auth import authenticate
    from django.test import Client, RequestFactory

    gus = create_account("gus", "a-long-password-2", "member")
    other = Client()
    other.force_login(gus)
    assert other.get("/").status_code == 200
    client.post("/accounts/gus/deactivate/")
    assert other.get("/").status_code == 302  # to the login page
    assert (
        authenticate(RequestFactory().post("/login/"), username="gus", password="a-long-password-2") is None
    )
    event = Event.objects.get(action="account.deactivate")
    assert (event.target, event.before, event.after) == (
        "account:gus",
        {"active": True, "role": "member"},
        {"active": False},
    )


def test_a_superusers_role_is_the_admins_business(client, owner, django_user_model):
    django_user_model.objects.create_superuser("root", "", "a-long-password-3")
    answer = client.post("/accounts/root/role/", {"role": "guest"}, follow=True)
    assert "always an owner" in messages_of(answer)
