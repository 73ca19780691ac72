/*
 * bk_format.c -- the bloomkit container: one header design for every
 * structure, and the one validator every loader goes through.
 *
 * A structure's state is ONE buffer: a fixed little-endian header, the
 * structure's parameters, then its payload.  The same bytes live in memory
 * (the C objects work directly on them), in a file, in an mmap shared by
 * processes, and in a Redis string.  docs/FORMAT.md is the spec; this
 * comment is its summary.
 *
 *   offset  size  field
 *   +-----+------+--------------------------------------------------------+
 *   |   0 |   8  | magic  89 42 4B 46 0D 0A 1A 0A  ("\x89BKF\r\n\x1a\n")   |
 *   |   8 |   2  | version_major (1)    readers refuse other majors       |
 *   |  10 |   2  | version_minor (0)    newer minors stay readable        |
 *   |  12 |   2  | kind                 bk_kind (1 = classic Bloom, ...)  |
 *   |  14 |   2  | flags                bit0 DIRTY, bit1 KEYED; bits 0-7  |
 *   |     |      |                      incompatible, 8-15 compatible     |
 *   |     |      |                      (8-11: the key domains, bk_format.h)|
 *   |  16 |   2  | hash_alg             1 = XXH3-64, 2 = SipHash-2-4      |
 *   |  18 |   2  | reserved (0)                                           |
 *   |  20 |   4  | header_len           payload offset; multiple of 64    |
 *   |  24 |   8  | seed                                                   |
 *   |  32 |   8  | payload_len          header_len + payload_len == size  |
 *   |  40 |   8  | checksum             see bk_format_checksum            |
 *   |  48 |   4  | params_len           kind parameters at offset 64      |
 *   |  52 |   4  | reserved (0)                                           |
 *   |  56 |   8  | key_check            keyed: SipHash("bloomkit-key")    |
 *   +-----+------+--------------------------------------------------------+
 *   |  64 |  ... | kind parameters (params_len bytes), zero padding up to |
 *   |     |      | header_len                                             |
 *   +-----+------+--------------------------------------------------------+
 *   | header_len | payload (payload_len bytes), 64-byte aligned for mmap  |
 *   +------------+--------------------------------------------------------+
 *
 * Forward compatibility: a later minor version may append parameters
 * (params_len grows; readers use the prefix they know and skip the rest
 * thanks to header_len) and define compatible flags (bits 8-15).
 * Anything a reader cannot safely ignore needs a new major version.
 *
 * Checksum: XXH3-64(payload, seed = XXH3-64(header with the checksum
 * field zeroed and the DIRTY flag cleared, seed 0)).  Two calls on a
 * buffer in memory; save() computes the same value with the streaming
 * XXH3 (bk_format_checksum_begin) while it writes.  The DIRTY bit is excluded so that marking a mapped file
 * open or closed does not invalidate it.  The checksum detects corruption
 * in transit and on disk; it is not a MAC (use a keyed filter plus your
 * own signature for that).
 *
 * Validation order (bk_format_validate): lengths first, with overflow-
 * checked arithmetic against the real buffer size, so that nothing is
 * allocated or read on the strength of an untrusted field; then version,
 * kind and flags; then the checksum; then the prologue every kind shares
 * (bk_format_check_kind: parameters long enough, format 1.0's header_len,
 * capacity and stored error rate in the ranges the kind's descriptor
 * gives); then the kind's own validator.  The kinds come from bk_kinds.c
 * (the one table): this file includes no structure's header.
 */
#include "bk_format.h"
#include "bk_endian.h"
#include "bk_hash.h"
#include "bk_kind.h"

const char *bk_format_kind_name(unsigned kind)
{
    const bk_kind_desc *desc = bk_kinds_get(kind);
    return desc != NULL ? desc->name : NULL;
}

