"""The registry: generate(), params_of(), errors, determinism and layout of every generator."""

from __future__ import annotations

import numpy as np
import pytest

from simsched.errors import ConfigError
from simsched.trace import EDGE_CONT, EDGE_JOIN, EDGE_SPAWN, open_trace, span, validate
from simsched.workloads import CHUNK_PARAM, WORKLOADS, generate, params_of

SMALL = {
    "mergesort": dict(n="2^10", grain="64", merge_grain="100"),
    "hashjoin": dict(n_build="600", grain="50", subpart_kb="16"),
    "heat": dict(nx="34", ny="20", iters="3", cutoff="4"),
    "sor": dict(nx="20", ny="9", iters="2", cutoff="3", irregular="true"),
    "9p": dict(nx="18", ny="10", iters="2", cutoff="4"),
    "6p": dict(nx="12", ny="6", nz="5", iters="2", cutoff="2", irregular="true"),
    "25p": dict(nx="14", ny="10", nz="9", iters="1", cutoff="2"),
    "ge": dict(n="24", cutoff="4", irregular="true"),
    "datapar": dict(n="5", elems="100", reps="2"),
    "fib": dict(n="11", cutoff="3"),
}
SEEDED = ("mergesort", "hashjoin")


def test_registry_lists_every_generator():
    assert set(WORKLOADS) == set(SMALL)
    for name, w in WORKLOADS.items():
        assert w.name == name and w.summary
        docs = params_of(name)
        assert list(docs) == [p.name for p in w.params]
        for default, doc in docs.values():
            assert doc.startswith("(") and len(doc) > 10
            assert default is None or isinstance(default, int | bool | float)


@pytest.mark.parametrize("name", sorted(SMALL))
def test_every_generator_writes_a_valid_trace(tmp_path, name):
    path = tmp_path / f"{name}.sst"
    h = generate(name, path, **SMALL[name])  # strings, as the CLI passes them
    assert h.program == name and h.backend == "synthetic" and not h.gaps_exact
    assert h.params["workload"] == name
    assert validate(path)["refs"] == h.n_refs > 0
    with open_trace(path) as t:
        kinds = np.bincount(t.edges.kind, minlength=3)
        spawns = h.n_frames - 1
        # balance: every spawn returned (one join edge each) and continued its parent;
        # every other continuation edge is an effective sync, which adds one strand
        assert kinds[EDGE_SPAWN] == spawns and kinds[EDGE_JOIN] == spawns
        syncs = kinds[EDGE_CONT] - spawns
        assert syncs >= 1
        assert h.n_strands == 1 + 2 * spawns + syncs
        # work and span
        instr = t.strands.instr
        assert int(instr.sum()) == h.n_instructions >= h.n_refs
        sp = span(t)
        assert int(instr.max()) <= sp <= h.n_instructions
        # references fall inside the arrays the program allocated
        regions = list(h.params["regions"].values())
        for c in t.iter_chunks():
            a = c.addr.astype(np.int64)
            inside = np.zeros(len(a), bool)
            for r in regions:
                inside |= (a >= r["base"]) & (a + c.size <= r["base"] + r["bytes"])
            assert inside.all()


@pytest.mark.parametrize("name", sorted(SMALL))
def test_deterministic(tmp_path, name):
    h1 = generate(name, tmp_path / "a.sst", **SMALL[name])
    h2 = generate(name, tmp_path / "b.sst", **SMALL[name])
    assert h1.digest == h2.digest
    assert (tmp_path / "a.sst").read_bytes() == (tmp_path / "b.sst").read_bytes()
    if name in SEEDED:
        h3 = generate(name, tmp_path / "c.sst", **SMALL[name], seed=2)
        assert h3.digest != h1.digest
        assert h3.n_strands == h1.n_strands or name == "hashjoin"


def test_errors(tmp_path):
    with pytest.raises(ConfigError, match="unknown workload 'quicksort'.*mergesort"):
        generate("quicksort", tmp_path / "x.sst")
    with pytest.raises(ConfigError, match="workload mergesort: parameter grain"):
        generate("mergesort", tmp_path / "x.sst", n=16, grain="0")
    with pytest.raises(ConfigError, match="workload heat: unknown parameter 'rows'"):
        generate("heat", tmp_path / "x.sst", rows=3)
    with pytest.raises(ConfigError, match="parameter elem_size: must be one of 4, 8"):
        generate("mergesort", tmp_path / "x.sst", elem_size=2)
    assert not list(tmp_path.iterdir())  # nothing written, not even a temporary file
    with pytest.raises(ConfigError, match="unknown workload"):
        params_of("nope")


