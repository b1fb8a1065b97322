"""HomeHub settings.

Everything that differs between a laptop and a deployment comes from the environment;
the embedded defaults need nothing installed (SQLite, the database channel layer).
"""

import os
import tempfile
from datetime import timedelta
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None:
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def redis_database(url: str) -> str:
    """The database number a Redis URL names, as redis-py reads it: `?db=`, else the path of a
    `redis://` or `rediss://` URL (`unix://` paths name the socket); 0 when it names none."""
    parts = urlsplit(url)
    number = parse_qs(parts.query).get("db", [""])[0] or (
        parts.path.strip("/") if parts.scheme != "unix" else ""
    )
    return number if number.isdigit() else "0"


# Off unless asked for: a debug page shows the settings to whoever reaches the hub.
DEBUG = env_bool("DJANGO_DEBUG", False)
ALLOWED_HOSTS = env_list("DJANGO_ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver")

INSTALLED_APPS = [
    "homehub.daphne_app.DaphneConfig",  # daphne's runserver; its server imported where it serves
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.humanize",  # relative times ("2 minutes ago") in both languages
    "channels",
    "common",
    "mcp_endpoint",
    "devices",  # the schema's history before the split below (see devices/apps.py)
    "audit",
    "devices.home",
    "devices.agents",
    "devices.telemetry",
    "devices.mqtt",
    "devices.soms",
    "devices.xiaozhi",
    "fel",
    "automations",  # rooms, scenes, notifications and the automations engine (automations/engine/)
    "dashboard",
    "homehub",  # the commands that run the hub: serve, ensure_admin, healthz
    "ninja",  # serves the API docs' scripts itself (no CDN)
    "axes",  # login throttling: failed attempts and lockouts, in the database
    "csp",  # the Content-Security-Policy header on every page
    "django_tasks",  # Django's Tasks framework (backport): long work such as FEL batches
    "django_tasks_db",  # its database backend: the queue in the hub's own database
]
MIDDLEWARE = [
    "homehub.rest_errors.json_api_errors",  # outermost: every /api/ error answers JSON
    "django.middleware.security.SecurityMiddleware",
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",  # the dashboard's static files, served by the hub
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",  # the language: cookie, then Accept-Language
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "dashboard.language.account_language_middleware",  # a signed-in account's own choice wins
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # answers a locked-out login with its page (last, as axes asks)
]

ROOT_URLCONF = "homehub.urls"
WSGI_APPLICATION = None
ASGI_APPLICATION = "homehub.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "dashboard.confirmations.waiting_requests",
                "dashboard.notifications.unread_notifications",
                "dashboard.access.household_role",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------------------
# SQLite by default, in WAL mode so the dashboard can read while the MQTT worker writes;
# IMMEDIATE transactions take the write lock up front instead of failing on upgrade.
SQLITE_PATH = BASE_DIR / os.environ.get("HOMEHUB_SQLITE_NAME", "db.sqlite3")
DATABASES = {
    "default": dj_database_url.config(
        env="DATABASE_URL", default=f"sqlite:///{SQLITE_PATH}", conn_health_checks=True
    )
}
# Keep connections open: Channels closes "old" ones before every WebSocket message, and
# reopening SQLite (with its WAL checkpoint) costs more than the query. Seconds; empty = forever.
_max_age = os.environ.get("DATABASE_CONN_MAX_AGE", "")
DATABASES["default"]["CONN_MAX_AGE"] = int(_max_age) if _max_age else None
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
    # A file (not :memory:) so that servers started by the tests share it; one per test
    # run, so that runs in parallel never trample each other's database.
    DATABASES["default"]["TEST"] = {
        "NAME": str(Path(tempfile.gettempdir()) / f"homehub_test_{os.getpid()}.sqlite3")
    }
else:
    # One test database per test run, so that runs in parallel never drop each other's.
    DATABASES["default"]["TEST"] = {"NAME": f"test_homehub_{os.getpid()}"}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# --- Channels ---------------------------------------------------------------------------
REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    from redis.asyncio.retry import Retry as RedisRetry
    from redis.backoff import ExponentialBackoff
    from redis.exceptions import ConnectionError as RedisConnectionError

    # channels-redis's pub/sub layer: a message is one PUBLISH, pushed to the processes that
    # listen, where the core layer paid four round trips to send it and four more per listener
    # to receive it (docs/PERFORMANCE.md, "What a write costs"). A channel lives as long as its
    # process's subscription: nothing waits in Redis for a process that is not listening.
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.pubsub.RedisPubSubChannelLayer",
            "CONFIG": {
                "hosts": [
                    {
                        "address": REDIS_URL,
                        # redis-py 8 times reads out at 5 s by default; the layer's reader
                        # waits 0.1 s at a time.
                        "socket_timeout": 15,
                        # A connection Redis closed (it restarted) is made again within the
                        # command, not failed: else the first message each process sends after
                        # a restart (an answer, a change) would be lost.
                        "retry_on_error": [RedisConnectionError],
                        "retry": RedisRetry(ExponentialBackoff(cap=1.0, base=0.05), retries=5),
                    }
                ],
                # Redis's pub/sub ignores database numbers: the URL's number goes into every
                # channel's name, so that hubs sharing a Redis by number stay apart.
                "prefix": f"homehub.{redis_database(REDIS_URL)}.",
            },
        }
    }
