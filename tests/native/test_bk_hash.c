/*
 * test_bk_hash.c - standalone known-answer test for bk_hash.c.
 *
 * Build & run (from the repository root):
 *   cc -std=c11 -O2 -Wall -Wextra -Wpedantic -Werror \
 *      -Isrc/bloomkit/_native src/bloomkit/_native/bk_hash.c \
 *      tests/native/test_bk_hash.c -o /tmp/test_bk_hash && /tmp/test_bk_hash
 *
 * XXH3-64 / XXH64 expectations were computed once with the Python `xxhash`
 * package (reference xxHash) over deterministic data
 *   data[i] = ((i * 131 + 7) ^ (i >> 8)) & 0xff.
 * SipHash-2-4 expectations are published reference vectors (veorq/SipHash
 * vectors.h: key 00..0f, message 00 01 .. of length n, output bytes LE).
 * The full pinned set lives in tests/hash_vectors.json.
 *
 * Every input is copied into an exactly-sized heap buffer so that
 * -fsanitize=address catches any read past the end.
 */
#include "bk_hash.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct xxh_case {
    size_t len;
    uint64_t seed;
    uint64_t expect;
};

static const struct xxh_case xxh3_cases[] = {
    {    0, UINT64_C(0x0000000000000000), UINT64_C(0x2D06800538D394C2)},
    {    0, UINT64_C(0x9E3779B97F4A7C15), UINT64_C(0x602B0E2CD6662C8B)},
    {    1, UINT64_C(0x0000000000000000), UINT64_C(0x4C5CCA45D0F4811F)},
    {    1, UINT64_C(0x9E3779B97F4A7C15), UINT64_C(0x2F3ACD3805F81DE3)},
    {    3, UINT64_C(0x0000000000000000), UINT64_C(0x6E3E2670E61106AC)},
    {    3, UINT64_C(0x9E3779B97F4A7C15), UINT64_C(0xBC74611D87F659E0)},
    {    4, UINT64_C(0x0000000000000000), UINT64_C(0x5C4C63133443D03F)},
    {    4, UINT64_C(0x9E3779B97F4A7C15), UINT64_C(0x6C3753177C607DE4)},
    {    8, UINT64_C(0x0000000000000000), UINT64_C(0xF9FD4DD0B04D78F5)},
    {    8, UINT64_C(0x9E3779B97F4A7C15), UINT64_C(0xBC72D0531396303F)},
    {    9, UINT64_C(0x0000000000000000), UINT64_C(0x7C20DF9712C26EDF)},
    {    9, UINT64_C(0x9E3779B97F4A7C15), UINT64_C(0x93C5AA006102DAF5)},
    {   16, UINT64_C(0x0000000000000000), UINT64_C(0x86ABF6BACCEA0858)},
    {   16, UINT64_C(0x9E3779B97F4A7C15), UINT64_C(0x69D001B16ECF450A)},
    {   17, UINT64_C(0x0000000000000000), UINT64_C(0xB58BF5DC5022D071)},
    {   17, UINT64_C(0x9E3779B97F4A7C15), UINT64_C(0xB7C99D19BE27EB69)},
    {  100, UINT64_C(0x0000000000000000), UINT64_C(0x5DA67EAC6D4093D5)},
    {  100, UINT64_C(0x9E3779B97F4A7C15), UINT64_C(0xBA21393335A9A3BA)},
    {  128, UINT64_C(0x0000000000000000), UINT64_C(0x10D17F72C0CCBA41)},
    {  128, UINT64_C(0x9E3779B97F4A7C15), UINT64_C(0x49B81C6E0ABB9305)},
    {  129, UINT64_C(0x0000000000000000), UINT64_C(0x1648BDC3DB49D1A2)},
    {  129, UINT64_C(0x9E3779B97F4A7C15), UINT64_C(0x5E3831B221810B00)},
    {  200, UINT64_C(0x0000000000000000), UINT64_C(0xC0FBC0F4E181C826)},
    {  200, UINT64_C(0x9E3779B97F4A7C15), UINT64_C(0x83264818FB531769)},
    {  240, UINT64_C(0x0000000000000000), UINT64_C(0xB6CFAF343FAB81E6)},
    {  240, UINT64_C(0x9E3779B97F4A7C15), UINT64_C(0x76A73EC26433F82C)},
    {  241, UINT64_C(0x0000000000000000), UINT64_C(0x956CAE592C67279E)},
    {  241, UINT64_C(0x9E3779B97F4A7C15), UINT64_C(0x2BE236BA3BACF75C)},
    { 1000, UINT64_C(0x0000000000000000), UINT64_C(0xF298264AA10F3CA4)},
    { 1000, UINT64_C(0x9E3779B97F4A7C15), UINT64_C(0xD1230C7231AF6127)},
    { 1024, UINT64_C(0x0000000000000000), UINT64_C(0x9FB9947417C15B80)},
    { 1024, UINT64_C(0x9E3779B97F4A7C15), UINT64_C(0x6FCBB2C4C7C9CEB3)},
    { 1025, UINT64_C(0x0000000000000000), UINT64_C(0xFE1B47100B1D79D8)},
    { 1025, UINT64_C(0x9E3779B97F4A7C15), UINT64_C(0xB25DE0D05CF6DA28)},
    { 2048, UINT64_C(0x0000000000000000), UINT64_C(0x650CF45CDDE6160A)},
    { 2048, UINT64_C(0x9E3779B97F4A7C15), UINT64_C(0xC4710DF89F78A974)},
    { 5000, UINT64_C(0x0000000000000000), UINT64_C(0x35597B69007B5F47)},
    { 5000, UINT64_C(0x9E3779B97F4A7C15), UINT64_C(0x8666C1E7761FDC7E)},
};

