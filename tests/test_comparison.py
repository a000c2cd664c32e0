"""simsched.comparison: the notes that explain a comparison (and the record's warnings)."""

from __future__ import annotations

import json

import numpy as np
import pytest

import simsched
from simsched.comparison import Note, compare_notes, run_notes, sampled_note
from simsched.engine.sampling import iteration_weights
from simsched.machine import load_machine
from simsched.schedulers import REGISTRY, get_scheduler
from simsched.trace import open_trace
from simsched.workloads import generate
from tests.engine.machines import ONE_BY_THREE, TWO_BY_TWO


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    d = tmp_path_factory.mktemp("cmp")
    heat = dict(nx=64, ny=64, iters=2, cutoff=8)
    generate("heat", d / "heat-init.sst", **heat)
    generate("heat", d / "heat-noinit.sst", init=False, **heat)
    generate("mergesort", d / "ms.sst", n=4096, grain=256)
    return d


FAMILY = ("laws", "laws-nc", "cats")


def _codes(notes):
    return [n.code for n in notes]


def test_policies_declare_numa_awareness_and_iterations():
    aware = sorted({c.name for c in REGISTRY.values() if c.numa_aware})
    assert aware == ["cats", "laws", "laws-nc"]
    assert get_scheduler("laws").without_iterations
    assert get_scheduler("ws").without_iterations is None


def test_heat_init_on_one_node_warns_laws_not_ws(traces):
    """Issue 24 item 15: heat's init=true first-touches every page on node 0."""
    warned = simsched.run(traces / "heat-init.sst", TWO_BY_TWO, "laws", speedup=False)
    ws = simsched.run(traces / "heat-init.sst", TWO_BY_TWO, "ws", speedup=False)
    spread = simsched.run(traces / "heat-noinit.sst", TWO_BY_TWO, "laws", speedup=False)
    codes = [w["code"] for w in json.loads(warned.record["warnings"])]
    assert codes == ["data-one-node"]
    assert "node 0" in json.loads(warned.record["warnings"])[0]["message"]
    assert json.loads(ws.record["warnings"]) == []
    assert json.loads(spread.record["warnings"]) == []


def test_one_socket_and_no_iterations_and_cab_bl(traces):
    m = load_machine(ONE_BY_THREE)
    with open_trace(traces / "ms.sst") as t:
        recs = [simsched.run(t, m, s, speedup=False).record for s in ("ws", "laws", "cats", "cab")]
        notes = compare_notes(recs, t, m)
        per_run = run_notes(recs[1], t, m)
    assert _codes(per_run) == ["one-socket", "no-iterations"]
    by = {n.code: n for n in notes}
    # one line per cause, naming every scheduler it concerns
    assert _codes(notes).count("one-socket") == 1
    assert by["one-socket"].schedulers == ("laws", "cats")
    assert by["one-socket"].text.startswith("laws, cats: NUMA-aware")
    assert "first iteration" in by["no-iterations"].text
    assert by["cab-bl"].level == "warning" and "cab is WS" in by["cab-bl"].text
    assert "single squad" in by["cab-bl"].text
    # the record keeps the warnings (not the info notes)
    assert [w["code"] for w in json.loads(recs[3]["warnings"])] == ["cab-bl"]


def test_cab_with_a_given_bl_below_the_dags_leaves_warns(traces, tmp_path):
    """Only head workers run tasks when no task is left to the intra-socket tier."""
    recs = {
        bl: simsched.run(
            traces / "ms.sst", TWO_BY_TWO, "cab", params={"bl": bl}, speedup=False
        ).record
        for bl in (2, 30)
    }
    assert recs[2]["bl_depth"] < 30 and json.loads(recs[2]["warnings"]) == []
    (w,) = json.loads(recs[30]["warnings"])
    assert w["code"] == "cab-bl" and "only the head worker of each socket" in w["message"]
    assert f"deepest level ({recs[30]['bl_depth']})" in w["message"]
    # main spawning only leaves (no recursion, no Eq. 4): level 1 is already the leaves
    generate("datapar", tmp_path / "dp.sst", n=4, elems=64, reps=1)
    rec = simsched.run(tmp_path / "dp.sst", TWO_BY_TWO, "cab", params={"bl": 1}, speedup=False)
    (w,) = json.loads(rec.record["warnings"])
    assert w["code"] == "cab-bl" and "deepest level (1)" in w["message"]


def test_desire_policies_in_a_single_run_warn_that_no_controller_asks(traces):
    """SAWS's beta and A-Steal's rho/delta act only through a controller's quanta."""
    runs = {
        s: simsched.run(traces / "ms.sst", TWO_BY_TWO, s, params=p, speedup=False).record
        for s, p in (("ws-equi", {}), ("saws", {"beta": 7}), ("asteal", {"rho": 3}))
    }
    assert json.loads(runs["ws-equi"]["warnings"]) == []
    for s in ("saws", "asteal"):
        (w,) = json.loads(runs[s]["warnings"])
        assert w["code"] == "no-controller" and w["message"].startswith(f"{s}: ")
        assert runs[s]["makespan_cycles"] == runs["ws-equi"]["makespan_cycles"]


