/*
 * stencil2d -- 2-D grid relaxations; one source, several benchmarks (Makefile):
 *
 *   heat     (-DKIND=HEAT)           Jacobi, 5-point heat diffusion, two grids
 *   9p       (-DKIND=NINE)           Jacobi, 9-point stencil, two grids
 *   sor      (-DKIND=SOR)            red-black successive over-relaxation, in place
 *   heat-ir, 9p-ir, sor-ir           the same with uneven branching (-DIRREGULAR;
 *                                    LAWS Sec. 6.1)
 *
 * usage: PROG [N [STEPS [GRAIN]]]   (N x N interior grid, default 256; STEPS
 *                                   iterations, default 4; GRAIN rows per leaf
 *                                   task, default 16)
 *
 * Each iteration is marked with SS_ITER so that the same task can be found in
 * every iteration.  In it main spawns the root task of a parallel loop over the
 * rows and syncs (SOR: two such sweeps, red then black); the root halves its
 * rows (or, -ir, splits them into 2-4 unequal parts) down to GRAIN rows.  So
 * main is level 0, the roots level 1, as in CAB Sec. II, Fig. 1.
 */
#include "ssprog.h"

#define HEAT 1
#define NINE 2
#define SOR 3
#ifndef KIND
#define KIND HEAT
#endif
#ifdef IRREGULAR
#define PFOR ss_pfor_ir
#else
#define PFOR ss_pfor
#endif

typedef struct {
    double *src, *dst;
    long n; /* interior size; arrays are (n + 2) x (n + 2) */
    int colour;
} grid_t;

#define AT(a, i, j) (a)[(i) * (g->n + 2) + (j)]

static void rows(long lo, long hi, void *ctx)
{
    grid_t *g = (grid_t *)ctx;
    for (long i = lo + 1; i <= hi; i++) {
#if KIND == HEAT
        for (long j = 1; j <= g->n; j++)
            AT(g->dst, i, j) = AT(g->src, i, j) + 0.1 * (AT(g->src, i - 1, j) + AT(g->src, i + 1, j) +
                                                         AT(g->src, i, j - 1) + AT(g->src, i, j + 1) -
                                                         4.0 * AT(g->src, i, j));
#elif KIND == NINE
        for (long j = 1; j <= g->n; j++)
            AT(g->dst, i, j) =
                (AT(g->src, i - 1, j - 1) + AT(g->src, i - 1, j) + AT(g->src, i - 1, j + 1) +
                 AT(g->src, i, j - 1) + AT(g->src, i, j) + AT(g->src, i, j + 1) +
                 AT(g->src, i + 1, j - 1) + AT(g->src, i + 1, j) + AT(g->src, i + 1, j + 1)) /
                9.0;
#else
        for (long j = 1 + ((i + g->colour) & 1); j <= g->n; j += 2)
            AT(g->src, i, j) += 1.5 * (0.25 * (AT(g->src, i - 1, j) + AT(g->src, i + 1, j) +
                                                AT(g->src, i, j - 1) + AT(g->src, i, j + 1)) -
                                        AT(g->src, i, j));
#endif
    }
}

int main(int argc, char **argv)
{
    long n = ss_arg(argc, argv, 1, 256);
    long steps = ss_arg(argc, argv, 2, 4);
    long grain = ss_arg(argc, argv, 3, 16);
    size_t cells = (size_t)(n + 2) * (size_t)(n + 2);
    grid_t gg = {malloc(cells * sizeof(double)), malloc(cells * sizeof(double)), n, 0};
    grid_t *g = &gg;
    if (!g->src || !g->dst) {
        fprintf(stderr, "%s: out of memory\n", argv[0]);
        return 1;
    }
    for (size_t c = 0; c < cells; c++)
        g->src[c] = g->dst[c] = (double)(ss_rand() % 1000) / 10.0;
    SS_ROI_BEGIN();
    for (long t = 0; t < steps; t++) {
        SS_ITER(t);
#if KIND == SOR
        g->colour = 0;
        SS_SPAWN(PFOR(0, n, grain, rows, g));
        SS_SYNC();
        g->colour = 1;
        SS_SPAWN(PFOR(0, n, grain, rows, g));
        SS_SYNC();
#else
        SS_SPAWN(PFOR(0, n, grain, rows, g));
        SS_SYNC();
        double *tmp = g->src;
        g->src = g->dst;
        g->dst = tmp;
#endif
    }
    SS_ROI_END();
    double sum = 0;
    for (long i = 1; i <= n; i++)
        for (long j = 1; j <= n; j++)
            sum += AT(g->src, i, j);
    printf("%s n=%ld steps=%ld checksum=%.6f\n", argv[0], n, steps, sum);
    return 0;
}
