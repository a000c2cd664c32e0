"""Golden tests of simsched.capture.cilk: every accepted Cilk form and every rejected one.

The rewriter works on preprocessed C; each case is a tiny unit behind a line marker for
``x.c``, and its rewrite is compared with the expected text byte for byte (same lines:
no rewrite may add or remove one).  The rejected forms must give one-line errors naming
``x.c:line:column`` and the construct.  Whether the rewritten code compiles and behaves
as the serial elision is checked by tests/capture/test_cilkcc.py.
"""

from __future__ import annotations

import re
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simsched.capture import compile_program
from simsched.capture.cilk import CilkOptions, find_keyword, mentions_cilk, rewrite
from simsched.errors import CaptureError, command_line

OPTIONS = {
    "opts_binary": CilkOptions(grain=64, workers=16, split="binary"),
    "pragma_beats_option": CilkOptions(grain=64),
}

ACCEPTED = {
    "spawn_stmt": (
        "void g(void) {\n  cilk_spawn f(1);\n}\n",
        "void g(void) { __ss_cilk_frame_t __ss_frame __attribute__((cleanup(__ss_cilk_leave))) = __ss_cilk_enter(2439572358497794145L);\n  { __ss_cilk_spawn_at(__builtin_choose_expr(__builtin_types_compatible_p(__typeof__(f), __typeof__(*(f))), 3808917462764896317L, 0L)); f(1); __ss_cilk_spawn_end(); }\n__ss_cilk_sync(); }\n",
    ),
    "spawn_assign": (
        "long g(void) {\n  long x;\n  x = cilk_spawn f(a[(1)], h(2, (3)));\n  cilk_sync;\n  return x;\n}\n",
        "long g(void) { __ss_cilk_frame_t __ss_frame __attribute__((cleanup(__ss_cilk_leave))) = __ss_cilk_enter(2439572358497794145L);\n  long x;\n  { __ss_cilk_spawn_at(__builtin_choose_expr(__builtin_types_compatible_p(__typeof__(f), __typeof__(*(f))), 3808917462764896317L, 0L)); x = f(a[(1)], h(2, (3))); __ss_cilk_spawn_end(); }\n  __ss_cilk_sync();\n  return x;\n}\n",
    ),
    "spawn_decl": (
        "long g(void) {\n  long x = cilk_spawn f(1);\n  cilk_sync;\n  return x;\n}\n",
        "long g(void) { __ss_cilk_frame_t __ss_frame __attribute__((cleanup(__ss_cilk_leave))) = __ss_cilk_enter(2439572358497794145L);\n  long x; __ss_cilk_spawn_at(__builtin_choose_expr(__builtin_types_compatible_p(__typeof__(f), __typeof__(*(f))), 3808917462764896317L, 0L)); x = f(1); __ss_cilk_spawn_end();\n  __ss_cilk_sync();\n  return x;\n}\n",
    ),
    "spawn_decl_ptr": (
        "char *g(void) {\n  char *p = cilk_spawn h(1);\n  return p;\n}\n",
        "char *g(void) { __ss_cilk_frame_t __ss_frame __attribute__((cleanup(__ss_cilk_leave))) = __ss_cilk_enter(2439572358497794145L);\n  char *p; __ss_cilk_spawn_at(__builtin_choose_expr(__builtin_types_compatible_p(__typeof__(h), __typeof__(*(h))), 4156060347070073936L, 0L)); p = h(1); __ss_cilk_spawn_end();\n  { char * __ss_ret = (p); __ss_cilk_sync(); return __ss_ret; }\n}\n",
    ),
    "spawn_decl_const": (
        "long g(void) {\n  const long x = cilk_spawn f(1), y = 2;\n  cilk_sync;\n  return x + y;\n}\n",
        "long g(void) { __ss_cilk_frame_t __ss_frame __attribute__((cleanup(__ss_cilk_leave))) = __ss_cilk_enter(2439572358497794145L);\n  const long x = __extension__ ({ __ss_cilk_spawn_at(__builtin_choose_expr(__builtin_types_compatible_p(__typeof__(f), __typeof__(*(f))), 3808917462764896317L, 0L)); __auto_type __ss_sv = (f(1)); __ss_cilk_spawn_end(); __ss_sv; }), y = 2;\n  __ss_cilk_sync();\n  return x + y;\n}\n",
    ),
    "spellings": (
        "void g(void) {\n  _Cilk_spawn f(1);\n  _Cilk_sync;\n  _Cilk_scope { _Cilk_spawn f(2); }\n  _Cilk_for (int i = 0; i < 4; i++) f(i);\n}\n",
        "void g(void) { __ss_cilk_frame_t __ss_frame __attribute__((cleanup(__ss_cilk_leave))) = __ss_cilk_enter(2439572358497794145L);\n  { __ss_cilk_spawn_at(__builtin_choose_expr(__builtin_types_compatible_p(__typeof__(f), __typeof__(*(f))), 3808917462764896317L, 0L)); f(1); __ss_cilk_spawn_end(); }\n  __ss_cilk_sync();\n  { { { __ss_cilk_spawn_at(__builtin_choose_expr(__builtin_types_compatible_p(__typeof__(f), __typeof__(*(f))), 3808917462764896317L, 0L)); f(2); __ss_cilk_spawn_end(); } } __ss_cilk_sync(); }\n  { int i = 0; __typeof__(0 ? (i) : (4)) __ss_lim0 = (4); unsigned long long __ss_st0 = (unsigned long long)(1); __typeof__(i) __ss_v00 = i; __ss_cilk_for_t __ss_cf0; unsigned long long __ss_a0, __ss_b0, __ss_i0; __ss_cilk_for_begin(&__ss_cf0, (__ss_v00 < __ss_lim0 ? (__extension__ ({ __typeof__((__typeof__((__ss_lim0) + 0ull))__ss_lim0 - (__typeof__((__ss_lim0) + 0ull))((__typeof__(__ss_lim0))__ss_v00)) __ss_x = (__typeof__((__ss_lim0) + 0ull))__ss_lim0 - (__typeof__((__ss_lim0) + 0ull))((__typeof__(__ss_lim0))__ss_v00); (unsigned long long)__ss_x + (unsigned long long)((long double)(unsigned long long)__ss_x < (long double)__ss_x); }) - 1) / __ss_st0 + 1 : 0ull), (long long)(0), 1, 0, 0); while (__ss_cilk_for_next(&__ss_cf0, &__ss_a0, &__ss_b0)) for (__ss_i0 = __ss_a0; __ss_i0 < __ss_b0; __ss_i0++) { i = (__typeof__(__ss_v00))((__typeof__((__ss_v00) + 0ull))__ss_v00 + __ss_i0 * __ss_st0); do f(i); while (0); } }\n__ss_cilk_sync(); }\n",
    ),
    "string": (
        'void g(void) {\n  puts("cilk_spawn f(1);");\n  cilk_spawn f(1);\n}\n',
        'void g(void) { __ss_cilk_frame_t __ss_frame __attribute__((cleanup(__ss_cilk_leave))) = __ss_cilk_enter(2439572358497794145L);\n  puts("cilk_spawn f(1);");\n  { __ss_cilk_spawn_at(__builtin_choose_expr(__builtin_types_compatible_p(__typeof__(f), __typeof__(*(f))), 3808917462764896317L, 0L)); f(1); __ss_cilk_spawn_end(); }\n__ss_cilk_sync(); }\n',
    ),
    "scope": (
        "void g(void) {\n  cilk_scope {\n    cilk_spawn f(1);\n    f(2);\n  }\n  f(3);\n}\n",
        "void g(void) { __ss_cilk_frame_t __ss_frame __attribute__((cleanup(__ss_cilk_leave))) = __ss_cilk_enter(2439572358497794145L);\n  { {\n    { __ss_cilk_spawn_at(__builtin_choose_expr(__builtin_types_compatible_p(__typeof__(f), __typeof__(*(f))), 3808917462764896317L, 0L)); f(1); __ss_cilk_spawn_end(); }\n    f(2);\n  } __ss_cilk_sync(); }\n  f(3);\n__ss_cilk_sync(); }\n",
    ),
    "for_lt": (
        "void g(int n) {\n  cilk_for (int i = 0; i < n; i++)\n    a[i] = i;\n}\n",
        "void g(int n) { __ss_cilk_frame_t __ss_frame __attribute__((cleanup(__ss_cilk_leave))) = __ss_cilk_enter(2439572358497794145L);\n  { int i = 0; __typeof__(0 ? (i) : (n)) __ss_lim0 = (n); unsigned long long __ss_st0 = (unsigned long long)(1); __typeof__(i) __ss_v00 = i; __ss_cilk_for_t __ss_cf0; unsigned long long __ss_a0, __ss_b0, __ss_i0; __ss_cilk_for_begin(&__ss_cf0, (__ss_v00 < __ss_lim0 ? (__extension__ ({ __typeof__((__typeof__((__ss_lim0) + 0ull))__ss_lim0 - (__typeof__((__ss_lim0) + 0ull))((__typeof__(__ss_lim0))__ss_v00)) __ss_x = (__typeof__((__ss_lim0) + 0ull))__ss_lim0 - (__typeof__((__ss_lim0) + 0ull))((__typeof__(__ss_lim0))__ss_v00); (unsigned long long)__ss_x + (unsigned long long)((long double)(unsigned long long)__ss_x < (long double)__ss_x); }) - 1) / __ss_st0 + 1 : 0ull), (long long)(0), 1, 0, 0); while (__ss_cilk_for_next(&__ss_cf0, &__ss_a0, &__ss_b0)) for (__ss_i0 = __ss_a0; __ss_i0 < __ss_b0; __ss_i0++) { i = (__typeof__(__ss_v00))((__typeof__((__ss_v00) + 0ull))__ss_v00 + __ss_i0 * __ss_st0); do \na[i] = i; while (0); } }\n}\n",
    ),
    "for_pragma": (
        "void g(long n, long k) {\n#pragma cilk grainsize k\n  cilk_for (long i = 1; i <= n; ++i) {\n    a[i] = i;\n  }\n}\n",
        "void g(long n, long k) { __ss_cilk_frame_t __ss_frame __attribute__((cleanup(__ss_cilk_leave))) = __ss_cilk_enter(2439572358497794145L);\n\n  { long i = 1; __typeof__(0 ? (i) : (n)) __ss_lim0 = (n); unsigned long long __ss_st0 = (unsigned long long)(1); __typeof__(i) __ss_v00 = i; __ss_cilk_for_t __ss_cf0; unsigned long long __ss_a0, __ss_b0, __ss_i0; __ss_cilk_for_begin(&__ss_cf0, (__ss_v00 <= __ss_lim0 ? (unsigned long long)((__typeof__((__ss_lim0) + 0ull))__ss_lim0 - (__typeof__((__ss_lim0) + 0ull))((__typeof__(__ss_lim0))__ss_v00)) / __ss_st0 + 1 : 0ull), (long long)(k), 1, 0, 0); while (__ss_cilk_for_next(&__ss_cf0, &__ss_a0, &__ss_b0)) for (__ss_i0 = __ss_a0; __ss_i0 < __ss_b0; __ss_i0++) { i = (__typeof__(__ss_v00))((__typeof__((__ss_v00) + 0ull))__ss_v00 + __ss_i0 * __ss_st0); do {\n    a[i] = i;\n  } while (0); } }\n}\n",
    ),
    "for_down": (
        "void g(unsigned n) {\n  cilk_for (unsigned i = n; i > 0; i -= 2) a[i] = 0;\n}\n",
        "void g(unsigned n) { __ss_cilk_frame_t __ss_frame __attribute__((cleanup(__ss_cilk_leave))) = __ss_cilk_enter(2439572358497794145L);\n  { unsigned i = n; __typeof__(0 ? (i) : (0)) __ss_lim0 = (0); unsigned long long __ss_st0 = (unsigned long long)(2); __typeof__(i) __ss_v00 = i; __ss_cilk_for_t __ss_cf0; unsigned long long __ss_a0, __ss_b0, __ss_i0; __ss_cilk_for_begin(&__ss_cf0, (__ss_v00 > __ss_lim0 ? (__extension__ ({ __typeof__((__typeof__((__ss_lim0) + 0ull))((__typeof__(__ss_lim0))__ss_v00) - (__typeof__((__ss_lim0) + 0ull))__ss_lim0) __ss_x = (__typeof__((__ss_lim0) + 0ull))((__typeof__(__ss_lim0))__ss_v00) - (__typeof__((__ss_lim0) + 0ull))__ss_lim0; (unsigned long long)__ss_x + (unsigned long long)((long double)(unsigned long long)__ss_x < (long double)__ss_x); }) - 1) / __ss_st0 + 1 : 0ull), (long long)(0), 1, 0, 0); while (__ss_cilk_for_next(&__ss_cf0, &__ss_a0, &__ss_b0)) for (__ss_i0 = __ss_a0; __ss_i0 < __ss_b0; __ss_i0++) { i = (__typeof__(__ss_v00))((__typeof__((__ss_v00) + 0ull))__ss_v00 - __ss_i0 * __ss_st0); do a[i] = 0; while (0); } }\n}\n",
    ),
    "for_ptr": (
        "void g(double *b, double *e) {\n  cilk_for (double *p = b; e != p; p++) *p = 0;\n}\n",
        "void g(double *b, double *e) { __ss_cilk_frame_t __ss_frame __attribute__((cleanup(__ss_cilk_leave))) = __ss_cilk_enter(2439572358497794145L);\n  { double *p = b; __typeof__(p) __ss_lim0 = (e); unsigned long long __ss_st0 = (unsigned long long)(1); __typeof__(p) __ss_v00 = p; __ss_cilk_for_t __ss_cf0; unsigned long long __ss_a0, __ss_b0, __ss_i0; __ss_cilk_for_begin(&__ss_cf0, __extension__ ({ unsigned long long __ss_m = __ss_st0 & (sizeof(__ss_v00) < 8 ? (1ull << (8 * sizeof(__ss_v00))) - 1 : ~0ull), __ss_d = (unsigned long long)((__typeof__((__ss_lim0) + 0ull))__ss_lim0 - (__typeof__((__ss_lim0) + 0ull))((__typeof__(__ss_lim0))__ss_v00)) & (sizeof(__ss_v00) < 8 ? (1ull << (8 * sizeof(__ss_v00))) - 1 : ~0ull); __ss_d == 0 ? 0ull : __ss_m >> (8 * sizeof(__ss_v00) - 1) ? ((0ull - __ss_d) & (sizeof(__ss_v00) < 8 ? (1ull << (8 * sizeof(__ss_v00))) - 1 : ~0ull)) / ((0ull - __ss_m) & (sizeof(__ss_v00) < 8 ? (1ull << (8 * sizeof(__ss_v00))) - 1 : ~0ull)) : __ss_d / __ss_m; }), (long long)(0), 1, 0, 0); while (__ss_cilk_for_next(&__ss_cf0, &__ss_a0, &__ss_b0)) for (__ss_i0 = __ss_a0; __ss_i0 < __ss_b0; __ss_i0++) { p = (__typeof__(__ss_v00))((__typeof__((__ss_v00) + 0ull))__ss_v00 + (long long)(__ss_i0 * __ss_st0)); do *p = 0; while (0); } }\n}\n",
    ),
    "for_nested": (
        "void g(int n) {\n  cilk_for (int i = 0; i < n; i++) {\n    cilk_spawn f(i);\n    f(-i);\n  }\n}\n",
        "void g(int n) { __ss_cilk_frame_t __ss_frame __attribute__((cleanup(__ss_cilk_leave))) = __ss_cilk_enter(2439572358497794145L);\n  { int i = 0; __typeof__(0 ? (i) : (n)) __ss_lim0 = (n); unsigned long long __ss_st0 = (unsigned long long)(1); __typeof__(i) __ss_v00 = i; __ss_cilk_for_t __ss_cf0; unsigned long long __ss_a0, __ss_b0, __ss_i0; __ss_cilk_for_begin(&__ss_cf0, (__ss_v00 < __ss_lim0 ? (__extension__ ({ __typeof__((__typeof__((__ss_lim0) + 0ull))__ss_lim0 - (__typeof__((__ss_lim0) + 0ull))((__typeof__(__ss_lim0))__ss_v00)) __ss_x = (__typeof__((__ss_lim0) + 0ull))__ss_lim0 - (__typeof__((__ss_lim0) + 0ull))((__typeof__(__ss_lim0))__ss_v00); (unsigned long long)__ss_x + (unsigned long long)((long double)(unsigned long long)__ss_x < (long double)__ss_x); }) - 1) / __ss_st0 + 1 : 0ull), (long long)(0), 1, 0, 1); while (__ss_cilk_for_next(&__ss_cf0, &__ss_a0, &__ss_b0)) for (__ss_i0 = __ss_a0; __ss_i0 < __ss_b0; __ss_i0++) { i = (__typeof__(__ss_v00))((__typeof__((__ss_v00) + 0ull))__ss_v00 + __ss_i0 * __ss_st0); do {\n    { __ss_cilk_spawn_at(__builtin_choose_expr(__builtin_types_compatible_p(__typeof__(f), __typeof__(*(f))), 3808917462764896317L, 0L)); f(i); __ss_cilk_spawn_end(); }\n    f(-i);\n  } while (0); __ss_cilk_sync(); } }\n__ss_cilk_sync(); }\n",
    ),
    "ret_void": (
        "void g(int n) {\n  if (n < 2) return;\n  cilk_spawn f(n);\n  if (n > 9) return;\n  f(n);\n}\n",
        "void g(int n) { __ss_cilk_frame_t __ss_frame __attribute__((cleanup(__ss_cilk_leave))) = __ss_cilk_enter(2439572358497794145L);\n  if (n < 2) return;\n  { __ss_cilk_spawn_at(__builtin_choose_expr(__builtin_types_compatible_p(__typeof__(f), __typeof__(*(f))), 3808917462764896317L, 0L)); f(n); __ss_cilk_spawn_end(); }\n  if (n > 9) { __ss_cilk_sync(); return; }\n  f(n);\n__ss_cilk_sync(); }\n",
    ),
    "ret_loop": (
        "int g(int n) {\n  while (n > 0) {\n    if (n == 3) return n;\n    cilk_spawn f(n--);\n  }\n  return 0;\n}\n",
        "int g(int n) { __ss_cilk_frame_t __ss_frame __attribute__((cleanup(__ss_cilk_leave))) = __ss_cilk_enter(2439572358497794145L);\n  while (n > 0) {\n    if (n == 3) { int __ss_ret = (n); __ss_cilk_sync(); return __ss_ret; }\n    { __ss_cilk_spawn_at(__builtin_choose_expr(__builtin_types_compatible_p(__typeof__(f), __typeof__(*(f))), 3808917462764896317L, 0L)); f(n--); __ss_cilk_spawn_end(); }\n  }\n  { int __ss_ret = (0); __ss_cilk_sync(); return __ss_ret; }\n}\n",
    ),
    "opts_binary": (
        "void g(int n) {\n  cilk_for (int i = 0; i < n; i++)\n    a[i] = i;\n}\n",
        "void g(int n) { __ss_cilk_frame_t __ss_frame __attribute__((cleanup(__ss_cilk_leave))) = __ss_cilk_enter(2439572358497794145L);\n  { int i = 0; __typeof__(0 ? (i) : (n)) __ss_lim0 = (n); unsigned long long __ss_st0 = (unsigned long long)(1); __typeof__(i) __ss_v00 = i; __ss_cilk_for_t __ss_cf0; unsigned long long __ss_a0, __ss_b0, __ss_i0; __ss_cilk_for_begin(&__ss_cf0, (__ss_v00 < __ss_lim0 ? (__extension__ ({ __typeof__((__typeof__((__ss_lim0) + 0ull))__ss_lim0 - (__typeof__((__ss_lim0) + 0ull))((__typeof__(__ss_lim0))__ss_v00)) __ss_x = (__typeof__((__ss_lim0) + 0ull))__ss_lim0 - (__typeof__((__ss_lim0) + 0ull))((__typeof__(__ss_lim0))__ss_v00); (unsigned long long)__ss_x + (unsigned long long)((long double)(unsigned long long)__ss_x < (long double)__ss_x); }) - 1) / __ss_st0 + 1 : 0ull), (long long)(64), 16, 1, 0); while (__ss_cilk_for_next(&__ss_cf0, &__ss_a0, &__ss_b0)) for (__ss_i0 = __ss_a0; __ss_i0 < __ss_b0; __ss_i0++) { i = (__typeof__(__ss_v00))((__typeof__((__ss_v00) + 0ull))__ss_v00 + __ss_i0 * __ss_st0); do \na[i] = i; while (0); } }\n}\n",
    ),
    "pragma_beats_option": (
        "void g(long n, long k) {\n#pragma cilk grainsize k\n  cilk_for (long i = 1; i <= n; ++i) {\n    a[i] = i;\n  }\n}\n",
        "void g(long n, long k) { __ss_cilk_frame_t __ss_frame __attribute__((cleanup(__ss_cilk_leave))) = __ss_cilk_enter(2439572358497794145L);\n\n  { long i = 1; __typeof__(0 ? (i) : (n)) __ss_lim0 = (n); unsigned long long __ss_st0 = (unsigned long long)(1); __typeof__(i) __ss_v00 = i; __ss_cilk_for_t __ss_cf0; unsigned long long __ss_a0, __ss_b0, __ss_i0; __ss_cilk_for_begin(&__ss_cf0, (__ss_v00 <= __ss_lim0 ? (unsigned long long)((__typeof__((__ss_lim0) + 0ull))__ss_lim0 - (__typeof__((__ss_lim0) + 0ull))((__typeof__(__ss_lim0))__ss_v00)) / __ss_st0 + 1 : 0ull), (long long)(k), 1, 0, 0); while (__ss_cilk_for_next(&__ss_cf0, &__ss_a0, &__ss_b0)) for (__ss_i0 = __ss_a0; __ss_i0 < __ss_b0; __ss_i0++) { i = (__typeof__(__ss_v00))((__typeof__((__ss_v00) + 0ull))__ss_v00 + __ss_i0 * __ss_st0); do {\n    a[i] = i;\n  } while (0); } }\n}\n",
    ),
}

