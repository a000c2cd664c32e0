"""The engine's facts service: what CAB measures of a whole program, made before the loop."""

from __future__ import annotations

import numpy as np
import pytest

from simsched.engine import JobSpec, Replay
from simsched.engine.controllers import get_controller
from simsched.engine.facts import TraceFacts
from simsched.errors import ConfigError
from simsched.machine import load_machine
from simsched.memory import MemorySystem
from simsched.schedulers import get_scheduler
from simsched.schedulers.base import SchedContext
from simsched.trace import open_trace
from tests.engine.machines import TWO_BY_TWO
from tests.schedulers.test_cab import tree_trace


@pytest.fixture
def tree(tmp_path):
    with open_trace(tree_trace(tmp_path / "tree.sst", depth=3, b=2)) as t:
        yield t


def test_cab_names_the_facts_its_parameters_need(tree):
    cab = get_scheduler("cab")
    m = load_machine(TWO_BY_TWO)
    one = load_machine({**TWO_BY_TWO, "name": "one", "sockets": 1})

    def want(machine=m, **params):
        return cab.wanted_facts(cab.resolve_params(params), tree, machine)

    assert want() == ("footprint_bytes", "one_core_miss_intensity")
    assert want(data_bytes=1 << 20) == ("one_core_miss_intensity",)
    assert want(cpu_bound="no") == ("footprint_bytes",)
    assert want(bl=2) == ("footprint_bytes",)  # for bl_eq4, what Eq. 4 would choose
    assert want(one) == ("footprint_bytes",)  # one socket: no CPU-bound measurement
    assert get_scheduler("ws").wanted_facts({}, tree, m) == ()


def test_a_cab_job_arriving_mid_run_finds_its_facts_measured(tree, monkeypatch):
    """Measured when the replay is built; nothing is measured inside the event loop, and
    the late job's boundary level is the one a job of its own gets."""
    m = load_machine(TWO_BY_TWO)
    ws, cab = get_scheduler("ws"), get_scheduler("cab")
    specs = [JobSpec(tree, ws, {}, 0, "early"), JobSpec(tree, cab, {}, 5000, "late")]
    rp = Replay(m, specs, controller=get_controller("all")(m, 2), window=0, memory=MemorySystem(m))
    assert set(rp.facts[1]._memo) == {"footprint_bytes", "one_core_miss_intensity"}
    assert rp.facts[0]._memo == {}

    def no_measuring(*a, **k):
        raise AssertionError("measured inside the event loop")

    monkeypatch.setattr("simsched.engine.facts.trace_footprint_bytes", no_measuring)
    monkeypatch.setattr("simsched.engine.facts.one_core_miss_intensity", no_measuring)
    res = rp.run()
    monkeypatch.undo()
    late = res.jobs[1]
    assert late.start >= 5000
    alone = Replay(m, [JobSpec(tree, cab, {}, 0)], window=0, memory=MemorySystem(m)).run()
    assert late.sched_fields == alone.jobs[0].sched_fields
    assert late.sched_fields["bl_miss_intensity"] == pytest.approx(
        rp.facts[1].one_core_miss_intensity()["intensity"]
    )


def test_facts_are_cached_by_content(tree, tmp_path, monkeypatch):
    # a private folder for the facts only (the compiled kernels stay in the shared cache)
    monkeypatch.setattr("simsched.engine.facts.cache_dir", lambda *p: tmp_path.joinpath("c", *p))
    m = load_machine(TWO_BY_TWO)
    a = TraceFacts(tree, m)
    first = a.one_core_miss_intensity()
    assert len(list((tmp_path / "c" / "cab").glob("intensity-*.json"))) == 1
    monkeypatch.setattr(
        "simsched.memory.replay.replay_trace", lambda *a, **k: pytest.fail("replayed again")
    )
    # another object, another machine differing only in scheduling costs: read back
    cheap = load_machine(TWO_BY_TWO, {"costs.steal_attempt": 1})
    assert TraceFacts(tree, cheap).one_core_miss_intensity() == first
    with pytest.raises(ConfigError, match="unknown scheduler fact 'nope'"):
        a.prepare(["nope"])


def test_the_intensity_is_cached_under_the_timing_models_code(tree, tmp_path, monkeypatch):
    """An edited memory model measures again: before, a cache filled by other code gave its
    misses (and so CAB's CPU-bound choice) to a run whose record named the new code."""
    monkeypatch.setattr("simsched.engine.facts.cache_dir", lambda *p: tmp_path.joinpath("c", *p))
    m = load_machine(TWO_BY_TWO)
    first = TraceFacts(tree, m).one_core_miss_intensity()
    monkeypatch.setattr("simsched.identity.timing_model_identity", lambda: "edited")
    monkeypatch.setattr(
        "simsched.memory.replay.replay_trace",
        lambda *a, **k: {"levels": [{"scope": "core", "misses": 7}], "refs": 7},
    )
    again = TraceFacts(tree, m).one_core_miss_intensity()
    assert again["misses"] == 7 != first["misses"]
    assert len(list((tmp_path / "c" / "cab").glob("intensity-*.json"))) == 2


def test_a_context_without_the_engine_refuses_facts(tree):
    m = load_machine(TWO_BY_TWO)
    ctx = SchedContext(m, range(m.cores), tree, lambda n, cores: None)
    with pytest.raises(ConfigError, match="no facts service"):
        ctx.facts.footprint_bytes()
    with pytest.raises(ConfigError, match="no facts service"):
        get_scheduler("cab")(ctx, {}, np.random.default_rng(0))