else:
    # Without Redis, the hub's processes (daphne, mcp_stdio, MQTT workers) reach each other
    # through the database (common/layers.py); within a process, messages stay in memory.
    CHANNEL_LAYERS = {
        "default": {"BACKEND": "common.layers.DatabaseChannelLayer", "CONFIG": {"capacity": 1500}}
    }

# --- MQTT -------------------------------------------------------------------------------
MQTT_URL = os.environ.get("MQTT_URL", "mqtt://127.0.0.1:1883")
MQTT_USERNAME = os.environ.get("MQTT_USERNAME", "")
MQTT_PASSWORD = os.environ.get("MQTT_PASSWORD", "")
MQTT_CA_CERTS = os.environ.get("MQTT_CA_CERTS", "")
MQTT_CERTFILE = os.environ.get("MQTT_CERTFILE", "")
MQTT_KEYFILE = os.environ.get("MQTT_KEYFILE", "")
MQTT_TLS_INSECURE = env_bool("MQTT_TLS_INSECURE", False)  # skip the host name check (test brokers only)
MQTT_PROTOCOL = os.environ.get("MQTT_PROTOCOL", "5")  # "5" or "3.1.1"
# A fixed client id and a persistent session: QoS 1 messages published while the worker is
# down wait at the broker. Each of several workers needs its own id; unset, this installation's
# own (`homehub-worker-<installation id>`, below), so that two hubs on one broker (two checkouts'
# `make run` on one machine) never take each other's session.
MQTT_CLIENT_ID = os.environ.get("MQTT_CLIENT_ID", "")
MQTT_SESSION_EXPIRY_SECONDS = int(os.environ.get("MQTT_SESSION_EXPIRY_SECONDS", 7 * 86400))
MQTT_KEEPALIVE_SECONDS = int(os.environ.get("MQTT_KEEPALIVE_SECONDS", 30))
# Set: workers subscribe $share/<group>/... and split telemetry and commands between them.
MQTT_SHARED_GROUP = os.environ.get("MQTT_SHARED_GROUP", "")
# An MQTT agent that declared no heartbeat, silent this long, gets a presence check (0: only its
# last will says it is gone); one that does not answer the check in time is offline.
MQTT_AGENT_SILENCE_SECONDS = float(os.environ.get("MQTT_AGENT_SILENCE_SECONDS", 60))
MQTT_AGENT_PROBE_SECONDS = float(os.environ.get("MQTT_AGENT_PROBE_SECONDS", 3))
# Every subscription's delivery is proven by a probe this often, which must come back in time.
MQTT_PROBE_SECONDS = float(os.environ.get("MQTT_PROBE_SECONDS", 30))
MQTT_PROBE_TIMEOUT_SECONDS = float(os.environ.get("MQTT_PROBE_TIMEOUT_SECONDS", 10))
# Live sensor values go to the dashboard at most this often.
MQTT_BROADCAST_SECONDS = float(os.environ.get("MQTT_BROADCAST_SECONDS", 1.0))
# `homehub/alarm/set` disarms only with this code in the command (`{"armed": false, "code":
# "..."}`, compared in constant time); unset, disarming over MQTT is off (arming still works).
MQTT_DISARM_CODE = os.environ.get("MQTT_DISARM_CODE", "")
# `manage.py serve` (the README's run command) runs the worker inside the hub's process.
MQTT_IN_PROCESS = env_bool("MQTT_IN_PROCESS", True)

# --- State outside the database ------------------------------------------------------------
# Where the hub may keep a file of its own (the copy of the first admin's password that
# `ensure_admin` prints, the generated secret key), the first writable one wins:
# HOMEHUB_STATE_DIR when set; otherwise the project folder (development), then
# /var/lib/homehub (a deployment's read-only code folder refuses it). An existing folder: none
# is created.
HOMEHUB_STATE_DIR = os.environ.get("HOMEHUB_STATE_DIR", "")
HOMEHUB_STATE_DIRS = [Path(HOMEHUB_STATE_DIR)] if HOMEHUB_STATE_DIR else [BASE_DIR, Path("/var/lib/homehub")]

