"""Regrain (simsched.profile.regrain): merged groups become single strands, nothing else
changes."""

from __future__ import annotations

import re
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from simsched.errors import ConfigError, SimschedError, command_line
from simsched.machine import load_machine
from simsched.profile import (
    build_groups,
    coarsen,
    profile_trace,
    regrain,
    regrain_from_table,
    write_table,
)
from simsched.profile.groups import KIND_NAMES
from simsched.profile.regrain import merge_mask
from simsched.trace import TraceBuilder, copy, open_trace, validate
from tests.profile._traces import build_fanout, build_random, machine_file


def _all_refs(t):
    parts = list(t.iter_chunks())
    if not parts:
        return [np.empty(0)] * 4
    return [
        np.concatenate([getattr(c, k) for c in parts]) for k in ("addr", "size", "write", "gap")
    ]


def _check(src, out, ranges):
    validate(out)
    with open_trace(src) as a, open_trace(out) as b:
        # the same references in the same serial order, and the same instructions (a merged
        # strand's tail instructions move into the gap of the next reference)
        for x, y in zip(_all_refs(a)[:3], _all_refs(b)[:3], strict=True):
            assert np.array_equal(x, y)
        assert a.header.n_instructions == b.header.n_instructions
        assert a.strands.instr.sum() == b.strands.instr.sum()
        assert b.header.n_strands <= a.header.n_strands - sum(hi - lo for lo, hi in ranges)
        # no strand boundary inside a merged group's references
        rs_a, rs_b = a.strands.ref_start, b.strands.ref_start
        for lo, hi in ranges:
            r0, r1 = rs_a[lo], rs_a[hi + 1]
            assert not ((rs_b > r0) & (rs_b < r1)).any()
        return a.header.n_strands, b.header.n_strands


def test_an_empty_table_writes_a_copy(tmp_path):
    """coarsen chose no group of more than one strand: the fine grain stays."""
    src = build_random(tmp_path / "r.sst", 3)
    with open_trace(src) as t:
        assert regrain_from_table(t, tmp_path / "a.sst", []).params["merged_groups"] == 0
    with open_trace(src) as t, TraceBuilder(tmp_path / "b.sst", program="random") as b:
        copy(t, b)
    with open_trace(tmp_path / "a.sst") as a, open_trace(tmp_path / "b.sst") as b:
        for k in ("frame", "ref_start", "instr", "tail"):
            assert np.array_equal(getattr(a.strands, k), getattr(b.strands, k))
        for k in ("parent", "level", "iteration", "first_strand", "last_strand", "key_hash"):
            assert np.array_equal(getattr(a.frames, k), getattr(b.frames, k))


def test_each_kind_of_group_merges(tmp_path):
    src = build_random(tmp_path / "r.sst", 21, depth=3)
    with open_trace(src) as t:
        g = build_groups(t)
        n = 0
        for kind in ("frame", "phase", "split"):
            ids = [
                x for x in range(len(g)) if KIND_NAMES[g.kind[x]] == kind and not g.is_leaf(x) and x
            ]
            assert ids, f"the random program has a multi-strand {kind} group"
            x = ids[0]
            out = tmp_path / f"{kind}.sst"
            rng = [(int(g.start[x]), int(g.stop[x]))]
            regrain(t, out, rng)
            _check(src, out, rng)
            with open_trace(out) as r:
                n += 1
                if kind == "split":  # the siblings run as one spawned task
                    assert r.header.n_frames < t.header.n_frames
    assert n == 3


@given(seed=st.integers(0, 2**16), cache=st.sampled_from([1 << 9, 1 << 11, 1 << 13]))
def test_coarsened_trace_replays_the_same_references(tmp_path_factory, seed, cache):
    d = tmp_path_factory.mktemp("rg")
    src = build_random(d / "r.sst", seed, depth=3)
    p = profile_trace(src, sizes=[1024, 4096], line=64)
    m = SimpleNamespace(
        name="m",
        cores_per_socket=2,
        caches=(SimpleNamespace(name="L2", scope="socket", size=cache, line=64),),
    )
    r = coarsen(p, m)
    with open_trace(src) as t:
        h = regrain_from_table(t, d / "c.sst", r.rows)
    ranges = [(row["first_strand"], row["last_strand"]) for row in r.rows]
    _check(src, d / "c.sst", ranges)
    assert h.n_strands == r.tasks  # the count coarsen reports is the program regrain writes
    # serial order is unchanged, so the whole program's miss curve is too
    q = profile_trace(d / "c.sst", sizes=[1024, 4096], line=64)
    assert (q.misses[0] == p.misses[0]).all()


