"""Multi-job replays: the fast engine against the job-set oracle, invariants per job, the
single job through the job-set path, job-set files and the CLI."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsched.cli import main
from simsched.engine import JobSpec, Replay
from simsched.engine.check import check_invariants
from simsched.engine.controllers import Controller, assign_cores, get_controller
from simsched.errors import ConfigError, PluginError
from simsched.jobset import check_jobset, load_jobset
from simsched.machine import load_machine
from simsched.memory import MemorySystem
from simsched.schedulers import REGISTRY, Scheduler, get_scheduler
from simsched.trace import open_trace
from tests.engine.conftest import iterated_tasks, make_trace
from tests.engine.golden_cases import CASES, GOLDEN, SAMPLES, case_id
from tests.engine.machines import TWO_BY_TWO, out_of_order
from tests.oracles.assign_oracle import assign_cores_naive
from tests.oracles.jobs_oracle import OracleJobs
from tests.oracles.memory_oracle import MemoryOracle


def _specs(tmp_path, arrivals, scheds, seeds=(1, 2, 3, 4)):
    out = []
    for i, (t_arr, name) in enumerate(zip(arrivals, scheds, strict=False)):
        cls = get_scheduler(name)
        tr = open_trace(make_trace(tmp_path / f"j{i}.sst", seed=seeds[i], depth=4, max_refs=50))
        out.append(JobSpec(tr, cls, cls.resolve_params({}), t_arr, f"j{i}"))
    return out


@pytest.mark.parametrize(
    "controller,quantum",
    [("equi", 0), ("static", 0), ("all", 0), ("equi", 777)],
)
def test_fast_engine_equals_job_set_oracle(tmp_path, controller, quantum):
    m = load_machine(TWO_BY_TWO)
    specs = _specs(tmp_path, [0, 150, 1201], ["ws", "pdf", "ws"])
    ctl = get_controller(controller)(m, len(specs), {}, quantum)
    mem = MemorySystem(m)
    fast = Replay(m, specs, controller=ctl, seed=9, window=0, memory=mem).run()
    ora_mem = MemoryOracle(m)
    ctl2 = get_controller(controller)(m, len(specs), {}, quantum)
    ora = OracleJobs(m, specs, ctl2, 9, ora_mem).run()
    for f, o, spec in zip(fast.jobs, ora, specs, strict=True):
        check_invariants(spec.trace, f)
        np.testing.assert_array_equal(f.strand_core, o["strand_core"])
        np.testing.assert_array_equal(f.strand_start, o["strand_start"])
        np.testing.assert_array_equal(f.strand_end, o["strand_end"])
        assert (f.start, f.finish) == (o["start"], o["finish"])
        assert f.counters == o["counters"]
        assert f.core_moves == o["core_moves"]
        assert f.move_cycles == f.core_moves * m.costs.core_move
    if controller == "equi":
        assert fast.reallocations > 0 and fast.core_moves > 0
    stats, ostats = mem.stats(), ora_mem.stats()
    for a, b in zip(stats["levels"], ostats["levels"], strict=True):
        for k in ("accesses", "hits", "misses", "writebacks", "invalidations"):
            assert a[k] == b[k], (a["name"], k)
    assert stats["nodes"] == ostats["nodes"]


@pytest.mark.parametrize("move", [150, 1000])
def test_a_moved_core_starts_its_new_job_core_move_cycles_later(tmp_path, move):
    """Two cores, two WS jobs under EQUI: the second job's arrival takes one core from
    the first; that core's first strand of the new job starts exactly ``core_move``
    cycles later than with free moves (everything before the move is the same run)."""
    spec = {**TWO_BY_TWO, "sockets": 1}
    specs = _specs(tmp_path, [0, 200], ["ws", "ws"])
    got = {}
    for cost in (0, move):
        m = load_machine(spec, {"costs.core_move": cost})
        ctl = get_controller("equi")(m, 2)
        r = Replay(m, specs, controller=ctl, seed=1, window=0, memory=MemorySystem(m)).run()
        b = r.jobs[1]
        assert b.core_moves >= 1 and b.move_cycles == b.core_moves * cost
        assert r.move_cycles == r.core_moves * cost
        got[cost] = (int(b.strand_core[0]), int(b.strand_start[0]), b.start)
    (c0, s0, j0), (c1, s1, j1) = got[0], got[move]
    assert c0 == c1 and j0 == j1  # the same core joined at the same cycle
    assert s1 - s0 == move


def test_a_job_that_finishes_before_the_next_arrives_drops_to_zero_in_the_series(tmp_path):
    """With no other job running, a finished job's cores stayed allotted to it in the
    series until the next arrival's entry (the README's job-set figure drew them)."""
    m = load_machine(TWO_BY_TWO)
    specs = _specs(tmp_path, [0, 10**7], ["ws", "ws"])
    r = Replay(m, specs, controller=get_controller("equi")(m, 2), seed=1, window=0).run()
    first = r.jobs[0].finish
    assert first < 10**7
    cycles = [e[0] for e in r.series]
    assert first in cycles and r.series[cycles.index(first)][1] == [0, 0]
    assert r.series[-1][0] == r.jobs[1].finish and r.series[-1][1] == [0, 0]


class _Answers(Controller):
    """A controller from outside simsched that answers what the test gives it."""

    name = "test-allots"

    def __init__(self, machine, answer):
        super().__init__(machine, 2)
        self.answer = answer

    def allot(self, now, jobs):
        return self.answer([j.jid for j in jobs])


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (lambda jids: None, r"answered None, not a dict by job"),
        (lambda jids: {99: 2}, r"gave cores to 99, which is no active job \(active: \[0, 1\]\)"),
        (lambda jids: {jids[0]: -1}, r"gave job 0 -1: a count of cores >= 0 or a tuple"),
        (lambda jids: {jids[0]: 2.5}, r"gave job 0 2\.5: a count"),
        (lambda jids: {jids[0]: "2"}, r"gave job 0 '2': a count"),
        (lambda jids: {jids[0]: (0, 9)}, r"gave job 0 cores \(0, 9\): cores are integers 0\.\.3"),
        (lambda jids: {j: (0, 1) for j in jids}, r"gave job 1 core 0, also given to job 0"),
    ],
)
def test_a_controllers_nonsense_allotment_names_the_controller(tmp_path, answer, message):
    # Counts of -1, 2.5 or "2" ended in a deadlock message that blamed the jobs, an
    # unknown job or core in an IndexError, and one core given to two jobs went to the
    # later one without a word.
    m = load_machine("itrs-scaling-4")
    specs = _specs(tmp_path, [0, 0], ["ws", "ws"])
    with pytest.raises(PluginError, match=r"^controller 'test-allots' at cycle 0 " + message):
        Replay(m, specs, controller=_Answers(m, answer), window=0, memory=MemorySystem(m)).run()


def test_an_allotment_above_the_machine_is_as_many_cores_as_are_free(tmp_path):
    # a controller passing on the jobs' desires, which may exceed P, ran before its
    # answers were checked (a count beyond the free cores takes them all) and was then
    # refused as "a count of cores 0..4"
    m = load_machine("itrs-scaling-4")
    specs = _specs(tmp_path, [0, 0], ["ws", "ws"])
    runs = {}
    for k in (4, 9):
        ctl = _Answers(m, lambda jids, k=k: {jids[0]: k, **{j: 1 for j in jids[1:]}})
        runs[k] = Replay(m, specs, controller=ctl, window=0, memory=MemorySystem(m)).run()
    assert runs[9].makespan == runs[4].makespan > 0


def test_an_allotment_of_numpy_integers_and_lists_is_taken(tmp_path):
    m = load_machine("itrs-scaling-4")
    specs = _specs(tmp_path, [0, 0], ["ws", "ws"])
    ctl = _Answers(m, lambda jids: {jids[0]: np.int64(2), jids[-1]: [np.int32(2), 3]})
    r = Replay(m, specs, controller=ctl, window=0, memory=MemorySystem(m)).run()
    assert r.makespan > 0


def test_jobs_never_share_a_line(tmp_path):
    """Two copies of one trace: every cache level sees twice the single run's lines."""
    m = load_machine("itrs-scaling-2")
    specs = _specs(tmp_path, [0, 0], ["ws", "ws"], seeds=(5, 5))
    ctl = get_controller("static")(m, 2)
    mem = MemorySystem(m)
    Replay(m, specs, controller=ctl, window=0, memory=mem).run()
    one = MemorySystem(load_machine("itrs-scaling-1"))
    Replay(load_machine("itrs-scaling-1"), specs[:1], window=0, memory=one).run()
    # Cold misses are per job: the first level misses at least twice the single run's
    # cold misses (the jobs' lines are distinct).
    assert mem.stats()["levels"][-1]["misses"] >= 2 * one.stats()["levels"][-1]["misses"] - 2