bk_rc bk_format_check_kind(const bk_kind_desc *desc, const bk_header *h,
                           const uint8_t *params, const char **reason)
{
    if (h->params_len < desc->params_len) {
        *reason = "kind parameters truncated (params_len below the kind's)";
        return BK_ERR_FORMAT;
    }
    if (desc->header_len != 0 && h->version_minor == 0 && h->header_len != desc->header_len) {
        *reason = "header_len is not the kind's header length of format 1.0";
        return BK_ERR_FORMAT;
    }
    if (desc->capacity_param >= 0) {
        uint64_t capacity = bk_load_u64le(params + desc->params[desc->capacity_param].offset);
        if (capacity == 0 || capacity > desc->capacity_max) {
            *reason = desc->capacity_reason;
            return BK_ERR_FORMAT;
        }
    }
    if (desc->error_rate_param >= 0) {
        double p = bk_load_f64le(params + desc->params[desc->error_rate_param].offset);
        if (!(p > 0.0 && p < 1.0)) {   /* also false for NaN */
            *reason = "error_rate must be in (0, 1)";
            return BK_ERR_FORMAT;
        }
    }
    return BK_OK;
}

uint64_t bk_format_align(uint64_t n)
{
    uint64_t r;
    if (bk_add_overflow(n, BK_ALIGN - 1, &r))
        return 0;
    return r & ~(uint64_t)(BK_ALIGN - 1);
}

bk_rc bk_format_parse(const uint8_t *buf, uint64_t len, bk_header *h,
                      const char **reason)
{
    uint64_t end;

    /* The magic first, over the bytes there are: 7 bytes of some other file
       are "not a bloomkit file", not a truncated one.  Only a prefix of the
       magic (or nothing at all) short of 64 bytes reads as truncated. */
    if (len > 0
        && memcmp(buf + BK_OFF_MAGIC, BK_MAGIC, len < BK_MAGIC_LEN ? (size_t)len : BK_MAGIC_LEN)
               != 0) {
        *reason = "bad magic: not a bloomkit file";
        return BK_ERR_FORMAT;
    }
    if (len < BK_FIXED_HEADER) {
        *reason = "truncated: shorter than the 64-byte header";
        return BK_ERR_FORMAT;
    }
    h->version_major = bk_load_u16le(buf + BK_OFF_VMAJOR);
    h->version_minor = bk_load_u16le(buf + BK_OFF_VMINOR);
    h->kind = bk_load_u16le(buf + BK_OFF_KIND);
    h->flags = bk_load_u16le(buf + BK_OFF_FLAGS);
    h->hash_alg = bk_load_u16le(buf + BK_OFF_HASH);
    h->header_len = bk_load_u32le(buf + BK_OFF_HEADER_LEN);
    h->seed = bk_load_u64le(buf + BK_OFF_SEED);
    h->payload_len = bk_load_u64le(buf + BK_OFF_PAYLOAD_LEN);
    h->checksum = bk_load_u64le(buf + BK_OFF_CHECKSUM);
    h->params_len = bk_load_u32le(buf + BK_OFF_PARAMS_LEN);
    h->key_check = bk_load_u64le(buf + BK_OFF_KEY_CHECK);

    if (h->version_major != BK_VERSION_MAJOR) {
        *reason = "unsupported format version";
        return BK_ERR_UNSUPPORTED;
    }
    if (h->header_len < BK_FIXED_HEADER || h->header_len % BK_ALIGN != 0 ||
        h->header_len > BK_MAX_HEADER) {
        *reason = "bad header_len (must be a multiple of 64 in [64, 4096])";
        return BK_ERR_FORMAT;
    }
    if ((uint64_t)h->params_len > h->header_len - BK_FIXED_HEADER) {
        *reason = "params_len exceeds header_len";
        return BK_ERR_FORMAT;
    }
    if (bk_add_overflow(h->header_len, h->payload_len, &end)) {
        *reason = "payload_len overflows";
        return BK_ERR_FORMAT;
    }
#if SIZE_MAX < UINT64_MAX
    /* A 32-bit size_t cannot address such a state: refuse it here, before
     * any uint64_t size is narrowed to size_t (no truncation, no wrap). */
    if (end > (uint64_t)SIZE_MAX) {
        *reason = "state larger than this platform's address space (32-bit size_t)";
        return BK_ERR_FORMAT;
    }
#endif
    if (end > len) {
        *reason = "truncated: payload_len exceeds the data";
        return BK_ERR_FORMAT;
    }
    if (end < len) {
        *reason = "trailing bytes after the payload";
        return BK_ERR_FORMAT;
    }
    if (bk_load_u16le(buf + BK_OFF_RESERVED0) != 0 ||
        bk_load_u32le(buf + BK_OFF_RESERVED1) != 0) {
        *reason = "reserved header field is not zero";
        return BK_ERR_FORMAT;
    }
    return BK_OK;
}

