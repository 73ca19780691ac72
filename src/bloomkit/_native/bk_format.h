/*
 * bk_format.h -- the one container every bloomkit structure is stored in.
 *
 * See bk_format.c for the byte layout and docs/FORMAT.md for the spec.
 */
#ifndef BK_FORMAT_H
#define BK_FORMAT_H

#include "bk_common.h"
#include "bk_hash.h"

#define BK_MAGIC "\x89" "BKF\r\n\x1a\n"   /* 8 bytes, PNG-style */
#define BK_MAGIC_LEN 8
#define BK_VERSION_MAJOR 1
#define BK_VERSION_MINOR 0
#define BK_FIXED_HEADER 64                  /* fixed part of every header */
#define BK_ALIGN 64                         /* header_len and payload alignment */
#define BK_MAX_HEADER 4096                  /* header_len limit (params area) */

/* Field offsets in the fixed header (all little-endian). */
#define BK_OFF_MAGIC 0
#define BK_OFF_VMAJOR 8
#define BK_OFF_VMINOR 10
#define BK_OFF_KIND 12
#define BK_OFF_FLAGS 14
#define BK_OFF_HASH 16
#define BK_OFF_RESERVED0 18
#define BK_OFF_HEADER_LEN 20
#define BK_OFF_SEED 24
#define BK_OFF_PAYLOAD_LEN 32
#define BK_OFF_CHECKSUM 40
#define BK_OFF_PARAMS_LEN 48
#define BK_OFF_RESERVED1 52
#define BK_OFF_KEY_CHECK 56
#define BK_OFF_PARAMS 64

/* Structure kinds: the ids of bk_kinds.def (fixed forever; new kinds take
 * new ids), BK_KIND_MAX_ one past the last. */
typedef enum {
#define BK_KIND(NAME, id) BK_KIND_##NAME = id,
#include "bk_kinds.def"
    BK_KIND_MAX_
} bk_kind;

/* Hash algorithms. */
#define BK_HASH_XXH3_64 1    /* unkeyed: XXH3-64 seeded with the header seed */
#define BK_HASH_SIPHASH24 2  /* keyed: SipHash-2-4, key from the user's secret */

/* Flags.  Bits 0-7 are "incompatible": a reader that does not know a set
 * bit must refuse the file.  Bits 8-15 are "compatible": a reader ignores
 * the ones it does not know (room for a later minor version). */
#define BK_FLAG_DIRTY 0x0001u  /* mapped "r+" by a writer that has not closed */
#define BK_FLAG_KEYED 0x0002u  /* hashed with SipHash under a secret */
#define BK_FLAGS_INCOMPAT_MASK 0x00FFu
#define BK_FLAGS_KNOWN (BK_FLAG_DIRTY | BK_FLAG_KEYED)

/* The key domains (compatible flags, issue #31 item 1): which hash domains
 * of the one key encoding (bk_keys.h) the keys ever added were in, so that
 * every face (the CLI's query above all) can hash a typed-in key the way the
 * filter was built.  Bits 8-10 are bits 0-2 of header byte 15 (the flags'
 * high byte), so a writer ORs one byte and never touches DIRTY (byte 14):
 *   KEYS_INT        an int was added (integer domain)
 *   KEYS_TEXT       a str or a bytes-like key was added (byte domain: str is
 *                   its UTF-8 bytes, so text and bytes are one domain)
 *   bit 10          reserved (0): a later split of text from bytes
 *   KEYS_RECORDED   the state was made by a bloomkit that records domains
 *                   (bk_format_init_header sets it): bits 8-10 are complete.
 *                   Without it (files written before, Redis-made states) the
 *                   domains are unknown and faces answer as they always did.
 * Bits are only ever set (a union ORs them and keeps RECORDED only when both
 * sides have it; a removal clears nothing), so the record is a superset of
 * the domains present.  An older bloomkit ignores these bits, and one that
 * adds keys to a newer file does not update them (docs/FORMAT.md). */
#define BK_FLAG_KEYS_INT 0x0100u
#define BK_FLAG_KEYS_TEXT 0x0200u
#define BK_FLAG_KEYS_RECORDED 0x0800u
#define BK_FLAG_KEYS_MASK (BK_FLAG_KEYS_INT | BK_FLAG_KEYS_TEXT | BK_FLAG_KEYS_RECORDED)
#define BK_OFF_KEY_FLAGS 15 /* the byte that holds them (flags >> 8) */

