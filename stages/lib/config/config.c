/* config.c — YAML to a located tree (libyaml's event API), `--set` overrides,
 * dotted-key lookup and JSON serialisation. The typed getters and the
 * unknown-key check live in config_get.c.
 *
 * The tree keeps each node's source and 1-based line:column so every later
 * complaint (a wrong type, an unknown key) can point at the exact place. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <yaml.h>
#include "config/config.h"
#include "config/config_scalar.h"
#include "util/fsutil.h"

/* Deeper nesting than this is refused (a config is never that deep; the
 * recursion must stay bounded on hostile input). */
#define CFG_MAX_DEPTH 64

/* ---- nodes ---- */

static cfg_node_t *node_new(cfg_kind_t kind, const char *src, int line, int col)
{
    cfg_node_t *nd = xcalloc(1, sizeof *nd);
    nd->kind = kind;
    nd->src = src;
    nd->line = line;
    nd->col = col;
    return nd;
}

static void node_free(cfg_node_t *nd)
{
    if (!nd)
        return;
    for (int64_t i = 0; i < nd->n; i++) {
        node_free(nd->items[i]);
        if (nd->keys)
            free(nd->keys[i]);
    }
    free(nd->items);
    free(nd->keys);
    free(nd->key_pos);
    free(nd->slot);
    free(nd->text);
    free(nd);
}

/* ---- key index: a mapping's keys found in constant time, so reading a
 * mapping of n keys (each checked against the ones before it for a
 * duplicate) is linear, not quadratic (issue 39: 80k keys took 31 s). A
 * small mapping is scanned; from MAP_INDEX_MIN keys on, an open-addressing
 * table of key indices, at most half full. The hash is keyed by a random
 * seed so no file can be written to make every key collide. ---- */

#define MAP_INDEX_MIN 16

static uint64_t key_hash(const char *key)
{
    static uint64_t seed;
    if (!seed) {
        if (getrandom(&seed, sizeof seed, GRND_NONBLOCK) != sizeof seed)
            seed = (uint64_t)(uintptr_t)&seed;
        seed |= 1;
    }
    uint64_t h = seed;
    for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
        h = (h ^ *p) * 0x100000001b3ULL;
        h ^= h >> 29;
    }
    h *= 0xbf58476d1ce4e5b9ULL;
    return h ^ (h >> 31);
}

static void index_put(cfg_node_t *map, int64_t i)
{
    uint64_t mask = (uint64_t)map->nslot - 1;
    for (uint64_t s = key_hash(map->keys[i]) & mask;; s = (s + 1) & mask)
        if (!map->slot[s]) {
            map->slot[s] = i + 1;
            return;
        }
}

/* Makes room for one more key: builds or doubles the index when needed. */
static void index_grow(cfg_node_t *map)
{
    if (map->n + 1 < MAP_INDEX_MIN || 2 * (map->n + 1) <= map->nslot)
        return;
    int64_t want = 64;
    while (want < 2 * (map->n + 1))
        want *= 2;
    free(map->slot);
    map->slot = xcalloc((size_t)want, sizeof *map->slot);
    map->nslot = want;
    for (int64_t i = 0; i < map->n; i++)
        index_put(map, i);
}

/* Adds a child (key and its position kline:kcol only for mappings). */
static void node_append(cfg_node_t *nd, char *key, int kline, int kcol, cfg_node_t *child)
{
    if (nd->n == nd->cap) {   /* doubling: appending n children is linear */
        nd->cap = nd->cap ? 2 * nd->cap : 4;
        nd->items = xrealloc(nd->items, (size_t)nd->cap * sizeof *nd->items);
        if (nd->kind == CFG_MAP) {
            nd->keys = xrealloc(nd->keys, (size_t)nd->cap * sizeof *nd->keys);
            nd->key_pos = xrealloc(nd->key_pos, (size_t)nd->cap * 2 * sizeof *nd->key_pos);
        }
    }
    if (nd->kind == CFG_MAP) {
        index_grow(nd);
        nd->keys[nd->n] = key;
        nd->key_pos[2 * nd->n] = kline;
        nd->key_pos[2 * nd->n + 1] = kcol;
        if (nd->nslot)
            index_put(nd, nd->n);
    }
    nd->items[nd->n++] = child;
}

