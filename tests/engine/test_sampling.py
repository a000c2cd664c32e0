"""Steady-state sampling (``run --sample-iterations``): stopping, extrapolation, records,
the sweep key and the CLI's refusals."""

from __future__ import annotations

import json
import re
import textwrap

import numpy as np
import pytest

import simsched
from simsched.cli import main
from simsched.engine.sampled import DEFAULT_SAMPLE_PRECISION, resample
from simsched.engine.sampling import IterationSampler, iteration_ends, iteration_weights
from simsched.errors import ConfigError
from simsched.experiments.spec import load_spec
from simsched.trace import open_trace
from simsched.workloads import generate
from tests.engine.machines import TWO_BY_TWO

ITERS = 16


@pytest.fixture(scope="module")
def heat(tmp_path_factory):
    p = tmp_path_factory.mktemp("sampling") / "heat.sst"
    generate("heat", p, nx=66, ny=10, cutoff=4, iters=ITERS, init=False)
    return p


def _run(trace, scheduler, k=None, precision=0):
    return simsched.run(
        trace,
        TWO_BY_TWO,
        scheduler,
        speedup=False,
        sample_iterations=k,
        **({} if k is None else {"sample_precision": precision}),
    ).record


def test_progress_of_a_sampled_run_ends_where_the_replay_stopped(heat, capsys):
    """The last progress line said "done, 100.0 %" of a replay that stopped after a few
    of the trace's iterations."""
    rec = simsched.run(heat, TWO_BY_TWO, "ws", speedup=False, progress=True,
                       sample_iterations=2, sample_precision=0).record  # fmt: skip
    assert rec["sampled"] is True and rec["detailed_iterations"] < ITERS
    last = capsys.readouterr().err.strip().splitlines()[-1]
    share = float(last.split("done, ")[1].split(" %")[0])
    assert 0 < share < 100 * (rec["detailed_iterations"] + 1) / ITERS
    simsched.run(heat, TWO_BY_TWO, "ws", speedup=False, progress=True)
    assert "done, 100.0 %" in capsys.readouterr().err


@pytest.mark.parametrize("scheduler", ["ws", "laws"])
def test_the_rule_replayed_on_a_detailed_run_gives_the_sampled_run(heat, scheduler):
    """A sampled replay is the detailed one up to where it stops: ``resample`` of the
    detailed run's iteration ends (with the sampled run's ``settled_at``, the policy's own
    answer) gives the sampled record's makespan, interval and detailed iterations to the
    cycle, for exactly K samples and for a precision that takes more."""
    full = _run(heat, scheduler)
    with open_trace(heat) as t:
        weights = iteration_weights(t)
    ends = json.loads(full["iteration_ends"])
    seen = []
    for k, precision in [(2, 0), (3, 0), (2, 0.5), (3, 2.0), (2, 0.05)]:
        rec = _run(heat, scheduler, k, precision)
        # the sampled run's epilogue is its estimate (instructions x CPI): given as such
        epi = rec["epilogue_cycles"] if rec["sampled"] else full["epilogue_cycles"]
        got = resample(ends, max(rec["settled_at"], 1), k, precision, weights, epi)
        est = got.estimate
        assert (got.sampled, got.detailed) == (rec["sampled"], rec["detailed_iterations"])
        if scheduler == "ws":  # no tuning: where it settles is read from the ends alike
            assert resample(ends, None, k, precision, weights, epi) == got
        assert [est.makespan, est.lo, est.hi] == [
            rec["makespan_cycles"],
            *json.loads(rec["makespan_ci95"]),
        ]
        seen.append(got.detailed)
    assert len(set(seen)) > 2, seen  # K and the precision chose different stops


