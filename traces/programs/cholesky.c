/*
 * cholesky -- blocked right-looking Cholesky factorisation A = L L^T of a
 * symmetric positive definite matrix (lower triangle).  For each diagonal
 * block k: factor it; the blocks below it in parallel (triangular solve);
 * then every trailing lower block in parallel (A_ij -= L_ik L_jk^T).
 *
 * usage: cholesky [N [GRAIN]]   (N x N doubles, default 256; GRAIN = block
 *                                size, default 32; N rounded up to a multiple)
 */
#include <math.h>

#include "ssprog.h"

static double *A;
static long n, bs, nb, cur_k;

#define EL(i, j) A[(i) * n + (j)]

static void potrf(long k)
{
    long o = k * bs;
    for (long j = o; j < o + bs; j++) {
        double d = EL(j, j);
        for (long p = o; p < j; p++)
            d -= EL(j, p) * EL(j, p);
        EL(j, j) = sqrt(d);
        for (long i = j + 1; i < o + bs; i++) {
            double s = EL(i, j);
            for (long p = o; p < j; p++)
                s -= EL(i, p) * EL(j, p);
            EL(i, j) = s / EL(j, j);
        }
    }
}

static void trsm(long lo, long hi, void *ctx)
{
    (void)ctx;
    long o = cur_k * bs;
    for (long t = lo; t < hi; t++) {
        long r = (cur_k + 1 + t) * bs;
        for (long i = r; i < r + bs; i++)
            for (long j = o; j < o + bs; j++) {
                double s = EL(i, j);
                for (long p = o; p < j; p++)
                    s -= EL(i, p) * EL(j, p);
                EL(i, j) = s / EL(j, j);
            }
    }
}

static void syrk(long lo, long hi, void *ctx)
{
    (void)ctx;
    long o = cur_k * bs, m = nb - cur_k - 1;
    for (long t = lo; t < hi; t++) {
        long bi = cur_k + 1 + t / m, bj = cur_k + 1 + t % m;
        if (bj > bi)
            continue; /* lower triangle only */
        for (long i = bi * bs; i < bi * bs + bs; i++)
            for (long j = bj * bs; j < bj * bs + bs; j++) {
                double s = 0;
                for (long p = o; p < o + bs; p++)
                    s += EL(i, p) * EL(j, p);
                EL(i, j) -= s;
            }
    }
}

int main(int argc, char **argv)
{
    n = ss_arg(argc, argv, 1, 256);
    bs = ss_arg(argc, argv, 2, 32);
    nb = (n + bs - 1) / bs;
    n = nb * bs;
    A = malloc(sizeof(double) * (size_t)n * (size_t)n);
    if (!A) {
        fprintf(stderr, "cholesky: out of memory\n");
        return 1;
    }
    for (long i = 0; i < n; i++)
        for (long j = 0; j <= i; j++)
            EL(i, j) = EL(j, i) = (double)(ss_rand() % 100) / 100.0 + (i == j ? (double)n : 0.0);
    SS_ROI_BEGIN();
    for (cur_k = 0; cur_k < nb; cur_k++) {
        long m = nb - cur_k - 1;
        potrf(cur_k);
        if (m == 0)
            break;
        ss_pfor(0, m, 1, trsm, NULL);
        ss_pfor(0, m * m, 1, syrk, NULL);
    }
    SS_ROI_END();
    double d = 0;
    for (long i = 0; i < n; i++)
        d += EL(i, i);
    printf("cholesky n=%ld block=%ld trace(L)=%.6f\n", n, bs, d);
    return 0;
}
