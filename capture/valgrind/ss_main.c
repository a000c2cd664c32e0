/*
 * ss_main.c -- "simsched", a Valgrind tool that writes simsched's raw capture
 * stream (capture/simsched_raw.h) with exact instruction gaps.
 *
 * Copyright (C) 2026 the simsched authors.
 *
 * This program is free software; you can redistribute it and/or modify it
 * under the terms of the GNU General Public License as published by the Free
 * Software Foundation; either version 2 of the License, or (at your option)
 * any later version.  See the LICENSE file in this folder.
 *
 * Design.
 *   Counting.  Every guest instruction (IMark) adds one to ss_insns, the
 *   number of instructions executed so far.  The additions are batched per
 *   superblock: the number of IMarks since the last update is passed to the
 *   next memory-access helper as an argument (the helper adds it), and is
 *   added inline before every side exit and at the end of the superblock, so
 *   ss_insns is exact whenever a helper or a client request runs.
 *   References.  For every load, store, read-modify-write (dirty helpers,
 *   CAS, LL/SC) a helper writes an SS_REC_REF record whose gap is the number
 *   of instructions since the instruction of the previous record, not
 *   counting the referencing instruction itself (0 for the second reference
 *   of one instruction).
 *   Markers.  simsched.h's simsched_marker() issues a client request
 *   ('S','S' tool base + 1); the handler writes the pending instructions as
 *   a GAP record and the marker.  The instructions and references of
 *   simsched_marker() itself are left out of the stream (found by function
 *   name at translation time); they still count in the run's total, which the
 *   tool prints at exit so that it can be compared with lackey's count.
 *   Stack.  The first client request (before its marker) and the end of the
 *   run, if no request came, write an SS_M_STACK marker naming the main
 *   thread's stack region (valgrind's client stack: its highest byte and its
 *   size), so that simsched can give every simulated core a stack of its own.
 *   Output.  Records are buffered and written to --raw-out=FILE (usually a
 *   FIFO that simsched compresses).  The header record says the gaps are
 *   exact.
 */
#include "pub_tool_basics.h"
#include "pub_tool_clreq.h"
#include "pub_tool_debuginfo.h"
#include "pub_tool_libcassert.h"
#include "pub_tool_libcbase.h"
#include "pub_tool_libcfile.h"
#include "pub_tool_libcprint.h"
#include "pub_tool_libcproc.h"
#include "pub_tool_machine.h"
#include "pub_tool_options.h"
#include "pub_tool_threadstate.h"
#include "pub_tool_tooliface.h"
#include "pub_tool_vki.h"

#include "simsched_raw.h"

#define SS_BUF_RECS 65536
#define SS_MARKER_FN "simsched_marker"

static const HChar *ss_out_name = NULL;
static Int ss_fd = -1;
static ss_raw_rec ss_buf[SS_BUF_RECS];
static UInt ss_n = 0;

static ULong ss_insns = 0;    /* instructions executed outside the marker function */
static ULong ss_excluded = 0; /* instructions executed inside the marker function */
static ULong ss_last = 0;     /* ss_insns when the last record was written */
static ULong ss_refs = 0;
static ULong ss_markers = 0;
static Bool ss_stack_done = False; /* the SS_M_STACK marker is written */
static Addr ss_stack_hi = 0;        /* one past the stack's highest byte (0: unknown) */
static Bool ss_child = False; /* in a forked child: record nothing */

/* ---- output ------------------------------------------------------------- */

static void ss_flush(void)
{
    const HChar *p = (const HChar *)ss_buf;
    if (ss_child) {
        ss_n = 0;
        return;
    }
    Int left = (Int)(ss_n * sizeof(ss_raw_rec));
    while (left > 0) {
        Int w = VG_(write)(ss_fd, p, left);
        if (w <= 0) {
            VG_(umsg)("simsched: cannot write the raw stream to %s\n", ss_out_name);
            VG_(exit)(3);
        }
        p += w;
        left -= w;
    }
    ss_n = 0;
}

