/*
 * mergesort (Cilk) -- parallel merge sort with a parallel merge, written with
 * Cilk keywords; the same program as ../mergesort.c.
 *
 * usage: mergesort [N [GRAIN]]   (N ints, default 65536; GRAIN elements,
 *                                 default 2048: below it sort and merge serially)
 *
 * sort(a, tmp, n): sort both halves in parallel (into tmp), then merge them
 * back into a in parallel: the merge of two sorted runs splits the larger run at its
 * middle, finds the split point of the smaller one by binary search and merges
 * the two halves as two spawned tasks.  Only the sort is the region of
 * interest (simsched.h's markers); the input fill and the final check are
 * left out.
 * Built with -DCALL_LAST_CHILD the last child of each step is called, not
 * spawned (last_child.h); the frame tree is the same.
 */
#include <stdio.h>
#include <stdlib.h>

#include <cilk/cilk.h>

#include "last_child.h"

#include "simsched.h"

static long grain = 2048;

/* Merge a[0..na) and b[0..nb) into out. */
static void merge_serial(const int *a, long na, const int *b, long nb, int *out)
{
    long i = 0, j = 0, k = 0;
    while (i < na && j < nb)
        out[k++] = a[i] <= b[j] ? a[i++] : b[j++];
    while (i < na)
        out[k++] = a[i++];
    while (j < nb)
        out[k++] = b[j++];
}

/* First index in b[0..nb) whose value is >= x. */
static long lower_bound(const int *b, long nb, int x)
{
    long lo = 0, hi = nb;
    while (lo < hi) {
        long mid = lo + (hi - lo) / 2;
        if (b[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void merge_par(const int *a, long na, const int *b, long nb, int *out)
{
    if (na < nb) {
        const int *t = a;
        a = b;
        b = t;
        long tn = na;
        na = nb;
        nb = tn;
    }
    if (na + nb <= grain || na == 0) {
        merge_serial(a, na, b, nb, out);
        return;
    }
    long ma = na / 2;
    long mb = lower_bound(b, nb, a[ma]);
    cilk_spawn merge_par(a, ma, b, mb, out);
    last_child merge_par(a + ma, na - ma, b + mb, nb - mb, out + ma + mb);
    cilk_sync;
}

/* Serial sort of a[0..n) using tmp; the result ends in a. */
static void sort_serial(int *a, int *tmp, long n)
{
    if (n <= 16) {
        for (long i = 1; i < n; i++) {
            int x = a[i];
            long j = i - 1;
            while (j >= 0 && a[j] > x) {
                a[j + 1] = a[j];
                j--;
            }
            a[j + 1] = x;
        }
        return;
    }
    long h = n / 2;
    sort_serial(a, tmp, h);
    sort_serial(a + h, tmp + h, n - h);
    merge_serial(a, h, a + h, n - h, tmp);
    for (long i = 0; i < n; i++)
        a[i] = tmp[i];
}

/* Sort src[0..n).  The result ends in dst when to_dst is set, else in src;
 * the other array is scratch.  The halves are sorted into the other array so
 * that the merge writes the result where it belongs without a copy back. */
static void sort_par(int *src, int *dst, long n, int to_dst)
{
    if (n <= grain) {
        sort_serial(src, dst, n);
        if (to_dst)
            for (long i = 0; i < n; i++)
                dst[i] = src[i];
        return;
    }
    long h = n / 2;
    cilk_spawn sort_par(src, dst, h, !to_dst);
    last_child sort_par(src + h, dst + h, n - h, !to_dst);
    cilk_sync;
    if (to_dst)
        merge_par(src, h, src + h, n - h, dst);
    else
        merge_par(dst, h, dst + h, n - h, src);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 65536;
    if (argc > 2)
        grain = atol(argv[2]);
    if (n < 1 || grain < 2) {
        fprintf(stderr, "usage: mergesort [N>=1 [GRAIN>=2]]\n");
        return 2;
    }
    int *a = malloc(sizeof(int) * (size_t)n);
    int *tmp = malloc(sizeof(int) * (size_t)n);
    if (!a || !tmp) {
        fprintf(stderr, "mergesort: out of memory\n");
        return 1;
    }
    unsigned long s = 12345;
    for (long i = 0; i < n; i++) {
        s = s * 6364136223846793005ul + 1442695040888963407ul;
        a[i] = (int)(s >> 33);
    }
    SS_ROI_BEGIN();
    sort_par(a, tmp, n, 0);
    SS_ROI_END();
    for (long i = 1; i < n; i++)
        if (a[i - 1] > a[i]) {
            fprintf(stderr, "mergesort: not sorted at %ld\n", i);
            return 1;
        }
    printf("mergesort n=%ld grain=%ld ok\n", n, grain);
    free(a);
    free(tmp);
    return 0;
}