if not MQTT_CLIENT_ID:
    import socket

    from homehub.state import installation_id

    MQTT_CLIENT_ID = "homehub-worker-" + installation_id(
        HOMEHUB_STATE_DIRS, f"{socket.gethostname()}:{BASE_DIR}"
    )

# DJANGO_SECRET_KEY (a deployment's processes share it through their environment file); unset,
# a key generated once and kept in the state folder (mode 600) beside the password's copy, the
# same for every process and every restart of this hub. When no state folder takes it, a key
# for this process alone: sessions then end with it (`manage.py check` warns).
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "")
SECRET_KEY_FILE: Path | None = None
if not SECRET_KEY:
    from homehub.state import kept_secret_key

    _kept = kept_secret_key(HOMEHUB_STATE_DIRS)
    if _kept:
        SECRET_KEY, SECRET_KEY_FILE = _kept
    else:
        import secrets

        SECRET_KEY = secrets.token_urlsafe(50)

# --- FEL --------------------------------------------------------------------------------
FEL_ROOT = Path(os.environ.get("FEL_ROOT", BASE_DIR / "data")).resolve()
# PDF branding (seed 002 section 5); fel_render's logo_path/theme override them per call.
# FEL_LOGO_PATH: an image inside FEL_ROOT (empty: a monogram of the emisor's name).
# FEL_THEME: azul, verde, vino, grafito, or a #RRGGBB colour.
FEL_LOGO_PATH = os.environ.get("FEL_LOGO_PATH", "")
FEL_THEME = os.environ.get("FEL_THEME", "azul")
FEL_WEBSITE = os.environ.get("FEL_WEBSITE", "")
FEL_PHONE = os.environ.get("FEL_PHONE", "")
FEL_EMAIL = os.environ.get("FEL_EMAIL", "")
# Where PDFs go when the call names no place (relative to FEL_ROOT): fel_render writes
# <dir>/<xml name>.pdf, fel_batch writes into <dir>/. The default is seed 002's data/out.
FEL_OUTPUT_DIR = os.environ.get("FEL_OUTPUT_DIR", "out")
# Processes for fel_batch (0: one per core).
FEL_BATCH_WORKERS = int(os.environ.get("FEL_BATCH_WORKERS", "0"))
# Seed 002's fonts and layout. FEL_ACTIVE_FONT: montserrat or robotomono, embedded in every PDF
# from FEL_FONT_DIR_MONTSERRAT / FEL_FONT_DIR_ROBOTOMONO (empty: the copies in fel/fonts/; a
# relative folder is taken from the project root). FEL_QR_SIZE (72-180) and FEL_TOP_BAR_HEIGHT
# (0-72) are in points.
FEL_ACTIVE_FONT = os.environ.get("FEL_ACTIVE_FONT", "montserrat")
FEL_FONT_DIR_MONTSERRAT = os.environ.get("FEL_FONT_DIR_MONTSERRAT", "")
FEL_FONT_DIR_ROBOTOMONO = os.environ.get("FEL_FONT_DIR_ROBOTOMONO", "")
FEL_QR_SIZE = float(os.environ.get("FEL_QR_SIZE", "96"))
FEL_TOP_BAR_HEIGHT = float(os.environ.get("FEL_TOP_BAR_HEIGHT", "10"))

