"""The structure of a trace, checked once when it is opened, before any table is handed out.

Everything that replays a trace (the engine, the schedulers, the memory-only replay, the
profiler) indexes arrays with the values of other arrays: an edge's strands, a strand's
frame, a frame's parent, first and last strand.  A checksum says the bytes are the ones
that were written, not that the writer was right, and a file can be rewritten with fresh
checksums; so :class:`simsched.trace.Trace` runs :func:`check` on every open and no
consumer ever sees a table that breaks the rules below.  Every test is a vectorised pass
over one table (O(strands + frames + edges), a few milliseconds for a million strands), and
together they are what :class:`simsched.trace.TraceBuilder` guarantees:

* the file is laid out as the builder writes it: chunks from byte 160 on, one after the
  other in index order, then the meta, tables and index sections, and nothing after them;
* the header has no unknown flag bits and zero reserved bytes, the index rows zero padding;
* the meta section has only the documented fields, with their JSON types;
* tables have the header's lengths; reference ranges and instruction counts add up;
* frames form a tree rooted at frame 0 (every parent has a smaller number, so there is no
  cycle), levels follow it, each frame's strands lie between its first and last strand,
  and spawn indices are below the branching degree (a frame's position key is its
  parent's followed by its spawn index, so the table holds the keys without storing them);
* every edge goes forward in serial order (so the DAG is acyclic and serial order is a
  topological order) and is of a known kind; a spawn edge goes from the parent's strand to
  a frame's first strand, a continuation stays in its frame, a join goes from a child's
  last strand to its parent; every strand but 0 has exactly one spawn or continuation edge
  in (hence every strand is reachable from strand 0), every spawned frame is joined once.

What needs every reference decoded (the content digest, the reference rule, each strand's
instruction count against its gaps, the position-key hashes) is left to
:func:`simsched.trace.validate`.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simsched.errors import TraceFormatError
from simsched.params import is_power_of_two
from simsched.trace import format as fmt
from simsched.trace import repeat

#: the meta section's fields and their JSON types
META_FIELDS: dict[str, type] = {
    "backend": str,
    "program": str,
    "args": list,
    "gaps_exact": bool,
    "line_size_hint": int,
    "params": dict,
    "roi": bool,
    "writer": str,
    "stack": list,
    "repeat": dict,
}
#: largest cache line size a trace may suggest
MAX_LINE = 1 << 20


def line_hint_ok(line: int) -> bool:
    """Whether ``line`` may be a trace's ``line_size_hint``: a power of 2 up to
    :data:`MAX_LINE` (the rule the reader checks and the builder keeps)."""
    return line <= MAX_LINE and is_power_of_two(line)


def has_children(parent: Any) -> np.ndarray:
    """Per frame, whether it spawned: some frame names it as its parent.

    Parameters
    ----------
    parent
        Each frame's parent frame, -1 for the root (``Trace.frames.parent``).

    Returns
    -------
    numpy.ndarray
        bool, one per frame; the frames without children are the DAG's leaves.

    Examples
    --------
    >>> has_children([-1, 0, 0, 1]).tolist()
    [True, True, False, False]
    """
    par = np.asarray(parent, dtype=np.int64)
    out = np.zeros(par.size, dtype=bool)
    out[par[par >= 0]] = True
    return out


def exact_sum(a: np.ndarray) -> int:
    """The sum of int64 values as a Python integer, without numpy's wrap-around
    (a few values near 2^62 added up to a small number): the high and low 32 bits of
    each value summed apart, which cannot overflow below 2^31 values."""
    v = np.asarray(a, np.int64)
    return (int((v >> 32).sum()) << 32) + int((v & 0xFFFFFFFF).sum())


def instruction_total(name: str, instr: np.ndarray) -> int:
    """The instructions of strands with ``instr`` instructions each, at most
    :data:`~simsched.trace.format.MAX_INSTRUCTIONS` (the rule the builder and the reader
    apply); raise :class:`TraceFormatError` naming ``name`` if there are more."""
    total = exact_sum(instr)
    if total > fmt.MAX_INSTRUCTIONS:
        raise TraceFormatError(
            f"{name}: {total} instructions in all, more than the 2^50 a trace may have"
        )
    return total


def _first(mask: np.ndarray) -> int | None:
    """Index of the first true element, or None."""
    hits = np.flatnonzero(mask)
    return int(hits[0]) if hits.shape[0] else None


def check_layout(name: str, h: dict[str, Any], index: np.ndarray, file_size: int) -> None:
    """Sections back to back in the builder's order, chunks in index order, nothing after."""
    if index.shape[0] != h["n_chunks"]:
        raise TraceFormatError(
            f"{name}: index has {index.shape[0]} chunks, the header says {h['n_chunks']}"
        )
    off = index["offset"].astype(np.int64)
    end = off + index["length"].astype(np.int64)
    starts = np.concatenate([[fmt.HEADER_SIZE], end[:-1]]) if index.shape[0] else off
    k = _first((off != starts) | (index["length"] == 0))
    if k is not None:
        raise TraceFormatError(
            f"{name}: chunk {k} is at bytes {int(off[k])}-{int(end[k])}, not right after the "
            f"previous one (byte {int(starts[k])})"
        )
    (m_off, m_len), (t_off, t_len), (i_off, i_len) = h["meta"], h["tables"], h["index"]
    expected = (
        ("meta", m_off, int(end[-1]) if index.shape[0] else fmt.HEADER_SIZE),
        ("tables", t_off, m_off + m_len),
        ("index", i_off, t_off + t_len),
    )
    for section, at, want in expected:
        if at != want:
            raise TraceFormatError(
                f"{name}: the {section} section starts at byte {at}, not right after the "
                f"previous section (byte {want})"
            )
    if i_off + i_len != file_size:
        raise TraceFormatError(
            f"{name}: {file_size - i_off - i_len} bytes after the index section (junk "
            "appended to the file, or it is not the trace its header describes)"
        )
    k = _first(index["pad"] != 0)
    if k is not None:
        raise TraceFormatError(f"{name}: chunk {k}: the index row's padding is not zero")
    bad_w = _first(
        ~np.isin(index["wa"], (4, 8))
        | ~np.isin(index["wg"], (1, 2, 4))
        | ~np.isin(index["wd"], (0, 1) if h["version"] >= 2 else (0,))
    )
    if bad_w is not None:
        raise TraceFormatError(f"{name}: chunk {bad_w}: invalid column widths in the index")
    first = index["first"].astype(np.int64)
    n = index["n"].astype(np.int64)
    k = _first((n == 0) | (first != np.cumsum(n) - n))
    if k is not None:
        raise TraceFormatError(f"{name}: chunk index is not contiguous at chunk {k}")
    held = int(n.sum())
    if held != h["n_refs"]:
        raise TraceFormatError(
            f"{name}: chunks hold {held} references, the header says {h['n_refs']}"
        )


