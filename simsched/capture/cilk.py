"""Rewriting Cilk programs into simsched's marker ABI (used by ``simsched cc``).

A Cilk program captures as its *serial elision* plus markers: every ``cilk_spawn``,
``cilk_sync``, ``cilk_for`` and ``cilk_scope`` (and their ``_Cilk_`` spellings) becomes
the marker calls of ``capture/simsched_cilk.h`` that give the DAG a Cilk runtime would
run, and the program still runs serially.

**After the preprocessor.**  The rewriter works on the *preprocessed* translation unit
(``gcc -E``), not on the source text.  Before preprocessing, a keyword may hide in a
macro (``#define SPAWN cilk_spawn``, loop macros that expand to ``cilk_for``), a header
may hold Cilk code, and conditional compilation may leave fragments a C grammar cannot
parse; after it, the parser sees exactly the C the compiler will compile, with the
macros expanded.  The preprocessor's line markers keep diagnostics, debug information
and this module's errors pointing at the user's file and line: no rewrite adds or
removes a line.  ``<cilk/cilk.h>`` (``capture/cilk/``) leaves the keywords alone when
``SIMSCHED_CILK`` is defined, so that they reach the rewriter.

**Parsing.**  The unit is parsed with tree-sitter's C grammar (``tree-sitter``,
``tree-sitter-c``).  The grammar does not know Cilk, so each keyword *token* -- found
by a lexer over the preprocessed text, which has no comments and whose string and
character literals it skips -- is first replaced by a C stand-in of the same length
that the grammar parses into a recognisable node: ``!`` (a prefix operator) for a
spawn, ``for`` for a ``cilk_for``, ``if (1)`` for a scope; ``cilk_sync`` parses as an
identifier statement.  Byte offsets do not move, so each construct is rewritten from
its syntax node: a spawn's operand must be a call and its context one of the three
accepted forms, a ``cilk_for``'s header must have the canonical shape, and so on.
Anything the markers cannot express (reducers, a spawn of a non-call, a spawn inside
an expression, ``break``/``return`` in a ``cilk_for`` body, ``setjmp``/``longjmp`` in a
Cilk function) is a one-line :class:`~simsched.errors.CaptureError` naming
``file:line:column`` and the construct.

**The mapping** (see ``docs/capture.md``):

* ``cilk_spawn f(a);``, ``x = cilk_spawn f(a);``, ``T x = cilk_spawn f(a);``: a spawn
  marker, the call (and the store of its result), a spawn-end marker.  The arguments
  are evaluated inside the spawned strand (Cilk evaluates them just before the spawn).
* ``cilk_sync;``: a sync marker.  A function that spawns gets a sync before each
  ``return`` (after the returned value is computed) and at the end of its body -- the
  implicit sync of Cilk -- except where a ``cilk_sync`` statement immediately precedes
  it, or a return comes before any spawn can have happened.
* ``cilk_scope S``: ``S`` followed by a sync.
* ``cilk_for``: the loop's iteration count is computed once, as OpenCilk does, and the
  range is split as OpenCilk's loop-spawning pass does (LLVM Tapir
  ``LoopSpawningTI.cpp``, ``DACSpawning::implementDACIterSpawnOnHelper``): while a
  range holds more than *grain* iterations, spawn the lower half and keep the upper
  half; run the rest serially; sync.  ``split="binary"`` spawns both halves instead.
  The grain is, in order: ``#pragma cilk grainsize N`` before the loop, the
  ``grain`` option, and otherwise OpenCilk's default ``min(2048, n / (8 P))`` (at least
  1) for *n* iterations on *P* workers -- ``__cilkrts_cilk_for_grainsize_64`` in the
  OpenCilk runtime (``cheetah``, ``runtime/cilk2c_inlined.c``).  *P* is ``workers``,
  1 by default, as every worker-count query answers during the serial capture.

Limits of the marker ABI, which has one sync per frame: a sync inside a
``cilk_scope``, or the implicit sync of a ``cilk_for``, also waits for the enclosing
function's children spawned before the construct; and a function that is *called*
shares its caller's frame, so its syncs wait for the caller's children too.  Both
only add edges to the DAG of a correct Cilk program, never remove one.

The rewriter is split by what each part looks at: :mod:`simsched.capture._cilk_source`
reads the unit (keywords, parser, positions), :mod:`simsched.capture._cilk_edits`
holds one rewrite's options, edits and problems, :mod:`simsched.capture._cilk_for`
rewrites ``cilk_for`` loops and :mod:`simsched.capture._cilk_functions` what a
function gets as a whole (implicit syncs, its frame); this module runs the pass,
rewrites the statements (spawn, sync, scope) and holds the public functions.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from simsched.capture._cilk_edits import SPLITS, CilkOptions
from simsched.capture._cilk_for import _ForRewrites
from simsched.capture._cilk_functions import _FunctionRewrites, function_id
from simsched.capture._cilk_source import (
    _GRAINSIZE,
    _KEYWORDS,
    _REDUCER,
    _STANDIN,
    _TOKEN,
    FOR,
    LINE_MARKER,
    SCOPE,
    SPAWN,
    SYNC,
    _flat,
    mentions_cilk,
    parse_c,
)
from simsched.errors import CaptureError

if TYPE_CHECKING:
    from tree_sitter import Node

__all__ = [
    "FOR", "LINE_MARKER", "SCOPE", "SPAWN", "SPLITS", "SYNC", "CilkOptions", "find_keyword",
    "function_id", "mentions_cilk", "parse_c", "rewrite",
]  # fmt: skip

_FORMS = "cilk_spawn f(...);, x = cilk_spawn f(...); or T x = cilk_spawn f(...);"


class _Rewriter(_ForRewrites, _FunctionRewrites):
    """One rewrite of a unit: the pass over its keywords and the statements' rewrites."""

    # -- the pass --------------------------------------------------------------------------
    def run(self) -> bytes:
        buf = bytearray(self.src)
        for row, s in enumerate(self.u.starts):
            e = self.src.find(b"\n", s)
            e = len(self.src) if e < 0 else e
            if self.src[s:e].lstrip().startswith(b"#"):
                m = _GRAINSIZE.match(self.src[s:e].lstrip())
                if m:
                    self.pragmas[row] = (s, m.group(1))
                buf[s:e] = b" " * (e - s)
        found: list[tuple[int, str, bytes]] = []
        for m in _TOKEN.finditer(buf):
            tok = m.group()
            kind = _KEYWORDS.get(tok)
            if kind is not None:
                found.append((m.start(), kind, tok))
                standin = _STANDIN.get(kind)
                if standin is not None:
                    buf[m.start() : m.end()] = standin.ljust(len(tok))
            elif tok[0] != 34 and tok[0] != 39 and _REDUCER.fullmatch(tok):
                self.fail(m.start(), tok.decode(), "reducers (hyperobjects) cannot be captured")
        self.kinds = {o: kind for o, kind, _ in found}
        self.tokens = {o: tok for o, _, tok in found}
        if not found and not self.problems:
            return self.src
        root = parse_c(bytes(buf)).root_node
        handlers = {SPAWN: self._spawn, SYNC: self._sync, FOR: self._for, SCOPE: self._scope}
        self.offsets = [o for o, _, _ in found]
        for offset, kind, tok in found:
            leaf = root.descendant_for_byte_range(offset, offset + 1)
            node = leaf.parent if leaf is not None else None
            fn = node
            while fn is not None and fn.type != "function_definition":
                fn = fn.parent
            if fn is None:
                self.fail(offset, kind, "used outside a function body", tok)
                continue
            if kind != SYNC:
                self.cilk_fns.setdefault(fn.start_byte, fn)
            known = len(self.problems)
            handlers[kind](offset, tok, node, fn)
            bad = self._syntax_error(node)
            if bad is not None and (
                len(self.problems) == known
                or (node is not None and node.type != "ERROR" and node.has_error)
            ):
                # (any problem stops the rewrite, so its edits are not applied)  A construct
                # the parser recovered inside is misread by its handler, and the syntax error
                # is the cause: a missing ';' before `cilk_sync;` made `x = cilk_spawn f()`
                # "a spawn of a non-call expression".
                del self.problems[known:]
                self.fail(bad[0], kind, bad[1] + ": the statement does not parse as C", tok)
        for row, (s, _) in self.pragmas.items():
            if row not in self.used_pragmas:
                self.fail(s, "#pragma cilk grainsize", "not followed by a cilk_for")
            else:
                self.replace((s, s + len(self.u.line(row))), b"")
        for fn, offsets in self.spawns_in.values():
            self._implicit_syncs(fn, offsets)
        for fn in self.cilk_fns.values():
            self._own_frame(fn)
            self._nonlocal_jumps(fn)
        if self.problems:
            raise CaptureError(min(self.problems)[1])
        return self._apply()

    def _apply(self) -> bytes:
        out, pos = [], 0
        for e in sorted(self.edits, key=lambda e: (e.start, e.end, -e.order)):
            if e.start < pos:
                raise CaptureError(
                    f"{self.u.where(e.start)}: overlapping Cilk constructs cannot be rewritten"
                )
            out += [self.src[pos : e.start], e.text]
            pos = e.end
        out.append(self.src[pos:])
        return b"".join(out)

    def _syntax_error(self, node: Node | None) -> tuple[int, str] | None:
        """The first place where the statement holding a keyword does not parse, if any.

        The parser recovers from a syntax error (a missing ';' becomes an empty token), and a
        rewrite of what it recovered would compile what gcc rejects: ``x = cilk_spawn f(n)``
        before ``return x;`` became a spawn and a return.  A cilk_for's body is not part of
        its statement here (a construct of its own is checked where it is).
        """
        stmt = node
        while stmt is not None and not (
            stmt.type.endswith("_statement") or stmt.type == "declaration"
        ):
            stmt = stmt.parent
        if stmt is None or not stmt.has_error:
            return None
        body = stmt.child_by_field_name("body") if stmt.type == "for_statement" else None
        stack = [c for c in reversed(stmt.children) if c != body]
        while stack:
            n = stack.pop()
            if n.is_missing:
                return n.start_byte, f"expected '{n.type}'"
            if n.type == "ERROR":
                return n.start_byte, "unexpected text"
            if n.has_error:
                stack.extend(reversed(n.children))
        return None

    # -- constructs ------------------------------------------------------------------------
    def _spawn(self, offset: int, tok: bytes, unary: Node | None, fn: Node) -> None:
        if unary is None or unary.type != "unary_expression" or unary.start_byte != offset:
            nxt = self.src[offset + len(tok) :].lstrip()[:1]
            why = (
                "spawn of a non-call expression (a block)"
                if nxt == b"{"
                else f"cannot be rewritten here; the supported forms are {_FORMS}"
            )
            self.fail(offset, SPAWN, why)
            return
        call = unary.child_by_field_name("argument")
        while call is not None and call.type == "parenthesized_expression":
            call = call.named_children[0] if call.named_child_count else None
        if call is None or call.type != "call_expression":
            self.fail(offset, SPAWN, "spawn of a non-call expression (only calls can be spawned)")
            return
        self.spawns_in.setdefault(fn.start_byte, (fn, []))[1].append(offset)
        c = _flat(self.text(call))
        ctx = self.parent(unary)
        begin, end = self._spawn_marker(call), b" __ss_cilk_spawn_end();"
        if ctx.type == "expression_statement":
            self.replace(ctx, b"{ " + begin + c + b";" + end + b" }")
        elif (
            ctx.type == "assignment_expression"
            and self.text(self.field(ctx, "operator")) == b"="
            and ctx.child_by_field_name("right") == unary
            and self.parent(ctx).type == "expression_statement"
        ):
            lhs = _flat(self.text(self.field(ctx, "left")))
            self.replace(self.parent(ctx), b"{ " + begin + lhs + b" = " + c + b";" + end + b" }")
        elif ctx.type == "init_declarator" and ctx.child_by_field_name("value") == unary:
            self._spawn_declaration(ctx, c, begin, end, unary)
        else:
            self.fail(
                offset, SPAWN, f"spawn inside an expression; the supported forms are {_FORMS}"
            )

    def _spawn_marker(self, call: Node) -> bytes:
        """The spawn marker of ``call``, naming the function it calls when it can.

        The importer merges into the spawned frame the Cilk call whose CALL marker names
        the function the spawn names (``simsched_cilk.h``), so that a spawned plain
        function's calls of Cilk functions stay child frames.  Only an identifier callee
        is named, by :func:`function_id` if it names a function and 0 if it is a pointer
        variable (chosen by the compiler from its type, which is not evaluated): any
        other callee expression is named 0, "not known".
        """
        callee = self.field(call, "function")
        while callee.type == "parenthesized_expression" and callee.named_child_count == 1:
            callee = callee.named_children[0]
        if callee.type != "identifier":
            return b"__ss_cilk_spawn_at(0); "
        f = self.text(callee)
        return (
            b"__ss_cilk_spawn_at(__builtin_choose_expr(__builtin_types_compatible_p("
            b"__typeof__(%s), __typeof__(*(%s))), %dL, 0L)); " % (f, f, function_id(f))
        )

    def _spawn_declaration(
        self, init: Node, call: bytes, begin: bytes, end: bytes, unary: Node
    ) -> None:
        decl = self.parent(init)
        name = init.child_by_field_name("declarator")
        while name is not None and name.type == "pointer_declarator":
            name = name.child_by_field_name("declarator")
        single = sum(1 for c in decl.named_children if c.type == "init_declarator") == 1
        const = any(
            c.type == "type_qualifier" and self.text(c) == b"const" for c in decl.named_children
        )
        if (
            single
            and not const
            and name is not None
            and name.type == "identifier"
            and decl.parent is not None
            and decl.parent.type == "compound_statement"
        ):
            # T x; spawn; x = f(...); spawn end -- the store belongs to the child, as in Cilk
            head = _flat(self.src[decl.start_byte : init.start_byte])
            declarator = _flat(self.text(self.field(init, "declarator")))
            var = self.text(name)
            self.replace(decl, head + declarator + b"; " + begin + var + b" = " + call + b";" + end)
        else:
            # __extension__ on every statement expression the rewrite writes: a GNU
            # extension, which -pedantic-errors would hold against the user's program
            value = b"__auto_type __ss_sv = (" + call + b");"
            self.replace(unary, b"__extension__ ({ " + begin + value + end + b" __ss_sv; })")

    def _sync(self, offset: int, tok: bytes, stmt: Node | None, fn: Node) -> None:
        if stmt is None or stmt.type != "expression_statement" or stmt.start_byte != offset:
            self.fail(offset, SYNC, "must be a statement of its own (cilk_sync;)")
            return
        self.replace((offset, offset + len(tok)), b"__ss_cilk_sync()")

    def _scope(self, offset: int, tok: bytes, ifs: Node | None, fn: Node) -> None:
        body = None if ifs is None else ifs.child_by_field_name("consequence")
        if ifs is None or ifs.type != "if_statement" or ifs.start_byte != offset or body is None:
            self.fail(offset, SCOPE, "must be followed by a statement (cilk_scope { ... })")
            return
        if ifs.child_by_field_name("alternative") is not None:
            self.fail(offset, SCOPE, "must be followed by a single statement")
            return
        self.replace((offset, offset + len(tok)), b"{")
        self.insert(body.end_byte, b" __ss_cilk_sync(); }", order=offset)


