/*
 * bk_pqindex.c -- the Parquet sidecar index (container kind 12): one file
 * that says which Parquet files, or row groups, of a lake may hold a value
 * of one column, without opening them.
 *
 * Why it exists (issue #20).  Parquet files may carry split-block Bloom
 * filters per column chunk (bk_sbbf.c), but most lakes have none, or filters
 * sized for the writer's guess of the distinct count; and even where they
 * exist, answering "which of 10,000 files may hold user 12345?" reads 10,000
 * footers.  The index reads ONE file: a blocked Bloom filter (kind 2, the
 * same bytes as a BlockedBloomFilter, bk_bloom.c) per file or per row group,
 * plus the table of what each filter covers and what each file looked like
 * when it was indexed (size, mtime, a hash of its footer), so a reader can
 * tell which entries are stale.
 *
 * Keys.  An entry's filter holds the PLAIN encoding of every distinct
 * non-null value of the column in its file or row group (the bytes a Parquet
 * writer would hash for its own filter: an INT32 value is 4 bytes, a string
 * its UTF-8, a DATE its INT32 day count), hashed as bloomkit bytes keys
 * (XXH3-64 with the header's seed).  Floats are canonical first (-0.0 is
 * +0.0, every NaN is 0x7FF8... / 0x7FC0...), so a probe follows SQL
 * equality.  The column's type is stored per file (schemas may differ
 * across a lake), so probes are encoded as each file stores the column.
 * Python does all of this (bloomkit/parquet/index.py); the C side is only the
 * validator, because every loader goes through bk_format_validate.
 *
 * Layout (docs/parquet.md, "File layout", draws every box):
 *
 *   params (offset 64, 48 bytes; header_len 128)
 *     granularity u32, num_files F u32, num_entries E u64, error_rate f64,
 *     column_len u32, patterns_len u32, strings_len u64, filters_off u64
 *   payload
 *     [0, 64F)                 file records (64 bytes each)
 *     [64F, 64F + 32E)         entry records (32 bytes each)
 *     [.., + strings_len)      strings: column path, source patterns
 *                              ('\n'-separated), then every file's path,
 *                              packed in file order
 *     [filters_off, end)       the E filters, each a whole kind-2 container
 *                              starting at a 64-byte boundary, packed in
 *                              entry order; filters_off = align64(end of
 *                              strings) and the last filter ends the payload
 *
 * Invariants the validator enforces (so that Python can index the tables
 * without further checks): every offset is the one the packing implies
 * (there is exactly one valid placement of everything, which also rules out
 * overlaps); entries enumerate files in order, one per file (granularity
 * file, row_group = 0xFFFFFFFF) or one per row group (row_group 0..n-1);
 * the strings are UTF-8 without NUL; each filter passes bk_format_validate
 * as a blocked Bloom filter with the index's seed, XXH3 hashing, no flags
 * and a zero checksum field (the index's checksum covers it).  The
 * validator's cost is O(F + E + strings) plus the filters' own cheap checks;
 * BK_CHECK_DEEP adds the filters' deep checks and the zero padding.
 *
 * Limits (numbers chosen so that no product overflows 64 bits before it is
 * checked): F <= 2^24 files, E <= 2^32 entries, paths <= 4096 bytes, the
 * column path <= 4096 bytes, the patterns <= 64 KiB.
 */
#include "bk_pqindex.h"
#include "bk_kind.h"

#include "bk_bloom.h"
#include "bk_endian.h"

/* ---- Begin logic for the string area ---------------------------------- */

/* Whether s[0..n) is UTF-8 (RFC 3629: no overlongs, no surrogates, at most
 * U+10FFFF) without a NUL byte. */
