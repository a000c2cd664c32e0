/*
 * simsched_cilk.h -- run-time support of the Cilk programs `simsched cc`
 * rewrites (simsched/capture/cilk.py).
 *
 * The rewriter turns every Cilk keyword into simsched's markers
 * (simsched.h) while the program keeps running serially:
 *
 *   cilk_spawn f(x);       { __ss_cilk_spawn_at(ID); f(x); __ss_cilk_spawn_end(); }
 *   cilk_sync;             __ss_cilk_sync();
 *   cilk_scope S           { S __ss_cilk_sync(); }
 *   cilk_for (...) B       a loop over the leaves of the iteration range that
 *                          __ss_cilk_for_next hands out, B in place
 *
 * cilk_for.  OpenCilk lowers a parallel loop into a helper that, while its
 * range [lo, hi) holds more than `grain` iterations, spawns itself on the
 * lower half [lo, mid), mid = lo + (hi - lo) / 2, and keeps the upper half;
 * it then runs the remaining iterations serially and syncs.  Run serially,
 * that recursion visits the leaves in iteration order, so this header does
 * not need the loop body as a function: __ss_cilk_for_next walks the
 * recursion with an explicit stack, writes the markers a run of the helper
 * would write, and returns one leaf at a time to the loop the rewriter
 * generates around the body.  Split mode 1 spawns both halves instead (the
 * shape of ss_pfor in traces/programs/ssprog.h).  With `wrap` set (the body
 * itself uses Cilk keywords) every leaf is spawned as a frame of its own, so
 * that syncs inside the body wait for the body's spawns only.
 *
 * The helpers are not instrumented (no_sanitize): the gcc backend records
 * the program's references, not the loop bookkeeping.
 */
#ifndef SIMSCHED_CILK_H
#define SIMSCHED_CILK_H

#include "simsched.h"

#define SS_CILK_MAX_DEPTH 66 /* halving a 64-bit range: at most 64 levels below the top */

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ >= 12
#define SS_CILK_PLAIN_                                                                           \
    __attribute__((noinline, unused, no_sanitize_thread, no_sanitize_coverage))
#elif defined(__GNUC__)
#define SS_CILK_PLAIN_ __attribute__((noinline, unused, no_sanitize_thread))
#else
#define SS_CILK_PLAIN_
#endif

/* A SPAWN marker's argument names the function the spawned call calls, and a
 * CALL marker's the Cilk function that begins, so that the importer merges
 * into the spawned frame the call that is the spawned one, and only it: a
 * spawned plain function's calls of Cilk functions, the calls of a cilk_for
 * body and the calls in a spawn's arguments are frames of their own.  The
 * rewriter names a function by a hash of its name, a constant in [2, 2^63)
 * (not its address: taking a static function's address changes how gcc
 * optimises it); 0 means not known (a call through a pointer: the importer
 * then merges the first call made in the spawned frame, if it comes first),
 * and SS_CILK_NO_CALLEE the cilk_for's halves, which call nothing.  For a
 * callee that is an identifier f the rewriter writes (the unit it writes is
 * already preprocessed, so no macro can do it)
 *   __builtin_choose_expr(__builtin_types_compatible_p(__typeof__(f),
 *       __typeof__(*(f))), HASH, 0L)
 * HASH if f names a function, 0 if it is a pointer variable. */
#define SS_CILK_NO_CALLEE 1L

static inline __attribute__((always_inline, unused)) void __ss_cilk_spawn_at(long fn)
{
    simsched_marker((int)SS_M_SPAWN, fn);
}
static inline __attribute__((always_inline, unused)) void __ss_cilk_spawn(void)
{
    __ss_cilk_spawn_at(SS_CILK_NO_CALLEE);
}
static inline __attribute__((always_inline, unused)) void __ss_cilk_spawn_end(void)
{
    simsched_marker((int)SS_M_SPAWN_END, 0);
}
static inline __attribute__((always_inline, unused)) void __ss_cilk_sync(void)
{
    simsched_marker((int)SS_M_SYNC, 0);
}

/* Every invocation of a Cilk function, spawned or called, has a frame of its
 * own (the cactus stack).  The rewriter opens it at the top of the body with
 *   __ss_cilk_frame_t __ss_frame __attribute__((cleanup(__ss_cilk_leave)))
 *       = __ss_cilk_enter(HASH);
 * (HASH naming the function, see __ss_cilk_spawn_at) so that the frame
 * closes on every way out of the body, after the returned value is computed
 * and after the implicit sync.  The importer merges the CALL marker of a
 * spawned call into the frame the spawn opened. */