# --- Auth, i18n, static -------------------------------------------------------------------
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
# Login throttling (django-axes) on every password form (the dashboard's, the admin's; the
# OAuth consent page logs in through the dashboard's): after LOGIN_FAILURE_LIMIT failed
# attempts for one username from one address, that pair is refused, the right password
# included, for LOGIN_COOLOFF_SECONDS; further attempts meanwhile do not prolong it. Counted in
# the database, so every process of the hub agrees. The lockout is in the audit trail
# (dashboard.lockouts). Behind nginx the address is the client's (daphne --proxy-headers).
AUTHENTICATION_BACKENDS = [
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AXES_FAILURE_LIMIT = int(os.environ.get("LOGIN_FAILURE_LIMIT", 5))
AXES_COOLOFF_TIME = timedelta(seconds=float(os.environ.get("LOGIN_COOLOFF_SECONDS", 900)))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_RESET_ON_SUCCESS = True
AXES_RESET_COOL_OFF_ON_FAILURE_DURING_LOCKOUT = False
AXES_LOCKOUT_TEMPLATE = "dashboard/locked_out.html"
AXES_VERBOSE = False
# No row per successful login (nothing would prune them); failed attempts lapse with the cool-off.
AXES_DISABLE_ACCESS_LOG = True
LOGIN_URL = "dashboard:login"
LOGIN_REDIRECT_URL = "dashboard:home"

# Pages, messages, notifications and REST errors in English or Spanish: the account's choice
# (the switcher in the page footer), else the browser's Accept-Language, else LANGUAGE_CODE, which
# also writes the household-wide texts (notifications). Catalogs: locale/ (`make messages`).
LANGUAGE_CODE = os.environ.get("DJANGO_LANGUAGE_CODE", "en")
LANGUAGES = [("en", "English"), ("es", "Español")]
LOCALE_PATHS = [BASE_DIR / "locale"]
TIME_ZONE = os.environ.get("DJANGO_TIME_ZONE", "UTC")
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("DJANGO_STATIC_ROOT", BASE_DIR / "staticfiles")).resolve()

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"stderr": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr"}},
    "root": {"handlers": ["stderr"], "level": os.environ.get("HOMEHUB_LOG_LEVEL", "INFO")},
    # The device listener's embedded broker logs every connection and state change at INFO;
    # the listener logs what matters (devices refused, silent, offline) itself. oauthlib logs
    # the tokens it issues at DEBUG: never, whatever HOMEHUB_LOG_LEVEL says. django-axes says
    # INFO at every login and logout; its warnings (failed logins, lockouts) stay.
    # Apprise names the services it posts to in its messages, tokens and passwords included:
    # never logged (automations.notifications.dispatch logs each failure without them).
    # Django's own "django" logger has a console handler of its own under DEBUG and propagates
    # to the root's as well: every line of it came out twice. The root's handler is the one.
    "loggers": {
        "django": {"handlers": [], "level": "INFO"},
        **{name: {"level": "WARNING"} for name in ("amqtt", "transitions", "oauthlib", "axes")},
        "apprise": {"level": "CRITICAL", "propagate": False},
    },
}

# --- MCP --------------------------------------------------------------------------------
# How long a process trusts a verified token or a looked-up HTTP session without asking the
# database again: the bound on how long a token revoked or a session ended through another
# process keeps working here (0: ask every time).
MCP_AUTH_CACHE_SECONDS = float(os.environ.get("MCP_AUTH_CACHE_SECONDS", 2))
# Origins allowed to call /mcp and /ws/mcp/ besides the hub's own hosts (comma-separated).
MCP_ALLOWED_ORIGINS = env_list("MCP_ALLOWED_ORIGINS", "")
# Answer POSTed requests with plain JSON instead of a one-event SSE stream.
MCP_HTTP_JSON_RESPONSE = env_bool("MCP_HTTP_JSON_RESPONSE", False)
# How long a tool waits for the client's answer to sampling/createMessage or elicitation/create.
MCP_CLIENT_REQUEST_TIMEOUT_SECONDS = float(os.environ.get("MCP_CLIENT_REQUEST_TIMEOUT_SECONDS", 300))
# How long a task of the MCP tasks extension (its state and result) can be read after it is
# created (its `ttlMs`); expired tasks are unknown at once, deleted by the daily `prune_mcp_tasks`.
MCP_TASK_TTL_SECONDS = int(os.environ.get("MCP_TASK_TTL_SECONDS", 3600))
# How long a dangerous tool call waits for a person's confirmation (the client's elicitation, or
# a pending request on the dashboard) before it is refused (mcp_endpoint.controls.confirmation).
MCP_CONFIRMATION_SECONDS = float(os.environ.get("MCP_CONFIRMATION_SECONDS", 120))
# The hub's address as its owner's browser reaches it (e.g. https://hub.example.com): set, an
# MCP client that declared URL-mode elicitation is handed the approval page of its dangerous
# call at this address; unset, the owner finds it on the dashboard's Requests page only.
HUB_URL = os.environ.get("HUB_URL", "").strip()

# --- Notifications -------------------------------------------------------------------------
# Where every notification goes besides the dashboard: Apprise URLs (ntfy://, mailto://,
# tgram://, json://... one per service), separated by commas or spaces; unset, the dashboard
# only. Each account may add its own in the admin (automations.notifications).
NOTIFY_URLS = os.environ.get("NOTIFY_URLS", "").replace(",", " ").split()

# --- Long work (Django's Tasks framework, the django-tasks backport) --------------------------
# FEL batches run as tasks, run by any tasks worker (`serve` runs one unless TASKS_IN_PROCESS=0;
# `manage.py tasks_worker` runs one on its own), so a batch outlives the process that received
# it. The queue: TASKS_BACKEND=database (the default: the hub's own database, nothing more to
# run) or TASKS_BACKEND=rq (RQ on Redis, through django-tasks-rq and django-rq: TASKS_REDIS_URL,
# by default REDIS_URL). Never chosen by REDIS_URL alone: tasks already queued in the other
# backend would wait for ever (docs/DEPLOY.md says how to switch).
TASKS_BACKEND = os.environ.get("TASKS_BACKEND", "database").strip().lower()
TASKS_REDIS_URL = os.environ.get("TASKS_REDIS_URL", "") or REDIS_URL
if TASKS_BACKEND == "database":
    TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend", "QUEUES": ["default"]}}