@pytest.mark.parametrize("case", CASES[:3], ids=[case_id(c) for c in CASES[:3]])
def test_single_job_through_job_sets_matches_golden(tmp_path, case):
    import simsched

    trace, machine, sched, params, seed, window = case
    js = {
        "seed": seed,
        "controller": "all",
        "jobs": [
            {
                "trace": str(SAMPLES / trace),
                "scheduler": sched,
                "scheduler_params": params,
            }
        ],
    }
    res = simsched.run_jobs(js, machine, window=window)
    want = json.loads(GOLDEN.read_text())[case_id(case)]
    job = res.replay.jobs[0]
    h = hashlib.sha256()
    for a in (job.strand_core, job.strand_start, job.strand_end):
        h.update(np.ascontiguousarray(a, dtype=np.int64).tobytes())
    assert h.hexdigest() == want["schedule_sha256"]
    rec = res.record
    for k in ("makespan_cycles", "private_misses", "dram_local", "dram_remote"):
        assert rec[k] == want[k], k
    assert rec["jobs"][0]["steals"] == want["steals"]
    assert {k for k in want if k.endswith("_misses")} <= set(rec)
    for k in want:
        if k.endswith(("_accesses", "_hits", "_misses")):
            assert rec[k] == want[k], k


def test_assign_cores_moves_few_cores_and_keeps_sockets():
    sock = [0, 0, 1, 1]
    out = assign_cores({0: frozenset({0, 1, 2, 3})}, {0: 2, 1: 2}, sock)
    assert out[0] | out[1] == {0, 1, 2, 3} and not out[0] & out[1]
    assert {sock[c] for c in out[1]} == {1}  # the newcomer gets one whole socket
    again = assign_cores({j: frozenset(c) for j, c in out.items()}, {0: 2, 1: 2}, sock)
    assert again == out  # nothing moves when nothing changes


