"""``simsched run``, ``simsched compare`` and ``simsched plot timeline``."""

from __future__ import annotations

import json
import re

import pytest

from simsched.cli import main
from simsched.workloads import generate


@pytest.fixture(scope="module")
def ms(tmp_path_factory):
    p = tmp_path_factory.mktemp("cli") / "ms.sst"
    generate("mergesort", p, n=8192, grain=512)
    return p


def _run(argv, capsys):
    try:
        main(argv)
        code = 0
    except SystemExit as exc:
        code = exc.code or 0
    out = capsys.readouterr()
    return code, out.out, out.err


def test_run_json_and_out_dir(ms, tmp_path, capsys):
    code, out, _ = _run(
        [
            "run",
            "--trace",
            str(ms),
            "--machine",
            "itrs-scaling-4",
            "--scheduler",
            "pdf",
            "--seed",
            "2",
            "--json",
            "--out",
            str(tmp_path / "r"),
            "--set",
            "costs.queue_op=30",
        ],
        capsys,
    )
    assert code == 0
    rec = json.loads(out)
    assert rec["scheduler"] == "pdf" and rec["seed"] == 2
    assert rec["machine_config"]["costs"]["queue_op"] == 30  # nested fields are objects
    assert (tmp_path / "r" / "timeline.npz").exists()
    code, out, _ = _run(
        [
            "plot",
            "timeline",
            str(tmp_path / "r"),
            "-o",
            str(tmp_path / "t.png"),
            "--color-by",
            "socket",
        ],
        capsys,
    )
    assert code == 0 and (tmp_path / "t.png").stat().st_size > 1000
    code, out, _ = _run(
        ["plot", "timeline", str(tmp_path / "r" / "result.json"), "-o", str(tmp_path / "u.png")],
        capsys,
    )
    assert code == 0 and (tmp_path / "u.png").exists()


def test_compare_json_deterministic(ms, capsys):
    argv = [
        "compare",
        "--trace",
        str(ms),
        "--machine",
        "itrs-scaling-4",
        "--schedulers",
        "ws,pdf",
        "--seeds",
        "2",
        "--json",
    ]
    docs = []
    for _ in range(2):
        code, out, _ = _run(argv, capsys)
        assert code == 0
        d = json.loads(out)
        for r in d["runs"]:
            r.pop("wall_s")
        docs.append(d)
    assert docs[0] == docs[1]
    assert [r["scheduler"] for r in docs[0]["runs"]] == ["ws", "ws", "pdf"]
    assert docs[0]["summary"]["ws"]["makespan_cycles"]["n"] == 2
    code, out, _ = _run(argv[:-1], capsys)
    assert code == 0 and "pdf" in out
    # --set: a scheduler parameter of one scheduler goes to that scheduler only.
    code, out, _ = _run(
        [
            "compare",
            "-t",
            str(ms),
            "-m",
            "itrs-scaling-4",
            "-s",
            "ws,pdf",
            "--json",
            "--set",
            "spawn_policy=parent-first",
            "--set",
            "costs.deque_op=9",
        ],
        capsys,
    )
    assert code == 0
    runs = json.loads(out)["runs"]
    assert runs[0]["params"] == {"spawn_policy": "parent-first"}
    assert runs[1]["params"] == {}
    assert all(r["machine_config"]["costs"]["deque_op"] == 9 for r in runs)


def test_user_errors_exit_2(ms, tmp_path, capsys):
    code, _, err = _run(["run", "-t", str(ms), "-m", "itrs-scaling-4", "-s", "nope"], capsys)
    assert code == 2 and "unknown" in err and err.count("\n") == 1
    code, _, err = _run(["run", "-t", str(ms), "-m", "itrs-scaling-4", "-p", "x=1"], capsys)
    assert code == 2 and "unknown parameter" in err
    code, _, err = _run(["plot", "timeline", str(tmp_path), "-o", str(tmp_path / "x.png")], capsys)
    assert code == 2 and "result.json" in err
    # a --set key that is no parameter was taken for a machine field: "itrs-scaling-4:
    # spawn_polcy: unknown key"
    for cmd in (["run", "-s", "ws"], ["compare", "--schedulers", "ws,pdf"]):
        argv = [*cmd, "-t", str(ms), "-m", "itrs-scaling-4", "--set", "spawn_polcy=parent-first"]
        code, _, err = _run(argv, capsys)
        assert code == 2 and err.count("\n") == 1
        names = ", ".join(cmd[-1].split(",")) if cmd[0] == "compare" else "ws"
        assert (
            f"--set spawn_polcy=parent-first: neither a parameter of {names} (spawn_policy) "
            "nor a machine field (simsched machine show)"
        ) in err