static inline ss_raw_rec *ss_slot(void)
{
    if (ss_n == SS_BUF_RECS)
        ss_flush();
    return &ss_buf[ss_n++];
}

static void ss_put(ULong a, UInt b, UShort c, UChar kind, UChar flags)
{
    ss_raw_rec *r = ss_slot();
    r->a = a;
    r->b = b;
    r->c = c;
    r->kind = kind;
    r->flags = flags;
}

/* Write all instructions not yet accounted for as GAP records. */
static void ss_put_gap(void)
{
    ULong g = ss_insns - ss_last;
    while (g > 0) {
        UInt piece = g > 0xffffffffULL ? 0xffffffffU : (UInt)g;
        ss_put(0, piece, 0, SS_REC_GAP, 0);
        g -= piece;
    }
    ss_last = ss_insns;
}

static inline void ss_ref(Addr addr, UWord size, UWord k, UChar write)
{
    ULong gap = 0;
    ss_insns += k;
    /* The referencing instruction is ss_insns; it is not part of the gap, and
     * a second reference of the same instruction has gap 0. */
    if (ss_insns > ss_last)
        gap = ss_insns - ss_last - 1;
    while (gap > 0xffffffffULL) { /* what does not fit the 32-bit field */
        ss_put(0, 0xffffffffU, 0, SS_REC_GAP, 0);
        gap -= 0xffffffffULL;
    }
    ss_last = ss_insns;
    ss_refs++;
    ss_put((ULong)addr, (UInt)gap, (UShort)size, SS_REC_REF, write);
}

static VG_REGPARM(3) void ss_load(Addr addr, UWord size, UWord k) { ss_ref(addr, size, k, 0); }
static VG_REGPARM(3) void ss_store(Addr addr, UWord size, UWord k) { ss_ref(addr, size, k, 1); }
static VG_REGPARM(3) void ss_modify(Addr addr, UWord size, UWord k)
{
    ss_ref(addr, size, k, 0);
    ss_ref(addr, size, 0, 1);
}

/* ---- instrumentation ---------------------------------------------------- */

/* Add n to a 64-bit counter in tool memory, inline. */
static void ss_add_counter(IRSB *sb, ULong *ctr, ULong n)
{
    IRTemp t1, t2;
    IRExpr *where;
    if (n == 0)
        return;
    t1 = newIRTemp(sb->tyenv, Ity_I64);
    t2 = newIRTemp(sb->tyenv, Ity_I64);
    where = mkIRExpr_HWord((HWord)ctr);
    addStmtToIRSB(sb, IRStmt_WrTmp(t1, IRExpr_Load(Iend_LE, Ity_I64, where)));
    addStmtToIRSB(sb, IRStmt_WrTmp(t2, IRExpr_Binop(Iop_Add64, IRExpr_RdTmp(t1),
                                                    IRExpr_Const(IRConst_U64(n)))));
    addStmtToIRSB(sb, IRStmt_Store(Iend_LE, mkIRExpr_HWord((HWord)ctr), IRExpr_RdTmp(t2)));
}

typedef struct {
    IRSB *sb;
    ULong pending;  /* counted IMarks not yet added to ss_insns */
    ULong excluded; /* marker-function IMarks not yet added to ss_excluded */
} ss_state;

static void ss_flush_counts(ss_state *st)
{
    ss_add_counter(st->sb, &ss_insns, st->pending);
    ss_add_counter(st->sb, &ss_excluded, st->excluded);
    st->pending = 0;
    st->excluded = 0;
}

