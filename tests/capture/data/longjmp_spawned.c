/* A spawned leaf longjmps back to its spawning Cilk function (-DIN_CILK: the jump target
 * and the longjmp are written in the Cilk function itself; otherwise the longjmp is in a
 * plain function the Cilk function spawns, outside what the rewriter checks). */
#include <setjmp.h>
#include <stdio.h>
#include <cilk/cilk.h>
static jmp_buf env;
static long out[4];
static void leaf(long i) {
    out[i] = i;
    if (i == 2) longjmp(env, 1);
}
static long work(void) {
#ifdef IN_CILK
    if (setjmp(env)) return -1;
#endif
    for (long i = 0; i < 4; i++) cilk_spawn leaf(i);
    cilk_sync;
    return out[0] + out[1] + out[2] + out[3];
}
int main(void) {
#ifndef IN_CILK
    if (setjmp(env)) { printf("jumped\n"); return 0; }
#endif
    printf("%ld\n", work());
    return 0;
}
