/*
 * lu -- blocked LU decomposition without pivoting of a diagonally dominant
 * matrix (right-looking).  For each diagonal block k: factor it; then, in
 * parallel, the blocks of row k (L^-1 A) and of column k (A U^-1); then, in
 * parallel, every trailing block (A -= L U).
 *
 * usage: lu [N [GRAIN]]   (N x N doubles, default 256; GRAIN = block size,
 *                          default 32; N is rounded up to a multiple of it)
 */
#include "ssprog.h"

static double *A;
static long n, bs, nb;

#define EL(i, j) A[(i) * n + (j)]

static void factor_diag(long k)
{
    long o = k * bs;
    for (long p = o; p < o + bs; p++)
        for (long i = p + 1; i < o + bs; i++) {
            EL(i, p) /= EL(p, p);
            for (long j = p + 1; j < o + bs; j++)
                EL(i, j) -= EL(i, p) * EL(p, j);
        }
}

/* Block (k, j), j > k: solve L_kk X = A_kj (unit lower triangular). */
static void row_block(long k, long j)
{
    long o = k * bs, c = j * bs;
    for (long p = o; p < o + bs; p++)
        for (long i = p + 1; i < o + bs; i++)
            for (long q = c; q < c + bs; q++)
                EL(i, q) -= EL(i, p) * EL(p, q);
}

/* Block (i, k), i > k: solve X U_kk = A_ik. */
static void col_block(long k, long i)
{
    long o = k * bs, r = i * bs;
    for (long p = o; p < o + bs; p++)
        for (long q = r; q < r + bs; q++) {
            EL(q, p) /= EL(p, p);
            for (long j = p + 1; j < o + bs; j++)
                EL(q, j) -= EL(q, p) * EL(p, j);
        }
}

/* Block (i, j) -= (i, k) (k, j). */
static void update_block(long k, long i, long j)
{
    long o = k * bs, r = i * bs, c = j * bs;
    for (long x = r; x < r + bs; x++)
        for (long p = o; p < o + bs; p++) {
            double l = EL(x, p);
            for (long y = c; y < c + bs; y++)
                EL(x, y) -= l * EL(p, y);
        }
}

static long cur_k;

static void panels(long lo, long hi, void *ctx)
{
    (void)ctx;
    for (long t = lo; t < hi; t++) {
        long m = nb - cur_k - 1;
        if (t < m)
            row_block(cur_k, cur_k + 1 + t);
        else
            col_block(cur_k, cur_k + 1 + (t - m));
    }
}

static void trailing(long lo, long hi, void *ctx)
{
    (void)ctx;
    long m = nb - cur_k - 1;
    for (long t = lo; t < hi; t++)
        update_block(cur_k, cur_k + 1 + t / m, cur_k + 1 + t % m);
}

int main(int argc, char **argv)
{
    n = ss_arg(argc, argv, 1, 256);
    bs = ss_arg(argc, argv, 2, 32);
    nb = (n + bs - 1) / bs;
    n = nb * bs;
    A = malloc(sizeof(double) * (size_t)n * (size_t)n);
    if (!A) {
        fprintf(stderr, "lu: out of memory\n");
        return 1;
    }
    for (long i = 0; i < n; i++)
        for (long j = 0; j < n; j++)
            EL(i, j) = (double)(ss_rand() % 100) / 100.0 + (i == j ? (double)n : 0.0);
    SS_ROI_BEGIN();
    for (cur_k = 0; cur_k < nb; cur_k++) {
        long m = nb - cur_k - 1;
        factor_diag(cur_k);
        if (m == 0)
            break;
        ss_pfor(0, 2 * m, 1, panels, NULL);
        ss_pfor(0, m * m, 1, trailing, NULL);
    }
    SS_ROI_END();
    double tr = 0;
    for (long i = 0; i < n; i++)
        tr += EL(i, i);
    printf("lu n=%ld block=%ld trace(U)=%.6f\n", n, bs, tr);
    return 0;
}
