"""Settings for the ASI-Bench Portal.

Everything comes from environment variables with embedded defaults that need no services:
SQLite, kombu's filesystem broker and local files, all under ``ASIBENCH_VAR_DIR``.
`.env.example` lists every variable. Integrations (PostgreSQL, Redis, S3, Docker sandbox,
SMTP) switch on by their variable and only then require the rest.
"""

import json
import os
import secrets
from pathlib import Path
from urllib.parse import urlsplit

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from config.error_reporting import error_reporting_start
from config.metrics import listen_address
from config.object_storage import s3_client_config
from contracts.sandbox_policy import POLICIES, default_modes
from portal.loopback import is_loopback_host
from scoring.judging.endpoint import JudgeConfigurationError, JudgeEndpoint
from scoring.judging.settings import AGENT_JUDGE_SERVER_PATH, agent_judge_settings

BASE_DIR = Path(__file__).resolve().parent.parent
TASKS_DIR = Path(os.environ.get("ASIBENCH_TASKS_DIR", BASE_DIR / "tasks"))

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default).strip()


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name} must be a boolean (1/0, true/false), got {raw!r}")


def env_int(name: str, default: int, minimum: int = 0) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be an integer, got {raw!r}") from exc
    if value < minimum:
        raise ImproperlyConfigured(f"{name} must be >= {minimum}, got {value}")
    return value


def env_float(name: str, default: float, minimum: float = 0.0) -> float:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        value = float(raw)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name} must be a number, got {raw!r}") from exc
    if not value >= minimum or value == float("inf"):
        raise ImproperlyConfigured(f"{name} must be a finite number >= {minimum}, got {raw!r}")
    return value


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in os.environ.get(name, default).split(",") if item.strip()]


def env_base_url(name: str) -> str:
    """An absolute http(s) base URL without a trailing slash ("" when unset)."""
    raw = env_str(name).rstrip("/")
    if not raw:
        return ""
    parts = urlsplit(raw)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        raise ImproperlyConfigured(f"{name} must be an absolute http(s) URL such as https://asibench.example, "
                                   f"got {raw!r}")
    return raw


VAR_DIR = Path(env_str("ASIBENCH_VAR_DIR") or BASE_DIR / "var").resolve()
VAR_DIR.mkdir(parents=True, exist_ok=True)
# Tasks accepted through proposals are written here and loaded next to TASKS_DIR.
PUBLISHED_TASKS_DIR = Path(env_str("ASIBENCH_PUBLISHED_TASKS_DIR") or VAR_DIR / "published_tasks")
# Two task directories with one id (ours and the official catalog share two): `refuse` loads
# neither new one and names both; `keep` keeps the one already in the catalog (or found in the
# earlier root); `replace` lets the directory being loaded (the later root) win.
CATALOG_ID_CLASH = env_str("ASIBENCH_CATALOG_ID_CLASH", "refuse").lower()
if CATALOG_ID_CLASH not in ("refuse", "keep", "replace"):
    raise ImproperlyConfigured(f"ASIBENCH_CATALOG_ID_CLASH must be refuse, keep or replace, got {CATALOG_ID_CLASH!r}")

# Development (`make run`) unless DEBUG=0; the compose file sets 0. Django's debug page shows settings,
# source and request data, so DEBUG is for this machine only: it refuses public host names and a TLS
# proxy (below), gunicorn refuses it on a bind others can reach (gunicorn.conf.py), and any client
# but loopback gets a 403 (portal.middleware.DebugLoopbackOnlyMiddleware).
DEBUG = env_bool("DEBUG", True)

# The embedded default generates a random key once and keeps it under VAR_DIR. Production
# (DEBUG=0) must bring its own: a key that lives on the same disk as the data is no secret.
_INSECURE_PREFIX = "django-insecure"
SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG=0 (production).")
    _key_file = VAR_DIR / "secret_key"
    if not _key_file.exists():
        _key_file.write_text(f"{_INSECURE_PREFIX}-{secrets.token_urlsafe(50)}")
        _key_file.chmod(0o600)
    SECRET_KEY = _key_file.read_text().strip()
elif not DEBUG and (SECRET_KEY.startswith(_INSECURE_PREFIX) or len(SECRET_KEY) < 50):
    raise ImproperlyConfigured(
        "SECRET_KEY is insecure for DEBUG=0: use at least 50 random characters "
        f"that do not start with {_INSECURE_PREFIX!r}."
    )

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "127.0.0.1,localhost,[::1],testserver")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")
# The Portal's public address, e.g. https://asibench.example: the one base of every link in the mails
# and in what the API prints (confirm_url, activation). Unset, API links follow the request and mails
# use the request's address, or `make run`'s default http://127.0.0.1:8000 when a worker sends them
# (`make run` sets it to its own port; `check --deploy` warns when production leaves it unset).
PUBLIC_BASE_URL = env_base_url("ASIBENCH_PUBLIC_URL")
# The name mails greet with and put in their subjects (allauth's and ours alike).
SITE_NAME = env_str("ASIBENCH_SITE_NAME", "ASI-Bench Portal")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "allauth",
    "allauth.account",
    "allauth.mfa",
    "portal",
    "portal.accounts",
    "catalog",
    "portal.guides",
    "portal.status",
    "portal.submissions",
    "leaderboard",
    "scoring",
    "proposals",
]

