/*
 * bk_scalable.h -- the scalable Bloom filter: one container of kind 4 whose
 * payload is a chain of Bloom filter containers (see bk_scalable.c).
 */
#ifndef BK_SCALABLE_H
#define BK_SCALABLE_H

#include "bk_bloom.h"
#include "bk_common.h"
#include "bk_format.h"

/* Parameter block (offsets from the params area at byte 64). */
#define BK_SCALABLE_P_ERROR_RATE 0   /* f64 target compound rate P */
#define BK_SCALABLE_P_TIGHTENING 8   /* f64 r: link i has rate P (1 - r) r^i */
#define BK_SCALABLE_P_INITIAL 16     /* u64 capacity of link 0 */
#define BK_SCALABLE_P_GROWTH 24      /* u32 s: link i has capacity n0 s^i */
#define BK_SCALABLE_P_NUM_LINKS 28   /* u32 L */
#define BK_SCALABLE_P_LAYOUT 32      /* u32 0 classic, 1 blocked */
#define BK_SCALABLE_P_RESERVED 36    /* u32 0 */
#define BK_SCALABLE_P_LINK_LENS 40   /* L x u64: container length of each link */
#define BK_SCALABLE_PARAMS_FIXED 40

#define BK_SCALABLE_MAX_LINKS 64u     /* chain length limit (2^48 capacity is hit first) */
#define BK_SCALABLE_MIN_GROWTH 2u
#define BK_SCALABLE_MAX_GROWTH 16u
#define BK_SCALABLE_MAX_CAPACITY (1ULL << 48)

/* params_len and header_len of a chain of L links. */
static inline uint32_t bk_scalable_params_len(uint32_t num_links)
{
    return BK_SCALABLE_PARAMS_FIXED + 8u * num_links;
}

static inline uint32_t bk_scalable_header_len(uint32_t num_links)
{
    return (uint32_t)bk_format_align(BK_OFF_PARAMS + bk_scalable_params_len(num_links));
}

/* Capacity of link i: n0 * s^i, or 0 when it exceeds 2^48. */
uint64_t bk_scalable_link_capacity(uint64_t n0, uint32_t growth, uint32_t i);

/* Error rate of link i: P (1 - r) r^i. */
double bk_scalable_link_error(double p, double r, uint32_t i);

/* Check that a link shape fits the chain's scheme at index i (used both
 * by the validator and before growing). */
bk_rc bk_scalable_check_link(double p, double r, uint64_t n0, uint32_t growth, uint32_t i,
                             uint64_t capacity, double error_rate, const char **reason);

bk_rc bk_scalable_validate(const bk_header *h, const uint8_t *params, const uint8_t *payload,
                           int checks, const char **reason);

#endif /* BK_SCALABLE_H */
