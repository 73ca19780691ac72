/*
 * bk_simd.c -- AVX2 queries for the blocked Bloom filter, chosen at run time.
 *
 * A blocked key tests k bits of one 512-bit block; in layout version 0
 * bit i is pos_i = ((u32)h * salt[i]) >> 23 (bk_bloom.h).  The scalar loop
 * costs ~11 instructions per probe (callgrind: ~86 per query at k = 7,
 * more than the hash).  Here eight probes are one group of 32-bit lanes:
 *
 *   pos   = (g * salt) >> 23           vpmulld, vpsrld     (8 positions)
 *         version 1: the 8 16-bit lanes of stream words 2t and 2t+1 of
 *         group t, widened to dwords and >> 7   vpmovzxwd, vpsrld
 *         (the words themselves are two scalar mix64s)
 *   dword = pos >> 5  (0..15)          the block as 16 LE dwords (2 ymm)
 *   word  = vpermd(lo, dword) or vpermd(hi, dword), picked by dword bit 3
 *   bit   = 1 << (pos & 31)            vpsllvd, lanes >= k masked off
 *   all set  <=>  vptest: (~word & bit) == 0
 *
 * about 14 instructions for up to 8 probes (k <= 24 takes 1-3 groups).
 * Bit pos of the block is bit pos % 32 of dword pos / 32 exactly because
 * the payload words are little-endian, and AVX2 only exists on
 * little-endian x86: the bits tested are the scalar path's bits, and
 * tests/test_paths.py checks both paths agree key by key.
 *
 * Selection: with GCC and clang the functions carry BK_TARGET_AVX2 (a
 * target attribute, bk_intrin.h), so the build never needs -mavx2 and the
 * module loads on any x86-64 (or other) CPU; with MSVC they need nothing
 * (cl.exe compiles AVX2 intrinsics in any function, and setup.py passes no
 * /arch).  bk_simd_init() turns them on when the CPU has AVX2 and BMI2,
 * the OS saves the YMM registers, and BLOOMKIT_NO_SIMD is unset.  The CPU
 * is asked through __builtin_cpu_supports (GCC/clang, which checks XCR0
 * too) or, on every _MSC_VER compiler, through CPUID and XGETBV: leaf 1
 * ECX bit 27 (OSXSAVE) and 28 (AVX), XCR0 bits 1-2 (XMM and YMM state),
 * leaf 7 EBX bit 5 (AVX2) and bit 8 (BMI2) -- Intel SDM vol. 2A, CPUID;
 * vol. 1 section 14.3, "detection of AVX".  Elsewhere this file compiles
 * to stubs and bk_simd_avx2 stays 0.
 *
 * Adds (private writers only; shared mappings keep the scalar atomic path
 * of bk_bloom.h): the same vector computes the k positions and tests them,
 * which answers "was the key new?" without reading a word per probe; a key
 * whose bits are all set writes nothing.  Otherwise the positions go
 * through an 8-lane stack array into k `or [word], 1 << pos` stores (BMI2
 * shlx: about 5 instructions a probe, against ~19 for the scalar
 * read-test-or-write loop; callgrind, 2e5 numpy keys, k = 6: the add loop
 * went from 150 to 73 instructions per key; 1 group of 8 lanes and an
 * unrolled store sequence for k <= 8).  Scattering the bits with
 * vector instructions instead costs more: AVX2 has no scatter, and
 * building 16 dword masks from 8 lanes takes ~8 instructions a lane.
 */
#include "bk_simd.h"
#include "bk_grow.h"

#include <stdlib.h>

#include "bk_bloom.h"

int bk_simd_avx2 = 0;

#if BK_X86_DISPATCH /* bk_intrin.h: GCC/clang on x86, MSVC on x64 */
#define BK_SIMD_HAVE_AVX2 1
#include <immintrin.h>
#if defined(_MSC_VER)
#include <intrin.h> /* __cpuid, __cpuidex (cl.exe and clang-cl) */
#endif
#if defined(_MSC_VER) && defined(__clang__) && !defined(__AVX2__)
/* clang-cl's <immintrin.h> (clang 14 at least) declares the AVX and AVX2
 * intrinsics only when the whole file is built for AVX2; cl.exe always
 * does.  Their own headers, after <immintrin.h>, declare them for the
 * target("avx2") functions below without -mavx2.  The same holds for the
 * SSSE3 and SSE4.1 ones of the counting query (pshufb, pblendvb). */
#include <tmmintrin.h>
#include <smmintrin.h>
#include <avxintrin.h>
#include <avx2intrin.h>
#endif
#else
#define BK_SIMD_HAVE_AVX2 0
#endif

/* How far ahead the batch query prefetches (keys).  Must be >= 1; 8..32 all
 * measured within noise of each other at 10^7 keys; see bk_bloom.c. */
#define BK_SIMD_AHEAD 16
/* The blocked filter's batch query looks further ahead: a 10^8-key filter
 * (124 MB) misses DRAM and the TLB on every key, ~150-180 ns on the AMD
 * guest, and its loop is ~9 ns of work a key, so 16 keys ahead leave the
 * misses partly exposed.  At 10^8 keys, five alternated rounds (thread CPU
 * time, ns a key): 16 ahead 15.5-17.4, 32 ahead 14.3-15.4, 48 and 64 no
 * better than 32 (docs/scale.md).  A power of two: the block pointers wait
 * in a ring of this size. */
