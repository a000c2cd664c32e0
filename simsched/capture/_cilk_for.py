"""The rewrite of ``cilk_for`` loops into OpenCilk's divide-and-conquer spawning.

A ``cilk_for`` is the one construct whose rewrite computes: it checks the loop header
for the canonical shape, counts the iterations once in the type C compares them in,
chooses the grain (``#pragma cilk grainsize``, the option, OpenCilk's default) and
writes the loop that splits the range as :mod:`simsched.capture.cilk` describes.
That arithmetic, and the care its corner cases took, is apart from the statements'
simple rewrites; the class is one part of the rewriter
(:mod:`simsched.capture._cilk_edits`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from simsched.capture._cilk_edits import SPLITS, _RewriterBase
from simsched.capture._cilk_source import _LOOPS, FOR, SPAWN, _flat

if TYPE_CHECKING:
    from tree_sitter import Node

_CMP_FLIP = {b"<": b">", b"<=": b">=", b">": b"<", b">=": b"<=", b"!=": b"!="}


class _ForRewrites(_RewriterBase):
    """The rewrite of a ``cilk_for``: its header checked, its range split."""

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
