"""Per-socket fields of the result record and the straggler socket ([LAWS15] Table IV)."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np

from simsched.engine.record import socket_fields
from simsched.machine import load_machine
from tests.engine.machines import TWO_BY_TWO


def _stats(misses, local, remote):
    inst = [{"misses": m} for m in misses]
    return {
        "levels": [
            {"name": "L1", "scope": "core", "instances": []},
            {"name": "L2", "scope": "socket", "instances": inst},
        ],
        "sockets": [{"mem_local": a, "mem_remote": b} for a, b in zip(local, remote, strict=True)],
    }


def test_straggler_is_the_busiest_socket_hand_worked():
    m = load_machine(TWO_BY_TWO)  # cores 0, 1 on socket 0; 2, 3 on socket 1
    r = SimpleNamespace(
        busy_cycles=np.array([10, 20, 25, 6]),
        strand_core=np.array([0, 1, 2, 3, 1]),
        strand_end=np.array([5, 40, 30, 31, 12]),
    )
    f = socket_fields(r, _stats([7, 9], [100, 80], [3, 50]), m)
    assert json.loads(f["busy_by_socket"]) == [30, 31]
    assert json.loads(f["finish_by_socket"]) == [40, 31]
    assert json.loads(f["shared_misses_by_socket"]) == [7, 9]
    assert f["shared_level"] == "L2"
    assert f["straggler_socket"] == 1
    assert (f["straggler_busy_cycles"], f["straggler_shared_misses"]) == (31, 9)
    assert (f["straggler_dram_local"], f["straggler_dram_remote"]) == (80, 50)


def test_ties_go_to_the_lowest_socket_and_no_shared_level():
    m = load_machine(TWO_BY_TWO)
    r = SimpleNamespace(
        busy_cycles=np.array([5, 5, 5, 5]),
        strand_core=np.zeros(0, dtype=np.int64),
        strand_end=np.zeros(0, dtype=np.int64),
    )
    stats = _stats([1, 2], [0, 0], [0, 0])
    stats["levels"] = stats["levels"][:1]
    f = socket_fields(r, stats, m)
    assert f["straggler_socket"] == 0 and f["shared_level"] == ""
    assert json.loads(f["shared_misses_by_socket"]) == [0, 0]