def test_coarsen_counts_the_tasks_regrain_writes_when_phases_run_inline(tmp_path):
    """A chosen phase runs inline, so the sync after it no longer starts a strand: a program
    whose phases are all chosen is one task, not one per phase plus the last strand."""
    src = tmp_path / "phases.sst"
    with TraceBuilder(src, program="phases") as b:
        for phase in range(3):
            for i in range(2):
                b.spawn()
                b.refs(4096 * (2 * phase + i + 1) + 8 * np.arange(16), 8, False)
                b.ret()
            b.sync()
        b.ref(0, 8, False)
    p = profile_trace(src, sizes=[4096], line=64)
    m = SimpleNamespace(
        name="m",
        cores_per_socket=1,
        caches=(SimpleNamespace(name="L2", scope="socket", size=1 << 20, line=64),),
    )
    r = coarsen(p, m)
    assert [row["kind"] for row in r.rows] == ["phase"] * 3
    with open_trace(src) as t:
        h = regrain_from_table(t, tmp_path / "c.sst", r.rows)
    assert h.n_strands == r.tasks == 1


def _table_rows(trace):
    """Parallelization table rows of ``trace`` for a one-core machine with a 1 MB cache."""
    p = profile_trace(trace, sizes=[4096], line=64)
    m = SimpleNamespace(
        name="m",
        cores_per_socket=1,
        caches=(SimpleNamespace(name="L2", scope="socket", size=1 << 20, line=64),),
    )
    rows = coarsen(p, m).rows
    assert rows
    return rows


def test_regrain_rejects_bad_groups_and_foreign_tables(tmp_path):
    """Each is the caller's input (ranges, rows, machine): a ConfigError, where it was a
    bare SimschedError; the several machines are told to choose with the argument, not
    with the command line's --machine."""
    src = build_fanout(tmp_path / "f.sst", 4)
    other = build_fanout(tmp_path / "g.sst", 5)
    with open_trace(src) as t:
        with pytest.raises(ConfigError, match="not a task group"):
            regrain(t, tmp_path / "x.sst", [(0, 2)])
        g = build_groups(t)
        with pytest.raises(ConfigError, match="overlap"):
            regrain(t, tmp_path / "x.sst", [(0, int(g.stop[0])), (1, 1)])
        with pytest.raises(ConfigError, match=r"strands 0\.\.99 outside the trace's"):
            merge_mask(int(t.header.n_strands), [(0, 99)])
    rows = _table_rows(other)
    with open_trace(src) as t, pytest.raises(ConfigError, match="another trace"):
        regrain_from_table(t, tmp_path / "x.sst", rows)
    assert not (tmp_path / "x.sst").exists()
    rows2 = [dict(r, machine="a") for r in rows] + [dict(r, machine="b") for r in rows]
    with open_trace(other) as t, pytest.raises(ConfigError) as info:
        regrain_from_table(t, tmp_path / "x.sst", rows2)
    assert str(info.value).endswith("several machines (a, b): choose one with machine=")
    with open_trace(other) as t, command_line(), pytest.raises(ConfigError) as info:
        regrain_from_table(t, tmp_path / "x.sst", rows2)
    assert str(info.value).endswith("choose one with --machine")
    with open_trace(other) as t, pytest.raises(ConfigError, match="no rows for machine 'z'"):
        regrain_from_table(t, tmp_path / "x.sst", rows2, machine="z")
    # an empty machine cell was listed as a machine named "": "several machines (, a)"
    rows3 = [dict(r, machine="a") for r in rows] + [dict(rows[0], machine="")]
    with open_trace(other) as t, pytest.raises(ConfigError, match=f"row {len(rows3)} has an empty"):
        regrain_from_table(t, tmp_path / "x.sst", rows3)


