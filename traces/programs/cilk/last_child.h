/*
 * last_child.h -- how the Cilk programs start their last child.
 *
 * Cilk programmers usually call the last child of a divide-and-conquer step
 * instead of spawning it (`cilk_spawn f(lo, mid); f(mid, hi); cilk_sync;`):
 * the caller would only wait at the sync anyway.  Every invocation of a Cilk
 * function has a frame of its own, spawned or called, so both forms have the
 * same frame tree.  The programs here spawn it by default; built with
 * -DCALL_LAST_CHILD (`make cilk` builds both, the second as cilk-NAME-call)
 * they call it.
 */
#ifndef LAST_CHILD_H
#define LAST_CHILD_H

#include <cilk/cilk.h>

#ifdef CALL_LAST_CHILD
#define last_child
#else
#define last_child cilk_spawn
#endif

#endif
