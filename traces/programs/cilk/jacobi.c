/*
 * jacobi (Cilk) -- a 2-D Jacobi 5-point sweep written as a textbook Cilk
 * divide and conquer, with no simsched markers at all: a serial time loop in
 * main calls the sweep, and the sweep spawns the lower half of its row range
 * and calls the upper half (`cilk_spawn sweep(lo, mid); sweep(mid, hi);
 * cilk_sync;`).  Built with -DSPAWN_ALL_CHILDREN both halves are spawned.
 *
 * usage: jacobi [N [STEPS [GRAIN]]]   (N x N interior grid, default 256;
 *                                     STEPS time steps, default 4; GRAIN
 *                                     rows per leaf, default 16)
 *
 * The grids take 2 (N + 2)^2 doubles: 16.8 MB for N = 1024, filled in parallel
 * (first touch) by the same divide and conquer as the sweeps.  Every time step
 * is a call of a Cilk function from the serial loop, so it is a frame of its
 * own under main, and simsched finds the steps as iterations.
 */
#include <stdio.h>
#include <stdlib.h>

#include <cilk/cilk.h>

#ifdef SPAWN_ALL_CHILDREN
#define upper_half cilk_spawn
#else
#define upper_half
#endif

static double *src, *dst;
static long n, grain;

#define AT(a, i, j) (a)[(i) * (n + 2) + (j)]

static void rows(long lo, long hi)
{
    for (long i = lo; i < hi; i++)
        for (long j = 1; j <= n; j++)
            AT(dst, i, j) = AT(src, i, j) + 0.1 * (AT(src, i - 1, j) + AT(src, i + 1, j) +
                                                   AT(src, i, j - 1) + AT(src, i, j + 1) -
                                                   4.0 * AT(src, i, j));
}

/* Rows [lo, hi) of both grids get their initial values, in parallel and split as the
 * sweeps split them, so that on a NUMA machine each part of the grids is first touched
 * (and placed) where the sweeps will work on it. */
static void fill(long lo, long hi)
{
    if (hi - lo <= grain) {
        for (long i = lo; i < hi; i++)
            for (long j = 0; j < n + 2; j++)
                AT(src, i, j) = AT(dst, i, j) = (double)((i * (n + 2) + j) % 1000) / 10.0;
        return;
    }
    long mid = lo + (hi - lo) / 2;
    cilk_spawn fill(lo, mid);
    upper_half fill(mid, hi);
    cilk_sync;
}

static void sweep(long lo, long hi)
{
    if (hi - lo <= grain) {
        rows(lo, hi);
        return;
    }
    long mid = lo + (hi - lo) / 2;
    cilk_spawn sweep(lo, mid);
    upper_half sweep(mid, hi);
    cilk_sync;
}

int main(int argc, char **argv)
{
    n = argc > 1 ? atol(argv[1]) : 256;
    long steps = argc > 2 ? atol(argv[2]) : 4;
    grain = argc > 3 ? atol(argv[3]) : 16;
    if (n < 1 || steps < 0 || grain < 1) {
        fprintf(stderr, "usage: jacobi [N>=1 [STEPS>=0 [GRAIN>=1]]]\n");
        return 2;
    }
    size_t cells = (size_t)(n + 2) * (size_t)(n + 2);
    src = malloc(cells * sizeof(double));
    dst = malloc(cells * sizeof(double));
    if (!src || !dst) {
        fprintf(stderr, "jacobi: out of memory\n");
        return 1;
    }
    fill(0, n + 2);
    for (long t = 0; t < steps; t++) {
        sweep(1, n + 1);
        double *tmp = src;
        src = dst;
        dst = tmp;
    }
    double sum = 0;
    for (long i = 1; i <= n; i++)
        for (long j = 1; j <= n; j++)
            sum += AT(src, i, j);
    printf("jacobi n=%ld steps=%ld checksum=%.6f\n", n, steps, sum);
    return 0;
}
