/* Most of the data traffic is in C library string functions (strlen, strcmp, memcmp,
 * strcpy, strchr) over a table of 64-byte strings, in two spawned halves. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cilk/cilk.h>
static char *tab, *dst;
static long n;
static long work(long lo, long hi) {
    long s = 0;
    for (long i = lo; i < hi; i++) {
        s += (long)strlen(tab + i * 64);
        s += strcmp(tab + i * 64, tab + ((i * 7) % n) * 64) > 0;
        s += memcmp(tab + i * 64, tab + ((i * 13) % n) * 64, 64) > 0;
        strcpy(dst + i * 64, tab + i * 64);
        s += strchr(dst + i * 64, 'z') != NULL;
    }
    return s;
}
int main(int argc, char **argv) {
    n = argc > 1 ? atol(argv[1]) : 16384;
    tab = malloc(n * 64);
    dst = malloc(n * 64);
    for (long i = 0; i < n; i++) {
        for (int j = 0; j < 63; j++)
            tab[i * 64 + j] = (char)('a' + (i + j) % 26);
        tab[i * 64 + 63] = 0;
    }
    long a = cilk_spawn work(0, n / 2);
    long b = work(n / 2, n);
    cilk_sync;
    printf("%ld\n", a + b);
    return 0;
}
