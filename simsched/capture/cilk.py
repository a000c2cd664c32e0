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
"""

from __future__ import annotations

import bisect
import hashlib
import operator
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from simsched.errors import CaptureError, shown, spelled

if TYPE_CHECKING:
    from tree_sitter import Node, Parser, Tree

SPAWN, SYNC, FOR, SCOPE = "cilk_spawn", "cilk_sync", "cilk_for", "cilk_scope"
SPLITS = ("opencilk", "binary")
_KEYWORDS = {
    b"cilk_spawn": SPAWN,
    b"_Cilk_spawn": SPAWN,
    b"cilk_sync": SYNC,
    b"_Cilk_sync": SYNC,
    b"cilk_for": FOR,
    b"_Cilk_for": FOR,
    b"cilk_scope": SCOPE,
    b"_Cilk_scope": SCOPE,
}
# Same-length C stand-ins the grammar parses (cilk_sync is an identifier already).
_STANDIN = {SPAWN: b"!", FOR: b"for", SCOPE: b"if (1)"}
_REDUCER = re.compile(
    rb"cilk_reducer|_Cilk_reducer|REDUCER_VIEW|CILK_C_\w*(?:REDUCER|MONOID)\w*"
    rb"|__cilkrts_hyper\w*|__cilkrts_reducer\w*"
)
_CILK_WORDS = re.compile(
    rb"\b(?:_Cilk_(?:spawn|sync|for|scope|reducer)|cilk_(?:spawn|sync|for|scope|reducer)"
    rb"|REDUCER_VIEW|CILK_C_\w*(?:REDUCER|MONOID)\w*|__cilkrts_hyper\w*|__cilkrts_reducer\w*)\b"
)
_TOKEN = re.compile(rb'"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'|[A-Za-z_][A-Za-z0-9_]*')
LINE_MARKER = re.compile(rb'#\s*(?:line\s+)?(\d+)\s+"((?:\\.|[^"\\])*)"')
_GRAINSIZE = re.compile(rb"#\s*pragma\s+cilk\s+grainsize\b\s*=?\s*(.*?)\s*$")
_LOOPS = {"for_statement", "while_statement", "do_statement"}
_TYPE_DROP = {"storage_class_specifier", "attribute_specifier", "attribute_declaration"}
_SPECIFIERS = {b"_Noreturn", b"noreturn", b"inline", b"__inline", b"__inline__", b"__extension__"}
_CMP_FLIP = {b"<": b">", b"<=": b">=", b">": b"<", b">=": b"<=", b"!=": b"!="}
_FORMS = "cilk_spawn f(...);, x = cilk_spawn f(...); or T x = cilk_spawn f(...);"
_LLONG_MAX = (1 << 63) - 1


@dataclass(frozen=True)
class CilkOptions:
    """How ``cilk_for`` loops are split.

    Attributes
    ----------
    grain
        Iterations per leaf for loops without ``#pragma cilk grainsize``; ``None`` for
        OpenCilk's default ``min(2048, n / (8 * workers))``.
    workers
        The worker count of OpenCilk's default grain formula.
    split
        ``"opencilk"``: spawn the lower half and keep the upper half in the same frame
        (OpenCilk's and Cilk Plus's runtimes); ``"binary"``: spawn both halves.
    """

    grain: int | None = None
    workers: int = 1
    split: str = "opencilk"

    def __post_init__(self) -> None:
        if self.grain is not None:
            _check_count("grain", self.grain, "--cilk-for-grain")
        _check_count("workers", self.workers, "--cilk-workers")
        if self.split not in SPLITS:
            given = spelled(f"split={self.split!r}", f"--cilk-for-split {self.split}")
            raise CaptureError(f"{given}: choose one of {', '.join(SPLITS)}")


def _check_count(name: str, value: Any, flag: str) -> None:
    """Refuse a :class:`CilkOptions` count that is not an integer in ``[1, 2^63 - 1]``."""
    # both counts are written into the program as long long constants: a larger one did
    # not fit, and gcc only warned and truncated it; "8" or 2.5 failed in a comparison
    try:
        if isinstance(value, bool):
            raise TypeError
        operator.index(value)
    except TypeError:
        raise CaptureError(f"{name}={shown(value)}: expected an integer") from None
    if not 1 <= value <= _LLONG_MAX:
        given = spelled(f"{name}={value}", f"{flag} {value}")
        raise CaptureError(f"{given}: must be a positive integer up to 2^63 - 1")


def mentions_cilk(text: bytes) -> bool:
    """Tell quickly whether preprocessed C text may use Cilk (a filter before parsing).

    Parameters
    ----------
    text
        A translation unit, preprocessed.

    Returns
    -------
    bool
        True if a Cilk keyword or reducer name occurs anywhere (even in a string).
    """
    return _CILK_WORDS.search(text) is not None


@lru_cache(maxsize=1)
def _parser() -> Parser:
    import tree_sitter_c
    from tree_sitter import Language, Parser

    return Parser(Language(tree_sitter_c.language()))


def parse_c(text: bytes) -> Tree:
    """Parse C text with tree-sitter's C grammar and return the tree."""
    return _parser().parse(text)


