/*
 * simsched_raw.h -- the raw capture stream, defined once.
 *
 * Every capture backend (the gcc runtime, the valgrind tool, the Pin tool)
 * writes this stream, and simsched's importer (simsched/trace/raw.py) reads it
 * through NumPy dtypes that mirror `ss_raw_rec` and `ss_raw_block` field for
 * field.  A changed layout is a new version number (the importer reads every
 * version it knows); tests/trace/test_raw.py parses this header and fails if
 * the Python mirror disagrees.
 *
 * A stream starts with one 16-byte SS_REC_HEADER record (below); its version
 * field says how the rest is laid out.  The whole stream may be stored plain or
 * as one zstd stream (the importer detects the zstd magic).
 *
 * Version 1 (SS_RAW_VERSION; the valgrind and Pin tools): a sequence of
 * fixed-size 16-byte little-endian records, the header first.
 *
 *   kind            a (u64)              b (u32)             c (u16)          flags (u8)
 *   --------------  -------------------  ------------------  ---------------  -------------------------
 *   SS_REC_HEADER   SS_RAW_MAGIC         version             backend id       bit0: gaps exact
 *   SS_REC_REF      address              gap (*)             size in bytes    bit0: write
 *   SS_REC_RANGE    start address        length in bytes     0                bit0: write
 *   SS_REC_GAP      0                    instructions (*)    0                0
 *   SS_REC_MARKER   argument             0 (**)              marker (SS_M_*)  0
 *
 * (*) gap: non-memory instructions executed since the previous REF/RANGE/GAP
 *     record, not counting the instruction that makes this reference.  A GAP
 *     record carries instructions with no reference after them (before a
 *     marker, or when a count would overflow 32 bits).
 * (**) SS_M_STACK: its b is the size of the stack region starting at a.
 *      SS_M_SPAWN: b may be the stack depth at the marker (the stack top less
 *      the stack pointer, in bytes; 0: not known).
 *      SS_M_SPAWN, SS_M_CALL: a names the function called (0: not known; a
 *      SPAWN's 1: none), so the importer merges into a spawned frame only the
 *      CALL of the spawned function (simsched_cilk.h).
 *
 * Version 2 (SS_RAW_VERSION_BLOCKS; the gcc runtime): after the header record,
 * a sequence of blocks, each standing for n <= SS_BLOCK_MAX_RECS records of
 * version 1 in order.  A block is an ss_raw_block header followed by columns:
 *
 *   meta[n]     u8   REF of size 1<<s (s <= 4), write bit w: (s << 1) | w;
 *                    SS_BLOCK_ESCAPE: the next record of esc[] (any kind)
 *   slot[n]     u8   REF: the address predictor slot (0 for escapes)
 *   gap[n]      u8   REF: its gap; SS_BLOCK_WIDE_GAP: the next entry of wide[]
 *   planes      for each bit p set in `planes` (low bit first), n bytes:
 *               byte p of delta[i] (little-endian byte planes of u64 deltas;
 *               a plane that would be all zero is left out)
 *   esc[n_esc]  ss_raw_rec  the escaped records, verbatim version-1 records
 *   wide[n_wide] u32  gaps >= SS_BLOCK_WIDE_GAP, in order
 *
 * Address of REF i: last[slot[i]] + unzigzag(delta[i]) (mod 2^64), which then
 * becomes last[slot[i]].  `last` holds SS_BLOCK_SLOTS addresses, all 0 at the
 * start of the stream and carried from block to block; escapes neither use nor
 * change it (their deltas are 0).  unzigzag(z) = (z >> 1) ^ -(z & 1).  The gcc
 * runtime picks the slot by hashing the address of the instrumented access
 * (SS_SLOT_OF), so a loop's access walks its own slot with a small constant
 * stride; the choice of slot never changes what the stream decodes to.
 * The stream ends with the block holding the END marker.
 *
 * A RANGE record stands for a block operation (memcpy, memset, ...): the
 * importer expands it into references of at most SS_RANGE_PIECE bytes that do
 * not cross an SS_RANGE_PIECE-aligned boundary, the way a vectorised copy
 * touches memory.
 */
