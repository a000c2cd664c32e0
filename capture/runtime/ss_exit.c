/*
 * ss_exit.c -- the gcc-backend runtime's wrappers of the calls that end or
 * replace the process image (see ss_rt.c).
 *
 * _exit and _Exit end the process without the atexit handler that finishes
 * the raw stream, which then ends inside a compressed frame: they finish the
 * stream first, as exit() would.  A forked child has stopped recording, and
 * a vfork() child is not the recorded process: their _exit writes nothing.
 *
 * exec*() keeps the runtime's profiling timer (ITIMER_PROF survives execve)
 * while the new program gets SIGPROF's default action: the program it runs
 * would be killed by the sampler's next tick.  The wrappers stop the timer
 * for the exec and restart it if the exec fails.  (The stream cannot follow
 * the new program: `simsched capture` reports the run as never ended.)
 *
 * pthread_create starts a second thread, which the runtime cannot record
 * (its buffer and compressor are one thread's: two threads writing them
 * corrupt the stream or deadlock in zstd) and a capture must not (the
 * references of a serial run make the DAG's strands): the wrapper writes a
 * THREAD marker, which the import refuses, and ends the stream before the
 * thread starts.  Not recording, it only starts the thread.
 *
 * `simsched cc` links with -Wl,--wrap=_exit,... so that the program's own
 * calls come here.  This file is the runtime's libsimsched_exit.a, linked
 * after the program's objects, not part of ss_rt.c's object: only programs
 * that call these functions contain it, and the layout (so the addresses, so
 * the trace) of every other program stays as it is without it.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <sys/time.h>
#include <unistd.h>

#include "simsched_raw.h"

#define SS_API __attribute__((visibility("default")))

void ss_finish(void);
void simsched_marker(int kind, long arg);
extern void __real__exit(int) __attribute__((noreturn));
extern void __real__Exit(int) __attribute__((noreturn));

/* The recorded process.  A vfork() child shares its memory (and runs no atfork
 * handler): its _exit (after a failed exec, the usual pattern) must not end
 * the parent's stream, which would then stop recording without a word. */
static pid_t ss_pid;
__attribute__((constructor)) static void ss_note_pid(void) { ss_pid = getpid(); }

SS_API __attribute__((noreturn)) void __wrap__exit(int status)
{
    if (getpid() == ss_pid)
        ss_finish();
    __real__exit(status);
}

SS_API __attribute__((noreturn)) void __wrap__Exit(int status)
{
    if (getpid() == ss_pid)
        ss_finish();
    __real__Exit(status);
}

/* Run `call` (an exec) with the profiling timer stopped; it returns only on failure. */
#define SS_EXEC(call)                                                                            \
    ({                                                                                           \
        struct itimerval off_ = {{0, 0}, {0, 0}}, was_;                                          \
        int stopped_ = setitimer(ITIMER_PROF, &off_, &was_) == 0;                                \
        int r_ = (call);                                                                         \
        int e_ = errno;                                                                          \
        if (stopped_)                                                                            \
            setitimer(ITIMER_PROF, &was_, NULL);                                                 \
        errno = e_;                                                                              \
        r_;                                                                                      \
    })

extern int __real_execve(const char *, char *const[], char *const[]);
extern int __real_execv(const char *, char *const[]);
extern int __real_execvp(const char *, char *const[]);
extern int __real_execvpe(const char *, char *const[], char *const[]);
extern int __real_fexecve(int, char *const[], char *const[]);

SS_API int __wrap_execve(const char *p, char *const a[], char *const e[])
{
    return SS_EXEC(__real_execve(p, a, e));
}

SS_API int __wrap_execv(const char *p, char *const a[]) { return SS_EXEC(__real_execv(p, a)); }

SS_API int __wrap_execvp(const char *f, char *const a[]) { return SS_EXEC(__real_execvp(f, a)); }

SS_API int __wrap_execvpe(const char *f, char *const a[], char *const e[])
{
    return SS_EXEC(__real_execvpe(f, a, e));
}

SS_API int __wrap_fexecve(int fd, char *const a[], char *const e[])
{
    return SS_EXEC(__real_fexecve(fd, a, e));
}

/* The list forms: their arguments (up to the NULL) become an argv, as glibc does. */
#define SS_ARGV(argv, arg0, ap, last)                                                            \
    size_t n_ = 1;                                                                               \
    va_start(ap, arg0);                                                                          \
    while (va_arg(ap, const char *) != NULL)                                                     \
        n_++;                                                                                    \
    va_end(ap);                                                                                  \
    char *argv[n_ + 1];                                                                          \
    argv[0] = (char *)arg0;                                                                      \
    va_start(ap, arg0);                                                                          \
    for (size_t i_ = 1; i_ <= n_; i_++)                                                          \
        argv[i_] = va_arg(ap, char *);                                                           \
    last;                                                                                        \
    va_end(ap)

SS_API int __wrap_execl(const char *p, const char *arg0, ...)
{
    va_list ap;
    SS_ARGV(argv, arg0, ap, (void)0);
    return SS_EXEC(__real_execv(p, argv));
}

SS_API int __wrap_execlp(const char *f, const char *arg0, ...)
{
    va_list ap;
    SS_ARGV(argv, arg0, ap, (void)0);
    return SS_EXEC(__real_execvp(f, argv));
}

SS_API int __wrap_execle(const char *p, const char *arg0, ...)
{
    va_list ap;
    char *const *envp;
    SS_ARGV(argv, arg0, ap, envp = va_arg(ap, char *const *));
    return SS_EXEC(__real_execve(p, argv, envp));
}

extern int __real_pthread_create(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

SS_API int __wrap_pthread_create(pthread_t *t, const pthread_attr_t *a, void *(*f)(void *),
                                 void *arg)
{
    simsched_marker(SS_M_THREAD, 0); /* both do nothing when not recording */
    ss_finish();
    return __real_pthread_create(t, a, f, arg);
}
