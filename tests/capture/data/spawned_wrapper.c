/* Cilk functions called from a spawned plain function, and from a spawn's arguments
 * (tests/capture/test_cilk_frames.py).  Every call of a Cilk function is a frame of its
 * own; only the spawned call itself is the frame its spawn opened. */
#include <stdio.h>
#include <cilk/cilk.h>

static long out[8];

static void work(int i) { out[i] += i; }

static void pair(int i) /* a Cilk function: spawns one task, calls one */
{
    cilk_spawn work(i);
    work(i + 1);
    cilk_sync;
}

static void wrapper(void) /* no Cilk keyword: shares the frame of its spawn */
{
    pair(0);
    out[4] = out[0] + out[1];
    pair(2);
    out[5] = out[2] + out[3];
}

static int first(int i) /* a Cilk function called in a spawn's arguments */
{
    cilk_spawn work(i);
    cilk_sync;
    return i + 1;
}

int main(void)
{
    cilk_spawn wrapper();
    out[6] = 1;
    cilk_sync;
    cilk_spawn pair(first(6));
    cilk_sync;
    printf("%ld %ld %ld\n", out[4], out[5], out[7]);
    return 0;
}