typedef struct {
    uint16_t version_major, version_minor;
    uint16_t kind, flags, hash_alg;
    uint32_t header_len;     /* bytes before the payload; multiple of 64 */
    uint32_t params_len;     /* bytes of kind parameters from offset 64 */
    uint64_t seed;
    uint64_t payload_len;
    uint64_t checksum;
    uint64_t key_check;      /* keyed filters: SipHash of a fixed message */
} bk_header;

/* Validation levels for bk_format_validate. */
#define BK_CHECK_CHECKSUM 1  /* verify the checksum (O(payload)) */
#define BK_CHECK_DEEP 2      /* kind validators may scan the payload */
#define BK_ALLOW_DIRTY 4     /* accept a file marked open for writing */

/* Parse and bound-check the fixed header of buf[0..len): magic, version,
 * lengths (overflow-checked, header_len + payload_len == len exactly).
 * Does not look at kind parameters.  On error *reason names the problem. */
bk_rc bk_format_parse(const uint8_t *buf, uint64_t len, bk_header *h,
                      const char **reason);

/* The one validator: bk_format_parse, then the flags, the checksum (when
 * asked), then the kind's own validator on its parameters and payload. */
bk_rc bk_format_validate(const uint8_t *buf, uint64_t len, int checks,
                         bk_header *h, const char **reason);

/* The same checks after bk_format_parse succeeded on (buf, len) into *h:
 * for a caller that looks at the parsed header first (bloomkit.load picks
 * the class by its kind) without parsing it twice. */
bk_rc bk_format_validate_parsed(const uint8_t *buf, uint64_t len, int checks,
                                const bk_header *h, const char **reason);

/* Write the fixed header fields of h into buf[0..64) (checksum included
 * as given; params are the caller's). */
void bk_format_write_header(uint8_t *buf, const bk_header *h);

/* The checksum: XXH3-64 of the payload, seeded with the XXH3-64 of the
 * header (checksum field read as zero, DIRTY flag read as clear). */
uint64_t bk_format_checksum(const uint8_t *buf, uint64_t len);

/* The same checksum computed incrementally, for a state written out in
 * pieces (save() streams a state of any size through a bounded buffer):
 * bk_format_checksum_begin with the header_len bytes of the header (its
 * checksum field and DIRTY flag are ignored, as above), then
 * bk_hash_xxh3_stream_update with the payload in any pieces, then
 * bk_hash_xxh3_stream_digest.  header_len must be in [64, BK_MAX_HEADER]. */
void bk_format_checksum_begin(bk_hash_xxh3_stream *st, const uint8_t *header, uint32_t header_len);

/* The one writer of a fresh header: zero buf[0..header_len), then write
 * the fixed fields of a state of this kind (current format version; keyed
 * states get the KEYED flag, SipHash-2-4 and key_check, unkeyed ones XXH3
 * and key_check 0; KEYS_RECORDED with no domain yet; checksum 0).  The kind's params (from offset 64) are
 * the caller's.  header_len must be in [64, BK_MAX_HEADER]. */
void bk_format_init_header(uint8_t *buf, unsigned kind, uint32_t header_len,
                           uint32_t params_len, uint64_t payload_len, uint64_t seed,
                           int keyed, uint64_t key_check);

/* Set (dirty != 0) or clear the DIRTY flag in place (byte 14 only: a
 * concurrent writer may be ORing a key domain into byte 15); returns
 * whether it was set before.  The checksum does not cover the flag (see
 * bk_format_checksum), so a seal stays valid across this call. */
int bk_format_set_dirty(uint8_t *buf, int dirty);

/* Recompute and store the checksum. */
void bk_format_seal(uint8_t *buf, uint64_t len);

/* Round up to the 64-byte alignment; returns 0 on overflow. */
uint64_t bk_format_align(uint64_t n);

/* Per-kind validator: runs after the prologue every kind shares
 * (bk_format_check_kind, bk_kind.h: params long enough, format 1.0's
 * header_len, capacity and stored error rate); checks the kind's own
 * parameters and payload length and, with BK_CHECK_DEEP, payload
 * invariants. */
typedef bk_rc (*bk_kind_validator)(const bk_header *h, const uint8_t *params,
                                   const uint8_t *payload, int checks,
                                   const char **reason);

const char *bk_format_kind_name(unsigned kind);

#endif /* BK_FORMAT_H */
