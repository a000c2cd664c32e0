"""``simsched calibrate``: hand-worked figures on small machines, and the command line."""

from __future__ import annotations

import json

import pytest

from simsched.cli import main
from simsched.machine import load_machine
from simsched.memory.calibrate import _bandwidth, calibrate


def small(**memory) -> object:
    """Two sockets x 4 cores, one 1 KB L1 (hit 2 cycles), 1 GHz."""
    return load_machine(
        {
            "name": "small-2x4",
            "sockets": 2,
            "cores_per_socket": 4,
            "clock_ghz": 1.0,
            "caches": [
                {
                    "name": "L1",
                    "scope": "core",
                    "size": 1024,
                    "assoc": 2,
                    "line": 64,
                    "hit_latency": 2,
                },
            ],
            "memory": {"latency": 100, "remote_latency": 60, "service_interval": 10, **memory},
        }
    )


def rows(res: dict) -> dict[str, dict]:
    return {r["metric"]: r for r in res["rows"]}


def test_pointer_chase_is_the_memory_latency():
    r = rows(calibrate(small()))
    # Every line is a compulsory miss: latency, plus the remote penalty on node 1.
    assert r["latency_local_ns"]["simulated"] == 100.0
    assert r["latency_remote_ns"]["simulated"] == 160.0


def test_one_core_triad_by_hand():
    # Per 8 elements (192 STREAM bytes): three line misses of 100 cycles and nine 16-byte
    # hits of 2 cycles; write-backs occupy the idle controller without delaying the core.
    bw, _ = _bandwidth(small(), "triad", [0], None)
    assert bw == pytest.approx(192 / (3 * 100 + 9 * 2))


def test_saturated_controller_bounds_a_socket():
    # Four cores on one node whose controller takes 200 cycles per line: every 4 line
    # transfers (3 fetches, 1 write-back) carry 192 STREAM bytes, so at most 48 B / 200 cyc.
    m = small(service_interval=200)
    bw, traffic = _bandwidth(m, "triad", [0, 1, 2, 3], None)
    assert bw == pytest.approx(48 / 200, rel=0.05)
    # The controller itself runs at its peak: a 64-byte line per 200 cycles.
    assert traffic == pytest.approx(64 / 200, rel=0.05)
    # Two sockets have two controllers.
    assert _bandwidth(m, "triad", list(range(8)), None)[0] == pytest.approx(2 * bw, rel=0.02)


def test_remote_read_pays_the_remote_latency():
    m = small()
    local = _bandwidth(m, "read", [0], None)[0]
    remote = _bandwidth(m, "read", [0], 1)[0]
    # Per line: 8 bytes x 8 elements over one miss and three 16-byte hits.
    assert local == pytest.approx(64 / (100 + 3 * 2))
    assert remote == pytest.approx(64 / (160 + 3 * 2))


def test_out_of_order_core_streams_faster():
    """With misses in flight, one core's triad is no longer one line per latency: eight
    MSHRs let it reach at least 3x that (issue 21's criterion), up to the controller."""
    spec = {"core": {"model": "out-of-order", "mshrs": 8, "rob": 72}}
    base = small()
    ooo = load_machine({**base.as_dict(), **spec})
    per_latency = 64 / 100
    assert _bandwidth(ooo, "triad", [0], None)[0] >= 3 * per_latency
    assert _bandwidth(base, "triad", [0], None)[0] < per_latency


def test_deterministic():
    assert calibrate(small()) == calibrate(small())


def test_cli_json_rows_have_sources(capsys):
    with pytest.raises(SystemExit) as info:
        main(["calibrate", "--machine", "opteron-8380-4x4", "--json"])
    assert info.value.code in (0, None)
    res = json.loads(capsys.readouterr().out)
    assert res["machine"] == "opteron-8380-4x4"
    r = rows(res)
    for metric in (
        "latency_local_ns",
        "latency_remote_ns",
        "bandwidth_core_GBps",
        "bandwidth_socket_GBps",
        "bandwidth_machine_GBps",
    ):
        assert set(r[metric]) == {"metric", "unit", "simulated", "published", "source"}
        assert r[metric]["source"]
    assert r["dram_socket_GBps"]["published"] == 12.8
    # The model's local latency is the preset's 200 cycles at 2.5 GHz (a little less: the
    # L1 prefetcher catches the few random-order neighbours of the chase).
    assert r["latency_local_ns"]["simulated"] == pytest.approx(80.0, rel=0.01)


