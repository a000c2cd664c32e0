/*
 * simsched_raw.h -- the raw capture stream, defined once.
 *
 * Every capture backend (the gcc runtime, the valgrind tool, the Pin tool)
 * writes this stream, and simsched's importer (simsched/trace/raw.py) reads it
 * through a NumPy dtype that mirrors `ss_raw_rec` field for field.  Change the
 * layout here and bump SS_RAW_VERSION; tests/trace/test_raw.py parses this
 * header and fails if the Python mirror disagrees.
 *
 * The stream is a sequence of fixed-size 16-byte little-endian records.  It may
 * be stored plain or as one zstd stream (the importer detects the zstd magic).
 * The first record is an SS_REC_HEADER.
 *
 *   kind            a (u64)              b (u32)             c (u16)          flags (u8)
 *   --------------  -------------------  ------------------  ---------------  -------------------------
 *   SS_REC_HEADER   SS_RAW_MAGIC         SS_RAW_VERSION      backend id       bit0: gaps exact
 *   SS_REC_REF      address              gap (*)             size in bytes    bit0: write
 *   SS_REC_RANGE    start address        length in bytes     0                bit0: write
 *   SS_REC_GAP      0                    instructions (*)    0                0
 *   SS_REC_MARKER   argument             0                   marker (SS_M_*)  0
 *
 * (*) gap: non-memory instructions executed since the previous REF/RANGE/GAP
 *     record, not counting the instruction that makes this reference.  A GAP
 *     record carries instructions with no reference after them (before a
 *     marker, or when a count would overflow 32 bits).
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
#define SS_RAW_VERSION 1u
#define SS_RANGE_PIECE 64u

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

#endif /* SIMSCHED_RAW_H */
