"""Job sets that cannot run are refused up front: one line naming the input, exit status 2.

Arrivals and Poisson means beyond 2^60 cycles, zero static shares, quanta below the
floor, seeds beyond 2^63 - 1 (they used to end in a 49-line deadlock traceback or run
for minutes); a deadlock that does happen is one line naming the jobs and their cores.
"""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simsched.engine import JobSpec, Replay
from simsched.engine.controllers import MIN_QUANTUM, Controller
from simsched.errors import DeadlockError
from simsched.machine import load_machine
from simsched.memory import MemorySystem
from simsched.schedulers import get_scheduler
from simsched.trace import open_trace
from tests.engine.machines import TWO_BY_TWO

MACHINE = "sunfire-x4600-8x4"


def _jobset(tmp_path, fib_trace, body: str, head: str = "seed: 1\n") -> str:
    path = tmp_path / "j.yaml"
    path.write_text(f"{head}jobs:\n  - trace: {fib_trace}\n{body}")
    return str(path)


def _refused(cli, *args) -> str:
    code, out, err = cli("run", *args)
    assert code == 2, (code, out, err)
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


@pytest.mark.parametrize(
    "body,message",
    [
        ("    arrival: 10000000000000000000\n", "arrival 10000000000000000000"),
        ("    arrival: 1180591620717411303424\n", "2^60"),
        ("    arrival: {poisson: {mean: 1.0e+19}}\n", "arrival.poisson.mean"),
        ("    arrival: {poisson: {mean: 1, start: 1180591620717411303424}}\n", "poisson.start"),
        ("    copies: 64\n    arrival: {poisson: {mean: 1.0e+18}}\n", "beyond 2^60"),
        ("    copies: 2\n    arrival: [0, 1180591620717411303424]\n", "2^60"),
        ("    arrival: -1\n", "arrival -1"),
        ("    arrival: {poisson: {mean: 0}}\n", "poisson.mean"),
    ],
)
def test_arrivals_out_of_range(cli, fib_trace, tmp_path, body, message):
    err = _refused(cli, "--jobs", _jobset(tmp_path, fib_trace, body), "-m", MACHINE)
    assert message in err


def test_a_check_of_a_job_says_no_pydantic_words(cli, fib_trace, tmp_path):
    """A check of a whole job entry is the entry and the reason, not pydantic's "Value
    error," between them."""
    body = "    arrival: 2000000000000000000\n"
    err = _refused(cli, "--jobs", _jobset(tmp_path, fib_trace, body), "-m", MACHINE)
    assert "jobs.0: arrival 2000000000000000000: must be between 0 and 2^60" in err
    assert "Value error" not in err


@pytest.mark.parametrize(
    "head,body,message",
    [
        ("seed: 1\n", "    arival: 5\n", "jobs.0.arival: unknown key"),
        ("seed: 1\nquantums: 3\n", "", "quantums: unknown key"),
    ],
)
def test_a_misspelt_key_is_called_unknown(cli, fib_trace, tmp_path, head, body, message):
    """Job sets word unknown keys as machine files do, not in pydantic's words."""
    err = _refused(cli, "--jobs", _jobset(tmp_path, fib_trace, body, head), "-m", MACHINE)
    assert message in err and "Extra inputs" not in err, err


@pytest.mark.parametrize(
    "shares,message",
    [("[0, 0, 2, 2]", "job(s) 0, 1 no core"), ("[2, 0, 2, 2]", "job(s) 1 no core")],
)
def test_zero_static_shares(cli, fib_trace, tmp_path, shares, message):
    head = f"seed: 1\ncontroller: static\ncontroller_params: {{shares: {shares}}}\n"
    err = _refused(
        cli, "--jobs", _jobset(tmp_path, fib_trace, "    copies: 4\n", head), "-m", MACHINE
    )
    assert message in err


def test_static_split_of_more_jobs_than_cores(cli, fib_trace, tmp_path):
    head = "seed: 1\ncontroller: static\n"
    js = _jobset(tmp_path, fib_trace, "    copies: 33\n", head)
    err = _refused(cli, "--jobs", js, "-m", MACHINE)
    assert "no core" in err and "32 cores split among 33 jobs" in err