def test_the_resample_example_of_the_docs_runs(heat, capsys, monkeypatch):
    """docs/engine.md §7 shows how to try the rule's settings on one's own detailed run:
    its code block, run as written on a small heat, prints what the sampled run would."""
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[2] / "docs" / "engine.md").read_text()
    block = re.search(r"```python\n(\s*import simsched\n.*?resample.*?)```", doc, re.S)
    assert block is not None
    monkeypatch.chdir(heat.parent)
    exec(textwrap.dedent(block.group(1)), {})  # noqa: S102 - the docs' own example
    sampled, detailed, makespan, lo, hi = capsys.readouterr().out.split()
    assert sampled in ("True", "False") and int(lo) <= int(makespan) <= int(hi)
    assert 0 < int(detailed) <= ITERS


def test_resample_leaves_nothing_out_where_the_sampler_would_not():
    ends = [10, 20, 30, 40, 50, 60]
    got = resample(ends, 1, 5)  # the samples would reach the last iteration
    assert not got.sampled and got.detailed == 6
    assert (got.estimate.makespan, got.estimate.lo, got.estimate.hi) == (60, 60, 60)
    got = resample(ends, 1, 4)  # iterations 1-4 sampled, the sixth extrapolated
    assert got.sampled and got.detailed == 5 and got.estimate.makespan == 60
    # a precision that no sample count meets replays every iteration
    assert not resample([10, 25, 31, 52, 60, 81], 1, 2, precision=0.01).sampled
    assert resample(json.dumps(ends), 1, 4) == got  # a record's field as JSON text
    # a policy without tuning: settled at the third iteration, not 2 % cheaper than the
    # second (rates 10, 10, 10, ...): samples from iteration 3 on
    assert resample(ends, None, 2).detailed == 5
    assert not resample([100, 150, 190, 230], None, 2).sampled  # too few left
    bad_ends = [[], "[]", "x", [[1, 2]], [10, 5, 20], ["a"], None]
    for bad in [dict(ends=e) for e in bad_ends] + [
        dict(k=1),
        dict(settled_at=0),
        dict(weights=[1, 2]),
    ]:
        with pytest.raises(ConfigError):
            resample(**{"ends": ends, "settled_at": 1, "k": 2, **bad})


@pytest.mark.parametrize("scheduler", ["ws", "laws"])
def test_sampled_makespan_close_to_detailed(heat, scheduler):
    full = _run(heat, scheduler)
    # Three samples at least, more until the interval is within 2 % (this heat's WS
    # iterations on two sockets vary by several per cent: exactly three missed by 7 %).
    samp = _run(heat, scheduler, 3, precision=2)
    assert samp["sampled"] is True and full["sampled"] is False
    assert samp["settled_at"] + 3 <= samp["detailed_iterations"] < ITERS
    assert samp["detailed_cycles"] < samp["makespan_cycles"]
    assert samp["makespan_cycles"] == pytest.approx(full["makespan_cycles"], rel=0.03)
    lo, hi = json.loads(samp["makespan_ci95"])
    assert lo <= samp["makespan_cycles"] <= hi
    # the counters are the detailed part's: fewer references served than the detailed run's
    assert samp["L1_accesses"] < full["L1_accesses"]
    # every detailed iteration's end, in order, the last one where the detailed part ends
    ends = json.loads(samp["iteration_ends"])
    assert len(ends) == samp["detailed_iterations"]
    assert ends == sorted(ends) and ends[-1] == samp["detailed_cycles"]
    # a detailed run keeps its iterations' ends too: the sampled run's are their beginning
    assert json.loads(full["iteration_ends"])[: len(ends)] == ends


def test_laws_settles_when_algorithm_1_ends(heat):
    samp = _run(heat, "laws", 2)
    moves = [p["move"] for p in json.loads(samp["packing"])]
    # the first iteration run under the final packing is the first sample
    assert moves[samp["settled_at"]] == "final"
    assert moves[samp["settled_at"] - 1] != "final"


def test_too_many_samples_run_in_detail(heat):
    full = _run(heat, "ws")
    same = _run(heat, "ws", ITERS)
    assert same["sampled"] is False and same["detailed_iterations"] == ITERS
    assert same["sample_iterations"] == ITERS
    skip = {"wall_s", "sample_iterations", "sample_precision"}
    assert {k: v for k, v in same.items() if k not in skip} == {
        k: v for k, v in full.items() if k not in skip
    }