bk_rc bk_format_validate(const uint8_t *buf, uint64_t len, int checks,
                         bk_header *h, const char **reason)
{
    bk_rc rc = bk_format_parse(buf, len, h, reason);
    return rc != BK_OK ? rc : bk_format_validate_parsed(buf, len, checks, h, reason);
}

bk_rc bk_format_validate_parsed(const uint8_t *buf, uint64_t len, int checks,
                                const bk_header *h, const char **reason)
{
    const bk_kind_desc *desc;
    bk_rc rc;

    if (!bk_kinds_known(h->kind)) {
        *reason = "unknown structure kind";
        return BK_ERR_UNSUPPORTED;
    }
    desc = bk_kinds_get(h->kind);
    if (desc == NULL) {
        *reason = "structure kind not supported by this build";
        return BK_ERR_UNSUPPORTED;
    }
    if ((h->flags & BK_FLAGS_INCOMPAT_MASK & ~BK_FLAGS_KNOWN) != 0) {
        *reason = "unknown incompatible flag";
        return BK_ERR_UNSUPPORTED;
    }
    if (h->hash_alg != BK_HASH_XXH3_64 && h->hash_alg != BK_HASH_SIPHASH24) {
        *reason = "unknown hash algorithm";
        return BK_ERR_UNSUPPORTED;
    }
    if ((h->hash_alg == BK_HASH_SIPHASH24) != ((h->flags & BK_FLAG_KEYED) != 0)) {
        *reason = "KEYED flag and hash algorithm disagree";
        return BK_ERR_FORMAT;
    }
    if (!(h->flags & BK_FLAG_KEYED) && h->key_check != 0) {
        *reason = "key_check set on an unkeyed filter";
        return BK_ERR_FORMAT;
    }
    if ((h->flags & BK_FLAG_DIRTY) && !(checks & BK_ALLOW_DIRTY)) {
        /* The DIRTY rule, in one place: corruption first.  A DIRTY state's
         * checksum is stale and its counts may lag the payload, so only the
         * kind's O(1) checks run (no checksum, no deep scan: repair runs
         * those); a state that fails them is corrupt, else it is unclean. */
        rc = bk_format_check_kind(desc, h, buf + BK_OFF_PARAMS, reason);
        if (rc == BK_OK)
            rc = desc->validate(h, buf + BK_OFF_PARAMS, buf + h->header_len,
                                (checks & ~(BK_CHECK_DEEP | BK_CHECK_CHECKSUM)) | BK_ALLOW_DIRTY,
                                reason);
        if (rc != BK_OK)
            return rc;
        *reason = "file is marked open for writing (a writer is active or "
                  "crashed); open it with bloomkit.open() to recover";
        return BK_ERR_UNCLEAN;
    }
    if ((checks & BK_CHECK_CHECKSUM) && bk_format_checksum(buf, len) != h->checksum) {
        *reason = "checksum mismatch: the data is corrupt";
        return BK_ERR_CHECKSUM;
    }
    rc = bk_format_check_kind(desc, h, buf + BK_OFF_PARAMS, reason);
    return rc != BK_OK ? rc
                       : desc->validate(h, buf + BK_OFF_PARAMS, buf + h->header_len, checks,
                                        reason);
}