@pytest.mark.parametrize(
    "args,message",
    [
        (["--controller", "deq", "--quantum", "1"], "below the floor of 100"),
        (["--controller", "equi", "--quantum", str(MIN_QUANTUM - 1)], "min_quantum"),
        (["--controller", "deq", "--quantum-ms", "0.00001"], "quantum 27 cycles"),
        # an infinite number of cycles: an OverflowError traceback (exit 1)
        (["--controller", "deq", "--quantum-ms", "1.7e308"], "above the limit of 2^40"),
        # the option, not the Python keyword (it said "quantum_ms=-1.0 must be ...")
        (["--quantum-ms", "-1"], "--quantum-ms -1.0: must be a positive number"),
        (["--quantum-ms", "nan"], "--quantum-ms nan: must be a positive number"),
        (["--seed", str(2**63)], "2^63 - 1"),
    ],
)
def test_quanta_and_seeds_on_the_command_line(cli, fib_trace, tmp_path, args, message):
    err = _refused(cli, "--jobs", _jobset(tmp_path, fib_trace, ""), "-m", MACHINE, *args)
    assert message in err


def test_quantum_in_two_units_or_without_jobs_says_which(cli, fib_trace, tmp_path):
    """Both units at once, and a quantum for a single trace, are two mistakes with two
    messages (one message, "applies to --jobs runs, instead of --quantum", read wrong for
    both)."""
    js = _jobset(tmp_path, fib_trace, "")
    err = _refused(cli, "--jobs", js, "-m", MACHINE, "--quantum-ms", "1", "--quantum", "5000")
    assert "give --quantum or --quantum-ms, not both" in err
    err = _refused(cli, "--trace", str(fib_trace), "-m", MACHINE, "--quantum-ms", "1")
    assert "--quantum-ms applies to --jobs runs" in err and "instead" not in err


@pytest.mark.parametrize(
    "head,message",
    [
        ("seed: 18446744073709551616\n", "seed"),
        ("seed: 9223372036854775808\n", "seed"),
        ("seed: 1\ncontroller: deq\nquantum: 7\n", "below the floor"),
        ("seed: 1\ncontroller: deq\nquantum_ms: 0.00000001\n", "below the floor"),
        # 2^63 cycles overflowed the engine's cycle counts (an IndexError, exit 1)
        ("seed: 1\ncontroller: deq\nquantum: 9223372036854775808\n", "1099511627776"),
        ("seed: 1\ncontroller: deq\nquantum: 1099511627777\n", "1099511627776"),
        ("seed: 1\ncontroller: deq\nquantum_ms: 1000000\n", "above the limit of 2^40"),
        (
            "seed: 1\ncontroller: deq\ncontroller_params: {quantum_ms: 1.7e+308}\n",
            "quantum_ms=1.7e+308: inf cycles",
        ),
    ],
)
def test_seeds_and_quanta_in_the_file(cli, fib_trace, tmp_path, head, message):
    err = _refused(cli, "--jobs", _jobset(tmp_path, fib_trace, "", head), "-m", MACHINE)
    assert message in err


def test_controller_errors_name_the_job_file_they_come_from(cli, fib_trace, tmp_path):
    head = "seed: 1\ncontroller: equi\nquantum: 5\n"
    js = _jobset(tmp_path, fib_trace, "", head)
    assert _refused(cli, "--jobs", js, "-m", MACHINE).startswith(
        f"simsched: error: {js}: controller 'equi': quantum 5 cycles is below the floor"
    )
    # given on the command line, the value is not the file's
    js = _jobset(tmp_path, fib_trace, "")
    err = _refused(cli, "--jobs", js, "-m", MACHINE, "--quantum", "5")
    assert err.startswith("simsched: error: controller 'equi': quantum 5")
    # --set with --jobs changes the machine: a controller's parameter was "unknown key"
    js = _jobset(tmp_path, fib_trace, "    copies: 2\n")
    err = _refused(
        cli, "--jobs", js, "-m", MACHINE, "--controller", "static", "--set", "shares=1,1"
    )
    assert err.startswith("simsched: error: --set shares=1,1: not a machine field") and (
        "controller_params" in err
    )
    # also where --quantum-ms loads the machine first (it said "shares: unknown key")
    err = _refused(cli, "--jobs", js, "-m", MACHINE, "--quantum-ms", "1", "--set", "shares=1,1")
    assert err.startswith("simsched: error: --set shares=1,1: not a machine field")
    # an arrival too many quanta away: the check the engine makes named no file
    js = _jobset(tmp_path, fib_trace, "    arrival: 1000000000000\n", "quantum: 100\n")
    assert _refused(cli, "--jobs", js, "-m", MACHINE).startswith(f"simsched: error: {js}: job 'fib")