static int bk_pqindex_utf8_ok(const uint8_t *s, uint64_t n)
{
    uint64_t i = 0;

    while (i < n) {
        uint8_t c = s[i];
        uint32_t need, cp;
        uint32_t min;

        if (c == 0)
            return 0;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xC2 && c <= 0xDF) {
            need = 1; cp = c & 0x1Fu; min = 0x80;
        } else if (c >= 0xE0 && c <= 0xEF) {
            need = 2; cp = c & 0x0Fu; min = 0x800;
        } else if (c >= 0xF0 && c <= 0xF4) {
            need = 3; cp = c & 0x07u; min = 0x10000;
        } else {
            return 0;
        }
        if (n - i - 1 < need)
            return 0;
        for (uint32_t j = 1; j <= need; j++) {
            uint8_t d = s[i + j];
            if ((d & 0xC0u) != 0x80u)
                return 0;
            cp = (cp << 6) | (d & 0x3Fu);
        }
        if (cp < min || cp > 0x10FFFFu || (cp >= 0xD800u && cp <= 0xDFFFu))
            return 0;
        i += need + 1;
    }
    return 1;
}

/* The patterns: empty, or non-empty lines joined by '\n'. */
static int bk_pqindex_patterns_ok(const uint8_t *s, uint32_t n)
{
    if (n == 0)
        return 1;
    if (s[0] == '\n' || s[n - 1] == '\n')
        return 0;
    for (uint32_t i = 1; i < n; i++)
        if (s[i] == '\n' && s[i - 1] == '\n')
            return 0;
    return 1;
}

/* Whether the path (or pattern) s[0..n) stays inside the directory it is
 * relative to: not absolute ('/' or '\\' first, or a drive "C:/"), no ".."
 * segment (separators '/' and '\\').  An index lists the files of one lake
 * below its own directory; a recorded "../../.." glob or an absolute glob made
 * `parquet candidates` walk the whole machine (issue #34, R48). */
static int bk_pqindex_path_inside(const uint8_t *s, uint64_t n)
{
    uint64_t seg = 0;

    if (n == 0)
        return 1;
    if (s[0] == '/' || s[0] == '\\')
        return 0;
    if (n >= 2 && s[1] == ':' && ((s[0] | 0x20) >= 'a' && (s[0] | 0x20) <= 'z') &&
        (n == 2 || s[2] == '/' || s[2] == '\\'))
        return 0; /* a Windows drive: "C:" or "C:/..." */
    for (uint64_t i = 0; i <= n; i++) {
        if (i == n || s[i] == '/' || s[i] == '\\') {
            if (i - seg == 2 && s[seg] == '.' && s[seg + 1] == '.')
                return 0;
            seg = i + 1;
        }
    }
    return 1;
}

/* Every '\n'-separated pattern inside (see bk_pqindex_path_inside). */
static int bk_pqindex_patterns_inside(const uint8_t *s, uint32_t n)
{
    uint32_t start = 0;

    for (uint32_t i = 0; i <= n; i++) {
        if (i == n || s[i] == '\n') {
            if (!bk_pqindex_path_inside(s + start, i - start))
                return 0;
            start = i + 1;
        }
    }
    return 1;
}

/* ---- End logic for the string area ------------------------------------ */

/* One file record's column type (bk_pqindex.h has the fields). */
static bk_rc bk_pqindex_check_type(const uint8_t *rec, const char **reason)
{
    unsigned phys = rec[BK_PQINDEX_F_PHYSICAL], logical = rec[BK_PQINDEX_F_LOGICAL];
    unsigned unit = rec[BK_PQINDEX_F_UNIT], tflags = rec[BK_PQINDEX_F_TFLAGS];
    unsigned bw = rec[BK_PQINDEX_F_BIT_WIDTH];
    uint32_t tlen = bk_load_u32le(rec + BK_PQINDEX_F_TYPE_LENGTH);
    uint16_t prec = bk_load_u16le(rec + BK_PQINDEX_F_PRECISION);
    uint16_t scale = bk_load_u16le(rec + BK_PQINDEX_F_SCALE);
    int timed = logical == 7 || logical == 8;   /* TIME, TIMESTAMP */

    /* INT32, INT64, FLOAT, DOUBLE, BYTE_ARRAY, FIXED_LEN_BYTE_ARRAY:
     * BOOLEAN (0) and INT96 (3) are not indexed */
    if (phys != 1 && phys != 2 && phys != 4 && phys != 5 && phys != 6 && phys != 7) {
        *reason = "Parquet index file record: physical type not indexable";
        return BK_ERR_FORMAT;
    }
    if (logical > 19) {  /* LogicalType union ids 1..19 (9: INTERVAL) */
        *reason = "Parquet index file record: unknown logical type";
        return BK_ERR_FORMAT;
    }
    if (unit > 3 || (unit != 0) != timed) {
        *reason = "Parquet index file record: time unit and logical type disagree";
        return BK_ERR_FORMAT;
    }
    if ((tflags & ~3u) != 0 || rec[BK_PQINDEX_F_RESERVED0] != 0 ||
        bk_load_u16le(rec + BK_PQINDEX_F_RESERVED1) != 0) {
        *reason = "Parquet index file record: reserved bits are not zero";
        return BK_ERR_FORMAT;
    }
    if ((bw != 0 && bw != 8 && bw != 16 && bw != 32 && bw != 64) || (bw != 0) != (logical == 10)) {
        *reason = "Parquet index file record: INTEGER bit width out of range";
        return BK_ERR_FORMAT;
    }
    if (logical != 5 ? (prec != 0 || scale != 0) : scale > 1000) {
        *reason = "Parquet index file record: DECIMAL scale or precision out of range";
        return BK_ERR_FORMAT;
    }
    if ((phys == 7) != (tlen != 0) || tlen > 0x7FFFFFFFu) {
        *reason = "Parquet index file record: type_length must be set exactly for "
                  "FIXED_LEN_BYTE_ARRAY";
        return BK_ERR_FORMAT;
    }
    return BK_OK;
}