#define BK_SIMD_QUERY_AHEAD 32

#if BK_SIMD_HAVE_AVX2 && defined(_MSC_VER)
/* CPUID + XGETBV (see the top).  clang-cl needs the xsave target for
 * _xgetbv; cl.exe has no such attribute and needs none. */
#if BK_CC_GNU
__attribute__((target("xsave")))
#endif
static int bk_simd_cpuid_avx2_bmi2(void)
{
    int r[4]; /* EAX, EBX, ECX, EDX */
    __cpuid(r, 0);
    if (r[0] < 7)
        return 0;
    __cpuid(r, 1);
    if ((r[2] & (1 << 27)) == 0 || (r[2] & (1 << 28)) == 0)
        return 0;   /* no OSXSAVE (XGETBV would fault) or no AVX */
    if ((_xgetbv(0) & 6) != 6)
        return 0;   /* the OS does not save XMM and YMM state */
    __cpuidex(r, 7, 0);
    return (r[1] & (1 << 5)) != 0 && (r[1] & (1 << 8)) != 0;
}
#endif

int bk_simd_supported(void)
{
#if BK_SIMD_HAVE_AVX2 && defined(_MSC_VER)
    return bk_simd_cpuid_avx2_bmi2();
#elif BK_SIMD_HAVE_AVX2
    /* The add path also uses BMI2 (shlx): every AVX2 CPU so far has it,
     * but a hypervisor may hide one and not the other. */
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("bmi2") ? 1 : 0;
#else
    return 0;
#endif
}

void bk_simd_init(void)
{
    const char *env = getenv("BLOOMKIT_NO_SIMD");
    int off = env != NULL && env[0] != '\0' && !(env[0] == '0' && env[1] == '\0');
    bk_simd_avx2 = !off && bk_simd_supported();
}

int bk_simd_set(int on)
{
    bk_simd_avx2 = on && bk_simd_supported();
    return bk_simd_avx2;
}

#if BK_SIMD_HAVE_AVX2

#define BK_AVX2 BK_TARGET_AVX2
#define BK_AVX2_BMI2 BK_TARGET_AVX2_BMI2

/* The eight in-block positions of probes base..base+7: (g * salt) >> 23. */
BK_AVX2 static inline __m256i bk_simd_pos(__m256i gv, const uint32_t *salt)
{
    __m256i s = _mm256_loadu_si256((const __m256i *)(const void *)salt);
    return _mm256_srli_epi32(_mm256_mullo_epi32(gv, s), 23);
}

/* 1 if the bits at the lanes of pos that `valid` selects (all ones) are
 * all set in the block held as 16 dwords in lo (0..7) and hi (8..15). */
BK_AVX2 static inline int bk_simd_test_lanes(__m256i lo, __m256i hi, __m256i pos, __m256i valid)
{
    __m256i dw = _mm256_srli_epi32(pos, 5);
    __m256i wlo = _mm256_permutevar8x32_epi32(lo, dw);
    __m256i whi = _mm256_permutevar8x32_epi32(hi, dw);
    __m256i w = _mm256_castps_si256(_mm256_blendv_ps(_mm256_castsi256_ps(wlo),
                                                     _mm256_castsi256_ps(whi),
                                                     _mm256_castsi256_ps(_mm256_slli_epi32(dw, 28))));
    __m256i bit = _mm256_sllv_epi32(_mm256_set1_epi32(1),
                                    _mm256_and_si256(pos, _mm256_set1_epi32(31)));
    return _mm256_testc_si256(w, _mm256_and_si256(bit, valid));
}

/* The lanes 0..left-1 (left >= 1). */
BK_AVX2 static inline __m256i bk_simd_first_lanes(int32_t left)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(left), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/* 1 if the bits at the first `left` (>= 1) lanes of pos are all set. */
BK_AVX2 static inline int bk_simd_test(__m256i lo, __m256i hi, __m256i pos, int32_t left)
{
    return bk_simd_test_lanes(lo, hi, pos, bk_simd_first_lanes(left));
}

/* Version 1: the eight positions of probes 8t..8t+7, the top 9 bits of the
 * 16-bit lanes of stream words 2t (lanes 0-3) and 2t+1 (lanes 4-7):
 * lane i of the widened vector is bits 16i..16i+15 of the 128-bit LE pair,
 * i.e. bk_bloom_stream_pos of the scalar path. */
BK_AVX2 static inline __m256i bk_simd_pos1(uint64_t w_lo, uint64_t w_hi)
{
    __m128i x = _mm_set_epi64x((long long)w_hi, (long long)w_lo);
    return _mm256_srli_epi32(_mm256_cvtepu16_epi32(x), 7);
}

/* Words 2t and 2t+1 of h's stream; the second only when group t has more
 * than 4 probes (left = k - 8t). */
BK_AVX2 static inline __m256i bk_simd_group1(uint64_t h, uint32_t t, uint32_t left)
{
    uint64_t w_lo = bk_bloom_stream_word(h, 2 * t);
    uint64_t w_hi = left > 4 ? bk_bloom_stream_word(h, 2 * t + 1) : 0;
    return bk_simd_pos1(w_lo, w_hi);
}