REJECTED = {
    # a syntax error the parser recovered from: rewritten, it compiled what gcc rejects
    "missing_semicolon": (
        "long g(long n) {\n  long x;\n  x = cilk_spawn f(n)\n  return x;\n}\n",
        "x.c:3:22: cilk_spawn: expected ';': the statement does not parse as C",
    ),
    "missing_semicolon_decl": (
        "long g(long n) {\n  long x = cilk_spawn f(n)\n  return x;\n}\n",
        "x.c:2:27: cilk_spawn: expected ';': the statement does not parse as C",
    ),
    # ... before a cilk_sync: the spawn of the recovered text was "a non-call expression"
    "missing_semicolon_before_sync": (
        "long g(long n) {\n  long x = cilk_spawn f(n)\n  cilk_sync;\n  return x;\n}\n",
        "x.c:2:23: cilk_spawn: unexpected text: the statement does not parse as C",
    ),
    "missing_semicolon_before_sync_assign": (
        "long g(long n) {\n  long x;\n  x = cilk_spawn f(n)\n  cilk_sync;\n  return x;\n}\n",
        "x.c:3:18: cilk_spawn: unexpected text: the statement does not parse as C",
    ),
    "reducer": (
        "void g(void) {\n  int cilk_reducer(z, p) sum = 0;\n}\n",
        "x.c:2:7: cilk_reducer: reducers (hyperobjects) cannot be captured",
    ),
    "reducer_c": (
        "void g(void) {\n  CILK_C_REDUCER_OPADD(r, long, 0);\n}\n",
        "x.c:2:3: CILK_C_REDUCER_OPADD: reducers (hyperobjects) cannot be captured",
    ),
    "nc_inc": (
        "void g(int x) {\n  cilk_spawn x++;\n}\n",
        "x.c:2:3: cilk_spawn: spawn of a non-call expression (only calls can be spawned)",
    ),
    "nc_block": (
        "void g(void) {\n  cilk_spawn { f(1); }\n}\n",
        "x.c:2:3: cilk_spawn: spawn of a non-call expression (a block)",
    ),
    "nc_assign": (
        "void g(int *y, int j) {\n  cilk_spawn y[j] = f(1);\n}\n",
        "x.c:2:3: cilk_spawn: spawn of a non-call expression (only calls can be spawned)",
    ),
    "in_arg": (
        "void g(void) {\n  h(cilk_spawn f(1));\n}\n",
        "x.c:2:5: cilk_spawn: spawn inside an expression; the supported forms are cilk_spawn f(...);, x = cilk_spawn f(...); or T x = cilk_spawn f(...);",
    ),
    "in_return": (
        "long g(void) {\n  return cilk_spawn f(1);\n}\n",
        "x.c:2:10: cilk_spawn: spawn inside an expression; the supported forms are cilk_spawn f(...);, x = cilk_spawn f(...); or T x = cilk_spawn f(...);",
    ),
    "compound_assign": (
        "void g(long x) {\n  x += cilk_spawn f(1);\n}\n",
        "x.c:2:8: cilk_spawn: spawn inside an expression; the supported forms are cilk_spawn f(...);, x = cilk_spawn f(...); or T x = cilk_spawn f(...);",
    ),
    "in_binary": (
        "void g(long x) {\n  x = cilk_spawn f(1) + 1;\n}\n",
        "x.c:2:7: cilk_spawn: spawn inside an expression; the supported forms are cilk_spawn f(...);, x = cilk_spawn f(...); or T x = cilk_spawn f(...);",
    ),
    "sync_expr": (
        "void g(long x) {\n  x = cilk_sync;\n}\n",
        "x.c:2:7: cilk_sync: must be a statement of its own (cilk_sync;)",
    ),
    "for_noinit": (
        "void g(int i, int n) {\n  cilk_for (i = 0; i < n; i++) f(i);\n}\n",
        "x.c:2:3: cilk_for: the initialisation must declare one loop variable (T i = a)",
    ),
    "for_two": (
        "void g(int n) {\n  cilk_for (int i = 0, j = 0; i < n; i++) f(i);\n}\n",
        "x.c:2:3: cilk_for: the initialisation must declare one loop variable (T i = a)",
    ),
    "for_cond": (
        "void g(int n) {\n  cilk_for (int i = 0; 2 * i < n; i++) f(i);\n}\n",
        "x.c:2:3: cilk_for: the condition must compare the loop variable with <, <=, >, >= or !=",
    ),
    "for_incr": (
        "void g(int n) {\n  cilk_for (int i = 1; i < n; i *= 2) f(i);\n}\n",
        "x.c:2:3: cilk_for: the increment must be i++, ++i, i--, --i, i += s or i -= s",
    ),
    "for_dir": (
        "void g(int n) {\n  cilk_for (int i = 0; i < n; i--) f(i);\n}\n",
        "x.c:2:3: cilk_for: the condition and the increment go in opposite directions",
    ),
    "for_break": (
        "void g(int n) {\n  cilk_for (int i = 0; i < n; i++) {\n    for (;;) break;\n    if (f(i)) break;\n  }\n}\n",
        "x.c:4:15: break: cannot leave a cilk_for body",
    ),
    "for_return": (
        "void g(int n) {\n  cilk_for (int i = 0; i < n; i++) {\n    if (f(i)) return;\n  }\n}\n",
        "x.c:3:15: return: cannot leave a cilk_for body",
    ),
    "file_scope": (
        "long x = cilk_spawn f(1);\n",
        "x.c:1:10: cilk_spawn: used outside a function body",
    ),
    "pragma_alone": (
        "void g(int n) {\n#pragma cilk grainsize 4\n  f(n);\n  cilk_sync;\n}\n",
        "x.c:2:1: #pragma cilk grainsize: not followed by a cilk_for",
    ),
    "scope_else": (
        "void g(int n) {\n  cilk_scope f(1); else f(2);\n}\n",
        "x.c:2:3: cilk_scope: must be followed by a single statement",
    ),
    # a longjmp skips the CALL_END/SPAWN_END markers of the frames it leaves; setjmp's
    # glibc spelling (after the preprocessor) is named as the program writes it
    "longjmp_in_cilk_fn": (
        "void g(int n) {\n  cilk_spawn f(1);\n  if (n) longjmp(env, 1);\n}\n",
        "x.c:3:10: longjmp: a non-local jump in the Cilk function g() skips the ends of the frames it leaves, so the DAG cannot be captured (use return values or flags instead)",
    ),
    "setjmp_in_cilk_fn": (
        "long *h(int n) {\n  if (_setjmp(env)) return 0;\n  cilk_for (int i = 0; i < n; i++) f(i);\n  return 0;\n}\n",
        "x.c:2:7: setjmp: a non-local jump in the Cilk function h() skips the ends of the frames it leaves, so the DAG cannot be captured (use return values or flags instead)",
    ),
    "builtin_longjmp_in_main": (
        "int main(void) {\n  cilk_scope { cilk_spawn f(1); __builtin_longjmp(b, 1); }\n}\n",
        "x.c:2:33: __builtin_longjmp: a non-local jump in the Cilk function main() skips the ends of the frames it leaves, so the DAG cannot be captured (use return values or flags instead)",
    ),
}


