/*
 * simsched_pin.cpp -- a Pin 3.x tool that writes simsched's raw capture stream
 * (capture/simsched_raw.h) with exact instruction gaps.
 *
 * UNTESTED: no Pin kit is available where simsched is developed.  The tool is
 * written against Pin's documented instrumentation API only; the importer it
 * feeds is tested with golden raw files (tests/capture/test_pin_golden.py).
 *
 * usage: $PIN_ROOT/pin -t obj-intel64/simsched_pin.so -o RAWFILE -- PROGRAM ARGS
 *
 * Design (the same accounting as the valgrind tool, capture/valgrind/ss_main.c):
 *   - ss_insns counts executed instructions outside simsched_marker().  Per
 *     basic block, each instruction with memory operands first adds the
 *     instructions since the previous such point in the block (itself
 *     included), unpredicated so that a cmov/rep whose predicate is false
 *     still counts; the block's tail adds what is left.  A Pin basic block has
 *     one entry and one exit, so the counts are exact.
 *   - Memory operands are recorded by predicated calls (only when the
 *     instruction really accesses memory): an SS_REC_REF record whose gap is
 *     the instructions since the previous record's instruction, not counting
 *     this one (0 for the second operand of the same instruction).
 *   - simsched_marker(kind, arg) is found by name in every image; a call at
 *     its entry writes the pending instructions as a GAP record and the
 *     marker.  Its own instructions and references are left out.
 *   - The first marker (or the end of a run without markers) is preceded by
 *     an SS_M_STACK marker naming the main thread's stack region, as the
 *     valgrind tool does: the top of the "[stack]" mapping of /proc/self/maps
 *     (Pin runs in the program's process) and the RLIMIT_STACK soft limit
 *     below it.  Every SPAWN marker carries the stack depth at the call (the
 *     top less the stack pointer), which the importer uses to tell a spawned
 *     function's references to its ancestors' stack objects.
 */
#include <cstdio>
#include <cstring>
#include <string>
#include <sys/resource.h>

#include "pin.H"
#include "simsched_raw.h"

static KNOB<std::string> KnobOut(KNOB_MODE_WRITEONCE, "pintool", "o", "simsched.raw",
                                 "file (or FIFO) to write the raw capture stream to");

static const size_t BUF_RECS = 65536;
static ss_raw_rec buf[BUF_RECS];
static size_t nbuf = 0;
static FILE *out = NULL;

static UINT64 ss_insns = 0; /* instructions outside the marker function */
static UINT64 ss_last = 0;  /* ss_insns when the last record was written */
static ADDRINT marker_lo = 0, marker_hi = 0;

static void flush_buf()
{
    if (nbuf && fwrite(buf, sizeof(ss_raw_rec), nbuf, out) != nbuf) {
        fprintf(stderr, "simsched pin tool: cannot write %s\n", KnobOut.Value().c_str());
        PIN_ExitProcess(3);
    }
    nbuf = 0;
}

static inline void put(UINT64 a, UINT32 b, UINT16 c, UINT8 kind, UINT8 flags)
{
    if (nbuf == BUF_RECS)
        flush_buf();
    ss_raw_rec *r = &buf[nbuf++];
    r->a = a;
    r->b = b;
    r->c = c;
    r->kind = kind;
    r->flags = flags;
}

static void put_gap()
{
    UINT64 g = ss_insns - ss_last;
    while (g > 0) {
        UINT32 piece = g > 0xffffffffULL ? 0xffffffffU : (UINT32)g;
        put(0, piece, 0, SS_REC_GAP, 0);
        g -= piece;
    }
    ss_last = ss_insns;
}

/* ---- analysis routines --------------------------------------------------- */

static VOID PIN_FAST_ANALYSIS_CALL AddInsns(UINT32 k) { ss_insns += k; }

static VOID PIN_FAST_ANALYSIS_CALL RecordRef(ADDRINT ea, UINT32 size, UINT32 write)
{
    UINT64 gap = ss_insns > ss_last ? ss_insns - ss_last - 1 : 0;
    while (gap > 0xffffffffULL) {
        put(0, 0xffffffffU, 0, SS_REC_GAP, 0);
        gap -= 0xffffffffULL;
    }
    ss_last = ss_insns;
    put((UINT64)ea, (UINT32)gap, (UINT16)size, SS_REC_REF, (UINT8)write);
}

static BOOL stack_done = FALSE;
static UINT64 stack_hi = 0; /* one past the stack's highest byte (0: unknown) */

/* Name the main thread's stack region (once): the "[stack]" mapping's top and
 * the RLIMIT_STACK soft limit below it (8 MiB by default), as the gcc runtime
 * and the valgrind tool do. */