elif TASKS_BACKEND == "rq":
    if not TASKS_REDIS_URL:
        raise ImproperlyConfigured("TASKS_BACKEND=rq needs Redis: set TASKS_REDIS_URL or REDIS_URL")
    INSTALLED_APPS.append("django_rq")
    TASKS = {"default": {"BACKEND": "django_tasks_rq.RQBackend", "QUEUES": ["default"]}}
    # No time limit (RQ's default kills a job after 180 s): a batch takes as long as its files,
    # and one whose worker died is resumed after TASKS_LEASE_SECONDS instead.
    RQ_QUEUES = {"default": {"URL": TASKS_REDIS_URL, "DEFAULT_TIMEOUT": -1}}
else:
    raise ImproperlyConfigured(f"TASKS_BACKEND={TASKS_BACKEND!r}: use database or rq")
TASKS_IN_PROCESS = env_bool("TASKS_IN_PROCESS", True)
# A running batch whose task has been silent this long (its heartbeat comes every third of
# it) counts as abandoned by a worker that died, and a tasks worker resumes it.
TASKS_LEASE_SECONDS = float(os.environ.get("TASKS_LEASE_SECONDS", 30))

# --- Automations (automations/) ------------------------------------------------------------
# The home's place for sunrise and sunset triggers, "latitude,longitude" (e.g. "14.6,-90.5");
# unset, a sun trigger is refused when saved. Schedules use the home's time zone, TIME_ZONE.
HOMEHUB_LOCATION = os.environ.get("HOMEHUB_LOCATION", "").strip()
# Whether `serve` runs the automations engine in its process (the `run_automations` command
# runs it on its own); several engines over one database share the automations by leases.
AUTOMATIONS_IN_PROCESS = os.environ.get("AUTOMATIONS_IN_PROCESS", "1") != "0"
# A schedule due while no engine ran runs once at start when it is at most this late; older,
# it is recorded as missed.
AUTOMATION_GRACE_SECONDS = float(os.environ.get("AUTOMATION_GRACE_SECONDS", 300))
# How long an engine's lease on an automation lasts unless renewed (renewed every third of
# it): another process takes over an engine that died within this.
AUTOMATION_LEASE_SECONDS = float(os.environ.get("AUTOMATION_LEASE_SECONDS", 15))
# Loop guards: a chain of automations triggering each other deeper than this, or one
# automation starting more runs than this in a minute, is stopped (the reason in its trace).
AUTOMATION_CHAIN_MAX = int(os.environ.get("AUTOMATION_CHAIN_MAX", 5))
AUTOMATION_RUNS_PER_MINUTE = int(os.environ.get("AUTOMATION_RUNS_PER_MINUTE", 30))
# Runs (with their traces) are kept this long, and at most this many per automation.
AUTOMATION_RUNS_KEEP_DAYS = int(os.environ.get("AUTOMATION_RUNS_KEEP_DAYS", 30))
AUTOMATION_RUNS_KEEP = int(os.environ.get("AUTOMATION_RUNS_KEEP", 500))
# Streamable HTTP resumability (SEP-1699): the `retry` a priming event asks of clients, and
# how many events of a stream, for how long, are kept (in the cache) for a GET resumed with
# Last-Event-ID.
MCP_SSE_RETRY_MS = int(os.environ.get("MCP_SSE_RETRY_MS", 1000))
MCP_SSE_KEEP_EVENTS = int(os.environ.get("MCP_SSE_KEEP_EVENTS", 100))
MCP_SSE_KEEP_SECONDS = int(os.environ.get("MCP_SSE_KEEP_SECONDS", 600))

# Outbound MCP endpoints (`add_mcp_endpoint`, the admin; kept connected by `serve`): the tools
# a new endpoint sees unless told otherwise (voice assistants break with too many tools).
MCP_ENDPOINT_DEFAULT_TOOLS = env_list(
    "MCP_ENDPOINT_DEFAULT_TOOLS",
    "list_lights_on,set_light_state,get_alarm_status,get_presence,get_all_states,get_sensor_values",
)
# How often a serving process looks for endpoints added, changed or removed, and renews its
# claim on those it holds (a claim lapses after six rounds: another process then takes over).
MCP_ENDPOINT_POLL_SECONDS = float(os.environ.get("MCP_ENDPOINT_POLL_SECONDS", 5))
# WebSocket pings to each endpoint this often; one unanswered this long drops the connection.
MCP_ENDPOINT_PING_SECONDS = float(os.environ.get("MCP_ENDPOINT_PING_SECONDS", 20))

