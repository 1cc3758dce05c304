/* config.h — YAML configuration files: a tree that remembers where each value
 * came from, dotted-key lookup, typed getters whose errors name the file, line
 * and column, `--set KEY=VALUE` overrides, unknown-key detection, and JSON
 * serialisation of the resolved tree (for meta.json and reports).
 *
 * Usage in a stage:
 *     config_t *c = config_load(path, &e);            // or config_new("<none>")
 *     for each --set: config_set(c, "resize.size=640x640", &e);
 *     config_check_keys(c, allowed, &e);              // reject typos
 *     int64_t h = 640, w = 640;                        // defaults
 *     if (config_size(c, "resize.size", &h, &w, &e) < 0) perr_die(...);
 *
 * Getters return 1 when the key was present and *out was set, 0 when the key is
 * absent (*out untouched, so callers preset defaults), -1 on a type error.
 * Errors read "FILE:LINE:COL: KEY: expected ..., got 'TEXT'"; values given with
 * --set are located as "--set KEY=VALUE". */
#ifndef PARITY_CONFIG_H
#define PARITY_CONFIG_H

#include <stdint.h>
#include <jansson.h>
#include "util/err.h"

typedef enum cfg_kind { CFG_SCALAR, CFG_MAP, CFG_SEQ } cfg_kind_t;

typedef struct cfg_node {
    cfg_kind_t kind;
    const char *src;        /* file name or "--set K=V" (owned by the config) */
    int line, col;          /* 1-based; line 0 means "no position in src" */
    char *text;             /* CFG_SCALAR: the scalar's text */
    int quoted;             /* CFG_SCALAR: written quoted or as a block (always a string) */
    int64_t n;              /* CFG_MAP / CFG_SEQ: number of children */
    char **keys;            /* CFG_MAP: keys, in file order */
    int *key_pos;           /* CFG_MAP: line and column of each key (2 ints per key) */
    struct cfg_node **items;/* children */
    int64_t cap;            /* room in items (and keys, key_pos) */
    int64_t *slot;          /* CFG_MAP of many keys: hash index, slot = key index + 1 (0: empty) */
    int64_t nslot;          /* its size, a power of two (0: none yet, keys are scanned) */
} cfg_node_t;

typedef struct config {
    cfg_node_t *root;       /* always a CFG_MAP */
    char **srcs;            /* source names the nodes point to */
    int nsrcs;
} config_t;

/* An empty configuration (every getter returns "absent"); name is its source. */
config_t *config_new(const char *name);
/* Parses a YAML file; the top level must be a mapping (an empty file is an
 * empty mapping). Malformed YAML, duplicate keys and aliases are errors. */
config_t *config_load(const char *path, perr_t *e);
/* The same, for a config a user names on purpose (--config): an empty file
 * is refused ("FILE: empty config: no keys"), not read as all defaults. */
config_t *config_load_nonempty(const char *path, perr_t *e);
/* Parses YAML held in memory; name labels errors. */
config_t *config_parse(const char *text, size_t n, const char *name, perr_t *e);
void config_free(config_t *c);

/* Applies "KEY=VALUE": VALUE is parsed as YAML (a scalar, or a flow sequence
 * or mapping such as [0.485,0.456,0.406]); missing intermediate mappings are
 * created; an existing value is replaced. */
int config_set(config_t *c, const char *assignment, perr_t *e);

/* Looks up a dotted key ("resize.size"; a numeric part indexes a sequence).
 * Returns NULL when absent. */
const cfg_node_t *config_get(const config_t *c, const char *key);
/* Child of a mapping node, NULL when absent or not a mapping. */
const cfg_node_t *cfg_map_get(const cfg_node_t *map, const char *key);

/* Typed getters (1 present, 0 absent, -1 error; see above). */
int config_str(const config_t *c, const char *key, const char **out, perr_t *e);
int config_int(const config_t *c, const char *key, int64_t *out, perr_t *e);
int config_double(const config_t *c, const char *key, double *out, perr_t *e);
int config_bool(const config_t *c, const char *key, int *out, perr_t *e);
/* A sequence of numbers, or one number (a list of one). At most max values
 * are accepted; *n receives the count. */
int config_doubles(const config_t *c, const char *key, double *out, int max, int *n,
                   perr_t *e);
/* "HxW" (e.g. 640x640) or a sequence [H, W]; both positive. */
int config_size(const config_t *c, const char *key, int64_t *h, int64_t *w, perr_t *e);
/* A string that must be one of the NULL-terminated choices; *out gets its index. */
int config_enum(const config_t *c, const char *key, const char *const *choices, int *out,
                perr_t *e);
/* Error when the key is absent: "FILE: KEY: required key missing". */
int config_require(const config_t *c, const char *key, perr_t *e);

/* The same conversions on a node (key names the value in errors). */
int cfg_node_str(const cfg_node_t *nd, const char *key, const char **out, perr_t *e);
int cfg_node_int(const cfg_node_t *nd, const char *key, int64_t *out, perr_t *e);
int cfg_node_double(const cfg_node_t *nd, const char *key, double *out, perr_t *e);
int cfg_node_enum(const cfg_node_t *nd, const char *key, const char *const *choices, int *out, perr_t *e);
/* Formats "FILE:LINE:COL" (or just the source) into buf. */
const char *cfg_node_where(const cfg_node_t *nd, char *buf, size_t n);

/* Rejects keys that no pattern allows. patterns: NULL-terminated dotted keys;
 * a "*" part matches any key; a pattern allows everything below the node it
 * names (so "extra_inputs" allows a free-form subtree). Error:
 * "FILE:L:C: unknown key 'resize.sise' (did you mean 'resize.size'?)". */
int config_check_keys(const config_t *c, const char *const *patterns, perr_t *e);

/* The resolved tree as JSON. Plain scalars are typed by YAML 1.2's core
 * schema (null, true/false, integers, floats); quoted scalars are strings. */
json_t *config_to_json(const config_t *c);
json_t *cfg_node_to_json(const cfg_node_t *nd);

#endif
