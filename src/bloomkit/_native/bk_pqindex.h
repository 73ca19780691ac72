/*
 * bk_pqindex.h -- the Parquet sidecar index (container kind 12): layout
 * constants and its validator.  bk_pqindex.c has the essay, docs/parquet.md
 * ("File layout") the spec.  Building and probing are Python
 * (bloomkit/parquet/index.py) over kind-2 blocked Bloom filters; this module
 * only says whether a state buffer is a sound index.  C11, no Python.h.
 */
#ifndef BK_PQINDEX_H
#define BK_PQINDEX_H

#include "bk_common.h"
#include "bk_format.h"

/* Parameters (offsets from the start of the params area, offset 64). */
#define BK_PQINDEX_P_GRANULARITY 0   /* u32: 0 one entry per file, 1 per row group */
#define BK_PQINDEX_P_NUM_FILES 4     /* u32 F, 0..2^24 */
#define BK_PQINDEX_P_NUM_ENTRIES 8   /* u64 E, 0..2^32 */
#define BK_PQINDEX_P_ERROR_RATE 16   /* f64 design rate of every entry, (0, 1) */
#define BK_PQINDEX_P_COLUMN_LEN 24   /* u32 bytes of the column path, 1..4096 */
#define BK_PQINDEX_P_PATTERNS_LEN 28 /* u32 bytes of the source patterns, 0..65536 */
#define BK_PQINDEX_P_STRINGS_LEN 32  /* u64 bytes of the string area */
#define BK_PQINDEX_P_FILTERS_OFF 40  /* u64 payload offset of the first filter */
#define BK_PQINDEX_PARAMS_LEN 48
#define BK_PQINDEX_HEADER_LEN 128

#define BK_PQINDEX_GRAN_FILE 0u
#define BK_PQINDEX_GRAN_ROW_GROUP 1u
/* granularity bit 31: the builder was told that recorded paths and patterns
 * may leave the index's directory (absolute or with ".." segments); without
 * it the validator refuses any such path (issue #34, R48) */
#define BK_PQINDEX_GRAN_OUTSIDE 0x80000000u
#define BK_PQINDEX_MAX_FILES (1u << 24)
#define BK_PQINDEX_MAX_ENTRIES (1ULL << 32)
#define BK_PQINDEX_MAX_COLUMN 4096u
#define BK_PQINDEX_MAX_PATTERNS 65536u
#define BK_PQINDEX_MAX_PATH 4096u
#define BK_PQINDEX_MAX_ROW_GROUPS (1u << 31)

/* File record: 64 bytes, F of them at payload offset 0. */
#define BK_PQINDEX_FILE_LEN 64
#define BK_PQINDEX_F_SIZE 0          /* u64 file size in bytes at build time */
#define BK_PQINDEX_F_MTIME 8         /* i64 modification time, ns since 1970 */
#define BK_PQINDEX_F_FOOTER_HASH 16  /* u64 XXH3-64 (seed 0) of the footer + 8-byte tail */
#define BK_PQINDEX_F_NUM_ROWS 24     /* u64 rows in the file */
#define BK_PQINDEX_F_PATH_OFF 32     /* u64 offset of the path in the string area */
#define BK_PQINDEX_F_PATH_LEN 40     /* u32 1..4096 */
#define BK_PQINDEX_F_ROW_GROUPS 44   /* u32 row groups in the file */
#define BK_PQINDEX_F_PHYSICAL 48     /* u8 parquet.thrift Type: 1, 2, 4, 5, 6, 7 */
#define BK_PQINDEX_F_LOGICAL 49      /* u8 LogicalType union field id, 0 none */
#define BK_PQINDEX_F_UNIT 50         /* u8 0 none, 1 MILLIS, 2 MICROS, 3 NANOS */
#define BK_PQINDEX_F_TFLAGS 51       /* u8 bit 0 isAdjustedToUTC, bit 1 signed */
#define BK_PQINDEX_F_BIT_WIDTH 52    /* u8 INTEGER: 8, 16, 32, 64; else 0 */
#define BK_PQINDEX_F_RESERVED0 53    /* u8 0 */
#define BK_PQINDEX_F_PRECISION 54    /* u16 DECIMAL precision */
#define BK_PQINDEX_F_SCALE 56        /* u16 DECIMAL scale, <= 1000 */
#define BK_PQINDEX_F_RESERVED1 58    /* u16 0 */
#define BK_PQINDEX_F_TYPE_LENGTH 60  /* u32 FIXED_LEN_BYTE_ARRAY: 1..2^31-1; else 0 */

/* Entry record: 32 bytes, E of them after the file table. */
#define BK_PQINDEX_ENTRY_LEN 32
#define BK_PQINDEX_E_FILE 0          /* u32 file index, < F */
#define BK_PQINDEX_E_ROW_GROUP 4     /* u32 row group, or 0xFFFFFFFF: the whole file */
#define BK_PQINDEX_E_VALUES 8        /* u64 distinct non-null values added */
#define BK_PQINDEX_E_FILTER_OFF 16   /* u64 payload offset of its filter */
#define BK_PQINDEX_E_FILTER_LEN 24   /* u64 bytes of its filter (a kind-2 container) */
#define BK_PQINDEX_WHOLE_FILE 0xFFFFFFFFu

/* The kind validator (bk_format.c calls it through its table).  Checks the
 * parameters, every file and entry record, the string area (in bounds,
 * packed in order, UTF-8 without NUL) and validates every entry's filter
 * as a kind-2 container with bk_format_validate (deep when asked).  All
 * size arithmetic is overflow-checked against payload_len. */
bk_rc bk_pqindex_validate(const bk_header *h, const uint8_t *params, const uint8_t *payload,
                          int checks, const char **reason);

#endif /* BK_PQINDEX_H */