MIDDLEWARE = [
    "portal.middleware.DebugLoopbackOnlyMiddleware",  # first: nothing runs for a stranger while DEBUG is on
    "django.middleware.security.SecurityMiddleware",
    "portal.middleware.ContentSecurityPolicyMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "portal.uploads.UploadLimitMiddleware",  # before CSRF, which would parse an upload's body first
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "allauth.account.middleware.AccountMiddleware",
    "portal.accounts.middleware.MaintainerSecondFactorMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "portal" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "portal.accounts.context_processors.roles",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL") or f"sqlite:///{VAR_DIR / 'db.sqlite3'}",
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60),
        # A kept connection is checked before a request reuses it, so a database restart (or
        # failover) costs each web thread a reconnect, not a 500.
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # `make run`: the web server and the worker write at once. WAL lets readers and one writer
    # go on together; IMMEDIATE takes the write lock when a transaction starts, so two writers
    # queue on the busy timeout instead of one failing at once with "database is locked" (a
    # deferred transaction that read first cannot wait for the lock it then needs).
    DATABASES["default"].setdefault("OPTIONS", {}).update({
        "timeout": 30,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    })
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_USER_MODEL = "accounts.User"
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "allauth.account.auth_backends.AuthenticationBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

ACCOUNT_LOGIN_METHODS = {"email"}
ACCOUNT_SIGNUP_FIELDS = ["email*", "password1*", "password2*"]
ACCOUNT_USER_MODEL_USERNAME_FIELD = None
# Accounts are free, so an unverified address would make every sign-up one more scoring quota:
# sign-in waits for the e-mailed link, and tokens, uploads and confirms need a verified address
# whatever this says (`optional` only lets unverified users sign in and look around).
ACCOUNT_EMAIL_VERIFICATION = env_str("ACCOUNT_EMAIL_VERIFICATION", "mandatory")
if ACCOUNT_EMAIL_VERIFICATION not in {"mandatory", "optional"}:
    raise ImproperlyConfigured(
        f"ACCOUNT_EMAIL_VERIFICATION must be mandatory or optional, got {ACCOUNT_EMAIL_VERIFICATION!r}")
ACCOUNT_LOGOUT_ON_PASSWORD_CHANGE = True
ACCOUNT_RATE_LIMITS = {
    "login": "30/m/ip",
    "login_failed": "10/m/ip,5/5m/key",
    "signup": "20/m/ip",
    "reset_password": "20/m/ip,5/m/key",
    # Wrong device-login codes typed at /submit/activate (codes are 8 letters; no guessing).
    "device_activate": env_str("ASIBENCH_ACTIVATE_FAILED_RATE", "5/5m/user,20/h/ip"),
}
# allauth's mails in the Portal's name and with links to PUBLIC_BASE_URL (portal/accounts/adapter.py).
ACCOUNT_ADAPTER = "portal.accounts.adapter.PortalAccountAdapter"
ACCOUNT_FORMS = {
    "change_password": "portal.accounts.forms.PasswordChangeWithTokensForm",
    "reset_password_from_key": "portal.accounts.forms.PasswordResetWithTokensForm",
}
# Second factors (django-allauth MFA). Maintainers must have one (portal.accounts.middleware): an
# authenticator app (TOTP) or, where the browser offers it, a security key (WebAuthn); recovery codes
# come with the first. Others may add one on /accounts/2fa/. Plain http only for DEBUG on loopback.
MFA_SUPPORTED_TYPES = ["totp", "recovery_codes", "webauthn"]
MFA_TOTP_ISSUER = env_str("ASIBENCH_MFA_ISSUER", "ASI-Bench Portal")
MFA_WEBAUTHN_ALLOW_INSECURE_ORIGIN = DEBUG
LOGIN_REDIRECT_URL = "/submit/dashboard"
LOGIN_URL = "/accounts/login/"

CACHES = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": env_str("CACHE_URL")}
        if env_str("CACHE_URL")
        # File-based so that rate limits hold across the web processes of `make run`.
        else {
            "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
            "LOCATION": str(VAR_DIR / "cache"),
        }
    )
}

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "/static/"
STATIC_ROOT = VAR_DIR / "static"
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

# Storage: archives, instance inputs and private references. Never served by URL.
S3_BUCKET = env_str("ASIBENCH_S3_BUCKET")
MEDIA_ROOT = VAR_DIR / "media"
S3_ENDPOINT_URL = env_str("ASIBENCH_S3_ENDPOINT_URL") or None
if S3_BUCKET:
    _default_storage = {
        "BACKEND": "storages.backends.s3.S3Storage",
        "OPTIONS": {
            "bucket_name": S3_BUCKET,
            "endpoint_url": S3_ENDPOINT_URL,
            "region_name": env_str("ASIBENCH_S3_REGION") or None,
            "access_key": env_str("ASIBENCH_S3_ACCESS_KEY_ID") or None,
            "secret_key": env_str("ASIBENCH_S3_SECRET_ACCESS_KEY") or None,
            "location": env_str("ASIBENCH_S3_PREFIX"),
            "default_acl": None,
            "querystring_auth": True,
            "file_overwrite": False,
            # Not AWS (SeaweedFS in compose, radosgw, ...): checksums only where required, path-style.
            "client_config": s3_client_config(S3_ENDPOINT_URL),
        },
    }
else:
    _default_storage = {
        "BACKEND": "django.core.files.storage.FileSystemStorage",
        "OPTIONS": {"location": str(MEDIA_ROOT), "base_url": None},
    }
