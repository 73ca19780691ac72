/*
 * fuzz_validate.c -- R17: libFuzzer target on the one C validator.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -DBK_HAVE_<STRUCTURE>=1... \
 *       -Isrc/bloomkit/_native tests/fuzz/fuzz_validate.c \
 *       src/bloomkit/_native/bk_*.c -o build/fuzz/fuzz_validate
 *
 * (tests/fuzz/run.sh does this).  The first input byte picks the checks
 * (checksum, deep, allow-dirty); the rest is the state.  The input is
 * copied into an exactly sized heap buffer so that ASan sees any read
 * past its end.  A state that validates must also survive attaching its
 * kind's core to it, probing it and adding to it (what the Python types
 * then do), for every kind whose core the build holds: Bloom (classic and
 * blocked), counting, cuckoo, quotient, count-min, TinyLFU, binary fuse and
 * sliding; the scalable chain and the Parquet index are containers of
 * Bloom states their validators check link by link (bk_scalable.c,
 * bk_pqindex.c), reached here through bk_format_validate.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bk_bloom.h"
#include "bk_format.h"
#ifdef BK_HAVE_COUNTING
#include "bk_counting.h"
#endif
#ifdef BK_HAVE_CUCKOO
#include "bk_cuckoo.h"
#endif
#ifdef BK_HAVE_QUOTIENT
#include "bk_quotient.h"
#endif
#ifdef BK_HAVE_SKETCH
#include "bk_sketch.h"
#endif
#ifdef BK_HAVE_FUSE
#include "bk_fuse.h"
#endif
#ifdef BK_HAVE_SLIDING
#include "bk_sliding.h"
#endif
#ifdef BK_HAVE_GROW
#include "bk_grow.h"
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bk_header h;
    const char *reason = NULL;
    uint8_t *buf;
    int checks;
    bk_rc rc;

    if (size < 1)
        return 0;
    checks = (data[0] & 1 ? BK_CHECK_CHECKSUM : 0) | (data[0] & 2 ? BK_CHECK_DEEP : 0) |
             (data[0] & 4 ? BK_ALLOW_DIRTY : 0);
    size -= 1;
    buf = (uint8_t *)malloc(size ? size : 1);
    if (buf == NULL)
        return 0;
    if (size)
        memcpy(buf, data + 1, size);
    rc = bk_format_validate(buf, (uint64_t)size, checks, &h, &reason);
    if (rc != BK_OK && reason == NULL)
        abort(); /* every refusal names its reason */
    if (rc == BK_OK && (h.kind == BK_KIND_BLOOM || h.kind == BK_KIND_BLOCKED_BLOOM)) {
        bk_bloom b;
        uint64_t hs[4] = {0, 1, 0x9e3779b97f4a7c15ULL, ~0ULL};
        uint8_t out[4];
        bk_bloom_attach(&b, buf);
        bk_bloom_contains_many(&b, hs, 4, out);
        (void)bk_bloom_add_many(&b, hs, 4, 0);
        (void)bk_bloom_popcount(&b);
        bk_format_seal(buf, (uint64_t)size);
    }
#ifdef BK_HAVE_COUNTING
    if (rc == BK_OK && h.kind == BK_KIND_COUNTING_BLOOM) {
        bk_counting c;
        uint64_t hs[4] = {0, 1, 0x9e3779b97f4a7c15ULL, ~0ULL};
        uint8_t out[4];
        bk_counting_attach(&c, buf);
        bk_counting_contains_many(&c, hs, 4, out);
        (void)bk_counting_add_many(&c, hs, 4, 0);
    }
#endif
#ifdef BK_HAVE_CUCKOO
    if (rc == BK_OK && h.kind == BK_KIND_CUCKOO) {
        bk_cuckoo c;
        uint64_t hs[4] = {0, 1, 0x9e3779b97f4a7c15ULL, ~0ULL}, added = 0;
        uint8_t out[4];
        size_t done = 0;
        bk_cuckoo_attach(&c, buf);
        bk_cuckoo_contains_many(&c, hs, 4, out);
        (void)bk_cuckoo_count(&c, 42);
        (void)bk_cuckoo_add_many(&c, hs, 4, &done, &added);
    }