/* One entry's filter: a kind-2 container at payload[off, off + len). */
static bk_rc bk_pqindex_check_filter(const bk_header *h, const uint8_t *filter, uint64_t len,
                                     int checks, const char **reason)
{
    bk_header fh;
    bk_rc rc = bk_format_validate(filter, len, checks & BK_CHECK_DEEP, &fh, reason);

    if (rc != BK_OK)
        return rc == BK_ERR_UNCLEAN ? BK_ERR_FORMAT : rc;
    if (fh.kind != BK_KIND_BLOCKED_BLOOM) {
        *reason = "Parquet index entry filter is not a blocked Bloom filter";
        return BK_ERR_FORMAT;
    }
    if (fh.seed != h->seed || fh.hash_alg != BK_HASH_XXH3_64 || fh.flags != 0 ||
        fh.checksum != 0) {
        *reason = "Parquet index entry filter: seed, hashing, flags or checksum field "
                  "disagree with the index";
        return BK_ERR_FORMAT;
    }
    return BK_OK;
}

bk_rc bk_pqindex_validate(const bk_header *h, const uint8_t *params, const uint8_t *payload,
                          int checks, const char **reason)
{
    uint32_t gran, nfiles, column_len, patterns_len;
    uint64_t nentries, strings_len, filters_off;
    uint64_t files_len, entries_len, strings_off, strings_end, cursor, want_entries = 0;
    const uint8_t *strings;
    int outside;

    if (h->flags & BK_FLAG_KEYED) {
        *reason = "a Parquet index is never keyed";
        return BK_ERR_FORMAT;
    }
    gran = bk_load_u32le(params + BK_PQINDEX_P_GRANULARITY);
    nfiles = bk_load_u32le(params + BK_PQINDEX_P_NUM_FILES);
    nentries = bk_load_u64le(params + BK_PQINDEX_P_NUM_ENTRIES);
    column_len = bk_load_u32le(params + BK_PQINDEX_P_COLUMN_LEN);
    patterns_len = bk_load_u32le(params + BK_PQINDEX_P_PATTERNS_LEN);
    strings_len = bk_load_u64le(params + BK_PQINDEX_P_STRINGS_LEN);
    filters_off = bk_load_u64le(params + BK_PQINDEX_P_FILTERS_OFF);

    outside = (gran & BK_PQINDEX_GRAN_OUTSIDE) != 0;
    gran &= ~BK_PQINDEX_GRAN_OUTSIDE;
    if (gran > BK_PQINDEX_GRAN_ROW_GROUP) {
        *reason = "unknown Parquet index granularity";   /* a later bloomkit's */
        return BK_ERR_UNSUPPORTED;
    }
    if (nfiles > BK_PQINDEX_MAX_FILES || nentries > BK_PQINDEX_MAX_ENTRIES) {
        *reason = "Parquet index file or entry count out of range";
        return BK_ERR_FORMAT;
    }
    if (column_len == 0 || column_len > BK_PQINDEX_MAX_COLUMN ||
        patterns_len > BK_PQINDEX_MAX_PATTERNS ||
        strings_len < (uint64_t)column_len + patterns_len) {
        *reason = "Parquet index column or pattern length out of range";
        return BK_ERR_FORMAT;
    }
    if (h->version_minor == 0) {
        for (uint32_t i = BK_PQINDEX_PARAMS_LEN; i < h->header_len - BK_FIXED_HEADER; i++)
            if (params[i] != 0) {
                *reason = "Parquet index header padding is not zero";
                return BK_ERR_FORMAT;
            }
    }

    /* the tables and the string area, then the filters: offsets fixed by
     * the packing.  F <= 2^24 and E <= 2^32 keep 64F and 32E far from
     * overflow; the sums are still checked. */
    files_len = (uint64_t)nfiles * BK_PQINDEX_FILE_LEN;
    entries_len = nentries * BK_PQINDEX_ENTRY_LEN;
    if (bk_add_overflow(files_len, entries_len, &strings_off) ||
        bk_add_overflow(strings_off, strings_len, &strings_end) ||
        strings_end > h->payload_len || bk_format_align(strings_end) != filters_off ||
        filters_off > h->payload_len) {
        *reason = "Parquet index tables do not fit the payload";
        return BK_ERR_FORMAT;
    }
    strings = payload + strings_off;
    if (!bk_pqindex_utf8_ok(strings, strings_len)) {
        *reason = "Parquet index strings are not UTF-8 without NUL";
        return BK_ERR_FORMAT;
    }
    if (!bk_pqindex_patterns_ok(strings + column_len, patterns_len)) {
        *reason = "Parquet index source patterns malformed";
        return BK_ERR_FORMAT;
    }
    if (!outside && !bk_pqindex_patterns_inside(strings + column_len, patterns_len)) {
        *reason = "Parquet index source pattern leaves the index's directory (absolute or "
                  "'..') and the index was not built to allow it";
        return BK_ERR_FORMAT;
    }

    /* ---- files: paths packed in order, types in range ---- */
    cursor = (uint64_t)column_len + patterns_len;
    for (uint32_t i = 0; i < nfiles; i++) {
        const uint8_t *rec = payload + (uint64_t)i * BK_PQINDEX_FILE_LEN;
        uint64_t off = bk_load_u64le(rec + BK_PQINDEX_F_PATH_OFF);
        uint32_t plen = bk_load_u32le(rec + BK_PQINDEX_F_PATH_LEN);
        uint32_t groups = bk_load_u32le(rec + BK_PQINDEX_F_ROW_GROUPS);
        bk_rc rc;

        if (off != cursor || plen == 0 || plen > BK_PQINDEX_MAX_PATH ||
            strings_len - cursor < plen) {
            *reason = "Parquet index file path out of place";
            return BK_ERR_FORMAT;
        }
        if (!outside && !bk_pqindex_path_inside(strings + off, plen)) {
            *reason = "Parquet index file path leaves the index's directory (absolute or "
                      "'..') and the index was not built to allow it";
            return BK_ERR_FORMAT;
        }
        cursor += plen;
        if (groups > BK_PQINDEX_MAX_ROW_GROUPS) {
            *reason = "Parquet index file record: row group count out of range";
            return BK_ERR_FORMAT;
        }
        want_entries += gran == BK_PQINDEX_GRAN_FILE ? 1u : groups; /* <= 2^24 * 2^31 */
        rc = bk_pqindex_check_type(rec, reason);
        if (rc != BK_OK)
            return rc;
    }
    if (cursor != strings_len) {
        *reason = "Parquet index string area has bytes no record names";
        return BK_ERR_FORMAT;
    }
    if (want_entries != nentries) {
        *reason = "Parquet index entry count does not match its files";
        return BK_ERR_FORMAT;
    }

    /* ---- entries: in file (and row group) order, filters packed ---- */
    cursor = filters_off;
    {
        uint32_t file = 0, group = 0;
        const uint8_t *entries = payload + files_len;

        for (uint64_t e = 0; e < nentries; e++) {
            const uint8_t *rec = entries + e * BK_PQINDEX_ENTRY_LEN;
            uint64_t off = bk_load_u64le(rec + BK_PQINDEX_E_FILTER_OFF);
            uint64_t len = bk_load_u64le(rec + BK_PQINDEX_E_FILTER_LEN), end;
            uint32_t want_group;
            bk_rc rc;

            if (gran == BK_PQINDEX_GRAN_ROW_GROUP) {
                /* skip files without row groups: they have no entry */
                while (file < nfiles && group >= bk_load_u32le(
                           payload + (uint64_t)file * BK_PQINDEX_FILE_LEN +
                           BK_PQINDEX_F_ROW_GROUPS)) {
                    file++;
                    group = 0;
                }
                want_group = group++;
            } else {
                want_group = BK_PQINDEX_WHOLE_FILE;
            }
            if (bk_load_u32le(rec + BK_PQINDEX_E_FILE) != file ||
                bk_load_u32le(rec + BK_PQINDEX_E_ROW_GROUP) != want_group) {
                *reason = "Parquet index entries out of file / row group order";
                return BK_ERR_FORMAT;
            }
            if (gran == BK_PQINDEX_GRAN_FILE)
                file++;
            if (off != cursor || len < BK_BLOOM_HEADER_LEN || bk_add_overflow(off, len, &end) ||
                end > h->payload_len) {
                *reason = "Parquet index entry filter out of place";
                return BK_ERR_FORMAT;
            }
            rc = bk_pqindex_check_filter(h, payload + off, len, checks, reason);
            if (rc != BK_OK)
                return rc;
            cursor = bk_format_align(end);   /* end <= payload_len < 2^63 */
            if (cursor > h->payload_len) {
                *reason = "Parquet index entry filter out of place";
                return BK_ERR_FORMAT;
            }
            if (checks & BK_CHECK_DEEP) {
                for (uint64_t j = end; j < cursor; j++)
                    if (payload[j] != 0) {
                        *reason = "Parquet index padding between filters is not zero";
                        return BK_ERR_FORMAT;
                    }
            }
        }
    }
    if (cursor != h->payload_len) {
        *reason = "Parquet index payload has bytes after its last filter";
        return BK_ERR_FORMAT;
    }
    if (checks & BK_CHECK_DEEP) {
        for (uint64_t j = strings_end; j < filters_off; j++)
            if (payload[j] != 0) {
                *reason = "Parquet index padding after the strings is not zero";
                return BK_ERR_FORMAT;
            }
    }
    return BK_OK;
}