def test_desire_policies_under_a_controller_that_reads_no_desire_warn(traces):
    from simsched.comparison import jobs_notes

    notes = jobs_notes(["saws", "ws", "a-steal", "saws"], "equi")
    assert [(n.code, n.schedulers) for n in notes] == [
        ("no-controller", ("saws",)),
        ("no-controller", ("asteal",)),
    ]
    assert jobs_notes(["saws", "asteal"], "deq") == [] and jobs_notes(["ws-equi"], "all") == []
    js = {"controller": "static", "jobs": [{"trace": str(traces / "ms.sst"), "scheduler": "saws"}]}
    (w,) = simsched.run_jobs(js, TWO_BY_TWO).record["warnings"]
    assert w["code"] == "no-controller" and "controller static does not read" in w["message"]


def test_a_single_iteration_is_the_first_one_and_warns(traces, tmp_path):
    """With one iteration nothing runs packed, yet the record said nothing."""
    generate("heat", tmp_path / "one.sst", nx=34, ny=18, iters=1, cutoff=8, init=False)
    rec = simsched.run(tmp_path / "one.sst", TWO_BY_TWO, "laws", speedup=False).record
    assert rec["trace_iterations"] == 1
    (w,) = [w for w in json.loads(rec["warnings"]) if w["code"] == "no-iterations"]
    assert w["message"].startswith("laws: the trace has a single iteration, so the whole run")
    two = simsched.run(traces / "heat-noinit.sst", TWO_BY_TWO, "laws", speedup=False).record
    assert two["trace_iterations"] == 2 and json.loads(two["warnings"]) == []


def test_compulsory_misses_note_only_when_footprint_fits(traces):
    big = {**ONE_BY_THREE, "name": "big-l2"}
    big["caches"] = [dict(c) for c in ONE_BY_THREE["caches"]]
    big["caches"][1]["size"] = 1 << 20
    res = simsched.compare(traces / "ms.sst", big, "ws,pdf", speedup=False)
    comp = [n for n in res.notes if n.code == "compulsory-misses"]
    assert len(comp) == 1 and "fits one L2" in comp[0].text
    small = simsched.compare(traces / "ms.sst", ONE_BY_THREE, "ws,pdf", speedup=False)
    assert "compulsory-misses" not in _codes(small.notes)


def test_a_trace_without_references_or_tasks_and_a_one_core_machine_are_said(tmp_path):
    """Before: "L2 misses (0) are compulsory: the trace's footprint (0 KB) fits one L2",
    and nothing said that a serial trace or one core leaves only the schedulers' costs."""
    from simsched.trace import TraceBuilder

    with TraceBuilder(tmp_path / "norefs.sst") as b:
        for _ in range(4):
            b.spawn()
            b.instr(1000)
            b.ret()
        b.sync()
    with TraceBuilder(tmp_path / "serial.sst") as b:
        b.instr(100)
        for i in range(10):
            b.ref(0x1000 + 64 * i, 8, False)
    notes = simsched.compare(tmp_path / "norefs.sst", TWO_BY_TWO, "ws,cab", speedup=False).notes
    assert _codes(notes)[0] == "no-references" and "compulsory-misses" not in _codes(notes)
    assert "serial-trace" not in _codes(notes) and "one-core" not in _codes(notes)
    cab = next(n for n in notes if n.code == "cab-bl")
    assert "no task below main spawns" in cab.text
    notes = simsched.compare(
        tmp_path / "serial.sst", "itrs-scaling-1", "ws,pdf", speedup=False
    ).notes
    assert _codes(notes)[:2] == ["serial-trace", "one-core"]
    assert "itrs-scaling-1 has one core" in notes[1].text
    plain = simsched.compare(traces_ms(tmp_path), TWO_BY_TWO, "ws", speedup=False).notes
    assert not {"no-references", "serial-trace", "one-core"} & set(_codes(plain))


def traces_ms(tmp_path):
    generate("mergesort", tmp_path / "ms.sst", n=1024, grain=256)
    return tmp_path / "ms.sst"


def test_sampled_runs_of_different_detailed_iterations_say_counts_do_not_compare(traces):
    """A sampled WS run replayed 29 of 40 iterations in detail and PDF 22: the table put
    their cache and DRAM counts side by side with nothing saying they cover different
    iterations."""

    def rec(name, detailed, sampled=True):
        return dict(scheduler=name, sampled=sampled, detailed_iterations=detailed,
                    trace_iterations=40)  # fmt: skip

    note = sampled_note([rec("ws", 29), rec("ws", 31), rec("pdf", 22)])
    assert note is not None and note.code == "sampled-counters" and note.level == "info"
    assert "(ws 29–31, pdf 22 of 40)" in note.text
    assert sampled_note([rec("ws", 29), rec("pdf", 29)]) is None
    assert sampled_note([rec("ws", 40, False), rec("pdf", 40, False)]) is None
    assert sampled_note([rec("ws", 40, False), rec("pdf", 22)]) is not None
    with open_trace(traces / "ms.sst") as t:
        notes = compare_notes([rec("ws", 29), rec("pdf", 22)], t, load_machine(ONE_BY_THREE))
    assert "sampled-counters" in _codes(notes)