def test_jobs_summary_names_each_count_once_and_no_negative_cost():
    """One count per kind of move, and fewer warm-up misses said as fewer (it printed
    "19 core moves; -2,412 extra private-cache misses ... (74 moves)")."""
    from simsched.cli.run import jobs_summary

    rec = {
        "makespan_cycles": 1000,
        "mean_response_cycles": 500.0,
        "utilization": 0.5,
        "reallocations": 19,
        "realloc_warmup": {"joins": 74, "extra_misses": -2412.4},
    }
    text = jobs_summary(rec)
    assert "-2" not in text and "−" not in text and "moves" not in text
    assert "19 cores taken" in text and "74 times" in text
    assert "2,412 private-cache misses fewer" in text and "no warm-up cost" in text
    rec["realloc_warmup"] = {"joins": 3, "extra_misses": 812.0}
    assert "812 private-cache misses more than" in jobs_summary(rec)
    for none in (0.0, -0.2, 0.3):  # printed "-0 private-cache misses fewer", "0 ... more"
        rec["realloc_warmup"] = {"joins": 16, "extra_misses": none}
        text = jobs_summary(rec)
        assert "-0" not in text and "as many private-cache misses as" in text
    rec["realloc_warmup"] = {"joins": 0, "extra_misses": 0.0}
    assert jobs_summary(rec).count("\n") == 0
    rec.update(core_moves=4, move_cycles=40_000)
    assert "switched to another job 4 times, away 40,000 cycles" in jobs_summary(rec)
    # counts of one read "1 cores taken", "1 private-cache misses more than"
    rec.update(reallocations=1, realloc_warmup={"joins": 1, "extra_misses": 0.8})
    text = jobs_summary(rec)
    assert (
        "; 1 core taken from a running job." in text
        and "joined a job after serving another 1 time;" in text
    )
    assert "they had 1 private-cache miss more than" in text
    rec["realloc_warmup"] = {"joins": 2, "extra_misses": -1.2}
    assert "they had 1 private-cache miss fewer than" in jobs_summary(rec)
    rec.update(reallocations=1234, realloc_warmup={"joins": 2, "extra_misses": 1234.4})
    text = jobs_summary(rec)
    assert "1,234 cores taken" in text and "1,234 private-cache misses more than" in text


def test_run_says_what_laws_does_on_a_trace_without_iterations(ms, tmp_path, capsys):
    # the mergesort generator marks no iterations
    for sched, says in (("laws", True), ("cats", True), ("ws", False)):
        argv = ["run", "--trace", str(ms), "--machine", "itrs-scaling-4", "--scheduler", sched]
        code, _, err = _run([*argv, "--json"], capsys)
        assert code == 0
        lines = [ln for ln in err.splitlines() if "has no iterations" in ln]
        assert len(lines) == (1 if says else 0)
        if says:
            assert f"so {sched} runs its first-iteration policy for the whole run" in lines[0]


