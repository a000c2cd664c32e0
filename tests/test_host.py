"""The host's available memory, shared by the checks before a run and the trace reader,
and its speed, timed beside benchmarks and sweep points."""

from __future__ import annotations

import builtins

from simsched import host


def test_available_memory_is_read_from_the_host():
    got = host.available_bytes()
    assert got is None or got > 0


def test_without_meminfo_the_free_pages_are_used(monkeypatch):
    real_open = builtins.open

    def no_meminfo(path, *a, **k):
        if str(path) == "/proc/meminfo":
            raise OSError("not here")
        return real_open(path, *a, **k)

    monkeypatch.setattr(builtins, "open", no_meminfo)
    monkeypatch.setattr(host.os, "sysconf", lambda name: {"SC_AVPHYS_PAGES": 3}.get(name, 4096))
    assert host.available_bytes() == 3 * 4096


def test_a_host_that_does_not_say_gives_none(monkeypatch):
    def refuse(path, *a, **k):
        raise OSError("no proc")

    def no_sysconf(name):
        raise ValueError(name)

    monkeypatch.setattr(builtins, "open", refuse)
    monkeypatch.setattr(host.os, "sysconf", no_sysconf)
    assert host.available_bytes() is None


def test_speed_reference_times_the_same_work_every_call():
    loop, gather, spent = host.speed_reference(2)
    assert loop > 0 and gather > 0 and spent > 0
    assert spent >= (loop + gather) / 1e3  # the best call is part of what it took
    data, idx = host._GATHER  # made once: a second call reuses the same array and reads
    host.speed_reference()
    assert host._GATHER[0] is data and host._GATHER[1] is idx
    assert data.nbytes == 32 << 20 and len(idx) == host.GATHER_READS
    assert int(idx.max()) < host.GATHER_ELEMENTS