def _rewrite(body: str, options: CilkOptions | None = None) -> str:
    out = rewrite(('# 1 "x.c"\n' + body).encode(), "x.c", options)
    return out.decode().split("\n", 1)[1]


@pytest.mark.parametrize("name", sorted(ACCEPTED))
def test_accepted_form_rewrites_to_its_golden_text(name):
    source, expected = ACCEPTED[name]
    out = _rewrite(source, OPTIONS.get(name))
    assert out == expected
    assert out.count("\n") == source.count("\n")  # no line moves


@pytest.mark.parametrize("name", sorted(REJECTED))
def test_rejected_form_is_a_one_line_error_naming_the_place(name):
    source, message = REJECTED[name]
    with pytest.raises(CaptureError) as e:
        _rewrite(source)
    assert str(e.value) == message
    assert "\n" not in str(e.value)


def test_a_unit_without_cilk_is_returned_as_is():
    src = b'# 1 "x.c"\nint main(void) { return puts("cilk_spawn"); }\n'
    assert rewrite(src, "x.c") is src
    assert mentions_cilk(src) and not mentions_cilk(b"int cilk_spawned;")


def test_errors_point_into_the_file_of_the_line_marker(tmp_path):
    src = tmp_path / "prog.c"
    src.write_text("#define SPAWN cilk_spawn\nvoid g(int x) {\n  x = 1; SPAWN x++;\n}\n")
    unit = f'# 1 "{src}"\n\nvoid g(int x) {{\n  x = 1; cilk_spawn x++;\n}}\n'
    with pytest.raises(CaptureError, match=rf"^{src}:3:10: cilk_spawn: spawn of a non-call"):
        rewrite(unit.encode(), "unit.i")
    # the expansion moved the keyword; without the macro the column is the unit's own
    unit = f'# 1 "{src}"\n\nvoid g(int x) {{\n  cilk_spawn x++;\n}}\n'
    with pytest.raises(CaptureError, match=rf"^{src}:3:3: "):
        rewrite(unit.encode(), "unit.i")