static int64_t map_index(const cfg_node_t *map, const char *key)
{
    if (!map || map->kind != CFG_MAP)
        return -1;
    if (!map->nslot) {
        for (int64_t i = 0; i < map->n; i++)
            if (strcmp(map->keys[i], key) == 0)
                return i;
        return -1;
    }
    uint64_t mask = (uint64_t)map->nslot - 1;
    for (uint64_t s = key_hash(key) & mask; map->slot[s]; s = (s + 1) & mask)
        if (strcmp(map->keys[map->slot[s] - 1], key) == 0)
            return map->slot[s] - 1;
    return -1;
}

const cfg_node_t *cfg_map_get(const cfg_node_t *map, const char *key)
{
    int64_t i = map_index(map, key);
    return i < 0 ? NULL : map->items[i];
}

const char *cfg_node_where(const cfg_node_t *nd, char *buf, size_t n)
{
    if (nd->line > 0)
        snprintf(buf, n, "%s:%d:%d", nd->src, nd->line, nd->col);
    else
        snprintf(buf, n, "%s", nd->src);
    return buf;
}

static const char *config_add_src(config_t *c, const char *name)
{
    c->srcs = xrealloc(c->srcs, (size_t)(c->nsrcs + 1) * sizeof *c->srcs);
    c->srcs[c->nsrcs] = xstrdup(name);
    return c->srcs[c->nsrcs++];
}

config_t *config_new(const char *name)
{
    config_t *c = xcalloc(1, sizeof *c);
    c->root = node_new(CFG_MAP, config_add_src(c, name), 0, 0);
    return c;
}

void config_free(config_t *c)
{
    if (!c)
        return;
    node_free(c->root);
    for (int i = 0; i < c->nsrcs; i++)
        free(c->srcs[i]);
    free(c->srcs);
    free(c);
}

/* ---- YAML parsing ---- */

typedef struct pctx {
    yaml_parser_t p;
    const char *src;
    int noloc;              /* a --set value: positions inside it mean little */
    perr_t *e;
} pctx_t;

static int parse_fail(pctx_t *x)
{
    yaml_parser_t *p = &x->p;
    if (p->error == YAML_MEMORY_ERROR)
        return INTERNAL(x->e, "%s: out of memory parsing YAML", x->src);
    const char *prob = p->problem ? p->problem : "malformed YAML";
    if (p->error == YAML_READER_ERROR)
        return BAD(x->e, "%s: byte %zu: %s", x->src, p->problem_offset, prob);
    if (x->noloc)
        return BAD(x->e, "%s: %s%s%s", x->src, prob, p->context ? " " : "",
                   p->context ? p->context : "");
    if (p->context)
        return BAD(x->e, "%s:%zu:%zu: %s %s (started at %zu:%zu)", x->src,
                   p->problem_mark.line + 1, p->problem_mark.column + 1, prob, p->context,
                   p->context_mark.line + 1, p->context_mark.column + 1);
    return BAD(x->e, "%s:%zu:%zu: %s", x->src, p->problem_mark.line + 1,
               p->problem_mark.column + 1, prob);
}

static int next_event(pctx_t *x, yaml_event_t *ev)
{
    if (!yaml_parser_parse(&x->p, ev))
        return parse_fail(x);
    return 0;
}

/* Reads and discards one event, keeping its type and position. */
static int skip_event(pctx_t *x, yaml_event_type_t *type, yaml_mark_t *mark)
{
    yaml_event_t ev;
    if (next_event(x, &ev) < 0)
        return -1;
    *type = ev.type;
    *mark = ev.start_mark;
    yaml_event_delete(&ev);
    return 0;
}

static int is_str_tag(const yaml_char_t *tag)
{
    return tag && strcmp((const char *)tag, YAML_STR_TAG) == 0;
}

static cfg_node_t *parse_node(pctx_t *x, yaml_event_t *ev, int depth);

/* Reads a mapping key event: its text and position, refusing complex keys
 * and duplicates. Returns the key or NULL. */