def check_meta(name: str, meta: Any) -> None:
    """The meta section is a JSON object with the documented fields and types."""
    if not isinstance(meta, dict):
        raise TraceFormatError(f"{name}: meta section is not a JSON object")
    unknown = sorted(set(meta) - set(META_FIELDS))
    if unknown:
        raise TraceFormatError(
            f"{name}: unknown meta field(s) {', '.join(map(repr, unknown))} (known: "
            f"{', '.join(META_FIELDS)})"
        )
    for key, typ in META_FIELDS.items():
        if key in meta and (
            not isinstance(meta[key], typ) or (typ is int and isinstance(meta[key], bool))
        ):
            raise TraceFormatError(
                f"{name}: meta field {key!r} is {type(meta[key]).__name__}, expected {typ.__name__}"
            )
    if not all(isinstance(a, str) for a in meta.get("args", [])):
        raise TraceFormatError(f"{name}: meta field 'args' is not a list of strings")
    stack = meta.get("stack")
    if stack is not None and not (
        len(stack) == 2
        and all(isinstance(x, int) and not isinstance(x, bool) for x in stack)
        and 0 <= stack[0] < stack[1] <= fmt.ADDRESS_LIMIT
    ):
        raise TraceFormatError(
            f"{name}: meta field 'stack' is {stack!r}, not [lo, hi] with "
            f"0 <= lo < hi <= 2^{fmt.ADDRESS_BITS}"
        )
    line = meta.get("line_size_hint", 64)
    if not line_hint_ok(line):
        raise TraceFormatError(
            f"{name}: meta field 'line_size_hint' is {line}, not a power of 2 up to {MAX_LINE}"
        )


def _check_lengths(name: str, h: dict[str, Any], tabs: dict[str, np.ndarray]) -> None:
    lengths = {
        "strands": h["n_strands"],
        "strands+1": h["n_strands"] + 1,
        "frames": h["n_frames"],
        "frames+1": h["n_frames"] + 1,
        "edges": h["n_edges"],
    }
    for tname, (_, key) in fmt.TABLES.items():
        if tabs[tname].shape[0] != lengths[key]:
            raise TraceFormatError(
                f"{name}: table {tname} has {tabs[tname].shape[0]} rows, the header says "
                f"{lengths[key]}"
            )
    if h["n_strands"] == 0 or h["n_frames"] == 0:
        raise TraceFormatError(f"{name}: a trace has at least one strand and one frame (main)")


