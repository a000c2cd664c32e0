/*
 * ge -- Gaussian elimination without pivoting of a diagonally dominant
 * matrix: for each pivot k, the rows below it are eliminated in parallel.
 *
 * usage: ge [N [GRAIN]]   (N x N doubles, default 192; GRAIN rows per leaf
 *                          task, default 8)
 */
#include "ssprog.h"

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
    A = malloc(sizeof(double) * (size_t)n * (size_t)n);
    if (!A) {
        fprintf(stderr, "ge: out of memory\n");
        return 1;
    }
    for (long i = 0; i < n; i++)
        for (long j = 0; j < n; j++)
            A[i * n + j] = (double)(ss_rand() % 100) / 100.0 + (i == j ? (double)n : 0.0);
    SS_ROI_BEGIN();
    for (piv = 0; piv < n - 1; piv++)
        ss_pfor(0, n - 1 - piv, grain, eliminate, NULL);
    SS_ROI_END();
    double d = 0;
    for (long i = 0; i < n; i++)
        d += A[i * n + i];
    printf("ge n=%ld sum(diag)=%.6f\n", n, d);
    return 0;
}
