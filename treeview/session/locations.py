"""Where the agents keep their session files: pi's and oh-my-pi's directories (§1.1), from the environment.

Pure Python, so that the push client (``treeview/push``) finds the same directories as the server's settings
(``ARBOR_SESSION_DIRS`` defaults to these) without Django.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["agent_session_dirs"]


def agent_session_dirs(environ: Mapping[str, str] | None = None, home: Path | None = None) -> list[Path]:
    """pi's and oh-my-pi's session directories (whether they exist or not)."""
    environ = os.environ if environ is None else environ
    home = Path.home() if home is None else home
    dirs = [home / ".pi" / "agent" / "sessions", home / ".omp" / "agent" / "sessions"]
    # omp only moves its data under XDG_DATA_HOME when that variable is set.
    if environ.get("XDG_DATA_HOME"):
        dirs.append(Path(environ["XDG_DATA_HOME"]) / "omp" / "sessions")
    return dirs
