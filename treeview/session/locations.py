"""Where the agents keep their session files, from the environment, as pi 1.6 and oh-my-pi 18 find them.

Pure Python, so that the push client (``treeview/push``) finds the same directories as the server's settings
(``ARBOR_SESSION_DIRS`` defaults to these) without Django.

- pi: ``PI_CODING_AGENT_SESSION_DIR`` when set, and ``<agent dir>/sessions`` where the agent dir is
  ``PI_CODING_AGENT_DIR`` or ``~/.pi/agent``.
- oh-my-pi: ``~/<PI_CONFIG_DIR or .omp>/agent/sessions`` (or ``PI_CODING_AGENT_DIR``), every profile's
  ``profiles/<name>/agent/sessions``, the XDG data directory ``$XDG_DATA_HOME/omp/sessions`` (and its
  profiles), and the gzip archives of old sessions (``archive/sessions`` beside each ``sessions``).

Inside a sessions directory each project (working directory) has a directory of its own. Its name: pi's
``--<absolute path, / as ->--``; oh-my-pi's ``-<path under home>`` (``-tmp-<path>`` under the temp directory,
else pi's form); and, written only by oh-my-pi 17.2.5 to 17.2.8 (which moved the others there; 17.2.9 went
back without moving them again), ``<home|tmp|abs>-<last path part>-<sha256 of the path>``. Sessions in such a
hashed directory stay where they are: :func:`project_session_dirs` finds every spelling for a project.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path, PurePath

__all__ = [
    "agent_session_dirs",
    "hashed_project_dir_name",
    "is_hashed_project_dir",
    "project_dir_names",
    "project_session_dirs",
]

#: A project directory name of oh-my-pi 17.2.5-17.2.8: scope, a readable tail, the sha256 of the path.
HASHED_PROJECT_DIR = re.compile(r"(home|tmp|abs)-(.*)-([0-9a-f]{64})")


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


# -- one project's directory in a sessions directory --------------------------------------------------------


def _relative(path: PurePath, root: PurePath) -> str | None:
    """``path`` below (or at) ``root`` as a relative string ("" for the root itself), else None."""
    try:
        return str(path.relative_to(root)) if path != root else ""
    except ValueError:
        return None


def _dashed(text: str) -> str:
    return re.sub(r"[/\\:]", "-", text)


_LEADING_SEPARATOR = re.compile(r"^[/\\\\]")


def _absolute_name(cwd: PurePath) -> str:
    return "--" + _dashed(_LEADING_SEPARATOR.sub("", str(cwd))) + "--"


def _relative_name(prefix: str, relative: str) -> str:
    encoded = _dashed(relative)
    if not encoded:
        return prefix
    return f"{prefix}{encoded}" if prefix.endswith("-") else f"{prefix}-{encoded}"


def hashed_project_dir_name(cwd: str | os.PathLike[str], home: Path, tmp: Path) -> str:
    """The directory oh-my-pi 17.2.5-17.2.8 kept ``cwd``'s sessions in: ``<scope>-<readable>-<sha256>``, the
    scope ``home`` or ``tmp`` for a path under the home or temp directory, else ``abs``; the readable part
    the path's last part with other characters than letters, digits, ``.``, ``_`` and ``-`` as ``-``
    (trimmed of ``-``, its last 80 characters, ``project`` when nothing is left); the digest of the path
    (``/`` separators)."""
    path = PurePath(os.fspath(cwd))
    scope = (
        "home" if _relative(path, home) is not None else "tmp" if _relative(path, tmp) is not None else "abs"
    )
    readable = re.sub(r"[^a-zA-Z0-9._-]+", "-", path.name).strip("-")[-80:]
    digest = hashlib.sha256(str(path).replace("\\", "/").encode("utf-8", "surrogatepass")).hexdigest()
    return f"{scope}-{readable or 'project'}-{digest}"


def is_hashed_project_dir(name: str) -> bool:
    """Is ``name`` a project directory named the way of oh-my-pi 17.2.5-17.2.8?"""
    return HASHED_PROJECT_DIR.fullmatch(name) is not None


def project_dir_names(
    cwd: str | os.PathLike[str], home: Path | None = None, tmp: Path | None = None
) -> list[str]:
    """Every name the agents have given ``cwd``'s directory in a sessions directory, newest rules first:
    oh-my-pi's (home- or temp-relative), pi's absolute one, and oh-my-pi 17.2.5-17.2.8's hashed one."""
    home = Path.home() if home is None else home
    tmp = Path(os.environ.get("TMPDIR") or "/tmp") if tmp is None else tmp
    path = PurePath(os.fspath(cwd))
    names: list[str] = []
    under_home, under_tmp = _relative(path, home), _relative(path, tmp)
    if under_home is not None:
        names.append(_relative_name("-", under_home))
    elif under_tmp is not None:
        names.append(_relative_name("-tmp", under_tmp))
    names.append(_absolute_name(path))
    names.append(hashed_project_dir_name(path, home, tmp))
    return list(dict.fromkeys(names))


def project_session_dirs(
    cwd: str | os.PathLike[str],
    roots: Iterable[Path] | None = None,
    home: Path | None = None,
    tmp: Path | None = None,
) -> list[Path]:
    """The existing directories holding ``cwd``'s sessions under the sessions directories ``roots`` (default:
    :func:`agent_session_dirs`), whatever version of which agent named them."""
    home = Path.home() if home is None else home
    roots = agent_session_dirs(home=home) if roots is None else roots
    names = project_dir_names(cwd, home, tmp)
    return [root / name for root in roots for name in names if (root / name).is_dir()]
