"""Every generator's ``references(params)`` against the traces it writes (the oracle), the
progress total, and the up-front refusal of too many references."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsched.errors import ConfigError
from simsched.trace import format as fmt
from simsched.trace import open_trace, repeat
from simsched.workloads import (
    CHUNK_PARAM,
    MAX_GENERATED_REFS,
    WORKLOADS,
    check_size,
    generate,
    stencil,
)

EXPERIMENTS = Path(__file__).parents[2] / "experiments"
#: instructions a reference the generators stay under (docstring of _check_references:
#: with at most 2^42 references, the format's 2^50 instructions cannot be reached)
INSTRUCTIONS_PER_REF = 2**8


def _oracle(path: Path, name: str, params: dict[str, Any]) -> None:
    """Generate ``name`` and compare what the file holds with what was declared."""
    calls: list[tuple[int, int | None]] = []
    declared = check_size(name, params)
    h = generate(name, path, progress=lambda d, t: calls.append((d, t)), **params)
    stored = h.repeat["stored_refs"] if h.repeat else h.n_refs
    assert declared == stored, (name, params)
    # the progress ends at its total (a trace of no references writes no chunk to report)
    assert calls[-1:] == ([(stored, stored)] if stored else [])
    assert all(t == stored for _, t in calls)
    w = WORKLOADS[name]
    p = w.resolve({k: v for k, v in params.items() if k != CHUNK_PARAM.name})
    whole = getattr(w.module, "program_references", w.module.references)(p)
    assert whole == h.n_refs, (name, params)  # the whole program, a repeated part expanded
    rows = getattr(w.module, "program_rows", None)
    if rows is not None:
        with open_trace(path) as t:
            assert rows(p) == len(t.strands) + len(t.frames) + len(t.edges), (name, params)
        assert rows(p) <= w.module.program_rows_at_most(p), (name, params)
    assert h.n_instructions <= INSTRUCTIONS_PER_REF * max(h.n_refs, 1)


#: every test writes chunks of the fewest references, so that the progress is called often
SMALL_CHUNKS = {CHUNK_PARAM.name: CHUNK_PARAM.minimum}


@st.composite
def _stencils(draw: st.DrawFn, variant: str) -> dict[str, Any]:
    kind = stencil.KINDS[variant]
    edge = 2 * kind.radius + 1
    p: dict[str, Any] = {
        "nx": draw(st.integers(edge, edge + 30)),
        "ny": draw(st.integers(edge + (kind.sweeps == 2), edge + 12)),
        "iters": draw(st.integers(1, 6)),
        "cutoff": draw(st.integers(1, 12)),
        "irregular": draw(st.booleans()),
        "init": draw(st.booleans()),
        "repeat": draw(st.booleans()),
    }
    if kind.dims == 3:
        p["nz"] = draw(st.integers(edge, edge + 6))
    p["uneven"] = p["irregular"] and draw(st.booleans())
    return p


@pytest.mark.parametrize("variant", stencil.VARIANTS)
@settings(max_examples=20)
@given(data=st.data())
def test_stencil_references_are_what_the_file_holds(tmp_path, variant, data):
    _oracle(tmp_path / "t.sst", variant, {**data.draw(_stencils(variant)), **SMALL_CHUNKS})


@settings(max_examples=20)
@given(
    n=st.integers(2, 48),
    cutoff=st.integers(1, 10),
    steps=st.integers(0, 60),
    irregular=st.booleans(),
    uneven=st.booleans(),
    init=st.booleans(),
)
def test_ge_references_are_what_the_file_holds(tmp_path, n, cutoff, steps, irregular, uneven, init):
    p = dict(n=n, cutoff=cutoff, irregular=irregular, uneven=uneven and irregular, init=init)
    if steps:  # else the default, n - 1
        p["steps"] = 1 + steps % (n - 1)
    _oracle(tmp_path / "t.sst", "ge", {**p, **SMALL_CHUNKS})


@settings(max_examples=20)
@given(
    n=st.integers(1, 3000),
    grain=st.integers(1, 300),
    merge_grain=st.integers(1, 400),
    elem_size=st.sampled_from([4, 8]),
    recursive_merge=st.booleans(),
    seed=st.integers(0, 2**32),
    init=st.booleans(),
)
def test_mergesort_references_are_what_the_file_holds(
    tmp_path, n, grain, merge_grain, elem_size, recursive_merge, seed, init
):
    p = dict(n=n, grain=grain, merge_grain=merge_grain, elem_size=elem_size, seed=seed)
    p.update(recursive_merge=recursive_merge, init=init)
    _oracle(tmp_path / "t.sst", "mergesort", {**p, **SMALL_CHUNKS})


@settings(max_examples=20)
@given(
    n_build=st.integers(1, 400),
    matches=st.integers(1, 3),
    grain=st.integers(1, 50),
    subparts=st.sampled_from([None, 1, 2, 4, 8]),
    subpart_kb=st.integers(1, 16),
    record_size=st.integers(8, 70),
    seed=st.integers(0, 2**32),
)
def test_hashjoin_references_are_what_the_file_holds(
    tmp_path, n_build, matches, grain, subparts, subpart_kb, record_size, seed
):
    p = dict(n_build=n_build, matches=matches, grain=grain, subpart_kb=subpart_kb)
    p.update(record_size=record_size, seed=seed)
    if subparts is not None:  # else derived from subpart_kb
        p["subparts"] = subparts
    _oracle(tmp_path / "t.sst", "hashjoin", {**p, **SMALL_CHUNKS})


@settings(max_examples=20)
@given(n=st.integers(1, 20), elems=st.integers(1, 300), reps=st.integers(1, 4), init=st.booleans())
def test_datapar_references_are_what_the_file_holds(tmp_path, n, elems, reps, init):
    _oracle(tmp_path / "t.sst", "datapar", dict(n=n, elems=elems, reps=reps, init=init))


@settings(max_examples=20)
@given(n=st.integers(0, 17), cutoff=st.integers(2, 12))
def test_fib_references_are_what_the_file_holds(tmp_path, n, cutoff):
    _oracle(tmp_path / "t.sst", "fib", dict(n=n, cutoff=cutoff))


#: generators whose defaults write 3e7 references or more (25p 1.1e8: 6 s here)
LARGE_DEFAULTS = ("25p", "mergesort", "6p")


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.slow) if n in LARGE_DEFAULTS else n for n in WORKLOADS],
)
def test_references_at_the_defaults(tmp_path, name):
    _oracle(tmp_path / "t.sst", name, {})


def _study_traces(pattern: str, small: bool) -> dict[tuple, tuple[str, dict[str, Any]]]:
    """The generated traces of the studies ``experiments/*/PATTERN``, once each."""
    from simsched.experiments.spec import load_spec
    from simsched.jobset import jobset_generator_recipes

    out = {}
    for spec in sorted(EXPERIMENTS.glob(f"*/{pattern}")):
        try:
            points = load_spec(spec, small=small).points()
        except ConfigError:  # a job set (SAWS's fig4.yaml) is not a sweep
            continue
        recipes = [p.workload for p in points]
        for jobs in {Path(p.spec_dir) / p.workload["path"] for p in points if "path" in p.workload}:
            if jobs.suffix == ".yaml":
                recipes += jobset_generator_recipes(jobs)
        for r in recipes:
            if r.get("kind") == "generator":
                key = (r["generator"], tuple(sorted(r["params"].items())))
                out[key] = (r["generator"], dict(r["params"]))
    return out


