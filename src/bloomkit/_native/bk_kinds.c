/*
 * bk_kinds.c -- the one list of structure kinds.
 *
 * Each kind's descriptor (bk_kind.h) lives in its own bk_<kind>.c; this
 * table only says which ids exist and which descriptors this build holds.
 * setup.py defines BK_HAVE_<STRUCTURE> for every py_<structure>.c present,
 * and a standalone C test defines the ones it links, so a core builds and
 * is tested without the others.  The classic and blocked Bloom filters
 * are always built (the scalable chain and the Parquet index hold them).
 *
 * Adding a kind: its id in bk_format.h (enum bk_kind, fixed forever), its
 * descriptor in its bk_<kind>.c, and one line here.  Id 9 is reserved for
 * a scalable cuckoo filter: known to the format, held by no build.
 */
#include "bk_kind.h"

extern const bk_kind_desc bk_bloom_kind, bk_bloom_blocked_kind;
#ifdef BK_HAVE_COUNTING
extern const bk_kind_desc bk_counting_kind;
#endif
#ifdef BK_HAVE_SCALABLE
extern const bk_kind_desc bk_scalable_kind;
#endif
#ifdef BK_HAVE_CUCKOO
extern const bk_kind_desc bk_cuckoo_kind;
#endif
#ifdef BK_HAVE_QUOTIENT
extern const bk_kind_desc bk_quotient_kind;
#endif
#ifdef BK_HAVE_SKETCH
extern const bk_kind_desc bk_sketch_cms_kind, bk_sketch_tinylfu_kind;
#endif
#ifdef BK_HAVE_FUSE
extern const bk_kind_desc bk_fuse_kind;
#endif
#ifdef BK_HAVE_SLIDING
extern const bk_kind_desc bk_sliding_kind;
#endif
#ifdef BK_HAVE_GROW
extern const bk_kind_desc bk_grow_kind;
#endif
#ifdef BK_HAVE_SBBF
extern const bk_kind_desc bk_pqindex_kind;   /* comes with the Parquet support */
#endif

/* Indexed by bk_kind; NULL: reserved or not built. */
static const bk_kind_desc *const bk_kinds_table[BK_KIND_MAX_] = {
    [BK_KIND_BLOOM] = &bk_bloom_kind,
    [BK_KIND_BLOCKED_BLOOM] = &bk_bloom_blocked_kind,
#ifdef BK_HAVE_COUNTING
    [BK_KIND_COUNTING_BLOOM] = &bk_counting_kind,
#endif
#ifdef BK_HAVE_SCALABLE
    [BK_KIND_SCALABLE_BLOOM] = &bk_scalable_kind,
#endif
#ifdef BK_HAVE_CUCKOO
    [BK_KIND_CUCKOO] = &bk_cuckoo_kind,
#endif
#ifdef BK_HAVE_QUOTIENT
    [BK_KIND_QUOTIENT] = &bk_quotient_kind,
#endif
#ifdef BK_HAVE_SKETCH
    [BK_KIND_COUNT_MIN] = &bk_sketch_cms_kind,
    [BK_KIND_TINYLFU] = &bk_sketch_tinylfu_kind,
#endif
#ifdef BK_HAVE_FUSE
    [BK_KIND_BINARY_FUSE] = &bk_fuse_kind,
#endif
#ifdef BK_HAVE_SLIDING
    [BK_KIND_SLIDING_BLOOM] = &bk_sliding_kind,
#endif
#ifdef BK_HAVE_SBBF
    [BK_KIND_PARQUET_INDEX] = &bk_pqindex_kind,
#endif
#ifdef BK_HAVE_GROW
    [BK_KIND_GROWABLE] = &bk_grow_kind,
#endif
};

const bk_kind_desc *bk_kinds_get(unsigned id)
{
    return id < BK_KIND_MAX_ ? bk_kinds_table[id] : NULL;
}

int bk_kinds_known(unsigned id)
{
    return id >= 1 && id < BK_KIND_MAX_;
}
