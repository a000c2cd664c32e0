/*
 * fib -- naive recursive Fibonacci, a compute-bound control.
 *
 * usage: fib [N [GRAIN]]   (default N=20, GRAIN=2: calls with n < GRAIN run
 *                           serially; fib(n) for n >= GRAIN spawns fib(n-1)
 *                           and fib(n-2) and syncs)
 *
 * Captured DAG: main spawns fib(N) and syncs.  A frame with k spawns and one
 * sync has k + 2 strands, a leaf frame 1, so the strand count is
 * 3 + S(N) with S(n) = 4 + S(n-1) + S(n-2) for n >= GRAIN, S(n) = 1 below.
 */
#include "ssprog.h"

static long grain;
static long result;

static long fib_serial(long n) { return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2); }

static void fib(long n, long *out)
{
    if (n < grain) {
        *out = fib_serial(n);
        return;
    }
    long a, b;
    SS_SPAWN(fib(n - 1, &a));
    SS_SPAWN(fib(n - 2, &b));
    SS_SYNC();
    *out = a + b;
}

int main(int argc, char **argv)
{
    long n = ss_arg(argc, argv, 1, 20);
    grain = ss_arg(argc, argv, 2, 2);
    if (grain < 2)
        grain = 2;
    SS_ROI_BEGIN();
    SS_SPAWN(fib(n, &result));
    SS_SYNC();
    SS_ROI_END();
    printf("fib(%ld) = %ld\n", n, result);
    return 0;
}