def test_note_as_dict():
    assert Note("x", "y").as_dict() == {"code": "x", "message": "y"}


def test_cli_compare_prints_notes_and_run_prints_warnings(traces, tmp_path, capsys):
    from simsched.cli import main
    from simsched.machine import Machine

    path = tmp_path / "m.yaml"
    import yaml

    path.write_text(yaml.safe_dump(Machine.model_validate(ONE_BY_THREE).model_dump(mode="json")))
    with pytest.raises(SystemExit):
        main(["compare", "-t", str(traces / "ms.sst"), "-m", str(path), "-s", "ws,laws"])
    out = capsys.readouterr().out
    assert "notes:" in out and "laws: NUMA-aware" in out
    with pytest.raises(SystemExit):
        main(["run", "-t", str(traces / "heat-init.sst"), "-m", str(path), "-s", "laws"])
    err = capsys.readouterr().err
    assert "warning: laws: NUMA-aware" in err
    # --json too: its stdout stays one object, and the warning is on stderr all the same
    with pytest.raises(SystemExit):
        main(["run", "-t", str(traces / "heat-init.sst"), "-m", str(path), "-s", "laws", "--json"])
    got = capsys.readouterr()
    assert json.loads(got.out)["warnings"][0]["code"] == "one-socket"
    assert "warning: laws: NUMA-aware" in got.err


def test_cli_run_jobs_json_prints_the_job_sets_warnings(traces, tmp_path, capsys):
    from simsched.cli import main
    from simsched.machine import Machine

    machine = tmp_path / "m.yaml"
    import yaml

    machine.write_text(yaml.safe_dump(Machine.model_validate(TWO_BY_TWO).model_dump(mode="json")))
    jobs = tmp_path / "j.yaml"
    jobs.write_text(
        yaml.safe_dump(
            {"controller": "equi", "jobs": [{"trace": str(traces / "ms.sst"), "scheduler": "saws"}]}
        )
    )
    for extra in ([], ["--json"]):
        with pytest.raises(SystemExit) as exc:
            main(["run", "--jobs", str(jobs), "-m", str(machine), *extra])
        assert exc.value.code in (0, None)
        got = capsys.readouterr()
        assert "warning: saws: controller equi does not read" in got.err, extra
    # --json: stdout stays one object, holding the warning as well
    assert json.loads(got.out)["warnings"][0]["code"] == "no-controller"


# ------------------------------------------------------------------ baseline ratios


def test_paired_ratio_interval():
    import math
    import statistics

    from simsched.comparison import paired_ratio
    from simsched.stats import t_quantile

    vals, base = [90.0, 110.0, 95.0], [100.0, 100.0, 100.0]
    r = paired_ratio(vals, base)
    d = [math.log(v / b) for v, b in zip(vals, base, strict=True)]
    half = t_quantile(0.975, 2) * statistics.stdev(d) / math.sqrt(3)
    assert r.ratio == pytest.approx(math.exp(statistics.fmean(d)))
    assert (r.lo, r.hi) == pytest.approx(
        (math.exp(statistics.fmean(d) - half), math.exp(statistics.fmean(d) + half))
    )
    assert r.lo < r.ratio < r.hi and r.n == 3
    one = paired_ratio([50.0], [100.0])
    assert (one.ratio, one.lo, one.hi, one.n) == (0.5, 0.5, 0.5, 1)
    assert paired_ratio([0.0, 1.0], [1.0, 1.0]) is None


def test_baseline_ratios_pair_by_seed_and_broadcast_deterministic():
    from simsched.comparison import baseline_ratios

    recs = [
        {"scheduler": "ws", "seed": 0, "m": 100},
        {"scheduler": "ws", "seed": 1, "m": 200},
        {"scheduler": "laws", "seed": 1, "m": 100},  # paired with ws seed 1, not seed 0
        {"scheduler": "laws", "seed": 0, "m": 50},
        {"scheduler": "pdf", "seed": 0, "m": 100},  # deterministic: against every ws seed
    ]
    out = baseline_ratios(recs, "ws", ["m"])
    assert out["laws"]["m"].ratio == pytest.approx(0.5) and out["laws"]["m"].n == 2
    assert out["laws"]["m"].lo == pytest.approx(0.5)  # identical pairs: no spread
    assert out["pdf"]["m"].n == 2
    assert out["pdf"]["m"].ratio == pytest.approx((100 / 100 * 100 / 200) ** 0.5)
    assert "ws" not in out