def test_calling_a_workload_returns_its_run():
    from tests.oracles.workloads import Recorder

    r = Recorder()
    run = WORKLOADS["mergesort"](r, n="100", grain=10)
    r.close()
    assert run.params["merge_grain"] == 10
    assert set(run.heap.regions) == {"A", "tmp"}
    assert np.array_equal(run.result["output"], np.sort(run.result["input"]))


def test_generate_refuses_an_input_too_large_for_the_host(tmp_path, monkeypatch):
    from simsched import host

    monkeypatch.setattr(host, "available_bytes", lambda: 2**30)
    out = tmp_path / "m.sst"
    with pytest.raises(ConfigError, match=r"^mergesort \(n=268435456, .*needs about 13\.4 GB"):
        generate("mergesort", out, n=2**28)
    assert not out.exists()


def test_every_generator_declares_its_memory():
    for name, w in WORKLOADS.items():
        need = w.module.memory(w.resolve({}))
        assert 50 * 2**20 < need < 2**30, name  # defaults: well under a gigabyte


def test_fib_40_is_refused_up_front(tmp_path, monkeypatch):
    # fib(40) has 3.3e8 frames: hundreds of GB of builder tables, refused before any work
    from simsched import host

    monkeypatch.setattr(host, "available_bytes", lambda: 64 * 2**30)
    out = tmp_path / "f.sst"
    with pytest.raises(ConfigError, match=r"^fib \(n=40, cutoff=2\): .*needs about 616\.9 GB"):
        generate("fib", out, n=40)
    assert not out.exists()


@pytest.mark.parametrize(
    "name, params",
    [
        ("fib", {"n": 20}),
        ("datapar", {"n": 2, "elems": 1 << 18}),
        ("hashjoin", {"n_build": 1 << 18}),
        ("mergesort", {"n": 1 << 14, "grain": 32}),
        # a repeat trace: two steps stored, 1.4 M table rows expanded when it closes
        ("heat", {"nx": 258, "ny": 3, "cutoff": 1, "iters": 400, "init": False}),
    ],
)
def test_declared_memory_covers_the_peak(tmp_path, name, params):
    import tracemalloc

    generate(name, tmp_path / "warm.sst", **params)  # imports and caches first
    w = WORKLOADS[name]
    tracemalloc.start()
    try:
        generate(name, tmp_path / "t.sst", **params)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    need = w.module.memory(w.resolve(params))
    assert peak <= need < 4 * peak + 2**27, (peak, need)


def test_chunk_refs_sets_the_trace_chunks_and_nothing_else(tmp_path):
    a = generate("mergesort", tmp_path / "a.sst", n=1 << 12)
    b = generate("mergesort", tmp_path / "b.sst", n=1 << 12, chunk_refs="2^12")
    assert (a.n_refs, a.n_strands, a.params) == (b.n_refs, b.n_strands, b.params)
    with open_trace(tmp_path / "a.sst") as ta, open_trace(tmp_path / "b.sst") as tb:
        assert int(tb.index["n"].max()) == 1 << 12 < int(ta.index["n"].max())
        assert int(tb.index["n"].sum()) == int(ta.index["n"].sum())


@pytest.mark.parametrize("bad", ["100", "6000", "2^21"])
def test_bad_chunk_refs_is_refused(tmp_path, bad):
    with pytest.raises(ConfigError, match="chunk_refs"):
        generate("mergesort", tmp_path / "a.sst", n=1 << 12, chunk_refs=bad)


def test_generate_refuses_a_name_that_is_no_string(tmp_path):
    """Before: TypeError (unhashable type: 'list')."""
    with pytest.raises(ConfigError, match=r"^unknown workload \['fib'\]"):
        generate(["fib"], tmp_path / "t.sst", n=8)
    with pytest.raises(ConfigError, match="^path=None: expected a path"):
        generate("fib", None, n=8)
    with pytest.raises(ConfigError, match="^progress=5: expected a function or None"):
        generate("fib", tmp_path / "t.sst", n=8, progress=5)
    assert not (tmp_path / "t.sst").exists()