def _check_strands(name: str, h: dict[str, Any], tabs: dict[str, np.ndarray]) -> None:
    rs = tabs["strand_ref_start"]
    if rs[0] != 0 or rs[-1] != h["n_refs"] or np.any(rs[1:] < rs[:-1]):
        raise TraceFormatError(
            f"{name}: strand reference ranges are inconsistent with {h['n_refs']} references"
        )
    instr, tail = tabs["strand_instr"], tabs["strand_tail"]
    # instr - tail cannot wrap once 0 <= tail <= instr; refs + tail could (a tail near
    # 2^63 made any instruction count pass)
    s = _first((tail < 0) | (instr < tail) | (instr - tail < rs[1:] - rs[:-1]))
    if s is not None:
        raise TraceFormatError(
            f"{name}: strand {s} has {int(instr[s])} instructions, fewer than its "
            f"{int(rs[s + 1] - rs[s])} references plus its tail of {int(tail[s])}"
        )
    if instruction_total(name, instr) != h["n_instructions"]:
        raise TraceFormatError(f"{name}: strand instructions do not add up to the header's")
    fr = tabs["strand_frame"]
    s = _first((fr < 0) | (fr >= h["n_frames"]))
    if s is not None:
        raise TraceFormatError(f"{name}: strand {s} names frame {int(fr[s])}, which does not exist")


def _check_frames(name: str, h: dict[str, Any], tabs: dict[str, np.ndarray]) -> None:
    nf, ns = h["n_frames"], h["n_strands"]
    ids = np.arange(nf)
    parent, level = tabs["frame_parent"], tabs["frame_level"]
    f = _first(np.where(ids == 0, parent != -1, (parent < 0) | (parent >= ids)))
    if f is not None:
        raise TraceFormatError(
            f"{name}: frame {f} has parent {int(parent[f])}: frame parents are not a tree "
            "rooted at frame 0 (each parent precedes its children)"
        )
    f = _first(level != np.where(ids == 0, 0, level[np.maximum(parent, 0)] + 1))
    if f is not None:
        raise TraceFormatError(f"{name}: frame {f}: levels do not follow the parent tree")
    first, last = tabs["frame_first_strand"], tabs["frame_last_strand"]
    f = _first((first < 0) | (last >= ns) | (first > last))
    if f is not None:
        raise TraceFormatError(
            f"{name}: frame {f} has strands {int(first[f])}..{int(last[f])}, outside "
            f"0..{ns - 1} or reversed"
        )
    sf = tabs["strand_frame"]
    f = _first((sf[first] != ids) | (sf[last] != ids))
    if f is not None:
        raise TraceFormatError(
            f"{name}: frame {f}: its first or last strand belongs to another frame"
        )
    f = _first(np.concatenate([[first[0] != 0], first[1:] <= first[:-1]]))
    if f is not None:
        raise TraceFormatError(
            f"{name}: frame {f} starts at strand {int(first[f])}: frames do not start in "
            "serial order from strand 0"
        )
    s = _first((np.arange(ns) < first[sf]) | (np.arange(ns) > last[sf]))
    if s is not None:
        raise TraceFormatError(
            f"{name}: strand {s} lies outside its frame {int(sf[s])}'s first and last strand"
        )
    if tabs["frame_branching"][0] != 0 or tabs["frame_spawn_index"][0] != 0:
        raise TraceFormatError(
            f"{name}: frame 0 (main) has branching {int(tabs['frame_branching'][0])} and "
            f"spawn index {int(tabs['frame_spawn_index'][0])}: main is nobody's child (0, 0)"
        )
    check_frame_keys(
        name,
        parent,
        tabs["frame_spawn_index"],
        tabs["frame_iteration"],
        tabs["frame_branching"],
    )