static const struct xxh_case xxh64_cases[] = {
    {    0, UINT64_C(0x0000000000000000), UINT64_C(0xEF46DB3751D8E999)},
    {    0, UINT64_C(0x9E3779B97F4A7C15), UINT64_C(0xC4349FC93C010000)},
    {    3, UINT64_C(0x0000000000000000), UINT64_C(0xBED43740EE6332BB)},
    {    3, UINT64_C(0x9E3779B97F4A7C15), UINT64_C(0x45FA1406538FA168)},
    {    8, UINT64_C(0x0000000000000000), UINT64_C(0x994B676B71CE94DD)},
    {    8, UINT64_C(0x9E3779B97F4A7C15), UINT64_C(0xCE592D5F53E192EC)},
    {   31, UINT64_C(0x0000000000000000), UINT64_C(0x6711D55E306B5D8F)},
    {   31, UINT64_C(0x9E3779B97F4A7C15), UINT64_C(0x24C4E99AB0404B5E)},
    {   32, UINT64_C(0x0000000000000000), UINT64_C(0x07F7B8E3BC5D6E25)},
    {   32, UINT64_C(0x9E3779B97F4A7C15), UINT64_C(0x046E99BBDA1A814B)},
    {  100, UINT64_C(0x0000000000000000), UINT64_C(0x9DDADA11D3DC2D8F)},
    {  100, UINT64_C(0x9E3779B97F4A7C15), UINT64_C(0x35546BD9A4779AE4)},
    { 1000, UINT64_C(0x0000000000000000), UINT64_C(0xE680FA9AC84EC77A)},
    { 1000, UINT64_C(0x9E3779B97F4A7C15), UINT64_C(0x6577FA5065E40774)},
};

struct sip_case {
    size_t len;
    uint8_t expect[8];
};

static const struct sip_case sip_cases[] = {
    { 0, {0x31, 0x0e, 0x0e, 0xdd, 0x47, 0xdb, 0x6f, 0x72}},
    { 7, {0x37, 0xd1, 0x01, 0x8b, 0xf5, 0x00, 0x02, 0xab}},
    { 8, {0x62, 0x24, 0x93, 0x9a, 0x79, 0xf5, 0xf5, 0x93}},
    {15, {0xe5, 0x45, 0xbe, 0x49, 0x61, 0xca, 0x29, 0xa1}},
    {63, {0x72, 0x45, 0x06, 0xeb, 0x4c, 0x32, 0x8a, 0x95}},
};

