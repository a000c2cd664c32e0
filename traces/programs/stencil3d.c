/*
 * stencil3d -- 3-D Jacobi stencils; one source, two benchmarks (Makefile):
 *
 *   6p    (-DRADIUS=1)   7-point stencil (the 6 face neighbours and the centre)
 *   25p   (-DRADIUS=4)   25-point stencil (4 neighbours each way along each axis)
 *   6p-ir, 25p-ir        the same with uneven branching (-DIRREGULAR; LAWS Sec. 6.1)
 *
 * usage: PROG [N [STEPS [GRAIN]]]   (N^3 interior grid, default 48; STEPS
 *                                   iterations, default 2; GRAIN planes per
 *                                   leaf task, default 2)
 *
 * Each iteration (SS_ITER) spawns the root task of a parallel loop over the
 * planes and syncs; the root splits the planes down to GRAIN per leaf.
 */
#include "ssprog.h"

#ifndef RADIUS
#define RADIUS 1
#endif
#ifdef IRREGULAR
#define PFOR ss_pfor_ir
#else
#define PFOR ss_pfor
#endif

typedef struct {
    double *src, *dst;
    long n, w; /* interior size, padded size */
} grid_t;

#define AT(a, i, j, k) (a)[((i) * g->w + (j)) * g->w + (k)]

static void planes(long lo, long hi, void *ctx)
{
    grid_t *g = (grid_t *)ctx;
    const double c0 = 1.0 / (1 + 6 * RADIUS);
    for (long i = lo + RADIUS; i < hi + RADIUS; i++)
        for (long j = RADIUS; j < g->n + RADIUS; j++)
            for (long k = RADIUS; k < g->n + RADIUS; k++) {
                double s = AT(g->src, i, j, k);
                for (long r = 1; r <= RADIUS; r++)
                    s += AT(g->src, i - r, j, k) + AT(g->src, i + r, j, k) + AT(g->src, i, j - r, k) +
                         AT(g->src, i, j + r, k) + AT(g->src, i, j, k - r) + AT(g->src, i, j, k + r);
                AT(g->dst, i, j, k) = c0 * s;
            }
}

int main(int argc, char **argv)
{
    long n = ss_arg(argc, argv, 1, 48);
    long steps = ss_arg(argc, argv, 2, 2);
    long grain = ss_arg(argc, argv, 3, 2);
    grid_t gg;
    grid_t *g = &gg;
    g->n = n;
    g->w = n + 2 * RADIUS;
    size_t cells = (size_t)g->w * (size_t)g->w * (size_t)g->w;
    g->src = malloc(cells * sizeof(double));
    g->dst = malloc(cells * sizeof(double));
    if (!g->src || !g->dst) {
        fprintf(stderr, "%s: out of memory\n", argv[0]);
        return 1;
    }
    for (size_t c = 0; c < cells; c++)
        g->src[c] = g->dst[c] = (double)(ss_rand() % 1000);
    SS_ROI_BEGIN();
    for (long t = 0; t < steps; t++) {
        SS_ITER(t);
        SS_SPAWN(PFOR(0, n, grain, planes, g));
        SS_SYNC();
        double *tmp = g->src;
        g->src = g->dst;
        g->dst = tmp;
    }
    SS_ROI_END();
    double sum = 0;
    for (size_t c = 0; c < cells; c++)
        sum += g->src[c];
    printf("%s n=%ld steps=%ld checksum=%.3f\n", argv[0], n, steps, sum);
    return 0;
}