def check_frame_keys(
    name: str,
    parent: np.ndarray,
    spawn_index: np.ndarray,
    iteration: np.ndarray,
    branching: np.ndarray | None = None,
) -> None:
    """The rules that make every frame's (iteration, position key) well defined.

    Given a parent tree rooted at frame 0 (each parent precedes its child): a parent's
    children, in order, are spawns 0, 1, ... of their groups (of size ``branching``,
    when given), and iterations follow the rule of docs/trace-format.md.  The trace
    reader applies them to a trace's frame table, the profile reader to the frame
    arrays a profile stores (which have no branching column).

    Raises
    ------
    TraceFormatError
        Naming ``name``, the first frame that breaks a rule and the rule.
    """
    _check_siblings(name, parent, spawn_index, branching)
    _check_iterations(name, parent, spawn_index, iteration)


def _check_iterations(name: str, parent: np.ndarray, si: np.ndarray, it: np.ndarray) -> None:
    """Iteration marks are made in main, with increasing numbers (docs/trace-format.md).

    So main is in no iteration (-1); a frame below a child of main has its parent's
    iteration; main's children, in spawn order, start a new spawning group (spawn index
    0) exactly where a mark raised the iteration number, and keep it otherwise.
    """
    if it[0] != -1:
        raise TraceFormatError(
            f"{name}: frame 0 (main) has iteration {int(it[0])}: main is in no iteration (-1)"
        )
    f = _first(it < -1)
    if f is not None:
        raise TraceFormatError(f"{name}: frame {f} has iteration {int(it[f])}")
    p = np.maximum(parent, 0)
    f = _first((parent > 0) & (it != it[p]))
    if f is not None:
        raise TraceFormatError(
            f"{name}: frame {f} has iteration {int(it[f])}, its parent frame {int(p[f])} "
            f"iteration {int(it[p[f]])}: only main's children start an iteration"
        )
    kids = np.flatnonzero(parent == 0)
    a, b = kids[:-1], kids[1:]
    k = _first(np.where(si[b] == 0, it[b] <= it[a], it[b] != it[a]))
    if k is not None:
        fa, fb = int(a[k]), int(b[k])
        if si[fb] == 0:
            why = "iteration numbers must increase from one mark to the next"
        else:
            why = "main's spawn indices restart at every iteration mark, and only there"
        raise TraceFormatError(
            f"{name}: frame {fb} (spawn {int(si[fb])} of main) has iteration {int(it[fb])} "
            f"after frame {fa} of iteration {int(it[fa])}: {why}"
        )


def _check_siblings(name: str, parent: np.ndarray, si: np.ndarray, br: np.ndarray | None) -> None:
    """A parent's children, in order, are spawns 0, 1, ..., b-1 of groups whose size is b.

    (A group is what a frame spawns between two iteration marks; its ``branching`` is the
    *b* of [LAWS15] Eq. 1; ``br`` None: not checked.)  Frame 0 is nobody's child.
    """
    order = np.argsort(parent[1:], kind="stable") + 1  # children by parent, in spawn order
    p, i = parent[order], si[order]
    new = np.ones(order.shape[0], np.bool_)
    new[1:] = (p[1:] != p[:-1]) | (i[1:] == 0)
    prev = np.concatenate([[-1], i[:-1]])
    k = _first(np.where(new, i != 0, i != prev + 1))
    if k is None and br is not None:
        starts = np.flatnonzero(new)
        size = np.diff(np.append(starts, order.shape[0]))
        k = _first(br[order] != np.repeat(size, size))
    if k is not None:
        f = int(order[k])
        degree = "" if br is None else f" with a branching degree of {int(br[f])}"
        raise TraceFormatError(
            f"{name}: frame {f} is spawn {int(si[f])} of frame {int(parent[f])}{degree}, "
            "which its siblings contradict"
        )


