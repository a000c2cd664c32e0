/*
 * ss_rt.c -- simsched's gcc-backend runtime.
 *
 * `simsched cc` compiles a program with `-fsanitize=thread
 * -fsanitize-coverage=trace-pc` and links it against this file (packed as a
 * `libtsan.a` placed ahead of the system one), not against libtsan.  The
 * compiler then calls, for every load and store of the program's code, one of
 * the __tsan_* entry points below, and at the start of every basic block
 * __sanitizer_cov_trace_pc().  The runtime turns these calls into the raw
 * stream of simsched_raw.h:
 *
 *   __tsan_readN/writeN        one SS_REC_REF record (address, size, write)
 *   __tsan_read/write_range    SS_REC_RANGE records (struct copies)
 *   memcpy/memmove/memset...   SS_REC_RANGE records; the program's calls are
 *   strlen/strcmp/strcpy...    redirected here by `-Wl,--wrap=memcpy` etc.
 *                              (only calls from the program's own objects;
 *                              the C library's internal copies are not seen)
 *   simsched_marker()          SS_REC_MARKER records (overrides the weak
 *                              definition of simsched.h)
 *   _exit/_Exit                finish the stream first (ss_exit.c)
 *
 * Instruction gaps are *estimated*: each basic block entered adds its
 * number of non-memory instructions to the gap of the next reference; the
 * header record says the gaps are not exact.  The per-block counts come from
 * PROGRAM.ssbb, a table `simsched cc` writes beside the program from its
 * disassembly (simsched/capture/bbtable.py), indexed by the return address
 * of the block's __sanitizer_cov_trace_pc call relative to
 * __executable_start.  Blocks outside the table (or every block, without a
 * table) add `SIMSCHED_BB_INSNS` (default SS_DEFAULT_BB_INSNS).  That default is
 * the median, over simsched's benchmark programs, of the
 * valgrind backend's exact instruction count less the gcc backend's
 * references, divided by the basic blocks entered (docs/capture.md; it ranges
 * from 2.5 to 11 by program, so per-strand estimates can be off by 2x).
 *
 * Records are collected in a buffer and, when it fills, compressed with
 * streaming zstd (when the output name ends in ".zst" and the runtime was
 * built with libzstd) and written to the file named by SIMSCHED_RAW_OUT.  If
 * SIMSCHED_RAW_OUT is unset the program runs without recording.
 *
 * The runtime is not instrumented itself and never calls the wrapped
 * functions (it uses __real_memcpy where it copies), so it records only the
 * program.  The program is assumed to run serially (one thread), as capture
 * requires.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

#include "simsched_raw.h"

#ifndef SS_NO_ZSTD
#include <zstd.h>
#endif

#define SS_API __attribute__((visibility("default")))
#define SS_HOT __attribute__((hot))
#define SS_LIKELY(x) __builtin_expect(!!(x), 1)
#define SS_UNLIKELY(x) __builtin_expect(!!(x), 0)

#define SS_BUF_RECS SS_BLOCK_MAX_RECS /* records per block */
/* The instrumented access that called the entry point (ss_ref is inlined
 * into each entry point, so this is the program's call site). */
#define SS_PC __builtin_return_address(0)
#define SS_DEFAULT_BB_INSNS 5u
/* The static per-block counts, scaled by 9/16: the instrumented code's
 * blocks hold more instructions than the native ones (calls break loops the
 * compiler would otherwise vectorise or keep in registers); 9/16 is the
 * median ratio, over the benchmark programs, of the valgrind backend's exact
 * non-memory instructions to the unscaled table estimate. */
#define SS_BB_SCALE16 9u

/* simsched looks for this string to tell a `simsched cc` binary. */
__attribute__((used)) static const char ss_ident[] = "simsched-gcc-runtime-v1";

/* The block being filled (version-2 stream, simsched_raw.h): one entry of
 * each column per record, escaped records and wide gaps on the side. */
/* Static (not malloc'ed): the program's heap layout stays as it is natively,
 * and the hot path addresses the columns without loading pointers. */
static uint64_t ss_delta[SS_BUF_RECS]; /* zigzag address deltas */
static uint8_t ss_meta[SS_BUF_RECS], ss_slotc[SS_BUF_RECS], ss_gapc[SS_BUF_RECS];
static ss_raw_rec ss_esc[SS_BUF_RECS];
static uint32_t ss_wide[SS_BUF_RECS];
/* the encoded block: header, 3 byte columns, at most 8 planes, escapes, wide gaps */
static uint8_t ss_pack[sizeof(ss_raw_block) + SS_BUF_RECS * (3 + 8 + sizeof(ss_raw_rec) + 4)];
static uint32_t ss_n, ss_ne, ss_nw;
static uint64_t ss_last[SS_BLOCK_SLOTS]; /* the address predictors */
/* Estimated non-memory instructions not yet written, in sixteenths so that
 * the scaled per-block counts add up without rounding each block. */
