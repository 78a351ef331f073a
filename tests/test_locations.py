"""Where the agents keep their sessions (treeview/session/locations.py): pi 1.6 and oh-my-pi 18."""

from __future__ import annotations

from pathlib import Path

from treeview.session.locations import agent_session_dirs


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