static char *read_key(pctx_t *x, const cfg_node_t *map, yaml_event_t *kev, int *kline, int *kcol)
{
    *kline = (int)kev->start_mark.line + 1;
    *kcol = (int)kev->start_mark.column + 1;
    if (kev->type != YAML_SCALAR_EVENT) {
        BAD(x->e, "%s:%d:%d: only plain keys are supported in a mapping", x->src, *kline, *kcol);
        return NULL;
    }
    char *key = xstrndup((const char *)kev->data.scalar.value, kev->data.scalar.length);
    int64_t dup = map_index(map, key);
    if (dup >= 0) {
        BAD(x->e, "%s:%d:%d: duplicate key '%s' (first at line %d)", x->src, *kline, *kcol, key,
            map->key_pos[2 * dup]);
        free(key);
        return NULL;
    }
    return key;
}

/* Fills a mapping or sequence node from the events up to its end event. */
static cfg_node_t *parse_collection(pctx_t *x, cfg_node_t *nd, int depth)
{
    for (;;) {
        yaml_event_t ev;
        if (next_event(x, &ev) < 0)
            break;
        if (ev.type == YAML_MAPPING_END_EVENT || ev.type == YAML_SEQUENCE_END_EVENT) {
            yaml_event_delete(&ev);
            return nd;
        }
        char *key = NULL;
        int kline = 0, kcol = 0;
        if (nd->kind == CFG_MAP) {
            key = read_key(x, nd, &ev, &kline, &kcol);
            yaml_event_delete(&ev);
            if (!key || next_event(x, &ev) < 0) {
                free(key);
                break;
            }
        }
        cfg_node_t *child = parse_node(x, &ev, depth + 1);
        yaml_event_delete(&ev);
        if (!child) {
            free(key);
            break;
        }
        node_append(nd, key, kline, kcol, child);
    }
    node_free(nd);
    return NULL;
}

/* Builds the node that starts with event ev (ev stays owned by the caller). */
static cfg_node_t *parse_node(pctx_t *x, yaml_event_t *ev, int depth)
{
    int line = (int)ev->start_mark.line + 1, col = (int)ev->start_mark.column + 1;
    if (depth > CFG_MAX_DEPTH) {
        BAD(x->e, "%s:%d:%d: nesting deeper than %d levels", x->src, line, col,
            CFG_MAX_DEPTH);
        return NULL;
    }
    switch (ev->type) {
    case YAML_SCALAR_EVENT: {
        cfg_node_t *nd = node_new(CFG_SCALAR, x->src, line, col);
        nd->text = xstrndup((const char *)ev->data.scalar.value, ev->data.scalar.length);
        nd->quoted = ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
                     is_str_tag(ev->data.scalar.tag);
        return nd;
    }
    case YAML_MAPPING_START_EVENT:
        return parse_collection(x, node_new(CFG_MAP, x->src, line, col), depth);
    case YAML_SEQUENCE_START_EVENT:
        return parse_collection(x, node_new(CFG_SEQ, x->src, line, col), depth);
    case YAML_ALIAS_EVENT:
        BAD(x->e, "%s:%d:%d: aliases (*name) are not supported; write the value out", x->src,
            line, col);
        return NULL;
    default:
        BAD(x->e, "%s:%d:%d: unexpected YAML event", x->src, line, col);
        return NULL;
    }
}

/* Parses one YAML document into a node of any kind; an empty stream gives
 * an empty plain scalar (YAML's null). */
