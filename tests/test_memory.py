"""Memory a server process gives back (treeview/memory.py): fewer arenas, freed memory returned when idle."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time

import pytest
from django.test import Client

from treeview import memory
from treeview.memory import _IdleTrimmer

glibc = pytest.mark.skipif(not memory.available(), reason="the allocator knobs are glibc's (Linux)")


def _rss_after_burst(arenas: int, trim: bool) -> tuple[float, float, float]:
    """In a fresh interpreter: RSS (MB) at the start, after 8 threads each built and dropped ~40 MB of small
    blocks while a few survivors stayed alive in every arena, and after an optional trim."""
    code = textwrap.dedent(
        f"""
        import gc, threading, sys
        from treeview import memory
        memory.limit_arenas({arenas})
        def rss():
            for line in open("/proc/self/status"):
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        keep = []
        def work():
            # Blocks past Python's small-object allocator, so glibc's malloc holds them (as page text does).
            junk = [b"x" * (1000 + i % 1000) for i in range(30_000)]
            keep.append(junk[::1000])  # a few survivors pin the top of each arena's heap
            del junk
        start = rss()
        threads = [threading.Thread(target=work) for _ in range(8)]
        for t in threads: t.start()
        for t in threads: t.join()
        gc.collect()
        burst = rss()
        if {trim!r}:
            memory.trim()
        print(start, burst, rss())
        """
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    start, burst, after = (float(x) for x in out.split())
    return start, burst, after


@glibc
def test_limit_arenas_is_taken_and_zero_leaves_the_default() -> None:
    assert memory.limit_arenas(0) is False
    assert memory.limit_arenas(8) is True  # glibc accepts it (8 per CPU is its own default order)


@glibc
def test_trim_returns_what_a_burst_of_threads_freed() -> None:
    """The real allocator: what threads freed stays resident until trimmed; two arenas and a trim bring the
    process back near where it started."""
    start, burst, untrimmed = _rss_after_burst(arenas=0, trim=False)
    _, _, trimmed = _rss_after_burst(arenas=2, trim=True)
    assert untrimmed - start > 40, (start, burst, untrimmed)  # the default keeps much of the burst
    assert trimmed - start < (untrimmed - start) / 2, (start, trimmed, untrimmed)


@glibc
def test_idle_trimmer_trims_once_after_work_and_only_when_still_idle() -> None:
    trimmer = _IdleTrimmer()
    in_flight = [0]

    def idle() -> bool:
        return in_flight[0] == 0

    def wait_for(trims: int, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while trimmer.trims < trims and time.monotonic() < deadline:
            time.sleep(0.01)

    # Nothing happened yet: an idle moment does not trim.
    trimmer.idle(0.01, idle)
    time.sleep(0.05)
    assert trimmer.trims == 0
    trimmer.busy()
    trimmer.idle(0.01, idle)
    wait_for(1, 2)
    assert trimmer.trims == 1
    # Another idle moment without work in between: nothing to give back.
    trimmer.idle(0.01, idle)
    time.sleep(0.05)
    assert trimmer.trims == 1
    # A request started before the delay ran out and is still running: no trim while it runs ...
    trimmer.busy()
    trimmer.idle(0.05, idle)
    in_flight[0] = 1
    trimmer.busy()
    time.sleep(0.15)
    assert trimmer.trims == 1
    # ... and the delay counts from when it ends.
    in_flight[0] = 0
    trimmer.idle(0.2, idle)
    time.sleep(0.1)
    assert trimmer.trims == 1
    wait_for(2, 2)
    assert trimmer.trims == 2


@glibc
@pytest.mark.django_db
def test_a_request_then_an_idle_moment_trims(settings) -> None:
    """Through the middleware (treeview/gate.py): the last request in flight ending starts the idle timer."""
    settings.ARBOR_IDLE_TRIM_SECONDS = 0.05
    before = memory.trim_when_idle.trims
    assert Client().get("/").status_code == 200
    deadline = time.monotonic() + 5
    while memory.trim_when_idle.trims == before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert memory.trim_when_idle.trims == before + 1


@pytest.mark.django_db
def test_no_trim_when_switched_off(settings) -> None:
    settings.ARBOR_IDLE_TRIM_SECONDS = 0
    before = memory.trim_when_idle.trims
    assert Client().get("/").status_code == 200
    time.sleep(0.1)
    assert memory.trim_when_idle.trims == before