BK_AVX2 static inline int bk_simd_probe1(const uint64_t *blk, uint64_t h, uint32_t k)
{
    __m256i lo = _mm256_loadu_si256((const __m256i *)(const void *)blk);
    __m256i hi = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 4));
    int ok = 1;
    for (uint32_t t = 0; 8 * t < k; t++)
        ok &= bk_simd_test(lo, hi, bk_simd_group1(h, t, k - 8 * t), (int32_t)(k - 8 * t));
    return ok;
}

BK_AVX2 static inline int bk_simd_probe(const uint64_t *blk, uint32_t g, uint32_t k)
{
    __m256i lo = _mm256_loadu_si256((const __m256i *)(const void *)blk);
    __m256i hi = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 4));
    __m256i gv = _mm256_set1_epi32((int)g);
    int ok = bk_simd_test(lo, hi, bk_simd_pos(gv, bk_bloom_salt), (int32_t)k);
    for (uint32_t base = 8; base < k; base += 8)   /* k <= 24: salt[base..base+8) exists */
        ok &= bk_simd_test(lo, hi, bk_simd_pos(gv, bk_bloom_salt + base), (int32_t)(k - base));
    return ok;
}

/* OR the k bits at pos[0..k) into the block.  Unrolled for the usual k
 * (<= 8: error rates down to ~0.5%); each case is one shlx and one `or` to
 * memory. */
BK_AVX2_BMI2 static inline void
bk_simd_or_bits(uint64_t *blk, const uint32_t *pos, uint32_t k)
{
#define BK_SIMD_OR(i) blk[pos[i] >> 6] |= 1ULL << (pos[i] & 63)
    switch (k) {
    default:
        for (uint32_t i = 8; i < k; i++)
            BK_SIMD_OR(i);
        /* fall through */
    case 8: BK_SIMD_OR(7); /* fall through */
    case 7: BK_SIMD_OR(6); /* fall through */
    case 6: BK_SIMD_OR(5); /* fall through */
    case 5: BK_SIMD_OR(4); /* fall through */
    case 4: BK_SIMD_OR(3); /* fall through */
    case 3: BK_SIMD_OR(2); /* fall through */
    case 2: BK_SIMD_OR(1); /* fall through */
    case 1: BK_SIMD_OR(0);
    }
#undef BK_SIMD_OR
}

/* Private add: test all k bits with the vector, then OR in the missing
 * pattern one probe at a time (every probe, set or not: cheaper than a
 * branch per probe).  Returns 1 if some bit was clear. */
BK_AVX2_BMI2 static inline int bk_simd_add(uint64_t *blk, uint32_t g, uint32_t k)
{
    uint32_t pos[BK_BLOOM_MAX_K_BLOCKED];
    __m256i lo = _mm256_loadu_si256((const __m256i *)(const void *)blk);
    __m256i hi = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 4));
    __m256i gv = _mm256_set1_epi32((int)g);
    __m256i p = bk_simd_pos(gv, bk_bloom_salt);
    int ok = bk_simd_test(lo, hi, p, (int32_t)k);
    _mm256_storeu_si256((__m256i *)(void *)pos, p);
    for (uint32_t base = 8; base < k; base += 8) {   /* k <= 24: salt[base..base+8) exists */
        p = bk_simd_pos(gv, bk_bloom_salt + base);
        ok &= bk_simd_test(lo, hi, p, (int32_t)(k - base));
        _mm256_storeu_si256((__m256i *)(void *)(pos + base), p);
    }
    if (ok)
        return 0;
    bk_simd_or_bits(blk, pos, k);
    return 1;
}

/* Version 1 of bk_simd_add: the positions of bk_simd_group1. */
BK_AVX2_BMI2 static inline int bk_simd_add1(uint64_t *blk, uint64_t h, uint32_t k)
{
    uint32_t pos[BK_BLOOM_MAX_K_BLOCKED];
    __m256i lo = _mm256_loadu_si256((const __m256i *)(const void *)blk);
    __m256i hi = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 4));
    int ok = 1;
    for (uint32_t t = 0; 8 * t < k; t++) {   /* k <= 24: pos[8t..8t+8) exists */
        __m256i p = bk_simd_group1(h, t, k - 8 * t);
        ok &= bk_simd_test(lo, hi, p, (int32_t)(k - 8 * t));
        _mm256_storeu_si256((__m256i *)(void *)(pos + 8 * t), p);
    }
    if (ok)
        return 0;
    bk_simd_or_bits(blk, pos, k);
    return 1;
}

BK_AVX2 int bk_simd_blocked1_contains_avx2(const uint64_t *blk, uint64_t h, uint32_t k)
{
    return bk_simd_probe1(blk, h, k);
}

BK_AVX2_BMI2 int bk_simd_blocked_add_avx2(uint64_t *blk, uint32_t g, uint32_t k)
{
    return bk_simd_add(blk, g, k);
}

