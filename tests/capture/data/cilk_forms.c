/*
 * Every Cilk form simsched's rewriter accepts, in one program whose output
 * depends on each loop visiting exactly its iterations: the serial elision
 * (plain gcc with <cilk/cilk.h>) and the rewritten build must print the same.
 * Keywords in comments (cilk_spawn f();) and strings must be left alone.
 */
#include <cilk/cilk.h>
#include <cilk/cilk_api.h>
#include <stdio.h>
#include <string.h>

#define SPAWN cilk_spawn
#define PARALLEL_FOR(i, n) cilk_for (long i = 0; i < (n); i++)
#define GRAIN(n) _Pragma("cilk grainsize 3")

static long trace[4096];
static long ntrace;

static void visit(long v) { trace[ntrace++] = v; }

static long add(long a, long b) { return a + b; }
static long *pick(long *p, long k) { return p + k; }

static long fib(long n)
{
    if (n < 2)
        return n;
    long x = cilk_spawn fib(n - 1);
    long y;
    y = SPAWN fib((n - 2));
    cilk_sync;
    return x + y;
}

/* spawns, then returns without an explicit sync: the implicit sync */
static long twice(long n)
{
    long a, b;
    a = cilk_spawn add(n, (add(1, 2) - 3));
    b = cilk_spawn add(n, 0);
    if (n < 0)
        return -1;
    return a + b;
}

/* returns a function pointer; the null one as the constant 0, which must still convert */
static long (*chooser(long n))(long)
{
    cilk_spawn visit(n);
    if (n < 0)
        return 0;
    return fib;
}

static void loops(long n)
{
    long arr[64];
    cilk_for (long i = 0; i < n; i++)
        visit(i);
    cilk_for (int i = 1; i <= 7; ++i) visit(100 + i);
    cilk_for (long i = 20; i > 3; i -= 4)
        visit(200 + i);
    cilk_for (int i = 10; i >= -5; i -= 3) {
        if (i == 4)
            continue;
        visit(300 + i);
    }
    cilk_for (unsigned u = 0; 12 > u; u += 5) visit(400 + (long)u);
    cilk_for (unsigned u = 9; u != 1; u -= 2) visit(500 + (long)u);
    for (long i = 0; i < 64; i++)
        arr[i] = i;
    cilk_for (long *p = arr + 2; p != arr + 62; p += 3)
        visit(600 + *p);
    cilk_for (long i = 0; i < 0; i++) visit(-1);
#pragma cilk grainsize 2
    cilk_for (long i = 0; i < 9; i++)
        visit(700 + i);
    GRAIN(n) cilk_for (long i = 0; i < 11; i++) visit(800 + i);
    PARALLEL_FOR(i, 5) visit(900 + i);
    cilk_for (long i = 0; i < 6; i++) {
        long f = cilk_spawn fib(i);
        cilk_sync;
        cilk_for (long j = 0; j < i; j++)
            visit(1000 + 10 * i + j + f);
    }
}

int main(void)
{
    const char *s = "cilk_spawn cilk_sync; cilk_for (;;) cilk_scope";
    long r = 0, q;
    cilk_scope {
        r = cilk_spawn fib(15);
        q = twice(20);
    }
    _Cilk_spawn loops(40);
    _Cilk_sync;
    const long c = cilk_spawn add(r, q);
    long *p = cilk_spawn pick(trace, 3);
    cilk_spawn visit(c);
    cilk_sync;
    long (*fp)(long) = chooser(7), (*none)(long) = chooser(-7);
    visit(fp(10) + (none == 0));
    long sum = 0;
    for (long i = 0; i < ntrace; i++)
        sum = sum * 31 + trace[i];
    printf("%s|%u|%ld %ld %ld %ld %ld %ld\n", s, __cilkrts_get_nworkers(), r, q, c, *p, ntrace, sum);
    return (int)strlen(s) - 46;
}
