/*
 * quicksort -- parallel quicksort: serial partition, the two sides sorted as
 * spawned tasks; ranges of at most GRAIN elements sorted serially.
 *
 * usage: quicksort [N [GRAIN]]   (N ints, default 65536; GRAIN default 1024)
 */
#include "ssprog.h"

static long grain;

static void qs_serial(int *a, long n)
{
    while (n > 16) {
        int p = a[n / 2];
        long i = 0, j = n - 1;
        while (i <= j) {
            while (a[i] < p)
                i++;
            while (a[j] > p)
                j--;
            if (i <= j) {
                int t = a[i];
                a[i++] = a[j];
                a[j--] = t;
            }
        }
        if (j + 1 < n - i) {
            qs_serial(a, j + 1);
            a += i;
            n -= i;
        } else {
            qs_serial(a + i, n - i);
            n = j + 1;
        }
    }
    for (long i = 1; i < n; i++) {
        int x = a[i];
        long j = i - 1;
        while (j >= 0 && a[j] > x) {
            a[j + 1] = a[j];
            j--;
        }
        a[j + 1] = x;
    }
}

static void qs(int *a, long n)
{
    if (n <= grain) {
        qs_serial(a, n);
        return;
    }
    int p = a[n / 2];
    long i = 0, j = n - 1;
    while (i <= j) {
        while (a[i] < p)
            i++;
        while (a[j] > p)
            j--;
        if (i <= j) {
            int t = a[i];
            a[i++] = a[j];
            a[j--] = t;
        }
    }
    SS_SPAWN(qs(a, j + 1));
    SS_SPAWN(qs(a + i, n - i));
    SS_SYNC();
}

int main(int argc, char **argv)
{
    long n = ss_arg(argc, argv, 1, 65536);
    grain = ss_arg(argc, argv, 2, 1024);
    int *a = malloc(sizeof(int) * (size_t)n);
    if (!a) {
        fprintf(stderr, "quicksort: out of memory\n");
        return 1;
    }
    for (long i = 0; i < n; i++)
        a[i] = (int)(ss_rand() % 1000000007ul);
    SS_ROI_BEGIN();
    SS_SPAWN(qs(a, n));
    SS_SYNC();
    SS_ROI_END();
    for (long i = 1; i < n; i++)
        if (a[i - 1] > a[i]) {
            fprintf(stderr, "quicksort: not sorted at %ld\n", i);
            return 1;
        }
    printf("quicksort n=%ld ok\n", n);
    return 0;
}