@dataclass
class _Edit:
    start: int
    end: int
    text: bytes
    order: int = 0  # among insertions at one offset, inner constructs (larger order) first


class _Unit:
    """A preprocessed translation unit: its lines, line markers and original files."""

    def __init__(self, src: bytes, name: str) -> None:
        self.src = src
        self.name = name
        self.starts = [0] + [m.end() for m in re.finditer(rb"\n", src)]
        self.marks: list[tuple[int, str, int]] = []  # (row of marker, file, next line)
        for row, s in enumerate(self.starts):
            if src.startswith(b"#", s):
                m = LINE_MARKER.match(src, s)
                if m:
                    path = m.group(2).decode("utf-8", "replace").replace('\\"', '"')
                    self.marks.append((row, path, int(m.group(1))))
        self._mark_rows = [r for r, _, _ in self.marks]

    def row_col(self, offset: int) -> tuple[int, int]:
        row = bisect.bisect_right(self.starts, offset) - 1
        return row, offset - self.starts[row]

    def line(self, row: int) -> bytes:
        end = self.starts[row + 1] - 1 if row + 1 < len(self.starts) else len(self.src)
        return self.src[self.starts[row] : end]

    def where(self, offset: int, token: bytes = b"") -> str:
        """``file:line:column`` of a byte offset, in the user's file."""
        row, col = self.row_col(offset)
        i = bisect.bisect_right(self._mark_rows, row - 1) - 1
        if i < 0:
            return f"{self.name}:{row + 1}:{col + 1}"
        mrow, path, first = self.marks[i]
        line = first + row - mrow - 1
        return f"{path}:{line}:{_original_column(path, line, self.line(row), col, token) + 1}"


def _original_column(path: str, line: int, pre: bytes, col: int, token: bytes) -> int:
    """The token's column in the file's own line (macro expansion may have moved it)."""
    try:
        with open(path, "rb") as f:
            for _ in range(line - 1):
                f.readline()
            orig = f.readline().rstrip(b"\r\n")
    except OSError:
        return col
    if orig == pre or not token:
        return col
    nth = pre[:col].count(token)
    pos = -1
    for _ in range(nth + 1):
        pos = orig.find(token, pos + 1)
        if pos < 0:
            return col
    return pos


def _flat(text: bytes) -> bytes:
    """One line of C from a span of preprocessed text (line markers dropped)."""
    return b" ".join(ln for ln in text.split(b"\n") if not ln.lstrip().startswith(b"#"))


def _pad(removed: bytes) -> bytes:
    """The newlines (and line markers) of a replaced span, so no line moves."""
    lines = removed.split(b"\n")[1:]
    return b"".join(b"\n" + (ln if ln.lstrip().startswith(b"#") else b"") for ln in lines)