static const uint64_t mix_cases[][2] = {
    {UINT64_C(0x0000000000000000), UINT64_C(0x0000000000000000)},
    {UINT64_C(0x0000000000000001), UINT64_C(0x5692161D100B05E5)},
    {UINT64_C(0x0123456789ABCDEF), UINT64_C(0xB2C058E4EBB5112C)},
    {UINT64_C(0xFFFFFFFFFFFFFFFF), UINT64_C(0xB4D055FCF2CBBD7B)},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static int passed, failed;

static void check(const char *what, size_t len, uint64_t got, uint64_t want)
{
    if (got == want) {
        passed++;
    } else {
        failed++;
        printf("FAIL %s len=%lu got=%016llx want=%016llx\n", what,
               (unsigned long)len, (unsigned long long)got,
               (unsigned long long)want);
    }
}

/* Exactly-sized heap copy of the deterministic test pattern (NULL if 0). */
static uint8_t *make_data(size_t len)
{
    uint8_t *p;
    size_t i;
    if (len == 0)
        return NULL;
    p = (uint8_t *)malloc(len);
    if (p == NULL) {
        fprintf(stderr, "out of memory\n");
        exit(2);
    }
    for (i = 0; i < len; i++)
        p[i] = (uint8_t)(((i * 131u + 7u) ^ (i >> 8)) & 0xffu);
    return p;
}

int main(void)
{
    size_t i, j;
    uint64_t k0 = 0, k1 = 0;

    for (i = 0; i < COUNT(xxh3_cases); i++) {
        const struct xxh_case *c = &xxh3_cases[i];
        uint8_t *d = make_data(c->len);
        check("bk_hash_xxh3_64", c->len, bk_hash_xxh3_64(d, c->len, c->seed), c->expect);
        free(d);
    }
    for (i = 0; i < COUNT(xxh64_cases); i++) {
        const struct xxh_case *c = &xxh64_cases[i];
        uint8_t *d = make_data(c->len);
        check("bk_hash_xxh64", c->len, bk_hash_xxh64(d, c->len, c->seed), c->expect);
        free(d);
    }

    /* key = 00 01 .. 0f, split into two little-endian 64-bit halves */
    for (j = 0; j < 8; j++) {
        k0 |= (uint64_t)j << (8 * j);
        k1 |= (uint64_t)(j + 8) << (8 * j);
    }
    for (i = 0; i < COUNT(sip_cases); i++) {
        const struct sip_case *c = &sip_cases[i];
        uint8_t *d = c->len ? (uint8_t *)malloc(c->len) : NULL;
        uint64_t want = 0;
        if (c->len && d == NULL)
            return 2;
        for (j = 0; j < c->len; j++)
            d[j] = (uint8_t)j;
        for (j = 0; j < 8; j++)
            want |= (uint64_t)c->expect[j] << (8 * j);
        check("bk_hash_siphash24", c->len, bk_hash_siphash24(d, c->len, k0, k1), want);
        free(d);
    }

    for (i = 0; i < COUNT(mix_cases); i++)
        check("bk_mix64", 8, bk_mix64(mix_cases[i][0]), mix_cases[i][1]);

    /* The streaming XXH3 equals the one-shot for every length around the
     * stripe (64), buffer (256) and block (1024) boundaries and several
     * block counts, fed in pieces of 1, 63, 64, 65, 255, 1000 and 4096
     * bytes (the one-shot itself is pinned by the vectors above). */
    {
        static const size_t lens[] = {0, 1, 16, 17, 128, 129, 240, 241, 255, 256, 257,
                                      319, 320, 321, 1023, 1024, 1025, 1088, 1089, 2047,
                                      2048, 2049, 4096 + 191, 16384 + 64, 100000};
        static const size_t steps[] = {1, 63, 64, 65, 255, 1000, 4096};
        static const uint64_t seeds[] = {0, UINT64_C(0x9E3779B97F4A7C15)};
        size_t li, si, zi;
        for (li = 0; li < COUNT(lens); li++) {
            uint8_t *d = make_data(lens[li]);
            for (zi = 0; zi < COUNT(seeds); zi++) {
                uint64_t want = bk_hash_xxh3_64(d, lens[li], seeds[zi]);
                for (si = 0; si < COUNT(steps); si++) {
                    bk_hash_xxh3_stream st;
                    size_t off = 0;
                    bk_hash_xxh3_stream_init(&st, seeds[zi]);
                    while (off < lens[li]) {
                        size_t n = lens[li] - off < steps[si] ? lens[li] - off : steps[si];
                        bk_hash_xxh3_stream_update(&st, d + off, n);
                        off += n;
                    }
                    check("bk_hash_xxh3_stream", lens[li], bk_hash_xxh3_stream_digest(&st), want);
                }
            }
            free(d);
        }
    }

    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