BK_AVX2_BMI2 uint64_t
bk_simd_blocked_add_many_avx2(uint64_t *words, uint64_t num_blocks, uint32_t k,
                              uint32_t version, const uint64_t *hs, size_t n)
{
    uint64_t added = 0;
    size_t i;
    for (i = 0; i < n && i < BK_SIMD_AHEAD; i++)
        bk_prefetch_w(words + bk_mulhi64(hs[i], num_blocks) * BK_BLOCK_WORDS);
    for (i = 0; i < n; i++) {
        if (i + BK_SIMD_AHEAD < n)
            bk_prefetch_w(words + bk_mulhi64(hs[i + BK_SIMD_AHEAD], num_blocks) * BK_BLOCK_WORDS);
        uint64_t *blk = words + bk_mulhi64(hs[i], num_blocks) * BK_BLOCK_WORDS;
        if (version == BK_BLOOM_VERSION_STREAM)   /* one predictable branch */
            added += (uint64_t)bk_simd_add1(blk, hs[i], k);
        else
            added += (uint64_t)bk_simd_add(blk, (uint32_t)hs[i], k);
    }
    return added;
}

BK_AVX2 int bk_simd_blocked_contains_avx2(const uint64_t *blk, uint32_t g, uint32_t k)
{
    return bk_simd_probe(blk, g, k);
}

/* Version 1 with k <= 8 (error rates down to ~0.4%: the usual case): one
 * group, its lane mask computed once a batch instead of once a key. */
BK_AVX2 static inline int bk_simd_probe1_k8(const uint64_t *blk, uint64_t h, uint32_t k,
                                            __m256i valid)
{
    __m256i lo = _mm256_loadu_si256((const __m256i *)(const void *)blk);
    __m256i hi = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 4));
    __m256i pos = bk_simd_pos1(bk_bloom_stream_word(h, 0),
                               k > 4 ? bk_bloom_stream_word(h, 1) : 0);
    return bk_simd_test_lanes(lo, hi, pos, valid);
}

/* The batch query: each key's block pointer is computed once, when it is
 * prefetched, and waits in a ring until its probe; the layout version and
 * the k <= 8 case are decided once a batch, not once a key.  Callgrind,
 * 2*10^6 int64 keys, k = 7: 97 -> 65 instructions a key in this loop, 120
 * -> 88 for the whole contains_many (hashing included). */
BK_AVX2 void bk_simd_blocked_contains_many_avx2(const uint64_t *words, uint64_t num_blocks,
                                                uint32_t k, uint32_t version, const uint64_t *hs,
                                                size_t n, uint8_t *out)
{
    const uint64_t *ring[BK_SIMD_QUERY_AHEAD];
    const size_t mask = BK_SIMD_QUERY_AHEAD - 1;
    const int k8 = version == BK_BLOOM_VERSION_STREAM && k <= 8;
    const __m256i valid = bk_simd_first_lanes((int32_t)(k < 8 ? k : 8));
    size_t i;
    for (i = 0; i < n && i < BK_SIMD_QUERY_AHEAD; i++) {
        ring[i] = words + bk_mulhi64(hs[i], num_blocks) * BK_BLOCK_WORDS;
        bk_prefetch_r(ring[i]);
    }
    for (i = 0; i < n; i++) {
        const uint64_t *blk = ring[i & mask];
        if (i + BK_SIMD_QUERY_AHEAD < n) {
            const uint64_t *next =
                words + bk_mulhi64(hs[i + BK_SIMD_QUERY_AHEAD], num_blocks) * BK_BLOCK_WORDS;
            bk_prefetch_r(next);
            ring[i & mask] = next;
        }
        if (k8)
            out[i] = (uint8_t)bk_simd_probe1_k8(blk, hs[i], k, valid);
        else if (version == BK_BLOOM_VERSION_STREAM)
            out[i] = (uint8_t)bk_simd_probe1(blk, hs[i], k);
        else
            out[i] = (uint8_t)bk_simd_probe(blk, (uint32_t)hs[i], k);
    }
}

/* ---- Begin logic for the counting filter's 4-bit blocked layout -------
 *
 * The block is 64 bytes of 128 nibbles; position p (the top 7 bits of a
 * 16-bit lane v of the stream, bk_counting_stream_pos) is the low nibble
 * of byte p >> 1 = v >> 10 when p is even, the high nibble when odd
 * ((v >> 9) & 1).  Eight positions at a time: the byte indices (0..63)
 * look up all four 16-byte quarters of the block with pshufb (which uses
 * bits 0-3 of an index), two blends on bits 4 and 5 of the index pick the
 * quarter, a third blend the nibble.  About 25 vector instructions for
 * eight positions where the scalar loop spends ~20 instructions on each
 * (callgrind: docs/counting.md). */