STORAGES = {
    "default": _default_storage,
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}

EMAIL_HOST = env_str("EMAIL_HOST")
if EMAIL_HOST:
    EMAIL_BACKEND = "django.core.mail.backends.smtp.EmailBackend"
    EMAIL_PORT = env_int("EMAIL_PORT", 587)
    EMAIL_HOST_USER = env_str("EMAIL_HOST_USER")
    EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD")
    EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", True)
else:
    EMAIL_BACKEND = env_str("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
    EMAIL_FILE_PATH = env_str("EMAIL_FILE_PATH") or str(VAR_DIR / "mail")  # for the file-based backend
DEFAULT_FROM_EMAIL = env_str("DEFAULT_FROM_EMAIL", "ASI-Bench Portal <noreply@asibench.local>")

# Celery. The embedded default is kombu's filesystem transport, so `make run` needs no server.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL") or "filesystem://"
if CELERY_BROKER_URL == "filesystem://":
    _broker_dir = VAR_DIR / "broker"
    for _sub in ("queue", "processed", "control"):
        (_broker_dir / _sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
else:
    # A dead worker's unacknowledged messages are due again after the visibility timeout; a worker
    # looks for due ones every restore interval. kombu's default also scans on only every 10th
    # look, which added up to 100 s to every redelivery, so each look scans.
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "visibility_timeout": env_int("CELERY_VISIBILITY_TIMEOUT", 3600, minimum=1),
        "unacked_restore_interval": env_int("CELERY_UNACKED_RESTORE_INTERVAL", 10, minimum=1),
        "unacked_restore_throttle": 1,
    }
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND") or None
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_ALWAYS_EAGER = env_bool("CELERY_TASK_ALWAYS_EAGER", False)
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Work any signed-up author can start (running their task code) has its own queue, so a backlog
# of it never sits in front of scoring: a worker consuming both queues alternates between them,
# and an operator can give proposals a worker of their own. Every worker we start takes
# `-Q celery,proposals` (scripts/run-portal.sh, docker-compose.yml, tests/support.py).
CELERY_TASK_DEFAULT_QUEUE = "celery"
PROPOSALS_QUEUE = "proposals"
CELERY_TASK_ROUTES = {
    "proposals.validate_proposal": {"queue": PROPOSALS_QUEUE},
    "proposals.publish_proposal": {"queue": PROPOSALS_QUEUE},
    "proposals.revision_diff": {"queue": PROPOSALS_QUEUE},
    # Health checks run each task's reference and naive solutions for minutes: never in front of scoring.
    "scoring.task_health_check": {"queue": PROPOSALS_QUEUE},
}

# Proxies in front of the Portal that append to X-Forwarded-For. Rate limits key on the client
# address that many hops from the right; 0 means REMOTE_ADDR, and the header is never trusted.
NUM_PROXIES = env_int("NUM_PROXIES", 0)
ALLAUTH_TRUSTED_PROXY_COUNT = NUM_PROXIES
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "portal.accounts.authentication.BearerTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": [
        "rest_framework.permissions.IsAuthenticated",
        "portal.accounts.permissions.TokenScopePermission",
    ],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "portal.api_errors.api_exception_handler",
    "NUM_PROXIES": NUM_PROXIES,
    "DEFAULT_THROTTLE_RATES": {
        "device_code": env_str("ASIBENCH_DEVICE_CODE_RATE", "20/min"),
        "device_token": env_str("ASIBENCH_DEVICE_TOKEN_RATE", "120/min"),
        "token_check": env_str("ASIBENCH_TOKEN_CHECK_RATE", "60/min"),
        "bundle_upload": env_str("ASIBENCH_UPLOAD_RATE", "30/hour"),
        # Dataset downloads per client address: a full pull through the Hub endpoint is two requests
        # (HEAD, GET) per file.
        "dataset_download": env_str("ASIBENCH_DOWNLOAD_RATE", "1200/min"),
    },
}
SPECTACULAR_SETTINGS = {
    "TITLE": "ASI-Bench Portal API",
    "DESCRIPTION": "The /api/v1 surface used by the asibench CLI.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": "/api/v1",
}

# The Hub endpoint (/hf): entries per page of a tree listing (the Hub itself pages by 1000).
HUB_TREE_PAGE_SIZE = env_int("ASIBENCH_HUB_TREE_PAGE_SIZE", 1000, minimum=1)

# Device-code login (RFC 8628).
DEVICE_CODE_TTL_SECONDS = env_int("ASIBENCH_DEVICE_CODE_TTL", 600, minimum=30)
DEVICE_CODE_POLL_INTERVAL = env_int("ASIBENCH_DEVICE_POLL_INTERVAL", 5, minimum=1)
# Tokens minted by a device login expire after this many days (settings-page tokens choose).
DEVICE_LOGIN_TOKEN_DAYS = env_int("ASIBENCH_DEVICE_TOKEN_DAYS", 30, minimum=1)

