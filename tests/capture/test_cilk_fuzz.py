"""Seeded differential test of the ``cilk_for`` rewrite against the serial elision.

Random programs of many ``cilk_for`` loops (integer variables of every width and
signedness, ``size_t``, ``ptrdiff_t``, an enum and pointers; bounds of other types, as
constants or variables, near the types' limits; every comparison, on either side; ``++``,
``--``, ``+= s`` and ``-= s`` with steps of other types that need not divide the distance;
grain pragmas; nested loops and loops in spawned functions) are built by plain gcc (the
serial elision) and by ``simsched cc``, and each loop's iteration count and hash of its
values must agree, and agree with a model of C's conversions.  Only well-defined loops
are generated: the model runs each header as C does and drops those whose variable
overflows, runs more than a few thousand times, or wraps around (an unsigned variable
may wrap on its way to a ``!=`` bound it reaches exactly, docs/capture.md).
"""

from __future__ import annotations

import random
import subprocess
from collections.abc import Sequence
from pathlib import Path

import pytest

from simsched.capture import build, compile_program
from simsched.capture.cilk import CilkOptions

from .conftest import needs_gcc

# name: (bits, signed, conversion rank); LP64
TYPES: dict[str, tuple[int, bool, int]] = {}
for _rank, (_word, _bits) in enumerate(
    [("char", 8), ("short", 16), ("int", 32), ("long", 64), ("long long", 64)], 1
):
    TYPES["signed char" if _word == "char" else _word] = (_bits, True, _rank)
    TYPES["unsigned" if _word == "int" else "unsigned " + _word] = (_bits, False, _rank)
# gcc: an enum without negative constants is unsigned int
TYPES |= {"size_t": (64, False, 4), "ptrdiff_t": (64, True, 4), "enum E": (32, False, 3)}
STEP_TYPES = ["int", "long", "unsigned", "signed char", "long long", "unsigned long long"]
STEPS = [1, 2, 3, 7, 100, -1, -2, -3, 1 << 20, (1 << 31) - 1, (1 << 62) + 1, (1 << 63) - 1]
FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "!=": "!="}
CMP = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
    "!=": lambda a, b: a != b,
}
CAP = 3000
M64 = (1 << 64) - 1


def _limits(t: str) -> tuple[int, int]:
    bits, signed, _ = TYPES[t]
    return (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)


def _promote(t: str) -> str:
    t = {"size_t": "unsigned long", "ptrdiff_t": "long", "enum E": "unsigned"}.get(t, t)
    return "int" if TYPES[t][2] < 3 else t


def _common(a: str, b: str) -> str:
    """The usual arithmetic conversions of two types (LP64)."""
    a, b = _promote(a), _promote(b)
    (ba, sa, ra), (bb, sb, rb) = TYPES[a], TYPES[b]
    if sa == sb:
        return a if ra >= rb else b
    u, s, bu, ru, bs, rs = (b, a, bb, rb, ba, ra) if sa else (a, b, ba, ra, bb, rb)
    if ru >= rs:
        return u
    return s if bs > bu else "unsigned " + s


def _conv(t: str, v: int) -> int:
    bits, signed, _ = TYPES[t]
    v &= (1 << bits) - 1
    return v - (1 << bits) if signed and v >> (bits - 1) else v


def _lit(t: str, v: int) -> str:
    if v == -(1 << 63):
        return f"(({t})(-9223372036854775807LL - 1))"
    return f"(({t}){v}{'ULL' if v >= 1 << 63 else 'LL'})"