/* One access: call the helper (which also adds the pending IMarks). */
static void ss_access(ss_state *st, IRExpr *addr, Int size, Int how, IRExpr *guard)
{
    const HChar *name;
    void *fn;
    IRDirty *di;
    if (how == 0) {
        name = "ss_load";
        fn = (void *)&ss_load;
    } else if (how == 1) {
        name = "ss_store";
        fn = (void *)&ss_store;
    } else {
        name = "ss_modify";
        fn = (void *)&ss_modify;
    }
    if (guard) {
        /* A guarded access may not happen: add the IMarks inline so they
         * count either way, and pass none to the helper. */
        ss_add_counter(st->sb, &ss_insns, st->pending);
        st->pending = 0;
    }
    di = unsafeIRDirty_0_N(3, name, VG_(fnptr_to_fnentry)(fn),
                           mkIRExprVec_3(addr, mkIRExpr_HWord((HWord)size),
                                         mkIRExpr_HWord((HWord)st->pending)));
    if (guard)
        di->guard = guard;
    st->pending = 0;
    addStmtToIRSB(st->sb, IRStmt_Dirty(di));
}

static Bool ss_is_marker_fn(Addr a)
{
    const HChar *fn = NULL;
    if (!VG_(get_fnname)(VG_(current_DiEpoch)(), a, &fn) || fn == NULL)
        return False;
    return VG_(strcmp)(fn, SS_MARKER_FN) == 0;
}

static IRSB *ss_instrument(VgCallbackClosure *closure, IRSB *sbIn, const VexGuestLayout *layout,
                           const VexGuestExtents *vge, const VexArchInfo *archinfo_host,
                           IRType gWordTy, IRType hWordTy)
{
    Int i;
    Bool skip = False;
    ss_state st;
    IRTypeEnv *tyenv = sbIn->tyenv;
    IRSB *sbOut;
    (void)closure;
    (void)layout;
    (void)vge;
    (void)archinfo_host;

    if (gWordTy != hWordTy)
        VG_(tool_panic)("simsched: host/guest word size mismatch");

    sbOut = deepCopyIRSBExceptStmts(sbIn);
    st.sb = sbOut;
    st.pending = 0;
    st.excluded = 0;

    /* Copy the statements before the first IMark (preamble) unchanged. */
    i = 0;
    while (i < sbIn->stmts_used && sbIn->stmts[i]->tag != Ist_IMark) {
        addStmtToIRSB(sbOut, sbIn->stmts[i]);
        i++;
    }

    for (; i < sbIn->stmts_used; i++) {
        IRStmt *s = sbIn->stmts[i];
        if (!s || s->tag == Ist_NoOp)
            continue;
        switch (s->tag) {
        case Ist_IMark:
            skip = ss_is_marker_fn((Addr)s->Ist.IMark.addr);
            if (skip)
                st.excluded++;
            else
                st.pending++;
            addStmtToIRSB(sbOut, s);
            break;
        case Ist_WrTmp:
            if (!skip && s->Ist.WrTmp.data->tag == Iex_Load) {
                IRExpr *ld = s->Ist.WrTmp.data;
                ss_access(&st, ld->Iex.Load.addr, sizeofIRType(ld->Iex.Load.ty), 0, NULL);
            }
            addStmtToIRSB(sbOut, s);
            break;
        case Ist_Store:
            if (!skip) {
                IRExpr *data = s->Ist.Store.data;
                ss_access(&st, s->Ist.Store.addr, sizeofIRType(typeOfIRExpr(tyenv, data)), 1,
                          NULL);
            }
            addStmtToIRSB(sbOut, s);
            break;
        case Ist_StoreG:
            if (!skip) {
                IRStoreG *sg = s->Ist.StoreG.details;
                ss_access(&st, sg->addr, sizeofIRType(typeOfIRExpr(tyenv, sg->data)), 1,
                          sg->guard);
            }
            addStmtToIRSB(sbOut, s);
            break;
        case Ist_LoadG:
            if (!skip) {
                IRLoadG *lg = s->Ist.LoadG.details;
                IRType ty = Ity_INVALID, ty_wide = Ity_INVALID;
                typeOfIRLoadGOp(lg->cvt, &ty_wide, &ty);
                ss_access(&st, lg->addr, sizeofIRType(ty), 0, lg->guard);
            }
            addStmtToIRSB(sbOut, s);
            break;
        case Ist_Dirty:
            if (!skip) {
                IRDirty *d = s->Ist.Dirty.details;
                if (d->mFx != Ifx_None) {
                    Int how = d->mFx == Ifx_Read ? 0 : d->mFx == Ifx_Write ? 1 : 2;
                    ss_access(&st, d->mAddr, d->mSize, how, NULL);
                }
            }
            addStmtToIRSB(sbOut, s);
            break;
        case Ist_CAS:
            if (!skip) {
                IRCAS *cas = s->Ist.CAS.details;
                Int sz = sizeofIRType(typeOfIRExpr(tyenv, cas->dataLo));
                if (cas->dataHi != NULL)
                    sz *= 2;
                ss_access(&st, cas->addr, sz, 2, NULL);
            }
            addStmtToIRSB(sbOut, s);
            break;
        case Ist_LLSC:
            if (!skip) {
                if (s->Ist.LLSC.storedata == NULL)
                    ss_access(&st, s->Ist.LLSC.addr,
                              sizeofIRType(typeOfIRTemp(tyenv, s->Ist.LLSC.result)), 0, NULL);
                else
                    ss_access(&st, s->Ist.LLSC.addr,
                              sizeofIRType(typeOfIRExpr(tyenv, s->Ist.LLSC.storedata)), 1, NULL);
            }
            addStmtToIRSB(sbOut, s);
            break;
        case Ist_Exit:
            /* If the side exit is taken, the instructions so far must count. */
            ss_flush_counts(&st);
            addStmtToIRSB(sbOut, s);
            break;
        default:
            addStmtToIRSB(sbOut, s);
            break;
        }
    }
    ss_flush_counts(&st);
    return sbOut;
}

