import time

import pytest

from devices.home.services import seed_home


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test database, which on PostgreSQL cannot be dropped while a hub
    subprocess's connection is still closing: end those first, so no test database is
    left behind."""
    yield
    from django.db import connection

    if connection.vendor != "postgresql":
        return
    with django_db_blocker.unblock(), connection.cursor() as cursor:
        cursor.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )


def pytest_sessionfinish(session):
    """Django deletes the SQLite test database's file but not the `-wal` and `-shm` files WAL
    mode keeps beside it in the temporary folder: once the database is gone (fixtures torn
    down, --reuse-db not asked for), so are they."""
    from pathlib import Path

    from django.conf import settings

    if not settings.configured or settings.DATABASES["default"]["ENGINE"] != "django.db.backends.sqlite3":
        return
    database = Path(settings.DATABASES["default"]["TEST"]["NAME"])
    if not database.exists():
        for suffix in ("-wal", "-shm"):
            Path(f"{database}{suffix}").unlink(missing_ok=True)


@pytest.fixture(autouse=True)
def _no_cache_left_over():
    """This process's in-memory cache (rate-limit leases, kept streams) must not outlive a test
    whose database rows were rolled back: a budget spent in one test is not spent in the next.
    A shared cache (Redis) is left alone: other processes may be using it."""
    yield
    from django.core.cache import caches
    from django.core.cache.backends.locmem import LocMemCache

    if isinstance(caches["default"], LocMemCache):
        caches["default"].clear()


@pytest.fixture(autouse=True)
def _no_home_copy_left_over():
    """The home-state copy of this process must not outlive a test whose database is flushed
    behind the services' back (transactional tests)."""
    yield
    from devices.home import state as home_state

    home_state.forget()


@pytest.fixture(autouse=True)
def _no_feed_left_over(request, django_db_blocker):
    """A test that used the database channel layer on an event loop made this process listen
    to the others (a feed thread of its own on the test database). Stop it while the test
    database is still there: left running, it would fail on every database the test session
    blocks, drops or terminates, and print its tracebacks over the session's summary."""
    yield
    from asgiref.sync import async_to_sync
    from channels.layers import get_channel_layer

    from common.layers import DatabaseChannelLayer

    layer = get_channel_layer()
    if not isinstance(layer, DatabaseChannelLayer):
        return
    marked = request.node.get_closest_marker("django_db")
    if marked or {"db", "transactional_db"} & set(request.fixturenames):
        with django_db_blocker.unblock():
            async_to_sync(layer.close)()
    else:
        async_to_sync(layer.close)()


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
    # Never the machine's own broker (two passes of the suite run side by side, and their hubs
    # would share its topics and its default client id): a port where nothing listens, unless
    # the test hands its hub a private broker.
    env["MQTT_URL"] = f"mqtt://127.0.0.1:{free_port()}"
    # Tests scrape their hubs' /metrics without a token (tests/homehub/test_metrics.py checks
    # that it is closed by default, and the token).
    env["METRICS_PUBLIC"] = "1"
    return env


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def daphne_server(daphne_process):
    """A real daphne serving the hub on a free loopback port, over the test database."""
    return daphne_process[0]


@pytest.fixture
def daphne_process(live_env):
    """`daphne_server`'s base URL and process, for tests that stop it themselves."""
    yield from _daphne(live_env)


@pytest.fixture
def tasks_worker(live_env, tmp_path):
    """`manage.py tasks_worker` over the test database, as a deployment runs long work beside
    bare daphne (request it after any fixture that changes `live_env`)."""
    from tests.mqtt_support import Process

    worker = Process(["tasks_worker"], live_env, tmp_path / "tasks_worker.log")
    yield worker
    worker.stop()


@pytest.fixture
def second_daphne(live_env):
    """Another daphne process over the same database (its own memory, its own caches)."""
    yield from _daphne(live_env)


def _daphne(env):
    from tests.hub_support import running_hub

    with running_hub(env) as process:
        yield process.base, process.proc


@pytest.fixture
def make_token(transactional_db):
    from mcp_endpoint.auth.tokens import create_token

    def make(scopes=("read", "control", "fel", "devices"), name="agent", **kwargs) -> str:
        return create_token(name, list(scopes), **kwargs, actor="test", interface="system")[1]

    return make


@pytest.fixture
def extra_tools():
    """A `ToolSet` in the hub's registry for this test: tools declared on it with
    `tests.mcp_helpers.tool_on` are served by every transport until the test ends."""
    from mcp_endpoint.engine.registry import registry
    from tests.mcp_helpers import ToolSet

    tools = ToolSet()
    registry.add_provider(tools)
    yield tools
    registry.remove_provider(tools)


@pytest.fixture
def redis_url():
    """A Redis database of its own for the test (skipped where no Redis runs): databases 1-15
    are claimed with a key in database 0, so that the SQLite and PostgreSQL passes of
    `make test`, which run at the same time, never share one."""
    import os
    import uuid

    import redis

    base = os.environ.get("TEST_REDIS_URL", "redis://127.0.0.1:6379")
    claims = redis.Redis.from_url(f"{base}/0")
    try:
        claims.ping()
    except redis.ConnectionError:
        pytest.skip(f"no Redis at {base}")
    me = uuid.uuid4().hex
    number = _claim_redis_database(claims, me)
    url = f"{base}/{number}"
    client = redis.Redis.from_url(url)
    client.flushdb()
    try:
        yield url
    finally:
        client.flushdb()
        claims.delete(f"homehub-tests:db:{number}")


def _claim_redis_database(claims, me: str, timeout: float = 120.0) -> int:
    """A database number no other running test holds (a claim lapses after 10 minutes)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for number in range(1, 16):
            if claims.set(f"homehub-tests:db:{number}", me, nx=True, ex=600):
                return number
        time.sleep(0.2)
    raise RuntimeError("no free Redis database for the test")


@pytest.fixture
def inline_batches(settings):
    """FEL batch jobs run at once in the request's thread (inside the test's transaction), on
    the Tasks framework's immediate backend, instead of waiting for a tasks worker."""
    settings.TASKS = {"default": {"BACKEND": "django_tasks.backends.immediate.ImmediateBackend"}}