#endif
#ifdef BK_HAVE_QUOTIENT
    if (rc == BK_OK && h.kind == BK_KIND_QUOTIENT) {
        bk_qf f;
        uint64_t hs[4] = {0, 1, 0x9e3779b97f4a7c15ULL, ~0ULL};
        uint8_t out[4];
        bk_quotient_attach(&f, buf);
        bk_quotient_contains_many(&f, hs, 4, out);
    }
#endif
#ifdef BK_HAVE_SKETCH
    if (rc == BK_OK && h.kind == BK_KIND_COUNT_MIN) {
        bk_cms c;
        uint64_t hs[4] = {0, 1, 0x9e3779b97f4a7c15ULL, ~0ULL}, est[4];
        bk_sketch_cms_attach(&c, buf);
        bk_sketch_cms_add_estimate_many(&c, hs, 4, 0, est);
    }
    if (rc == BK_OK && h.kind == BK_KIND_TINYLFU) {
        bk_tlfu t;
        bk_sketch_tlfu_attach(&t, buf);
        (void)bk_sketch_tlfu_record(&t, 42);
        (void)bk_sketch_tlfu_estimate(&t, 42);
        bk_sketch_tlfu_age(&t);
    }
#endif
#ifdef BK_HAVE_FUSE
    if (rc == BK_OK && h.kind == BK_KIND_BINARY_FUSE) {
        /* every slot a query can reach must be inside the payload */
        bk_fuse fu;
        uint64_t hs[4] = {0, 1, 0x9e3779b97f4a7c15ULL, ~0ULL};
        uint8_t out[4];
        bk_fuse_attach(&fu, buf);
        bk_fuse_contains_many(&fu, hs, 4, out);
        (void)bk_fuse_contains(&fu, 42);
    }
#endif
#ifdef BK_HAVE_SLIDING
    if (rc == BK_OK && h.kind == BK_KIND_SLIDING_BLOOM) {
        /* queries and adds at times around and far from the stored start
         * (time shifts, early shifts), then statistics and a re-validation */
        bk_sliding sl;
        uint64_t hs[4] = {0, 1, 0x9e3779b97f4a7c15ULL, ~0ULL};
        int64_t nows[5] = {0, 1, -(1LL << 62), (1LL << 62), 1600000000000000LL};
        uint8_t out[4];
        bk_sliding_attach(&sl, buf);
        for (int i = 0; i < 5; i++) {
            bk_sliding_contains_many(&sl, hs, 4, nows[i], out);
            (void)bk_sliding_window_count(&sl, nows[i]);
            (void)bk_sliding_lookback_us(&sl, nows[i]);
            (void)bk_sliding_estimate_error_rate(&sl, nows[i]);
        }
        for (int i = 0; i < 5; i++)
            (void)bk_sliding_add_many(&sl, hs, 4, nows[i]);
        bk_format_seal(buf, (uint64_t)size);
        if (bk_format_validate(buf, (uint64_t)size, checks, &h, &reason) != BK_OK)
            abort(); /* an add must leave a valid state */
    }
#endif
#ifdef BK_HAVE_GROW
    if (rc == BK_OK && h.kind == BK_KIND_GROWABLE) {
        /* queries, the exact rate, and adds into a state that cannot grow
         * (no resize: a doubling answers BK_ERR_CAPACITY): in bounds on any
         * state that passed, and a state that passed the deep check (every
         * bucket, the count) must pass it again */
        bk_grow g;
        uint64_t hs[4] = {0, 1, 0x9e3779b97f4a7c15ULL, ~0ULL}, added = 0;
        uint8_t out[4];
        bk_grow_attach_state(&g, buf);
        g.resize = NULL;
        bk_grow_contains_many(&g, hs, 4, out);
        (void)bk_grow_estimate_fpr(&g);
        (void)bk_grow_add_many(&g, hs, 4, &added);
        bk_format_seal(buf, (uint64_t)size);
        if ((checks & BK_CHECK_DEEP) &&
            bk_format_validate(buf, (uint64_t)size, checks, &h, &reason) != BK_OK)
            abort(); /* an add must leave a valid state */
    }
#endif
    free(buf);
    return 0;
}