def test_table_errors_name_the_table(tmp_path):
    src = build_fanout(tmp_path / "f.sst", 4)
    rows = _table_rows(src)
    table = tmp_path / "t.csv"
    with open_trace(src) as t:
        # the same group twice: the overlap is the table's fault, so the table is named
        with pytest.raises(SimschedError, match=r"^.*t\.csv: groups to merge overlap"):
            regrain_from_table(t, tmp_path / "x.sst", rows + rows, table=table)
        two = [dict(r, machine="a") for r in rows] + [dict(r, machine="b") for r in rows]
        with pytest.raises(SimschedError, match=r"^.*t\.csv: the table holds several"):
            regrain_from_table(t, tmp_path / "x.sst", two, table=table)
        with pytest.raises(SimschedError, match=r"^.*t\.csv: the table has no rows"):
            regrain_from_table(t, tmp_path / "x.sst", rows, machine="z", table=table)
        # a row that is no group (edited, damaged): it was "f.sst: strands -1..3 are not a
        # task group of this trace", naming the trace, not the table
        edited = [dict(rows[0], first_strand=-1)]
        last = rows[0]["last_strand"]
        said = rf"^{re.escape(str(table))}: strands -1\.\.{last} are not a task group of .*f\.sst$"
        with pytest.raises(SimschedError, match=said):
            regrain_from_table(t, tmp_path / "x.sst", edited, table=table)


def test_foreign_digest_differs_from_the_traces_in_the_message(tmp_path):
    """The message cut both digests to 16 characters, so a table digest damaged further on
    (or a table mixing the trace's digest with another) showed the trace's digest twice."""
    src = build_fanout(tmp_path / "f.sst", 4)
    rows = _table_rows(src)
    ours = rows[0]["trace_digest"]
    damaged = ours[:-1] + ("0" if ours[-1] != "0" else "1")
    last = int(rows[-1]["last_strand"])
    mixed = rows + [dict(rows[0], trace_digest="f" * 64, first_strand=last + 1)]
    cases = [
        ([dict(r, trace_digest=damaged) for r in rows], f"(digest {damaged}, this trace {ours})"),
        (mixed, f"(digest {'f' * 16}…, this trace {ours[:16]}…)"),
    ]
    with open_trace(src) as t:
        for table, shown in cases:
            with pytest.raises(SimschedError, match="another trace") as info:
                regrain_from_table(t, tmp_path / "x.sst", table)
            assert str(info.value).endswith(shown)


def test_regrain_takes_a_path_and_names_bad_ranges_and_rows(tmp_path):
    """Before: AttributeError on a path, TypeError/ValueError/KeyError on bad ranges or rows."""
    from simsched.errors import ConfigError

    src = build_random(tmp_path / "r.sst", 2)
    h = regrain_from_table(src, tmp_path / "copy.sst", [])
    with open_trace(src) as t:
        assert h.n_strands == t.header.n_strands
    assert len(build_groups(src)) > 1
    for ranges, says in (
        (None, r"ranges=None: expected a list"),
        ([(0,)], r"ranges\[0\]=\(0,\): expected a \(first_strand, last_strand\) pair"),
        ([("a", "b")], r"ranges\[0\]\[0\]='a': expected an integer"),
    ):
        with pytest.raises(ConfigError, match=says):
            regrain(src, tmp_path / "x.sst", ranges)
    for rows, says in (
        (None, r"rows=None: expected the rows of a parallelization table"),
        ([{}], r"rows\[0\]: no column 'machine', 'trace_digest', 'first_strand', 'last_strand'"),
    ):
        with pytest.raises(ConfigError, match=says):
            regrain_from_table(src, tmp_path / "x.sst", rows)


def test_regrain_refuses_to_write_over_its_trace_or_table(tmp_path):
    """regrain('t.sst', 't.sst', ...) replaced the trace with its coarse version (the
    command line refused it; the functions did not)."""
    src = build_fanout(tmp_path / "f.sst", 4)
    rows = _table_rows(src)
    table = tmp_path / "t.csv"
    write_table(rows, table)
    link = tmp_path / "link.sst"
    link.symlink_to(src)
    trace_bytes, table_bytes = src.read_bytes(), table.read_bytes()
    ranges = [(rows[0]["first_strand"], rows[0]["last_strand"])]
    tail = "this function reads; writing there would replace it (choose another file)"
    with open_trace(src) as t:
        cases = [
            (lambda: regrain(src, src, ranges), f"out={str(src)!r}: is the trace {tail}"),
            (lambda: regrain(t, str(link), ranges), f"out={str(link)!r}: is the trace {tail}"),
            (
                lambda: regrain_from_table(str(src), src, rows),
                f"out={str(src)!r}: is the trace {tail}",
            ),
            (
                lambda: regrain_from_table(t, table, rows, table=table),
                f"out={str(table)!r}: is the table {tail}",
            ),
        ]
        for call, said in cases:
            with pytest.raises(ConfigError) as info:
                call()
            assert str(info.value) == said
        with command_line(), pytest.raises(ConfigError) as info:
            regrain_from_table(t, src, rows)
    assert str(info.value) == (
        f"--out {src}: is the trace this command reads; writing there would replace it "
        "(choose another file)"
    )
    assert src.read_bytes() == trace_bytes and table.read_bytes() == table_bytes


