/* nameidx.c — the name index of nameidx.h. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "util/err.h"
#include "util/nameidx.h"

static uint32_t name_hash(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

int name_index_find(const name_index_t *x, const char *name, name_at_fn at, const void *owner)
{
    if (!x->cap) return -1;
    uint32_t mask = (uint32_t)x->cap - 1;
    for (uint32_t i = name_hash(name) & mask;; i = (i + 1) & mask) {
        int p = x->slot[i] - 1;
        if (p < 0) return -1;
        if (!strcmp(at(owner, p), name)) return p;
    }
}

/* Into the first free slot of its probe sequence (the table is never full:
 * at most half its slots hold positions). */
static void put_position(name_index_t *x, int pos, const char *name)
{
    uint32_t mask = (uint32_t)x->cap - 1;
    uint32_t i = name_hash(name) & mask;
    while (x->slot[i]) i = (i + 1) & mask;
    x->slot[i] = pos + 1;
}

void name_index_add(name_index_t *x, int pos, int count, name_at_fn at, const void *owner)
{
    if (2 * (int64_t)count <= x->cap) {
        put_position(x, pos, at(owner, pos));
        return;
    }
    int cap = x->cap ? x->cap : 64;
    while ((int64_t)cap < 2 * (int64_t)count) cap *= 2;
    free(x->slot);
    x->slot = xcalloc((size_t)cap, sizeof *x->slot);
    x->cap = cap;
    for (int p = 0; p < count; p++) put_position(x, p, at(owner, p));
}

void name_index_free(name_index_t *x)
{
    free(x->slot);
    x->slot = NULL;
    x->cap = 0;
}