static const bk_kind_param bk_pqindex_params[] = {
    {"granularity", BK_PQINDEX_P_GRANULARITY, 4, BK_PARAM_U32},
    {"num_files", BK_PQINDEX_P_NUM_FILES, 4, BK_PARAM_U32},
    {"num_entries", BK_PQINDEX_P_NUM_ENTRIES, 8, BK_PARAM_U64},
    {"error_rate", BK_PQINDEX_P_ERROR_RATE, 8, BK_PARAM_F64},
    {"column_len", BK_PQINDEX_P_COLUMN_LEN, 4, BK_PARAM_U32},
    {"patterns_len", BK_PQINDEX_P_PATTERNS_LEN, 4, BK_PARAM_U32},
    {"strings_len", BK_PQINDEX_P_STRINGS_LEN, 8, BK_PARAM_U64},
    {"filters_off", BK_PQINDEX_P_FILTERS_OFF, 8, BK_PARAM_U64},
};

/* Built once from a lake (static), never keyed (the validator refuses). */
const bk_kind_desc bk_pqindex_kind = {
    BK_KIND_PARQUET_INDEX, "ParquetIndex", "Parquet index", BK_PQINDEX_PARAMS_LEN,
    BK_PQINDEX_HEADER_LEN,
    BK_KIND_PARAMS(bk_pqindex_params),
    -1, 0, NULL,
    3, BK_KIND_ERROR_RATE_DEFAULT,
    0, BK_PQINDEX_GRAN_ROW_GROUP,
    BK_TRAIT_STATIC,
    bk_pqindex_validate,
    NULL, /* no per-key C operations: answers need Python's value encoding */
};
