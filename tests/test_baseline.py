"""simsched.baseline: the one-core baseline of ``speedup``, its cache and its checks."""

from __future__ import annotations

import json
import math

import pytest

import simsched
from simsched import identity
from simsched.baseline import (
    Baseline,
    baseline_estimate,
    baseline_makespan,
    baseline_path,
    speedup_interval,
)
from simsched.errors import ConfigError
from simsched.machine import load_machine
from simsched.workloads import generate
from tests.conftest import private_cache


@pytest.fixture(scope="module")
def ms_trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("ms") / "ms.sst"
    generate("mergesort", path, n=16384, grain=512)
    return path


def _clear() -> None:
    identity.source_identity.cache_clear()
    identity.timing_model_identity.cache_clear()


def test_the_api_still_exports_the_baseline():
    from simsched import api

    assert api.baseline_makespan is baseline_makespan
    assert api.baseline_path is baseline_path


def test_speedup_baseline_is_cached(ms_trace, tmp_path):
    r1 = simsched.run(ms_trace, "itrs-scaling-4", "pdf")
    path = baseline_path(r1.record["trace_digest"], load_machine("itrs-scaling-4"))
    base = json.loads(path.read_text())["makespan_cycles"]
    assert r1.record["baseline_makespan_cycles"] == base
    # The 1-core PDF run of the same machine equals the baseline (no scheduling costs there).
    r = simsched.run(
        ms_trace, "itrs-scaling-4", "pdf", overrides={"cores_per_socket": 1, "costs.queue_op": 0}
    )
    assert r.record["makespan_cycles"] == base


def test_baseline_makespan_checks_its_machine_and_sampling(ms_trace):
    """Before: AttributeError ('str' object has no attribute 'as_dict') for a preset name,
    ValueError for sample_iterations=nan; a window of any type was accepted."""
    with pytest.raises(ConfigError, match="^machine='itrs-scaling-2': expected a Machine"):
        baseline_makespan(ms_trace, "itrs-scaling-2")
    m = load_machine("itrs-scaling-2")
    with pytest.raises(ConfigError, match="^sample_iterations=nan: expected an integer"):
        baseline_makespan(ms_trace, m, sample_iterations=float("nan"))
    with pytest.raises(ConfigError, match=r"^window=\[1\]: expected an integer"):
        baseline_makespan(ms_trace, m, window=[1])


def test_sampled_baselines_of_different_precisions_are_kept_apart(tmp_path, monkeypatch):
    """Two precisions that agree in six digits shared one cached file (its name used
    ``:g``), so a run's speedup depended on which had run first; and a file is used only
    for the sampling it was made with."""
    m = load_machine("itrs-scaling-2")
    a = baseline_path("d" * 32, m, 3, 0.0003760104)
    b = baseline_path("d" * 32, m, 3, 0.0003760103)
    assert a != b and a.name.endswith("-s3p0.0003760104.json")
    assert baseline_path("d" * 32, m, 3, 0.01).name.endswith("-s3p0.01.json")  # as before
    monkeypatch.setenv("SIMSCHED_CACHE_DIR", str(private_cache(tmp_path / "cache")))
    trace = tmp_path / "fib.sst"
    h = generate("fib", trace, n=10)
    path = baseline_path(h.digest, m)
    path.parent.mkdir(parents=True, exist_ok=True)
    made = {"makespan_cycles": 123, "sample_iterations": 3, "sample_precision": 0.5}
    path.write_text(json.dumps(made))  # another sampling's answer under this name
    assert baseline_makespan(trace, m) != 123
    assert json.loads(path.read_text())["sample_iterations"] == 0  # made again


def test_a_commit_that_leaves_the_timing_model_alone_keeps_the_cached_baseline(monkeypatch):
    # Every commit changes the version; a baseline costs a whole one-core run, so its cache
    # key must follow the timing model's source, not the version.
    machine = load_machine("itrs-scaling-2")
    _clear()
    try:
        path = baseline_path("0" * 64, machine)
        monkeypatch.setattr(identity, "version", lambda: "9.9.9.dev1+gabcdef0")
        _clear()
        assert baseline_path("0" * 64, machine) == path
    finally:
        _clear()