def test_run_and_compare_relabel_iterations(tmp_path, capsys):
    """``--iterations none`` drops a trace's marks (LAWS then says so); auto keeps them."""
    heat = tmp_path / "heat.sst"
    generate("heat", heat, nx=10, ny=10, iters=3, cutoff=2, init=False)
    base = ["run", "--trace", str(heat), "--machine", "itrs-scaling-4", "-s", "laws", "--json"]
    for mode, n in ((None, 3), ("auto", 3), ("markers", 3), ("none", 0)):
        argv = base if mode is None else [*base, "--iterations", mode]
        code, out, err = _run(argv, capsys)
        assert code == 0
        assert json.loads(out)["trace_iterations"] == n
        assert ("has no iterations" in err) == (n == 0)
    code, out, _ = _run(
        ["compare", "-t", str(heat), "-m", "itrs-scaling-4", "-s", "ws,laws", "--iterations",
         "none", "--json"],
        capsys,
    )  # fmt: skip
    assert code == 0
    assert "no-iterations" in [n["code"] for n in json.loads(out)["notes"]]
    code, _, err = _run([*base, "--iterations", "some"], capsys)
    assert code == 2 and "unknown --iterations 'some'" in err


def test_laws_without_iterations_is_said_once(ms, capsys):
    """The note (with its remedy) and the record's ``no-iterations`` warning said the same
    thing on two lines; the table run says it once, as docs/capture.md promises."""
    argv = ["run", "-t", str(ms), "-m", "itrs-scaling-4", "-s", "laws"]
    code, _, err = _run(argv, capsys)
    assert code == 0
    assert err.count("has no iterations") == 1 and "no iteration marks" not in err
    # the remedy needs no new capture: the replay can find iterations in the DAG
    assert "if the program iterates, replay with --iterations auto (found from its DAG)" in err
    assert "one socket" in err  # the other warnings are still printed


@pytest.fixture(scope="module")
def heat4(tmp_path_factory):
    p = tmp_path_factory.mktemp("cli") / "heat.sst"
    generate("heat", p, nx=34, ny=34, cutoff=8, iters=4, init=False)
    return p


def test_sampling_that_leaves_nothing_out_is_said(heat4, capsys):
    """Four iterations cannot spare a settled start and five samples: the run is detailed,
    and the table says so instead of looking like a run that was never asked to sample."""
    argv = ["run", "-t", str(heat4), "-m", "itrs-45nm-4", "-s", "ws", "--sample-iterations", "5"]
    code, out, _ = _run(argv, capsys)
    assert code == 0
    assert "all 4 (not sampled: 5 samples after the first iteration would leave none" in out
    code, out, _ = _run(argv[:-2], capsys)
    assert code == 0 and "detailed iterations" not in out


def test_a_sampled_runs_table_names_its_interval_as_the_record_does(tmp_path, capsys):
    """The row said "makespan 95 % CI", a confidence interval, where the record's interval
    is a prediction interval of the detailed makespan (docs/results.md)."""
    heat = tmp_path / "heat.sst"
    generate("heat", heat, nx=34, ny=10, cutoff=8, iters=12, init=False)
    argv = ["run", "-t", str(heat), "-m", "itrs-45nm-4", "--sample-iterations", "2",
            "--sample-precision", "0"]  # fmt: skip
    code, out, _ = _run(argv, capsys)
    assert code == 0 and "counters are theirs" in out
    assert "makespan 95 % prediction interval" in out and "95 % CI" not in out
    # the speedup divides two estimates (the one-core baseline is sampled alike): its
    # interval is the record's
    code, js, _ = _run([*argv, "--json"], capsys)
    lo, hi = json.loads(js)["speedup_ci95"]
    assert code == 0 and lo < json.loads(js)["speedup"] < hi
    row = next(line for line in out.splitlines() if "speedup 95 % interval" in line)
    assert f" {lo:.4g}–{hi:.4g} " in row, row


def test_sampling_too_few_iterations_does_not_blame_the_policy(heat4, capsys):
    """With K + 1 iterations or more the policy is never asked whether it settled
    (``settled_at`` -1: unknown); the table said "the policy never settled"."""
    argv = ["run", "-t", str(heat4), "-m", "itrs-45nm-4", "-s", "ws", "--sample-iterations", "3"]
    code, out, _ = _run(argv, capsys)
    assert code == 0
    assert "never settled" not in out
    assert "3 samples after the first iteration would leave none out" in out


