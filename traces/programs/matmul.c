/*
 * matmul -- recursive divide-and-conquer matrix multiply C += A B: each
 * quadrant of C is computed by two rounds of four spawned sub-products.
 *
 * usage: matmul [N [GRAIN]]   (N x N doubles, N a power of two, default 128;
 *                              GRAIN: blocks of at most GRAIN^2 run serially,
 *                              default 16)
 */
#include "ssprog.h"

static long ld, grain;

static void mm(const double *a, const double *b, double *c, long m)
{
    if (m <= grain) {
        for (long i = 0; i < m; i++)
            for (long k = 0; k < m; k++) {
                double x = a[i * ld + k];
                for (long j = 0; j < m; j++)
                    c[i * ld + j] += x * b[k * ld + j];
            }
        return;
    }
    long h = m / 2;
    const double *a11 = a, *a12 = a + h, *a21 = a + h * ld, *a22 = a + h * ld + h;
    const double *b11 = b, *b12 = b + h, *b21 = b + h * ld, *b22 = b + h * ld + h;
    double *c11 = c, *c12 = c + h, *c21 = c + h * ld, *c22 = c + h * ld + h;
    SS_SPAWN(mm(a11, b11, c11, h));
    SS_SPAWN(mm(a11, b12, c12, h));
    SS_SPAWN(mm(a21, b11, c21, h));
    SS_SPAWN(mm(a21, b12, c22, h));
    SS_SYNC();
    SS_SPAWN(mm(a12, b21, c11, h));
    SS_SPAWN(mm(a12, b22, c12, h));
    SS_SPAWN(mm(a22, b21, c21, h));
    SS_SPAWN(mm(a22, b22, c22, h));
    SS_SYNC();
}

int main(int argc, char **argv)
{
    long n = ss_arg(argc, argv, 1, 128);
    grain = ss_arg(argc, argv, 2, 16);
    if (n & (n - 1)) {
        fprintf(stderr, "matmul: N must be a power of two\n");
        return 2;
    }
    ld = n;
    double *a = malloc(sizeof(double) * (size_t)(n * n)), *b = malloc(sizeof(double) * (size_t)(n * n));
    double *c = calloc((size_t)(n * n), sizeof(double));
    if (!a || !b || !c) {
        fprintf(stderr, "matmul: out of memory\n");
        return 1;
    }
    for (long i = 0; i < n * n; i++) {
        a[i] = (double)(ss_rand() % 10);
        b[i] = (double)(ss_rand() % 10);
    }
    SS_ROI_BEGIN();
    SS_SPAWN(mm(a, b, c, n));
    SS_SYNC();
    SS_ROI_END();
    double s = 0;
    for (long i = 0; i < n * n; i++)
        s += c[i];
    printf("matmul n=%ld sum=%.1f\n", n, s);
    return 0;
}
