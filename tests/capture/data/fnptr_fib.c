/* fib recursing through a function pointer (spawned and called through it), or, with
 * -DDIRECT, calling itself by name: both must give the same frame tree. */
#include <stdio.h>
#include <stdlib.h>
#include <cilk/cilk.h>
typedef long (*fib_fn)(long);
static long fib(long n);
static fib_fn volatile self = fib;
static long fib(long n) {
    if (n < 2) return n;
#ifdef DIRECT
    long a = cilk_spawn fib(n - 1);
    long b = fib(n - 2);
#else
    long a = cilk_spawn self(n - 1);
    long b = self(n - 2);
#endif
    cilk_sync;
    return a + b;
}
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 10;
    printf("%ld\n", fib(n));
    return 0;
}