def _run_elision(
    t: str, v0: int, b: str, bv: int, op: str, s: str, sv: int, upd: str
) -> list[int] | None:
    """The loop's values as its serial elision runs it, None if it is not well defined."""
    c = _common(t, b)
    lim, i, vals, wrapped = _conv(c, bv), v0, [], False
    while CMP[op](_conv(c, i), lim):
        vals.append(i)
        if len(vals) > CAP:
            return None
        a = _common(t, "int" if upd in ("++", "--") else s)
        step = {"++": 1, "--": -1}.get(upd, _conv(a, sv) * (1 if upd == "+=" else -1))
        r = _conv(a, i) + step
        lo, hi = _limits(a)
        if not lo <= r <= hi:
            if TYPES[a][1]:
                return None  # signed overflow
            wrapped = True
        r = _conv(a, r)
        if _conv(t, r) != r:
            if TYPES[t][1]:
                return None  # out of a narrow signed type: implementation-defined
            wrapped = True
        new = _conv(t, r)
        if op != "!=" and _conv(c, new) - _conv(c, i) != new - i:
            return None  # wraps in the comparison's type (a negative int against an unsigned)
        if op != "!=" and not CMP[op[0]](i, new):
            return None  # a step away from the bound
        i = new
    if wrapped:
        # only a != loop whose step reaches the bound exactly, modulo the width
        bits = TYPES[t][0]
        mask = (1 << bits) - 1
        st = {"++": 1, "--": -1, "+=": sv, "-=": -sv}[upd] & mask
        d = (bv - v0) & mask
        if st >> (bits - 1):
            st, d = -st & mask, -d & mask
        if op != "!=" or d % st or d // st != len(vals):
            return None
    return vals


