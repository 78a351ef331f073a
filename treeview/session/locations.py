"""Where the agents keep their session files, from the environment, as pi 1.6 and oh-my-pi 18 find them.

Pure Python, so that the push client (``treeview/push``) finds the same directories as the server's settings
(``ARBOR_SESSION_DIRS`` defaults to these) without Django.

- pi: ``PI_CODING_AGENT_SESSION_DIR`` when set, and ``<agent dir>/sessions`` where the agent dir is
  ``PI_CODING_AGENT_DIR`` or ``~/.pi/agent``.
- oh-my-pi: ``~/<PI_CONFIG_DIR or .omp>/agent/sessions`` (or ``PI_CODING_AGENT_DIR``), every profile's
  ``profiles/<name>/agent/sessions``, the XDG data directory ``$XDG_DATA_HOME/omp/sessions`` (and its
  profiles), and the gzip archives of old sessions (``archive/sessions`` beside each ``sessions``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

__all__ = ["agent_session_dirs"]


def agent_session_dirs(environ: Mapping[str, str] | None = None, home: Path | None = None) -> list[Path]:
    """pi's and oh-my-pi's session directories, archives included (the fixed ones whether they exist or
    not; profiles as found on disk). Each directory once, in a stable order."""
    environ = os.environ if environ is None else environ
    home = Path.home() if home is None else home
    dirs: list[Path] = []

    def add(path: Path) -> None:
        if path not in dirs:
            dirs.append(path)

    def expand(value: str) -> Path:
        return Path(os.path.expanduser(value)) if value.startswith("~") else Path(value)

    agent_override = environ.get("PI_CODING_AGENT_DIR")
    # pi
    if environ.get("PI_CODING_AGENT_SESSION_DIR"):
        add(expand(environ["PI_CODING_AGENT_SESSION_DIR"]))
    if agent_override:
        add(expand(agent_override) / "sessions")
    add(home / ".pi" / "agent" / "sessions")
    # oh-my-pi: the sessions directory and, beside it, the archive of old ones
    omp_roots = [home / (environ.get("PI_CONFIG_DIR") or ".omp")]
    if omp_roots[0] != home / ".omp":
        omp_roots.append(home / ".omp")
    agent_dirs = [expand(agent_override)] if agent_override else []
    agent_dirs += [root / "agent" for root in omp_roots]
    for root in omp_roots:
        agent_dirs += sorted(p for p in (root / "profiles").glob("*/agent") if p.is_dir())
    xdg = environ.get("XDG_DATA_HOME")
    if xdg:
        # XDG drops the agent/ level: $XDG_DATA_HOME/omp/sessions
        agent_dirs.append(Path(xdg) / "omp")
        agent_dirs += sorted(p for p in (Path(xdg) / "omp" / "profiles").glob("*") if p.is_dir())
    for agent in agent_dirs:
        add(agent / "sessions")
    for agent in agent_dirs:
        add(agent / "archive" / "sessions")
    return dirs