/* ---- client requests, options, start and end ---------------------------- */

/* The main thread's stack, noted when it first runs client code: at the end
 * of the run its thread state may already be gone (valgrind asserts when asked
 * about an exited thread), so a run without client requests names it from here. */
static Addr ss_main_hi = 0;
static SizeT ss_main_size = 0;

static void ss_start_client(ThreadId tid, ULong blocks)
{
    (void)blocks;
    if (ss_main_hi != 0)
        return;
    ss_main_hi = VG_(thread_get_stack_max)(tid) + 1;
    ss_main_size = VG_(thread_get_stack_size)(tid);
}

/* Name a stack region (once): bytes hi - size .. hi - 1. */
static void ss_put_stack_region(Addr hi, SizeT size)
{
    if (ss_stack_done)
        return;
    ss_stack_done = True;
    if (size == 0 || size > hi)
        return;
    if (size > 0xffffffffUL)
        size = 0xffffffffUL;
    ss_stack_hi = hi;
    ss_put((ULong)(hi - size), (UInt)size, SS_M_STACK, SS_REC_MARKER, 0);
}

/* ... that of thread tid. */
static void ss_put_stack(ThreadId tid)
{
    if (!ss_stack_done)
        ss_put_stack_region(VG_(thread_get_stack_max)(tid) + 1, VG_(thread_get_stack_size)(tid));
}

static Bool ss_client_request(ThreadId tid, UWord *args, UWord *ret)
{
    if (!VG_IS_TOOL_USERREQ('S', 'S', args[0]))
        return False;
    if (args[0] == VG_USERREQ_TOOL_BASE('S', 'S') + 1) {
        Addr sp = VG_(get_SP)(tid);
        UInt depth = 0;
        ss_put_gap();
        ss_put_stack(tid);
        /* A SPAWN says how deep the stack is (lets simsched tell a spawned
         * function's references to its ancestors' stack objects). */
        if (args[1] == SS_M_SPAWN && ss_stack_hi > sp && ss_stack_hi - sp < 0xffffffffUL)
            depth = (UInt)(ss_stack_hi - sp);
        ss_put((ULong)args[2], depth, (UShort)args[1], SS_REC_MARKER, 0);
        ss_markers++;
        *ret = 0;
        return True;
    }
    return False;
}