@pytest.mark.parametrize(
    "head,body,message",
    [
        ("seed: true\n", "", "seed"),
        ("seed: 1\ncontroller: deq\nquantum_ms: true\n", "", "quantum_ms"),
        ("seed: 1\n", "    copies: true\n", "copies"),
        ("seed: 1\n", "    arrival: true\n", "arrival"),
        ("seed: 1\n", "    arrival: {poisson: {mean: true}}\n", "mean"),
    ],
)
def test_true_is_not_a_number(cli, fib_trace, tmp_path, head, body, message):
    """YAML's true counted as 1 (one copy, cycle 1, seed 1) before."""
    err = _refused(cli, "--jobs", _jobset(tmp_path, fib_trace, body, head), "-m", MACHINE)
    assert message in err and "a number is needed" in err


@pytest.mark.parametrize(
    "head,body,message",
    [
        ('seed: "1"\n', "", "seed: Input should be a valid integer"),
        ('seed: 1\ncontroller: deq\nquantum: "50000"\n', "", "quantum: Input should be"),
        ("seed: 1\n", '    copies: "2"\n', "jobs.0.copies: Input should be a valid integer"),
        ("seed: 1\n", '    arrival: "5"\n', "jobs.0.arrival: Input should be a valid integer"),
        ("seed: 1\n", '    copies: 2\n    arrival: [0, "5"]\n', "jobs.0.arrival.1: Input"),
        ("seed: 1\n", '    arrival: {poisson: {mean: 9, start: "5"}}\n', "poisson.start: Input"),
    ],
)
def test_a_quoted_number_is_not_an_integer(cli, fib_trace, tmp_path, head, body, message):
    """A YAML string such as "2" was taken as the integer 2, which the machine and sweep
    schemas refuse."""
    err = _refused(cli, "--jobs", _jobset(tmp_path, fib_trace, body, head), "-m", MACHINE)
    assert message in err


_BIG = st.integers(2**60 + 1, 2**80)


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    case=st.one_of(
        st.tuples(st.just("arrival"), _BIG),
        st.tuples(st.just("arrival"), st.integers(-(2**70), -1)),
        st.tuples(st.just("mean"), st.floats(1.2e18, 1e300)),
        st.tuples(st.just("mean"), st.floats(-1e300, 0)),
        st.tuples(st.just("start"), _BIG),
        st.tuples(st.just("shares"), st.integers(0, 3)),
        st.tuples(st.just("quantum"), st.integers(1, MIN_QUANTUM - 1)),
        st.tuples(st.just("seed"), st.integers(2**63, 2**70)),
        st.tuples(st.just("cli-seed"), st.integers(2**63, 2**70)),
    )
)
def test_fuzzed_job_sets_are_one_line_and_exit_2(cli, fib_trace, tmp_path_factory, case):
    tmp_path = tmp_path_factory.mktemp("fuzz")
    kind, v = case
    head, body, extra = "seed: 1\n", "    copies: 4\n", []
    if kind == "arrival":
        body += f"    arrival: {v}\n"
    elif kind == "mean":
        body += f"    arrival: {{poisson: {{mean: {v!r}}}}}\n"
    elif kind == "start":
        body += f"    arrival: {{poisson: {{mean: 10, start: {v}}}}}\n"
    elif kind == "shares":
        shares = [2, 2, 2, 2]
        shares[v] = 0
        head += f"controller: static\ncontroller_params: {{shares: {shares}}}\n"
    elif kind == "quantum":
        head += f"controller: deq\nquantum: {v}\n"
    elif kind == "seed":
        head = f"seed: {v}\n"
    else:
        extra = ["--seed", str(v)]
    _refused(cli, "--jobs", _jobset(tmp_path, fib_trace, body, head), "-m", MACHINE, *extra)


