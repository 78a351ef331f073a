"""Arbor settings: one file, configured by ARBOR_* / DJANGO_* environment variables.

The defaults suit a developer running `./arbor run` on 127.0.0.1. The production profile is
DJANGO_DEBUG=0 plus DJANGO_SECRET_KEY, DJANGO_ALLOWED_HOSTS and (behind HTTPS) the DJANGO_SECURE_* values;
`./arbor manage check --deploy` should then be clean. Malformed values raise ImproperlyConfigured at start-up.
"""

from __future__ import annotations

from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from sessions_site import env
from treeview.session.locations import agent_session_dirs

BASE_DIR = Path(__file__).resolve().parent.parent

# Arbor is a local tool first, so DEBUG defaults on; deployments must switch it off explicitly.
DEBUG = env.get_bool("DJANGO_DEBUG", True)

SECRET_KEY = env.get_str("DJANGO_SECRET_KEY", "")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is off")
    SECRET_KEY = "django-insecure-arbor-development-key-never-use-in-production"

ALLOWED_HOSTS = env.get_list("DJANGO_ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"])
CSRF_TRUSTED_ORIGINS = env.get_list("DJANGO_CSRF_TRUSTED_ORIGINS", [])
for _origin in CSRF_TRUSTED_ORIGINS:
    if not _origin.startswith(("http://", "https://")):
        raise ImproperlyConfigured(f"DJANGO_CSRF_TRUSTED_ORIGINS item {_origin!r} needs a scheme")

# Behind HTTPS (the default once DEBUG is off): secure cookies and a redirect from plain HTTP.
ARBOR_HTTPS = env.get_bool("ARBOR_HTTPS", not DEBUG)
SESSION_COOKIE_SECURE = ARBOR_HTTPS
CSRF_COOKIE_SECURE = ARBOR_HTTPS
SECURE_SSL_REDIRECT = env.get_bool("DJANGO_SECURE_SSL_REDIRECT", ARBOR_HTTPS)
SECURE_HSTS_SECONDS = env.get_int("DJANGO_SECURE_HSTS_SECONDS", 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.get_bool("DJANGO_SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = env.get_bool("DJANGO_SECURE_HSTS_PRELOAD", False)
X_FRAME_OPTIONS = "DENY"

INSTALLED_APPS = [
    "daphne",  # first, so its runserver (ASGI) replaces Django's
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "channels",
    "django_htmx",
    "template_partials",
    "csp",
    "treeview",
    "treeview.ingest",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    # Before anything that takes a database connection: a burst of refetches waits here (treeview/gate.py).
    "treeview.gate.RefreshGate",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Single-user mode acts as the user "local"; otherwise views not marked login_not_required need login.
    "treeview.access.AccessMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",  # the admin's notices
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last: it sees a view's Http404 first, for our 404 page rather than the debug page (treeview/errors.py).
    "treeview.errors.NotFoundMiddleware",
]

ROOT_URLCONF = "sessions_site.urls"
ASGI_APPLICATION = "sessions_site.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,  # template_partials swaps this for its own (cached) loaders
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "treeview.access.context",
            ],
        },
    },
]

# Accounts. Single-user mode (the default with DEBUG on, as `./arbor run` serves on 127.0.0.1): no login is
# asked, every request acts as the superuser "local" (created on first use). Off (the default once DEBUG is
# off): every page but the login and invite pages needs a signed-in user.
ARBOR_SINGLE_USER = env.get_bool("ARBOR_SINGLE_USER", DEBUG)
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "treeview:session_list"
LOGOUT_REDIRECT_URL = "login"
# Days an invite link stays valid.
ARBOR_INVITE_DAYS = env.get_int("ARBOR_INVITE_DAYS", 7, minimum=1)

# What everyone who may see a session may also do besides reading it (treeview/access.py): a comma-separated
# subset of comment, review, navigate, label, fork, share_public, or "none". The owner, superusers and the
# people the owner grants "can write" may do all of them; navigate, label, fork and share_public write to the
# agent's file or directory, or publish the session, so they are not given to every viewer by default.
_VIEWER_RIGHTS_CHOICES = ("comment", "review", "navigate", "label", "fork", "share_public")
ARBOR_VIEWER_RIGHTS = [
    right.lower()
    for right in env.get_list("ARBOR_VIEWER_RIGHTS", ["comment", "review"])
    if right.lower() != "view"
]
if ARBOR_VIEWER_RIGHTS == ["none"]:
    ARBOR_VIEWER_RIGHTS = []