static Bool ss_process_option(const HChar *arg)
{
    if VG_STR_CLO (arg, "--raw-out", ss_out_name) {
    } else
        return False;
    return True;
}

static void ss_print_usage(void)
{
    VG_(printf)("    --raw-out=FILE            write the raw capture stream to FILE\n");
}

static void ss_print_debug_usage(void) { VG_(printf)("    (none)\n"); }

static void ss_atfork_child(ThreadId tid);

static void ss_post_clo_init(void)
{
    SysRes sr;
    if (ss_out_name == NULL)
        VG_(fmsg_bad_option)("--raw-out", "simsched: --raw-out=FILE is required\n");
    sr = VG_(open)(ss_out_name, VKI_O_WRONLY | VKI_O_CREAT | VKI_O_TRUNC, 0644);
    if (sr_isError(sr)) {
        VG_(umsg)("simsched: cannot open %s for writing\n", ss_out_name);
        VG_(exit)(3);
    }
    ss_fd = (Int)sr_Res(sr);
    VG_(atfork)(NULL, NULL, ss_atfork_child);
    ss_put(SS_RAW_MAGIC, SS_RAW_VERSION, SS_BACKEND_VALGRIND, SS_REC_HEADER, SS_FLAG_GAPS_EXACT);
}

/* A second thread: the stream is one thread's serial run (valgrind runs the
 * threads one at a time, but their references would be mixed into the
 * strands of the DAG's thread), so say so; the import refuses the stream at
 * this marker.  The main thread's own creation has no parent. */
static void ss_thread_create(ThreadId parent, ThreadId child)
{
    (void)child;
    if (parent != VG_INVALID_THREADID && !ss_child)
        ss_put(0, 0, SS_M_THREAD, SS_REC_MARKER, 0);
}

/* A forked child keeps running under the tool but must not write into the
 * parent's stream: its buffered records are dropped and nothing more is kept. */
static void ss_atfork_child(ThreadId tid)
{
    (void)tid;
    ss_child = True;
    ss_n = 0;
    /* Nor keep it open: the stream is a FIFO whose reader ends at the last
     * writer's close, so a child that outlives the program (a daemon, a
     * background job) held the capture until it exited. */
    if (ss_fd >= 0)
        VG_(close)(ss_fd);
    ss_fd = -1;
}

static void ss_fini(Int exitcode)
{
    (void)exitcode;
    if (ss_child)
        return;
    ss_put_gap();
    ss_put_stack_region(ss_main_hi, ss_main_size); /* no client request came */
    ss_put(0, 0, SS_M_END, SS_REC_MARKER, 0);
    ss_flush();
    VG_(close)(ss_fd);
    VG_(umsg)("simsched: guest instructions: %llu\n", ss_insns + ss_excluded);
    VG_(umsg)("simsched: marker instructions: %llu\n", ss_excluded);
    VG_(umsg)("simsched: references: %llu\n", ss_refs);
    VG_(umsg)("simsched: markers: %llu\n", ss_markers);
}

static void ss_pre_clo_init(void)
{
    VG_(details_name)("simsched");
    VG_(details_version)("1");
    VG_(details_description)("simsched raw-stream capture");
    VG_(details_copyright_author)("Copyright (C) 2026 the simsched authors.");
    VG_(details_bug_reports_to)("the simsched issue tracker");
    VG_(details_avg_translation_sizeB)(275);
    VG_(basic_tool_funcs)(ss_post_clo_init, ss_instrument, ss_fini);
    VG_(needs_command_line_options)(ss_process_option, ss_print_usage, ss_print_debug_usage);
    VG_(needs_client_requests)(ss_client_request);
    VG_(track_start_client_code)(ss_start_client);
    VG_(track_pre_thread_ll_create)(ss_thread_create);
}

VG_DETERMINE_INTERFACE_VERSION(ss_pre_clo_init)