static uint64_t ss_pending;
static uint64_t ss_bb_insns = SS_DEFAULT_BB_INSNS * 16; /* sixteenths per block */
static const uint8_t *ss_bb_tab; /* per-block counts (PROGRAM.ssbb), or NULL */
static uint64_t ss_bb_len;
extern char __executable_start[]; /* the linker's: where the program is loaded */
extern char etext[];              /* ... and where its code ends */

/* ---- how much of the run is uninstrumented code ------------------------
 * Library code (libm's sin, the C library's printf or qsort, ...) is not
 * instrumented, so its loads and stores are missing from the trace.  While
 * recording, a profiling timer samples the main thread's program counter
 * every SS_SAMPLE_US of CPU time: a sample in the program's own code (or in
 * this runtime, or in a wrapped memcpy, whose ranges are recorded) counts as
 * instrumented, one anywhere else as uninstrumented.  The counts go to
 * $SIMSCHED_STATS_OUT at exit, and `simsched capture` warns when the
 * uninstrumented share is large. */
#define SS_SAMPLE_US 1000
static volatile sig_atomic_t ss_in_rt; /* in a wrapper or writing the stream */
static volatile uint64_t ss_samples, ss_samples_out;
static pid_t ss_main_tid;
static char ss_stats_path[4096];

extern void *__real_memset(void *, int, size_t);
/* The runtime's own string calls go to the real functions (--wrap redirects
 * every object's calls, this one's too, and the wrappers would record them). */
extern size_t __real_strlen(const char *);
extern char *__real_strcpy(char *, const char *);
extern char *__real_strncpy(char *, const char *, size_t);
extern int __real_strcmp(const char *, const char *);
extern int __real_strncmp(const char *, const char *, size_t);

static void ss_on_sample(int sig, siginfo_t *si, void *ctx)
{
    (void)sig;
    (void)si;
    if ((pid_t)syscall(SYS_gettid) != ss_main_tid)
        return; /* e.g. zstd's compression thread */
    uintptr_t pc = 0;
#if defined(__x86_64__)
    pc = (uintptr_t)((ucontext_t *)ctx)->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
    pc = (uintptr_t)((ucontext_t *)ctx)->uc_mcontext.pc;
#else
    (void)ctx;
    return;
#endif
    ss_samples++;
    if (!ss_in_rt && (pc < (uintptr_t)__executable_start || pc >= (uintptr_t)etext))
        ss_samples_out++;
}

static void ss_start_sampling(void)
{
    const char *path = getenv("SIMSCHED_STATS_OUT");
    if (!path || !*path || __real_strlen(path) >= sizeof ss_stats_path)
        return;
    __real_strcpy(ss_stats_path, path);
    unsetenv("SIMSCHED_STATS_OUT");
    ss_main_tid = (pid_t)syscall(SYS_gettid);
    struct sigaction sa;
    __real_memset(&sa, 0, sizeof sa); /* (memset itself would be recorded: --wrap) */
    sa.sa_sigaction = ss_on_sample;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGPROF, &sa, NULL) != 0)
        return;
    struct itimerval it = {{0, SS_SAMPLE_US}, {0, SS_SAMPLE_US}};
    setitimer(ITIMER_PROF, &it, NULL);
}

static void ss_stop_sampling(void)
{
    if (!ss_stats_path[0])
        return;
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_PROF, &off, NULL);
    int fd = open(ss_stats_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    ss_stats_path[0] = 0;
    if (fd < 0)
        return;
    char line[128];
    int n = snprintf(line, sizeof line, "simsched: samples: %llu\nsimsched: uninstrumented samples: %llu\n",
                     (unsigned long long)ss_samples, (unsigned long long)ss_samples_out);
    if (n > 0 && write(fd, line, (size_t)n) < 0)
        (void)0;
    close(fd);
}
static int ss_active;       /* 1 while recording */
static int ss_initialised;
static int ss_fd = -1;
static int ss_failed;
static uint64_t ss_total_recs;

#ifndef SS_NO_ZSTD
static ZSTD_CCtx *ss_zctx;
static void *ss_zout;
static size_t ss_zout_size;
#endif