def test_a_plugins_nonsense_decision_is_one_line_and_status_2(ms, monkeypatch, capsys):
    # The engine's refusal named the plug-in but came with a traceback and status 1, as
    # if simsched had failed; the plug-in's author is the one to fix it.
    from simsched.schedulers.registry import SCHEDULERS
    from simsched.schedulers.ws import WorkStealing

    class Nonsense(WorkStealing):
        name = "test-nonsense"
        aliases = ()

        def on_idle(self, core, now):
            return (7, 0, 0)

    monkeypatch.setattr(SCHEDULERS, "entries", dict(SCHEDULERS.entries))
    SCHEDULERS.register(Nonsense)
    code, _, err = _run(
        ["run", "-t", str(ms), "-m", "itrs-scaling-4", "-s", "test-nonsense"], capsys
    )
    assert code == 2 and err.count("\n") == 1
    assert "scheduler 'test-nonsense' of job " in err and "its kind 7 is none of" in err


def test_compare_shows_a_sampled_makespans_interval(tmp_path, capsys):
    """A sampled makespan is an extrapolation, but compare's table showed it as bare as a
    detailed one: its record's 95 % interval is now beside it, and only beside it."""
    heat = tmp_path / "heat.sst"
    generate("heat", heat, nx=34, ny=10, cutoff=8, iters=12, init=False)
    argv = ["compare", "-t", str(heat), "-m", "itrs-45nm-4", "-s", "ws,pdf"]
    sampled = [*argv, "--sample-iterations", "2", "--sample-precision", "0"]
    code, out, _ = _run([*sampled, "--json"], capsys)
    assert code == 0
    want, speedups = {}, {}
    for rec in json.loads(out)["runs"]:
        assert rec["sampled"] is True
        lo, hi = rec["makespan_ci95"]
        want[rec["scheduler"]] = (
            f"{rec['makespan_cycles']:,} ±{50 * (hi - lo) / rec['makespan_cycles']:.2g} %"
        )
        lo, hi = rec["speedup_ci95"]
        speedups[rec["scheduler"]] = (
            f"{rec['speedup']:.3g} ±{50 * (hi - lo) / rec['speedup']:.2g} %"
        )
    code, out, _ = _run(sampled, capsys)
    assert code == 0
    row = next(line for line in out.splitlines() if "makespan_cycles" in line)
    assert all(cell in row for cell in want.values()), (row, want)
    row = next(line for line in out.splitlines() if "speedup" in line)
    assert all(cell in row for cell in speedups.values()), (row, speedups)
    assert "prediction interval" in " ".join(out.split())
    code, out, _ = _run(argv, capsys)
    assert code == 0 and "±" not in out and "prediction interval" not in out


def test_compare_baseline_ratio_of_one_sampled_seed_has_an_interval(tmp_path, capsys):
    """With one seed, ``--baseline`` printed a ratio of two extrapolations with no
    interval at all, as if both were exact."""
    heat = tmp_path / "heat.sst"
    generate("heat", heat, nx=34, ny=10, cutoff=8, iters=12, init=False)
    argv = ["compare", "-t", str(heat), "-m", "itrs-45nm-4", "-s", "ws,pdf",
            "--baseline", "ws", "--sample-iterations", "2", "--sample-precision", "0"]  # fmt: skip
    code, out, _ = _run([*argv, "--json"], capsys)
    assert code == 0
    ratio = json.loads(out)["baseline"]["ratios"]["pdf"]["makespan_cycles"]
    assert ratio["n"] == 1 and ratio["sampled"] is True
    assert ratio["lo"] < ratio["ratio"] < ratio["hi"]
    # the speedup divides the one-core baseline, sampled alike, by the extrapolation
    speedup = json.loads(out)["baseline"]["ratios"]["pdf"]["speedup"]
    assert speedup["sampled"] is True and speedup["lo"] < speedup["ratio"] < speedup["hi"]
    code, out, _ = _run(argv, capsys)
    row = next(line for line in out.splitlines() if "makespan_cycles" in line)
    assert code == 0 and f"{ratio['ratio']:.3f}x [{ratio['lo']:.3f}–{ratio['hi']:.3f}]" in row
    assert "at least as wide as the runs' own 95 % intervals" in " ".join(out.split())