def test_regrain_names_bad_arguments_before_writing(tmp_path):
    """Before: a TypeError (params=5), a ValueError (a row's first_strand 'abc'), the
    path=5 of the trace writer, and a copy of the trace written for ranges=[], source=5,
    a row's machine 5 or table=5."""
    src = build_fanout(tmp_path / "f.sst", 4)
    rows = _table_rows(src)
    ok = [(rows[0]["first_strand"], rows[0]["last_strand"])]
    out = tmp_path / "o.sst"
    cases = [
        (lambda: regrain(src, 5, ok), "out=5: expected a path (str or os.PathLike)"),
        (lambda: regrain(src, out, []), "ranges=[]: no group to merge, nothing to regrain"),
        (lambda: regrain(src, out, ()), "ranges=(): no group to merge, nothing to regrain"),
        (
            lambda: regrain(src, out, ok, params=5),
            "params=5: expected a mapping (dict) of names to values",
        ),
        (lambda: regrain(src, out, ok, source=5), "source=5: expected a path (str or os.PathLike)"),
        (
            lambda: regrain_from_table(src, out, [dict(rows[0], first_strand="abc")]),
            "rows[0]['first_strand']='abc': expected an integer",
        ),
        (
            lambda: regrain_from_table(src, out, [dict(rows[0], last_strand=2.5)]),
            "rows[0]['last_strand']=2.5: expected an integer",
        ),
        (
            lambda: regrain_from_table(src, out, [dict(rows[0], machine=5)]),
            "rows[0]['machine']=5: expected text",
        ),
        (
            lambda: regrain_from_table(src, out, [dict(rows[0], trace_digest=None)]),
            "rows[0]['trace_digest']=None: expected text",
        ),
        (
            lambda: regrain_from_table(src, out, rows, table=5),
            "table=5: expected a path (str or os.PathLike)",
        ),
    ]
    for call, said in cases:
        with pytest.raises(ConfigError) as info:
            call()
        assert str(info.value) == said
    assert not out.exists()
    # a source given as a Path is named as a text is
    with pytest.raises(ConfigError) as info:
        regrain(src, out, [(0, 2)], source=tmp_path / "t.csv")
    assert str(info.value) == f"{tmp_path / 't.csv'}: strands 0..2 are not a task group of {src}"
    assert regrain(src, out, ok, params={"note": 1}, source="picked").params["note"] == 1


def test_the_machine_is_read_as_profile_and_coarsen_read_it(tmp_path):
    """profile and coarsen took a machine file, regrain only compared the text with the
    rows: "the table has no rows for machine 'custom.yaml'" where they say custom."""
    src = build_fanout(tmp_path / "f.sst", 4)
    yml = machine_file(tmp_path / "custom.yaml")
    m = load_machine(yml)
    rows = coarsen(profile_trace(src, sizes=[4096], machine=yml), m).rows
    assert rows and {r["machine"] for r in rows} == {"custom"}
    # the file, its text, the loaded machine and the rows' own name
    for machine in (yml, str(yml), m, "custom"):
        h = regrain_from_table(src, tmp_path / "c.sst", rows, machine=machine)
        assert h.params["regrain_machine"] == "custom" and h.params["merged_groups"] == len(rows)
    other = machine_file(tmp_path / "other.yaml", name="other")
    out = tmp_path / "x.sst"
    cases = [
        (
            other,
            f"t.csv: the table has no rows for machine 'other' (the name in {other}); it holds "
            "custom",
        ),
        (
            "itrs-scaling-1",
            "t.csv: the table has no rows for machine 'itrs-scaling-1'; it holds custom",
        ),
        ("custm", "t.csv: the table has no rows for machine 'custm'; it holds custom"),
        (tmp_path / "custm.yaml", f"{tmp_path / 'custm.yaml'}: no such file"),
    ]
    for machine, said in cases:
        with pytest.raises(ConfigError) as info:
            regrain_from_table(src, out, rows, machine=machine, table="t.csv")
        assert str(info.value) == said
    assert not out.exists()