static cfg_node_t *parse_document(const char *text, size_t n, const char *src, int noloc,
                                  perr_t *e)
{
    pctx_t x = { .src = src, .noloc = noloc, .e = e };
    if (!yaml_parser_initialize(&x.p)) {
        INTERNAL(e, "%s: cannot initialise the YAML parser", src);
        return NULL;
    }
    yaml_parser_set_input_string(&x.p, (const unsigned char *)text, n);
    cfg_node_t *root = NULL;
    yaml_event_type_t t;
    yaml_mark_t m;
    /* STREAM-START, then DOCUMENT-START or (empty input) STREAM-END */
    if (skip_event(&x, &t, &m) < 0 || skip_event(&x, &t, &m) < 0)
        goto out;
    if (t == YAML_STREAM_END_EVENT) {
        root = node_new(CFG_SCALAR, src, 1, 1);
        root->text = xstrdup("");
        goto out;
    }
    yaml_event_t ev;
    if (next_event(&x, &ev) < 0)
        goto out;
    root = parse_node(&x, &ev, 0);
    yaml_event_delete(&ev);
    if (!root)
        goto out;
    /* DOCUMENT-END, then STREAM-END */
    if (skip_event(&x, &t, &m) < 0 || skip_event(&x, &t, &m) < 0)
        goto fail;
    if (t != YAML_STREAM_END_EVENT) {
        BAD(e, "%s:%zu:%zu: more than one YAML document", src, m.line + 1, m.column + 1);
        goto fail;
    }
    goto out;
fail:
    node_free(root);
    root = NULL;
out:
    yaml_parser_delete(&x.p);
    return root;
}

config_t *config_parse(const char *text, size_t n, const char *name, perr_t *e)
{
    config_t *c = xcalloc(1, sizeof *c);
    const char *src = config_add_src(c, name);
    cfg_node_t *root = parse_document(text, n, src, 0, e);
    if (!root) {
        config_free(c);
        return NULL;
    }
    if (root->kind == CFG_SCALAR && cfg_scalar_is_null(root)) {
        node_free(root);
        root = node_new(CFG_MAP, src, 1, 1);
    }
    if (root->kind != CFG_MAP) {
        BAD(e, "%s:%d:%d: the top level must be a mapping of keys to values", src,
            root->line, root->col);
        node_free(root);
        config_free(c);
        return NULL;
    }
    c->root = root;
    return c;
}

config_t *config_load(const char *path, perr_t *e)
{
    char *text;
    size_t n;
    if (read_file(path, &text, &n, e) < 0)
        return NULL;
    config_t *c = config_parse(text, n, path, e);
    free(text);
    return c;
}

config_t *config_load_nonempty(const char *path, perr_t *e)
{
    config_t *c = config_load(path, e);
    if (c && c->root->n == 0) {
        config_free(c);
        BAD(e, "%s: empty config: no keys", path);
        return NULL;
    }
    return c;
}

/* ---- lookup ---- */

/* Splits off the next dotted part of *key into part (size cap). */
static int next_part(const char **key, char *part, size_t cap)
{
    const char *dot = strchr(*key, '.');
    size_t len = dot ? (size_t)(dot - *key) : strlen(*key);
    if (len == 0 || len >= cap)
        return -1;
    memcpy(part, *key, len);
    part[len] = 0;
    *key += len + (dot ? 1 : 0);
    return 0;
}

static int parse_index(const char *s, int64_t *i)
{
    if (!*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 15)
        return -1;
    *i = strtoll(s, NULL, 10);
    return 0;
}

static cfg_node_t *child_of(const cfg_node_t *nd, const char *part)
{
    if (nd->kind == CFG_MAP) {
        int64_t i = map_index(nd, part);
        return i < 0 ? NULL : nd->items[i];
    }
    int64_t i;
    if (nd->kind == CFG_SEQ && parse_index(part, &i) == 0 && i < nd->n)
        return nd->items[i];
    return NULL;
}

const cfg_node_t *config_get(const config_t *c, const char *key)
{
    const cfg_node_t *nd = c->root;
    char part[256];
    while (*key) {
        if (next_part(&key, part, sizeof part) < 0)
            return NULL;
        nd = child_of(nd, part);
        if (!nd)
            return NULL;
    }
    return nd;
}

/* ---- --set overrides ---- */