extern void *__real_memcpy(void *, const void *, size_t);
extern void *__real_memmove(void *, const void *, size_t);
extern void *__real_memset(void *, int, size_t);

static void ss_die(const char *what)
{
    /* Stop recording, tell the user once; the run goes on so the program's
     * own exit status is preserved, and simsched reports the broken stream. */
    if (!ss_failed) {
        ss_failed = 1;
        fprintf(stderr, "simsched runtime: %s: %s\n", what, strerror(errno));
    }
    ss_active = 0;
}

static void ss_write_all(const void *data, size_t len)
{
    const char *p = (const char *)data;
    while (len > 0) {
        ssize_t w = write(ss_fd, p, len);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            ss_die("cannot write the raw stream");
            return;
        }
        p += w;
        len -= (size_t)w;
    }
}

#ifndef SS_NO_ZSTD
static void ss_compress(const void *data, size_t len, int end)
{
    ZSTD_inBuffer in = {data, len, 0};
    for (;;) {
        ZSTD_outBuffer out = {ss_zout, ss_zout_size, 0};
        size_t left = ZSTD_compressStream2(ss_zctx, &out, &in, end ? ZSTD_e_end : ZSTD_e_continue);
        if (ZSTD_isError(left)) {
            errno = EIO;
            ss_die(ZSTD_getErrorName(left));
            return;
        }
        if (out.pos)
            ss_write_all(ss_zout, out.pos);
        if (end ? left == 0 : in.pos == in.size)
            return;
    }
}
#endif

/* Append bytes to the output (compressed or plain); end: finish the stream. */
static void ss_out_(const void *data, size_t len, int end);

/* Writing the stream (compressing it, a write system call) is the runtime's own work:
 * the sampler leaves it out. */
static void ss_out(const void *data, size_t len, int end)
{
    sig_atomic_t was = ss_in_rt;
    ss_in_rt = 1;
    ss_out_(data, len, end);
    ss_in_rt = was;
}

static void ss_out_(const void *data, size_t len, int end)
{
    if (ss_fd < 0)
        return;
#ifndef SS_NO_ZSTD
    if (ss_zctx) {
        ss_compress(data, len, end);
        return;
    }
#endif
    (void)end;
    ss_write_all(data, len);
}

/* Encode the block (simsched_raw.h, version 2) into ss_pack and write it.
 * Out of line: the hot path stays a leaf without register saves. */
static __attribute__((noinline, optimize("O3"))) void ss_flush(int end)
{
    uint32_t n = ss_n;
    if (n > SS_BUF_RECS) {
        /* Every writer checks for a full buffer before writing; this cannot
         * happen unless that invariant is broken, and then the stream would
         * be corrupt: stop loudly instead. */
        fprintf(stderr, "simsched runtime: record buffer overrun (%u records)\n", n);
        abort();
    }
    ss_total_recs += n;
    ss_n = 0;
    if (n == 0 || ss_fd < 0) {
        ss_ne = ss_nw = 0;
        if (end)
            ss_out(NULL, 0, 1);
        return;
    }
    uint64_t any = 0;
    for (uint32_t i = 0; i < n; i++)
        any |= ss_delta[i];
    uint32_t planes = 0;
    for (unsigned p = 0; p < 8; p++)
        if ((any >> (8 * p)) & 0xff)
            planes |= 1u << p;
    ss_raw_block h = {SS_BLOCK_MAGIC, n, ss_ne, ss_nw, planes, 0};
    uint8_t *o = ss_pack;
    __real_memcpy(o, &h, sizeof h);
    o += sizeof h;
    __real_memcpy(o, ss_meta, n);
    o += n;
    __real_memcpy(o, ss_slotc, n);
    o += n;
    __real_memcpy(o, ss_gapc, n);
    o += n;
    for (unsigned p = 0; p < 8; p++) {
        if (!(planes >> p & 1))
            continue;
        const unsigned sh = 8 * p;
        for (uint32_t i = 0; i < n; i++)
            o[i] = (uint8_t)(ss_delta[i] >> sh);
        o += n;
    }
    __real_memcpy(o, ss_esc, (size_t)ss_ne * sizeof(ss_raw_rec));
    o += (size_t)ss_ne * sizeof(ss_raw_rec);
    __real_memcpy(o, ss_wide, (size_t)ss_nw * sizeof(uint32_t));
    o += (size_t)ss_nw * sizeof(uint32_t);
    ss_ne = ss_nw = 0;
    ss_out(ss_pack, (size_t)(o - ss_pack), end);
}