def _check_edges(name: str, h: dict[str, Any], tabs: dict[str, np.ndarray]) -> None:
    ns = h["n_strands"]
    src, dst, kind = tabs["edge_src"], tabs["edge_dst"], tabs["edge_kind"]
    e = _first((src < 0) | (dst >= ns) | (src >= dst))
    if e is not None:
        raise TraceFormatError(
            f"{name}: edge {e} ({int(src[e])} -> {int(dst[e])}) names a strand that does not "
            f"exist or does not follow serial order (strands 0..{ns - 1}; a backward edge "
            "would make a cycle)"
        )
    e = _first(src[1:] < src[:-1])
    if e is not None:
        raise TraceFormatError(f"{name}: edges are not sorted by source (edge {e + 1})")
    e = _first(kind > max(fmt.EDGE_KINDS))
    if e is not None:
        raise TraceFormatError(f"{name}: edge {e} has unknown kind {int(kind[e])}")
    sf, parent = tabs["strand_frame"], tabs["frame_parent"]
    first, last = tabs["frame_first_strand"], tabs["frame_last_strand"]
    fs, fd = sf[src], sf[dst]
    spawn, cont, join = (kind == fmt.EDGE_SPAWN), (kind == fmt.EDGE_CONT), (kind == fmt.EDGE_JOIN)
    e = _first(
        (spawn & ((dst != first[fd]) | (parent[fd] != fs)))
        | (cont & (fs != fd))
        | (join & ((src != last[fs]) | (parent[fs] != fd)))
    )
    if e is not None:
        raise TraceFormatError(
            f"{name}: edge {e} ({int(src[e])} -> {int(dst[e])}) is a "
            f"{fmt.EDGE_KINDS[int(kind[e])]} edge between the wrong frames "
            f"({int(fs[e])} -> {int(fd[e])})"
        )
    # Into each strand but 0: one spawn edge if it starts a frame, else one continuation.
    starts_frame = np.zeros(ns, np.bool_)
    starts_frame[first[1:]] = True
    n_spawn_in = np.bincount(dst[spawn], minlength=ns)
    n_cont_in = np.bincount(dst[cont], minlength=ns)
    n_join_in = np.bincount(dst[join], minlength=ns)
    not_main = np.arange(ns) > 0
    s = _first(
        (n_spawn_in != starts_frame)
        | (n_cont_in != (not_main & ~starts_frame))
        | (starts_frame & (n_join_in > 0))
    )
    if s is not None:
        raise TraceFormatError(
            f"{name}: strand {s} has {int(n_spawn_in[s])} spawn, {int(n_cont_in[s])} "
            f"continuation and {int(n_join_in[s])} join edges in"
            + (" (it starts a frame)" if starts_frame[s] else "")
        )
    joined = np.bincount(sf[src[join]], minlength=h["n_frames"])
    f = _first(joined != (np.arange(h["n_frames"]) > 0))
    if f is not None:
        raise TraceFormatError(f"{name}: frame {f} is joined {int(joined[f])} times")
    _check_targets(name, tabs, n_join_in)


def _check_targets(name: str, tabs: dict[str, np.ndarray], n_join_in: np.ndarray) -> None:
    """Every edge ends at the one strand serial elision gives it, not just in the right frame.

    The parent's strand is always the newest when it spawns or syncs, so: a spawn edge goes
    from strand t-1 to a frame's first strand t; a spawned frame's subtree ends with its
    last strand, and the parent's next strand (the continuation, right after it) has a
    continuation edge from the spawning strand; a post-sync strand t follows strand t-1 of
    its own frame, has a continuation edge from it and at least one join edge in; and a
    child is joined to the parent's first post-sync strand after the child returned, or,
    for a called Cilk function's frame, to the continuation right after it.
    """
    src, dst, kind = tabs["edge_src"], tabs["edge_dst"], tabs["edge_kind"]
    sf, parent = tabs["strand_frame"], tabs["frame_parent"]
    first, last = tabs["frame_first_strand"], tabs["frame_last_strand"]
    ns = sf.shape[0]
    e = _first((kind == fmt.EDGE_SPAWN) & (dst != src + 1))
    if e is not None:
        raise TraceFormatError(
            f"{name}: spawn edge {e} ({int(src[e])} -> {int(dst[e])}) does not come from the "
            "strand right before the child's first strand"
        )
    after = last[1:] + 1
    f = _first((after >= ns) | (sf[np.minimum(after, ns - 1)] != parent[1:]))
    if f is not None:
        raise TraceFormatError(
            f"{name}: frame {f + 1} ends at strand {int(last[f + 1])}, which is not followed "
            f"by a strand of its parent frame {int(parent[f + 1])} (its continuation)"
        )
    cont = kind == fmt.EDGE_CONT
    before = sf[np.maximum(dst - 1, 0)]  # edges go forward, so dst >= 1
    ok = np.where(
        before == sf[dst],
        src == dst - 1,  # post-sync strand
        (parent[before] == sf[dst]) & (last[before] == dst - 1) & (src == first[before] - 1),
    )
    e = _first(cont & ~ok)
    if e is not None:
        raise TraceFormatError(
            f"{name}: continuation edge {e} ({int(src[e])} -> {int(dst[e])}) does not come "
            "from the frame's strand before the sync or the spawn it continues"
        )
    post = np.zeros(ns, np.bool_)
    post[1:] = sf[1:] == sf[:-1]
    s = _first(post & (n_join_in == 0))
    if s is not None:
        raise TraceFormatError(f"{name}: strand {s} follows a sync that joins no child")
    # The next post-sync strand of the same frame at or after each strand, through the
    # strands sorted by (frame, strand).
    order = np.argsort(sf, kind="stable")
    rank = np.empty(ns, np.int64)
    rank[order] = np.arange(ns)
    at = np.where(post[order], np.arange(ns), ns)
    nxt = np.minimum.accumulate(at[::-1])[::-1]
    joins = np.flatnonzero(kind == fmt.EDGE_JOIN)
    child = sf[src[joins]]
    k = nxt[rank[last[child] + 1]]
    want = np.where(k < ns, order[np.minimum(k, ns - 1)], -1)
    want = np.where(sf[np.maximum(want, 0)] == parent[child], want, -1)
    # A called Cilk function's frame (its own frame, waited for at once) is joined into
    # the caller's continuation, the strand right after the child's subtree.
    called = dst[joins] == last[child] + 1
    j = _first((want != dst[joins]) & ~called)
    if j is not None:
        e, c = int(joins[j]), int(child[j])
        at_sync = (
            f"its first sync after the child returned is strand {int(want[j])}"
            if want[j] >= 0
            else "no sync follows the child's return"
        )
        raise TraceFormatError(
            f"{name}: join edge {e} ({int(src[e])} -> {int(dst[e])}) joins frame {c} at the "
            f"wrong strand of its parent frame {int(parent[c])}: {at_sync}"
        )


