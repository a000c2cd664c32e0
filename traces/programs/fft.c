/*
 * fft -- recursive radix-2 decimation-in-time FFT of N complex numbers: the
 * even and odd halves are transformed as two spawned tasks, then combined
 * (the butterflies in parallel for large sizes).
 *
 * usage: fft [N [GRAIN]]   (N a power of two, default 65536; transforms of at
 *                           most GRAIN points run serially, default 1024)
 */
#include <complex.h>
#include <math.h>

#include "ssprog.h"

static long grain;

typedef struct {
    double complex *out;
    long half;
    double complex w; /* twiddle step e^{-2 pi i / n} */
} comb_t;

static void combine(long lo, long hi, void *ctx)
{
    comb_t *c = (comb_t *)ctx;
    double complex tw = cpow(c->w, (double)lo);
    for (long k = lo; k < hi; k++) {
        double complex e = c->out[k], o = tw * c->out[k + c->half];
        c->out[k] = e + o;
        c->out[k + c->half] = e - o;
        tw *= c->w;
    }
}

/* out[0..n) = DFT of in[0], in[s], in[2s], ... */
static void fft(const double complex *in, double complex *out, long n, long s)
{
    if (n == 1) {
        out[0] = in[0];
        return;
    }
    long h = n / 2;
    if (n <= grain) {
        fft(in, out, h, 2 * s);
        fft(in + s, out + h, h, 2 * s);
    } else {
        SS_SPAWN(fft(in, out, h, 2 * s));
        SS_SPAWN(fft(in + s, out + h, h, 2 * s));
        SS_SYNC();
    }
    comb_t c = {out, h, cexp(-2.0 * M_PI * I / (double)n)};
    if (n <= grain)
        combine(0, h, &c);
    else
        ss_pfor(0, h, grain, combine, &c);
}

int main(int argc, char **argv)
{
    long n = ss_arg(argc, argv, 1, 65536);
    grain = ss_arg(argc, argv, 2, 1024);
    if (n & (n - 1)) {
        fprintf(stderr, "fft: N must be a power of two\n");
        return 2;
    }
    double complex *in = malloc(sizeof(double complex) * (size_t)n);
    double complex *out = malloc(sizeof(double complex) * (size_t)n);
    if (!in || !out) {
        fprintf(stderr, "fft: out of memory\n");
        return 1;
    }
    for (long i = 0; i < n; i++)
        in[i] = (double)(ss_rand() % 1000) / 1000.0;
    SS_ROI_BEGIN();
    SS_SPAWN(fft(in, out, n, 1));
    SS_SYNC();
    SS_ROI_END();
    double e = 0;
    for (long i = 0; i < n; i++)
        e += creal(out[i] * conj(out[i]));
    printf("fft n=%ld energy=%.6e\n", n, e / (double)n);
    return 0;
}