if set(ARBOR_VIEWER_RIGHTS) - set(_VIEWER_RIGHTS_CHOICES):
    raise ImproperlyConfigured(
        f"ARBOR_VIEWER_RIGHTS: unknown {sorted(set(ARBOR_VIEWER_RIGHTS) - set(_VIEWER_RIGHTS_CHOICES))}; "
        f"choose from {', '.join(_VIEWER_RIGHTS_CHOICES)} or none"
    )

# Arbor's own files (the SQLite database unless DATABASE_URL says otherwise, uploaded sessions).
ARBOR_DATA_DIR = env.get_paths("ARBOR_DATA_DIR", [BASE_DIR / "var"], base_dir=BASE_DIR)[0]
ARBOR_DATA_DIR.mkdir(parents=True, exist_ok=True)
DATABASES = {"default": env.database_config(base_dir=ARBOR_DATA_DIR)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CHANNEL_LAYERS = env.channel_layers_config()
CACHES = env.caches_config()

# Memory for the session pages' trees per server process, in MB: parsed forests, flattened trees (one per
# session state and leaf) and rendered entries, dropped least recently used first. A session bigger than this
# still opens (it is kept alone while it is the latest one asked for).
ARBOR_TREE_CACHE_MB = env.get_int("ARBOR_TREE_CACHE_MB", 1024, minimum=16)
# Big sessions a server process reads into those caches when it starts (in a thread, from their snapshots,
# the most recently opened first), so that the first page after a restart finds them ready; 0: none.
ARBOR_PREWARM_SESSIONS = env.get_int("ARBOR_PREWARM_SESSIONS", 1, minimum=0)
# Seconds the server waits, before it listens, for those sessions' first pages to be ready (the first
# request then finds them made; the search preparation goes on after). 0 (the default): listen at once, the
# prewarm going on beside daphne's own start, which makes the first page come sooner from the start
# (bench/restart_bench.py: 1.7 s from start to page instead of 2.6 s; the page itself 0.6 s instead of 0.1 s).
ARBOR_PREWARM_WAIT = env.get_float("ARBOR_PREWARM_WAIT", 0.0, minimum=0.0)

# The tree rows endpoint's requests one server process serves at once (treeview/gate.py): one change
# makes every open page of the session refetch its rows; the burst waits its turn instead of slowing everyone.
ARBOR_ROWS_CONCURRENCY = env.get_int("ARBOR_ROWS_CONCURRENCY", 2, minimum=1)

# Memory a server process gives back (treeview/memory.py, glibc only): the allocator's arenas its request
# threads share (0: glibc's default, eight per CPU, which keeps memory freed after a burst for good), and
# seconds without a request after which freed memory is returned to the system (0: never).
ARBOR_MALLOC_ARENAS = env.get_int("ARBOR_MALLOC_ARENAS", 2, minimum=0)
ARBOR_IDLE_TRIM_SECONDS = env.get_int("ARBOR_IDLE_TRIM_SECONDS", 2, minimum=0)

# Interactive queries (the search across sessions): milliseconds a statement may run before the database stops
# it and the page says so (treeview/interactive.py); 0: no limit.
ARBOR_QUERY_TIMEOUT_MS = env.get_int("ARBOR_QUERY_TIMEOUT_MS", 5000, minimum=0)

# Sign-in throttling (treeview/throttle.py): after this many failed sign-ins for one username (four times as
# many from one address) within the window, further attempts are refused unchecked until the window ends.
ARBOR_LOGIN_FAILURES = env.get_int("ARBOR_LOGIN_FAILURES", 5, minimum=1)
ARBOR_LOGIN_WINDOW_SECONDS = env.get_int("ARBOR_LOGIN_WINDOW_SECONDS", 15 * 60, minimum=1)

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = env.get_paths("ARBOR_STATIC_ROOT", [BASE_DIR / "staticfiles"], base_dir=BASE_DIR)[0]
# Plain daphne serves no static files. ARBOR_SERVE_STATIC=1 (the default): the app serves them, with Django's
# handler while DEBUG is on (asgi.py), with WhiteNoise otherwise (compressed, hashed names cached for a year,
# from STATIC_ROOT after `collectstatic`, which `./arbor serve` runs). 0: a front server serves STATIC_ROOT.
ARBOR_SERVE_STATIC = env.get_bool("ARBOR_SERVE_STATIC", True)
if not DEBUG:
    STORAGES = {
        "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
        "staticfiles": {"BACKEND": "sessions_site.static_storage.StaticStorage"},
    }
    if ARBOR_SERVE_STATIC:
        MIDDLEWARE.insert(1, "whitenoise.middleware.WhiteNoiseMiddleware")
        # Without `collectstatic` (a quick try of the production profile) the files are found where they are.
        WHITENOISE_USE_FINDERS = True

# Where import_sessions and watch_sessions look for *.jsonl files by default (searched recursively);
# ARBOR_SAMPLE=1 (./arbor run --sample) points them at the sample sessions: the showcase in samples/
# (python -m treeview.session showcase) and the real sessions of tests/data/real, never the test fixtures.
ARBOR_SAMPLE = env.get_bool("ARBOR_SAMPLE", False)
SAMPLE_SESSION_DIRS = [BASE_DIR / "samples", BASE_DIR / "tests" / "data" / "real"]
# Otherwise the agents' own directories (treeview/session/locations.py, shared with the push client).
_default_session_dirs = SAMPLE_SESSION_DIRS if ARBOR_SAMPLE else agent_session_dirs()
ARBOR_SESSION_DIRS = env.get_paths("ARBOR_SESSION_DIRS", _default_session_dirs, base_dir=BASE_DIR)

# Uploads: largest accepted session file, in MB (the request body limit follows it).
ARBOR_UPLOAD_MAX_MB = env.get_int("ARBOR_UPLOAD_MAX_MB", 512, minimum=1)
DATA_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024
ARBOR_UPLOAD_DIR = ARBOR_DATA_DIR / "uploads"

# The ingest API (`./arbor push`): the largest request body and pushed session, in MB, and requests a minute
# per token (as many may come at once).
ARBOR_INGEST_MAX_REQUEST_MB = env.get_int("ARBOR_INGEST_MAX_REQUEST_MB", 32, minimum=1)
ARBOR_INGEST_MAX_SESSION_MB = env.get_int("ARBOR_INGEST_MAX_SESSION_MB", 1024, minimum=1)
ARBOR_INGEST_RATE = env.get_int("ARBOR_INGEST_RATE", 600, minimum=1)

# Opt-in: entries Arbor appends are also appended to the agent's own file (only while it is unchanged).
ARBOR_WRITE_BACK = env.get_bool("ARBOR_WRITE_BACK", False)

# Branch summaries (§13.4): "digest" (built in, offline, the default), "openai" (any OpenAI-compatible Chat
# Completions server: OpenAI, vLLM, Ollama, llama.cpp, LM Studio), "anthropic" (the Messages API), or "none".
ARBOR_LLM_PROVIDER = env.get_str("ARBOR_LLM_PROVIDER", "digest").strip().lower()
ARBOR_LLM_BASE_URL = env.get_str("ARBOR_LLM_BASE_URL", "")
ARBOR_LLM_MODEL = env.get_str("ARBOR_LLM_MODEL", "")
ARBOR_LLM_API_KEY = env.get_str("ARBOR_LLM_API_KEY", "")
# The model's context window: the summarized conversation gets this minus the reserve (§13.4).
ARBOR_LLM_CONTEXT_WINDOW = env.get_int("ARBOR_LLM_CONTEXT_WINDOW", 128000, minimum=1024)
# Seconds to wait for the model to connect and between two streamed chunks.
ARBOR_LLM_TIMEOUT = env.get_int("ARBOR_LLM_TIMEOUT", 60, minimum=1)

# Extensions (§16): dotted paths of modules (or callables) whose register(runner) adds hook handlers.
ARBOR_EXTENSIONS = env.get_list("ARBOR_EXTENSIONS", [])
# Seconds one extension handler may take before it is stopped and logged.
ARBOR_EXTENSION_TIMEOUT = env.get_int("ARBOR_EXTENSION_TIMEOUT", 30, minimum=1)
# What a double Escape on the session page opens: "tree" (the navigator), "branch" (the picker) or "none".
ARBOR_DOUBLE_ESCAPE_ACTION = env.get_str("ARBOR_DOUBLE_ESCAPE_ACTION", "tree").strip().lower()
if ARBOR_DOUBLE_ESCAPE_ACTION not in ("tree", "branch", "none"):
    raise ImproperlyConfigured("ARBOR_DOUBLE_ESCAPE_ACTION must be tree, branch or none")

# Session content is hostile input: a strict Content-Security-Policy, no inline script or style, nothing from
# elsewhere. Inline images of a conversation come as data: URLs (validated PNG/JPEG/GIF/WebP only).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "font-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'none'"],
        "frame-ancestors": ["'none'"],
        "form-action": ["'self'"],
    }
}
