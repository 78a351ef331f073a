"""``./arbor push --server URL [--token TOKEN] [--watch] [--save] [PATH ...]``.

Sends the session files under PATH (default: the agents' session directories) to an Arbor server, only the
bytes it lacks. Without ``--watch``: once, with a progress bar on a terminal and one line per file at the end;
exit status 1 when a file failed. With ``--watch``: everything once, then every change within a second; while
the server cannot be reached the changed files wait and are retried with backoff. Ctrl-C and SIGTERM stop it
cleanly (a request under way finishes or is dropped whole; the server stores a chunk once).
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any, TextIO

from treeview.push.api import Api, ApiError, Offline
from treeview.push.config import config_path, load_config, save_config
from treeview.push.files import FileResult, Pusher, find_files
from treeview.session.locations import agent_session_dirs

__all__ = ["main"]

#: Longest wait between two tries while the server is away.
MAX_BACKOFF = 30.0


class Progress:
    """``files 3/10 · 120.5 MB · 45.2 MB/s`` on one redrawn line of a terminal; nothing elsewhere."""

    def __init__(self, stream: TextIO, total: int, *, enabled: bool) -> None:
        self.stream = stream
        self.total = total
        self.enabled = enabled
        self.files = 0
        self.bytes = 0
        self.started = time.monotonic()
        self.drawn = 0.0

    def add_bytes(self, count: int) -> None:
        self.bytes += count
        self.draw()

    def file_done(self) -> None:
        self.files += 1
        self.draw()

    def draw(self, *, force: bool = False) -> None:
        now = time.monotonic()
        if not self.enabled or (not force and now - self.drawn < 0.1):
            return
        self.drawn = now
        rate = self.bytes / max(now - self.started, 1e-6) / 1e6
        self.stream.write(
            f"\r\x1b[Kfiles {self.files}/{self.total} · {self.bytes / 1e6:.1f} MB · {rate:.1f} MB/s"
        )
        self.stream.flush()

    def clear(self) -> None:
        if self.enabled:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def describe(result: FileResult) -> str:
    if result.status == "sent":
        return f"sent        {result.path} ({result.sent} bytes, {result.entries_added} new entries)"
    if result.status == "unchanged":
        return f"up to date  {result.path}"
    if result.status == "waiting":
        return f"waiting     {result.path}: {result.reason}"
    return f"failed      {result.path}: {result.reason}"


def _default_paths() -> list[Path]:
    # The server's own default (ARBOR_SESSION_DIRS, else the agents' directories), as ./arbor run finds them.
    configured = os.environ.get("ARBOR_SESSION_DIRS", "")
    paths = [Path(p).expanduser() for p in configured.split(":") if p] if configured else agent_session_dirs()
    return [path for path in paths if path.is_dir()]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="arbor push",
        description="Send session files to an Arbor server (only the bytes it lacks).",
    )
    parser.add_argument("paths", nargs="*", metavar="PATH", help="session files or directories")
    parser.add_argument("--server", help="the server's URL (or ARBOR_SERVER, or the config file)")
    parser.add_argument("--token", help="a personal API token (or ARBOR_TOKEN, or the config file)")
    parser.add_argument("--watch", action="store_true", help="keep following the files and push each change")
    parser.add_argument(
        "--save", action="store_true", help=f"remember --server, --token (and PATHs) in {config_path()}"
    )
    parser.add_argument("--machine", help="this machine's name on the server (default: the host name)")
    parser.add_argument(
        "--debounce", type=int, default=100, metavar="MS", help="wait for quiet (default 100)"
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="print only failures")
    return parser


def main(argv: list[str] | None = None, *, stop: threading.Event | None = None) -> int:
    args = _parser().parse_args(argv)
    err = sys.stderr
    try:
        config = load_config(config_path())
    except ValueError as error:
        err.write(f"arbor push: {error}\n")
        return 2
    server = args.server or os.environ.get("ARBOR_SERVER") or config.get("server")
    token = args.token or os.environ.get("ARBOR_TOKEN") or config.get("token")
    machine = args.machine or config.get("machine") or socket.gethostname()
    if not server or not token:
        err.write(
            "arbor push: needs --server and --token (or ARBOR_TOKEN, or a config file made with --save)\n"
        )
        return 2
    paths = [Path(p).expanduser().absolute() for p in args.paths]
    if args.save:
        saved = {**config, "server": server, "token": token}
        if args.machine:
            saved["machine"] = args.machine
        if paths:
            saved["paths"] = [str(p) for p in paths]
        save_config(config_path(), saved)
        err.write(f"arbor push: saved to {config_path()}\n")
    if not paths:
        paths = [Path(p).expanduser() for p in config.get("paths", [])] or _default_paths()
    if not paths:
        err.write("arbor push: no session directory here; name files or directories to push\n")
        return 2
    missing = [p for p in paths if not p.exists()]
    if missing:
        err.write("arbor push: not found: " + ", ".join(map(str, missing)) + "\n")
        return 2
    api = Api(server, token)
    try:
        if args.watch:
            return _watch(api, machine, paths, args, stop or threading.Event())
        return _once(api, machine, paths, args)
    finally:
        api.close()


def _fatal(error: ApiError) -> int:
    sys.stderr.write(f"arbor push: {error.detail} ({error.status} {error.code})\n")
    return 1


def _once(api: Api, machine: str, paths: list[Path], args: Any) -> int:
    files = list(find_files(paths))
    progress = Progress(sys.stderr, len(files), enabled=sys.stderr.isatty() and not args.quiet)
    pusher = Pusher(api, machine, on_bytes=progress.add_bytes)
    results: list[FileResult] = []
    code = 0
    try:
        for path in files:
            try:
                results.append(pusher.push(path))
            except Offline as error:
                results.append(FileResult(path, "failed", reason=str(error)))
            progress.file_done()
    except ApiError as error:
        progress.clear()
        _report(results, args.quiet)
        return _fatal(error)
    except KeyboardInterrupt:
        code = 130
    progress.clear()
    _report(results, args.quiet)
    if code:
        return code
    return 1 if any(r.status == "failed" for r in results) else 0


def _report(results: Iterable[FileResult], quiet: bool) -> None:
    for result in results:
        if not quiet or result.status == "failed":
            print(describe(result), flush=True)


def _watch(api: Api, machine: str, paths: list[Path], args: Any, stop: threading.Event) -> int:
    from watchfiles import Change, watch

    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            signal.signal(signum, lambda *_: stop.set())
    pusher = Pusher(api, machine)
    pending: dict[Path, None] = dict.fromkeys(find_files(paths))
    backoff = 0.0
    next_try = 0.0
    offline_said = False

    def wanted(change: Change, path: str) -> bool:
        return change != Change.deleted and path.endswith(".jsonl")

    if not args.quiet:
        print(f"watching {', '.join(map(str, paths))} (Ctrl-C stops)", flush=True)
    for changes in watch(
        *paths,
        watch_filter=wanted,
        debounce=args.debounce,
        step=50,
        stop_event=stop,
        rust_timeout=250,
        yield_on_timeout=True,
    ):
        for _, changed in changes:
            pending[Path(changed)] = None
        if not pending or time.monotonic() < next_try or stop.is_set():
            continue
        try:
            for path in list(pending):
                if stop.is_set():
                    break
                if path.is_file():
                    result = pusher.push(path)
                    if result.status != "unchanged" and not (args.quiet and result.status != "failed"):
                        print(time.strftime("%H:%M:%S ") + describe(result), flush=True)
                pending.pop(path, None)
            if offline_said and not args.quiet:
                print(time.strftime("%H:%M:%S ") + "the server is back: caught up", flush=True)
            backoff, offline_said = 0.0, False
        except Offline as error:
            backoff = min(MAX_BACKOFF, backoff * 2 or 1.0)
            next_try = time.monotonic() + backoff
            if not offline_said:
                sys.stderr.write(time.strftime("%H:%M:%S ") + f"{error}; {len(pending)} file(s) wait\n")
                offline_said = True
        except ApiError as error:
            return _fatal(error)
    if not args.quiet:
        print("stopped", flush=True)
    return 0