def test_jobset_file_errors(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("jobs:\n  - trace: x.sst\n    colour: red\n")
    with pytest.raises(ConfigError, match=r"jobs\.0\.colour"):
        load_jobset(bad)
    bad.write_text("jobs:\n  - trace: missing.sst\n")
    with pytest.raises(ConfigError, match="missing.sst does not exist"):
        load_jobset(bad)
    bad.write_text("jobs:\n  - generator: fib\n    copies: 2\n    arrival: [0]\n")
    with pytest.raises(ConfigError, match="arrival lists 1 cycles for 2 copies"):
        load_jobset(bad)
    bad.write_text("jobs:\n  - generator: nosuch\n")
    with pytest.raises(ConfigError, match="unknown workload 'nosuch'"):
        load_jobset(bad)


def test_poisson_arrivals_are_seeded(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text(
        f"jobs:\n  - trace: {SAMPLES / 'fib-16-6.valgrind.sst'}\n    copies: 5\n"
        "    arrival: {poisson: {mean: 1000, start: 50}}\n"
    )
    a = [j.arrival for j in load_jobset(f, seed=1).jobs]
    b = [j.arrival for j in load_jobset(f, seed=1).jobs]
    c = [j.arrival for j in load_jobset(f, seed=2).jobs]
    assert a == b != c and a == sorted(a) and a[0] >= 50


def test_cli_jobs_acceptance(tmp_path):
    """4 mergesorts at 0 and 4 fibs by a Poisson process under EQUI: per-job response
    times, utilisation and the allotment series; the same seed gives the same JSON."""
    f = tmp_path / "j.yaml"
    f.write_text(
        "seed: 4\njobs:\n"
        f"  - trace: {SAMPLES / 'mergesort-16384-1024.valgrind.sst'}\n    copies: 4\n"
        f"  - trace: {SAMPLES / 'fib-16-6.valgrind.sst'}\n    copies: 4\n"
        "    arrival: {poisson: {mean: 300000}}\n"
    )
    cmd = [
        sys.executable,
        "-c",
        "import sys; from simsched.cli import main; main(sys.argv[1:])",
        "run",
        "--jobs",
        str(f),
        "--machine",
        "sunfire-x4600-8x4",
        "--controller",
        "equi",
        "--json",
    ]
    outs = []
    for _ in range(2):
        p = subprocess.run(cmd, capture_output=True, text=True, check=True)
        rec = json.loads(p.stdout)
        rec.pop("wall_s")
        outs.append(rec)
    assert outs[0] == outs[1]
    rec = outs[0]
    assert rec["n_jobs"] == 8 and rec["controller"] == "equi"
    assert all(j["response_cycles"] > 0 for j in rec["jobs"])
    assert 0 < rec["utilization"] <= 1
    assert len(rec["allotment"]["cycles"]) == len(rec["allotment"]["cores"]) > 2
    assert all(sum(a) <= 32 for a in rec["allotment"]["cores"])
    fib_arrivals = [j["arrival"] for j in rec["jobs"][4:]]
    assert fib_arrivals == sorted(fib_arrivals) and len(set(fib_arrivals)) == 4
    bad = subprocess.run(cmd[:3] + ["run", "--machine", "x"], capture_output=True, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1


# -- DEQ with the adaptive work stealers ([SAWS12]) -----------------------------------------


@pytest.mark.parametrize("placement", ["sockets", "any"])
def test_fast_engine_equals_job_set_oracle_under_deq(tmp_path, placement):
    """SAWS, A-Steal and WS-EQUI under DEQ with a short quantum: the fast engine and the
    oracle agree strand by strand, counter by counter, desire by desire."""
    m = load_machine(TWO_BY_TWO)
    specs = _specs(tmp_path, [0, 150, 1201], ["saws", "asteal", "ws-equi"])
    ctl = get_controller("deq")(m, len(specs), {"placement": placement}, 311)
    fast = Replay(m, specs, controller=ctl, seed=5, window=0, memory=MemorySystem(m)).run()
    ctl2 = get_controller("deq")(m, len(specs), {"placement": placement}, 311)
    ora = OracleJobs(m, specs, ctl2, 5, MemoryOracle(m)).run()
    for f, o, spec in zip(fast.jobs, ora, specs, strict=True):
        check_invariants(spec.trace, f)
        np.testing.assert_array_equal(f.strand_core, o["strand_core"])
        np.testing.assert_array_equal(f.strand_start, o["strand_start"])
        np.testing.assert_array_equal(f.strand_end, o["strand_end"])
        assert f.counters == o["counters"]
        assert f.core_moves == o["core_moves"]
    assert fast.core_moves > 0
    assert fast.jobs[0].counters["quanta"] > 3
    assert any(d[0] > 1 for _, _, d, _ in fast.series)  # SAWS asked for more than 1 core


class _Recording:
    """Wraps a controller and keeps every decision with the desires it was made on."""

    def __init__(self, ctl):
        self.ctl, self.quantum, self.log = ctl, ctl.quantum, []
        self.uses_desire = ctl.uses_desire

    def allot(self, now, jobs):
        out = self.ctl.allot(now, jobs)
        self.log.append(({j.jid: self.ctl.desire(j) for j in jobs}, dict(out)))
        return out


def _agree_with_oracle(m, specs, controller, quantum=0, seed=3):
    """Replay ``specs`` on the fast engine and the job-set oracle: same schedule, same
    counters, same memory statistics."""
    ctl = get_controller(controller)(m, len(specs), {}, quantum)
    mem = MemorySystem(m)
    fast = Replay(m, specs, controller=ctl, seed=seed, window=0, memory=mem).run()
    ora_mem = MemoryOracle(m)
    ctl2 = get_controller(controller)(m, len(specs), {}, quantum)
    ora = OracleJobs(m, specs, ctl2, seed, ora_mem).run()
    for f, o in zip(fast.jobs, ora, strict=True):
        np.testing.assert_array_equal(f.strand_core, o["strand_core"])
        np.testing.assert_array_equal(f.strand_start, o["strand_start"])
        np.testing.assert_array_equal(f.strand_end, o["strand_end"])
        assert f.counters == o["counters"]
    assert mem.stats()["levels"] == ora_mem.stats()["levels"]


@pytest.mark.parametrize("quantum", [0, 777])
def test_fast_engine_equals_job_set_oracle_out_of_order(tmp_path, quantum):
    """Out-of-order cores (docs/machine-model.md §6.1) in a job set under EQUI: misses in
    flight overlap and delay a strand's end, cores move between jobs between strands;
    the exact replay equals the job-set oracle's."""
    m = load_machine(out_of_order(TWO_BY_TWO, mshrs=2, rob=8))
    specs = []
    for i, (name, arrival) in enumerate([("ws", 0), ("pdf", 150), ("laws", 1201)]):
        path = make_trace(
            tmp_path / f"o{i}.sst", seed=1 + i, depth=4, max_refs=50, chunk_refs=7, dep_share=0.2
        )
        cls = get_scheduler(name)
        specs.append(JobSpec(open_trace(path), cls, cls.resolve_params({}), arrival, f"j{i}"))
    _agree_with_oracle(m, specs, "equi", quantum)


def test_job_set_oracle_gives_every_core_its_own_stack(tmp_path):
    """A trace naming its stack region: in a job set too every core issues the stack
    references in its own copy of the region (docs/engine.md, per-core stacks); the
    oracle once replayed them at the captured addresses on every core."""
    m = load_machine(TWO_BY_TWO)
    specs = []
    for i, name in enumerate(["ws", "pdf"]):
        path = make_trace(tmp_path / f"s{i}.sst", seed=5 + i, depth=4, max_refs=40, stack=(0, 8192))
        cls = get_scheduler(name)
        specs.append(JobSpec(open_trace(path), cls, cls.resolve_params({}), 150 * i, f"j{i}"))
    _agree_with_oracle(m, specs, "equi")


def test_job_set_oracle_profiles_every_strand(tmp_path):
    """LAWS and CATS learn from ``on_profile`` (each strand's private-cache misses and
    instructions, before ``on_finish``); the job-set oracle once never called it, so its
    jobs judged the program memory-bound and packed it on no profile at all."""
    m = load_machine(TWO_BY_TWO)
    specs = []
    for i, name in enumerate(["cats", "laws"]):
        path = iterated_tasks(tmp_path / f"p{i}.sst", instr=100_000)  # CPU-bound
        cls = get_scheduler(name)
        specs.append(JobSpec(open_trace(path), cls, cls.resolve_params({}), 0, f"j{i}"))
    _agree_with_oracle(m, specs, "static")


def test_deq_invariants_in_a_replay(tmp_path):
    """Allotment <= desire, allotments sum to <= P, and no core ever runs two jobs'
    strands at once, for six adaptive jobs arriving over time on four cores."""
    m = load_machine(TWO_BY_TWO)
    arrivals = [0, 0, 300, 900, 1500, 2200]
    scheds = ["saws", "asteal", "ws-equi", "saws", "asteal", "saws"]
    specs = _specs(tmp_path, arrivals, scheds, seeds=(1, 2, 3, 4, 5, 6))
    rec = _Recording(get_controller("deq")(m, len(specs), {}, 257))
    res = Replay(m, specs, controller=rec, seed=3, window=0, memory=MemorySystem(m)).run()
    assert len(rec.log) > 10
    for desires, alloc in rec.log:
        assert all(alloc[j] <= desires[j] for j in alloc)
        assert sum(alloc.values()) <= m.cores
    for _, cores, *_ in res.series:
        assert sum(cores) <= m.cores
    spans: dict[int, list[tuple[int, int]]] = {}
    for o in res.jobs:
        for c, a, b in zip(o.strand_core, o.strand_start, o.strand_end, strict=True):
            spans.setdefault(int(c), []).append((int(a), int(b)))
    for c, iv in spans.items():
        iv.sort()
        assert all(iv[k][1] <= iv[k + 1][0] for k in range(len(iv) - 1)), c


def test_deq_needs_a_quantum_and_starts_at_the_initial_desire(tmp_path):
    import dataclasses

    m = load_machine(TWO_BY_TWO)
    with pytest.raises(ConfigError, match="needs a quantum"):
        get_controller("deq")(m, 2, {}, 0)
    ctl = get_controller("deq")(m, 2, {}, 100)
    specs = _specs(tmp_path, [0, 0], ["saws", "ws-equi"])
    rp = Replay(m, specs, controller=ctl, seed=0, window=0, memory=MemorySystem(m))
    rp.admit(0)
    rp.admit(1)
    views = rp._views()
    # SAWS starts at 1; a job without feedback desires the machine and gets the rest
    assert [v.desire for v in views] == [1, None]
    assert ctl.allot(0, views) == {0: 1, 1: 3}
    # the engine, not the controller, keeps the initial desire (the series shows it)
    assert rp.jobs[0].desire == 1 and rp.jobs[1].desire is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        views[0].desire = 4  # the controller's view is read-only


@pytest.mark.parametrize("arrival", [-5, 2**60 + 1, 2**62, 2**63 - 1, 2**63, 1.5])
def test_a_job_given_directly_arrives_within_2_60_cycles(tmp_path, arrival):
    # The job-set schema bounds arrivals, but a JobSpec (or a JobSet passed to run_jobs)
    # made in Python did not pass it: -5 started at cycle 0, 2^62 (the engine's "never")
    # reported a deadlock, and beyond it the replay raised IndexError.
    m = load_machine(TWO_BY_TWO)
    specs = _specs(tmp_path, [0, arrival], ["ws", "ws"])
    ctl = get_controller("equi")(m, 2, {}, 0)
    with pytest.raises(ConfigError, match=r"job 'j1': arrival"):
        Replay(m, specs, controller=ctl, seed=0, window=0, memory=MemorySystem(m))


@pytest.mark.parametrize("quantum", [2000.5, float("nan"), True, "2000"])
def test_a_controller_quantum_is_an_integer(quantum):
    # int() truncated it: 2000.5 ran as 2000, '2000' as 2000, and NaN raised ValueError
    m = load_machine(TWO_BY_TWO)
    with pytest.raises(ConfigError, match=r"controller 'equi': quantum=.*: expected an integer"):
        get_controller("equi")(m, 2, {}, quantum)
    assert get_controller("equi")(m, 2, {}, np.int64(2000)).quantum == 2000


def _far_arrival(tmp_path, monkeypatch, bound: int) -> None:
    """The quantum process wakes at every boundary while the run waits for the last
    arrival: 2^60 cycles at a quantum of 2000 was 5.8e14 idle wakes, a run that never
    ended.  At most MAX_WAIT_QUANTA quanta; without a quantum the engine jumps there.
    ``bound``: MAX_WAIT_QUANTA for the run (the message is checked with the real one)."""
    from simsched.engine import replay

    m = load_machine(TWO_BY_TWO)
    far = 2**60
    specs = _specs(tmp_path, [0, far], ["ws", "ws"])
    ctl = get_controller("equi")(m, 2, {}, 2000)
    with pytest.raises(ConfigError, match=r"'j1' arrives at cycle 1152921504606846976.*2\^20"):
        Replay(m, specs, controller=ctl, seed=0, window=0, memory=MemorySystem(m))
    monkeypatch.setattr(replay, "MAX_WAIT_QUANTA", bound)
    # the quantum the message asks for is enough (under 2^40, the quantum's own limit)
    far = min(far, bound << 40)
    specs = _specs(tmp_path, [0, far], ["ws", "ws"])
    least = -(-far // bound)
    for q in (0, least):
        ctl = get_controller("equi")(m, 2, {}, q)
        res = Replay(m, specs, controller=ctl, seed=0, window=0, memory=MemorySystem(m)).run()
        assert res.jobs[1].start >= far
    # the bound is on quanta, not cycles: exactly MAX_WAIT_QUANTA quanta is accepted, one
    # more is not
    specs = _specs(tmp_path, [0, 100 * bound], ["ws", "ws"])
    ctl = get_controller("equi")(m, 2, {}, 100)
    Replay(m, specs, controller=ctl, seed=0, window=0, memory=MemorySystem(m))
    specs = _specs(tmp_path, [0, 100 * bound + 100], ["ws", "ws"])
    with pytest.raises(ConfigError, match=r"'j1' arrives"):
        Replay(m, specs, controller=ctl, seed=0, window=0, memory=MemorySystem(m))


def test_a_far_arrival_needs_a_quantum_to_match(tmp_path, monkeypatch):
    # a smaller bound, the same logic: the run at the bound's quantum ticks 2^12 times
    _far_arrival(tmp_path, monkeypatch, 2**12)


@pytest.mark.slow
def test_a_far_arrival_at_the_real_bound_ends(tmp_path, monkeypatch):
    # 2^20 idle wakes of the quantum process: about a minute
    from simsched.engine.replay import MAX_WAIT_QUANTA

    _far_arrival(tmp_path, monkeypatch, MAX_WAIT_QUANTA)


def test_quantum_in_milliseconds(tmp_path):
    from simsched.engine.controllers import quantum_cycles

    m = load_machine("sunfire-x4600-8x4")
    assert m.clock_ghz == 2.7 and quantum_cycles(m, 10) == 27_000_000
    with pytest.raises(ConfigError, match="no clock_ghz"):
        quantum_cycles(load_machine(TWO_BY_TWO), 1)
    f = tmp_path / "q.yaml"
    f.write_text(f"quantum_ms: 0.5\njobs:\n  - trace: {SAMPLES / 'fib-16-6.valgrind.sst'}\n")
    js = load_jobset(f)
    ctl = get_controller("deq")(m, 1, js.controller_params, js.quantum)
    assert ctl.quantum == 1_350_000 and ctl.params["quantum_ms"] == 0.5
    # a quantum in cycles given on top (--quantum) wins
    assert get_controller("deq")(m, 1, js.controller_params, 777).quantum == 777
    f.write_text(
        f"quantum: 5\nquantum_ms: 1\njobs:\n  - trace: {SAMPLES / 'fib-16-6.valgrind.sst'}\n"
    )
    with pytest.raises(ConfigError, match="not both"):
        load_jobset(f)
    f.write_text(f"quantum_ms: -1\njobs:\n  - trace: {SAMPLES / 'fib-16-6.valgrind.sst'}\n")
    with pytest.raises(ConfigError, match="quantum_ms"):
        load_jobset(f)


@pytest.mark.parametrize("ms", [1.7e308, 1e300, 2**40 / 2.7e6 * 1.001])
def test_a_quantum_in_milliseconds_beyond_2_40_cycles_is_one_line(ms):
    # 1.7e308 ms is an infinite number of cycles: round() raised OverflowError (a
    # traceback from `run --quantum-ms` or a controller's quantum_ms); 1e300 ms printed a
    # 300-digit quantum.  Now the bound is checked on the float, naming quantum_ms.
    from simsched.engine.controllers import quantum_cycles

    m = load_machine("sunfire-x4600-8x4")
    with pytest.raises(ConfigError, match=r"quantum_ms=.* cycles at 2.7 GHz, above .* 2\^40"):
        quantum_cycles(m, ms)
    with pytest.raises(ConfigError, match=r"quantum_ms=.*above the limit of 2\^40"):
        get_controller("equi")(m, 1, {"quantum_ms": ms}, 0)
    assert quantum_cycles(m, 2**40 / 2.7e6 * 0.999) <= 2**40


def test_saws_study_job_sets_are_valid():
    """Every job set of experiments/saws passes the schema (without making traces)."""
    import yaml

    from simsched.jobset import JobSetSpec

    study = SAMPLES.parent.parent / "experiments" / "saws"
    files = [study / "fig4.yaml", *sorted((study / "jobsets").glob("*.yaml"))]
    assert len(files) > 40
    for f in files:
        spec = JobSetSpec.model_validate(yaml.safe_load(f.read_text()))
        assert spec.controller == "deq" and (spec.quantum > 0 or spec.quantum_ms)


def test_assign_cores_gives_up_idle_cores_first():
    """A job above its count gives up its idle cores now, not the highest-numbered ones
    (busy cores would only leave when their strands end)."""
    sock = [0, 0, 1, 1]
    out = assign_cores({0: frozenset({0, 1, 2, 3})}, {0: 2}, sock, busy={2, 3})
    assert out[0] == {2, 3}
    # only when too few cores are idle does it give up busy ones
    out = assign_cores({0: frozenset({0, 1, 2, 3})}, {0: 1}, sock, busy={1, 2, 3})
    assert 0 not in out[0] and len(out[0]) == 1


def test_deq_holds_no_core_above_desire_but_leaving_ones():
    """[SAWS12] Fig. 4 program under DEQ: at every entry of the allotment record a job's
    cores minus its ``leaving`` cores (still finishing a strand) are at most its desire,
    and a finished job desires 0 from its finish on."""
    import simsched

    datapar = {"generator": "datapar", "params": {"n": 10, "elems": 1024, "reps": 64}}
    js = {
        "seed": 1,
        "controller": "deq",
        "quantum": 50_000,
        "jobs": [
            {"name": "saws", **datapar, "scheduler": "saws"},
            {"name": "asteal", **datapar, "scheduler": "asteal"},
        ],
    }
    rec = simsched.run_jobs(js, "sunfire-x4600-8x4").record
    a = rec["allotment"]
    above = 0
    for t, cores, desire, leaving in zip(
        a["cycles"], a["cores"], a["desire"], a["leaving"], strict=True
    ):
        for k, job in enumerate(rec["jobs"]):
            if t >= job["finish"]:
                assert desire[k] == 0 and cores[k] == 0
            elif desire[k] >= 0:
                assert cores[k] - leaving[k] <= desire[k], (t, k)
                above += cores[k] > desire[k]
    # cores above desire are few: those still running a strand at a boundary (6 of 22
    # entries on the out-of-order sunfire preset, 5 with blocking cores)
    assert above <= len(a["cycles"]) // 3


def test_placement_any_ignores_sockets():
    """placement=any: a job grows into the lowest free core whatever its socket (sockets:
    into its own socket first); the engine's use is checked against the job-set oracle
    above; a bad value is one error naming the field."""
    socket_of = [0, 0, 1, 1]
    assert assign_cores({0: frozenset({2})}, {0: 2}, socket_of, set()) == {0: frozenset({2, 3})}
    assert assign_cores({0: frozenset({2})}, {0: 2}, [0] * 4, set()) == {0: frozenset({0, 2})}
    m = load_machine(TWO_BY_TWO)
    assert get_controller("deq")(m, 2, {"placement": "any"}, 311).placement == "any"
    with pytest.raises(ConfigError, match="placement='near' is not sockets or any"):
        get_controller("equi")(m, 2, {"placement": "near"})
    # read as every declared choice is: "Any" was refused while spawn_policy took any case
    assert get_controller("equi")(m, 2, {"placement": " Any "}).placement == "any"
    assert (
        get_controller("deq")(m, 2, {"placement": "SOCKETS"}, 311).params.get("placement") is None
    )


@pytest.mark.parametrize("controller", ["equi", "deq"])
@pytest.mark.parametrize("arrivals", [(0, 700, 1000), (0, 300, 1500), (0, 100, 1000, 1100)])
def test_an_arrival_at_a_quantum_boundary_comes_before_the_quantum(tmp_path, controller, arrivals):
    """docs/engine.md §3: at one cycle, job arrivals come before the controller's quantum.
    An arrival that its predecessor scheduled after the quantum had been scheduled (700
    then 1000, quantum 500: the quantum at 1000 was scheduled at 500) once came after it."""
    m = load_machine(TWO_BY_TWO)
    specs = []
    for i, arrival in enumerate(arrivals):
        path = make_trace(tmp_path / f"a{i}.sst", seed=11 + i, depth=3, max_refs=40)
        cls = get_scheduler(["ws-equi", "asteal", "saws", "ws-equi"][i])
        specs.append(JobSpec(open_trace(path), cls, cls.resolve_params({}), arrival, f"j{i}"))
    _agree_with_oracle(m, specs, controller, 500)


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_assign_cores_chooses_the_cores_the_naive_rule_chooses(data):
    """The socket-first choice of a job's next core gives, move for move, the cores the
    rule's plain statement gives (tests/oracles/assign_oracle.py): the lowest free core
    of the socket where the job holds most, then with most free cores."""
    sockets = data.draw(st.integers(1, 5))
    per = data.draw(st.integers(1, 5))
    socket_of = data.draw(
        st.sampled_from([[c // per for c in range(sockets * per)], [0] * (sockets * per)])
    )
    P = len(socket_of)
    jobs = data.draw(st.integers(1, 4))
    owner = data.draw(st.lists(st.integers(-1, jobs - 1), min_size=P, max_size=P))
    current = {j: frozenset(c for c in range(P) if owner[c] == j) for j in range(jobs)}
    targets: dict[int, int | tuple[int, ...]] = {}
    for j in range(data.draw(st.integers(0, jobs + 1))):
        if data.draw(st.booleans()) or j >= jobs:
            targets[j] = data.draw(st.integers(0, P))
        else:
            targets[j] = tuple(sorted(current[j]))  # an explicit allotment keeps its cores
    busy = set(data.draw(st.lists(st.integers(0, P - 1), max_size=P)))
    assert assign_cores(current, targets, socket_of, busy) == assign_cores_naive(
        current, targets, socket_of, busy
    )


class _NoDepart(get_scheduler("ws")):  # type: ignore[misc]
    """Work stealing as a plug-in without ``on_depart`` would be."""

    name = "test-nodepart"
    on_depart = Scheduler.on_depart


def test_a_scheduler_without_on_depart_is_refused_before_a_controller_that_moves_cores(
    tmp_path, monkeypatch, capsys
):
    """It died in the middle of the run with the protocol's NotImplementedError, at a cycle
    that depended on the arrivals."""
    m = load_machine("itrs-scaling-4")
    specs = _specs(tmp_path, [0, 5000], ["ws", "ws"])
    moved = [replace(s, scheduler=_NoDepart) if i == 0 else s for i, s in enumerate(specs)]
    message = (
        r"^scheduler 'test-nodepart' cannot lose cores while its job runs \(it has no "
        r"on_depart\), and controller 'equi' may take them: run it under a controller that "
        r"keeps a job's cores \(all, static\)$"
    )
    with pytest.raises(ConfigError, match=message):
        Replay(m, moved, controller=get_controller("equi")(m, 2))
    # controllers that keep a running job's cores, and EQUI of one job, run it as ws
    for ctl, jobs in (("all", moved), ("static", moved), ("equi", moved[:1])):
        ref = [replace(s, scheduler=get_scheduler("ws")) for s in jobs]
        runs = [
            Replay(m, js, controller=get_controller(ctl)(m, len(js)), window=0).run()
            for js in (jobs, ref)
        ]
        assert runs[0].makespan == runs[1].makespan
    # through a job-set file: one line naming the file, exit 2, before any replay
    monkeypatch.setitem(REGISTRY, "test-nodepart", _NoDepart)
    jobs = tmp_path / "jobs.yaml"
    jobs.write_text(
        "controller: equi\njobs:\n  - trace: j0.sst\n    scheduler: test-nodepart\n    copies: 2\n"
    )
    with pytest.raises(ConfigError, match=f"^{jobs}: scheduler 'test-nodepart' cannot lose"):
        check_jobset(jobs, machine=m)
    with pytest.raises(SystemExit) as exit_info:
        main(["run", "--jobs", str(jobs), "-m", "itrs-scaling-4"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.count("\n") == 1
    assert f"{jobs}: scheduler 'test-nodepart' cannot lose cores" in err