# HTTPS. Production (DEBUG=0) defaults to secure cookies, HSTS and redirecting plain HTTP, so
# `manage.py check --deploy` passes; behind a TLS-terminating proxy set BEHIND_TLS_PROXY=1 so that
# Django trusts its X-Forwarded-Proto. /healthz stays reachable over plain HTTP for probes.
BEHIND_TLS_PROXY = env_bool("BEHIND_TLS_PROXY", False)
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if BEHIND_TLS_PROXY else None
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SECURE_REDIRECT_EXEMPT = [r"^healthz$"]
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 365 * 24 * 3600)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", not DEBUG)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = env_str("SECURE_REFERRER_POLICY", "same-origin")
X_FRAME_OPTIONS = "DENY"
if DEBUG:
    _public_names = [host for host in ALLOWED_HOSTS if not is_loopback_host(host)]
    if PUBLIC_BASE_URL:
        from urllib.parse import urlsplit

        if not is_loopback_host(urlsplit(PUBLIC_BASE_URL).hostname or ""):
            _public_names.append(f"ASIBENCH_PUBLIC_URL={PUBLIC_BASE_URL}")
    if _public_names or BEHIND_TLS_PROXY:
        served = ", ".join(_public_names) if _public_names else "BEHIND_TLS_PROXY=1"
        raise ImproperlyConfigured(
            f"DEBUG is on (DEBUG=1, or DEBUG unset) for a deployment ({served}): Django's debug page would show "
            "settings, source and request data to visitors. Set DEBUG=0 (with SECRET_KEY) to serve others; "
            "DEBUG is for development on this machine only (127.0.0.1, localhost).")
# No inline script or style anywhere (templates load /static files only); author images are not
# fetched from other sites, so a prompt cannot track who reads it.
CONTENT_SECURITY_POLICY = env_str(
    "CONTENT_SECURITY_POLICY",
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; font-src 'self'; "
    "connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
)

# Prometheus metrics (docs/operators.md, "Watching it"): gunicorn's master and each Celery worker serve
# them on ASIBENCH_METRICS_LISTEN (host:port), never through the public site (config/metrics.py). Their
# forked children count into PROMETHEUS_MULTIPROC_DIR, so the two go together. Unset: no metrics server.
METRICS_LISTEN = env_str("ASIBENCH_METRICS_LISTEN")
PROMETHEUS_MULTIPROC_DIR = env_str("PROMETHEUS_MULTIPROC_DIR")
if PROMETHEUS_MULTIPROC_DIR:  # every process with it set writes there, `manage.py migrate` included
    Path(PROMETHEUS_MULTIPROC_DIR).mkdir(parents=True, exist_ok=True)
if METRICS_LISTEN:
    try:
        listen_address(METRICS_LISTEN)
    except ValueError as exc:
        raise ImproperlyConfigured(str(exc)) from None
    if not PROMETHEUS_MULTIPROC_DIR:
        raise ImproperlyConfigured("ASIBENCH_METRICS_LISTEN needs PROMETHEUS_MULTIPROC_DIR: a directory (empty, "
                                   "writable by the Portal) where gunicorn's and Celery's children count")
    INSTALLED_APPS.append("django_prometheus")
    MIDDLEWARE = ["django_prometheus.middleware.PrometheusBeforeMiddleware", *MIDDLEWARE,
                  "django_prometheus.middleware.PrometheusAfterMiddleware"]
    # Queries, errors and connections per database, by django-prometheus's wrapper of the same backend.
    _engine = DATABASES["default"]["ENGINE"]
    if _engine in ("django.db.backends.postgresql", "django.db.backends.sqlite3"):
        DATABASES["default"]["ENGINE"] = _engine.replace("django.db.backends.", "django_prometheus.db.backends.")

# Error reports to Sentry: on when SENTRY_DSN is set, off by default; no personal data is sent
# (config/error_reporting.py says what is left out).
SENTRY_DSN = env_str("SENTRY_DSN")
SENTRY_ENVIRONMENT = env_str("SENTRY_ENVIRONMENT")
if SENTRY_DSN:
    error_reporting_start(dsn=SENTRY_DSN, environment=SENTRY_ENVIRONMENT)

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

# Scoring sandbox: bwrap (default), docker (production), none (development only, named explicitly).
SCORING_SANDBOX = env_str("ASIBENCH_SANDBOX", "bwrap")
if SCORING_SANDBOX not in {"bwrap", "docker", "none"}:
    raise ImproperlyConfigured(f"ASIBENCH_SANDBOX must be bwrap, docker or none, got {SCORING_SANDBOX!r}")
SCORING_SANDBOX_IMAGE = env_str("ASIBENCH_SANDBOX_IMAGE", "asibench-scoring:1.0.0")

# Which `provenance.sandbox.effective_mode` values each dataset accepts in a submission.
# ASIBENCH_SANDBOX_POLICY=official is the official service's rule: seed42 takes only `os`
# (Docker, with a docker_container verification and an image identity), as made by
# `asibench run --sandbox os`. The embedded default `local` also accepts `linux_ns` so that
# a local `make run` can take runs made with bubblewrap. The per-dataset variables override.
SANDBOX_POLICY = env_str("ASIBENCH_SANDBOX_POLICY", "local")
if SANDBOX_POLICY not in POLICIES:
    raise ImproperlyConfigured(f"ASIBENCH_SANDBOX_POLICY must be official or local, got {SANDBOX_POLICY!r}")
DATASET_SANDBOX_MODES = {
    dataset: env_list(f"ASIBENCH_{dataset.upper()}_SANDBOX_MODES", ",".join(default_modes(SANDBOX_POLICY, dataset)))
    for dataset in ("seed42", "seed31415")
}

