"""What a Cilk function gets as a whole: its implicit syncs and its own frame.

Cilk syncs a function that spawns before each return and at the end of its body, and
each invocation of a function that spawns, loops or scopes is a frame of its own in
the trace; ``setjmp``/``longjmp`` in such a function would leave the markers behind,
so they are refused.  These rewrites look at a function definition, not at one
keyword: at its returns, and at its declarator for its name and return type (a
``return`` rewritten to sync first keeps its value in a variable of that type).
They are apart from the statements' rewrites; the class is one part of the rewriter
(:mod:`simsched.capture._cilk_edits`).  :func:`function_id` is importable from
:mod:`simsched.capture.cilk`.
"""

from __future__ import annotations

import hashlib
from typing import TYPE_CHECKING

from simsched.capture._cilk_edits import _RewriterBase
from simsched.capture._cilk_source import _KEYWORDS, _LOOPS, SYNC, _flat

if TYPE_CHECKING:
    from tree_sitter import Node

_TYPE_DROP = {"storage_class_specifier", "attribute_specifier", "attribute_declaration"}
_SPECIFIERS = {b"_Noreturn", b"noreturn", b"inline", b"__inline", b"__inline__", b"__extension__"}

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


class _FunctionRewrites(_RewriterBase):
    """The rewrites of a Cilk function as a whole: implicit syncs, frame, jumps refused."""

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