def _int_loop(r: random.Random) -> tuple[dict[str, str], list[int]] | None:
    for _ in range(200):
        t, b = r.choice(list(TYPES)), r.choice(list(TYPES))
        op = r.choice(list(CMP))
        up_ops, down_ops = ["++", "+="], ["--", "-="]
        upd = r.choice(
            up_ops if op in ("<", "<=") else down_ops if op in (">", ">=") else up_ops + down_ops
        )
        s = r.choice(STEP_TYPES)
        lo, hi = _limits(t)
        if t == "enum E":
            lo, hi = 0, 30
        v0 = r.choice([0, 1, -1, 5, 1000, -100, lo, hi, lo + 1, hi - 1, hi // 2, lo // 2])
        v0 = r.randint(lo, hi) if r.random() < 0.2 else min(max(v0, lo), hi)
        if r.random() < 0.6:
            dist = r.choice([0, 1, 2, 3, 7, 50, 999, 2500]) * r.choice([1, 2, 3, 1000, 1 << 33])
            bv = v0 - dist if op in (">", ">=") or upd in down_ops else v0 + dist
            bv = -bv if r.random() < 0.2 else bv
        else:
            blo, bhi = _limits(b)
            bv = r.choice([0, -1, 1, blo, bhi, bhi - 1, r.randint(blo, bhi)])
        blo, bhi = (0, 30) if b == "enum E" else _limits(b)
        sv = _conv(s, r.choice(STEPS)) if upd in ("+=", "-=") else 1
        if not blo <= bv <= bhi:
            continue
        vals = _run_elision(t, v0, b, bv, op, s, sv, upd)
        if vals is not None:
            lit = {"T": t, "v0": _lit(t, v0), "B": b, "b": _lit(b, bv), "S": s, "s": _lit(s, sv)}
            return {**lit, "op": op, "upd": upd}, vals
    return None


def program(seed: int, loops: int = 30) -> tuple[str, str]:
    """A program of ``loops`` cilk_for loops and the output its serial elision prints."""
    r = random.Random(seed)
    decls, fns, body, want = [], [], [], []
    for k in range(loops):
        if r.random() < 0.12:  # a pointer into arr[64]
            op = r.choice(list(CMP))
            size = r.choice([1, 2, 3, 5])
            down = op in (">", ">=") or (op == "!=" and r.random() < 0.5)
            x, y = r.randint(0, 64), r.randint(0, 64)
            vals, i = [], x
            while CMP[op](i, y) and 0 <= i <= 64 and len(vals) <= 64:
                vals.append(i)
                i += -size if down else size
            if not 0 <= i <= 64 or len(vals) > 64:
                continue
            decls.append(f"volatile long ps{k} = {size};")
            sx = r.choice([str(size), f"ps{k}"])
            ups = ["p++", f"p += {sx}"] if size == 1 else [f"p += {sx}"]
            downs = ["p--", f"p -= {sx}"] if size == 1 else [f"p -= {sx}"]
            if op == "!=":  # a negative step of += or -=
                ups, downs = [*ups, f"p -= -{sx}"], [*downs, f"p += -{sx}"]
            upd = r.choice(downs if down else ups)
            cond = f"p {op} arr + {y}" if r.random() < 0.5 else f"arr + {y} {FLIP[op]} p"
            hdr = f"cilk_for (int *p = arr + {x}; {cond}; {upd})"
            loop = f"  {hdr} {{ h = h * 31 + (unsigned long long)(p - arr); n++; }}"
        else:
            made = _int_loop(r)
            if made is None:
                continue
            h, vals = made
            bexpr, sexpr = h["b"], h["s"]
            if r.random() < 0.4:
                decls.append(f"volatile {h['B']} nb{k} = {h['b']};")
                bexpr = f"nb{k}"
            if r.random() < 0.5:
                decls.append(f"volatile {h['S']} ns{k} = {h['s']};")
                sexpr = f"ns{k}"
            cond = f"i {h['op']} {bexpr}" if r.random() < 0.7 else f"{bexpr} {FLIP[h['op']]} i"
            upd = {"++": "i++", "--": "--i", "+=": f"i += {sexpr}", "-=": f"i -= {sexpr}"}
            hdr = f"cilk_for ({h['T']} i = {h['v0']}; {cond}; {upd[h['upd']]})"
            inner = " cilk_for (int j = 0; j < 3; j++) h += j; h -= 3;" if r.random() < 0.1 else ""
            loop = f"  {hdr} {{ h = h * 31 + (unsigned long long)i; n++;{inner} }}"
        if r.random() < 0.15:
            grain = r.choice(["1", "3", "1000000", "2 * 3", "gs", "(gs + 1)"])
            loop = f"  #pragma cilk grainsize {grain}\n{loop}"
        if r.random() < 0.1:
            fns.append(f"void f{k}(void) {{\n{loop}\n}}")
            loop = f"  cilk_spawn f{k}();\n  cilk_sync;"
        body += [loop, f'  printf("{k} %llu %llu\\n", h, n);\n  h = n = 0;']
        hsh = 0
        for v in vals:
            hsh = (hsh * 31 + v) & M64
        want.append(f"{k} {hsh} {len(vals)}\n")
    head = [
        "#include <cilk/cilk.h>",
        "#include <stddef.h>",
        "#include <stdio.h>",
        "enum E { E0, E1, E2 = 30 };",
        "unsigned long long h, n;",
        "int arr[64];",
        "volatile int gs = 4;",
    ]
    src = "\n".join([*head, *decls, *fns, "int main(void) {", *body, "  return 0;", "}", ""])
    return src, "".join(want)


def _check(tmp_path: Path, seeds: Sequence[int], variants: list[CilkOptions]) -> None:
    bad = []
    for seed in seeds:
        text, want = program(seed)
        src = tmp_path / f"p{seed}.c"
        src.write_text(text)
        plain = tmp_path / f"p{seed}_elision"
        cmd = ["gcc", "-O2", "-w", f"-I{build.source_dir()}", str(src), "-o", str(plain)]
        subprocess.run(cmd, check=True)
        outs = {"elision": subprocess.run([str(plain)], capture_output=True, text=True).stdout}
        for v, options in enumerate(variants):
            exe = tmp_path / f"p{seed}_{v}"
            assert compile_program(["-O2", "-w", str(src), "-o", str(exe)], cilk=options) == 0
            res = subprocess.run([str(exe)], capture_output=True, text=True, timeout=20)
            outs[str(options)] = res.stdout
        for name, out in outs.items():
            lines = set(out.splitlines(keepends=True))
            bad += [
                f"seed {seed} {name}: loop {w}" for w in want.splitlines(True) if w not in lines
            ]
    assert not bad, "\n".join(bad[:20])


@needs_gcc
def test_random_cilk_for_headers_run_as_their_serial_elision(cache, tmp_path):
    # seeds whose programs the rewrite before these fixes ran wrongly: a != loop whose
    # step is negative (5), a > loop whose step is near 2^64 (10), an unsigned char
    # variable wrapping to its != bound (11)
    _check(tmp_path, [5, 10, 11], [CilkOptions(), CilkOptions(split="binary")])


@needs_gcc
@pytest.mark.slow
def test_many_random_cilk_for_headers_run_as_their_serial_elision(cache, tmp_path):
    variants = [
        CilkOptions(),
        CilkOptions(split="binary"),
        CilkOptions(workers=8),
        CilkOptions(grain=5),
    ]
    _check(tmp_path, range(3, 43), variants)
