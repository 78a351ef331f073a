"""Environment parsing: sessions_site/env.py directly, and settings.py executed afresh under a given env."""

import os
import runpy
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

import sessions_site.settings
from sessions_site import env

SETTINGS_FILE = sessions_site.settings.__file__
BASE_DIR = Path(SETTINGS_FILE).resolve().parent.parent
PREFIXES = ("ARBOR_", "DJANGO_", "PG")


def load_settings(monkeypatch: pytest.MonkeyPatch, **environ: str) -> dict[str, Any]:
    """Run settings.py with only the given configuration variables set (the test run's own are removed)."""
    for name in list(os.environ):
        if name.startswith(PREFIXES) or name in ("DATABASE_URL", "XDG_DATA_HOME"):
            monkeypatch.delenv(name)
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    return runpy.run_path(SETTINGS_FILE)


def test_defaults_are_debug_sqlite_in_project_dir_and_in_memory_layer(monkeypatch):
    config = load_settings(monkeypatch)

    assert config["DEBUG"] is True
    assert config["ALLOWED_HOSTS"] == ["127.0.0.1", "localhost", "[::1]"]
    database = config["DATABASES"]["default"]
    assert database["ENGINE"] == "django.db.backends.sqlite3"
    assert database["NAME"] == BASE_DIR / "var" / "db.sqlite3"
    assert database["OPTIONS"]["transaction_mode"] == "IMMEDIATE"
    assert "journal_mode=WAL" in database["OPTIONS"]["init_command"]
    assert config["CHANNEL_LAYERS"]["default"]["BACKEND"] == "channels.layers.InMemoryChannelLayer"
    assert config["INSTALLED_APPS"][0] == "daphne"


def test_installed_apps_and_middleware_include_the_stack(monkeypatch):
    config = load_settings(monkeypatch)

    for app in ("channels", "django_htmx", "template_partials", "treeview"):
        assert app in config["INSTALLED_APPS"]
    assert "django_htmx.middleware.HtmxMiddleware" in config["MIDDLEWARE"]


@pytest.mark.parametrize("value", ["maybe", "2", "tru"])
def test_malformed_debug_flag_raises(monkeypatch, value):
    with pytest.raises(ImproperlyConfigured, match="DJANGO_DEBUG"):
        load_settings(monkeypatch, DJANGO_DEBUG=value)


@pytest.mark.parametrize(("value", "expected"), [("0", False), ("off", False), ("YES", True), ("", True)])
def test_debug_flag_accepts_common_spellings_and_empty_means_default(monkeypatch, value, expected):
    config = load_settings(monkeypatch, DJANGO_DEBUG=value, DJANGO_SECRET_KEY="k" * 50)

    assert config["DEBUG"] is expected


def test_production_without_secret_key_raises(monkeypatch):
    with pytest.raises(ImproperlyConfigured, match="DJANGO_SECRET_KEY"):
        load_settings(monkeypatch, DJANGO_DEBUG="0")


def test_production_profile_turns_on_https_settings(monkeypatch):
    config = load_settings(
        monkeypatch, DJANGO_DEBUG="0", DJANGO_SECRET_KEY="s" * 50, DJANGO_ALLOWED_HOSTS="arbor.example.com"
    )

    assert config["SECRET_KEY"] == "s" * 50
    assert config["ALLOWED_HOSTS"] == ["arbor.example.com"]
    assert config["SESSION_COOKIE_SECURE"] is True
    assert config["CSRF_COOKIE_SECURE"] is True
    assert config["SECURE_SSL_REDIRECT"] is True


def test_allowed_hosts_with_empty_item_raises(monkeypatch):
    with pytest.raises(ImproperlyConfigured, match="DJANGO_ALLOWED_HOSTS"):
        load_settings(monkeypatch, DJANGO_ALLOWED_HOSTS="a.example,,b.example")


def test_csrf_trusted_origin_without_scheme_raises(monkeypatch):
    with pytest.raises(ImproperlyConfigured, match="needs a scheme"):
        load_settings(monkeypatch, DJANGO_CSRF_TRUSTED_ORIGINS="arbor.example.com")


