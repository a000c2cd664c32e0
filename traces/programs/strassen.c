/*
 * strassen -- Strassen's matrix multiply C = A B: the seven products are
 * spawned tasks, each with its own temporary matrices; blocks of at most
 * GRAIN x GRAIN use the ordinary triple loop.
 *
 * usage: strassen [N [GRAIN]]   (N a power of two, default 128; GRAIN
 *                                default 32)
 */
#include "ssprog.h"

static long grain;

/* Matrices are m x m with leading dimension ld. */
static void add(const double *a, long la, const double *b, long lb, double *c, long lc, long m,
                double sb)
{
    for (long i = 0; i < m; i++)
        for (long j = 0; j < m; j++)
            c[i * lc + j] = a[i * la + j] + sb * b[i * lb + j];
}

static void mul(const double *a, long la, const double *b, long lb, double *c, long lc, long m)
{
    if (m <= grain) {
        for (long i = 0; i < m; i++)
            for (long j = 0; j < m; j++)
                c[i * lc + j] = 0;
        for (long i = 0; i < m; i++)
            for (long k = 0; k < m; k++) {
                double x = a[i * la + k];
                for (long j = 0; j < m; j++)
                    c[i * lc + j] += x * b[k * lb + j];
            }
        return;
    }
    long h = m / 2, hh = h * h;
    const double *a11 = a, *a12 = a + h, *a21 = a + h * la, *a22 = a + h * la + h;
    const double *b11 = b, *b12 = b + h, *b21 = b + h * lb, *b22 = b + h * lb + h;
    double *t = malloc(sizeof(double) * (size_t)(hh * 17));
    if (!t) {
        fprintf(stderr, "strassen: out of memory\n");
        exit(1);
    }
    double *p[7], *s[10];
    for (int i = 0; i < 7; i++)
        p[i] = t + i * hh;
    for (int i = 0; i < 10; i++)
        s[i] = t + (7 + i) * hh;
    add(a11, la, a22, la, s[0], h, h, 1);
    add(b11, lb, b22, lb, s[1], h, h, 1);
    add(a21, la, a22, la, s[2], h, h, 1);
    add(b12, lb, b22, lb, s[3], h, h, -1);
    add(b21, lb, b11, lb, s[4], h, h, -1);
    add(a11, la, a12, la, s[5], h, h, 1);
    add(a21, la, a11, la, s[6], h, h, -1);
    add(b11, lb, b12, lb, s[7], h, h, 1);
    add(a12, la, a22, la, s[8], h, h, -1);
    add(b21, lb, b22, lb, s[9], h, h, 1);
    SS_SPAWN(mul(s[0], h, s[1], h, p[0], h, h));
    SS_SPAWN(mul(s[2], h, b11, lb, p[1], h, h));
    SS_SPAWN(mul(a11, la, s[3], h, p[2], h, h));
    SS_SPAWN(mul(a22, la, s[4], h, p[3], h, h));
    SS_SPAWN(mul(s[5], h, b22, lb, p[4], h, h));
    SS_SPAWN(mul(s[6], h, s[7], h, p[5], h, h));
    SS_SPAWN(mul(s[8], h, s[9], h, p[6], h, h));
    SS_SYNC();
    for (long i = 0; i < h; i++)
        for (long j = 0; j < h; j++) {
            long k = i * h + j;
            c[i * lc + j] = p[0][k] + p[3][k] - p[4][k] + p[6][k];
            c[i * lc + j + h] = p[2][k] + p[4][k];
            c[(i + h) * lc + j] = p[1][k] + p[3][k];
            c[(i + h) * lc + j + h] = p[0][k] - p[1][k] + p[2][k] + p[5][k];
        }
    free(t);
}

int main(int argc, char **argv)
{
    long n = ss_arg(argc, argv, 1, 128);
    grain = ss_arg(argc, argv, 2, 32);
    if (n & (n - 1)) {
        fprintf(stderr, "strassen: N must be a power of two\n");
        return 2;
    }
    double *a = malloc(sizeof(double) * (size_t)(n * n)), *b = malloc(sizeof(double) * (size_t)(n * n));
    double *c = malloc(sizeof(double) * (size_t)(n * n));
    if (!a || !b || !c) {
        fprintf(stderr, "strassen: out of memory\n");
        return 1;
    }
    for (long i = 0; i < n * n; i++) {
        a[i] = (double)(ss_rand() % 10);
        b[i] = (double)(ss_rand() % 10);
    }
    SS_ROI_BEGIN();
    SS_SPAWN(mul(a, n, b, n, c, n, n));
    SS_SYNC();
    SS_ROI_END();
    double sum = 0;
    for (long i = 0; i < n * n; i++)
        sum += c[i];
    printf("strassen n=%ld sum=%.1f\n", n, sum);
    return 0;
}