# Bundle intake caps (client contract §3.9); a refusal names the cap it hit.
BUNDLE_MAX_COMPRESSED_BYTES = env_int("ASIBENCH_BUNDLE_MAX_BYTES", 512 * 1024 * 1024, minimum=1)
BUNDLE_MAX_UNCOMPRESSED_BYTES = env_int("ASIBENCH_BUNDLE_MAX_UNCOMPRESSED_BYTES", 4096 * 1024 * 1024, minimum=1)
BUNDLE_MAX_MEMBERS = env_int("ASIBENCH_BUNDLE_MAX_MEMBERS", 20000, minimum=1)
BUNDLE_MAX_RATIO = float(env_int("ASIBENCH_BUNDLE_MAX_RATIO", 100, minimum=2))
DRAFT_TTL_HOURS = env_int("ASIBENCH_DRAFT_TTL_HOURS", 168, minimum=1)
# Unconfirmed, unexpired drafts hold storage until their TTL: at most this many per user, and bytes.
DRAFTS_PER_USER = env_int("ASIBENCH_DRAFTS_PER_USER", 5, minimum=1)
DRAFT_BYTES_PER_USER = env_int("ASIBENCH_DRAFT_BYTES_PER_USER", 1024 * 1024 * 1024, minimum=1)
# Reviewers' evidence and conformance flags (portal.submissions.evidence, .conformance).
EVIDENCE_LOG_TAIL_CHARS = env_int("ASIBENCH_EVIDENCE_LOG_TAIL_CHARS", 16_000, minimum=1_000)
# Each dataset's run policy, which intake's flags for reviewers compare a run with (portal.submissions.
# conformance): the sandbox the official rule prescribes, even where this Portal accepts more, and the
# client versions expected (ASIBENCH_CLIENT_VERSIONS for both, or per dataset).
_CLIENT_VERSIONS = env_str("ASIBENCH_CLIENT_VERSIONS", "0.2.0")
# External tools (web search and the like, `allow_external_tools` in a result's provenance): the benchmark's runs
# are made without them; a run that enabled them where its dataset's policy forbids them is flagged for reviewers.
DATASET_RUN_POLICY = {
    "seed42": {"sandbox_modes": list(default_modes("official", "seed42")),
               "client_versions": env_list("ASIBENCH_SEED42_CLIENT_VERSIONS", _CLIENT_VERSIONS),
               "external_tools": env_bool("ASIBENCH_SEED42_EXTERNAL_TOOLS", False)},
    "seed31415": {"sandbox_modes": list(default_modes("official", "seed31415")),
                  "client_versions": env_list("ASIBENCH_SEED31415_CLIENT_VERSIONS", _CLIENT_VERSIONS),
                  "external_tools": env_bool("ASIBENCH_SEED31415_EXTERNAL_TOOLS", False)},
}
# Misconduct scanners (portal.submissions.scanning): queued for every new draft; each result's whole
# result.json and the start and end of its outputs are read, within these budgets (past them a result is
# scanned up to the limit and its record says where it was cut).
SCANNER_ENABLED = env_bool("ASIBENCH_SCANNER_ENABLED", True)
SCANNER_MAX_BYTES_PER_RESULT = env_int("ASIBENCH_SCANNER_MAX_BYTES_PER_RESULT", 8 * 1024 * 1024, minimum=1024)
SCANNER_MAX_BYTES_PER_RUN = env_int("ASIBENCH_SCANNER_MAX_BYTES_PER_RUN", 64 * 1024 * 1024, minimum=1024)
PROBING_MIN_ATTEMPTS = env_int("ASIBENCH_PROBING_MIN_ATTEMPTS", 3, minimum=2)
PROBING_MAX_CHANGED_PERCENT = env_int("ASIBENCH_PROBING_MAX_CHANGED_PERCENT", 10)
# A board row's "scored attempts": the scorings its owner confirmed on its dataset in this many days up to the
# row's own (the attempt ledger, portal.submissions.models.ScoredAttempt).
ATTEMPT_WINDOW_DAYS = env_int("ASIBENCH_ATTEMPT_WINDOW_DAYS", 30, minimum=1)
# Spot validation (leaderboard.spot_validation): how many results a maintainer draws by default, and how many
# points a re-run's score may differ from the original's (identical outputs must agree exactly).
SPOT_VALIDATION_SAMPLE = env_int("ASIBENCH_SPOT_VALIDATION_SAMPLE", 4, minimum=1)
SPOT_VALIDATION_TOLERANCE = env_float("ASIBENCH_SPOT_VALIDATION_TOLERANCE", 1.0)
# A run whose self-reported cost (or output tokens) differs from its recorded calls' by more than this share is
# flagged for reviewers (portal.submissions.conformance).
USAGE_MISMATCH_PERCENT = env_int("ASIBENCH_USAGE_MISMATCH_PERCENT", 20, minimum=1)
# Repeated runs: the entry page shows per-task agreement once an owner has published this many runs of one
# configuration on a dataset (leaderboard.consistency).
CONSISTENCY_MIN_RUNS = env_int("ASIBENCH_CONSISTENCY_MIN_RUNS", 3, minimum=2)
# The per-day quotas below (confirms per user and site-wide, proposal validations) count over any
# QUOTA_WINDOW_HOURS, a rolling window rather than a calendar day.
QUOTA_WINDOW_HOURS = 24
# The confidence of the board's bootstrap intervals (leaderboard.stats), which the guides quote too.
BOARD_INTERVAL_CONFIDENCE = 0.95
# Scoring is an oracle on private references: per-user confirms in any 24 hours, and results
# (instance x level x attempt) scored from one bundle. A full seed42 run is tasks x 4 levels.
CONFIRMS_PER_DAY_LIMIT = env_int("ASIBENCH_CONFIRMS_PER_DAY", 5, minimum=1)
# ... and confirms of all users together in any 24 hours, since accounts cost nothing to make.
# Maintainers' own confirms neither count nor are refused: they can read the references anyway.
CONFIRMS_PER_DAY_SITE = env_int("ASIBENCH_CONFIRMS_PER_DAY_SITE", 100, minimum=1)
RESULTS_PER_BUNDLE_LIMIT = env_int("ASIBENCH_RESULTS_PER_BUNDLE", 400, minimum=1)
FILE_UPLOAD_TEMP_DIR = str(VAR_DIR / "tmp")
Path(FILE_UPLOAD_TEMP_DIR).mkdir(parents=True, exist_ok=True)
DATA_UPLOAD_MAX_NUMBER_FILES = 1000
# Browser uploads stream to temp files under FILE_UPLOAD_TEMP_DIR, never into memory, and stop at a
# cap (portal/uploads.py): the view's own cap, else this one. Plain form fields stay under
# DATA_UPLOAD_MAX_MEMORY_SIZE.
FILE_UPLOAD_HANDLERS = ["portal.uploads.CappedUploadHandler"]
FILE_UPLOAD_MAX_MEMORY_SIZE = 0
BROWSER_UPLOAD_MAX_BYTES = env_int("ASIBENCH_BROWSER_UPLOAD_MAX_BYTES", BUNDLE_MAX_COMPRESSED_BYTES, minimum=1)
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("ASIBENCH_FORM_MAX_BYTES", 2_621_440, minimum=1024)
# Stored files (bundles, references, proposal blobs) are readable by the Portal's user only.
FILE_UPLOAD_PERMISSIONS = 0o600
FILE_UPLOAD_DIRECTORY_PERMISSIONS = 0o700