class _Nothing(Controller):
    """Gives no job a core: the replay can only deadlock."""

    name = "nothing"

    def allot(self, now, jobs):
        return {}


def test_deadlock_is_one_line_naming_jobs_and_cores(fib_trace):
    m = load_machine(TWO_BY_TWO)
    ws = get_scheduler("ws")
    tr = open_trace(fib_trace)
    specs = [JobSpec(tr, ws, ws.resolve_params({}), 0, f"fib{k}") for k in range(2)]
    rep = Replay(m, specs, controller=_Nothing(m, 2), memory=MemorySystem(m))
    with pytest.raises(DeadlockError) as info:
        rep.run()
    msg = str(info.value)
    assert "\n" not in msg and msg.startswith("deadlock at cycle 0")
    assert "fib0 (" in msg and "fib1 (" in msg and "no core" in msg
    assert "free cores: 0-3" in msg
    assert np.all(np.asarray(rep.busy) == 0)


def test_ctrl_c_during_run_jobs_records_interrupted(cli, fib_trace, tmp_path, monkeypatch):
    """Ctrl-C during ``run --jobs --out D``: status ``interrupted`` (not error), exit 130,
    no promise of resuming, no temporary files; ``plot allotment D`` says what happened."""
    import json

    import simsched.engine

    def ctrl_c(self):
        raise KeyboardInterrupt

    monkeypatch.setattr(simsched.engine.Replay, "run", ctrl_c)
    out = tmp_path / "D"
    code, _, err = cli("run", "--jobs", _jobset(tmp_path, fib_trace, ""), "-m", MACHINE, "-o", out)
    assert code == 130 and err == "simsched: error: interrupted (Ctrl-C)\n"
    rec = json.loads((out / "result.json").read_text())
    assert rec["status"] == "interrupted" and rec["kind"] == "jobs"
    assert sorted(p.name for p in out.iterdir()) == ["config.json", "result.json"]
    code, _, err = cli("plot", "allotment", out, "-o", tmp_path / "a.png")
    assert code == 2 and "interrupted (Ctrl-C or SIGTERM) before it ended" in err
    assert err.count("\n") == 1


def test_seed_zero_overrides_the_job_sets_seed(cli, tmp_path, fib_trace):
    """``--seed 0`` was taken for "no --seed" and the file's seed ran instead."""
    head = "seed: 5\ncontroller: equi\n"
    path = _jobset(tmp_path, fib_trace, "    copies: 2\n", head)
    seeds = {}
    for args in ((), ("--seed", "0"), ("--seed", "3")):
        code, out, err = cli("run", "--jobs", path, "-m", "itrs-scaling-4", "--json", *args)
        assert code == 0, err
        seeds[args] = json.loads(out)["seed"]
    assert seeds == {(): 5, ("--seed", "0"): 0, ("--seed", "3"): 3}


def test_a_job_set_and_a_sweep_spec_given_for_each_other_say_so(cli, fib_trace, tmp_path):
    """A job-set file given to `sweep run` (or a spec to `run --jobs`) is named for what it
    is, instead of a list of every key the other schema misses and refuses."""
    js = _jobset(tmp_path, fib_trace, "")
    for cmd in (("sweep", "run"), ("sweep", "status")):
        code, _, err = cli(*cmd, js)
        assert code == 2 and err.count("\n") == 1, err
        assert "a job-set file" in err and "simsched run --jobs" in err
        assert "required key missing" not in err
    spec = tmp_path / "s.yaml"
    spec.write_text("name: s\nworkloads: [fib]\nmachines: [itrs-scaling-1]\nschedulers: [ws]\n")
    err = _refused(cli, "--jobs", spec, "-m", MACHINE)
    assert "a sweep spec" in err and "simsched sweep run" in err
