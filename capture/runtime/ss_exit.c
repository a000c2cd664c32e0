/*
 * ss_exit.c -- the gcc-backend runtime's _exit and _Exit (see ss_rt.c).
 *
 * _exit and _Exit end the process without the atexit handler that finishes
 * the raw stream, which then ends inside a compressed frame.  `simsched cc`
 * links with -Wl,--wrap=_exit,--wrap=_Exit, so the program's own calls come
 * here and finish the stream first, as exit() would.  A forked child has
 * stopped recording, so its _exit writes nothing.
 *
 * This file is the runtime's libsimsched_exit.a, not part of ss_rt.c's
 * object: it is linked only into programs that call _exit or _Exit, and the
 * layout (so the addresses, so the trace) of every other program stays as it
 * is without it.
 */
void ss_finish(void);
extern void __real__exit(int) __attribute__((noreturn));
extern void __real__Exit(int) __attribute__((noreturn));

__attribute__((visibility("default"), noreturn)) void __wrap__exit(int status)
{
    ss_finish();
    __real__exit(status);
}

__attribute__((visibility("default"), noreturn)) void __wrap__Exit(int status)
{
    ss_finish();
    __real__Exit(status);
}
