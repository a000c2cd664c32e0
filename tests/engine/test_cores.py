"""Chunk buffers: bounded independent of the cores, same results when cores copy their
segments, and a run the host cannot hold refused before it starts."""

from __future__ import annotations

import re

import numpy as np
import pytest

from simsched.cli import main
from simsched.engine import cores
from simsched.engine.cores import (
    BUFFER_BUDGET,
    PREFETCH_DEPTH,
    REF_BYTES,
    SPARE_ROWS_PER_CORE,
    buffer_plan,
)
from simsched.engine.replay import Engine
from simsched.errors import ConfigError
from simsched.machine import load_machine
from simsched.memory import MemorySystem
from simsched.schedulers import get_scheduler
from simsched.trace import open_trace
from simsched.workloads import generate
from tests.engine.conftest import make_trace
from tests.engine.machines import TWO_BY_TWO
from tests.oracles.engine_oracle import OracleEngine
from tests.oracles.memory_oracle import MemoryOracle

#: A chunk as long as the trace writer's default (about 1 M references, 15 MB a row).
WIDTH = 1 << 20


def test_few_cores_read_in_place():
    plan = buffer_plan(4, WIDTH)
    # a row per core to pin, the decoders' rows, and a spare row per core
    assert not plan.copy and plan.rows == 4 + PREFETCH_DEPTH + 2 + 4 * SPARE_ROWS_PER_CORE


@pytest.mark.parametrize("P", [1, 4, 16, 20, 30, 35])
def test_spare_rows_fill_the_budget_and_no_more(P):
    plan = buffer_plan(P, WIDTH)
    least = P + PREFETCH_DEPTH + 2
    assert not plan.copy and least <= plan.rows <= least + P * SPARE_ROWS_PER_CORE
    assert plan.nbytes <= BUFFER_BUDGET
    if plan.rows < least + P * SPARE_ROWS_PER_CORE:  # the budget stopped them
        assert plan.nbytes + WIDTH * REF_BYTES > BUFFER_BUDGET


@pytest.mark.parametrize("P", [16, 32, 64, 256, 1024])
def test_buffers_stay_under_the_budget_at_any_core_count(P):
    plan = buffer_plan(P, WIDTH)
    assert plan.nbytes <= BUFFER_BUDGET
    # cores copy their segments exactly when a row per core would not fit
    assert plan.copy == ((P + PREFETCH_DEPTH + 2) * WIDTH * REF_BYTES > BUFFER_BUDGET)
    assert plan.copy == (P > 36)


def test_a_row_per_chunk_where_it_saves_rows_or_copying():
    # fewer chunks than reading in place takes rows: one row each, at least the decoders'
    # (and the four cores' stretches, one row)
    row = WIDTH * REF_BYTES
    assert buffer_plan(4, WIDTH, chunks=3) == (PREFETCH_DEPTH + 2, False, 7 * row, True)
    assert buffer_plan(4, WIDTH, chunks=9) == (9, False, 10 * row, True)
    assert not buffer_plan(4, WIDTH, chunks=15).whole  # more chunks than rows
    # 256 cores: reading in place does not fit the budget; 60 chunks of 2^20 references
    # fit the whole-trace budget with the cores' stretches, 65 do not
    plan = buffer_plan(256, WIDTH, chunks=60, whole=cores.WHOLE_TRACE_BUDGET)
    assert plan == (60, False, 64 * row, True)
    assert plan.nbytes <= cores.WHOLE_TRACE_BUDGET
    assert buffer_plan(256, WIDTH, chunks=65, whole=cores.WHOLE_TRACE_BUDGET).copy
    assert buffer_plan(256, WIDTH, chunks=60).copy  # no whole-trace budget given


def test_the_whole_trace_budget_is_held_to_half_the_hosts_memory(monkeypatch):
    monkeypatch.setattr(cores, "available_memory", lambda: 1 << 30)
    assert cores.whole_budget() == 1 << 29
    monkeypatch.setattr(cores, "available_memory", lambda: None)
    assert cores.whole_budget() == cores.WHOLE_TRACE_BUDGET