def test_references_of_the_studies_small_runs(tmp_path):
    traces = _study_traces("small*.yaml", small=True)
    assert len(traces) >= 15
    for name, params in traces.values():
        _oracle(tmp_path / "t.sst", name, params)


def test_no_study_trace_comes_near_the_limit(monkeypatch):
    from simsched import host

    monkeypatch.setattr(host, "available_bytes", lambda: None)  # references only
    counts = [check_size(n, p) for n, p in _study_traces("*.yaml", small=False).values()]
    assert len(counts) > 100
    assert 100 * max(counts) <= MAX_GENERATED_REFS  # the margin its comment gives


def test_the_limits_keep_the_trace_format_out_of_reach():
    """2^42 references at most, either way, at under 2^8 instructions each."""
    assert MAX_GENERATED_REFS * INSTRUCTIONS_PER_REF <= fmt.MAX_INSTRUCTIONS
    most_whole = repeat.MAX_CHUNKS * CHUNK_PARAM.maximum
    assert most_whole * INSTRUCTIONS_PER_REF <= fmt.MAX_INSTRUCTIONS


@pytest.fixture
def any_memory(monkeypatch):
    """A host with memory for anything: only the reference count can refuse."""
    from simsched import host

    monkeypatch.setattr(host, "available_bytes", lambda: None)