void bk_format_write_header(uint8_t *buf, const bk_header *h)
{
    memcpy(buf + BK_OFF_MAGIC, BK_MAGIC, BK_MAGIC_LEN);
    bk_store_u16le(buf + BK_OFF_VMAJOR, h->version_major);
    bk_store_u16le(buf + BK_OFF_VMINOR, h->version_minor);
    bk_store_u16le(buf + BK_OFF_KIND, h->kind);
    bk_store_u16le(buf + BK_OFF_FLAGS, h->flags);
    bk_store_u16le(buf + BK_OFF_HASH, h->hash_alg);
    bk_store_u16le(buf + BK_OFF_RESERVED0, 0);
    bk_store_u32le(buf + BK_OFF_HEADER_LEN, h->header_len);
    bk_store_u64le(buf + BK_OFF_SEED, h->seed);
    bk_store_u64le(buf + BK_OFF_PAYLOAD_LEN, h->payload_len);
    bk_store_u64le(buf + BK_OFF_CHECKSUM, h->checksum);
    bk_store_u32le(buf + BK_OFF_PARAMS_LEN, h->params_len);
    bk_store_u32le(buf + BK_OFF_RESERVED1, 0);
    bk_store_u64le(buf + BK_OFF_KEY_CHECK, h->key_check);
}

void bk_format_init_header(uint8_t *buf, unsigned kind, uint32_t header_len,
                           uint32_t params_len, uint64_t payload_len, uint64_t seed,
                           int keyed, uint64_t key_check)
{
    bk_header h;
    memset(&h, 0, sizeof h);
    h.version_major = BK_VERSION_MAJOR;
    h.version_minor = BK_VERSION_MINOR;
    h.kind = (uint16_t)kind;
    h.flags = (uint16_t)((keyed ? BK_FLAG_KEYED : 0) | BK_FLAG_KEYS_RECORDED);
    h.hash_alg = keyed ? BK_HASH_SIPHASH24 : BK_HASH_XXH3_64;
    h.header_len = header_len;
    h.params_len = params_len;
    h.seed = seed;
    h.payload_len = payload_len;
    h.key_check = keyed ? key_check : 0;
    memset(buf, 0, header_len);
    bk_format_write_header(buf, &h);
}

int bk_format_set_dirty(uint8_t *buf, int dirty)
{
    /* DIRTY is bit 0 of byte 14 (little-endian flags); byte 15 holds the key
     * domains, which another process's writer may be ORing meanwhile. */
    uint8_t low = buf[BK_OFF_FLAGS];
    int was = (low & BK_FLAG_DIRTY) != 0;
    buf[BK_OFF_FLAGS] = dirty ? (uint8_t)(low | BK_FLAG_DIRTY) : (uint8_t)(low & ~BK_FLAG_DIRTY);
    return was;
}

/* XXH3-64 of the header with the checksum field read as zero and the DIRTY
 * flag read as clear: the seed of the payload's hash. */
static uint64_t bk_format_header_seed(const uint8_t *buf, uint32_t header_len)
{
    uint8_t head[BK_MAX_HEADER];
    memcpy(head, buf, header_len);
    bk_store_u64le(head + BK_OFF_CHECKSUM, 0);
    bk_store_u16le(head + BK_OFF_FLAGS,
                   (uint16_t)(bk_load_u16le(head + BK_OFF_FLAGS) & ~BK_FLAG_DIRTY));
    return bk_hash_xxh3_64(head, header_len, 0);
}

uint64_t bk_format_checksum(const uint8_t *buf, uint64_t len)
{
    /* The caller has run bk_format_parse, so header_len <= 4096 <= len. */
    uint32_t header_len = bk_load_u32le(buf + BK_OFF_HEADER_LEN);

    if (header_len < BK_FIXED_HEADER || header_len > BK_MAX_HEADER || header_len > len)
        return 0;
    return bk_hash_xxh3_64(buf + header_len, (size_t)(len - header_len),
                      bk_format_header_seed(buf, header_len));
}

void bk_format_checksum_begin(bk_hash_xxh3_stream *st, const uint8_t *header, uint32_t header_len)
{
    bk_hash_xxh3_stream_init(st, bk_format_header_seed(header, header_len));
}

void bk_format_seal(uint8_t *buf, uint64_t len)
{
    bk_store_u64le(buf + BK_OFF_CHECKSUM, bk_format_checksum(buf, len));
}