def test_options_are_validated():
    for bad in (dict(grain=0), dict(workers=0), dict(split="random")):
        with pytest.raises(CaptureError):
            CilkOptions(**bad)
    # the program holds them as long long: a larger value was truncated by gcc
    for bad in (dict(grain=1 << 63), dict(workers=10**20)):
        with pytest.raises(CaptureError, match="up to 2\\^63 - 1"):
            CilkOptions(**bad)
    CilkOptions(grain=(1 << 63) - 1, workers=(1 << 63) - 1)
    # a string, a bool or a float failed in a comparison (a TypeError from the dataclass)
    for bad, said in (
        (dict(grain="64"), "grain='64': expected an integer"),
        (dict(grain=True), "grain=True: expected an integer"),
        (dict(workers=2.5), "workers=2.5: expected an integer"),
        (dict(split=None), "split=None: choose one of opencilk, binary"),
    ):
        with pytest.raises(CaptureError, match=f"^{re.escape(said)}$"):
            CilkOptions(**bad)
    # a Python caller is told of the field it gave, `simsched cc` of the option typed
    for bad, said, typed in (
        (dict(grain=0), "grain=0: must be", "--cilk-for-grain 0: must be"),
        (dict(workers=0), "workers=0: must be", "--cilk-workers 0: must be"),
        (dict(split="random"), "split='random': choose one", "--cilk-for-split random: choose"),
    ):
        with pytest.raises(CaptureError, match=f"^{said}"):
            CilkOptions(**bad)
        with command_line(), pytest.raises(CaptureError, match=f"^{typed}"):
            CilkOptions(**bad)