@pytest.mark.parametrize("stack", [None, (16384, 32768)], ids=["plain", "stacks"])
@pytest.mark.parametrize("sched", ["ws", "pdf"])
@pytest.mark.parametrize("mode", ["copied", "row-per-chunk"])
def test_copied_segments_equal_the_oracle(tmp_path, monkeypatch, sched, stack, mode):
    """With a budget that leaves only a few rows, every core copies its segments
    (chunks are decoded, evicted and decoded again), and the replay is the oracle's; so
    is the replay that the whole-trace budget lets hold a row per chunk instead (each
    chunk decoded once, read in place)."""
    # 37-reference chunks: 555 bytes a row, four stretches of one row; in place would
    # need 14 rows, the budget leaves 7
    monkeypatch.setattr(cores, "BUFFER_BUDGET", 6500)
    if mode == "copied":
        monkeypatch.setattr(cores, "WHOLE_TRACE_BUDGET", 0)
    assert buffer_plan(4, 37) == (7, True, 11 * 37 * REF_BYTES, False)
    machine = load_machine(TWO_BY_TWO)
    path = make_trace(tmp_path / "t.sst", seed=5, depth=5, max_refs=60, chunk_refs=37, stack=stack)
    trace = open_trace(path)
    n_chunks = int(trace.index.shape[0])
    assert n_chunks > 14  # more than reading in place would take rows
    cls = get_scheduler(sched)
    mem = MemorySystem(machine)
    res = Engine(trace, machine, cls, {}, 3, mem, window=0).run()
    if mode == "copied":
        assert res.engine["chunk_loads"] > n_chunks
    else:
        assert res.engine["chunk_loads"] == n_chunks
    oracle_mem = MemoryOracle(machine)
    ora = OracleEngine(trace, machine, cls, {}, 3, oracle_mem).run()
    np.testing.assert_array_equal(res.strand_core, ora["strand_core"])
    np.testing.assert_array_equal(res.strand_end, ora["strand_end"])
    np.testing.assert_array_equal(res.private_misses, ora["private_misses"])
    for a, b in zip(mem.stats()["levels"], oracle_mem.stats()["levels"], strict=True):
        for f in ("accesses", "hits", "misses", "writebacks", "invalidations"):
            assert a[f] == b[f], (a["name"], f)


def test_buffers_the_host_cannot_hold_are_refused_up_front(tmp_path, monkeypatch):
    monkeypatch.setattr(cores, "available_memory", lambda: 1000)
    trace = open_trace(make_trace(tmp_path / "t.sst", seed=1))
    machine = load_machine(TWO_BY_TWO)
    with pytest.raises(ConfigError, match=r"^test-2x2: 4 cores need .* the host's available") as e:
        Engine(trace, machine, get_scheduler("ws"), {}, 0, MemorySystem(machine))
    # no chunk size a generator writes (4,096 references and up) fits: no remedy named
    assert "chunk_refs" not in str(e.value)


def test_4096_cores_are_refused_with_the_memory_they_need(tmp_path, capsys):
    """Each core's private stretch (one segment, 224 KiB) is the part that still grows
    with the cores: 4096 of them exceed the budget, whatever the host, and the run says so
    before the memory model is built."""
    path = tmp_path / "ms.sst"
    generate("mergesort", path, n=1 << 15)  # one chunk of 2^20 references
    argv = ["run", "-t", str(path), "-m", "itrs-scaling-16", "-s", "ws"]
    with pytest.raises(SystemExit) as exc:
        main([*argv, "--set", "cores_per_socket=256", "--set", "sockets=16"])
    err = capsys.readouterr().err
    assert exc.value.code == 2 and err.count("\n") == 1
    assert err.startswith(
        "simsched: error: itrs-scaling-16: 4096 cores need 1,050 MiB of trace buffers"
    )
    # the remedy it names: the largest power-of-two chunk size whose buffers fit
    fits = int(re.search(r"chunks of ([\d,]+) references fits", err)[1].replace(",", ""))
    assert cores.buffer_plan(4096, fits).nbytes <= cores.BUFFER_BUDGET
    assert cores.buffer_plan(4096, 2 * fits).nbytes > cores.BUFFER_BUDGET
    assert err.rstrip().endswith(f"(a generator's chunk_refs={fits})")