def test_a_precision_never_reached_is_not_blamed_on_too_few_iterations(tmp_path, capsys):
    """Samples that left iterations out but never met the precision asked for made the
    run detailed, and the table said "settled at 3, 2 samples would leave none out"."""
    heat = tmp_path / "heat.sst"
    generate("heat", heat, nx=34, ny=10, cutoff=8, iters=12, init=False)
    argv = ["run", "-t", str(heat), "-m", "itrs-45nm-4", "--sample-iterations", "2",
            "--sample-precision", "0.01"]  # fmt: skip
    code, out, _ = _run([*argv, "--json"], capsys)
    rec = json.loads(out)
    assert code == 0 and rec["sampled"] is False
    assert 0 <= rec["settled_at"] and rec["settled_at"] + 2 < rec["trace_iterations"]
    code, out, _ = _run(argv, capsys)
    text = " ".join(out.split())
    assert code == 0 and "would leave none out" not in text
    assert "did not come within 0.01 % before the last iteration" in text


def test_a_wide_sampled_interval_is_not_written_in_exponent_form(tmp_path, capsys):
    """Two samples of a 30-iteration trace gave one seed an interval of 108 % of its
    makespan, shown as "±1.1e+02 %"."""
    heat = tmp_path / "heat.sst"
    generate("heat", heat, nx=34, ny=10, cutoff=8, iters=30, init=False)
    argv = ["compare", "-t", str(heat), "-m", "itrs-45nm-8", "-s", "ws", "--seeds", "5",
            "--sample-iterations", "2", "--sample-precision", "0"]  # fmt: skip
    from simsched.cli.run import _two_digits

    code, out, _ = _run(argv, capsys)
    row = next(line for line in out.splitlines() if "makespan_cycles" in line)
    assert code == 0 and "e+" not in row and re.search(r" ±\d\d+ %", row), row
    assert (_two_digits(108.3), _two_digits(0.0123), _two_digits(float("inf"))) == (
        "110",
        "0.012",
        "∞",
    )
    # the makespan's interval once reached below zero, and the speedup's had no upper
    # bound; it now starts at the cycles replayed
    row = next(line for line in out.splitlines() if "speedup" in line)
    assert "∞" not in row and re.search(r" ±\d+ %", row), row


def test_compare_on_one_core_says_one_core(ms, capsys):
    """Its title read "mergesort on itrs-scaling-1 (1 cores)"."""
    code, out, _ = _run(["compare", "-t", str(ms), "-m", "itrs-scaling-1", "-s", "ws"], capsys)
    assert code == 0 and "on itrs-scaling-1 (1 core)" in " ".join(out.split()), out


@pytest.mark.parametrize("scheduler", ["cab", "laws"])
def test_run_record_is_the_same_in_another_process_folder_and_hash_seed(tmp_path, scheduler):
    """Nothing a record holds may depend on Python's string hashing (set order), the
    working folder or where the trace lies: two processes that differ in all three give the
    same record apart from its wall time."""
    import os
    import shutil
    import subprocess
    import sys

    from tests.cli.conftest import ROOT

    trace = tmp_path / "a" / "heat.sst"
    trace.parent.mkdir()
    generate("heat", trace, nx=130, ny=66, iters=3)
    (tmp_path / "b" / "deeper").mkdir(parents=True)
    moved = shutil.copy(trace, tmp_path / "b" / "deeper" / "moved.sst")
    records = []
    for hash_seed, cwd, path in (
        ("1", tmp_path / "a", "heat.sst"),
        ("4242", tmp_path / "b", moved),
    ):
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONHASHSEED": hash_seed}
        code = "import sys; from simsched.cli import main; main(sys.argv[1:])"
        args = ["run", "-t", str(path), "-m", "opteron-8380-4x4", "-s", scheduler, "--json"]
        done = subprocess.run(
            [sys.executable, "-c", code, *args, "--seed", "3"],
            cwd=cwd, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        record = json.loads(done.stdout)
        record.pop("wall_s")
        records.append(record)
    assert records[0] == records[1]
