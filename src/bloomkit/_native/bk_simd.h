/*
 * bk_simd.h -- run-time selected SIMD paths (AVX2) for the blocked Bloom
 * filter's queries and private adds.  See bk_simd.c for the method; the scalar code in
 * bk_bloom.h is the reference and sets/tests IDENTICAL bits.
 */
#ifndef BK_SIMD_H
#define BK_SIMD_H

#include "bk_common.h"

/* 1 while the AVX2 paths are in use: set by bk_simd_init() from the CPU,
 * and by bk_simd_set() (tests force the scalar paths through it).  Read
 * on every blocked query: a predictable branch on an L1-resident int. */
extern int bk_simd_avx2;

/* Detect the CPU (and whether this build has the AVX2 code at all). */
void bk_simd_init(void);
/* Enable (if supported) or disable; returns the new state. */
int bk_simd_set(int on);
/* 1 when this CPU and build could run the AVX2 paths. */
int bk_simd_supported(void);

/* The k (1..24) bits of the 512-bit block blk selected by the low 32 bits
 * g of a key hash: 1 if all are set (== bk_bloom_blocked_contains). */
int bk_simd_blocked_contains_avx2(const uint64_t *blk, uint32_t g, uint32_t k);

/* The same for layout version 1, whose positions come from the whole
 * 64-bit key hash h (bk_bloom_stream_word). */
int bk_simd_blocked1_contains_avx2(const uint64_t *blk, uint64_t h, uint32_t k);

/* Batch query, prefetching ahead: out[i] = contains(hs[i]) for a filter of
 * layout version `version` (BK_BLOOM_VERSION_*). */
void bk_simd_blocked_contains_many_avx2(const uint64_t *words, uint64_t num_blocks, uint32_t k,
                                        uint32_t version, const uint64_t *hs, size_t n,
                                        uint8_t *out);

/* Private (non-atomic) add of the k bits of version 0 (the low 32 bits g
 * of the hash): returns 1 if some bit was clear (== bk_bloom_blocked_add(...,
 * atomic=0)); writes nothing when all were set.  A version-1 single add
 * takes bk_bloom_blocked_add's scalar loop (bk_bloom.h says why); the
 * batch below keeps the vector test for both versions. */
int bk_simd_blocked_add_avx2(uint64_t *blk, uint32_t g, uint32_t k);

/* Batch private add, prefetching ahead: returns how many keys were new. */
uint64_t bk_simd_blocked_add_many_avx2(uint64_t *words, uint64_t num_blocks, uint32_t k,
                                       uint32_t version, const uint64_t *hs, size_t n);

/* The counting filter's blocked layout with 4-bit counters
 * (bk_counting.h): 1 if the k (1..24) nibbles of the 64-byte block blk
 * that key hash h selects are all nonzero (==
 * bk_counting_blocked4_contains).  The batch form prefetches ahead over
 * a payload of num_blocks blocks: out[i] = contains(hs[i]). */
int bk_simd_counting4_contains_avx2(const uint8_t *blk, uint64_t h, uint32_t k);
void bk_simd_counting4_contains_many_avx2(const uint8_t *bytes, uint64_t num_blocks, uint32_t k,
                                          const uint64_t *hs, size_t n, uint8_t *out);

/* A scalable chain of nlinks blocked links of layout version 1 (link l:
 * words[l], num_blocks[l], k[l] <= 24): out[i] = 1 if some link holds
 * hs[i] (== bk_bloom_contains on every link, OR'ed).  Each key's stream
 * words are derived once, then the links are visited one after the other
 * over a group of keys, prefetching ahead. */
void bk_simd_chain1_contains_many_avx2(const uint64_t *const *words, const uint64_t *num_blocks,
                                       const uint32_t *k, uint32_t nlinks, const uint64_t *hs,
                                       size_t n, uint8_t *out);

/* Per key, on the same chains: contains (links newest first, the first
 * holder ends it; the caller prefetched every link's line), and the
 * private add to the newest link, words[nlinks - 1] == newest: 0 when some
 * link holds h (nothing written), else its k bits set in the newest link
 * and 1 (== bk_scalable_add_newest). */
int bk_simd_chain1_contains_avx2(const uint64_t *const *words, const uint64_t *num_blocks,
                                 const uint32_t *k, uint32_t nlinks, uint64_t h);
int bk_simd_chain1_add_avx2(const uint64_t *const *words, const uint64_t *num_blocks,
                            const uint32_t *k, uint32_t nlinks, uint64_t *newest, uint64_t h);

/* The growable filter (bk_grow.c): the match test of its 32 16-bit slots
 * on two ymm registers.  match2: 1 if bucket b0 holds an entry matching
 * f0 or b1 one matching f1; probe2 the same and the fill of each (the
 * first empty slot, 32 when full); contains_many the batch query of
 * bk_grow_contains_many. */
struct bk_grow;
int bk_simd_grow_match2_avx2(const uint8_t *b0, uint16_t f0, const uint8_t *b1, uint16_t f1);
int bk_simd_grow_probe2_avx2(const uint8_t *b0, uint16_t f0, const uint8_t *b1, uint16_t f1,
                             unsigned *c0, unsigned *c1);
void bk_simd_grow_contains_many_avx2(const struct bk_grow *g, const uint64_t *hs, size_t n,
                                     uint8_t *out);

/* The sliding filter's blocked layout (bk_sliding_blocked.c): bit p of
 * the result is bit ((x_p * mul[p]) mod 2^32) >> 27 of u32 lane p of the
 * 128-byte block blk, x_p the low (p < 16) or high 32 bits of w (==
 * bk_sliding_blocked_has's scalar loop). */
uint64_t bk_simd_sliding_has_avx2(const uint64_t *blk, uint64_t w, const uint32_t *mul);
/* The same for n keys of a payload of `blocks` blocks (key hash hs[i]:
 * block mulhi(hs[i], blocks), w = mix64(hs[i] + GAMMA)), prefetching
 * ahead: has[i] for each. */
void bk_simd_sliding_has_many_avx2(const uint64_t *slices, uint64_t blocks, const uint64_t *hs,
                                   size_t n, const uint32_t *mul, uint64_t *has);

#endif /* BK_SIMD_H */
