/*
 * hashjoin -- hash join of a build relation R into a chained hash table, then
 * a parallel probe with S (the join phase is the region of interest, as in
 * the PDF paper's hash-join benchmark).
 *
 * usage: hashjoin [N [GRAIN]]   (N probe tuples, default 65536; |R| = N/4;
 *                                GRAIN probe tuples per leaf task, default 1024)
 */
#include "ssprog.h"

typedef struct {
    long key;
    long payload;
} tuple_t;

typedef struct {
    long *head;    /* bucket -> first entry of R, or -1 */
    long *next;    /* entry of R -> next entry in its bucket */
    tuple_t *r;
    tuple_t *s;
    long *matches; /* per probe tuple: number of matches */
    long mask;
} join_t;

static long hash(long k) { return (long)(((unsigned long)k * 0x9E3779B97F4A7C15ul) >> 20); }

static void probe(long lo, long hi, void *ctx)
{
    join_t *j = (join_t *)ctx;
    for (long i = lo; i < hi; i++) {
        long k = j->s[i].key, m = 0;
        for (long e = j->head[hash(k) & j->mask]; e >= 0; e = j->next[e])
            m += j->r[e].key == k;
        j->matches[i] = m;
    }
}

int main(int argc, char **argv)
{
    long n = ss_arg(argc, argv, 1, 65536);
    long grain = ss_arg(argc, argv, 2, 1024);
    long nr = n / 4 > 0 ? n / 4 : 1, buckets = 1;
    while (buckets < nr)
        buckets <<= 1;
    join_t j;
    j.head = malloc(sizeof(long) * (size_t)buckets);
    j.next = malloc(sizeof(long) * (size_t)nr);
    j.r = malloc(sizeof(tuple_t) * (size_t)nr);
    j.s = malloc(sizeof(tuple_t) * (size_t)n);
    j.matches = malloc(sizeof(long) * (size_t)n);
    j.mask = buckets - 1;
    if (!j.head || !j.next || !j.r || !j.s || !j.matches) {
        fprintf(stderr, "hashjoin: out of memory\n");
        return 1;
    }
    for (long b = 0; b < buckets; b++)
        j.head[b] = -1;
    for (long i = 0; i < nr; i++) {
        j.r[i].key = (long)(ss_rand() % (unsigned long)(2 * nr));
        j.r[i].payload = i;
        long b = hash(j.r[i].key) & j.mask;
        j.next[i] = j.head[b];
        j.head[b] = i;
    }
    for (long i = 0; i < n; i++) {
        j.s[i].key = (long)(ss_rand() % (unsigned long)(2 * nr));
        j.s[i].payload = i;
    }
    SS_ROI_BEGIN();
    ss_pfor(0, n, grain, probe, &j);
    SS_ROI_END();
    long total = 0;
    for (long i = 0; i < n; i++)
        total += j.matches[i];
    printf("hashjoin n=%ld |R|=%ld matches=%ld\n", n, nr, total);
    return 0;
}
