import pytest

from devices.services import seed_home


@pytest.fixture
def home(db):
    """Seed 000's home, freshly created for the test."""
    seed_home()


@pytest.fixture
def staff_client(client, django_user_model):
    user = django_user_model.objects.create_superuser("boss", "boss@example.com", "pw-for-tests-only")
    client.force_login(user)
    return client


@pytest.fixture
def live_env(transactional_db):
    """Environment for a subprocess of the hub (mcp_stdio, daphne...) that must see the
    test database: committed rows, seeded home."""
    import os

    from django.db import connection

    seed_home()
    db = connection.settings_dict
    if connection.vendor == "sqlite":
        url = f"sqlite:///{db['NAME']}"
    else:
        user, host, port = db["USER"] or "postgres", db["HOST"] or "127.0.0.1", db["PORT"] or 5432
        url = f"postgres://{user}@{host}:{port}/{db['NAME']}"
    env = dict(os.environ)
    env["DATABASE_URL"] = url
    env.pop("REDIS_URL", None)
    return env
