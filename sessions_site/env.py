"""Typed readers for the environment variables that configure Arbor.

Every reader fails loudly (ImproperlyConfigured) on a malformed value rather than falling back to a default:
a typo in a deployment should stop the process, not silently change its behaviour. An empty value counts as
unset, so `VAR=` in a compose file means "use the default".
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from django.core.exceptions import ImproperlyConfigured

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off"}


def _raw(name: str, environ: Mapping[str, str] | None) -> str | None:
    value = (os.environ if environ is None else environ).get(name, "").strip()
    return value or None


def get_str(name: str, default: str, environ: Mapping[str, str] | None = None) -> str:
    """Return the variable's value, or `default` when unset or empty."""
    value = _raw(name, environ)
    return default if value is None else value


def get_bool(name: str, default: bool, environ: Mapping[str, str] | None = None) -> bool:
    """Parse 1/0, true/false, yes/no, on/off (any case)."""
    value = _raw(name, environ)
    if value is None:
        return default
    if value.lower() in _TRUE:
        return True
    if value.lower() in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean (use 1/0, true/false, yes/no, on/off)")


def get_int(
    name: str, default: int, *, minimum: int | None = None, environ: Mapping[str, str] | None = None
) -> int:
    """Parse a decimal integer, optionally bounded below."""
    value = _raw(name, environ)
    if value is None:
        return default
    try:
        number = int(value, 10)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not an integer") from None
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={value!r} must be at least {minimum}")
    return number


