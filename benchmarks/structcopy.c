/*
 * structcopy -- a fork/join program whose references are mostly struct copies, the
 * input of bench_capture.py's import case.  Each task copies a slice of an array of
 * 200-byte records into another, record by record (`dst[i] = src[i]`), which gcc's
 * instrumentation records as read and write ranges.
 *
 * usage: structcopy [N [ROUNDS [GRAIN]]]   (N records, default 65536; ROUNDS
 *                                          passes, default 8; GRAIN records per
 *                                          leaf task, default 1024)
 */
#include <stdio.h>
#include <stdlib.h>

#include "simsched.h"

typedef struct {
    double v[25];
} rec_t;

static rec_t *src, *dst;
static long grain;

static void copy(long lo, long hi)
{
    if (hi - lo <= grain) {
        for (long i = lo; i < hi; i++)
            dst[i] = src[i];
        return;
    }
    long mid = lo + (hi - lo) / 2;
    SS_SPAWN(copy(lo, mid));
    SS_SPAWN(copy(mid, hi));
    SS_SYNC();
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 65536;
    long rounds = argc > 2 ? atol(argv[2]) : 8;
    grain = argc > 3 ? atol(argv[3]) : 1024;
    if (n < 1 || rounds < 1 || grain < 1) {
        fprintf(stderr, "usage: structcopy [N>=1 [ROUNDS>=1 [GRAIN>=1]]]\n");
        return 2;
    }
    src = calloc((size_t)n, sizeof(rec_t));
    dst = calloc((size_t)n, sizeof(rec_t));
    if (!src || !dst)
        return 1;
    for (long i = 0; i < n; i++)
        src[i].v[i % 25] = (double)i;
    SS_ROI_BEGIN();
    for (long r = 0; r < rounds; r++) {
        SS_SPAWN(copy(0, n));
        SS_SYNC();
        rec_t *t = src;
        src = dst;
        dst = t;
    }
    SS_ROI_END();
    printf("structcopy n=%ld rounds=%ld %.1f\n", n, rounds, src[n - 1].v[(n - 1) % 25]);
    return 0;
}