def test_a_deterministic_sampled_run_paired_with_every_seed_counts_once():
    """PDF runs once and is paired with each of WS's three seeds: its one sampled makespan
    entered the half-width as if each pair had an independent estimate of its own,
    ``sqrt(sum a_i^2 + 3 b^2) / 3``, and its error shrank by sqrt(3) with the other side's
    seeds.  The geometric mean moves with that one estimate in full: ``b`` counts once,
    at weight 1, beside the seeds' ``a_i / 3``."""
    import math

    from simsched.comparison import baseline_ratios

    def rec(name, seed, m, lo, hi):
        return {"scheduler": name, "seed": seed, "makespan_cycles": m, "sampled": True,
                "makespan_ci95": json.dumps([lo, hi])}  # fmt: skip

    recs = [rec("ws", s, 1000, 990, 1010) for s in (0, 1, 2)]
    recs.append(rec("pdf", 0, 900, 850, 950))
    r = baseline_ratios(recs, "ws", ["makespan_cycles"])["pdf"]["makespan_cycles"]
    a = (math.log(1010) - math.log(990)) / 2
    b = (math.log(950) - math.log(850)) / 2
    half = math.sqrt(3 * (a / 3) ** 2 + b**2)
    assert r.n == 3 and r.sampled and r.ratio == pytest.approx(0.9)
    assert (r.lo, r.hi) == pytest.approx((0.9 * math.exp(-half), 0.9 * math.exp(half)))
    # the baseline run once and the other side's seeds: the same
    recs = [rec("pdf", 0, 1000, 990, 1010)] + [rec("ws", s, 900, 850, 950) for s in (0, 1, 2)]
    r = baseline_ratios(recs, "pdf", ["makespan_cycles"])["ws"]["makespan_cycles"]
    half = math.sqrt(a**2 + 3 * (b / 3) ** 2)
    assert (r.lo, r.hi) == pytest.approx((0.9 * math.exp(-half), 0.9 * math.exp(half)))


def test_a_sampled_speedup_ratio_holds_the_runs_intervals_too():
    """A sampled run's speedup is the one-core baseline over its extrapolated makespan
    (docs/results.md, "Sampling"), but its ratio kept the seeds' interval as if it were a
    counter of the detailed iterations: one seed showed ``1.030x`` bare beside the
    makespan's ``0.970x [0.946-0.995]``.  It now holds the runs' intervals, the same
    half-width on the log scale as the makespan's."""
    import math

    from simsched.comparison import baseline_ratios

    def rec(name, m, lo, hi, sampled=True):
        return {"scheduler": name, "seed": 0, "makespan_cycles": m, "speedup": 2000 / m,
                "sampled": sampled, "makespan_ci95": json.dumps([lo, hi])}  # fmt: skip

    recs = [rec("ws", 1000, 980, 1020), rec("laws", 800, 792, 808)]
    out = baseline_ratios(recs, "ws", ["makespan_cycles", "speedup"])["laws"]
    m, s = out["makespan_cycles"], out["speedup"]
    assert s.sampled and s.ratio == pytest.approx(1.25) and m.ratio == pytest.approx(0.8)
    assert math.log(s.hi / s.lo) == pytest.approx(math.log(m.hi / m.lo))
    assert s.lo < s.ratio < s.hi
    det = [rec("ws", 1000, 1000, 1000, False), rec("laws", 800, 800, 800, False)]
    s = baseline_ratios(det, "ws", ["speedup"])["laws"]["speedup"]
    assert not s.sampled and s.lo == s.hi


def test_a_sampled_makespan_ratio_holds_the_runs_intervals():
    """A ratio of two sampled makespans from one seed was shown bare, as exact as a
    detailed one; it now holds both runs' 95 % intervals (combined on the log scale)."""
    import math

    from simsched.comparison import baseline_ratios

    def rec(name, seed, m, lo, hi, sampled=True):
        return {"scheduler": name, "seed": seed, "makespan_cycles": m, "steals": 10,
                "sampled": sampled, "makespan_ci95": json.dumps([lo, hi])}  # fmt: skip

    recs = [rec("ws", 0, 1000, 980, 1020), rec("laws", 0, 800, 792, 808)]
    out = baseline_ratios(recs, "ws", ["makespan_cycles", "steals"])
    r = out["laws"]["makespan_cycles"]
    a = (math.log(1020) - math.log(980)) / 2
    b = (math.log(808) - math.log(792)) / 2
    half = math.sqrt(a * a + b * b)
    assert r.n == 1 and r.sampled and r.ratio == pytest.approx(0.8)
    assert (r.lo, r.hi) == pytest.approx((0.8 * math.exp(-half), 0.8 * math.exp(half)))
    assert r.as_dict()["sampled"] is True
    # a counter of the detailed iterations is no estimate: no interval of its own
    steals = out["laws"]["steals"]
    assert not steals.sampled and steals.lo == steals.hi == 1.0
    # detailed runs (their interval is the makespan twice) keep the bare ratio
    det = [rec("ws", 0, 1000, 1000, 1000, False), rec("laws", 0, 800, 800, 800, False)]
    r = baseline_ratios(det, "ws", ["makespan_cycles"])["laws"]["makespan_cycles"]
    assert not r.sampled and r.lo == r.hi == pytest.approx(0.8)
    # with seeds that disagree more than the samples do, the seeds' interval stands
    recs = [rec("ws", s, 1000, 999, 1001) for s in (0, 1, 2)]
    recs += [rec("laws", s, m, m - 1, m + 1) for s, m in ((0, 700), (1, 800), (2, 900))]
    seeds_only = baseline_ratios(
        [{**x, "sampled": False} for x in recs], "ws", ["makespan_cycles"]
    )["laws"]["makespan_cycles"]
    r = baseline_ratios(recs, "ws", ["makespan_cycles"])["laws"]["makespan_cycles"]
    assert r.sampled and (r.lo, r.hi) == (seeds_only.lo, seeds_only.hi)
    # a row that keeps no interval adds nothing; one reaching zero bounds no ratio
    bare = [{k: v for k, v in x.items() if k != "makespan_ci95"} for x in recs[:1] + recs[3:4]]
    r = baseline_ratios(bare, "ws", ["makespan_cycles"])["laws"]["makespan_cycles"]
    assert not r.sampled and r.lo == r.hi
    zero = [rec("ws", 0, 1000, 0, 2000), rec("laws", 0, 800, 792, 808)]
    r = baseline_ratios(zero, "ws", ["makespan_cycles"])["laws"]["makespan_cycles"]
    assert (r.lo, r.hi) == (0.0, math.inf)