def check_tables(name: str, h: dict[str, Any], tabs: dict[str, np.ndarray]) -> None:
    """Lengths, strands, frames and edges: see the module docstring."""
    _check_lengths(name, h, tabs)
    _check_strands(name, h, tabs)
    _check_frames(name, h, tabs)
    _check_edges(name, h, tabs)


def check(
    name: str,
    h: dict[str, Any],
    meta: Any,
    tabs: dict[str, np.ndarray],
    index: np.ndarray,
    file_size: int,
) -> None:
    """Every structural check of an opened trace; raise :class:`TraceFormatError` on the first.

    Parameters
    ----------
    name
        The file, for messages.
    h
        The parsed fixed header (:func:`simsched.trace.format.unpack_header`).
    meta, tabs, index
        The decoded meta, tables and index sections.
    file_size
        Size of the file in bytes.
    """
    check_layout(name, h, index, file_size)
    check_meta(name, meta)
    for flag, key in ((fmt.FLAG_STACK, "stack"), (fmt.FLAG_REPEAT, "repeat")):
        if bool(h["flags"] & flag) != (key in meta):
            raise TraceFormatError(
                f"{name}: the header's {key} flag and the meta field {key!r} disagree "
                f"(flag {'set' if h['flags'] & flag else 'clear'}, field "
                f"{'present' if key in meta else 'absent'})"
            )
    check_tables(name, h, tabs)


def whole_program(
    name: str, h: dict[str, Any], meta: dict[str, Any], tabs: dict[str, np.ndarray]
) -> tuple[repeat.Repeat | None, dict[str, Any], dict[str, np.ndarray]]:
    """The whole program of a checked trace: its repeated part expanded, and checked again.

    Parameters
    ----------
    name
        The file, for messages.
    h, meta, tabs
        The parsed header, meta and stored tables (passed by :func:`check`).

    Returns
    -------
    (Repeat or None, header, tables)
        The repeated part (None: the trace has none, and ``h`` and ``tabs`` come back as
        they are), the header with the whole program's counts (``n_chunks``: chunks of
        ``chunk_refs`` references) and its tables.

    Raises
    ------
    TraceFormatError
        A bad meta field ``repeat`` (:func:`simsched.trace.repeat.parse`), or expanded
        tables that break the rules the stored ones follow (a repeated part that does not
        repeat: it does not start or end where main's children are synced, ...).
    """
    if "repeat" not in meta:
        return None, h, tabs
    spec = repeat.parse(name, meta["repeat"], tabs)
    whole = repeat.expand(spec, tabs)
    n_refs = spec.n_refs(h["n_refs"])
    hw = {
        **h,
        "n_strands": int(whole["strand_frame"].shape[0]),
        "n_frames": int(whole["frame_parent"].shape[0]),
        "n_edges": int(whole["edge_src"].shape[0]),
        "n_refs": n_refs,
        "n_chunks": -(-n_refs // spec.chunk_refs),
        "n_instructions": exact_sum(whole["strand_instr"]),
    }
    check_tables(f"{name}: the repeated part expanded", hw, whole)
    return spec, hw, whole