def rewrite(source: bytes, name: str, options: CilkOptions | None = None) -> bytes:
    """Rewrite the Cilk constructs of a preprocessed C translation unit into markers.

    Parameters
    ----------
    source
        The unit, as ``gcc -E`` wrote it (with line markers), including
        ``simsched_cilk.h``.
    name
        The source's name, for errors outside any line marker.
    options
        How ``cilk_for`` loops are split (default: OpenCilk's way).

    Returns
    -------
    bytes
        C text with the same lines, to be compiled as preprocessed C
        (``-x cpp-output``); ``source`` itself when it uses no Cilk construct.

    Raises
    ------
    CaptureError
        A construct the markers cannot express, as ``file:line:column: construct: why``
        (the first one in the unit).
    """
    return _Rewriter(source, name, options or CilkOptions()).run()


def find_keyword(source: bytes, name: str) -> str | None:
    """Locate the first Cilk keyword or reducer name of an unpreprocessed source.

    Used to reject C++ sources, which the rewriter does not handle: the C grammar
    still separates identifiers from comments and strings there.

    Parameters
    ----------
    source
        The file's text.
    name
        Its name.

    Returns
    -------
    str or None
        ``file:line:column: keyword`` of the first one, or None.
    """
    if not mentions_cilk(source):
        return None
    root = parse_c(source).root_node
    stack = [root]
    best: tuple[int, int, bytes] | None = None
    while stack:
        n = stack.pop()
        if n.child_count == 0 and n.type in ("identifier", "type_identifier", "field_identifier"):
            tok = source[n.start_byte : n.end_byte]
            if tok in _KEYWORDS or _REDUCER.fullmatch(tok):
                pos = (n.start_point[0], n.start_point[1], tok)
                best = pos if best is None or pos < best else best
        elif n.type not in ("comment", "string_literal", "char_literal"):
            stack.extend(n.children)
    if best is None:
        return None
    return f"{Path(name)}:{best[0] + 1}:{best[1] + 1}: {best[2].decode()}"