# The hub's OAuth 2.1 server for /mcp (`mcp_endpoint.auth.oauth`: hosted connectors): how long an
# access token lasts (the client refreshes it), how long a refresh token may wait to be used,
# how long a client's metadata document (its client_id URL) is kept before it is read again,
# whether documents on loopback addresses may be read (tests and development only: a client
# could otherwise make the hub fetch from its own machine), and how many dynamic registrations
# one address may make in an hour (anyone may register; 0: no limit).
MCP_OAUTH_ACCESS_TOKEN_SECONDS = int(os.environ.get("MCP_OAUTH_ACCESS_TOKEN_SECONDS", 3600))
MCP_OAUTH_REFRESH_TOKEN_SECONDS = int(os.environ.get("MCP_OAUTH_REFRESH_TOKEN_SECONDS", 30 * 86400))
MCP_OAUTH_CLIENT_CACHE_SECONDS = int(os.environ.get("MCP_OAUTH_CLIENT_CACHE_SECONDS", 3600))
MCP_OAUTH_ALLOW_LOOPBACK_CLIENTS = env_bool("MCP_OAUTH_ALLOW_LOOPBACK_CLIENTS", False)
MCP_OAUTH_REGISTRATIONS_PER_HOUR = int(os.environ.get("MCP_OAUTH_REGISTRATIONS_PER_HOUR", 20))
# Reading a client's metadata document is asked for by unauthenticated requests: each read has
# one deadline for everything (connect, TLS, headers, body), a process reads at most so many at
# once (more are answered `temporarily_unavailable` at once), and the hub keeps at most so many
# documents (a document no grant uses is deleted after a day, the oldest first when full).
MCP_OAUTH_DOCUMENT_SECONDS = float(os.environ.get("MCP_OAUTH_DOCUMENT_SECONDS", 5))
MCP_OAUTH_DOCUMENT_FETCHES = int(os.environ.get("MCP_OAUTH_DOCUMENT_FETCHES", 4))
MCP_OAUTH_DOCUMENT_CLIENTS_MAX = int(os.environ.get("MCP_OAUTH_DOCUMENT_CLIENTS_MAX", 200))

# --- Audit trail ------------------------------------------------------------------------------
# Successful read-only MCP tool calls are counted in /metrics; set to also keep each as an Event.
AUDIT_READ_CALLS = env_bool("AUDIT_READ_CALLS", False)
# `manage.py prune_events` (run daily by deploy/systemd) deletes events older than this.
AUDIT_RETENTION_DAYS = int(os.environ.get("AUDIT_RETENTION_DAYS", 90))

# --- ESP32 devices (/ws/devices/) ------------------------------------------------------------
# Let devices nobody registered connect, as agents pending an admin's approval.
DEVICES_ACCEPT_UNKNOWN = env_bool("DEVICES_ACCEPT_UNKNOWN", False)
# Each hub process vouches for its connected devices this often; a device no process has
# vouched for in three rounds (its process died) goes offline.
DEVICES_PRESENCE_SECONDS = float(os.environ.get("DEVICES_PRESENCE_SECONDS", 60))
# Offered to devices in `initialize` (capabilities.vision) when set.
DEVICE_VISION_URL = os.environ.get("DEVICE_VISION_URL", "")
DEVICE_VISION_TOKEN = os.environ.get("DEVICE_VISION_TOKEN", "")
# Stock xiaozhi firmware over MQTT (devices/xiaozhi/mqtt/, docs/MQTT.md#xiaozhi-devices-over-mqtt):
# the `host:port` handed to devices in their OTA answer; unset, devices are offered the
# WebSocket only. With it set, `serve` runs the device listener (an embedded broker) on
# DEVICE_MQTT_LISTEN (default: every interface, on the endpoint's port).
DEVICE_MQTT_ENDPOINT = os.environ.get("DEVICE_MQTT_ENDPOINT", "").strip()
DEVICE_MQTT_LISTEN = os.environ.get("DEVICE_MQTT_LISTEN", "").strip()
# The keepalive handed to devices (the firmware's own default); a device silent for 1.5 times
# its keepalive is disconnected and offline.
DEVICE_MQTT_KEEPALIVE_SECONDS = int(os.environ.get("DEVICE_MQTT_KEEPALIVE_SECONDS", 240))