def test_cli_machine_without_clock(capsys, tmp_path):
    with pytest.raises(SystemExit) as info:
        main(["calibrate", "--machine", "itrs-scaling-4"])
    assert info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "clock_ghz" in err
    # a file is named as given, not by the machine name inside it
    path = tmp_path / "mine.yaml"
    path.write_text(json.dumps({**load_machine("itrs-scaling-4").as_dict(), "name": "t"}))
    with pytest.raises(SystemExit) as info:
        main(["calibrate", "--machine", str(path)])
    err = capsys.readouterr().err.strip()
    assert info.value.code == 2 and err.startswith(f"simsched: error: {path}: clock_ghz"), err


def test_cli_table_caption_names_the_calibration_section(capsys, monkeypatch):
    import re
    from pathlib import Path

    fake = {
        "machine": "m",
        "rows": [
            {"metric": "x", "unit": "ns", "simulated": 1.0, "published": None, "source": "none"}
        ],
    }
    monkeypatch.setattr("simsched.memory.calibrate.calibrate", lambda m: fake)
    with pytest.raises(SystemExit) as info:
        main(["calibrate", "--machine", "opteron-8380-4x4"])
    assert info.value.code in (0, None)
    out = " ".join(capsys.readouterr().out.split())  # the caption wraps at the table's width
    section = re.search(r"docs/machine-model\.md §(\d+)", out).group(1)
    doc = (Path(__file__).parents[2] / "docs" / "machine-model.md").read_text(encoding="utf-8")
    assert re.search(rf"^## {section}\. Calibration: `simsched calibrate`$", doc, re.M)


def test_cli_refuses_caches_larger_than_the_host_before_running(capsys, monkeypatch):
    """As memsim and run do: the benchmarks allocated the caches' state and failed (or
    were killed) in the middle instead."""
    ran = []
    monkeypatch.setattr("simsched.memory.calibrate.calibrate", lambda m: ran.append(m))
    monkeypatch.setattr("simsched.machine.resources.available_bytes", lambda: 1 << 20)
    with pytest.raises(SystemExit) as info:
        main(["calibrate", "--machine", "opteron-8380-4x4"])
    assert info.value.code == 2 and not ran
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "opteron-8380-4x4: simulating its caches needs about" in err


@pytest.mark.parametrize("published", [None, 2.0])
def test_cli_table_without_published_figures_has_the_simulated_column_only(
    capsys, monkeypatch, published
):
    """docs/machine-model.md §11: a machine without figures gets the simulated column
    only; it got three columns of dashes and "no published figure recorded" on every row."""
    fake = {
        "machine": "m",
        "rows": [
            {"metric": "x", "unit": "ns", "simulated": 1.0, "published": published, "source": "S"},
            {"metric": "y", "unit": "ns", "simulated": 3.0, "published": None, "source": "T"},
        ],
    }
    monkeypatch.setattr("simsched.memory.calibrate.calibrate", lambda m: fake)
    with pytest.raises(SystemExit) as info:
        main(["calibrate", "--machine", "opteron-8380-4x4"])
    assert info.value.code in (0, None)
    lines = capsys.readouterr().out.splitlines()
    header = [c.strip() for c in next(ln for ln in lines if "metric" in ln).split("┃")[1:-1]]
    row = [c.strip() for c in next(ln for ln in lines if "│ y " in ln).split("│")[1:-1]]
    if published is None:
        assert header == ["metric", "unit", "simulated"] and row == ["y", "ns", "3.00"]
    else:
        assert header == ["metric", "unit", "simulated", "published", "sim/pub", "source"]
        assert row == ["y", "ns", "3.00", "—", "—", "T"]
