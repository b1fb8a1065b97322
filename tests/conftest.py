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