# Temp bundles, upload temp files and sandbox scratch dirs untouched this long are swept (hourly).
LEFTOVER_MAX_AGE_HOURS = env_int("ASIBENCH_LEFTOVER_MAX_AGE_HOURS", 24, minimum=1)

# Runs never stick: every SCORING_REAPER_INTERVAL seconds, runs scoring for longer than
# SCORING_STUCK_SECONDS are re-queued (SCORING_STUCK_REQUEUES times), then failed with the reason.
SCORING_STUCK_SECONDS = env_int("ASIBENCH_SCORING_STUCK_AFTER", 4 * 3600, minimum=1)
SCORING_STUCK_REQUEUES = env_int("ASIBENCH_SCORING_STUCK_REQUEUES", 1)
# A queued run that no worker has started this long after its message was sent, while the
# workers are idle or have started runs sent after it, lost its message (or its task died before
# it started): the reaper sends it again. Re-sending is safe: a run's start is claimed once.
SCORING_QUEUED_RESEND_SECONDS = env_int("ASIBENCH_SCORING_QUEUED_RESEND_AFTER", 180, minimum=1)
SCORING_REAPER_INTERVAL = env_int("ASIBENCH_SCORING_REAPER_INTERVAL", 60, minimum=1)

# The public /status page: each worker records a heartbeat every WORKER_HEARTBEAT_SECONDS and
# counts as seen for WORKER_SEEN_MINUTES; the page's figures are recomputed at most every
# STATUS_CACHE_SECONDS however often it is requested.
WORKER_HEARTBEAT_SECONDS = env_int("ASIBENCH_WORKER_HEARTBEAT_SECONDS", 30, minimum=1)
WORKER_SEEN_MINUTES = env_int("ASIBENCH_WORKER_SEEN_MINUTES", 5, minimum=1)
STATUS_CACHE_SECONDS = env_int("ASIBENCH_STATUS_CACHE_SECONDS", 15, minimum=1)

# Task health (scoring.health): every published task is re-checked this often (weekly by default) by the
# beat job; a check runs the task's reference and naive solutions, each within this time per instance.
TASK_HEALTH_INTERVAL_HOURS = env_int("ASIBENCH_TASK_HEALTH_INTERVAL_HOURS", 168, minimum=1)
TASK_HEALTH_SOLUTION_TIMEOUT_SECONDS = env_int("ASIBENCH_TASK_HEALTH_SOLUTION_TIMEOUT", 1800, minimum=5)
# What follows a failing check: dotted paths of functions taking the check's id (the errata it opens).
TASK_HEALTH_FAILURE_HOOKS = ["leaderboard.errata.erratum_open_for_check"]
# What follows the publication of a task's new revision: functions taking the task's id (its errata are
# resolved and the board's runs of it re-graded against the new revision).
TASK_REVISION_PUBLISHED_HOOKS = ["leaderboard.regrade.task_revision_published"]
# A re-grade scores this many runs' results of one instance in one sandbox (one Celery message each).
REGRADE_BATCH_RUNS = env_int("ASIBENCH_REGRADE_BATCH_RUNS", 50, minimum=1)