/* The next record, escaped: the caller fills in the verbatim record. */
static ss_raw_rec *ss_slot(void)
{
    if (SS_UNLIKELY(ss_n >= SS_BUF_RECS))
        ss_flush(0);
    uint32_t i = ss_n++;
    ss_meta[i] = SS_BLOCK_ESCAPE;
    ss_slotc[i] = 0;
    ss_gapc[i] = 0;
    ss_delta[i] = 0;
    return &ss_esc[ss_ne++];
}

/* Write the pending instruction count as GAP records (before a marker or a
 * range, or when it no longer fits a record's 32-bit field). */
static __attribute__((noinline, cold)) void ss_emit_gap(void)
{
    uint64_t left = ss_pending >> 4;
    ss_pending &= 15;
    while (left) {
        uint64_t g = left > 0xffffffffu ? 0xffffffffu : left;
        ss_raw_rec *r = ss_slot();
        r->a = 0;
        r->b = (uint32_t)g;
        r->c = 0;
        r->kind = SS_REC_GAP;
        r->flags = 0;
        left -= g;
    }
}

/* One reference of `size` bytes (1, 2, 4, 8 or 16: the instrumentation's
 * sizes, constant at every call) made by the instrumented access at `pc`. */
static SS_HOT inline void ss_ref(const volatile void *addr, unsigned size, unsigned write,
                                 const void *pc)
{
    if (SS_UNLIKELY(!ss_active))
        return;
    if (SS_UNLIKELY(ss_pending > (0xffffffffull << 4)))
        ss_emit_gap();
    /* Check before writing: ss_slot() may have left the buffer full. */
    if (SS_UNLIKELY(ss_n >= SS_BUF_RECS))
        ss_flush(0);
    uint32_t i = ss_n++;
    uint32_t s = SS_SLOT_OF(pc);
    uint64_t a = (uint64_t)(uintptr_t)addr;
    uint64_t d = a - ss_last[s];
    ss_last[s] = a;
    ss_delta[i] = (d << 1) ^ (uint64_t)((int64_t)d >> 63);
    ss_slotc[i] = (uint8_t)s;
    uint64_t g = ss_pending >> 4;
    ss_pending &= 15;
    if (SS_LIKELY(g < SS_BLOCK_WIDE_GAP)) {
        ss_gapc[i] = (uint8_t)g;
    } else {
        ss_gapc[i] = SS_BLOCK_WIDE_GAP;
        ss_wide[ss_nw++] = (uint32_t)g;
    }
    ss_meta[i] = (uint8_t)(((unsigned)__builtin_ctz(size) << 1) | write);
}

static void ss_range(const volatile void *addr, size_t len, unsigned write)
{
    if (!ss_active || len == 0)
        return;
    ss_emit_gap();
    uint64_t a = (uint64_t)(uintptr_t)addr;
    while (len > 0) {
        /* The length field is 32 bits; keep pieces SS_RANGE_PIECE-aligned. */
        size_t piece = len > 0x80000000u ? 0x80000000u : len;
        ss_raw_rec *r = ss_slot();
        r->a = a;
        r->b = (uint32_t)piece;
        r->c = 0;
        r->kind = SS_REC_RANGE;
        r->flags = (uint8_t)write;
        a += piece;
        len -= piece;
    }
}

/* Not static: ss_exit.c calls it (hidden, like every symbol not marked SS_API). */
void ss_finish(void)
{
    if (!ss_active)
        return;
    ss_stop_sampling();
    ss_emit_gap();
    ss_raw_rec *r = ss_slot();
    r->a = 0;
    r->b = 0;
    r->c = SS_M_END;
    r->kind = SS_REC_MARKER;
    r->flags = 0;
    ss_active = 0;
    ss_flush(1);
    if (ss_fd >= 0 && close(ss_fd) != 0)
        ss_die("cannot close the raw stream");
    ss_fd = -1;
}

/* Map PROGRAM.ssbb ("SSBB0001", u64 length, length bytes) if it is there. */
static void ss_load_bb_table(void)
{
    char path[4096 + 8];
    ssize_t n = readlink("/proc/self/exe", path, 4096);
    if (n <= 0 || n >= 4096)
        return;
    __real_memcpy(path + n, ".ssbb", 6);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char head[16];
    uint64_t len = 0;
    if (read(fd, head, 16) == 16 && __real_memcpy(&len, head + 8, 8) &&
        __real_strncmp(head, "SSBB0001", 8) == 0 && len > 0) {
        void *m = mmap(NULL, (size_t)(len + 16), PROT_READ, MAP_PRIVATE, fd, 0);
        if (m != MAP_FAILED) {
            ss_bb_tab = (const uint8_t *)m + 16;
            ss_bb_len = len;
        }
    }
    close(fd);
}