def test_a_name_in_another_case_writes_the_canonical_name(tmp_path):
    h = generate(" FIB", tmp_path / "t.sst", n=8)
    assert h.program == "fib" and h.params["workload"] == "fib"
    assert h.digest == generate("fib", tmp_path / "u.sst", n=8).digest


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_none_for_a_parameter_is_refused_not_taken_for_its_default(tmp_path, name):
    """``generate("fib", out, n=None)`` wrote the default trace (n=22) without a word: a
    value computed as None by mistake read as "the default".  Every parameter of every
    generator, chunk_refs too, refuses it alike."""
    names = [*params_of(name), CHUNK_PARAM.name]
    for param in names:
        with pytest.raises(ConfigError) as info:
            generate(name, tmp_path / "t.sst", **{param: None})
        said = str(info.value)
        assert said.startswith(f"workload {WORKLOADS[name].name}: parameter {param} is None; ")
        assert "leave it out for its default" in said
    assert not (tmp_path / "t.sst").exists()


def test_none_on_the_command_line_is_refused_too(tmp_path, capsys):
    from simsched.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["trace", "gen", "fib", "-p", "n=none", "-o", str(tmp_path / "t.sst")])
    assert exc.value.code == 2
    assert capsys.readouterr().err == (
        "simsched: error: workload fib: parameter n is None; leave it out for its default (22)\n"
    )


#: A plug-in generator module, in a file of its own so that its functions' frames are its
#: own: one strand of ``n`` references, ``declared`` of them declared; ``fail`` raises.
_PLUGIN = """
import numpy as np
from simsched.workloads import Heap, Param, gen_memory

NAME = "plugwl"
SUMMARY = "one strand of n references"
PARAMS = (
    Param("n", int, 100, "references", minimum=0),
    Param("declared", int, 100, "what references() says", minimum=0),
    Param("fail", bool, False, "raise inside emit"),
)


def finish_params(params):
    return params


def layout(params):
    heap = Heap()
    heap.malloc("A", 8 * max(params["n"], 1))
    return heap


def memory(params):
    return gen_memory(1, batch_refs=params["n"])


def references(params):
    return params["declared"]


def emit(b, params, heap):
    if params["fail"]:
        return {}["no such key"]
    base = heap.regions["A"].base
    for lo in range(0, params["n"], 1000):
        hi = min(lo + 1000, params["n"])
        b.refs(base + 8 * np.arange(lo, hi, dtype=np.uint64), 8, False, 1)
    return {}
"""


@pytest.fixture
def plugwl(tmp_path, monkeypatch):
    """The generator of :data:`_PLUGIN`, registered as ``plugwl`` while the test runs."""
    import importlib

    from simsched.workloads import GENERATORS, Workload

    (tmp_path / "plugwl.py").write_text(_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setitem(GENERATORS.entries, "plugwl", Workload(importlib.import_module("plugwl")))
    out = tmp_path / "out"
    out.mkdir()
    return out


def test_an_exception_in_a_generators_code_names_the_generator(plugwl):
    """It was a bare traceback, where a scheduler's names the scheduler."""
    with pytest.raises(KeyError) as info:
        generate("plugwl", plugwl / "x.sst", fail=True)
    assert info.value.__notes__ == ["raised by workload generator 'plugwl' (plugwl)"]
    assert not list(plugwl.iterdir())
    generate("plugwl", plugwl / "x.sst")  # the same generator, no exception: no note


@pytest.mark.parametrize(
    ("n", "declared", "wrote"),
    [(300, 100, "it wrote 300"), (100, 300, "it wrote 100"), (3 * 4096, 4096, "it wrote more")],
)
def test_a_generator_that_writes_other_than_it_declared_is_refused(plugwl, n, declared, wrote):
    """A plug-in declaring 4,096 references and writing 24,576 was accepted, and so got
    past the limit checked against what it declares; the last case stops at the first
    chunk past the count."""
    from simsched.errors import PluginError

    with pytest.raises(
        PluginError,
        match=rf"^workload generator 'plugwl' \(plugwl\): references\(\) declared {declared:,} "
        rf"references for n={n}, declared={declared}, fail=False, but {wrote}",
    ):
        generate("plugwl", plugwl / "x.sst", n=n, declared=declared, chunk_refs=4096)
    assert not list(plugwl.iterdir())  # nothing written
    h = generate("plugwl", plugwl / "x.sst", n=n, declared=n)
    assert h.n_refs == n