BK_AVX2 static inline int bk_simd_counting4_probe(const uint8_t *blk, uint64_t h, uint32_t k)
{
    const __m128i q0 = _mm_loadu_si128((const __m128i *)(const void *)blk);
    const __m128i q1 = _mm_loadu_si128((const __m128i *)(const void *)(blk + 16));
    const __m128i q2 = _mm_loadu_si128((const __m128i *)(const void *)(blk + 32));
    const __m128i q3 = _mm_loadu_si128((const __m128i *)(const void *)(blk + 48));
    unsigned zero = 0;
    for (uint32_t t = 0; 8 * t < k; t++) {
        uint32_t left = k - 8 * t;
        /* the same stream as bk_counting_stream_word (and BlockedBloomFilter v1) */
        uint64_t w_lo = bk_bloom_stream_word(h, 2 * t);
        uint64_t w_hi = left > 4 ? bk_bloom_stream_word(h, 2 * t + 1) : 0;
        __m128i x = _mm_set_epi64x((long long)w_hi, (long long)w_lo);
        __m128i idx = _mm_srli_epi16(x, 10);   /* byte index, 0..63: no saturation below */
        __m128i odd = _mm_and_si128(_mm_srli_epi16(x, 9), _mm_set1_epi16(1));
        __m128i ib = _mm_packus_epi16(idx, idx);
        __m128i ob = _mm_cmpeq_epi8(_mm_packus_epi16(odd, odd), _mm_set1_epi8(1));
        /* bit 4 (5) of every index byte to its bit 7, which blendv reads
         * (the 16-bit shifts move no other byte's bit into bit 7) */
        __m128i s4 = _mm_slli_epi16(ib, 3), s5 = _mm_slli_epi16(ib, 2);
        __m128i r01 = _mm_blendv_epi8(_mm_shuffle_epi8(q0, ib), _mm_shuffle_epi8(q1, ib), s4);
        __m128i r23 = _mm_blendv_epi8(_mm_shuffle_epi8(q2, ib), _mm_shuffle_epi8(q3, ib), s4);
        __m128i r = _mm_blendv_epi8(r01, r23, s5);
        __m128i nib = _mm_blendv_epi8(_mm_and_si128(r, _mm_set1_epi8(0x0F)),
                                      _mm_and_si128(r, _mm_set1_epi8((char)0xF0)), ob);
        unsigned z = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(nib, _mm_setzero_si128()));
        zero |= z & (left >= 8 ? 0xFFu : (1u << left) - 1u);
    }
    return zero == 0;
}

BK_AVX2 int bk_simd_counting4_contains_avx2(const uint8_t *blk, uint64_t h, uint32_t k)
{
    return bk_simd_counting4_probe(blk, h, k);
}

BK_AVX2 void bk_simd_counting4_contains_many_avx2(const uint8_t *bytes, uint64_t num_blocks,
                                                  uint32_t k, const uint64_t *hs, size_t n,
                                                  uint8_t *out)
{
    size_t i;
    for (i = 0; i < n && i < BK_SIMD_AHEAD; i++)
        bk_prefetch_r(bytes + bk_mulhi64(hs[i], num_blocks) * 64u);
    for (i = 0; i < n; i++) {
        if (i + BK_SIMD_AHEAD < n)
            bk_prefetch_r(bytes + bk_mulhi64(hs[i + BK_SIMD_AHEAD], num_blocks) * 64u);
        out[i] = (uint8_t)bk_simd_counting4_probe(bytes + bk_mulhi64(hs[i], num_blocks) * 64u,
                                                  hs[i], k);
    }
}

/* ---- End logic for the counting filter's 4-bit blocked layout --------- */

/* ---- Begin logic for the scalable chain's batch query -----------------
 *
 * Every blocked link of a chain takes a key's in-block positions from the
 * same stream of h (only the block, mulhi(h, num_blocks), and k differ),
 * and an absent key needs every link.  The first version ran the batch
 * query above link after link over the chunk, deriving each key's stream
 * words again in every link (callgrind, 10^6 keys, 7 links, k 7..12: ~920
 * instructions a key).  Here each key's words are derived once per group
 * of BK_SIMD_CHAIN_GROUP keys and reused by every link's pass.  The passes
 * stay link by link (not key by key over all links): a pass touches one
 * link's lines, prefetched BK_SIMD_AHEAD keys ahead, so the small links
 * stay in L1/L2 during their pass; a key-by-key walk with every link's
 * line prefetched (7 lines a key) measured 2x slower on the AMD guest. */
#define BK_SIMD_CHAIN_GROUP 256   /* keys a group: 256 x 6 words = 12 KiB of stack */
#define BK_SIMD_CHAIN_WORDS 6     /* stream words for k <= 24 */

BK_AVX2 void bk_simd_chain1_contains_many_avx2(const uint64_t *const *words,
                                               const uint64_t *num_blocks, const uint32_t *k,
                                               uint32_t nlinks, const uint64_t *hs, size_t n,
                                               uint8_t *out)
{
    uint64_t sw[BK_SIMD_CHAIN_GROUP][BK_SIMD_CHAIN_WORDS];
    uint32_t kmax = 0, nw;
    for (uint32_t l = 0; l < nlinks; l++)
        if (k[l] > kmax)
            kmax = k[l];
    nw = (kmax + 3) / 4;
    for (size_t base = 0; base < n; base += BK_SIMD_CHAIN_GROUP) {
        size_t g = n - base < BK_SIMD_CHAIN_GROUP ? n - base : BK_SIMD_CHAIN_GROUP, i;
        const uint64_t *h = hs + base;
        uint8_t *o = out + base;
        for (i = 0; i < g; i++) {
            for (uint32_t j = 0; j < nw; j++)
                sw[i][j] = bk_bloom_stream_word(h[i], j);
            for (uint32_t j = nw; j < BK_SIMD_CHAIN_WORDS; j++)
                sw[i][j] = 0;   /* read by the last group's second word, masked off */
            o[i] = 0;
        }
        for (uint32_t l = nlinks; l-- > 0;) {   /* newest (largest) link first */
            const uint64_t *w = words[l];
            uint64_t nb = num_blocks[l];
            uint32_t kl = k[l];
            for (i = 0; i < g && i < BK_SIMD_AHEAD; i++)
                bk_prefetch_r(w + bk_mulhi64(h[i], nb) * BK_BLOCK_WORDS);
            for (i = 0; i < g; i++) {
                const uint64_t *blk;
                __m256i lo, hi;
                int ok = 1;
                if (i + BK_SIMD_AHEAD < g)
                    bk_prefetch_r(w + bk_mulhi64(h[i + BK_SIMD_AHEAD], nb) * BK_BLOCK_WORDS);
                blk = w + bk_mulhi64(h[i], nb) * BK_BLOCK_WORDS;
                lo = _mm256_loadu_si256((const __m256i *)(const void *)blk);
                hi = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 4));
                for (uint32_t t = 0; 8 * t < kl; t++)
                    ok &= bk_simd_test(lo, hi, bk_simd_pos1(sw[i][2 * t], sw[i][2 * t + 1]),
                                       (int32_t)(kl - 8 * t));
                o[i] |= (uint8_t)ok;
            }
        }
    }
}