@pytest.mark.parametrize("value", ["ten", "-1", "1.5"])
def test_malformed_hsts_seconds_raises(monkeypatch, value):
    with pytest.raises(ImproperlyConfigured, match="DJANGO_SECURE_HSTS_SECONDS"):
        load_settings(monkeypatch, DJANGO_SECURE_HSTS_SECONDS=value)


def test_database_url_selects_postgresql(monkeypatch):
    config = load_settings(
        monkeypatch, DATABASE_URL="postgres://arbor:p%40ss@db.example:6543/arbor?sslmode=require"
    )

    assert config["DATABASES"]["default"] == {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "arbor",
        "USER": "arbor",
        "PASSWORD": "p@ss",
        "HOST": "db.example",
        "PORT": "6543",
        "OPTIONS": {
            "sslmode": "require",
            "pool": {"min_size": 0, "max_size": 10, "timeout": 30, "max_idle": 10},
        },
    }


def test_database_url_can_name_a_sqlite_file(monkeypatch):
    config = load_settings(monkeypatch, DATABASE_URL="sqlite:////var/lib/arbor/arbor.db")

    assert config["DATABASES"]["default"]["NAME"] == Path("/var/lib/arbor/arbor.db")


@pytest.mark.parametrize(
    "url",
    [
        "mysql://root@localhost/arbor",
        "postgres://localhost:port/arbor",
        "postgres://localhost:99999/arbor",
        "postgres://localhost",
        "postgres://localhost/a/b",
        "not a url",
    ],
)
def test_malformed_database_url_raises(monkeypatch, url):
    with pytest.raises(ImproperlyConfigured, match="DATABASE_URL"):
        load_settings(monkeypatch, DATABASE_URL=url)


def test_arbor_db_postgres_reads_pg_variables_with_local_defaults(monkeypatch):
    config = load_settings(monkeypatch, ARBOR_DB="postgres", PGDATABASE="test", PGPORT="5433")

    assert config["DATABASES"]["default"] == {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": "test",
        "USER": "postgres",
        "PASSWORD": "",
        "HOST": "127.0.0.1",
        "PORT": "5433",
        "OPTIONS": {"pool": {"min_size": 0, "max_size": 10, "timeout": 30, "max_idle": 10}},
    }


def test_arbor_db_postgres_with_malformed_port_raises(monkeypatch):
    with pytest.raises(ImproperlyConfigured, match="PGPORT"):
        load_settings(monkeypatch, ARBOR_DB="postgres", PGPORT="fivefourthreetwo")


def test_unknown_arbor_db_raises(monkeypatch):
    with pytest.raises(ImproperlyConfigured, match="ARBOR_DB"):
        load_settings(monkeypatch, ARBOR_DB="mysql")


def test_redis_url_selects_redis_channel_layer(monkeypatch):
    config = load_settings(monkeypatch, ARBOR_REDIS_URL="redis://127.0.0.1:6379/0")

    assert config["CHANNEL_LAYERS"]["default"] == {
        "BACKEND": "channels_redis.core.RedisChannelLayer",
        "CONFIG": {
            "hosts": [
                {"address": "redis://127.0.0.1:6379/0", "socket_timeout": 30, "socket_connect_timeout": 5}
            ]
        },
    }
    # The cache (sign-in failure counts) is shared by the workers through the same server.
    assert config["CACHES"]["default"]["BACKEND"] == "django.core.cache.backends.redis.RedisCache"
    assert config["CACHES"]["default"]["LOCATION"] == "redis://127.0.0.1:6379/0"


def test_without_redis_the_cache_is_the_processs_memory(monkeypatch):
    config = load_settings(monkeypatch)
    assert config["CACHES"]["default"]["BACKEND"] == "django.core.cache.backends.locmem.LocMemCache"


