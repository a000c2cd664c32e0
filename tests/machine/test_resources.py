"""The up-front memory estimate refuses machines whose simulated caches cannot fit."""

from __future__ import annotations

import pytest

from simsched.errors import ConfigError
from simsched.machine import load_machine, resources


def test_state_bytes_counts_every_cache_instance():
    m = load_machine("itrs-scaling-4", {"sockets": 2})
    expected = sum(
        (m.cores if c.scope == "core" else m.sockets) * (c.size // c.line) * 8 for c in m.caches
    )
    assert resources.state_bytes(m) == expected
    big = load_machine("itrs-scaling-4", {"caches.L2.size": "64GB"})
    assert resources.state_bytes(big) >= 64 * 2**30 // big.level("L2").line * 8


def test_check_fits_refuses_in_one_line(monkeypatch):
    monkeypatch.setattr(resources, "available_bytes", lambda: 2 * 2**30)
    resources.check_fits(load_machine("itrs-scaling-16"))
    big = load_machine("itrs-scaling-4", {"caches.L2.size": "64GB"})
    with pytest.raises(ConfigError, match=r"^big: simulating its caches needs about 4\.0 GB"):
        resources.check_fits(big, "big")


def test_cli_and_sweep_check_before_running(monkeypatch, capsys, tmp_path):
    from simsched.cli import main

    monkeypatch.setattr(resources, "available_bytes", lambda: 2**30)
    spec = tmp_path / "s.yaml"
    spec.write_text(
        "name: s\nworkloads: [{generator: fib, params: {n: 8}}]\nschedulers: [ws]\n"
        "machines: [{name: itrs-scaling-4, overrides: {caches.L2.size: 32GB}}]\n"
    )
    for args in (
        ["sweep", "run", str(spec), "--workers", "0"],
        [
            "run",
            "-t",
            str(tmp_path / "x.sst"),
            "-m",
            "itrs-scaling-4",
            "--set",
            "caches.L2.size=32GB",
        ],
    ):
        with pytest.raises(SystemExit) as info:
            main(args)
        err = capsys.readouterr().err.strip()
        assert info.value.code == 2 and "needs about 2.0 GB" in err and "\n" not in err
    assert not (tmp_path / "results").exists()


def test_api_run_checks_before_reading_the_trace(monkeypatch, tmp_path):
    import simsched

    monkeypatch.setattr(resources, "available_bytes", lambda: 2**30)
    for call in (
        lambda: simsched.run(
            tmp_path / "x.sst", "itrs-scaling-4", "ws", overrides={"caches.L2.size": "32GB"}
        ),
        lambda: simsched.compare(
            tmp_path / "x.sst", "itrs-scaling-4", ["ws"], overrides={"caches.L2.size": "32GB"}
        ),
    ):
        with pytest.raises(ConfigError, match="needs about 2.0 GB"):
            call()