CELERY_BEAT_SCHEDULE = {
    "expire-unconfirmed-drafts": {"task": "portal.submissions.tasks.expire_drafts", "schedule": 3600.0},
    "sweep-leftover-temp-files": {"task": "portal.tasks.sweep_leftovers", "schedule": 3600.0},
    "reap-stuck-scoring": {"task": "portal.submissions.tasks.reap_stuck_runs",
                           "schedule": float(SCORING_REAPER_INTERVAL)},
    "resend-waiting-judges": {"task": "portal.submissions.tasks.resend_waiting_judges",
                              "schedule": float(SCORING_REAPER_INTERVAL)},
    "check-published-tasks": {"task": "scoring.task_health_checks_schedule",
                              "schedule": float(TASK_HEALTH_INTERVAL_HOURS * 3600)},
}

# What runs once a scoring run completes, in this order (portal.submissions.scoring_runs): each takes
# the scoring run's id; a failing one is logged and never undoes the scoring.
SCORING_RUN_COMPLETION_HOOKS = [
    "leaderboard.integrity_flags.integrity_flags_compute_for_run",
    "leaderboard.owner_mail.owner_notify_scored",
    "leaderboard.spot_validation.spot_validation_compare_for_run",
    "leaderboard.regrade.regrade_scoring_completed",
]
# The optional model-based scanner (portal.submissions.scan_model): off unless a model is named AND the judge
# endpoint (ASIBENCH_JUDGE_API_*, or a provider key) is configured; its calls are budgeted in tokens per run
# and per day, and each reply is recorded and replayed for an identical request.
SCANNER_MODEL = env_str("ASIBENCH_SCANNER_MODEL") or ""
SCANNER_MODEL_MAX_TOKENS = env_int("ASIBENCH_SCANNER_MODEL_MAX_TOKENS", 800, minimum=64)
SCANNER_MODEL_RUN_TOKENS = env_int("ASIBENCH_SCANNER_MODEL_RUN_TOKENS", 300_000, minimum=1)
SCANNER_MODEL_DAILY_TOKENS = env_int("ASIBENCH_SCANNER_MODEL_DAILY_TOKENS", 3_000_000, minimum=1)
# What runs once a run's misconduct scan is stored (portal.submissions.scanning), each taking the run's id.
SCAN_COMPLETION_HOOKS = ["leaderboard.services.scan_published_refresh"]
SCORING_TIMEOUT_SECONDS = env_int("ASIBENCH_SCORING_TIMEOUT", 300, minimum=5)
SCORING_MEMORY_BYTES = env_int("ASIBENCH_SCORING_MEMORY_MB", 4096, minimum=64) * 1024 * 1024
# Disk a scorer may write beside the staged outputs it is given (its sandbox's scratch dir).
SCORING_SCRATCH_BYTES = env_int("ASIBENCH_SCORING_SCRATCH_MB", 512, minimum=1) * 1024 * 1024
# Limits for task code from the catalog and from proposals (generators, the pre-submit validator).
# These are the server's caps; a task's own timeout_seconds never raises them. Memory and the
# process count hold for the whole sandboxed run, not per process; the scratch dir is capped too.
GENERATION_TIMEOUT_SECONDS = env_int("ASIBENCH_GENERATION_TIMEOUT", 300, minimum=1)
# The same cap for a maintainer's `catalog_load` (task directories the operator brought, not an
# author's proposal): some official generators take minutes per instance, and each runs twice.
CATALOG_GENERATION_TIMEOUT_SECONDS = env_int("ASIBENCH_CATALOG_GENERATION_TIMEOUT", 1800, minimum=1)
PROPOSAL_VALIDATION_TIMEOUT_SECONDS = env_int("ASIBENCH_PROPOSAL_VALIDATION_TIMEOUT", 900, minimum=5)
SANDBOX_MEMORY_BYTES = env_int("ASIBENCH_SANDBOX_MEMORY_MB", 4096, minimum=64) * 1024 * 1024
SANDBOX_MAX_PROCESSES = env_int("ASIBENCH_SANDBOX_MAX_PROCESSES", 64, minimum=4)
SANDBOX_SCRATCH_BYTES = env_int("ASIBENCH_SANDBOX_SCRATCH_MB", 2048, minimum=16) * 1024 * 1024
# Pre-submit validations each author may start per day (each runs their code for minutes).
PROPOSAL_VALIDATIONS_PER_DAY = env_int("ASIBENCH_PROPOSAL_VALIDATIONS_PER_DAY", 20, minimum=1)
# Storage, sandbox or database trouble is retried with exponential backoff, then the run fails.
SCORING_INFRA_RETRIES = env_int("ASIBENCH_SCORING_RETRIES", 5)
SCORING_RETRY_BACKOFF_SECONDS = env_int("ASIBENCH_SCORING_RETRY_BACKOFF", 5, minimum=1)
# Model judges (llm_judge, multimodal vlm_judge, agent_judge) are asked by the worker, outside the
# scoring sandbox (scoring.judge_services). The endpoint is the official client's setting:
# ASIBENCH_JUDGE_API_BASE + ASIBENCH_JUDGE_API_PROTOCOL (native|openai) + ASIBENCH_JUDGE_API_KEY_ENV,
# the *name* of the variable holding the key (read when a call is made, never kept in settings);
# unset, each provider's public endpoint with its usual key (OPENAI_API_KEY, ANTHROPIC_API_KEY,
# GEMINI_API_KEY/GOOGLE_API_KEY, OPENROUTER_API_KEY). Checked here so a bad value stops the start.
def _judge_endpoint_checked() -> tuple[str, str, str]:
    try:
        endpoint = JudgeEndpoint.from_environment(os.environ)
    except JudgeConfigurationError as exc:
        raise ImproperlyConfigured(f"judge endpoint: {exc}") from None
    return endpoint.api_base or "", endpoint.api_key_env or "", endpoint.api_protocol or ""