def test_the_tree_cache_budget_is_a_setting(monkeypatch):
    assert load_settings(monkeypatch)["ARBOR_TREE_CACHE_MB"] == 1024
    assert load_settings(monkeypatch, ARBOR_TREE_CACHE_MB="256")["ARBOR_TREE_CACHE_MB"] == 256
    with pytest.raises(ImproperlyConfigured, match="ARBOR_TREE_CACHE_MB"):
        load_settings(monkeypatch, ARBOR_TREE_CACHE_MB="lots")


def test_sign_in_throttling_settings_are_validated(monkeypatch):
    config = load_settings(monkeypatch, ARBOR_LOGIN_FAILURES="3", ARBOR_LOGIN_WINDOW_SECONDS="60")
    assert (config["ARBOR_LOGIN_FAILURES"], config["ARBOR_LOGIN_WINDOW_SECONDS"]) == (3, 60)
    with pytest.raises(ImproperlyConfigured, match="ARBOR_LOGIN_FAILURES"):
        load_settings(monkeypatch, ARBOR_LOGIN_FAILURES="0")


@pytest.mark.parametrize("url", ["http://127.0.0.1:6379", "redis://", "redis://host:port"])
def test_malformed_redis_url_raises(monkeypatch, url):
    with pytest.raises(ImproperlyConfigured, match="ARBOR_REDIS_URL"):
        load_settings(monkeypatch, ARBOR_REDIS_URL=url)


def test_sample_flag_points_session_dirs_at_test_data(monkeypatch):
    config = load_settings(monkeypatch, ARBOR_SAMPLE="1")

    assert config["ARBOR_SESSION_DIRS"] == [BASE_DIR / "samples", BASE_DIR / "tests" / "data" / "real"]


def test_default_session_dirs_are_pi_and_omp_and_xdg_when_set(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    config = load_settings(monkeypatch, XDG_DATA_HOME="/xdg")

    assert config["ARBOR_SESSION_DIRS"] == [
        tmp_path / ".pi" / "agent" / "sessions",
        tmp_path / ".omp" / "agent" / "sessions",
        Path("/xdg/omp/sessions"),
        tmp_path / ".omp" / "agent" / "archive" / "sessions",
        Path("/xdg/omp/archive/sessions"),
    ]


def test_session_dirs_variable_wins_and_resolves_relative_paths(monkeypatch):
    config = load_settings(monkeypatch, ARBOR_SESSION_DIRS=os.pathsep.join(["/srv/sessions", "tests/data"]))

    assert config["ARBOR_SESSION_DIRS"] == [Path("/srv/sessions"), BASE_DIR / "tests" / "data"]


def test_session_dirs_with_empty_entry_raises(monkeypatch):
    with pytest.raises(ImproperlyConfigured, match="ARBOR_SESSION_DIRS"):
        load_settings(monkeypatch, ARBOR_SESSION_DIRS="/srv/sessions" + os.pathsep)


def test_env_readers_take_an_explicit_mapping():
    assert env.get_int("N", 3, environ={"N": " 7 "}) == 7
    assert env.get_list("L", ["x"], environ={}) == ["x"]
    with pytest.raises(ImproperlyConfigured, match="at least 1"):
        env.get_int("N", 3, minimum=1, environ={"N": "0"})
    assert env.get_float("F", 3.0, environ={}) == 3.0
    assert env.get_float("F", 3.0, environ={"F": " 0.5 "}) == 0.5
    with pytest.raises(ImproperlyConfigured, match="at least 0"):
        env.get_float("F", 3.0, minimum=0.0, environ={"F": "-1"})
    for bad in ("soon", "nan", "inf"):
        with pytest.raises(ImproperlyConfigured, match="F="):
            env.get_float("F", 3.0, environ={"F": bad})


@pytest.mark.django_db
def test_configured_database_is_reachable_and_migrated():
    from django.contrib.sessions.models import Session
    from django.db import connection

    url = os.environ.get("DATABASE_URL", "")
    wants_postgres = os.environ.get("ARBOR_DB") == "postgres" or url.startswith(("postgres", "pgsql"))
    assert connection.vendor == ("postgresql" if wants_postgres else "sqlite")
    assert Session.objects.count() == 0