/* The per-key forms: the stream words once, then link after link. */
BK_AVX2 static inline void bk_simd_chain1_words(uint64_t h, uint32_t kmax, uint64_t *sw)
{
    uint32_t nw = (kmax + 3) / 4;
    for (uint32_t j = 0; j < nw; j++)
        sw[j] = bk_bloom_stream_word(h, j);
    for (uint32_t j = nw; j < BK_SIMD_CHAIN_WORDS; j++)
        sw[j] = 0;
}

BK_AVX2 static inline int bk_simd_chain1_holds(const uint64_t *blk, const uint64_t *sw,
                                               uint32_t kl)
{
    __m256i lo = _mm256_loadu_si256((const __m256i *)(const void *)blk);
    __m256i hi = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 4));
    int ok = 1;
    for (uint32_t t = 0; 8 * t < kl; t++)
        ok &= bk_simd_test(lo, hi, bk_simd_pos1(sw[2 * t], sw[2 * t + 1]), (int32_t)(kl - 8 * t));
    return ok;
}

/* Whether some link holds h, newest first (most present keys are there);
 * fills sw with h's stream words for the largest k of the chain. */
BK_AVX2 static inline int bk_simd_chain1_find(const uint64_t *const *words,
                                              const uint64_t *num_blocks, const uint32_t *k,
                                              uint32_t nlinks, uint64_t h, uint64_t *sw)
{
    uint32_t kmax = 0;
    for (uint32_t l = 0; l < nlinks; l++)
        if (k[l] > kmax)
            kmax = k[l];
    bk_simd_chain1_words(h, kmax, sw);
    for (uint32_t l = nlinks; l-- > 0;)
        if (bk_simd_chain1_holds(words[l] + bk_mulhi64(h, num_blocks[l]) * BK_BLOCK_WORDS, sw,
                                 k[l]))
            return 1;
    return 0;
}

BK_AVX2 int bk_simd_chain1_contains_avx2(const uint64_t *const *words, const uint64_t *num_blocks,
                                         const uint32_t *k, uint32_t nlinks, uint64_t h)
{
    uint64_t sw[BK_SIMD_CHAIN_WORDS];
    return bk_simd_chain1_find(words, num_blocks, k, nlinks, h, sw);
}

BK_AVX2_BMI2 int bk_simd_chain1_add_avx2(const uint64_t *const *words, const uint64_t *num_blocks,
                                         const uint32_t *k, uint32_t nlinks, uint64_t *newest,
                                         uint64_t h)
{
    uint64_t sw[BK_SIMD_CHAIN_WORDS];
    uint32_t pos[BK_BLOOM_MAX_K_BLOCKED], kn = k[nlinks - 1];
    uint64_t *blk = newest + bk_mulhi64(h, num_blocks[nlinks - 1]) * BK_BLOCK_WORDS;
    /* A key held anywhere writes nothing, and a key whose bits are all set
     * in the newest link would set none -- the same result in every order. */
    if (bk_simd_chain1_find(words, num_blocks, k, nlinks, h, sw))
        return 0;
    for (uint32_t t = 0; 8 * t < kn; t++)   /* kn <= 24: pos[8t..8t+8) exists */
        _mm256_storeu_si256((__m256i *)(void *)(pos + 8 * t),
                            bk_simd_pos1(sw[2 * t], sw[2 * t + 1]));
    bk_simd_or_bits(blk, pos, kn);
    return 1;
}

/* ---- End logic for the scalable chain's batch query ------------------- */

/* ---- Begin logic for the growable filter (bk_grow.c) ----------------- */

/* Lanes of v (16 slots) holding an entry that matches q: an entry s
 * matches when its bits above its lowest set bit equal q's,
 * ((s ^ q) & ~(s ^ (s - 1))) == 0, and s is not 0 (an empty slot has
 * s ^ (s - 1) = 0xFFFF, whose top bit marks it). */
BK_AVX2 static inline __m256i bk_simd_grow_eq(__m256i v, __m256i q)
{
    const __m256i one = _mm256_set1_epi16(1), top = _mm256_set1_epi16((short)0x8000);
    __m256i m = _mm256_xor_si256(v, _mm256_sub_epi16(v, one));
    __m256i d = _mm256_andnot_si256(m, _mm256_xor_si256(v, q));
    d = _mm256_or_si256(d, _mm256_and_si256(m, top));
    return _mm256_cmpeq_epi16(d, _mm256_setzero_si256());
}