@pytest.mark.parametrize(
    ("name", "params", "message"),
    [
        (
            "datapar",
            dict(n=10**6, elems=10**6),
            r"^datapar \(n=1000000, elems=1000000, reps=4, init=True\): its trace would hold "
            r"9,000,000,000,000 references \(9\.0e\+12\), more than the 4e\+12 a generated "
            r"trace may have: about 2 days of generating at the 45 M references a second "
            r"measured on a 2-core host \(smaller sizes: `simsched trace gen datapar --list`\)$",
        ),
        (
            "ge",
            dict(n="2^20", steps=1),
            r"^ge \(n=1048576, cutoff=16, steps=1, .*\): its trace would hold "
            r"4,398,045,462,526 references \(4\.4e\+12\), .*about 27 hours of generating",
        ),
    ],
)
def test_too_many_references_are_refused_before_anything_is_written(
    tmp_path, any_memory, name, params, message
):
    out = tmp_path / "t.sst"
    with pytest.raises(ConfigError, match=message):
        generate(name, out, **params)
    assert not out.exists() and list(tmp_path.iterdir()) == []
    with pytest.raises(ConfigError, match=message):
        check_size(name, params)  # the sweep's check says the same


def test_the_check_agrees_with_the_readers_limit_on_a_repeated_part(
    tmp_path, any_memory, monkeypatch
):
    """A repeat trace whose whole program a reader would not expand is refused up front,
    not after its stored part is written; one at the limit is written."""
    import simsched.workloads as workloads

    monkeypatch.setattr(repeat, "MAX_CHUNKS", 10)
    # 6,144 references a step in 1.5 chunks of 4,096: 6 steps are 9 chunks, 7 are 11
    heat = dict(nx=34, ny=34, cutoff=8, init=False, chunk_refs=4096)
    h = generate("heat", tmp_path / "ok.sst", iters=6, **heat)
    assert h.n_chunks == 9 and h.repeat is not None
    with pytest.raises(ConfigError, match=r"^heat \(nx=34, .*: its whole program would hold "
                       r"43,008 references, 11 chunks of 4,096, more than the 10 a reader "
                       r"expands a repeated part into \(fewer iterations, or a larger "
                       r"chunk_refs\)$"):  # fmt: skip
        generate("heat", tmp_path / "no.sst", iters=7, **heat)
    # without the check, the reader's own refuses the finished trace
    monkeypatch.setattr(workloads, "_check_references", lambda w, p, c: None)  # no count: no check
    with pytest.raises(Exception, match="copies expand to"):
        generate("heat", tmp_path / "no.sst", iters=7, **heat)
    assert not (tmp_path / "no.sst").exists()


def test_a_repeated_part_a_reader_would_not_expand_into_rows_is_refused_up_front(
    tmp_path, any_memory
):
    """3,578 rows a step and main's 2 (a fine-grained heat: 255 inner nodes a step): 4,688 steps
    fit the reader's 2^24 rows, 4,690 do not, nor 4,689, whose last step is written after
    the copies (the builder's own check at repeat_end() cannot see it)."""
    heat = dict(nx=258, ny=3, cutoff=1, init=False)
    assert check_size("heat", {**heat, "iters": 4688}) == 2 * 256 * 6  # two steps stored
    for iters, rows in ((4689, "16,777,244"), (4690, "16,780,822")):
        with pytest.raises(ConfigError, match=rf"^heat \(nx=258, .*: its whole program would "
                           rf"have {rows} strands, frames and edges, more than the "
                           r"16,777,216 table rows a reader expands a repeated part into "
                           r"\(fewer iterations, or a larger cutoff\)$"):  # fmt: skip
            generate("heat", tmp_path / "t.sst", iters=iters, **heat)
    assert list(tmp_path.iterdir()) == []


def test_the_limit_applies_to_what_the_file_holds(tmp_path, any_memory, monkeypatch):
    """A repeated part counts once: it is written once."""
    import simsched.workloads as workloads

    heat = dict(nx=34, ny=34, cutoff=8, init=False, iters=20)
    monkeypatch.setattr(workloads, "MAX_GENERATED_REFS", 2 * 6144)  # two steps stored
    assert generate("heat", tmp_path / "t.sst", **heat).n_refs == 20 * 6144
    with pytest.raises(ConfigError, match="its trace would hold 122,880 references"):
        generate("heat", tmp_path / "t.sst", **heat, repeat=False)


def test_a_plugin_without_references_generates_without_a_total(tmp_path, monkeypatch):
    """references(params) is optional for a plug-in: no progress total and no limit."""
    import types

    import simsched.workloads as W
    from simsched.workloads import fib as fib_module

    gen = types.ModuleType("mygen")
    for attr in ("SUMMARY", "PARAMS", "finish_params", "layout", "emit", "memory"):
        setattr(gen, attr, getattr(fib_module, attr))
    gen.NAME = "mygen"
    plug = W._adapt(gen, "mygen")
    monkeypatch.setattr(W, "get", lambda name: plug)
    assert W.check_size("mygen", {"n": 8}) is None
    seen: list[tuple[int, int | None]] = []
    h = generate("mygen", tmp_path / "g.sst", n=8, progress=lambda d, t: seen.append((d, t)))
    assert h.n_refs > 0 and seen and all(t is None for _, t in seen)