def test_samples_must_be_at_least_two(heat):
    with pytest.raises(ConfigError, match="sample_iterations=1"):
        _run(heat, "ws", 1)
    with pytest.raises(ConfigError, match="sample_precision=101"):
        _run(heat, "ws", 2, 101)


def test_precision_without_samples_is_refused(heat):
    """``run(..., sample_precision=P)`` without ``sample_iterations`` replayed every
    iteration and ignored P without a word (``--sample-precision`` alone is refused)."""
    for precision in (3, 0):
        with pytest.raises(ConfigError, match=f"^sample_precision={precision} applies with "):
            simsched.run(heat, TWO_BY_TWO, "ws", speedup=False, sample_precision=precision)
        with pytest.raises(ConfigError, match=f"^sample_precision={precision} applies with "):
            simsched.compare(heat, TWO_BY_TWO, "ws", speedup=False, sample_precision=precision)
    # the default with samples is 0.5 %, and None (like 0) asks for exactly K samples
    rec = simsched.run(heat, TWO_BY_TWO, "ws", speedup=False, sample_iterations=2).record
    assert rec["sample_precision"] == DEFAULT_SAMPLE_PRECISION
    exact = simsched.run(
        heat, TWO_BY_TWO, "ws", speedup=False, sample_iterations=2, sample_precision=None
    ).record
    assert exact["sample_precision"] == 0.0
    assert (
        simsched.run(heat, TWO_BY_TWO, "ws", speedup=False, sample_precision=None).record["sampled"]
        is False
    )


def test_baseline_is_sampled_like_the_run_by_default(heat, tmp_path, monkeypatch):
    """``baseline_makespan(..., sample_iterations=K)`` sampled exactly K iterations where
    ``run(..., sample_iterations=K)`` samples to 0.5 %, its own baseline too."""
    from simsched.api import baseline_makespan, baseline_path
    from simsched.machine import load_machine
    from tests.conftest import private_cache

    monkeypatch.setenv("SIMSCHED_CACHE_DIR", str(private_cache(tmp_path / "cache")))
    m = load_machine(TWO_BY_TWO)
    b = baseline_makespan(heat, m, sample_iterations=2)
    t = open_trace(heat)
    digest = t.header.digest
    t.close()
    cached = json.loads(baseline_path(digest, m, 2, DEFAULT_SAMPLE_PRECISION).read_text())
    assert cached["makespan_cycles"] == b
    assert cached["sample_precision"] == DEFAULT_SAMPLE_PRECISION
    rec = simsched.run(heat, m, "ws", sample_iterations=2).record
    assert rec["baseline_makespan_cycles"] == b
    with pytest.raises(ConfigError, match="^sample_precision=1 applies with sample_iterations"):
        baseline_makespan(heat, m, sample_precision=1)


def test_a_sampled_runs_speedup_has_the_interval_of_its_two_estimates(heat, tmp_path, monkeypatch):
    """The speedup of a sampled run divides the sampled baseline by the extrapolated
    makespan; the record now says how sure both are (``speedup_ci95``)."""
    from simsched.baseline import baseline_estimate, speedup_interval
    from simsched.machine import load_machine
    from tests.conftest import private_cache

    monkeypatch.setenv("SIMSCHED_CACHE_DIR", str(private_cache(tmp_path / "cache")))
    m = load_machine(TWO_BY_TWO)
    rec = simsched.run(heat, m, "ws", sample_iterations=2, sample_precision=None).record
    assert rec["sampled"] is True
    b = baseline_estimate(heat, m, sample_iterations=2, sample_precision=None)
    assert json.loads(rec["baseline_makespan_ci95"]) == [b.lo, b.hi]
    lo, hi = json.loads(rec["speedup_ci95"])
    assert [lo, hi] == list(
        speedup_interval(b, rec["makespan_cycles"], *json.loads(rec["makespan_ci95"]))
    )
    assert lo < rec["speedup"] < hi
    detailed = simsched.run(heat, m, "ws").record
    s, base = detailed["speedup"], detailed["baseline_makespan_cycles"]
    assert json.loads(detailed["speedup_ci95"]) == [s, s]
    assert json.loads(detailed["baseline_makespan_ci95"]) == [base, base]
    none = simsched.run(heat, m, "ws", speedup=False).record
    assert (none["speedup_ci95"], none["baseline_makespan_ci95"]) == ("[0.0,0.0]", "[0,0]")