def test_changing_the_timing_model_invalidates_the_cached_baseline(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMSCHED_CACHE_DIR", str(private_cache(tmp_path / "cache")))
    trace = tmp_path / "fib.sst"
    h = generate("fib", trace, n=10)
    machine = load_machine("itrs-scaling-2")
    real = baseline_makespan(trace, machine)
    path = baseline_path(h.digest, machine)
    cached = json.loads(path.read_text())
    assert cached["makespan_cycles"] == real
    assert cached["timing_model"] == identity.timing_model_identity()
    # A cache hit returns what the file says, so a stale file would be believed ...
    path.write_text(json.dumps({**cached, "makespan_cycles": real + 12345}))
    assert baseline_makespan(trace, machine) == real + 12345
    # ... but a different timing model never looks at it: new key, recomputed value.
    monkeypatch.setattr(identity, "timing_model_identity", lambda: "an-edited-timing-model")
    assert baseline_path(h.digest, machine) != path
    assert baseline_makespan(trace, machine) == real


def test_speedup_interval_combines_the_two_estimates_on_the_log_scale():
    """A sampled run divides a sampled baseline: both are estimates, independent (replays
    of different machines), so their half-widths add in quadrature on the log scale."""
    b = Baseline(1000, 900, 1100, True)
    lo, hi = speedup_interval(b, 100, 95.0, 105.0)
    half = math.hypot(math.log(1100 / 900) / 2, math.log(105 / 95) / 2)
    assert (lo, hi) == pytest.approx((10 * math.exp(-half), 10 * math.exp(half)), rel=1e-12)
    assert lo < 1100 / 105 and hi > 900 / 95  # wider than either's interval alone
    exact = Baseline(1000, 1000, 1000, False)
    assert speedup_interval(exact, 100, 100, 100) == (10.0, 10.0)
    # the run's interval alone where the baseline has none (one core's iterations agree)
    lo, hi = speedup_interval(exact, 100, 95.0, 105.0)
    assert (lo, hi) == pytest.approx((10 / math.sqrt(105 / 95), 10 * math.sqrt(105 / 95)))
    assert speedup_interval(b, 0, 0, 0) == (0.0, 0.0)
    assert speedup_interval(b, 100, -5.0, 205.0) == (0.0, math.inf)  # reaches zero


def test_a_sampled_baseline_keeps_its_interval_in_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMSCHED_CACHE_DIR", str(private_cache(tmp_path / "cache")))
    trace = tmp_path / "heat.sst"
    h = generate("heat", trace, nx=34, ny=10, cutoff=8, iters=12, init=False)
    m = load_machine("itrs-45nm-4")
    got = baseline_estimate(trace, m, sample_iterations=2, sample_precision=0)
    assert got.sampled and got.lo <= got.makespan <= got.hi
    assert baseline_makespan(trace, m, sample_iterations=2, sample_precision=0) == got.makespan
    path = baseline_path(h.digest, m, 2, 0)
    cached = json.loads(path.read_text())
    assert (cached["makespan_ci95"], cached["sampled"]) == ([got.lo, got.hi], True)
    path.write_text(json.dumps({**cached, "makespan_ci95": [1, 2]}))
    assert baseline_estimate(trace, m, sample_iterations=2, sample_precision=0).lo == 1
    # a file without the interval (written before version 2) is made again
    del cached["makespan_ci95"]
    path.write_text(json.dumps(cached))
    assert baseline_estimate(trace, m, sample_iterations=2, sample_precision=0) == got
    detailed = baseline_estimate(trace, m)
    assert (detailed.lo, detailed.hi, detailed.sampled) == (
        detailed.makespan,
        detailed.makespan,
        False,
    )
