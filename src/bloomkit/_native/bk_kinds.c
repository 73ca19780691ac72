/*
 * bk_kinds.c -- the one list of structure kinds.
 *
 * Each kind's descriptor (bk_kind.h) lives in its own bk_<kind>.c; this
 * table only says which ids exist and which descriptors this build holds.
 * setup.py defines BK_HAVE_<STRUCTURE> for every py_<structure>.c present,
 * and a standalone C test defines the ones it links, so a core builds and
 * is tested without the others.
 *
 * The list itself is bk_kinds.def (ids, descriptors, glue): adding a kind
 * edits that file, never this one.
 */
#include "bk_kind.h"

#define BK_DESC(NAME, descriptor) extern const bk_kind_desc descriptor;
#include "bk_kinds.def"

/* bk_kinds.def lists the ids 1, 2, ... in order with none skipped, so the
 * enum's BK_KIND_MAX_ is one past the last: one BK_KIND line per id. */
enum {
    BK_KINDS_LISTED_ = 0
#define BK_KIND(NAME, id) + 1
#include "bk_kinds.def"
};
_Static_assert(BK_KINDS_LISTED_ == BK_KIND_MAX_ - 1,
               "bk_kinds.def: kind ids in order from 1, none skipped");

/* Indexed by bk_kind; NULL: reserved or not built. */
static const bk_kind_desc *const bk_kinds_table[BK_KIND_MAX_] = {
#define BK_DESC(NAME, descriptor) [BK_KIND_##NAME] = &descriptor,
#include "bk_kinds.def"
};

const bk_kind_desc *bk_kinds_get(unsigned id)
{
    return id < BK_KIND_MAX_ ? bk_kinds_table[id] : NULL;
}

int bk_kinds_known(unsigned id)
{
    return id >= 1 && id < BK_KIND_MAX_;
}