def test_a_run_that_left_no_iteration_out_has_an_exact_baseline(tmp_path, monkeypatch):
    """A run that asked for sampling but came out detailed (``sampled: false``) divided
    the one-core baseline, sampled (it settled sooner), by its exact makespan: its speedup
    differed from the detailed run's although the makespans were equal."""
    from tests.conftest import private_cache

    monkeypatch.setenv("SIMSCHED_CACHE_DIR", str(private_cache(tmp_path / "cache")))
    h = tmp_path / "h10.sst"
    generate("heat", h, nx=15, ny=7, cutoff=5, iters=10, irregular=True, repeat=False)
    small = {"caches.L1.size": "1KB", "caches.L2.size": "4KB"}
    detailed = simsched.run(h, "itrs-scaling-2", "ws", overrides=small).record
    asked = simsched.run(
        h, "itrs-scaling-2", "ws", overrides=small, sample_iterations=6, sample_precision=2
    ).record
    assert asked["sampled"] is False and asked["detailed_iterations"] == 10
    assert asked["settled_at"] >= 0  # the policy settled, too late to leave one out
    for field in ("makespan_cycles", "baseline_makespan_cycles", "speedup"):
        assert asked[field] == detailed[field], field


def test_iterations_none_cannot_be_sampled(heat, capsys):
    """``--iterations none`` removes the iterations sampling needs: said as such, not as a
    trace without iterations (whose advice, ``--iterations auto``, contradicts the run's)."""
    for call in (
        lambda: simsched.run(heat, TWO_BY_TWO, "ws", iterations="none", sample_iterations=2),
        lambda: simsched.compare(heat, TWO_BY_TWO, ["ws"], iterations="none", sample_iterations=2),
    ):
        # a Python caller is told of its arguments, not of the command line's options
        with pytest.raises(ConfigError) as info:
            call()
        assert str(info.value) == (
            "sample_iterations samples iterations, and iterations='none' removes them"
        )
    with pytest.raises(SystemExit):  # the command line: of the options typed
        main(["run", "-t", str(heat), "-m", "itrs-scaling-4", "--iterations", "none",
              "--sample-iterations", "2"])  # fmt: skip
    assert capsys.readouterr().err == (
        "simsched: error: --sample-iterations samples iterations, and --iterations none "
        "removes them\n"
    )


def test_a_trace_without_iterations_is_refused_naming_the_arguments(tmp_path):
    """The Python API was told to replay "with --iterations auto"."""
    ms = tmp_path / "ms.sst"
    generate("mergesort", ms, n=2048, grain=256)
    with pytest.raises(ConfigError) as info:
        simsched.run(ms, TWO_BY_TWO, "ws", sample_iterations=3)
    assert str(info.value) == (
        f"{ms}: the trace has no iterations, so sample_iterations cannot sample it; mark "
        "them with SS_ITER or replay with iterations='auto'"
    )
    with pytest.raises(ConfigError, match="iterations='auto' found none in its DAG either$"):
        simsched.run(ms, TWO_BY_TWO, "ws", sample_iterations=3, iterations="auto")
    # compare relabels once for its runs: they were told "replay with iterations='auto'"
    for mode, remedy in [("auto", "iterations='auto' found none in its DAG either"),
                         ("markers", "it has no SS_ITER marks; try iterations='auto'")]:  # fmt: skip
        with pytest.raises(ConfigError, match=f"cannot sample it; {re.escape(remedy)}$"):
            simsched.compare(ms, TWO_BY_TWO, "ws", sample_iterations=3, iterations=mode)
    with pytest.raises(ConfigError, match="^iterations='some': choose one of auto, markers"):
        simsched.run(ms, TWO_BY_TWO, "ws", iterations="some")


