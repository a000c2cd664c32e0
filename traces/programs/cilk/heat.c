/*
 * heat (Cilk) -- 2-D Jacobi 5-point heat diffusion written with cilk_for; the
 * same computation as ../stencil2d.c built as `heat` (-DKIND=HEAT).
 *
 * usage: heat [N [STEPS [GRAIN]]]   (N x N interior grid, default 256; STEPS
 *                                   iterations, default 4; GRAIN rows per
 *                                   leaf task, default 16)
 *
 * Each iteration spawns one sweep, a cilk_for over the rows with `#pragma cilk
 * grainsize`, and syncs (main level 0, the sweep level 1, as in CAB Sec. II).
 * Built with `simsched cc --cilk-for-split binary` its DAG is the one of
 * ../stencil2d.c (whose ss_pfor spawns both halves of a range); by default the
 * loop is split as OpenCilk splits it.  SS_ITER marks the iterations, as in
 * ../stencil2d.c.
 * Built with -DCALL_LAST_CHILD the last child of each step is called, not
 * spawned (last_child.h); the frame tree is the same.  Built with
 * -DLOOP_IN_SOLVE the time loop and its SS_ITER marks are in solve(), a Cilk
 * function main calls, as programs are often written; the steps get the same
 * frames (docs/capture.md, "Iterations").  Built with -DNO_MARKS as well, it has
 * no SS_ITER marks: an import with --iterations auto finds the steps in solve()
 * and gives the marked build's trace.
 */
#include <cilk/cilk.h>

#include "last_child.h"

#include "../ssprog.h"

typedef struct {
    double *src, *dst;
    long n; /* interior size; arrays are (n + 2) x (n + 2) */
} grid_t;

#define AT(a, i, j) (a)[(i) * (g->n + 2) + (j)]

static void row(grid_t *g, long i)
{
    for (long j = 1; j <= g->n; j++)
        AT(g->dst, i, j) = AT(g->src, i, j) + 0.1 * (AT(g->src, i - 1, j) + AT(g->src, i + 1, j) +
                                                     AT(g->src, i, j - 1) + AT(g->src, i, j + 1) -
                                                     4.0 * AT(g->src, i, j));
}

static void sweep(grid_t *g, long grain)
{
    long n = g->n;
#pragma cilk grainsize grain
    cilk_for (long i = 1; i <= n; i++)
        row(g, i);
}

static void swap(grid_t *g)
{
    double *tmp = g->src;
    g->src = g->dst;
    g->dst = tmp;
}

/* The time loop, in main or (-DLOOP_IN_SOLVE) in solve(), a Cilk function main calls;
 * -DNO_MARKS leaves out its SS_ITER marks (the import finds the steps). */
#ifdef NO_MARKS
#define STEP_MARK(t) ((void)(t))
#else
#define STEP_MARK(t) SS_ITER(t)
#endif
#define TIME_LOOP(g, steps, grain)         \
    for (long t = 0; t < (steps); t++) {   \
        STEP_MARK(t);                      \
        last_child sweep((g), (grain));    \
        cilk_sync;                         \
        swap(g);                           \
    }

#ifdef LOOP_IN_SOLVE
static void solve(grid_t *g, long steps, long grain)
{
    TIME_LOOP(g, steps, grain);
}
#endif

int main(int argc, char **argv)
{
    long n = ss_arg(argc, argv, 1, 256);
    long steps = ss_arg(argc, argv, 2, 4);
    long grain = ss_arg(argc, argv, 3, 16);
    size_t cells = (size_t)(n + 2) * (size_t)(n + 2);
    grid_t gg = {malloc(cells * sizeof(double)), malloc(cells * sizeof(double)), n};
    grid_t *g = &gg;
    if (!g->src || !g->dst) {
        fprintf(stderr, "%s: out of memory\n", argv[0]);
        return 1;
    }
    for (size_t c = 0; c < cells; c++)
        g->src[c] = g->dst[c] = (double)(ss_rand() % 1000) / 10.0;
    SS_ROI_BEGIN();
#ifdef LOOP_IN_SOLVE
    solve(g, steps, grain);
#else
    TIME_LOOP(g, steps, grain);
#endif
    SS_ROI_END();
    double sum = 0;
    for (long i = 1; i <= n; i++)
        for (long j = 1; j <= n; j++)
            sum += AT(g->src, i, j);
    printf("%s n=%ld steps=%ld checksum=%.6f\n", argv[0], n, steps, sum);
    return 0;
}