# --- Stock xiaozhi devices (/xiaozhi/ota/) ---------------------------------------------------
# The WebSocket URL handed to stock devices in their OTA answer; unset: `/ws/devices/` on the
# host and scheme the device used to reach the OTA URL (ws:// for http://, wss:// for https://).
DEVICE_WEBSOCKET_URL = os.environ.get("DEVICE_WEBSOCKET_URL", "")
# How long an activation code a device shows may be typed in (the device asks for a new one
# by itself once it expires).
DEVICE_ACTIVATION_CODE_SECONDS = int(os.environ.get("DEVICE_ACTIVATION_CODE_SECONDS", 600))

# --- Cache: shared through Redis when REDIS_URL is set; without it each process has its own,
# and the rate limits' counts are shared through the database (`mcp_endpoint.auth.ratelimit`) ------
if REDIS_URL:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}}
else:
    CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

# --- Web security: secrets, HTTPS, headers, static files, health, metrics -------------------
# Kept in one block; docs/DEPLOY.md explains each setting and deploy/homehub.env.example sets
# them for a hub behind nginx. Every HTTPS-only setting is off unless the operator turns it on
# (`make run` and the tests serve plain HTTP on loopback), whatever DJANGO_DEBUG says.
CSRF_TRUSTED_ORIGINS = env_list("DJANGO_CSRF_TRUSTED_ORIGINS", "")  # e.g. https://hub.example.org
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
X_FRAME_OPTIONS = "DENY"
# Content-Security-Policy on every page (django-csp): scripts, styles, fonts and images from the
# hub itself only, none inline (no template or script of the hub, the admin or the API docs
# needs one), so an injected <script> or style attribute does not run; the page's requests,
# WebSockets included, only to the hub; never in a frame; forms post only to the hub (the OAuth
# consent page, whose answer redirects to the app, lifts that: dashboard.oauth).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],  # Swagger UI's stylesheet draws some icons as data: images
        "connect-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
    }
}
# "X-Forwarded-Proto: https": trust this header from the proxy in front (nginx sets it and
# clients cannot); empty when nothing sits in front. Never set it without such a proxy.
_proxy_ssl_header = os.environ.get("DJANGO_SECURE_PROXY_SSL_HEADER", "")
if _proxy_ssl_header:
    _header, _, _value = _proxy_ssl_header.partition(":")
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + _header.strip().upper().replace("-", "_"), _value.strip())
# Session and CSRF cookies only over HTTPS.
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool("DJANGO_SECURE_COOKIES", False)
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", False)
# Probes and scrapers ask daphne itself over loopback HTTP: no redirect for them.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^metrics$"]
SECURE_HSTS_SECONDS = int(os.environ.get("DJANGO_HSTS_SECONDS", 0))
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("DJANGO_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("DJANGO_HSTS_PRELOAD", False)
# `check --deploy` warns whenever preload is off (security.W021); off is the documented default
# (docs/DEPLOY.md: enrolling the domain is the operator's own decision, hard to undo).
SILENCED_SYSTEM_CHECKS = ["security.W021"]
if env_bool("DJANGO_STATIC_COLLECTED", False):
    # `collectstatic` wrote hashed, compressed copies to STATIC_ROOT; WhiteNoise serves them
    # cached forever.
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
    }
else:
    WHITENOISE_USE_FINDERS = True  # straight from the apps' static/ folders, no collectstatic
# /healthz: also require a running MQTT worker linked to the broker (0 for a hub without MQTT).
HEALTHZ_CHECK_MQTT = env_bool("HEALTHZ_CHECK_MQTT", True)
# /metrics: scrapers send `Authorization: Bearer <METRICS_TOKEN>`; without a token, open to
# anyone only with METRICS_PUBLIC, else closed (403).
METRICS_TOKEN = os.environ.get("METRICS_TOKEN", "")
METRICS_PUBLIC = env_bool("METRICS_PUBLIC", False)

# --- Limits ------------------------------------------------------------------------------------
# Every bound on what a client, a device or a sensor may ask of the hub, in one place.
# docs/LIMITS.md says, for each, what the one who exceeds it sees. 0 turns off the ones
# marked "(0: none)".
_MiB = 1024 * 1024
# HTTP: a request body (REST API, dashboard forms and uploads) larger than this is refused
# with 413 before Django reads it; /mcp has its own limit below.
HTTP_MAX_BODY_BYTES = int(os.environ.get("HTTP_MAX_BODY_BYTES", 64 * _MiB))
# A form or JSON body Django reads into memory (uploaded files excepted): 400/413 past it.
DATA_UPLOAD_MAX_MEMORY_SIZE = int(os.environ.get("HTTP_MAX_FORM_BYTES", int(2.5 * _MiB)))
# Files one upload may carry (a dashboard or REST batch); Django's default is 100.
DATA_UPLOAD_MAX_NUMBER_FILES = int(os.environ.get("FEL_BATCH_MAX_FILES", "500"))
# Larger FEL XML files are refused before parsing (the 45-item sample is 45 KB).
FEL_MAX_XML_BYTES = int(os.environ.get("FEL_MAX_XML_BYTES", str(2 * _MiB)))

