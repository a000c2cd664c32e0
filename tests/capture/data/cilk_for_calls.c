/* A cilk_for in main whose body calls a Cilk function (tests/capture/test_cilk_frames.py).
 *
 * The loop's last leaf runs in main's own frame, so main itself calls row() there, while
 * the spawned halves are outstanding: each step is still one phase of main, not one per
 * call.  Arguments: rows (at most 64), steps; -DGRAIN4 sets the loop's grain to 4. */
#include <stdio.h>
#include <stdlib.h>
#include <cilk/cilk.h>

#define C 32
static double g[64][C];

static void half(int i, int lo, int hi)
{
    for (int j = lo; j < hi; j++)
        g[i][j] = 0.5 * g[i][j] + 1.0;
}

static void row(int i) /* a Cilk function: the row in two halves */
{
    cilk_spawn half(i, 0, C / 2);
    half(i, C / 2, C);
    cilk_sync;
}

int main(int argc, char **argv)
{
    int rows = argc > 1 ? atoi(argv[1]) : 64;
    int steps = argc > 2 ? atoi(argv[2]) : 3;
    if (rows < 1 || rows > 64)
        return 2;
    for (int t = 0; t < steps; t++) {
#ifdef GRAIN4
#pragma cilk grainsize 4
#endif
        cilk_for (int i = 0; i < rows; i++)
            row(i);
    }
    printf("%f\n", g[0][0]);
    return 0;
}