/* Matching lanes of a 64-byte bucket (the payload is little-endian, as x86
 * is); *zm: two bits per empty slot. */
BK_AVX2 static inline __m256i bk_simd_grow_bucket(const uint8_t *bk, uint16_t fp, uint64_t *zm)
{
    const __m256i q = _mm256_set1_epi16((short)fp), z = _mm256_setzero_si256();
    __m256i lo = _mm256_loadu_si256((const __m256i *)(const void *)bk);
    __m256i hi = _mm256_loadu_si256((const __m256i *)(const void *)(bk + 32));
    if (zm != NULL)
        *zm = (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi16(lo, z)) |
              (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi16(hi, z)) << 32;
    return _mm256_or_si256(bk_simd_grow_eq(lo, q), bk_simd_grow_eq(hi, q));
}

BK_AVX2 int bk_simd_grow_match2_avx2(const uint8_t *b0, uint16_t f0, const uint8_t *b1,
                                     uint16_t f1)
{
    __m256i e = _mm256_or_si256(bk_simd_grow_bucket(b0, f0, NULL),
                                bk_simd_grow_bucket(b1, f1, NULL));
    return !_mm256_testz_si256(e, e);
}

BK_AVX2 int bk_simd_grow_probe2_avx2(const uint8_t *b0, uint16_t f0, const uint8_t *b1, uint16_t f1,
                                     unsigned *c0, unsigned *c1)
{
    uint64_t z0, z1;
    __m256i e = _mm256_or_si256(bk_simd_grow_bucket(b0, f0, &z0), bk_simd_grow_bucket(b1, f1, &z1));
    /* entries come first: the fill is the first empty slot */
    *c0 = z0 ? bk_ctz64(z0) / 2 : BK_GROW_SLOTS;
    *c1 = z1 ? bk_ctz64(z1) / 2 : BK_GROW_SLOTS;
    return !_mm256_testz_si256(e, e);
}

/* Keys located and prefetched BK_GROW_AHEAD ahead in a ring; answers from
 * the two buckets only (the caller looks at the stash). */
BK_AVX2 void bk_simd_grow_contains_many_avx2(const bk_grow *g, const uint64_t *hs, size_t n,
                                             uint8_t *out)
{
    const uint8_t *b0[BK_GROW_AHEAD], *b1[BK_GROW_AHEAD];
    uint16_t f0[BK_GROW_AHEAD], f1[BK_GROW_AHEAD];
    size_t i, lead = n < BK_GROW_AHEAD ? n : BK_GROW_AHEAD;
    for (i = 0; i < lead; i++) {
        b0[i] = bk_grow_locate(g, 0, hs[i], &f0[i]);
        b1[i] = bk_grow_locate(g, 1, bk_grow_x(hs[i], 1), &f1[i]);
        bk_prefetch_r(b0[i]);
        bk_prefetch_r(b1[i]);
    }
    for (i = 0; i < n; i++) {
        size_t r = i % BK_GROW_AHEAD;
        __m256i e = _mm256_or_si256(bk_simd_grow_bucket(b0[r], f0[r], NULL),
                                    bk_simd_grow_bucket(b1[r], f1[r], NULL));
        out[i] = (uint8_t)!_mm256_testz_si256(e, e);  /* the stash: bk_grow_contains_many */
        if (i + BK_GROW_AHEAD < n) {
            uint64_t h = hs[i + BK_GROW_AHEAD];
            b0[r] = bk_grow_locate(g, 0, h, &f0[r]);
            b1[r] = bk_grow_locate(g, 1, bk_grow_x(h, 1), &f1[r]);
            bk_prefetch_r(b0[r]);
            bk_prefetch_r(b1[r]);
        }
    }
}

/* ---- End logic for the growable filter -------------------------------- */

/* The sliding filter's blocked layout: eight lanes' positions a vector
 * multiply-shift, their bits by a variable shift, one movemask each. */
BK_AVX2 static inline uint64_t bk_simd_sliding_has(const uint64_t *blk, uint64_t w,
                                                   const __m256i *mv)
{
    __m256i x[2];
    uint64_t m = 0;
    x[0] = _mm256_set1_epi32((int)(uint32_t)w);
    x[1] = _mm256_set1_epi32((int)(uint32_t)(w >> 32));
    for (int i = 0; i < 4; i++) {
        __m256i lanes = _mm256_loadu_si256((const __m256i *)(const void *)(blk + 4 * i));
        __m256i pos = _mm256_srli_epi32(_mm256_mullo_epi32(x[i >> 1], mv[i]), 27);
        __m256i bit = _mm256_slli_epi32(_mm256_srlv_epi32(lanes, pos), 31);
        m |= (uint64_t)(uint32_t)_mm256_movemask_ps(_mm256_castsi256_ps(bit)) << (8 * i);
    }
    return m;
}

BK_AVX2 static inline void bk_simd_sliding_mul(const uint32_t *mul, __m256i *mv)
{
    for (int i = 0; i < 4; i++)
        mv[i] = _mm256_loadu_si256((const __m256i *)(const void *)(mul + 8 * i));
}