/* A forked child must neither write its copy of the buffer nor the END
 * marker into the parent's stream: it stops recording. */
static void ss_atfork_child(void)
{
    ss_active = 0;
    ss_n = ss_ne = ss_nw = 0;
    ss_fd = -1;
#ifndef SS_NO_ZSTD
    ss_zctx = NULL;
#endif
}

/* Name the main thread's stack region (glibc: the mapping below the stack
 * top, as long as RLIMIT_STACK allows), so that simsched can give every
 * simulated core a stack of its own.  Only locals whose address is taken
 * reach the stream: the compiler's spills, saved registers and return
 * addresses are not instrumented. */
static uintptr_t ss_stack_hi = 0; /* one past the main stack's highest byte (0: unknown) */

static void ss_put_stack(void)
{
    pthread_attr_t attr;
    void *lo;
    size_t size;
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return;
    if (pthread_attr_getstack(&attr, &lo, &size) == 0 && size > 0) {
        uintptr_t hi = (uintptr_t)lo + size;
        ss_stack_hi = hi;
        if (size > 0xffffffffu) /* the record's b is 32 bits: keep the top */
            size = 0xffffffffu;
        ss_raw_rec *r = ss_slot();
        r->a = (uint64_t)(hi - size);
        r->b = (uint32_t)size;
        r->c = SS_M_STACK;
        r->kind = SS_REC_MARKER;
        r->flags = 0;
    }
    pthread_attr_destroy(&attr);
}

static void ss_init(void)
{
    if (ss_initialised)
        return;
    ss_initialised = 1;
    const char *env = getenv("SIMSCHED_RAW_OUT");
    if (!env || !*env)
        return;
    /* Programs this one runs must not record into (and truncate) the same file. */
    static char out[4096];
    __real_strncpy(out, env, sizeof out - 1);
    unsetenv("SIMSCHED_RAW_OUT");
    pthread_atfork(NULL, NULL, ss_atfork_child);
    const char *bb = getenv("SIMSCHED_BB_INSNS");
    if (bb && *bb)
        ss_bb_insns = strtoull(bb, NULL, 10) * 16;
    ss_load_bb_table();
    ss_fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (ss_fd < 0) {
        ss_die(out);
        return;
    }
    size_t olen = __real_strlen(out);
    if (olen > 4 && __real_strcmp(out + olen - 4, ".zst") == 0) {
#ifndef SS_NO_ZSTD
        const char *lvl = getenv("SIMSCHED_ZSTD_LEVEL");
        ss_zctx = ZSTD_createCCtx();
        ss_zout_size = ZSTD_CStreamOutSize() * 4;
        ss_zout = mmap(NULL, ss_zout_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                       -1, 0);
        if (!ss_zctx || ss_zout == MAP_FAILED) {
            ss_die("cannot set up zstd compression");
            return;
        }
        const char *thr = getenv("SIMSCHED_ZSTD_THREADS");
        ZSTD_CCtx_setParameter(ss_zctx, ZSTD_c_compressionLevel, lvl && *lvl ? atoi(lvl) : 1);
        /* A content checksum: the importer's decompressor then refuses a stream
         * whose bytes changed on disk instead of importing wrong records. */
        ZSTD_CCtx_setParameter(ss_zctx, ZSTD_c_checksumFlag, 1);
        /* Compress in a background thread where libzstd supports it (a no-op
         * error otherwise): the program keeps running while a block compresses. */
        ZSTD_CCtx_setParameter(ss_zctx, ZSTD_c_nbWorkers, thr && *thr ? atoi(thr) : 1);
#else
        errno = ENOTSUP;
        ss_die("this runtime was built without libzstd; name the output without .zst");
        return;
#endif
    }
    ss_active = 1;
    /* The stream header: a version-1 record naming version 2 (column blocks). */
    ss_raw_rec h = {SS_RAW_MAGIC, SS_RAW_VERSION_BLOCKS, SS_BACKEND_GCC, SS_REC_HEADER, 0};
    ss_out(&h, sizeof h, 0); /* flags 0: gaps are estimated */
    ss_put_stack();
    atexit(ss_finish);
    ss_start_sampling();
}

__attribute__((constructor(101))) static void ss_ctor(void) { ss_init(); }
__attribute__((destructor(101))) static void ss_dtor(void) { ss_finish(); }

/* ---- markers ------------------------------------------------------------ */