def test_find_keyword_skips_comments_and_strings():
    src = b'// cilk_spawn\nint f() { return g("cilk_for"); }\nint h() { cilk_sync; }\n'
    assert find_keyword(src, "a.cpp") == "a.cpp:3:11: cilk_sync"
    assert find_keyword(b"/* cilk_for */ int x;\n", "a.cpp") is None


RETURN_TYPES = {
    "static inline unsigned long f(int n)": b"unsigned long __ss_ret = (h(n));",
    "__attribute__((noinline)) static long *f(int n)": b"long * __ss_ret = (h(n));",
    "const char *f(int n)": b"const char * __ss_ret = (h(n));",
    "struct s f(int n)": b"struct s __ss_ret = (h(n));",
    "long long * const * f(int n)": b"long long * const * __ss_ret = (h(n));",
    # not writable as a prefix: the declarator, with __ss_ret for the name and parameters
    "int (*f(int n))(int)": b"int (*__ss_ret)(int) = (h(n));",
    "static const char *(*f(int n))(void)": b"const char *(*__ss_ret)(void) = (h(n));",
    "long (*f(int n))[4]": b"long (*__ss_ret)[4] = (h(n));",
    "_Noreturn void f(int n)": b"{ h(n); __ss_cilk_sync(); return; }",
}


