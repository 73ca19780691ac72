/*
 * fuzz_validate.c -- R17: libFuzzer target on the one C validator.
 *
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -DBK_HAVE_<STRUCTURE>=1... \
 *       -Isrc/bloomkit/_native tests/fuzz/fuzz_validate.c \
 *       src/bloomkit/_native/bk_*.c -o build/fuzz/fuzz_validate
 *
 * (tests/fuzz/run.sh does this).  The first input byte picks the checks
 * (bits 0-2: checksum, deep, allow-dirty) and the clock of the clear below
 * (bits 3-7); the rest is the state.  The input is copied into an exactly
 * sized heap buffer so that ASan sees any read past its end.
 *
 * A state that validates must also survive what a program then does with
 * it, for every kind this build holds, through its descriptor's state
 * operations (bk_kind.h, bk_kind_ops; a kind without them -- the Parquet
 * index, whose Bloom states its validator checks one by one -- stops at
 * the validator), naming no kind here: attach a view; at each clock below
 * (before, at and far from any stored start: time shifts, early shifts)
 * answer a few hashes (one by one, and by the batch path, which must
 * agree), their counts and the kind's own error-rate estimate; add each
 * hash, and where the kind removes, take it back (the remove must find it)
 * and add it again, then add them all by the batch path; answer again;
 * seal; then clear and answer once more.  After the writes the state must
 * validate again with the same checks when they were deep (see
 * fv_revalidate), and after the clear whatever they were.
 *
 * What the per-kind blocks this file had called by name runs under the
 * operations: a Bloom popcount and a growable filter's exact rate under
 * estimate_error_rate, a cuckoo count under count, a TinyLFU aging under
 * add (a record ages the sketch when its sample fills: run.sh seeds a
 * state one event short of it).  Not reached any more: a sliding filter's
 * window_count and lookback_us, statistics outside the operations.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bk_format.h"
#include "bk_kind.h"

static const uint64_t fv_hashes[4] = {0, 1, 0x9e3779b97f4a7c15ULL, ~0ULL};
/* microseconds: 0, 1, far before and far after any start, about 2020 */
static const int64_t fv_nows[5] = {0, 1, -(1LL << 62), (1LL << 62), 1600000000000000LL};
#define FV_NH (sizeof fv_hashes / sizeof fv_hashes[0])
#define FV_NNOW (sizeof fv_nows / sizeof fv_nows[0])

static volatile uint64_t fv_sink; /* keeps the answers computed */

/* A broken promise: say which, for the crash report, and abort. */
static void fv_fail(const char *what, unsigned kind, const char *reason)
{
    fprintf(stderr, "fuzz_validate: kind %u: %s%s%s\n", kind, what, reason ? ": " : "",
            reason ? reason : "");
    abort();
}

static void fv_answers(const bk_kind_ops *ops, const void *view, unsigned kind)
{
    uint8_t out[FV_NH];
    for (size_t t = 0; t < FV_NNOW; t++) {
        if (ops->contains_many != NULL)
            ops->contains_many(view, fv_hashes, FV_NH, fv_nows[t], out);
        for (size_t i = 0; i < FV_NH; i++) {
            int c = ops->contains(view, fv_hashes[i], fv_nows[t]);
            if (ops->contains_many != NULL && out[i] != c)
                fv_fail("the batch path answers otherwise", kind, NULL);
            fv_sink += (uint64_t)c;
            if (ops->count != NULL)
                fv_sink += ops->count(view, fv_hashes[i]);
        }
        if (ops->estimate_error_rate != NULL)
            fv_sink += ops->estimate_error_rate(view, fv_nows[t]) > 0.5;
    }
}

/* The promises below hold for a state that passed the deep check
 * (bk_kind.h): one that passed only the shallow checks may carry counters
 * or a table the deep check would refuse (a count past what the payload
 * holds, runs out of order), which writes carry on -- memory-safe, but a
 * remove may then miss a key just added and the state may fail its next
 * validation.  -DFV_SHALLOW=1 asserts them on every state (to list what a
 * shallow reader meets).  A cleared state, whose payload and counters are
 * all rewritten, must validate whatever it was. */
#ifndef FV_SHALLOW
#define FV_SHALLOW 0
#endif
static void fv_revalidate(uint8_t *buf, size_t size, int checks, int always, unsigned kind,
                          const char *after)
{
    bk_header h;
    const char *reason = NULL;
    bk_format_seal(buf, (uint64_t)size);
    if ((always || FV_SHALLOW || (checks & BK_CHECK_DEEP)) &&
        bk_format_validate(buf, (uint64_t)size, checks, &h, &reason) != BK_OK)
        fv_fail(after, kind, reason);
}

static void fv_operate(const bk_kind_ops *ops, unsigned kind, uint8_t *buf, size_t size,
                       int checks, int64_t clear_now)
{
    void *view = malloc(ops->view_size);
    if (view == NULL)
        return;
    ops->attach(view, buf);
    fv_answers(ops, view, kind);
    if (ops->add != NULL) {
        /* each key: add; where removable, take that copy back and add it
         * again (right away: keys of equal fingerprints alias) */
        for (size_t t = 0; t < FV_NNOW; t++) {
            for (size_t i = 0; i < FV_NH; i++) {
                if (ops->add(view, fv_hashes[i], 1, fv_nows[t]) != BK_OK || ops->remove == NULL)
                    continue;
                if (ops->remove(view, fv_hashes[i]) != BK_OK &&
                    (FV_SHALLOW || (checks & BK_CHECK_DEEP)))
                    fv_fail("a remove did not find the key just added", kind, NULL);
                (void)ops->add(view, fv_hashes[i], 1, fv_nows[t]);
            }
            if (ops->add_many != NULL)
                (void)ops->add_many(view, fv_hashes, FV_NH, fv_nows[t]);
        }
        fv_answers(ops, view, kind);
        fv_revalidate(buf, size, checks, 0, kind, "invalid after adds");
    }
    if (ops->clear != NULL) {
        ops->clear(view, clear_now);
        fv_answers(ops, view, kind);
        fv_revalidate(buf, size, checks, 1, kind, "invalid after clear");
    }
    free(view);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bk_header h;
    const char *reason = NULL;
    const bk_kind_desc *desc;
    uint8_t *buf;
    int checks;
    int64_t clear_now;
    bk_rc rc;

    if (size < 1)
        return 0;
    checks = (data[0] & 1 ? BK_CHECK_CHECKSUM : 0) | (data[0] & 2 ? BK_CHECK_DEEP : 0) |
             (data[0] & 4 ? BK_ALLOW_DIRTY : 0);
    clear_now = fv_nows[(data[0] >> 3) % FV_NNOW];
    size -= 1;
    buf = (uint8_t *)malloc(size ? size : 1);
    if (buf == NULL)
        return 0;
    if (size)
        memcpy(buf, data + 1, size);
    rc = bk_format_validate(buf, (uint64_t)size, checks, &h, &reason);
    if (rc != BK_OK && reason == NULL)
        abort(); /* every refusal names its reason */
    desc = rc == BK_OK ? bk_kinds_get(h.kind) : NULL;
    if (rc == BK_OK && desc == NULL)
        fv_fail("accepted, but this build holds no such kind", h.kind, NULL);
    if (desc != NULL && desc->ops != NULL)
        fv_operate(desc->ops, h.kind, buf, size, checks, clear_now);
    free(buf);
    return 0;
}