SS_API __attribute__((noinline)) void simsched_marker(int kind, long arg)
{
    if (!ss_initialised)
        ss_init();
    if (!ss_active)
        return;
    ss_emit_gap();
    /* A SPAWN says how deep the stack is (the stack top less this frame's
     * address), as the valgrind tool's does: it lets the import tell a spawned
     * function's references to its ancestors' stack objects. */
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    uint32_t depth = 0;
    if (kind == SS_M_SPAWN && ss_stack_hi > sp && ss_stack_hi - sp < 0xffffffffu)
        depth = (uint32_t)(ss_stack_hi - sp);
    ss_raw_rec *r = ss_slot();
    r->a = (uint64_t)arg;
    r->b = depth;
    r->c = (uint16_t)kind;
    r->kind = SS_REC_MARKER;
    r->flags = 0;
}

/* ---- compiler instrumentation entry points ------------------------------ */

SS_API void __tsan_init(void) { ss_init(); }
SS_API void __tsan_func_entry(void *pc) { (void)pc; }
SS_API void __tsan_func_exit(void) {}
SS_API void __tsan_ignore_thread_begin(void) {}
SS_API void __tsan_ignore_thread_end(void) {}

SS_API SS_HOT void __sanitizer_cov_trace_pc(void)
{
    uint64_t off = (uint64_t)((uintptr_t)__builtin_return_address(0) -
                              (uintptr_t)__executable_start);
    ss_pending += off < ss_bb_len ? ss_bb_tab[off] * SS_BB_SCALE16 : ss_bb_insns;
}

#define SS_ACCESS(n)                                                                             \
    SS_API SS_HOT void __tsan_read##n(void *p) { ss_ref(p, n, 0, SS_PC); }                              \
    SS_API SS_HOT void __tsan_write##n(void *p) { ss_ref(p, n, 1, SS_PC); }                             \
    SS_API SS_HOT void __tsan_unaligned_read##n(void *p) { ss_ref(p, n, 0, SS_PC); }                    \
    SS_API SS_HOT void __tsan_unaligned_write##n(void *p) { ss_ref(p, n, 1, SS_PC); }                   \
    SS_API SS_HOT void __tsan_volatile_read##n(void *p) { ss_ref(p, n, 0, SS_PC); }                     \
    SS_API SS_HOT void __tsan_volatile_write##n(void *p) { ss_ref(p, n, 1, SS_PC); }                    \
    SS_API SS_HOT void __tsan_unaligned_volatile_read##n(void *p) { ss_ref(p, n, 0, SS_PC); }           \
    SS_API SS_HOT void __tsan_unaligned_volatile_write##n(void *p) { ss_ref(p, n, 1, SS_PC); }          \
    SS_API void __tsan_read##n##_pc(void *p, void *pc)                                           \
    {                                                                                            \
        (void)pc;                                                                                \
        ss_ref(p, n, 0, SS_PC);                                                                         \
    }                                                                                            \
    SS_API void __tsan_write##n##_pc(void *p, void *pc)                                          \
    {                                                                                            \
        (void)pc;                                                                                \
        ss_ref(p, n, 1, SS_PC);                                                                         \
    }
SS_ACCESS(1)
SS_ACCESS(2)
SS_ACCESS(4)
SS_ACCESS(8)
SS_ACCESS(16)

SS_API void __tsan_read_range(void *p, unsigned long size) { ss_range(p, size, 0); }
SS_API void __tsan_write_range(void *p, unsigned long size) { ss_range(p, size, 1); }
SS_API void __tsan_vptr_read(void **p) { ss_ref(p, sizeof(void *), 0, SS_PC); }
SS_API void __tsan_vptr_update(void **p, void *v)
{
    (void)v;
    ss_ref(p, sizeof(void *), 1, SS_PC);
}

/* Atomics: the program runs serially, so each operation is performed with the
 * matching GCC builtin (sequentially consistent) and recorded as a read and,
 * for read-modify-write operations, a write of the same location. */