static void put_stack()
{
    if (stack_done)
        return;
    stack_done = TRUE;
    FILE *maps = fopen("/proc/self/maps", "r");
    if (!maps)
        return;
    char line[512];
    unsigned long lo = 0, hi = 0;
    while (fgets(line, sizeof line, maps)) {
        if (strstr(line, "[stack]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2)
            break;
        hi = 0;
    }
    fclose(maps);
    if (hi == 0)
        return;
    UINT64 size = (UINT64)(hi - lo);
    struct rlimit rl;
    if (getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (UINT64)rl.rlim_cur > size)
        size = (UINT64)rl.rlim_cur;
    if (size > hi)
        size = hi;
    if (size > 0xffffffffULL) /* the record's b is 32 bits: keep the top */
        size = 0xffffffffULL;
    stack_hi = hi;
    put((UINT64)hi - size, (UINT32)size, SS_M_STACK, SS_REC_MARKER, 0);
}

static VOID Marker(ADDRINT kind, ADDRINT arg, ADDRINT sp)
{
    put_gap();
    put_stack();
    UINT32 depth = 0;
    if (kind == SS_M_SPAWN && stack_hi > sp && stack_hi - sp < 0xffffffffULL)
        depth = (UINT32)(stack_hi - sp);
    put((UINT64)arg, depth, (UINT16)kind, SS_REC_MARKER, 0);
}

/* ---- instrumentation ----------------------------------------------------- */

static BOOL InMarker(INS ins)
{
    ADDRINT a = INS_Address(ins);
    return marker_hi > marker_lo && a >= marker_lo && a < marker_hi;
}

static VOID Trace(TRACE trace, VOID *v)
{
    for (BBL bbl = TRACE_BblHead(trace); BBL_Valid(bbl); bbl = BBL_Next(bbl)) {
        UINT32 pending = 0;
        for (INS ins = BBL_InsHead(bbl); INS_Valid(ins); ins = INS_Next(ins)) {
            if (InMarker(ins))
                continue;
            pending++;
            UINT32 nops = INS_MemoryOperandCount(ins);
            if (nops > 0) {
                INS_InsertCall(ins, IPOINT_BEFORE, (AFUNPTR)AddInsns, IARG_FAST_ANALYSIS_CALL,
                               IARG_UINT32, pending, IARG_END);
                pending = 0;
                for (UINT32 op = 0; op < nops; op++) {
                    UINT32 size = INS_MemoryOperandSize(ins, op);
                    if (INS_MemoryOperandIsRead(ins, op))
                        INS_InsertPredicatedCall(ins, IPOINT_BEFORE, (AFUNPTR)RecordRef,
                                                 IARG_FAST_ANALYSIS_CALL, IARG_MEMORYOP_EA, op,
                                                 IARG_UINT32, size, IARG_UINT32, 0, IARG_END);
                    if (INS_MemoryOperandIsWritten(ins, op))
                        INS_InsertPredicatedCall(ins, IPOINT_BEFORE, (AFUNPTR)RecordRef,
                                                 IARG_FAST_ANALYSIS_CALL, IARG_MEMORYOP_EA, op,
                                                 IARG_UINT32, size, IARG_UINT32, 1, IARG_END);
                }
            }
            if (ins == BBL_InsTail(bbl) && pending > 0) {
                INS_InsertCall(ins, IPOINT_BEFORE, (AFUNPTR)AddInsns, IARG_FAST_ANALYSIS_CALL,
                               IARG_UINT32, pending, IARG_END);
                pending = 0;
            }
        }
    }
}

static VOID Image(IMG img, VOID *v)
{
    RTN rtn = RTN_FindByName(img, "simsched_marker");
    if (!RTN_Valid(rtn))
        return;
    marker_lo = RTN_Address(rtn);
    marker_hi = marker_lo + RTN_Size(rtn);
    RTN_Open(rtn);
    RTN_InsertCall(rtn, IPOINT_BEFORE, (AFUNPTR)Marker, IARG_FUNCARG_ENTRYPOINT_VALUE, 0,
                   IARG_FUNCARG_ENTRYPOINT_VALUE, 1, IARG_REG_VALUE, REG_STACK_PTR, IARG_END);
    RTN_Close(rtn);
}

static VOID Fini(INT32 code, VOID *v)
{
    put_gap();
    put_stack(); /* no marker came */
    put(0, 0, SS_M_END, SS_REC_MARKER, 0);
    flush_buf();
    fclose(out);
}

static INT32 Usage()
{
    fprintf(stderr, "simsched pin tool: writes simsched's raw capture stream.\n%s\n",
            KNOB_BASE::StringKnobSummary().c_str());
    return 2;
}

int main(int argc, char *argv[])
{
    PIN_InitSymbols();
    if (PIN_Init(argc, argv))
        return Usage();
    out = fopen(KnobOut.Value().c_str(), "wb");
    if (!out) {
        fprintf(stderr, "simsched pin tool: cannot open %s\n", KnobOut.Value().c_str());
        return 3;
    }
    put(SS_RAW_MAGIC, SS_RAW_VERSION, SS_BACKEND_PIN, SS_REC_HEADER, SS_FLAG_GAPS_EXACT);
    IMG_AddInstrumentFunction(Image, 0);
    TRACE_AddInstrumentFunction(Trace, 0);
    PIN_AddFiniFunction(Fini, 0);
    PIN_StartProgram(); /* never returns */
    return 0;
}
