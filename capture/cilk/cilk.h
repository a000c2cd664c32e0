/*
 * <cilk/cilk.h> for simsched.
 *
 * `simsched cc` compiles a Cilk program as its serial elision plus
 * simsched's markers: it preprocesses each C source with SIMSCHED_CILK
 * defined, rewrites cilk_spawn, cilk_sync, cilk_for and cilk_scope (and
 * their _Cilk_ spellings) from the parsed translation unit, and compiles
 * the result.  Under SIMSCHED_CILK this header therefore leaves the
 * keywords alone (they must reach the rewriter) and brings in the run-time
 * support of the rewritten code.
 *
 * Any other compiler that finds this header (gcc -I<simsched>/capture)
 * gets the plain serial elision, with no markers: a native build to time.
 */
#ifndef SIMSCHED_CILK_CILK_H
#define SIMSCHED_CILK_CILK_H

#ifdef SIMSCHED_CILK
#include "../simsched_cilk.h"
#else
#define cilk_spawn
#define _Cilk_spawn
#define cilk_sync
#define _Cilk_sync
#define cilk_for for
#define _Cilk_for for
#define cilk_scope
#define _Cilk_scope
#endif

#include "cilk_api.h"

#endif
