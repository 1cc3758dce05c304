/* nameidx.h — an index from names to positions in an array its owner keeps
 * (the graph's values, an ONNX model's value names): open addressing on an
 * FNV-1a hash, extended as names are appended, so a lookup costs one hash
 * and a probe or two rather than a walk of the array (issue 41: the engine
 * load's walks were quadratic, ~10 ms per process on RT-DETR). The index
 * holds positions only; the names stay the owner's, read back through
 * name_at. Names must be unique (the owners look a name up before adding). */
#ifndef PARITY_UTIL_NAMEIDX_H
#define PARITY_UTIL_NAMEIDX_H

/* The name at position i of owner's array. */
typedef const char *(*name_at_fn)(const void *owner, int i);

typedef struct name_index {
    int *slot;   /* position + 1; 0 empty */
    int cap;     /* a power of two, at least twice the positions held */
} name_index_t;

/* The position of name; -1 when absent. */
int name_index_find(const name_index_t *x, const char *name, name_at_fn at, const void *owner);
/* Records that position pos (the last of count in use) holds its name. */
void name_index_add(name_index_t *x, int pos, int count, name_at_fn at, const void *owner);
void name_index_free(name_index_t *x);

#endif
