/* A Cilk function exits the program with a spawned child outstanding: its frame never
 * ends, and the import says so. */
#include <stdlib.h>
#include <cilk/cilk.h>
static long out;
static void leaf(long i) { out = i; }
static void work(int n) {
    cilk_spawn leaf(n);
    if (n) exit(0);
    cilk_sync;
}
int main(int argc, char **argv) {
    (void)argv;
    work(argc);
    return 0;
}
