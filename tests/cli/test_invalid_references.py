"""A reference outside the memory model's address space is refused at the door, once.

The regression of issue 15: a trace holding a reference at or above 2^48, of size 0, or
running past 2^48 used to be accepted by ``trace validate`` and then served differently by
the engine's one-core and interleaved paths.  Every command that reads references must now
refuse it with one line and exit status 2, and a valid trace (with references up to the
last valid byte) must give the same per-core reference and access counts on every path.
"""

from __future__ import annotations

import numpy as np
import pytest

import simsched
from simsched.cli import main
from simsched.errors import TraceFormatError
from simsched.trace import TraceBuilder, open_trace
from tests.trace import forge
from tests.trace.forge import private_cache  # noqa: F401 - a fixture

LIMIT = 1 << 48
MACHINES = ("itrs-scaling-1", "itrs-scaling-2")


pytestmark = pytest.mark.usefixtures("private_cache")


@pytest.fixture(scope="module")
def valid(tmp_path_factory):
    """Four tasks; line-straddling references; the last valid bytes below 2^48."""
    p = tmp_path_factory.mktemp("v") / "valid.sst"
    with TraceBuilder(p, chunk_refs=50, program="edge") as b:
        for k in range(4):
            b.spawn()
            b.refs(np.arange(40, dtype=np.uint64) * 20 + 4096 * k, 8, k % 2 == 0, 3)
            b.ref(LIMIT - 8 - 64 * k, 8, True)
            b.ret()
        b.ref(LIMIT - 1, 1, False)
        b.sync()
    return p


def cli(args, capsys):
    with pytest.raises(SystemExit) as exc:
        main([str(a) for a in args])
    out = capsys.readouterr()
    return exc.value.code, out.err


BAD = {
    "address": (LIMIT, 8),
    "size": (0x1000, 0),
    "wraps": (LIMIT - 4, 8),
}


@pytest.mark.parametrize("kind", sorted(BAD))
def test_every_command_refuses_an_invalid_reference(tmp_path, valid, capsys, kind):
    addr, size = BAD[kind]
    bad = forge.with_reference(valid, tmp_path / f"{kind}.sst", 77, addr, size)
    commands = [
        ["trace", "validate", bad],
        *(["run", "-t", bad, "-m", m, "-s", "ws"] for m in MACHINES),
        ["run", "-t", bad, "-m", "itrs-scaling-2", "-s", "pdf", "--window", "0"],
        ["memsim", "-m", "itrs-scaling-1", "-t", bad],
        ["profile", bad],
    ]
    for args in commands:
        code, err = cli(args, capsys)
        assert code == 2, (args, err)
        lines = err.strip().splitlines()
        assert len(lines) == 1, (args, err)
        # reference 77 is the 28th of the second chunk (chunks of 50)
        assert f"{bad}: chunk 1 at byte" in lines[0] and "reference 27 (reference 77" in err
        assert f"invalid reference (address {addr:#x}, size {size})" in err


def test_the_api_refuses_it_too(tmp_path, valid):
    bad = forge.with_reference(valid, tmp_path / "a.sst", 3, LIMIT + 64, 8)
    with pytest.raises(TraceFormatError, match="not below 2\\^48"):
        simsched.run(bad, "itrs-scaling-1", "ws", speedup=False)


def _expected_per_core(trace, strand_core, cores: int, line: int):
    """References and first-level accesses of each core, computed from the trace alone."""
    refs = np.zeros(cores, np.int64)
    accesses = np.zeros(cores, np.int64)
    rs = trace.strands.ref_start
    for s, c in enumerate(strand_core):
        r = trace.refs(int(rs[s]), int(rs[s + 1]))
        last = r.addr + r.size.astype(np.uint64) - np.uint64(1)
        straddles = int(np.count_nonzero((r.addr // line) != (last // line)))
        refs[c] += len(r)
        accesses[c] += len(r) + straddles
    return refs, accesses


def test_every_engine_path_counts_the_same_references(valid):
    totals = set()
    with open_trace(valid) as t:
        for machine in MACHINES:
            for window in (0, None):
                res = simsched.run(t, machine, "ws", window=window, speedup=False)
                er, l1 = res.engine_result, res.mem_stats["levels"][0]
                refs, acc = _expected_per_core(t, er.strand_core, len(er.refs_per_core), l1["line"])
                assert er.refs_per_core.tolist() == refs.tolist(), (machine, window)
                assert [i["accesses"] for i in l1["instances"]] == acc.tolist(), (machine, window)
                totals.add((int(refs.sum()), int(acc.sum()), res.record["refs"]))
    (n, n_acc, rec_refs), *others = totals
    assert not others and n == rec_refs == t.header.n_refs and n_acc > n  # some straddle
