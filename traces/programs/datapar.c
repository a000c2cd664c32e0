/*
 * datapar -- the data-parallel program of SAWS Fig. 3: a parent spawns N
 * children at once and syncs; each child does a large, equal amount of work
 * (Work()), so the parallelism is N for almost the whole run.
 *
 * usage: datapar [N [ELEMS [REPS]]]   (N children, default 10; each child owns
 *                                      ELEMS doubles, default 4096, and sweeps
 *                                      them REPS times, default 8)
 *
 * Work(i): for each sweep, a[j] = a[j] * 0.5 + 1.0 over the child's own slice
 * of one array of N * ELEMS doubles (one load and one store per element).
 */
#include "ssprog.h"

static double *A;
static long elems, reps;

static void work(long i)
{
    double *a = A + i * elems;
    for (long r = 0; r < reps; r++)
        for (long j = 0; j < elems; j++)
            a[j] = a[j] * 0.5 + 1.0;
}

int main(int argc, char **argv)
{
    long n = ss_arg(argc, argv, 1, 10);
    elems = ss_arg(argc, argv, 2, 4096);
    reps = ss_arg(argc, argv, 3, 8);
    A = malloc(sizeof(double) * (size_t)n * (size_t)elems);
    if (!A) {
        fprintf(stderr, "datapar: out of memory\n");
        return 1;
    }
    for (long k = 0; k < n * elems; k++)
        A[k] = (double)(ss_rand() % 1000);
    SS_ROI_BEGIN();
    for (long i = 0; i < n; i++)
        SS_SPAWN(work(i));
    SS_SYNC();
    SS_ROI_END();
    double s = 0;
    for (long k = 0; k < n * elems; k++)
        s += A[k];
    printf("datapar n=%ld elems=%ld reps=%ld checksum=%.3f\n", n, elems, reps, s);
    return 0;
}
