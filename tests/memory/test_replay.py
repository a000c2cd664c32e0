"""Tests of the scheduler-free trace replay (``simsched memsim``)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from typer.testing import CliRunner

from simsched.cli import app, main
from simsched.machine import load_machine
from simsched.memory.replay import replay_trace
from simsched.trace import TraceBuilder, open_trace
from tests.oracles.memory_oracle import MemoryOracle

TWO_CORES = {
    "name": "two",
    "cores_per_socket": 2,
    "caches": [
        {"name": "L1", "scope": "core", "size": 512, "assoc": 2, "line": 64, "hit_latency": 1},
        {"name": "L2", "scope": "socket", "size": 4096, "assoc": 4, "line": 64, "hit_latency": 7},
    ],
    "memory": {"latency": 80, "service_interval": 9},
}


def build_trace(path, seed=0, chunk_refs=64):
    """A small fork/join trace with gaps, tail instructions and straddling references.

    Returns the per-strand reference lists in serial order as built."""
    rng = np.random.default_rng(seed)

    def refs(b, n):
        for _ in range(n):
            addr = int(rng.integers(0, 3000))
            size = int(rng.choice([1, 8, 8, 64, 100]))
            b.ref(addr, size, bool(rng.random() < 0.4), int(rng.integers(0, 5)))

    with TraceBuilder(path, program="memsim-test", chunk_refs=chunk_refs) as b:
        refs(b, 30)
        b.instr(7)
        for _ in range(3):
            b.spawn()
            refs(b, int(rng.integers(0, 40)))
            b.instr(int(rng.integers(0, 9)))
            b.ret()
            refs(b, 5)
        b.sync()
        refs(b, 20)
        b.instr(3)


def oracle_replay(machine, path, mode):
    """Serial replay with the oracle: gaps plus strand tails, one time line."""
    orc = MemoryOracle(machine)
    now = 0
    pending = 0
    with open_trace(path) as t:
        starts = t.strands.ref_start
        for s in range(len(t.strands)):
            c = t.refs(int(starts[s]), int(starts[s + 1]))
            core = s % machine.cores if mode == "rr" else 0
            gaps = c.gap.astype(np.int64)
            for i in range(len(c)):
                now += int(gaps[i]) + pending
                pending = 0
                now += orc.access(core, int(c.addr[i]), int(c.size[i]), bool(c.write[i]), now)
            pending += int(t.strands.instr[s]) - len(c) - int(gaps.sum())
    return orc.stats(), now + pending


@pytest.mark.parametrize("mode", ["0", "rr"])
def test_replay_matches_oracle_and_invariants(tmp_path, mode):
    path = tmp_path / "t.sst"
    build_trace(path)
    m = load_machine(TWO_CORES)
    res = replay_trace(m, path, mode)
    want, end = oracle_replay(m, path, mode)
    for key in ("levels", "cores", "nodes", "offchip_bytes"):
        assert res[key] == want[key]
    assert res["cycles"] == end
    with open_trace(path) as t:
        n_refs = t.header.n_refs
        n_instr = t.header.n_instructions
        lines = 0
        for c in t.iter_chunks():
            lines += int(((c.addr + c.size - 1) // 64 - c.addr // 64 + 1).sum())
    assert res["refs"] == n_refs
    assert res["extra_lines"] == lines - n_refs > 0
    assert res["levels"][0]["accesses"] == lines
    for lvl in res["levels"]:
        assert lvl["hits"] + lvl["misses"] == lvl["accesses"]
    # Time line: every instruction costs a cycle, every reference its latency.
    assert res["cycles"] == n_instr - n_refs + sum(c["cycles"] for c in res["cores"])
    if mode == "rr":
        assert res["cores"][1]["refs"] > 0
        assert res["levels"][0]["invalidations"] > 0
    else:
        assert res["cores"][1]["refs"] == 0


@pytest.mark.parametrize("mode", ["0", "rr"])
def test_chunking_does_not_change_an_out_of_order_replay(tmp_path, mode):
    """Chunk boundaries are no event of the program: the same references in chunks of 64
    and in one chunk give the same statistics and cycles on an out-of-order core (each
    chunk's batch drained its misses in flight, so the cycles depended on the chunking)."""
    m = load_machine({**TWO_CORES, "core": {"model": "out-of-order", "mshrs": 4, "rob": 16}})
    res = []
    for chunk_refs in (64, 1 << 20):
        path = tmp_path / f"t{chunk_refs}.sst"
        build_trace(path, chunk_refs=chunk_refs)
        with open_trace(path) as t:
            assert (len(t.index) > 1) == (chunk_refs == 64)
        r = replay_trace(m, path, mode)
        del r["trace"]
        res.append(r)
    assert res[0] == res[1]


@pytest.mark.parametrize("mode", ["0", "rr"])
@pytest.mark.parametrize("model", ["blocking", "out-of-order"])
def test_a_tail_longer_than_32_bits_delays_the_next_reference(tmp_path, mode, model):
    """A strand's tail of 2^32 instructions or more (valid: TraceBuilder.instr takes any
    count) is folded into the next reference's gap, which the memory model holds in 32
    bits: the replay raised ValueError ("gaps must be between 0 and 2**32 - 1"), a
    traceback from `simsched memsim` and from `run -s cab`.  It now costs exactly the
    cycles of the same tail less 2^33 plus 2^33."""
    core = {"model": model} if model == "blocking" else {"model": model, "mshrs": 4, "rob": 16}
    m = load_machine({**TWO_CORES, "core": core})
    cycles = []
    for tail in (5 << 20, (5 << 20) + (1 << 33)):
        path = tmp_path / f"t{tail}.sst"
        with TraceBuilder(path, program="tail") as b:
            b.ref(0x1000, 8, False, 3)
            b.ref(0x2000, 8, False, 1)
            b.instr(tail)
            b.spawn()
            b.ref(0x1040, 8, True, 2)
            b.ret()
            b.sync()
        r = replay_trace(m, path, mode)
        cycles.append(r["cycles"])
    assert cycles[1] - cycles[0] == 1 << 33


def test_cli_json_and_table(tmp_path):
    path = tmp_path / "t.sst"
    build_trace(path, seed=3)
    runner = CliRunner()
    out = runner.invoke(
        app, ["memsim", "--machine", "itrs-scaling-1", "--trace", str(path), "--json"]
    )
    assert out.exit_code == 0, out.output
    res = json.loads(out.stdout)
    assert res["refs"] + res["extra_lines"] == res["levels"][0]["accesses"]
    for lvl in res["levels"]:
        assert lvl["hits"] + lvl["misses"] == lvl["accesses"]
    out = runner.invoke(
        app, ["memsim", "-m", "itrs-scaling-2", "-t", str(path), "--core-of-strand", "rr"]
    )
    assert out.exit_code == 0, out.output
    assert "L1" in out.stdout and "off-chip traffic" in out.stdout


def test_cli_errors_are_one_line(tmp_path, capsys):
    path = tmp_path / "t.sst"
    build_trace(path)
    with pytest.raises(SystemExit) as exc:
        main(["memsim", "-m", "itrs-scaling-1", "-t", str(path), "--core-of-strand", "2"])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--core-of-strand" in err[0]
    bad = tmp_path / "bad.sst"
    bad.write_bytes(path.read_bytes()[:200])
    with pytest.raises(SystemExit) as exc:
        main(["memsim", "-m", "itrs-scaling-1", "-t", str(bad)])
    assert exc.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "bad.sst" in err[0]


def test_cli_table_shows_the_prefetcher_and_the_links(tmp_path):
    """The table showed neither: with a prefetcher the nodes' DRAM lines exceeded the last
    level's misses, and remote lines came with no word of the links they crossed."""
    path = tmp_path / "t.sst"
    build_trace(path, seed=3)
    machine = {
        **TWO_CORES,
        "sockets": 2,
        "cores_per_socket": 1,
        "clock_ghz": 2.0,
        "caches": [{**TWO_CORES["caches"][0], "prefetch": {}}, TWO_CORES["caches"][1]],
        "memory": {**TWO_CORES["memory"], "placement": "interleave"},
        "links": [{"a": 0, "b": 1, "bandwidth": 8.0, "latency": 30}],
    }
    mfile = tmp_path / "m.yaml"
    mfile.write_text(json.dumps(machine))
    runner = CliRunner()
    args = ["memsim", "-m", str(mfile), "-t", str(path), "--core-of-strand", "rr"]
    res = json.loads(runner.invoke(app, [*args, "--json"]).stdout)
    pf = res["prefetch"]
    assert pf["issued"] > 0 and sum(ln["lines"] for ln in res["links"]) > 0
    out = runner.invoke(app, args, terminal_width=200)
    assert out.exit_code == 0, out.output
    assert (
        f"prefetcher at L1: {pf['issued']:,} lines issued ({pf['beyond']:,} from beyond "
        f"the per-core levels), {pf['useful']:,} useful ({pf['late']:,} of them late), "
        f"{pf['useless']:,} useless"
    ) in out.stdout
    rows = [ln.split("│")[1:-1] for ln in out.stdout.splitlines() if ln.count("│") == 6]
    cells = {tuple(c.strip() for c in r[:3]) for r in rows}
    for ln in res["links"]:
        assert (str(ln["from"]), str(ln["to"]), f"{ln['lines']:,}") in cells


@pytest.mark.parametrize("bad", ["2", ["rr"], np.array(["rr", "0"]), None])
def test_a_placement_that_is_not_rr_or_0_names_the_argument(tmp_path, bad):
    """A Python caller was told of --core-of-strand, and an array failed inside with
    "The truth value of an array ... is ambiguous"."""
    from simsched.errors import ConfigError, command_line

    path = tmp_path / "t.sst"
    with TraceBuilder(path) as b:
        b.ref(64, 8, False)
    machine = load_machine("itrs-scaling-1")
    with pytest.raises(ConfigError, match=r"^core_of_strand=.*: expected 'rr' or '0'$"):
        replay_trace(machine, path, bad)
    with command_line(), pytest.raises(ConfigError, match=r"^--core-of-strand: .* is not one of"):
        replay_trace(machine, path, bad)