class _Rewriter:
    def __init__(self, src: bytes, name: str, options: CilkOptions) -> None:
        self.u = _Unit(src, name)
        self.src = src
        self.opt = options
        self.edits: list[_Edit] = []
        self.problems: list[tuple[int, str]] = []
        self.pragmas: dict[int, tuple[int, bytes]] = {}  # row -> (offset, grain expression)
        self.used_pragmas: set[int] = set()
        # function start -> (its definition, the spawn offsets in it)
        self.spawns_in: dict[int, tuple[Node, list[int]]] = {}
        self.loop_id = 0
        # function start -> definition, for every function that spawns, loops or scopes
        self.cilk_fns: dict[int, Node] = {}
        self.offsets: list[int] = []  # of every keyword token, in order
        self.kinds: dict[int, str] = {}  # offset -> construct
        self.tokens: dict[int, bytes] = {}  # offset -> spelling

    # -- helpers ---------------------------------------------------------------------------
    def text(self, node: Node) -> bytes:
        return self.src[node.start_byte : node.end_byte]

    def field(self, node: Node, name: str) -> Node:
        """A child the C grammar requires (an absent one means a parse it cannot rewrite)."""
        child = node.child_by_field_name(name)
        if child is None:
            raise CaptureError(
                f"{self.u.where(node.start_byte)}: cannot rewrite a {node.type} without its {name}"
            )
        return child

    def parent(self, node: Node) -> Node:
        """The parent of a node below the root (every node a construct is rewritten from)."""
        if node.parent is None:
            raise CaptureError(f"{self.u.where(node.start_byte)}: {node.type} outside a unit")
        return node.parent

    def fail(self, offset: int, construct: str, why: str, token: bytes | None = None) -> None:
        if token is None:
            token = self.tokens.get(offset, construct.encode())
        where = self.u.where(offset, token)
        self.problems.append((offset, f"{where}: {construct}: {why}"))

    def replace(self, node_or_span: Node | tuple[int, int], text: bytes, order: int = 0) -> None:
        start, end = (
            node_or_span
            if isinstance(node_or_span, tuple)
            else (node_or_span.start_byte, node_or_span.end_byte)
        )
        self.edits.append(_Edit(start, end, text + _pad(self.src[start:end]), order))

    def insert(self, offset: int, text: bytes, order: int) -> None:
        self.edits.append(_Edit(offset, offset, text, order))

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

    def _in(self, node: Node, offsets: list[int] | None = None) -> list[int]:
        offs = self.offsets if offsets is None else offsets
        lo = bisect.bisect_left(offs, node.start_byte)
        hi = bisect.bisect_left(offs, node.end_byte)
        return offs[lo:hi]

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

    def _for(self, offset: int, tok: bytes, fs: Node | None, fn: Node) -> None:
        if fs is None or fs.type != "for_statement" or fs.start_byte != offset:
            self.fail(offset, FOR, "must be followed by a loop header and body")
            return
        body = fs.child_by_field_name("body")
        header = self._for_header(offset, fs)
        if header is None or body is None:
            return
        for bad in self._escapes(body):
            kind = "break" if bad.type == "break_statement" else "return"
            self.fail(bad.start_byte, kind, "cannot leave a cilk_for body")
        init, var, ltype, limit, op, step, up, pointer = header
        k = self.loop_id
        self.loop_id += 1
        inner = self._in(body)
        grain = self._grain(fs)
        s = f"__ss_{{}}{k}".format
        names = {n: s(n).encode() for n in ("lim", "st", "v0", "cf", "a", "b", "i")}
        lim, st, v0, cf, a, b, i = names.values()
        # the distance from the first value to the bound, in unsigned long long: an integer
        # variable's ends are converted before the subtraction (which then cannot overflow:
        # int i from -2e9 to 2e9 is 4e9 apart), and a pointer stays a pointer;
        # the first value in the type it is compared in (signed char -64 against an
        # unsigned bound is 4294967232 there, not 2^64 - 64)
        first = b"((__typeof__(%s))%s)" % (lim, v0)
        hi_, lo_ = (lim, first) if up else (first, lim)
        # both ends cast to the type of bound + 0ull (unsigned long long for an integer, the
        # bound's own type for a floating bound or a pointer): the values 0ull + hi - lo
        # took, without the implicit sign conversions -Wsign-conversion (in C, part of
        # -Wconversion) holds against code the user never wrote
        wide = b"__typeof__((%s) + 0ull)" % lim
        span = b"(%s)%s - (%s)%s" % (wide, hi_, wide, lo_)
        diff = b"(unsigned long long)(" + span + b")"
        if op == b"!=":
            # the step reaches the bound exactly, in either direction: a negative step
            # (i += s with s < 0) runs down to it, and an unsigned variable may wrap on
            # the way (unsigned char from 250 to 4 runs 10 iterations), so the distance
            # and the step are taken modulo the variable's width, the step's sign there
            # choosing the direction
            mask = b"(sizeof(%s) < 8 ? (1ull << (8 * sizeof(%s))) - 1 : ~0ull)" % (v0, v0)
            count = (
                b"__extension__ ({ unsigned long long __ss_m = %s & %s, __ss_d = %s & %s; "
                b"__ss_d == 0 ? 0ull : __ss_m >> (8 * sizeof(%s) - 1) "
                b"? ((0ull - __ss_d) & %s) / ((0ull - __ss_m) & %s) : __ss_d / __ss_m; })"
            ) % (st, mask, diff, mask, v0, mask, mask)
        elif op in (b"<", b">"):
            # (diff + st - 1) / st overflowed when the distance and the step were near
            # 2^64 and ran no iteration; a floating bound's distance is rounded up
            # (int i = 0; i < 2.5 runs 3 iterations), an integer's is left alone
            diff = (
                b"__extension__ ({ __typeof__(%s) __ss_x = %s; (unsigned long long)__ss_x + "
                b"(unsigned long long)((long double)(unsigned long long)__ss_x "
                b"< (long double)__ss_x); })"
            ) % (span, span)
            count = b"(%s %s %s ? (%s - 1) / %s + 1 : 0ull)" % (v0, op, lim, diff, st)
        else:
            count = b"(%s %s %s ? %s / %s + 1 : 0ull)" % (v0, op, lim, diff, st)
        # a pointer moves by a signed offset (a negative step's i * st wraps to 2^64 - k)
        offset_ = b"(long long)(%s * %s)" if pointer else b"%s * %s"
        offset_ = offset_ % (i, st)
        # an integer's next value is computed in unsigned long long and converted back, as
        # the assignment did, but with casts that -Wconversion does not warn about
        sign = b"+" if up else b"-"
        value = b"(__typeof__(%s))((__typeof__((%s) + 0ull))%s %s %s)" % (v0, v0, v0, sign, offset_)
        split = SPLITS.index(self.opt.split)
        prefix = (
            b"{ %s __typeof__(%s) %s = (%s); unsigned long long %s = (unsigned long long)(%s); "
            b"__typeof__(%s) %s = %s; __ss_cilk_for_t %s; unsigned long long %s, %s, %s; "
            b"__ss_cilk_for_begin(&%s, %s, (long long)(%s), %d, %d, %d); "
            b"while (__ss_cilk_for_next(&%s, &%s, &%s)) for (%s = %s; %s < %s; %s++) { "
            b"%s = %s; do "
        ) % (
            init, ltype, lim, limit, st, step,
            var, v0, var, cf, a, b, i,
            cf, count, grain, self.opt.workers, split, 1 if inner else 0,
            cf, a, b, i, a, i, b, i,
            var, value,
        )  # fmt: skip
        self.replace((offset, body.start_byte), prefix)
        per_iter = b" __ss_cilk_sync();" if any(self.kinds[o] == SPAWN for o in inner) else b""
        self.insert(body.end_byte, b" while (0);" + per_iter + b" } }", order=offset)

    def _for_header(
        self, offset: int, fs: Node
    ) -> tuple[bytes, bytes, bytes, bytes, bytes, bytes, bool, bool] | None:
        init = fs.child_by_field_name("initializer")
        cond = fs.child_by_field_name("condition")
        upd = fs.child_by_field_name("update")
        decls = (
            [] if init is None else [c for c in init.named_children if c.type == "init_declarator"]
        )
        if init is None or init.type != "declaration" or len(decls) != 1:
            self.fail(offset, FOR, "the initialisation must declare one loop variable (T i = a)")
            return None
        name = decls[0].child_by_field_name("declarator")
        pointer = name is not None and name.type == "pointer_declarator"
        while name is not None and name.type == "pointer_declarator":
            name = name.child_by_field_name("declarator")
        if name is None or name.type != "identifier":
            self.fail(offset, FOR, "the loop variable must be an integer or a pointer")
            return None
        var = self.text(name)
        if cond is None or cond.type != "binary_expression":
            self.fail(offset, FOR, "the condition must compare the loop variable with a bound")
            return None
        left, right = self.field(cond, "left"), self.field(cond, "right")
        op = self.text(self.field(cond, "operator"))
        if op not in _CMP_FLIP or var not in (self.text(left), self.text(right)):
            self.fail(
                offset, FOR, "the condition must compare the loop variable with <, <=, >, >= or !="
            )
            return None
        if self.text(left) != var:
            left, right, op = right, left, _CMP_FLIP[op]
        step, up = b"1", None
        if upd is not None and upd.type == "update_expression":
            if self.text(self.field(upd, "argument")) == var:
                up = self.text(self.field(upd, "operator")) == b"++"
        elif upd is not None and upd.type == "assignment_expression":
            aop = self.text(self.field(upd, "operator"))
            if self.text(self.field(upd, "left")) == var and aop in (b"+=", b"-="):
                up, step = aop == b"+=", _flat(self.text(self.field(upd, "right")))
        if up is None:
            self.fail(offset, FOR, "the increment must be i++, ++i, i--, --i, i += s or i -= s")
            return None
        if (up and op in (b">", b">=")) or (not up and op in (b"<", b"<=")):
            self.fail(offset, FOR, "the condition and the increment go in opposite directions")
            return None
        bound = _flat(self.text(right))
        # the bound is held in the type C compares the two in (0 ? var : bound: the usual
        # arithmetic conversions), not in the variable's: converting it to a narrower
        # variable's type ran an unsigned char loop to -1 255 times, where C runs none;
        # a pointer keeps its own type, which a void * bound would otherwise take
        ltype = var if pointer else b"0 ? (" + var + b") : (" + bound + b")"
        return _flat(self.text(init)), var, ltype, bound, op, step, up, pointer

    def _escapes(self, body: Node) -> list[Node]:
        """break statements of the body itself and every return in it."""
        out, stack = [], [(body, False)]
        while stack:
            n, nested = stack.pop()
            if n.type == "return_statement" or (n.type == "break_statement" and not nested):
                out.append(n)
            inner = nested or n.type in _LOOPS or n.type == "switch_statement"
            stack.extend((c, inner) for c in n.named_children)
        return out

    def _grain(self, fs: Node) -> bytes:
        row, _ = self.u.row_col(fs.start_byte)
        r = row - 1
        while r >= 0:
            if r in self.pragmas:
                self.used_pragmas.add(r)
                return _flat(self.pragmas[r][1]) or b"0"
            if self.u.line(r).strip() and not self.u.line(r).lstrip().startswith(b"#"):
                break
            r -= 1
        return str(self.opt.grain or 0).encode()

    # -- implicit syncs ---------------------------------------------------------------------
    def _implicit_syncs(self, fn: Node, spawns: list[int]) -> None:
        body = self.field(fn, "body")
        rtype = self._return_type(fn)
        first = min(spawns)
        has_goto = False
        returns, stack = [], [body]
        while stack:
            n = stack.pop()
            has_goto |= n.type == "goto_statement"
            if n.type == "return_statement":
                returns.append(n)
            stack.extend(n.named_children)
        for r in returns:
            if not has_goto and r.start_byte < first and not self._loop_with_spawn(r, fn, spawns):
                continue  # no spawn can have happened yet
            if self._after_sync(r):
                continue
            expr = r.named_children[0] if r.named_child_count else None
            if expr is None:
                new = b"{ __ss_cilk_sync(); return; }"
            elif rtype == b"void":
                new = b"{ %s; __ss_cilk_sync(); return; }" % _flat(self.text(expr))
            else:
                new = b"{ %s = (%s); __ss_cilk_sync(); return __ss_ret; }" % (
                    rtype + b" __ss_ret" if rtype else self._return_declaration(fn),
                    _flat(self.text(expr)),
                )
            self.replace(r, new)
        stmts = [c for c in body.named_children if c.type != "comment"]
        if not stmts or (stmts[-1].type != "return_statement" and not self._is_sync(stmts[-1])):
            self.insert(body.end_byte - 1, b"__ss_cilk_sync(); ", order=-1)

    def _own_frame(self, fn: Node) -> None:
        """Give every invocation of ``fn`` its own frame, closed on every way out.

        ``main`` is left alone: its frame is the trace's root frame.
        """
        name = self._name(fn)
        if name == b"main":
            return
        # its CALL marker names it, for the importer to tell the spawned call from the
        # others (simsched_cilk.h)
        ident = self._identifier(fn)
        arg = b"0" if ident is None else b"%dL" % function_id(ident)
        body = self.field(fn, "body")
        self.insert(
            body.start_byte + 1,
            b" __ss_cilk_frame_t __ss_frame __attribute__((cleanup(__ss_cilk_leave)))"
            b" = __ss_cilk_enter(" + arg + b");",
            order=1 << 40,
        )

    def _name(self, fn: Node) -> bytes | None:
        """A function definition's name (None for a declarator the grammar hides it in)."""
        decl: Node | None = self.field(fn, "declarator")
        while decl is not None and decl.type != "function_declarator":
            decl = decl.child_by_field_name("declarator")
        inner = None if decl is None else decl.child_by_field_name("declarator")
        return None if inner is None else self.text(inner)

    def _identifier(self, fn: Node) -> bytes | None:
        """The identifier a function definition defines, through any declarator around it
        (``long (*chooser(long n))(long)`` defines ``chooser``); None if there is none."""
        node: Node | None = self.field(fn, "declarator")
        while node is not None:
            inner = node.child_by_field_name("declarator")
            if node.type == "function_declarator" and inner is not None:
                if inner.type == "identifier":
                    return self.text(inner)
            elif node.type == "parenthesized_declarator":
                inner = node.named_child(0) if node.named_child_count == 1 else None
            elif node.type not in ("pointer_declarator", "array_declarator"):
                inner = None
            node = inner
        return None

    def _nonlocal_jumps(self, fn: Node) -> None:
        """Reject ``setjmp``/``longjmp`` in a Cilk function.

        A ``longjmp`` skips the CALL_END and SPAWN_END markers of the frames it leaves (a
        ``cleanup`` handler does not run), and a ``setjmp`` in a Cilk function is the
        landing place of a jump out of its spawned calls: either way the marker stream
        no longer describes the frames that ran.  Jumps from plain functions are found
        at import, from the unbalanced markers (:mod:`simsched.trace.raw`).
        """
        stack = [self.field(fn, "body")]
        while stack:
            n = stack.pop()
            stack.extend(n.named_children)
            if n.type != "call_expression":
                continue
            callee = self.field(n, "function")
            construct = _NONLOCAL.get(self.text(callee))
            if construct is None:
                continue
            name = (self._name(fn) or b"?").decode()
            self.fail(
                callee.start_byte,
                construct,
                f"a non-local jump in the Cilk function {name}() skips the ends of the "
                "frames it leaves, so the DAG cannot be captured (use return values or "
                "flags instead)",
                construct.encode(),
            )

    def _is_sync(self, stmt: Node) -> bool:
        return (
            stmt.type == "expression_statement"
            and stmt.named_child_count == 1
            and _KEYWORDS.get(self.text(stmt.named_child(0))) == SYNC
        )

    def _after_sync(self, ret: Node) -> bool:
        prev = ret.prev_named_sibling
        return prev is not None and self._is_sync(prev)

    def _loop_with_spawn(self, node: Node, fn: Node, spawns: list[int]) -> bool:
        n = node.parent
        while n is not None and n != fn:
            if n.type in _LOOPS and self._in(n, spawns):
                return True
            n = n.parent
        return False

    def _return_type(self, fn: Node) -> bytes | None:
        """The declared return type's text, or None when it cannot be written as a prefix."""
        top = self.field(fn, "declarator")
        decl: Node | None = top
        while decl is not None and decl.type == "pointer_declarator":
            decl = decl.child_by_field_name("declarator")
        inner = None if decl is None else decl.child_by_field_name("declarator")
        if (
            decl is None
            or decl.type != "function_declarator"
            or inner is None
            or inner.type != "identifier"
        ):
            return None  # e.g. a function returning a function pointer
        parts = self._specifiers(fn)
        if parts is None:
            return None
        stars = _flat(self.src[top.start_byte : decl.start_byte]).strip()
        return b" ".join(parts) + (b" " + stars if stars else b"")

    def _specifiers(self, fn: Node) -> list[bytes] | None:
        """The type specifiers before the declarator (None for a struct defined there)."""
        top = self.field(fn, "declarator")
        parts = []
        for c in fn.named_children:
            if c.start_byte >= top.start_byte:
                break
            if c.type in _TYPE_DROP or self.text(c) in _SPECIFIERS:
                continue
            if c.type in ("struct_specifier", "union_specifier", "enum_specifier") and (
                c.child_by_field_name("body") is not None
            ):
                return None
            parts.append(_flat(self.text(c)))
        return parts

    def _return_declaration(self, fn: Node) -> bytes:
        """A declaration of ``__ss_ret`` with the return type of a function whose type cannot
        be written as a prefix (a function returning a function pointer): its declarator
        with the name and parameters replaced, ``int (*f(int n))(int)`` giving
        ``int (*__ss_ret)(int)``, so that ``return 0;`` still converts to the pointer
        (``__auto_type`` made it an int).  ``__auto_type`` where even that fails."""
        top = self.field(fn, "declarator")
        node: Node | None = top
        while node is not None:
            inner = node.child_by_field_name("declarator")
            if node.type == "parenthesized_declarator":
                inner = node.named_child(0) if node.named_child_count == 1 else None
            elif node.type == "function_declarator" and inner is not None:
                if inner.type == "identifier":
                    break
            elif node.type not in ("pointer_declarator", "function_declarator", "array_declarator"):
                inner = None
            node = inner
        parts = self._specifiers(fn)
        if node is None or node == top or parts is None:
            return b"__auto_type __ss_ret"
        declarator = (
            self.src[top.start_byte : node.start_byte]
            + b"__ss_ret"
            + self.src[node.end_byte : top.end_byte]
        )
        return b" ".join(parts) + b" " + _flat(declarator).strip()


