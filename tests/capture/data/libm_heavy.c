/* Spends most of its time in libm (sin, exp), whose loads and stores the gcc
 * backend does not see: the capture must say so.  usage: libm_heavy [ITERS] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "simsched.h"

static double out[2];

static void work(int k, long iters)
{
    double s = k;
    for (long i = 0; i < iters; i++)
        s = sin(s + 1e-3 * (double)i) + exp(-s * s);
    out[k] = s;
}

int main(int argc, char **argv)
{
    long iters = argc > 1 ? atol(argv[1]) : 1000000;
    SS_SPAWN(work(0, iters));
    SS_SPAWN(work(1, iters));
    SS_SYNC();
    printf("%f\n", out[0] + out[1]);
    return 0;
}
