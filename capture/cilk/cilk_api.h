/*
 * <cilk/cilk_api.h> for simsched: the worker queries of the Cilk Plus and
 * OpenCilk run-time APIs.  A capture runs the program serially on one
 * worker, so the worker count is 1 and the worker number 0.
 */
#ifndef SIMSCHED_CILK_CILK_API_H
#define SIMSCHED_CILK_CILK_API_H

static inline __attribute__((unused)) unsigned __cilkrts_get_nworkers(void) { return 1; }
static inline __attribute__((unused)) unsigned __cilkrts_get_total_workers(void) { return 1; }
static inline __attribute__((unused)) unsigned __cilkrts_get_worker_number(void) { return 0; }
static inline __attribute__((unused)) int __cilkrts_running_on_workers(void) { return 0; }
static inline __attribute__((unused)) int __cilkrts_set_param(const char *name, const char *value)
{
    (void)name;
    (void)value;
    return 0; /* accepted; a serial capture has nothing to configure */
}
static inline __attribute__((unused)) void __cilkrts_init(void) {}
static inline __attribute__((unused)) void __cilkrts_end_cilk(void) {}

#endif