def test_precision_takes_more_samples(heat):
    loose = _run(heat, "ws", 2)
    tight = _run(heat, "ws", 2, 0.01)  # WS's iterations vary by more: never reached
    assert loose["sampled"] is True and tight["sampled"] is False
    assert tight["settled_at"] == loose["settled_at"]
    lo, hi = json.loads(loose["makespan_ci95"])
    # a precision the K samples already meet changes nothing
    met = _run(heat, "ws", 2, 1.01 * 50.0 * (hi - lo) / loose["makespan_cycles"])
    assert met["makespan_cycles"] == loose["makespan_cycles"]
    assert met["detailed_iterations"] == loose["detailed_iterations"]


class _Never:
    def tuning_settled(self):
        return False


def test_a_policy_that_never_settles_is_not_sampled(heat):
    t = open_trace(heat)
    try:
        s = IterationSampler(t, 2)
        order = np.arange(t.header.n_strands)
        stops = [s.strand_done(int(i), 10 * int(i), _Never()) for i in order]
    finally:
        t.close()
    assert not any(stops)
    o = s.outcome()
    assert not o.stopped and o.settled_at == -1 and o.detailed == ITERS


def test_cli_refuses_a_trace_without_iterations(tmp_path, capsys):
    ms = tmp_path / "ms.sst"
    generate("mergesort", ms, n=2048, grain=256)
    argv = ["run", "-t", str(ms), "-m", "itrs-scaling-4", "--sample-iterations", "3"]
    with pytest.raises(SystemExit) as exc:
        main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2
    assert str(ms) in err and "has no iterations" in err and "Traceback" not in err
    # the remedy was "replay with --iterations auto" even when that is what found none
    for mode, remedy in [("auto", "--iterations auto found none in its DAG"),
                         ("markers", "no SS_ITER marks; try --iterations auto")]:  # fmt: skip
        with pytest.raises(SystemExit) as exc:
            main([*argv, "--iterations", mode])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and remedy in err and "replay with" not in err
        with pytest.raises(SystemExit) as exc:
            main(["compare", *argv[1:], "-s", "ws", "--iterations", mode])
        err = capsys.readouterr().err
        assert exc.value.code == 2 and remedy in err and "replay with" not in err


SPEC = """
name: t
workloads: [{generator: heat, params: {nx: 10, ny: 10, iters: 4}}]
machines: [itrs-scaling-4]
schedulers: [ws]
"""


def test_sweep_key(tmp_path):
    plain = tmp_path / "a.yaml"
    plain.write_text(textwrap.dedent(SPEC))
    sampled = tmp_path / "b.yaml"
    sampled.write_text(textwrap.dedent(SPEC) + "sample_iterations: 3\n")
    (p,) = load_spec(plain, small=False).points()
    (q,) = load_spec(sampled, small=False).points()
    assert p.sample_iterations is None and q.sample_iterations == 3
    assert p.id != q.id  # sampled and detailed results never share a point
    assert "sample_iterations" not in p.to_dict()
    assert type(q).from_dict(q.to_dict()) == q
    both = tmp_path / "d.yaml"
    both.write_text(textwrap.dedent(SPEC) + "sample_iterations: 3\nsample_precision: 2.5\n")
    (r,) = load_spec(both, small=False).points()
    assert r.sample_precision == 2.5 and r.id != q.id
    assert type(r).from_dict(r.to_dict()) == r
    for bad in ("sample_iterations: 1\n", "sample_iteration: 3\n", "sample_precision: 1\n"):
        wrong = tmp_path / "c.yaml"
        wrong.write_text(textwrap.dedent(SPEC) + bad)
        with pytest.raises(ConfigError, match="sample_"):
            load_spec(wrong, small=False)