@pytest.mark.parametrize("signature", sorted(RETURN_TYPES))
def test_implicit_sync_keeps_the_returned_value_and_its_type(signature):
    out = _rewrite(signature + " {\n  cilk_spawn g(n);\n  return h(n);\n}\n")
    assert RETURN_TYPES[signature].decode() in out.split("\n")[2]
    assert "__ss_cilk_sync(); return" in out.split("\n")[2]


HARNESS = r"""
#include <stdio.h>
#include <stdlib.h>
#include "simsched_cilk.h"
int main(int argc, char **argv)
{
    unsigned long long n = strtoull(argv[1], 0, 10), a, b;
    __ss_cilk_for_t cf;
    __ss_cilk_for_begin(&cf, n, atoll(argv[2]), atoll(argv[3]), atoi(argv[4]), atoi(argv[5]));
    while (__ss_cilk_for_next(&cf, &a, &b))
        printf("L %llu %llu\n", a, b);
    return 0;
}
"""
RECORDER = (
    '#include <stdio.h>\nvoid simsched_marker(int k, long a) { (void)a; printf("M %d\\n", k); }\n'
)


@pytest.fixture(scope="module")
def harness(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The cilk_for run-time support with a marker function that prints the markers."""
    import shutil
    import subprocess

    from simsched.capture import build

    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    d = tmp_path_factory.mktemp("cilkfor")
    (d / "h.c").write_text(HARNESS)
    (d / "r.c").write_text(RECORDER)
    exe = d / "h"
    cmd = ["gcc", "-O1", f"-I{build.source_dir()}", str(d / "h.c"), str(d / "r.c"), "-o", str(exe)]
    subprocess.run(cmd, check=True)
    return str(exe)


def _leaves(n: int, grain: int) -> list[tuple[int, int]]:
    """The leaves of either split: halve [lo, hi) at lo + (hi - lo) // 2 while > grain."""
    if n <= grain:
        return [(0, n)] if n else []
    out, stack = [], [(0, n)]
    while stack:
        lo, hi = stack.pop()
        if hi - lo <= grain:
            out.append((lo, hi))
        else:
            mid = lo + (hi - lo) // 2
            stack += [(mid, hi), (lo, mid)]
    return out


@given(
    n=st.integers(0, 3000),
    grain=st.integers(0, 70),
    workers=st.integers(1, 8),
    split=st.sampled_from([0, 1]),
    wrap=st.booleans(),
)
@settings(max_examples=120, deadline=None)
def test_cilk_for_runtime_hands_out_the_leaves_with_balanced_markers(
    harness, n, grain, workers, split, wrap
):
    import subprocess

    out = subprocess.run(
        [harness, str(n), str(grain), str(workers), str(split), str(int(wrap))],
        capture_output=True, text=True, check=True,
    ).stdout.split("\n")  # fmt: skip
    g = grain if grain > 0 else max(1, min(2048, n // (8 * workers)))
    leaves = [tuple(map(int, ln.split()[1:])) for ln in out if ln.startswith("L")]
    assert leaves == _leaves(n, g)  # in order, covering [0, n) exactly
    depth, spawns, syncs = 0, 0, 0
    for ln in out:
        if ln == "M 1":
            depth, spawns = depth + 1, spawns + 1
        elif ln == "M 2":
            depth -= 1
            assert depth >= 0
        elif ln == "M 3":
            syncs += 1
    assert depth == 0
    inner = max(0, len(leaves) - 1)  # internal nodes of the split tree
    halves = inner if split == 0 else 2 * inner
    assert spawns == halves + (len(leaves) if wrap else 0)
    # a frame syncs if it spawned: every frame that split, plus (wrap) leaf-holding frames
    if not wrap:
        assert syncs == (inner if split == 1 else _opencilk_syncing_frames(n, g))


@pytest.mark.parametrize("workers", [1 << 61, (1 << 63) - 1])
def test_cilk_for_default_grain_with_a_huge_worker_count(harness, workers):
    # 8 * P wrapped around to 0 from P = 2^61: the program died dividing by it
    import subprocess

    out = subprocess.run(
        [harness, "100", "0", str(workers), "0", "0"], capture_output=True, text=True
    )
    assert out.returncode == 0
    leaves = [tuple(map(int, ln.split()[1:])) for ln in out.stdout.split("\n") if ln[:1] == "L"]
    assert leaves == _leaves(100, 1)


def _opencilk_syncing_frames(n: int, grain: int) -> int:
    """Frames of OpenCilk's split that spawn (each syncs once): the loop's and each lower half's."""
    if n <= grain:
        return 0
    frames, stack = 1, [n]
    while stack:
        size = stack.pop()
        while size > grain:
            lower = size // 2
            if lower > grain:
                frames += 1
                stack.append(lower)
            size -= lower
    return frames


def test_longjmp_in_a_plain_function_is_left_for_the_import_to_check():
    # whether it leaves a Cilk frame depends on the run: the marker stream tells
    src = "void leaf(void) {\n  longjmp(env, 1);\n}\nvoid g(void) {\n  cilk_spawn leaf();\n}\n"
    out = _rewrite(src)
    assert "longjmp(env, 1);" in out and "__ss_cilk_spawn_at(" in out


PEDANTIC = """\
#include <cilk/cilk.h>
static long f(long x) { return x + 1; }
long g(double *a, unsigned n) {
    const long x = cilk_spawn f(1), y = 2;
    cilk_for (unsigned i = 0; i < n; i++) a[i] = i;
    cilk_for (double *p = a; p != a + n; p++) *p += 1;
    cilk_sync;
    return x + y;
}
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc is not installed")
def test_rewritten_code_builds_with_pedantic_errors(tmp_path):
    # the statement expressions of the rewrite are a GNU extension: -pedantic-errors
    # failed a correct program on code the user never wrote
    src = tmp_path / "p.c"
    src.write_text(PEDANTIC)
    flags = ["-std=c11", "-pedantic-errors", "-c", str(src), "-o", str(tmp_path / "p.o")]
    assert compile_program(flags, backend="valgrind") == 0