typedef char __ss_cilk_frame_t;
static inline __attribute__((always_inline, unused)) __ss_cilk_frame_t __ss_cilk_enter(long fn)
{
    simsched_marker((int)SS_M_CALL, fn);
    return 0;
}
static inline __attribute__((always_inline, unused)) void __ss_cilk_leave(__ss_cilk_frame_t *f)
{
    (void)f;
    simsched_marker((int)SS_M_CALL_END, 0);
}

typedef struct {
    unsigned long long lo[SS_CILK_MAX_DEPTH], hi[SS_CILK_MAX_DEPTH];
    unsigned char kids[SS_CILK_MAX_DEPTH]; /* halves the level's frame has spawned */
    unsigned long long grain;
    int depth; /* level of the current frame; 0 = the function running the loop */
    int phase; /* 0 = before the first leaf, 1 = a leaf was handed out, 2 = done */
    int split; /* 0 = OpenCilk (spawn the lower half, keep the upper), 1 = both halves */
    int wrap;  /* spawn every leaf as a frame of its own */
} __ss_cilk_for_t;

/* OpenCilk's default grain for n iterations on `workers` workers:
 * min(2048, n / (8 * workers)), at least 1. */
SS_CILK_PLAIN_ static unsigned long long
__ss_cilk_for_grain(unsigned long long n, long long grain, long long workers)
{
    if (grain > 0)
        return (unsigned long long)grain;
    /* n / 8 / P, which is n / (8 P) without the product: 8 P wraps to 0 from P = 2^61 */
    unsigned long long small = n / 8ull / (unsigned long long)(workers > 0 ? workers : 1);
    if (small <= 1)
        return 1;
    return small < 2048 ? small : 2048;
}

SS_CILK_PLAIN_ static void __ss_cilk_for_begin(__ss_cilk_for_t *cf, unsigned long long n,
                                               long long grain, long long workers, int split,
                                               int wrap)
{
    cf->grain = __ss_cilk_for_grain(n, grain, workers);
    cf->depth = 0;
    cf->lo[0] = 0;
    cf->hi[0] = n;
    cf->kids[0] = 0;
    cf->phase = n == 0 ? 2 : 0;
    cf->split = split;
    cf->wrap = wrap;
}

/* Hand out the next leaf [*a, *b) of the loop, writing the markers that lead
 * to it; return 0 (after the loop's final sync) when there is none. */
SS_CILK_PLAIN_ static int __ss_cilk_for_next(__ss_cilk_for_t *cf, unsigned long long *a,
                                             unsigned long long *b)
{
    int d = cf->depth;
    if (cf->phase == 2)
        return 0;
    if (cf->phase == 1) {
        /* the leaf of level d has run; its frame (if wrapped) returns */
        int leaf_frame = cf->wrap;
        if (leaf_frame)
            __ss_cilk_spawn_end();
        for (;;) {
            /* level d's frame ends with its sync (OpenCilk: whenever it spawned;
             * binary: after its two halves, as ss_pfor) */
            if (cf->kids[d] || leaf_frame)
                __ss_cilk_sync();
            leaf_frame = 0;
            if (d == 0) {
                cf->phase = 2;
                return 0;
            }
            __ss_cilk_spawn_end();
            d--;
            if (cf->split == 0)
                break; /* the parent's loop goes on with its upper half */
            if (cf->kids[d] == 1) {
                /* binary: the upper half is the second child */
                unsigned long long mid = cf->lo[d] + (cf->hi[d] - cf->lo[d]) / 2;
                __ss_cilk_spawn();
                cf->kids[d] = 2;
                cf->lo[d + 1] = mid;
                cf->hi[d + 1] = cf->hi[d];
                cf->kids[d + 1] = 0;
                d++;
                break;
            }
        }
    }
    /* descend from level d to a leaf */
    while (cf->hi[d] - cf->lo[d] > cf->grain) {
        unsigned long long mid = cf->lo[d] + (cf->hi[d] - cf->lo[d]) / 2;
        __ss_cilk_spawn();
        cf->kids[d] = 1;
        cf->lo[d + 1] = cf->lo[d];
        cf->hi[d + 1] = mid;
        cf->kids[d + 1] = 0;
        if (cf->split == 0)
            cf->lo[d] = mid;
        d++;
    }
    cf->depth = d;
    cf->phase = 1;
    *a = cf->lo[d];
    *b = cf->hi[d];
    if (cf->wrap)
        __ss_cilk_spawn();
    return 1;
}

#endif /* SIMSCHED_CILK_H */