BK_AVX2 uint64_t bk_simd_sliding_has_avx2(const uint64_t *blk, uint64_t w, const uint32_t *mul)
{
    __m256i mv[4];
    bk_simd_sliding_mul(mul, mv);
    return bk_simd_sliding_has(blk, w, mv);
}

/* The batch: one call for n keys (no call a key), blocks asked for 8
 * keys ahead.  w of key i is mix64(hs[i] + GAMMA). */
BK_AVX2 void bk_simd_sliding_has_many_avx2(const uint64_t *slices, uint64_t blocks,
                                           const uint64_t *hs, size_t n, const uint32_t *mul,
                                           uint64_t *has)
{
    __m256i mv[4];
    bk_simd_sliding_mul(mul, mv);
    for (size_t i = 0; i < n && i < 8; i++) {
        const uint64_t *b = slices + bk_mulhi64(hs[i], blocks) * 16u;
        bk_prefetch_r(b);
        bk_prefetch_r(b + 8);
    }
    for (size_t i = 0; i < n; i++) {
        if (i + 8 < n) {
            const uint64_t *b = slices + bk_mulhi64(hs[i + 8], blocks) * 16u;
            bk_prefetch_r(b);
            bk_prefetch_r(b + 8);
        }
        has[i] = bk_simd_sliding_has(slices + bk_mulhi64(hs[i], blocks) * 16u,
                                     bk_mix64(hs[i] + 0x9E3779B97F4A7C15ULL), mv);
    }
}

#else /* no AVX2 code in this build: never selected (bk_simd_avx2 stays 0) */

int bk_simd_blocked_add_avx2(uint64_t *blk, uint32_t g, uint32_t k)
{
    (void)blk; (void)g; (void)k;
    return -1;
}

uint64_t bk_simd_blocked_add_many_avx2(uint64_t *words, uint64_t num_blocks, uint32_t k,
                                       uint32_t version, const uint64_t *hs, size_t n)
{
    (void)words; (void)num_blocks; (void)k; (void)version; (void)hs; (void)n;
    return 0;
}

int bk_simd_blocked_contains_avx2(const uint64_t *blk, uint32_t g, uint32_t k)
{
    (void)blk; (void)g; (void)k;
    return -1;
}

int bk_simd_blocked1_contains_avx2(const uint64_t *blk, uint64_t h, uint32_t k)
{
    (void)blk; (void)h; (void)k;
    return -1;
}

void bk_simd_blocked_contains_many_avx2(const uint64_t *words, uint64_t num_blocks, uint32_t k,
                                        uint32_t version, const uint64_t *hs, size_t n,
                                        uint8_t *out)
{
    (void)words; (void)num_blocks; (void)k; (void)version; (void)hs; (void)n; (void)out;
}

int bk_simd_counting4_contains_avx2(const uint8_t *blk, uint64_t h, uint32_t k)
{
    (void)blk; (void)h; (void)k;
    return -1;
}

void bk_simd_counting4_contains_many_avx2(const uint8_t *bytes, uint64_t num_blocks, uint32_t k,
                                          const uint64_t *hs, size_t n, uint8_t *out)
{
    (void)bytes; (void)num_blocks; (void)k; (void)hs; (void)n; (void)out;
}

void bk_simd_chain1_contains_many_avx2(const uint64_t *const *words, const uint64_t *num_blocks,
                                       const uint32_t *k, uint32_t nlinks, const uint64_t *hs,
                                       size_t n, uint8_t *out)
{
    (void)words; (void)num_blocks; (void)k; (void)nlinks; (void)hs; (void)n; (void)out;
}

int bk_simd_chain1_contains_avx2(const uint64_t *const *words, const uint64_t *num_blocks,
                                 const uint32_t *k, uint32_t nlinks, uint64_t h)
{
    (void)words; (void)num_blocks; (void)k; (void)nlinks; (void)h;
    return -1;
}

int bk_simd_chain1_add_avx2(const uint64_t *const *words, const uint64_t *num_blocks,
                            const uint32_t *k, uint32_t nlinks, uint64_t *newest, uint64_t h)
{
    (void)words; (void)num_blocks; (void)k; (void)nlinks; (void)newest; (void)h;
    return -1;
}

int bk_simd_grow_match2_avx2(const uint8_t *b0, uint16_t f0, const uint8_t *b1, uint16_t f1)
{
    (void)b0; (void)f0; (void)b1; (void)f1;
    return -1;
}

int bk_simd_grow_probe2_avx2(const uint8_t *b0, uint16_t f0, const uint8_t *b1, uint16_t f1,
                             unsigned *c0, unsigned *c1)
{
    (void)b0; (void)f0; (void)b1; (void)f1;
    *c0 = *c1 = 0;
    return -1;
}

void bk_simd_grow_contains_many_avx2(const bk_grow *g, const uint64_t *hs, size_t n, uint8_t *out)
{
    (void)g; (void)hs; (void)n; (void)out;
}

uint64_t bk_simd_sliding_has_avx2(const uint64_t *blk, uint64_t w, const uint32_t *mul)
{
    (void)blk; (void)w; (void)mul;
    return 0;
}

void bk_simd_sliding_has_many_avx2(const uint64_t *slices, uint64_t blocks, const uint64_t *hs,
                                   size_t n, const uint32_t *mul, uint64_t *has)
{
    (void)slices; (void)blocks; (void)hs; (void)n; (void)mul; (void)has;
}

#endif