def _iterations_trace(n, refs=10):
    """A trace's tables as :class:`IterationSampler` reads them: main's strand, one strand
    per iteration (iteration ``i`` is strand ``1 + i``, ``refs`` references each), main's
    final strand of 5 instructions."""
    from types import SimpleNamespace

    frame = [0, *range(1, n + 1), 0]
    return SimpleNamespace(
        frames=SimpleNamespace(iteration=np.array([-1, *range(n)])),
        strands=SimpleNamespace(
            frame=np.array(frame),
            ref_start=np.arange(len(frame) + 1) * refs,
            instr=np.array([1] * (len(frame) - 1) + [5]),
        ),
    )


class _Settled:
    def tuning_settled(self):
        return True


class _Untuned:
    def tuning_settled(self):
        return None


def test_a_stop_never_leaves_no_iteration_out():
    """The last sample (iteration 3 of 5) ended after iteration 4, the trace's last: both
    ended at once, the replay stopped with every iteration replayed and the record said
    ``sampled`` with an extrapolated makespan.  Iterations that end together count as
    one decision: the last one's, and none is left after the trace's last."""
    s = IterationSampler(_iterations_trace(5), 3)
    stops = [s.strand_done(i, now, _Settled()) for i, now in
             [(0, 0), (1, 100), (2, 200), (3, 300), (5, 350), (4, 400)]]  # fmt: skip
    o = s.outcome()
    assert not any(stops) and not o.stopped
    assert o.detailed == o.iterations == 5 and o.ends == [100, 200, 300, 400, 400]
    # ended together before the last: the later one is one more sample, and the replay
    # stops with two of 6 iterations left
    s = IterationSampler(_iterations_trace(6), 2)
    stops = [s.strand_done(i, now, _Settled()) for i, now in
             [(0, 0), (1, 100), (2, 200), (4, 250), (3, 300)]]  # fmt: skip
    o = s.outcome()
    assert stops[-1] and o.stopped and o.detailed == 4 and o.samples == 3


def test_a_detailed_runs_iteration_ends_are_the_samplers():
    """Read from the strands' end cycles afterwards, a replay's iteration ends are the
    ones the sampler records as it watches: iteration 4 ended before iteration 3 and
    counts as ending with it.  A replay that did not run an iteration's strand has none."""
    trace = _iterations_trace(5)
    end = [0, 100, 200, 300, 400, 350, 450]
    s = IterationSampler(trace, 3)
    for strand in (0, 1, 2, 3, 5, 4):
        s.strand_done(strand, end[strand], _Settled())
    assert iteration_ends(trace, end) == s.outcome().ends == [100, 200, 300, 400, 400]
    assert iteration_ends(trace, [0, 100, 200, 300, 400, -1, -1]) == []
    assert iteration_ends(_iterations_trace(0), [0, 5]) == []


def _drive(n, periods, k, sched, enough=None):
    """Replay ``_iterations_trace(n)`` in order with the given iteration periods (cycles;
    10 references each) until the sampler stops it; returns the sampler."""
    s = IterationSampler(_iterations_trace(n), k, enough)
    s.strand_done(0, 0, sched)
    now = 0
    for i in range(n):
        now += periods[i]
        if s.strand_done(1 + i, now, sched):
            break
    return s


