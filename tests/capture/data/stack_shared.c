/* Spawned halves fill an array on main's stack through a pointer: the import warns
 * that this sharing of a stack object between workers is not modelled. */
#include <stdio.h>
#include <cilk/cilk.h>
static void fill(long *v, long lo, long hi) {
    if (hi - lo < 4) { for (long i = lo; i < hi; i++) v[i] = i * i; return; }
    long mid = lo + (hi - lo) / 2;
    cilk_spawn fill(v, lo, mid);
    fill(v, mid, hi);
    cilk_sync;
}
int main(void) {
    long v[64];
    fill(v, 0, 64);
    long s = 0;
    for (int i = 0; i < 64; i++) s += v[i];
    printf("%ld\n", s);
    return 0;
}