JUDGE_API_BASE, JUDGE_API_KEY_ENV, JUDGE_API_PROTOCOL = _judge_endpoint_checked()
# Calls in flight across every worker; the timeout of one attempt (three per round); a result whose
# judges stay unreachable is retried JUDGE_MAX_ROUNDS times, JUDGE_RETRY_SECONDS apart and doubling
# (the run page says "waiting for evaluator" meanwhile), then fails with the reason.
JUDGE_MAX_IN_FLIGHT = env_int("ASIBENCH_JUDGE_MAX_IN_FLIGHT", 8, minimum=1)
JUDGE_TIMEOUT_SECONDS = env_int("ASIBENCH_JUDGE_TIMEOUT", 120, minimum=1)
JUDGE_RETRY_SECONDS = env_int("ASIBENCH_JUDGE_RETRY_SECONDS", 60, minimum=1)
JUDGE_MAX_ROUNDS = env_int("ASIBENCH_JUDGE_MAX_ROUNDS", 5, minimum=1)
# Token budgets (prompt + completion): a scoring run's, each account's share per UTC day (its runs
# together, rescores included), and all runs' together per UTC day. Past the run's, its remaining judge
# calls fail with that reason; past a day's, calls wait (their rounds untouched) until it allows.
JUDGE_RUN_TOKEN_BUDGET = env_int("ASIBENCH_JUDGE_RUN_TOKENS", 2_000_000, minimum=1)
JUDGE_USER_DAILY_TOKEN_BUDGET = env_int("ASIBENCH_JUDGE_USER_DAILY_TOKENS", 5_000_000, minimum=1)
JUDGE_DAILY_TOKEN_BUDGET = env_int("ASIBENCH_JUDGE_DAILY_TOKENS", 20_000_000, minimum=1)
# What one agent-judge run is counted as against the budgets (the CLIs report no token counts).
JUDGE_AGENT_TOKEN_ESTIMATE = env_int("ASIBENCH_JUDGE_AGENT_TOKENS", 50_000, minimum=1)
# USD per million tokens by model, for the recorded cost: {"openai/gpt-5.5": [input, output], ...}.
try:
    JUDGE_PRICES = json.loads(env_str("ASIBENCH_JUDGE_PRICES") or "{}")
except ValueError as exc:
    raise ImproperlyConfigured(f"ASIBENCH_JUDGE_PRICES must be a JSON object: {exc}") from None
if not isinstance(JUDGE_PRICES, dict):
    raise ImproperlyConfigured("ASIBENCH_JUDGE_PRICES must be a JSON object of model: [input, output]")
# agent_judge drives the codex / claude CLI (found on ASIBENCH_AGENT_JUDGE_PATH) in a bubblewrap sandbox
# whose only way out is a proxy to its own endpoint, with only its own key (docs/judges.md). The settings
# (each CLI's endpoint and key variable, ASIBENCH_AGENT_JUDGE_MAX_TIMEOUT: the most seconds a judge may run,
# whatever its task says) are read by scoring/judging/settings.py, as local scoring reads them.
try:
    AGENT_JUDGE = agent_judge_settings(os.environ, default_search_path=AGENT_JUDGE_SERVER_PATH)
except JudgeConfigurationError as exc:
    raise ImproperlyConfigured(str(exc)) from None
AGENT_JUDGE_MAX_TIMEOUT_SECONDS = AGENT_JUDGE.max_timeout
# The review page of a proposal (proposals.diffs, proposals.rendering). Revision diffs are computed once
# per revision pair and kept; a changed file larger than PROPOSAL_DIFF_MAX_FILE_BYTES is not diffed (the
# page offers both versions to download), a diff longer than PROPOSAL_DIFF_MAX_SHOWN_BYTES is not shown,
# and only diffs whose changed files total at most PROPOSAL_DIFF_INLINE_BYTES are computed while the
# page is asked for (the rest by a worker). At most PROPOSAL_PAGE_SHOWN_BYTES of the revision's files
# are rendered on the page; the others are listed with a download link.
PROPOSAL_DIFF_MAX_FILE_BYTES = env_int("ASIBENCH_PROPOSAL_DIFF_MAX_FILE_BYTES", 1024 * 1024, minimum=1)
PROPOSAL_DIFF_MAX_SHOWN_BYTES = env_int("ASIBENCH_PROPOSAL_DIFF_MAX_SHOWN_BYTES", 512 * 1024, minimum=1)
PROPOSAL_DIFF_INLINE_BYTES = env_int("ASIBENCH_PROPOSAL_DIFF_INLINE_BYTES", 64 * 1024)
PROPOSAL_PAGE_SHOWN_BYTES = env_int("ASIBENCH_PROPOSAL_PAGE_SHOWN_BYTES", 128 * 1024)
# Task proposal file sync (client contract §4.3, §9.5): 100 MiB of files plus multipart overhead.
PROPOSAL_MAX_BODY_BYTES = env_int("ASIBENCH_PROPOSAL_MAX_BODY_BYTES", 110 * 1024 * 1024, minimum=1)