def test_a_policy_without_tuning_settles_as_documented():
    """docs/engine.md §7: from the third iteration on, the first whose cycles per reference
    are not more than 2 % below the previous one's; noise upwards does not delay it; after
    10 iterations at the latest.  ``settled_at`` is the next iteration, the first sample."""
    from simsched.engine.sampling import MAX_WARMUP, STABLE_TOLERANCE

    assert (STABLE_TOLERANCE, MAX_WARMUP) == (0.02, 10)
    # iterations 0 and 1 are never the decision, however alike
    s = _drive(20, [100] * 20, 2, _Untuned())
    assert (s.settled_at, s.settled_by) == (3, "stable") and s.outcome().detailed == 5
    # 1.9 % cheaper counts as settled, 2.1 % does not
    s = _drive(20, [200, 150, 100, 98.1] + [98] * 16, 2, _Untuned())
    assert (s.settled_at, s.settled_by) == (4, "stable")
    s = _drive(20, [200, 150, 100, 97.9, 97.9] + [98] * 15, 2, _Untuned())
    assert (s.settled_at, s.settled_by) == (5, "stable")
    # dearer than the previous one (a policy's noise) settles at once
    s = _drive(20, [200, 150, 100, 130] + [100] * 16, 2, _Untuned())
    assert s.settled_at == 4
    # 5 % cheaper every iteration: the cap, after the 10th iteration
    s = _drive(20, [round(1000 * 0.95**i) for i in range(20)], 2, _Untuned())
    assert (s.settled_at, s.settled_by) == (MAX_WARMUP, "cap")
    o = s.outcome()
    assert o.stopped and o.detailed == MAX_WARMUP + 2 and o.samples == 2


def test_samples_are_the_iterations_after_settling_and_one_is_left():
    """Iterations ``settled_at .. settled_at + K - 1`` are the samples; the replay stops at
    the end of the last one only if an iteration is left after it (else it is detailed,
    the outcome keeping where the policy settled)."""
    periods = [300, 200, 100, 100, 100, 90, 110, 100]  # settles after iteration 3
    o = _drive(8, periods, 3, _Untuned()).outcome()
    assert (o.settled_at, o.stopped, o.detailed, o.samples) == (4, True, 7, 3)
    assert o.ends == [300, 500, 600, 700, 800, 890, 1000]
    assert o.sample_rates().tolist() == [10.0, 9.0, 11.0]  # iterations 4, 5, 6
    o = _drive(8, periods, 4, _Untuned()).outcome()
    assert (o.settled_at, o.stopped, o.detailed, o.samples) == (4, False, 8, 4)
    # a policy that settles after its first iteration: iteration 1 is the first sample
    o = _drive(8, periods, 6, _Settled()).outcome()
    assert (o.settled_at, o.stopped, o.detailed, o.samples) == (1, True, 7, 6)
    assert not _drive(8, periods, 7, _Settled()).outcome().stopped


@pytest.mark.parametrize("scheduler", ["ws", "pdf"])
def test_sampled_record_is_the_detailed_run_cut_short(heat, scheduler):
    """The detailed part of a sampled run is the detailed run's own beginning (same
    iteration ends), its ``detailed_cycles`` the last sample's end, and its makespan the
    documented extrapolation from the record's own fields and the trace's references."""
    whole = _run(heat, scheduler, 2, 0.01)  # never precise enough: every iteration
    samp = _run(heat, scheduler, 3)
    assert whole["sampled"] is False and samp["sampled"] is True
    detailed = _run(heat, scheduler)
    assert whole["makespan_cycles"] == detailed["makespan_cycles"]
    all_ends = json.loads(whole["iteration_ends"])
    # read back from the strands' ends, the detailed run's are the ones watched
    assert json.loads(detailed["iteration_ends"]) == all_ends
    ends = json.loads(samp["iteration_ends"])
    d, s0 = samp["detailed_iterations"], samp["settled_at"]
    assert len(all_ends) == ITERS and ends == all_ends[:d] and d == s0 + 3
    assert samp["detailed_cycles"] == ends[-1] < whole["makespan_cycles"]
    t = open_trace(heat)
    try:
        it = np.asarray(t.frames.iteration)[np.asarray(t.strands.frame)]
        refs = np.diff(np.asarray(t.strands.ref_start))
        w = [int(refs[it == i].sum()) for i in range(ITERS)]
    finally:
        t.close()
    mean = sum((ends[i] - ends[i - 1]) / w[i] for i in range(s0, d)) / 3
    expect = ends[-1] + mean * sum(w[d:]) + samp["epilogue_cycles"]
    assert abs(samp["makespan_cycles"] - expect) <= 0.5 + 1e-9 * expect
