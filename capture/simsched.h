/*
 * simsched.h -- the marker ABI of simsched's capture backends.
 *
 * A fork/join program is captured while it runs serially (serial elision):
 * SS_SPAWN(f(x)) simply calls f(x), SS_SYNC() does nothing.  The markers tell
 * the capture backend where the DAG's spawns, syncs, iterations and region of
 * interest are:
 *
 *   SS_SPAWN(call)   run `call` as a spawned child task
 *   SS_SYNC()        wait for the children spawned so far by this function
 *   SS_ITER(i)       iteration i of an iterative program begins
 *   SS_ROI_BEGIN()   keep references from here ...
 *   SS_ROI_END()     ... to here (if SS_ROI_BEGIN is never called, the whole
 *                    run is the region of interest)
 *
 * A function that spawns has an implicit sync before it returns; call
 * SS_SYNC() anyway so that the program is also a correct parallel program.
 *
 * Mechanism.  Every marker calls simsched_marker(kind, arg), an out-of-line
 * function defined here as a *weak* symbol, so that
 *   - the gcc backend's runtime (linked by `simsched cc`) supplies a strong
 *     definition that overrides this one and records the marker;
 *   - the valgrind backend sees the client request issued by the body below
 *     (natively the request is a handful of no-op instructions);
 *   - the Pin tool intercepts the routine by its name, `simsched_marker`.
 * The function is weak and noinline, so the compiler never inlines it and
 * every marker stays visible to every backend.  Natively a marker costs a
 * call, a few register moves and the no-op request sequence.
 *
 * The client request follows the Valgrind client-request ABI for amd64
 * documented by Valgrind: %rax points at an array of six machine words
 * (request code and five arguments), %rdx holds the default result, and the
 * "special instruction preamble" -- four rotations of %rdi by 3, 13, 61 and 51
 * bits (128 bits in all, so %rdi is unchanged) followed by `xchg %rbx,%rbx`
 * -- marks the request.  On other architectures the header uses Valgrind's
 * own <valgrind/valgrind.h> when it is available, and otherwise the marker is
 * a plain call (gcc and Pin backends still work).
 *
 * The record kinds the backends write are defined in simsched_raw.h.
 */
#ifndef SIMSCHED_H
#define SIMSCHED_H

#include "simsched_raw.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Client request code: Valgrind's tool base for the letters 'S','S', plus 1. */
#define SS_CLIENT_REQUEST_MARKER ((((unsigned long)'S') << 24 | ((unsigned long)'S') << 16) + 1ul)

#if defined(__x86_64__)
static inline __attribute__((always_inline)) unsigned long
ss_client_request_(unsigned long code, unsigned long a1, unsigned long a2)
{
    volatile unsigned long words[6];
    unsigned long result = 0;
    words[0] = code;
    words[1] = a1;
    words[2] = a2;
    words[3] = 0;
    words[4] = 0;
    words[5] = 0;
    __asm__ volatile("rolq $3, %%rdi\n\t"
                     "rolq $13, %%rdi\n\t"
                     "rolq $61, %%rdi\n\t"
                     "rolq $51, %%rdi\n\t"
                     "xchgq %%rbx, %%rbx"
                     : "=d"(result)
                     : "a"(&words[0]), "0"(result)
                     : "cc", "memory");
    return result;
}
#define SS_HAVE_CLIENT_REQUEST_ 1
#elif defined(__has_include)
#if __has_include(<valgrind/valgrind.h>)
#include <valgrind/valgrind.h>
static inline unsigned long
ss_client_request_(unsigned long code, unsigned long a1, unsigned long a2)
{
    return (unsigned long)VALGRIND_DO_CLIENT_REQUEST_EXPR(0, code, a1, a2, 0, 0, 0);
}
#define SS_HAVE_CLIENT_REQUEST_ 1
#endif
#endif

/* The marker function every backend intercepts.  Weak: the gcc backend's
 * runtime overrides it.  `used` keeps it in the symbol table for Pin.  Declared
 * first: an external definition without a prototype fails -Wmissing-prototypes
 * (-Wmissing-declarations in C++) under -Werror. */
void simsched_marker(int kind, long arg);
__attribute__((weak, noinline, used, visibility("default"))) void
simsched_marker(int kind, long arg)
{
#ifdef SS_HAVE_CLIENT_REQUEST_
    (void)ss_client_request_(SS_CLIENT_REQUEST_MARKER, (unsigned long)kind, (unsigned long)arg);
#else
    /* An empty asm keeps the call from being optimised away. */
    __asm__ volatile("" : : "r"(kind), "r"(arg) : "memory");
#endif
}

#define SS_SPAWN(call)                                                                           \
    do {                                                                                         \
        simsched_marker((int)SS_M_SPAWN, 0);                                                     \
        call;                                                                                    \
        simsched_marker((int)SS_M_SPAWN_END, 0);                                                 \
    } while (0)
#define SS_SYNC()      simsched_marker((int)SS_M_SYNC, 0)
#define SS_ITER(i)     simsched_marker((int)SS_M_ITER, (long)(i))
#define SS_ROI_BEGIN() simsched_marker((int)SS_M_ROI_BEGIN, 0)
#define SS_ROI_END()   simsched_marker((int)SS_M_ROI_END, 0)

#ifdef __cplusplus
}
#endif

#endif /* SIMSCHED_H */