static int valid_key(const char *key)
{
    if (!*key || key[0] == '.' || key[strlen(key) - 1] == '.' || strstr(key, ".."))
        return 0;
    return strspn(key, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.") ==
           strlen(key);
}

static void unlocate(cfg_node_t *nd)
{
    nd->line = nd->col = 0;
    if (nd->key_pos)
        memset(nd->key_pos, 0, (size_t)nd->n * 2 * sizeof *nd->key_pos);
    for (int64_t i = 0; i < nd->n; i++)
        unlocate(nd->items[i]);
}

/* Walks/creates the mappings above the last part of key and stores val. */
static int set_path(config_t *c, const char *key, cfg_node_t *val, const char *src, perr_t *e)
{
    cfg_node_t *nd = c->root;
    char part[256];
    const char *rest = key;
    for (;;) {
        if (next_part(&rest, part, sizeof part) < 0)
            return BAD(e, "%s: bad key '%s'", src, key);
        int last = *rest == 0;
        if (nd->kind == CFG_SEQ) {
            int64_t i;
            if (parse_index(part, &i) < 0 || i >= nd->n) {
                char w[512];
                return BAD(e, "%s: '%s' is not an index of the sequence at %s", src, part,
                           cfg_node_where(nd, w, sizeof w));
            }
            if (last) {
                node_free(nd->items[i]);
                nd->items[i] = val;
                return 0;
            }
            nd = nd->items[i];
            continue;
        }
        int64_t i = map_index(nd, part);
        if (last) {
            if (i >= 0) {
                node_free(nd->items[i]);
                nd->items[i] = val;
            } else {
                node_append(nd, xstrdup(part), 0, 0, val);
            }
            return 0;
        }
        if (i < 0) {
            node_append(nd, xstrdup(part), 0, 0, node_new(CFG_MAP, src, 0, 0));
            i = nd->n - 1;
        }
        cfg_node_t *ch = nd->items[i];
        if (ch->kind == CFG_SCALAR) {
            if (!cfg_scalar_is_null(ch)) {
                char w[512];
                return BAD(e, "%s: '%s' is the value '%s' at %s, not a mapping", src, part,
                           ch->text, cfg_node_where(ch, w, sizeof w));
            }
            node_free(ch);
            ch = nd->items[i] = node_new(CFG_MAP, src, 0, 0);
        }
        nd = ch;
    }
}

int config_set(config_t *c, const char *assignment, perr_t *e)
{
    const char *eq = strchr(assignment, '=');
    char label[600];
    snprintf(label, sizeof label, "--set %s", assignment);
    if (!eq)
        return BAD(e, "%s: expected KEY=VALUE", label);
    char *key = xstrndup(assignment, (size_t)(eq - assignment));
    if (!valid_key(key)) {
        BAD(e, "%s: bad key '%s' (dotted names of [A-Za-z0-9_-])", label, key);
        free(key);
        return -1;
    }
    const char *src = config_add_src(c, label);
    cfg_node_t *val = parse_document(eq + 1, strlen(eq + 1), src, 1, e);
    if (!val) {
        free(key);
        return -1;
    }
    unlocate(val);
    int rc = set_path(c, key, val, src, e);
    if (rc < 0)
        node_free(val);
    free(key);
    return rc;
}

/* ---- JSON ---- */

json_t *cfg_node_to_json(const cfg_node_t *nd)
{
    if (nd->kind == CFG_MAP) {
        json_t *o = json_object();
        for (int64_t i = 0; i < nd->n; i++)
            json_object_set_new(o, nd->keys[i], cfg_node_to_json(nd->items[i]));
        return o;
    }
    if (nd->kind == CFG_SEQ) {
        json_t *a = json_array();
        for (int64_t i = 0; i < nd->n; i++)
            json_array_append_new(a, cfg_node_to_json(nd->items[i]));
        return a;
    }
    if (nd->quoted)
        return json_string(nd->text);
    if (cfg_scalar_is_null(nd))
        return json_null();
    int b;
    if (cfg_scalar_bool(nd->text, &b) == 0)
        return json_boolean(b);
    int64_t i;
    if (cfg_scalar_int(nd->text, &i) == 0)
        return json_integer(i);
    double d;
    json_t *r;
    if (cfg_scalar_double(nd->text, &d) == 0 && (r = json_real(d)))
        return r;   /* json_real refuses infinities and NaN: those stay text */
    return json_string(nd->text);
}

json_t *config_to_json(const config_t *c)
{
    return cfg_node_to_json(c->root);
}