def get_float(
    name: str, default: float, *, minimum: float | None = None, environ: Mapping[str, str] | None = None
) -> float:
    """Parse a decimal number (finite), optionally bounded below."""
    value = _raw(name, environ)
    if value is None:
        return default
    try:
        number = float(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={value!r} is not a number") from None
    if not math.isfinite(number):
        raise ImproperlyConfigured(f"{name}={value!r} is not a finite number")
    if minimum is not None and number < minimum:
        raise ImproperlyConfigured(f"{name}={value!r} must be at least {minimum}")
    return number


def get_list(name: str, default: list[str], environ: Mapping[str, str] | None = None) -> list[str]:
    """Parse a comma-separated list; blank items are an error (usually a stray comma)."""
    value = _raw(name, environ)
    if value is None:
        return list(default)
    items = [item.strip() for item in value.split(",")]
    if any(not item for item in items):
        raise ImproperlyConfigured(f"{name}={value!r} has an empty item")
    return items


def get_paths(
    name: str, default: list[Path], *, base_dir: Path, environ: Mapping[str, str] | None = None
) -> list[Path]:
    """Parse an os.pathsep-separated list of directories: `~` expands, relative paths start at base_dir."""
    value = _raw(name, environ)
    if value is None:
        return list(default)
    parts = value.split(os.pathsep)
    if any(not part.strip() for part in parts):
        raise ImproperlyConfigured(f"{name}={value!r} has an empty path")
    return [base_dir / Path(part.strip()).expanduser() for part in parts]


def _port(name: str, value: str | int | None) -> str:
    if value is None or value == "":
        return ""
    try:
        port = int(value)
    except ValueError:
        raise ImproperlyConfigured(f"{name}: port {value!r} is not a number") from None
    if not 0 < port < 65536:
        raise ImproperlyConfigured(f"{name}: port {port} is out of range")
    return str(port)


def parse_database_url(url: str, *, base_dir: Path, name: str = "DATABASE_URL") -> dict[str, Any]:
    """Turn `postgres://user:pass@host:port/db?opt=v` or `sqlite:///path` into a Django DATABASES entry.

    Query parameters of a PostgreSQL URL become connection OPTIONS (sslmode, connect_timeout, ...).
    """
    try:
        parts = urlsplit(url)
        port = parts.port  # urlsplit validates the port lazily
    except ValueError as error:
        raise ImproperlyConfigured(f"{name} is malformed: {error}") from None
    if parts.scheme in ("postgres", "postgresql", "pgsql"):
        db_name = unquote(parts.path.lstrip("/"))
        if not db_name or "/" in db_name:
            raise ImproperlyConfigured(f"{name} must name one database, e.g. postgres://host/arbor")
        return {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": db_name,
            "USER": unquote(parts.username or ""),
            "PASSWORD": unquote(parts.password or ""),
            "HOST": unquote(parts.hostname or ""),
            "PORT": _port(name, port),
            "OPTIONS": dict(parse_qsl(parts.query, keep_blank_values=True)),
        }
    if parts.scheme == "sqlite":
        # sqlite:///relative/path.db or sqlite:////absolute/path.db, as dj-database-url spells them.
        path = unquote(parts.path)[1:] if parts.path.startswith("/") else unquote(parts.path)
        if parts.netloc or not path:
            raise ImproperlyConfigured(
                f"{name} must look like sqlite:///db.sqlite3 or sqlite:////abs/path.db"
            )
        return sqlite_config(base_dir / path)
    raise ImproperlyConfigured(
        f"{name} has unsupported scheme {parts.scheme!r} (use postgres:// or sqlite://)"
    )


def sqlite_config(path: Path) -> dict[str, Any]:
    """SQLite in WAL mode (readers never block the writer) with IMMEDIATE transactions.

    IMMEDIATE takes the write lock when a transaction starts, so two processes appending to one session are
    serialized instead of both reading the same "next position" and one failing on commit.
    """
    return {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": path,
        "OPTIONS": {
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
            "transaction_mode": "IMMEDIATE",
            "timeout": 30,
        },
    }


def database_config(*, base_dir: Path, environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Pick the default database: DATABASE_URL, else ARBOR_DB=postgres with PG* variables, else SQLite."""
    url = _raw("DATABASE_URL", environ)
    backend = get_str("ARBOR_DB", "sqlite", environ).lower()
    if backend not in ("sqlite", "postgres"):
        raise ImproperlyConfigured(f"ARBOR_DB={backend!r} is not one of: sqlite, postgres")
    if url is not None:
        config = parse_database_url(url, base_dir=base_dir)
    elif backend == "sqlite":
        return sqlite_config(base_dir / "db.sqlite3")
    else:
        config = {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": get_str("PGDATABASE", "arbor", environ),
            "USER": get_str("PGUSER", "postgres", environ),
            "PASSWORD": get_str("PGPASSWORD", "", environ),
            "HOST": get_str("PGHOST", "127.0.0.1", environ),
            "PORT": _port("PGPORT", get_str("PGPORT", "5432", environ)),
            "OPTIONS": {},
        }
    if config["ENGINE"] == "django.db.backends.postgresql":
        pool = postgres_pool(environ)
        if pool is not None:
            config["OPTIONS"]["pool"] = pool
    return config


def postgres_pool(environ: Mapping[str, str] | None = None) -> dict[str, Any] | None:
    """The PostgreSQL connection pool of one server process (psycopg_pool through Django's ``pool`` option).

    Every request and socket message runs on its own thread and used to open its own connection: 100 open
    pages refetching at once asked for 100 connections, the server's default ``max_connections``, and the
    next request failed with "too many clients". With the pool a process holds at most ``ARBOR_DB_POOL_SIZE``
    connections (default 10; workers x size must stay below the server's ``max_connections``); a thread that
    finds them all busy waits up to ``ARBOR_DB_POOL_TIMEOUT`` seconds (default 30) and then fails with a clear
    error. ``ARBOR_DB_POOL_SIZE=0``: no pool, one connection per thread, closed after each request.
    """
    size = get_int("ARBOR_DB_POOL_SIZE", 10, minimum=0, environ=environ)
    if size == 0:
        return None
    timeout = get_int("ARBOR_DB_POOL_TIMEOUT", 30, minimum=1, environ=environ)
    # A quiet server gives its connections back (min_size 0): one every max_idle seconds (psycopg_pool).
    return {"min_size": 0, "max_size": size, "timeout": timeout, "max_idle": 10}


def redis_url(environ: Mapping[str, str] | None = None) -> str | None:
    """ARBOR_REDIS_URL (or REDIS_URL), validated; ``None`` when neither is set."""
    url = _raw("ARBOR_REDIS_URL", environ)
    if url is None:
        url = _raw("REDIS_URL", environ)
    if url is None:
        return None
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- urlsplit validates the port lazily
    except ValueError as error:
        raise ImproperlyConfigured(f"ARBOR_REDIS_URL is malformed: {error}") from None
    if parts.scheme not in ("redis", "rediss", "unix") or not (parts.hostname or parts.path):
        raise ImproperlyConfigured(f"ARBOR_REDIS_URL={url!r} must look like redis://host:6379/0")
    return url


def channel_layers_config(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """In-memory channel layer (one process) unless ARBOR_REDIS_URL (or REDIS_URL) names a Redis server."""
    url = redis_url(environ)
    if url is None:
        return {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    # redis-py 8 gives up on a read after 5 s by default, and channels_redis waits for a message with a
    # 5 s blocking pop: every page idle for 5 s lost its socket with "Timeout reading from". Reads wait longer
    # than the blocking pop; connecting keeps a short limit.
    host = {"address": url, "socket_timeout": REDIS_READ_TIMEOUT, "socket_connect_timeout": 5}
    return {"default": {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [host]}}}


#: Seconds a read from Redis may take: more than channels_redis's blocking pop (5 s) waits for a message.
REDIS_READ_TIMEOUT = 30


def caches_config(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Django's cache (sign-in throttling): shared by every worker through Redis when ARBOR_REDIS_URL names
    one, else in the process's memory (one process: ``./arbor run``)."""
    url = redis_url(environ)
    if url is None:
        return {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
    return {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": url,
            "KEY_PREFIX": "arbor",
        }
    }