#define SS_ATOMIC(n, T)                                                                          \
    SS_API T __tsan_atomic##n##_load(const volatile T *a, int mo)                                \
    {                                                                                            \
        (void)mo;                                                                                \
        ss_ref(a, n / 8, 0, SS_PC);                                                                     \
        return __atomic_load_n(a, __ATOMIC_SEQ_CST);                                             \
    }                                                                                            \
    SS_API void __tsan_atomic##n##_store(volatile T *a, T v, int mo)                             \
    {                                                                                            \
        (void)mo;                                                                                \
        ss_ref(a, n / 8, 1, SS_PC);                                                                     \
        __atomic_store_n(a, v, __ATOMIC_SEQ_CST);                                                \
    }                                                                                            \
    SS_ATOMIC_RMW(n, T, exchange)                                                                \
    SS_ATOMIC_RMW(n, T, fetch_add)                                                               \
    SS_ATOMIC_RMW(n, T, fetch_sub)                                                               \
    SS_ATOMIC_RMW(n, T, fetch_and)                                                               \
    SS_ATOMIC_RMW(n, T, fetch_or)                                                                \
    SS_ATOMIC_RMW(n, T, fetch_xor)                                                               \
    SS_ATOMIC_RMW(n, T, fetch_nand)                                                              \
    SS_API int __tsan_atomic##n##_compare_exchange_strong(volatile T *a, T *c, T v, int mo,      \
                                                          int fmo)                               \
    {                                                                                            \
        (void)mo;                                                                                \
        (void)fmo;                                                                               \
        ss_ref(a, n / 8, 0, SS_PC);                                                                     \
        ss_ref(a, n / 8, 1, SS_PC);                                                                     \
        return __atomic_compare_exchange_n(a, c, v, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);      \
    }                                                                                            \
    SS_API int __tsan_atomic##n##_compare_exchange_weak(volatile T *a, T *c, T v, int mo,        \
                                                        int fmo)                                 \
    {                                                                                            \
        return __tsan_atomic##n##_compare_exchange_strong(a, c, v, mo, fmo);                     \
    }                                                                                            \
    SS_API T __tsan_atomic##n##_compare_exchange_val(volatile T *a, T c, T v, int mo, int fmo)   \
    {                                                                                            \
        __tsan_atomic##n##_compare_exchange_strong(a, &c, v, mo, fmo);                           \
        return c;                                                                                \
    }
#define SS_ATOMIC_RMW(n, T, op)                                                                  \
    SS_API T __tsan_atomic##n##_##op(volatile T *a, T v, int mo)                                 \
    {                                                                                            \
        (void)mo;                                                                                \
        ss_ref(a, n / 8, 0, SS_PC);                                                                     \
        ss_ref(a, n / 8, 1, SS_PC);                                                                     \
        return __atomic_##op(a, v, __ATOMIC_SEQ_CST);                                            \
    }
#define __atomic_exchange __atomic_exchange_n
SS_ATOMIC(8, uint8_t)
SS_ATOMIC(16, uint16_t)
SS_ATOMIC(32, uint32_t)
SS_ATOMIC(64, uint64_t)
#undef __atomic_exchange

SS_API void __tsan_atomic_thread_fence(int mo) { (void)mo; }
SS_API void __tsan_atomic_signal_fence(int mo) { (void)mo; }

/* ---- block operations (-Wl,--wrap=...) ---------------------------------- */

SS_API void *__wrap_memcpy(void *d, const void *s, size_t n)
{
    ss_range(s, n, 0);
    ss_range(d, n, 1);
    ss_in_rt = 1; /* the copy itself is recorded as ranges */
    void *r = __real_memcpy(d, s, n);
    ss_in_rt = 0;
    return r;
}

SS_API void *__wrap_memmove(void *d, const void *s, size_t n)
{
    ss_range(s, n, 0);
    ss_range(d, n, 1);
    ss_in_rt = 1; /* the copy itself is recorded as ranges */
    void *r = __real_memmove(d, s, n);
    ss_in_rt = 0;
    return r;
}

SS_API void *__wrap_memset(void *d, int c, size_t n)
{
    ss_range(d, n, 1);
    ss_in_rt = 1; /* the copy itself is recorded as ranges */
    void *r = __real_memset(d, c, n);
    ss_in_rt = 0;
    return r;
}

SS_API void *__wrap___memcpy_chk(void *d, const void *s, size_t n, size_t dlen)
{
    if (n > dlen)
        abort(); /* what the fortified function does on overflow */
    return __wrap_memcpy(d, s, n);
}

SS_API void *__wrap___memmove_chk(void *d, const void *s, size_t n, size_t dlen)
{
    if (n > dlen)
        abort();
    return __wrap_memmove(d, s, n);
}

SS_API void *__wrap___memset_chk(void *d, int c, size_t n, size_t dlen)
{
    if (n > dlen)
        abort();
    return __wrap_memset(d, c, n);
}

/* Call a C library function as part of a wrapper: its samples count as
 * instrumented (the wrapper records its references). */
