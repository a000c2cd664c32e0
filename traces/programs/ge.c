/*
 * ge -- Gaussian elimination without pivoting of a diagonally dominant
 * matrix: for each pivot k, the rows below it are eliminated in parallel.
 * ge-ir (-DIRREGULAR) splits the rows with uneven branching (LAWS Sec. 6.1).
 *
 * usage: ge [N [GRAIN [STEPS]]]   (N x N doubles, default 192; GRAIN rows per
 *                                  leaf task, default 8; STEPS pivots, default
 *                                  and at most N - 1)
 *
 * Each pivot step is an iteration (SS_ITER(k)): main spawns the root task of a
 * parallel loop over the N - 1 - k rows below the pivot and syncs, so the DAG
 * of an iteration shrinks from one step to the next (LAWS Sec. 6.6).
 */
#include "ssprog.h"

#ifdef IRREGULAR
#define PFOR ss_pfor_ir
#else
#define PFOR ss_pfor
#endif

static double *A;
static long n, piv;

static void eliminate(long lo, long hi, void *ctx)
{
    (void)ctx;
    const double *p = A + piv * n;
    for (long i = piv + 1 + lo; i < piv + 1 + hi; i++) {
        double *r = A + i * n;
        double f = r[piv] / p[piv];
        for (long j = piv; j < n; j++)
            r[j] -= f * p[j];
    }
}

int main(int argc, char **argv)
{
    n = ss_arg(argc, argv, 1, 192);
    long grain = ss_arg(argc, argv, 2, 8);
    long steps = ss_arg(argc, argv, 3, n > 1 ? n - 1 : 1);
    if (steps > n - 1)
        steps = n - 1;
    A = malloc(sizeof(double) * (size_t)n * (size_t)n);
    if (!A) {
        fprintf(stderr, "ge: out of memory\n");
        return 1;
    }
    for (long i = 0; i < n; i++)
        for (long j = 0; j < n; j++)
            A[i * n + j] = (double)(ss_rand() % 100) / 100.0 + (i == j ? (double)n : 0.0);
    SS_ROI_BEGIN();
    for (piv = 0; piv < steps; piv++) {
        SS_ITER(piv);
        SS_SPAWN(PFOR(0, n - 1 - piv, grain, eliminate, NULL));
        SS_SYNC();
    }
    SS_ROI_END();
    double d = 0;
    for (long i = 0; i < n; i++)
        d += A[i * n + i];
    printf("ge n=%ld steps=%ld sum(diag)=%.6f\n", n, steps, d);
    return 0;
}