def test_cli_compare_baseline_and_out_store(traces, tmp_path, capsys):
    from simsched.cli import main
    from simsched.experiments import load_results

    store = tmp_path / "store"
    args = ["compare", "-t", str(traces / "ms.sst"), "-m", "itrs-scaling-4", "-s", "pdf"]
    args += ["--baseline", "ws", "--seeds", "3", "--out", str(store)]
    with pytest.raises(SystemExit) as info:
        main(args)
    out = capsys.readouterr().out
    assert info.value.code in (0, None)
    norm = " ".join(out.split())  # the caption wraps at the table's width
    assert "ratio to ws (geometric mean) [95 % CI: paired t interval on the log-ratios" in norm
    row = next(line for line in out.splitlines() if line.startswith("│ makespan_cycles"))
    assert "x [" in row  # pdf against the 3 ws seeds: a ratio with an interval
    df = load_results(store)
    assert sorted(df["scheduler"]) == ["pdf", "ws", "ws", "ws"]
    assert set(df["sweep"]) == {"compare"} and (df["status"] == "ok").all()
    assert {"makespan_cycles", "warnings", "workload", "seed"} <= set(df.columns)
    assert (store / "results.parquet").is_file()
    with pytest.raises(SystemExit) as info:
        main(["results", "show", str(store), "--columns", "scheduler,seed,makespan_cycles"])
    assert info.value.code in (0, None) and "pdf" in capsys.readouterr().out
    fig = tmp_path / "fig.png"
    with pytest.raises(SystemExit) as info:
        main(
            [
                "plot",
                "sweep",
                str(store),
                "--x",
                "scheduler",
                "--y",
                "makespan_cycles",
                "-o",
                str(fig),
            ]
        )
    assert info.value.code in (0, None) and fig.stat().st_size > 0
    capsys.readouterr()
    # the same comparison saved again replaces its points
    with pytest.raises(SystemExit):
        main([*args, "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert len(load_results(store)) == 4
    ratio = doc["baseline"]["ratios"]["pdf"]["makespan_cycles"]
    assert doc["baseline"]["scheduler"] == "ws" and ratio["n"] == 3
    assert ratio["lo"] <= ratio["ratio"] <= ratio["hi"]


def test_cli_compare_bad_baseline(traces, capsys):
    from simsched.cli import main

    with pytest.raises(SystemExit) as info:
        main(
            ["compare", "-t", str(traces / "ms.sst"), "-m", "itrs-scaling-4", "--baseline", "nope"]
        )
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("simsched: error: --baseline 'nope': unknown scheduler 'nope' (known: ")


def test_uneven_division_warns_the_allocators_policies_only(tmp_path):
    # the generators' uneven=true breaks [LAWS15] §3.2's even division: Eq. 1 gives the
    # two sockets a third and two thirds of the references; the even irregular split and
    # the binary one divide evenly
    runs = {}
    kinds = {
        "uneven": dict(irregular=True, uneven=True),
        "even-ir": dict(irregular=True),
        "even": {},
    }
    for name, kw in kinds.items():
        p = tmp_path / f"{name}.sst"
        generate("heat", p, nx=66, ny=32, iters=2, cutoff=4, init=False, **kw)
        runs[name] = {s: simsched.run(p, TWO_BY_TWO, s, speedup=False).record for s in FAMILY}
        runs[name]["ws"] = simsched.run(p, TWO_BY_TWO, "ws", speedup=False).record
    for s in FAMILY:
        rec = runs["uneven"][s]
        shares = json.loads(rec["allocator_shares"])
        assert max(shares) > 0.6 and rec["allocator_mismatch"] > 0.3
        (w,) = json.loads(rec["warnings"])
        assert w["code"] == "uneven-allocation"
        assert f"socket {shares.index(max(shares))} " in w["message"]
        assert "--cilk-for-split binary" in w["message"]
        for name in ("even-ir", "even"):
            assert json.loads(runs[name][s]["warnings"]) == []
            assert json.loads(runs[name][s]["allocator_shares"]) == [0.5, 0.5]
    assert runs["even"]["laws"]["allocator_mismatch"] == 0.0
    assert "allocator_shares" not in runs["uneven"]["ws"]
    assert json.loads(runs["uneven"]["ws"]["warnings"]) == []


def test_uneven_allocation_needs_a_mismatch():
    m = load_machine(TWO_BY_TWO)

    class _T:  # frames with iteration marks (two: one alone is only the profiled one)
        frames = type("F", (), {"iteration": np.array([-1, 0, 1])})()

    rec = {"scheduler": "laws", "allocator_shares": "[0.7, 0.3]", "allocator_mismatch": 0.3}
    assert _codes(run_notes(rec, _T, m)) == ["uneven-allocation"]
    # the imbalance of too few leaves for the sockets is not an uneven division
    assert _codes(run_notes({**rec, "allocator_mismatch": 0.05}, _T, m)) == []
    assert _codes(run_notes({**rec, "allocator_shares": [0.55, 0.45]}, _T, m)) == []
    # without iterations the allocation holds for the whole run: said too (it was not)
    _T.frames.iteration = np.array([-1, -1, -1])
    notes = run_notes(rec, _T, m)
    assert _codes(notes) == ["no-iterations", "uneven-allocation"]
    assert "70% of the references (the whole run is its first iteration)" in notes[1].text


class _Iterated:  # frames of two iterations (the profiled one and one more)
    frames = type("F", (), {"iteration": np.array([-1, 0, 1])})()
    header = type("H", (), {"n_refs": 1000, "n_frames": 3})()


class _Flat:
    frames = type("F", (), {"iteration": np.array([-1, -1])})()
    header = type("H", (), {"n_refs": 1000, "n_frames": 2})()


@pytest.mark.parametrize(
    ("sched", "busy", "trace", "level", "said"),
    [
        ("pdf", [90, 10, 0, 0], _Iterated, "warning", "sockets 2, 3 ran nothing: PDF gives"),
        ("pdf", [60, 20, 10, 10], _Iterated, "info", "socket 0's cores did 60% of the busy"),
        ("laws", [70, 10, 10, 10], _Flat, "info", "the whole run is the profiled first"),
        ("ws", [0, 50, 30, 20], _Iterated, "warning", "kept few cores busy (utilization 20%)"),
        ("cab", [40, 20, 20, 20], _Iterated, "info", "the schedule placed most of the work"),
    ],
)
def test_socket_imbalance_names_the_likely_cause(sched, busy, trace, level, said):
    m = load_machine({**TWO_BY_TWO, "sockets": 4})
    util = 0.2 if sched == "ws" else 0.9
    rec = {"scheduler": sched, "busy_by_socket": json.dumps(busy), "utilization": util}
    (note,) = [n for n in run_notes(rec, trace, m) if n.code == "socket-imbalance"]
    assert note.level == level and said in note.text, note.text


def test_an_even_spread_has_no_socket_imbalance_and_a_comparison_says_it_once():
    m = load_machine({**TWO_BY_TWO, "sockets": 4})
    even = {"scheduler": "pdf", "busy_by_socket": "[30, 25, 25, 20]"}
    assert "socket-imbalance" not in _codes(run_notes(even, _Iterated, m))
    # a run's figures differ from seed to seed: one line per scheduler
    recs = [
        {**even, "busy_by_socket": json.dumps([90 - s, 10 + s, 0, 0]), "L2_misses": 10 * s + 1}
        for s in range(3)
    ]  # misses that differ: no compulsory-misses note, which reads the trace
    notes = [n for n in compare_notes(recs, _Iterated, m) if n.code == "socket-imbalance"]
    assert len(notes) == 1 and "90%" in notes[0].text
    # a later seed's warning (a socket idle) wins over an earlier one's context
    recs[0]["busy_by_socket"] = json.dumps([70, 10, 10, 10])
    notes = [n for n in compare_notes(recs, _Iterated, m) if n.code == "socket-imbalance"]
    assert len(notes) == 1 and notes[0].level == "warning" and "89%" in notes[0].text


def test_socket_imbalance_blames_the_allocation_only_of_the_busiest_socket():
    m = load_machine({**TWO_BY_TWO, "sockets": 4})
    rec = {"scheduler": "laws-nc", "busy_by_socket": "[10, 10, 10, 70]", "utilization": 0.9}
    elsewhere = {**rec, "allocator_shares": "[0.32, 0.24, 0.22, 0.22]"}
    (n,) = [x for x in run_notes(elsewhere, _Iterated, m) if x.code == "socket-imbalance"]
    assert "allocator" not in n.text
    there = {**rec, "allocator_shares": "[0.2, 0.2, 0.2, 0.4]"}
    (n,) = [x for x in run_notes(there, _Iterated, m) if x.code == "socket-imbalance"]
    assert "gave that socket 40% of the data" in n.text
    # CATS places by the allocation in the first iteration only: not its cause after it
    (n,) = [
        x
        for x in run_notes({**there, "scheduler": "cats"}, _Iterated, m)
        if x.code == "socket-imbalance"
    ]
    assert "allocator" not in n.text


def test_data_on_one_node_names_the_allocator_where_it_put_the_data_there():
    m = load_machine({**TWO_BY_TWO, "sockets": 4})
    node = [{"local": 9, "remote": 3}] + [{"local": 0, "remote": 0}] * 3
    rec = {"scheduler": "laws", "dram_by_node": json.dumps(node)}
    allocated = {**rec, "allocator_shares": "[0.9, 0.04, 0.03, 0.03]"}
    (note,) = [n for n in run_notes(allocated, _Flat, m) if n.code == "data-one-node"]
    assert "the allocator ([LAWS15] Eq. 1) gave 90% of the references" in note.text
    # a socket given less still touches its own pages: one node alone is an initialisation
    for shares in ("[0.25, 0.25, 0.25, 0.25]", "[0.6, 0.2, 0.1, 0.1]"):
        (note,) = [
            n
            for n in run_notes({**rec, "allocator_shares": shares}, _Flat, m)
            if n.code == "data-one-node"
        ]
        assert "serial initialisation" in note.text


@pytest.mark.parametrize(("level_intra", "reason"), [(1, "too-shallow"), (3, "intra-tasks")])
def test_cab_bl_note_explains_the_third_constraint_in_words(traces, level_intra, reason):
    """Every reason CAB's boundary level can have reads as a phrase in the note, not as the
    record's code word (a small heat on four sockets gave "BL = 0 (too-shallow)")."""
    from simsched.schedulers.boundary import choose_boundary_level

    choice = choose_boundary_level(2, 4, 1 << 20, 1 << 30, level_intra=level_intra)
    assert choice.reason == reason
    record = {"scheduler": "cab", "bl": choice.bl, "bl_reason": choice.reason}
    with open_trace(traces / "ms.sst") as t:
        (note,) = run_notes(record, t, load_machine(TWO_BY_TWO))
    assert note.code == "cab-bl"
    assert reason not in note.text
    assert "third constraint" in note.text


def test_cab_bl_note_says_when_each_socket_has_one_leaf_inter_socket_task(traces):
    """Eq. 4's smallest BL can leave exactly one leaf inter-socket task per socket (the
    captured heat-512 sample on the Opteron: CAB 1.26x WS), with nothing to balance."""
    m = load_machine({**TWO_BY_TWO, "sockets": 4})
    record = {"scheduler": "cab", "bl": 3, "bl_reason": "sockets", "bl_depth": 6}
    with open_trace(traces / "ms.sst") as t:
        (exact,) = run_notes({**record, "bl_leaf_tasks": 4, "bl_sockets": 4}, t, m)
        (spare,) = run_notes({**record, "bl_leaf_tasks": 8, "bl_sockets": 4}, t, m)
    assert exact.level == "info" and "4 leaf inter-socket tasks are one per socket" in exact.text
    assert "one per socket" not in spare.text


@pytest.mark.parametrize(
    ("sched", "params", "said"),
    [
        ("laws", {"cpu_check": False, "cpu_threshold": 0.5}, "cpu_threshold=0.5 (cpu_check=false"),
        ("cats", {"pack": False, "cf_start": "any-core"}, "cf_start='any-core' (pack=false"),
        ("cab", {"bl": 2, "data_bytes": "1MiB"}, "data_bytes=1048576 (bl=2 is given"),
        ("cab", {"cpu_bound": "no", "cpu_threshold": 0.5}, "cpu_threshold=0.5 (cpu_bound=no"),
    ],
)
def test_a_parameter_the_others_idle_is_said_to_have_no_effect(tmp_path, sched, params, said):
    # Each changed nothing without a word: a sweep over it measured noise.
    trace = tmp_path / "h.sst"
    generate("heat", trace, nx=34, ny=34, iters=2, cutoff=8)
    rec = simsched.run(trace, "opteron-8380-4x4", sched, params).record
    idle = [w for w in json.loads(rec["warnings"]) if w["code"] == "idle-params"]
    assert len(idle) == 1 and said in idle[0]["message"], idle


def test_defaults_and_effective_parameters_are_not_called_idle():
    for name in ("laws", "laws-nc", "cats", "cab", "ws"):
        cls = get_scheduler(name)
        assert cls.idle_params(cls.resolve_params({})) == {}
    cab = get_scheduler("cab")
    assert cab.idle_params(cab.resolve_params({"data_bytes": "1MiB", "cpu_threshold": 0.5})) == {}
    laws = get_scheduler("laws")
    assert laws.idle_params(laws.resolve_params({"cpu_threshold": 0.5})) == {}
    # CATS's cpu_check is off by default: only a changed threshold is idle
    cats = get_scheduler("cats")
    assert cats.idle_params(cats.resolve_params({"cf_start": "any-core"})) == {}


def test_a_packing_search_over_much_of_a_short_trace_is_said():
    m = load_machine(TWO_BY_TWO)

    def rec(moves):
        log = [{"iteration": i, "move": mv, "cf_roots": 2} for i, mv in enumerate(moves)]
        return {"scheduler": "laws", "packing": json.dumps(log)}

    short = ["profile", "initial", "smaller", "final"]
    (note,) = [n for n in run_notes(rec(short), _Iterated, m) if n.code == "packing-search"]
    assert note.level == "info" and "in 2 of the 3 iterations after the profiled one" in note.text
    long = ["profile", "initial", "smaller"] + ["final"] * 17
    assert "packing-search" not in _codes(run_notes(rec(long), _Iterated, m))
    fixed = ["profile"] + ["fixed"] * 3  # CATS never searches
    assert "packing-search" not in _codes(run_notes(rec(fixed), _Iterated, m))
    # on one core the search measures nothing that one-core does not already say
    one = load_machine({**TWO_BY_TWO, "sockets": 1, "cores_per_socket": 1})
    assert "packing-search" not in _codes(run_notes(rec(short), _Iterated, one))


def _l2(size, inclusion="inclusive", scope="socket"):
    return {**TWO_BY_TWO["caches"][1], "size": size, "inclusion": inclusion, "scope": scope}


@pytest.mark.parametrize(
    ("l2", "said"),
    [
        # two 1 KB L1s a socket: 1 KB holds less than both, 2 KB holds them
        (_l2(1024), "test-2x2: L2 is inclusive but holds 1,024 bytes, less than the 2 × 1,024"),
        (_l2(2048), None),
        (_l2(1024, inclusion="non-inclusive"), None),  # nothing back-invalidated
        (
            _l2(512, scope="core"),
            "test-2x2: L2 is inclusive but holds 512 bytes, less than the 1,024 of the L1 above it: each L2 eviction removes the line from the L1 too",
        ),
    ],
)
def test_an_inclusive_level_smaller_than_what_it_serves_is_said(tmp_path, l2, said):
    from simsched.comparison import trace_notes

    m = load_machine({**TWO_BY_TWO, "caches": [TWO_BY_TWO["caches"][0], l2]})
    notes = [n for n in trace_notes(_Iterated, m) if n.code == "small-inclusive"]
    if said is None:
        assert notes == []
    else:
        (note,) = notes
        assert note.level == "info" and note.text.startswith(said)


def test_a_sampled_run_whose_rate_drifts_is_said(tmp_path):
    """docs/engine.md §7's GE whose late pivot steps lose parallelism: LAWS's samples get
    dearer step after step, and the note says so, with the trend's size."""
    generate("ge", tmp_path / "ge.sst", n=64, steps=30)
    rec = simsched.run(
        tmp_path / "ge.sst", "opteron-8380-4x4", "laws", sample_iterations=5, speedup=False
    ).record
    assert rec["sampled"] and rec["detailed_iterations"] == 23
    (note,) = [w for w in json.loads(rec["warnings"]) if w["code"] == "sampled-drift"]
    assert note["message"].startswith(
        "laws: sampled, but the samples' cycles per reference rise 0.52% per iteration "
        "(iterations 2–22, t = 5.6)"
    )
    assert "continued to the end, would make it 0.9% higher" in note["message"]
    # the steps left out are smaller than the samples: said whatever the samples show
    (unlike,) = [w for w in json.loads(rec["warnings"]) if w["code"] == "sampled-unlike"]
    t = open_trace(tmp_path / "ge.sst")
    w = iteration_weights(t)
    t.close()
    fewer = 1 - w[23:].mean() / w[2:23].mean()
    assert unlike["message"].startswith(
        f"laws: sampled, but the 7 iterations left out hold {fewer:.1%} fewer references "
        "on average than the samples: the extrapolation charges them the samples' cycles "
        "per reference"
    )


def test_samples_of_a_steady_rate_are_not_said_to_drift(tmp_path):
    generate("heat", tmp_path / "heat.sst", nx=64, ny=64, iters=24, cutoff=8, init=False)
    t = open_trace(tmp_path / "heat.sst")
    m = load_machine(TWO_BY_TWO)
    rec = simsched.run(t, m, "ws", sample_iterations=5, speedup=False).record
    assert rec["sampled"]
    assert not {"sampled-drift", "sampled-unlike"} & {
        w["code"] for w in json.loads(rec["warnings"])
    }
    # the same run with its samples made dearer step after step
    ends = json.loads(rec["iteration_ends"])
    first = rec["settled_at"]
    period = ends[first] - ends[first - 1]
    steep = [*ends[:first]]
    for i in range(first, len(ends)):
        steep.append(steep[-1] + period + 50 * (i - first) * period // 100)
    note = [n for n in run_notes({**rec, "iteration_ends": json.dumps(steep)}, t, m)]
    assert [n.text for n in note if n.code == "sampled-drift"][0].startswith(
        "ws: sampled, but the samples' cycles per reference rise"
    )