#define SS_CALL(f, ...)                                                                          \
    ({                                                                                           \
        ss_in_rt = 1;                                                                            \
        __typeof__(f(__VA_ARGS__)) ss_r_ = f(__VA_ARGS__);                                       \
        ss_in_rt = 0;                                                                            \
        ss_r_;                                                                                   \
    })

/* String and comparison functions: the bytes the C semantics make them read
 * (up to and including the terminating NUL, or to the first difference) and
 * write.  The C library reads whole aligned words around them, which only
 * matters within a cache line. */

static size_t ss_cmp_len(const unsigned char *a, const unsigned char *b, size_t n, int str)
{
    size_t k = 0;
    while (k < n && a[k] == b[k] && !(str && a[k] == 0))
        k++;
    return k < n ? k + 1 : n;
}

SS_API size_t __wrap_strlen(const char *s)
{
    size_t n = SS_CALL(__real_strlen, s);
    ss_range(s, n + 1, 0);
    return n;
}

extern size_t __real_strnlen(const char *, size_t);
SS_API size_t __wrap_strnlen(const char *s, size_t max)
{
    size_t n = SS_CALL(__real_strnlen, s, max);
    ss_range(s, n < max ? n + 1 : max, 0);
    return n;
}

SS_API int __wrap_strcmp(const char *a, const char *b)
{
    size_t k = ss_cmp_len((const unsigned char *)a, (const unsigned char *)b, SIZE_MAX, 1);
    ss_range(a, k, 0);
    ss_range(b, k, 0);
    return SS_CALL(__real_strcmp, a, b);
}

SS_API int __wrap_strncmp(const char *a, const char *b, size_t n)
{
    size_t k = ss_cmp_len((const unsigned char *)a, (const unsigned char *)b, n, 1);
    ss_range(a, k, 0);
    ss_range(b, k, 0);
    return SS_CALL(__real_strncmp, a, b, n);
}

extern int __real_memcmp(const void *, const void *, size_t);
SS_API int __wrap_memcmp(const void *a, const void *b, size_t n)
{
    size_t k = ss_cmp_len(a, b, n, 0);
    ss_range(a, k, 0);
    ss_range(b, k, 0);
    return SS_CALL(__real_memcmp, a, b, n);
}

SS_API char *__wrap_strcpy(char *d, const char *s)
{
    size_t n = SS_CALL(__real_strlen, s) + 1;
    ss_range(s, n, 0);
    ss_range(d, n, 1);
    SS_CALL(__real_memcpy, d, s, n);
    return d;
}

SS_API char *__wrap_strncpy(char *d, const char *s, size_t n)
{
    size_t k = SS_CALL(__real_strnlen, s, n);
    ss_range(s, k < n ? k + 1 : n, 0);
    ss_range(d, n, 1); /* strncpy pads the rest of d with NULs */
    return SS_CALL(__real_strncpy, d, s, n);
}

extern char *__real_strcat(char *, const char *);
SS_API char *__wrap_strcat(char *d, const char *s)
{
    size_t dn = SS_CALL(__real_strlen, d), n = SS_CALL(__real_strlen, s) + 1;
    ss_range(d, dn + 1, 0);
    ss_range(s, n, 0);
    ss_range(d + dn, n, 1);
    return SS_CALL(__real_strcat, d, s);
}

extern char *__real_strchr(const char *, int);
SS_API char *__wrap_strchr(const char *s, int c)
{
    char *r = SS_CALL(__real_strchr, s, c);
    ss_range(s, r ? (size_t)(r - s) + 1 : SS_CALL(__real_strlen, s) + 1, 0);
    return r;
}

extern void *__real_memchr(const void *, int, size_t);
SS_API void *__wrap_memchr(const void *s, int c, size_t n)
{
    void *r = SS_CALL(__real_memchr, s, c, n);
    ss_range(s, r ? (size_t)((const char *)r - (const char *)s) + 1 : n, 0);
    return r;
}

SS_API char *__wrap___strcpy_chk(char *d, const char *s, size_t dlen)
{
    if (SS_CALL(__real_strlen, s) + 1 > dlen)
        abort(); /* what the fortified function does on overflow */
    return __wrap_strcpy(d, s);
}

SS_API char *__wrap___strncpy_chk(char *d, const char *s, size_t n, size_t dlen)
{
    if (n > dlen)
        abort();
    return __wrap_strncpy(d, s, n);
}

SS_API char *__wrap___strcat_chk(char *d, const char *s, size_t dlen)
{
    if (SS_CALL(__real_strlen, d) + SS_CALL(__real_strlen, s) + 1 > dlen)
        abort();
    return __wrap_strcat(d, s);
}