# MCP: the largest message on any transport (HTTP answers 413).
MCP_MAX_MESSAGE_BYTES = int(os.environ.get("MCP_MAX_MESSAGE_BYTES", 4 * _MiB))
# An HTTP session unused this long ends (404, initialize again).
MCP_SESSION_IDLE_SECONDS = int(os.environ.get("MCP_SESSION_IDLE_SECONDS", 3600))
# Live HTTP sessions one token may hold, a new one ending the least recently used; and
# /ws/mcp/ connections per token in each process, more being refused (0: none).
MCP_MAX_SESSIONS_PER_TOKEN = int(os.environ.get("MCP_MAX_SESSIONS_PER_TOKEN", 50))
# Requests one session may have running at once (and messages in one batch); past it, a
# JSON-RPC error (0: none).
MCP_MAX_CONCURRENT_CALLS = int(os.environ.get("MCP_MAX_CONCURRENT_CALLS", 16))
# A /ws/mcp/ connection that sends nothing this long is closed with 4408 (0: never).
MCP_WS_IDLE_SECONDS = float(os.environ.get("MCP_WS_IDLE_SECONDS", 3600))
# Tool calls allowed per token per window, shared by every process (0: none).
MCP_RATE_LIMIT = int(os.environ.get("MCP_RATE_LIMIT", 600))
MCP_RATE_WINDOW_SECONDS = int(os.environ.get("MCP_RATE_WINDOW_SECONDS", 60))

# ESP32 devices: larger frames are ignored (daphne itself closes the socket past 1 MiB).
DEVICE_MAX_MESSAGE_BYTES = int(os.environ.get("DEVICE_MAX_MESSAGE_BYTES", 64 * 1024))
# What a device (any transport) may offer and say: tools kept of its tools/list (the first
# ones), a tool name's and description's length in characters (longer names are left out,
# descriptions cut), notifications heard (audited) per minute (0: no limit); past each, logged.
DEVICE_MAX_TOOLS = int(os.environ.get("DEVICE_MAX_TOOLS", 128))
DEVICE_MAX_TOOL_NAME = int(os.environ.get("DEVICE_MAX_TOOL_NAME", 64))
DEVICE_MAX_TOOL_DESCRIPTION = int(os.environ.get("DEVICE_MAX_TOOL_DESCRIPTION", 2048))
DEVICE_NOTIFICATIONS_PER_MINUTE = int(os.environ.get("DEVICE_NOTIFICATIONS_PER_MINUTE", 60))
# A device silent this long is closed with 4408; the hub pings an MCP device half-way, so
# only a dead or stuck one stays silent (0: never).
DEVICE_IDLE_SECONDS = float(os.environ.get("DEVICE_IDLE_SECONDS", 600))
# Stock xiaozhi devices waiting to be added at once (each with its code), in all and from one
# address (an IPv6 /64); past either, a new one's OTA check-in still gets a code and the oldest
# waiting code (of that address, or of all) expires. A check-in's body past
# DEVICE_MAX_MESSAGE_BYTES gets 413.
DEVICE_PENDING_ACTIVATIONS_MAX = int(os.environ.get("DEVICE_PENDING_ACTIVATIONS_MAX", 100))
DEVICE_PENDING_ACTIVATIONS_PER_ADDRESS = int(os.environ.get("DEVICE_PENDING_ACTIVATIONS_PER_ADDRESS", 10))
# Agents waiting for the owner's approval at once (MQTT announcements, unknown devices let in):
# past it, a new one is refused until some are approved or deleted (0: no bound).
DEVICES_PENDING_MAX = int(os.environ.get("DEVICES_PENDING_MAX", 100))

# MQTT telemetry: written in batches of this many messages or this many seconds, whichever first.
MQTT_BATCH_SIZE = int(os.environ.get("MQTT_BATCH_SIZE", 500))
MQTT_BATCH_SECONDS = float(os.environ.get("MQTT_BATCH_SECONDS", 0.05))
# Messages received but not yet written; past it the worker stops reading (backpressure).
MQTT_QUEUE_LIMIT = int(os.environ.get("MQTT_QUEUE_LIMIT", 20000))
# Unacknowledged QoS 1 messages the broker may send at once (MQTT 5 Receive Maximum).
MQTT_RECEIVE_MAXIMUM = int(os.environ.get("MQTT_RECEIVE_MAXIMUM", 2000))
# Rejected messages kept for people to look at (the oldest are pruned).
MQTT_REJECTED_KEEP = int(os.environ.get("MQTT_REJECTED_KEEP", 10000))
