"""Where the agents keep their sessions (treeview/session/locations.py): pi 1.6 and oh-my-pi 18."""

from __future__ import annotations

import hashlib
from pathlib import Path

from treeview.services.sync import find_session_files
from treeview.session.locations import (
    agent_session_dirs,
    is_hashed_project_dir,
    project_dir_names,
    project_session_dirs,
)


def test_the_default_directories_and_the_archive(tmp_path: Path) -> None:
    dirs = agent_session_dirs({}, tmp_path)
    assert dirs == [
        tmp_path / ".pi/agent/sessions",
        tmp_path / ".omp/agent/sessions",
        tmp_path / ".omp/agent/archive/sessions",
    ]


def test_omp_profiles_found_on_disk(tmp_path: Path) -> None:
    for name in ("work", "play"):
        (tmp_path / ".omp/profiles" / name / "agent").mkdir(parents=True)
    (tmp_path / ".omp/profiles/not-a-profile.txt").write_text("")
    dirs = agent_session_dirs({}, tmp_path)
    assert tmp_path / ".omp/profiles/play/agent/sessions" in dirs
    assert tmp_path / ".omp/profiles/work/agent/sessions" in dirs
    assert tmp_path / ".omp/profiles/work/agent/archive/sessions" in dirs
    assert len(dirs) == len(set(dirs))


def test_xdg_data_home_drops_the_agent_level(tmp_path: Path) -> None:
    xdg = tmp_path / "xdg"
    (xdg / "omp/profiles/team").mkdir(parents=True)
    dirs = agent_session_dirs({"XDG_DATA_HOME": str(xdg)}, tmp_path)
    assert xdg / "omp/sessions" in dirs
    assert xdg / "omp/archive/sessions" in dirs
    assert xdg / "omp/profiles/team/sessions" in dirs


def test_pi_session_dir_agent_dir_and_config_dir_overrides(tmp_path: Path) -> None:
    environ = {
        "PI_CODING_AGENT_SESSION_DIR": str(tmp_path / "flat"),
        "PI_CODING_AGENT_DIR": str(tmp_path / "agent"),
        "PI_CONFIG_DIR": ".omp-dev",
    }
    dirs = agent_session_dirs(environ, tmp_path)
    assert dirs[0] == tmp_path / "flat"
    assert tmp_path / "agent/sessions" in dirs
    assert tmp_path / ".omp-dev/agent/sessions" in dirs
    # the defaults stay: sessions written before the variables were set are still found
    assert tmp_path / ".pi/agent/sessions" in dirs
    assert tmp_path / ".omp/agent/sessions" in dirs
    assert len(dirs) == len(set(dirs))


# -- a project's directory, as each agent version named it ------------------------------------------------


def test_a_projects_directory_names_include_omp_17_2_5_to_17_2_8s_hashed_one(tmp_path: Path) -> None:
    home, tmp = Path("/home/ana"), Path("/tmp")
    names = project_dir_names("/home/ana/work/my proj", home, tmp)
    digest = hashlib.sha256(b"/home/ana/work/my proj").hexdigest()
    assert names == ["-work-my proj", "--home-ana-work-my proj--", f"home-my-proj-{digest}"]
    assert is_hashed_project_dir(names[2]) and not any(map(is_hashed_project_dir, names[:2]))
    scratch = project_dir_names("/tmp/t1", home, tmp)
    assert scratch[0] == "-tmp-t1" and scratch[2].startswith("tmp-t1-")
    elsewhere = project_dir_names("/srv/x.y", home, tmp)
    assert elsewhere[:1] == ["--srv-x.y--"] and elsewhere[1].startswith("abs-x.y-")
    # nothing readable left: "project"
    assert project_dir_names("/srv/%%%", home, tmp)[1].startswith("abs-project-")


def test_sessions_left_in_a_hashed_directory_are_found(tmp_path: Path) -> None:
    home = tmp_path / "home"
    cwd = home / "code" / "arbor"
    root = home / ".omp/agent/sessions"
    hashed = root / project_dir_names(cwd, home, Path("/tmp"))[-1]
    legacy = root / "-code-arbor"
    for directory in (hashed, legacy):
        directory.mkdir(parents=True)
    (hashed / "2026-08-03T10-00-00-000Z_0198a1b2-0000-7000-8000-000000000001.jsonl").write_text("{}\n")
    assert project_session_dirs(cwd, home=home, tmp=Path("/tmp")) == [legacy, hashed]
    found = list(find_session_files(d for d in agent_session_dirs({}, home) if d.is_dir()))
    assert [p.parent for p in found] == [hashed]