# setjmp/longjmp and their spellings after glibc's macros (the rewriter sees the
# preprocessed unit), named as the program writes them
_NONLOCAL = {
    **dict.fromkeys((b"setjmp", b"_setjmp", b"__setjmp", b"sigsetjmp", b"__sigsetjmp"), "setjmp"),
    **dict.fromkeys(
        (b"longjmp", b"_longjmp", b"siglongjmp", b"__longjmp_chk", b"____longjmp_chk"), "longjmp"
    ),
    b"__builtin_setjmp": "__builtin_setjmp",
    b"__builtin_longjmp": "__builtin_longjmp",
}


def function_id(name: bytes) -> int:
    """The number a Cilk function's CALL marker, and a spawn of it, name it by.

    A hash of the function's name, in ``[2, 2^63)`` (0 means "not known" and 1 "no
    function": ``simsched_cilk.h``).  Not its address: taking a function's address
    changes how gcc optimises it (an address-taken ``static`` function loses the facts
    gcc derives from knowing all its callers; queens' copy loop became a ``memcpy``
    call), and the capture is of the program as it is compiled without markers.
    """
    digest = hashlib.blake2b(name, digest_size=8, person=b"simsched-cilk").digest()
    return int.from_bytes(digest, "little") % ((1 << 63) - 2) + 2


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
