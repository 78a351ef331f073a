"""``~/.config/arbor/push.toml``: the server and token ``./arbor push --save`` remembers (mode 0600)."""

from __future__ import annotations

import json
import os
import tomllib
from pathlib import Path
from typing import Any

__all__ = ["config_path", "load_config", "save_config"]


def config_path(environ: dict[str, str] | None = None) -> Path:
    environ = dict(os.environ) if environ is None else environ
    base = Path(environ["XDG_CONFIG_HOME"]) if environ.get("XDG_CONFIG_HOME") else Path.home() / ".config"
    return base / "arbor" / "push.toml"


def load_config(path: Path) -> dict[str, Any]:
    """The settings in ``path`` (none when it does not exist). Raises ValueError for a broken file."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}
    try:
        config = tomllib.loads(data.decode())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as error:
        raise ValueError(f"{path}: {error}") from None
    for name in ("server", "token", "machine"):
        if name in config and not isinstance(config[name], str):
            raise ValueError(f"{path}: {name} must be a string")
    paths = config.get("paths", [])
    if not isinstance(paths, list) or not all(isinstance(p, str) for p in paths):
        raise ValueError(f"{path}: paths must be a list of strings")
    return config


def _toml(value: Any) -> str:
    # A JSON string is a valid TOML basic string (the same escapes).
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)


def save_config(path: Path, config: dict[str, Any]) -> None:
    """Write ``config`` to ``path``, readable by its owner only (it holds a token)."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    text = "".join(f"{name} = {_toml(value)}\n" for name, value in config.items() if value)
    temporary = path.with_name(path.name + ".tmp")
    descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(descriptor, 0o600)
        os.write(descriptor, text.encode())
        os.fsync(descriptor)
    finally:
        os.close(descriptor)
    os.replace(temporary, path)