#ifndef SIMSCHED_RAW_H
#define SIMSCHED_RAW_H

#include <stdint.h>

#define SS_RAW_MAGIC   0x3157415253534953ULL /* "SISSRAW1" little-endian */
#define SS_RAW_VERSION 1u        /* 16-byte records */
#define SS_RAW_VERSION_BLOCKS 2u /* column blocks (see above) */
#define SS_RANGE_PIECE 64u

/* version-2 blocks */
#define SS_BLOCK_MAGIC    0x32425353u /* "SSB2" little-endian */
#define SS_BLOCK_MAX_RECS 65536u
#define SS_BLOCK_SLOTS    256u
#define SS_BLOCK_ESCAPE   0xffu
#define SS_BLOCK_WIDE_GAP 0xffu

/* record kinds */
#define SS_REC_HEADER 0u
#define SS_REC_REF    1u
#define SS_REC_RANGE  2u
#define SS_REC_GAP    3u
#define SS_REC_MARKER 4u

/* markers (the c field of an SS_REC_MARKER record) */
#define SS_M_SPAWN     1u /* about to call a spawned function            */
#define SS_M_SPAWN_END 2u /* the spawned call has returned               */
#define SS_M_SYNC      3u /* wait for the children spawned so far        */
#define SS_M_ITER      4u /* iteration a begins (a = iteration number)   */
#define SS_M_ROI_BEGIN 5u /* keep references from here ...              */
#define SS_M_ROI_END   6u /* ... to here                                  */
#define SS_M_END       7u /* the program finished; nothing follows       */
#define SS_M_CALL      8u /* a Cilk function begins (its own frame)      */
#define SS_M_CALL_END  9u /* ... and returns, after its implicit sync    */
#define SS_M_STACK    10u /* the thread's stack is bytes a .. a + b - 1  */
#define SS_M_THREAD   11u /* the program started a thread (refused)      */

/* backend ids (the c field of the header record) */
#define SS_BACKEND_UNKNOWN  0u
#define SS_BACKEND_GCC      1u
#define SS_BACKEND_VALGRIND 2u
#define SS_BACKEND_PIN      3u
#define SS_BACKEND_TEST     4u

#define SS_FLAG_WRITE      0x01u
#define SS_FLAG_GAPS_EXACT 0x01u

typedef struct ss_raw_rec {
    uint64_t a;
    uint32_t b;
    uint16_t c;
    uint8_t kind;
    uint8_t flags;
} ss_raw_rec;

#ifdef __cplusplus
static_assert(sizeof(ss_raw_rec) == 16, "ss_raw_rec must be 16 bytes");
#else
_Static_assert(sizeof(ss_raw_rec) == 16, "ss_raw_rec must be 16 bytes");
#endif

typedef struct ss_raw_block {
    uint32_t magic;  /* SS_BLOCK_MAGIC */
    uint32_t n;      /* records (1 .. SS_BLOCK_MAX_RECS) */
    uint32_t n_esc;  /* escaped records */
    uint32_t n_wide; /* wide gaps */
    uint32_t planes; /* bit p: byte plane p of the deltas is stored */
    uint32_t zero;   /* 0 */
} ss_raw_block;

#ifdef __cplusplus
static_assert(sizeof(ss_raw_block) == 24, "ss_raw_block must be 24 bytes");
#else
_Static_assert(sizeof(ss_raw_block) == 24, "ss_raw_block must be 24 bytes");
#endif

/* The gcc runtime's predictor slot of an access, from the address of its
 * instrumentation call (any choice decodes correctly; this one spreads the
 * call sites of a loop over different slots). */
#define SS_SLOT_OF(pc) ((uint32_t)((uint32_t)(uintptr_t)(pc) * 0x9E3779B1u) >> 24)

#endif /* SIMSCHED_RAW_H */
