/*
 * fib (Cilk) -- naive recursive Fibonacci written with Cilk keywords; the
 * same program as ../fib.c, whose tasks are marked with SS_SPAWN/SS_SYNC.
 * `simsched cc` rewrites the keywords into the same markers, so both capture
 * to the same DAG and the same references.
 *
 * usage: fib [N [GRAIN]]   (default N=20, GRAIN=2: calls with n < GRAIN run
 *                           serially; above, fib(n) spawns fib(n-1) and
 *                           fib(n-2) and syncs)
 *
 * The only simsched-specific lines are the region-of-interest markers of
 * simsched.h (a build with plain gcc and <cilk/cilk.h> from simsched's
 * capture/ folder is the native serial elision).
 * Built with -DCALL_LAST_CHILD the last child of each step is called, not
 * spawned (last_child.h); the frame tree is the same.
 */
#include <cilk/cilk.h>

#include "last_child.h"

#include "../ssprog.h"

static long grain;
static long result;

static long fib_serial(long n) { return n < 2 ? n : fib_serial(n - 1) + fib_serial(n - 2); }

static long fib(long n)
{
    if (n < grain)
        return fib_serial(n);
    long a = cilk_spawn fib(n - 1);
    long b = last_child fib(n - 2);
    cilk_sync;
    return a + b;
}

int main(int argc, char **argv)
{
    long n = ss_arg(argc, argv, 1, 20);
    grain = ss_arg(argc, argv, 2, 2);
    if (grain < 2)
        grain = 2;
    SS_ROI_BEGIN();
    result = last_child fib(n);
    cilk_sync;
    SS_ROI_END();
    printf("fib(%ld) = %ld\n", n, result);
    return 0;
}
