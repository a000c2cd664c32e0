/*
 * queens (Cilk) -- count the solutions of the N-queens problem, written with
 * Cilk keywords; the same program as ../queens.c.  The first GRAIN rows are
 * searched in parallel (one spawned task per safe column), deeper rows
 * serially.  Each task copies the board prefix it extends.
 *
 * usage: queens [N [GRAIN]]   (default N=8, GRAIN=3 parallel rows)
 * Built with -DCALL_LAST_CHILD the last child of each step is called, not
 * spawned (last_child.h); the frame tree is the same.
 */
#include <cilk/cilk.h>

#include "last_child.h"

#include "../ssprog.h"

static long n, grain;

static int safe(const int *cols, long row, int c)
{
    for (long r = 0; r < row; r++)
        if (cols[r] == c || cols[r] - c == row - r || c - cols[r] == row - r)
            return 0;
    return 1;
}

static long count_serial(int *cols, long row)
{
    if (row == n)
        return 1;
    long s = 0;
    for (int c = 0; c < n; c++)
        if (safe(cols, row, c)) {
            cols[row] = c;
            s += count_serial(cols, row + 1);
        }
    return s;
}

static void count(const int *prefix, long row, long *out)
{
    int cols[64];
    for (long r = 0; r < row; r++)
        cols[r] = prefix[r];
    if (row >= grain || row == n) {
        *out = count_serial(cols, row);
        return;
    }
    long sub[64];
    for (int c = 0; c < n; c++) {
        sub[c] = 0;
        if (safe(cols, row, c)) {
            cols[row] = c;
            cilk_spawn count(cols, row + 1, &sub[c]);
        }
    }
    cilk_sync;
    long s = 0;
    for (int c = 0; c < n; c++)
        s += sub[c];
    *out = s;
}

int main(int argc, char **argv)
{
    n = ss_arg(argc, argv, 1, 8);
    grain = ss_arg(argc, argv, 2, 3);
    if (n > 64) {
        fprintf(stderr, "queens: N must be at most 64\n");
        return 2;
    }
    long total = 0;
    int none[1] = {0};
    SS_ROI_BEGIN();
    last_child count(none, 0, &total);
    cilk_sync;
    SS_ROI_END();
    printf("queens n=%ld solutions=%ld\n", n, total);
    return 0;
}
