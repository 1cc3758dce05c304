/* write.c — plan.mk and the files beside it, made in memory, each value
 * checked as it goes in, written only when all passed (see write.h). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "write.h"
#include "util/fsutil.h"
#include "util/jsonfile.h"

/* What make and the shell can hold without quoting rules: the alphabet of
 * names and paths. A leading '-' would read as an option. */
static int mk_safe(const char *s)
{
    if (!*s || *s == '-') return 0;
    return strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._/+-") == strlen(s);
}

static int has_control(const char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) return 1;
    return 0;
}

static int mk_unsafe(const char *s) { return !mk_safe(s); }

/* Where a refused value came from: the longest text in the config (a key or
 * a scalar) that itself fails the check and occurs in the value. */
typedef struct source {
    const char *value;
    int (*bad)(const char *);
    size_t best;
    char key[1024], where[512];
} source_t;

static void consider(source_t *s, const char *text, const cfg_node_t *at, const char *key)
{
    size_t l = strlen(text);
    if (l <= s->best || !s->bad(text) || !strstr(s->value, text)) return;
    s->best = l;
    snprintf(s->key, sizeof s->key, "%s", key);
    cfg_node_where(at, s->where, sizeof s->where);
}

static void find_source(const cfg_node_t *nd, char *key, size_t cap, source_t *s)
{
    size_t base = strlen(key);
    for (int64_t i = 0; i < nd->n; i++) {
        const cfg_node_t *ch = nd->items[i];
        char idx[32];
        snprintf(idx, sizeof idx, "%lld", (long long)i);
        snprintf(key + base, cap - base, "%s%s", base ? "." : "", nd->kind == CFG_MAP ? nd->keys[i] : idx);
        if (nd->kind == CFG_MAP) {
            cfg_node_t at = *ch;   /* the key's own place */
            at.line = nd->key_pos[2 * i];
            at.col = nd->key_pos[2 * i + 1];
            consider(s, nd->keys[i], &at, key);
        }
        if (ch->kind == CFG_SCALAR) consider(s, ch->text, ch, key);
        else find_source(ch, key, cap, s);
        key[base] = 0;
    }
}

static void refuse(plan_out_t *o, const char *value, int (*bad)(const char *), const char *rule)
{
    if (o->e->code) return;
    source_t s = {.value = value, .bad = bad};
    char key[1024] = "";
    find_source(o->m->cfg->root, key, sizeof key, &s);
    if (s.best)
        BAD(o->e, "%s: %s: '%s' %s", s.where, s.key, value, rule);
    else   /* not from the config: its file name or the output folder */
        BAD(o->e, "%s: '%s' %s", o->m->path, value, rule);
}

static const char mk_rule[] =
    "cannot go into the plan (names and paths use only letters, digits and . _ - / +, and do not start with '-')";

static void mk_put(plan_out_t *o, const char *s, size_t k)
{
    if (o->n + k + 1 > o->cap) o->mk = xrealloc(o->mk, o->cap = (o->n + k + 1) * 2);
    memcpy(o->mk + o->n, s, k);
    o->mk[o->n += k] = 0;
}

void mk_printf(plan_out_t *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    for (const char *p = fmt; *p;) {
        const char *pc = strchr(p, '%');
        if (!pc) { mk_put(o, p, strlen(p)); break; }
        mk_put(o, p, (size_t)(pc - p));
        if (pc[1] == '%') {
            mk_put(o, "%", 1);
        } else if (pc[1] == 's') {
            const char *v = va_arg(ap, const char *);
            if (!mk_safe(v)) refuse(o, v, mk_unsafe, mk_rule);
            mk_put(o, v, strlen(v));
        } else {
            abort();   /* a programming error: values go in as %s */
        }
        p = pc + 2;
    }
    va_end(ap);
}

static const char args_rule[] = "cannot be a command-line argument (it holds a control character)";

void args_add(plan_out_t *o, json_t *args, const char *a)
{
    json_t *s = json_string(a);
    if (has_control(a) || !s) refuse(o, a, has_control, s ? args_rule : "is not UTF-8 text");
    if (s) json_array_append_new(args, s);
}

void args_add2(plan_out_t *o, json_t *args, const char *a, const char *b)
{
    char *s = xmalloc(strlen(a) + strlen(b) + 1);
    strcpy(s, a);
    strcat(s, b);
    args_add(o, args, s);
    free(s);
}

void plan_file(plan_out_t *o, const char *path, char *text)
{
    if (!text) { INTERNAL(o->e, "%s: cannot serialise JSON", path); return; }   /* json_file_text failed */
    o->paths = xrealloc(o->paths, (size_t)(o->nfiles + 1) * sizeof *o->paths);
    o->texts = xrealloc(o->texts, (size_t)(o->nfiles + 1) * sizeof *o->texts);
    o->paths[o->nfiles] = xstrdup(path);
    o->texts[o->nfiles++] = text;
}

void plan_file_args(plan_out_t *o, const char *path, json_t *args)
{
    plan_file(o, path, json_file_text(args, JSON_INDENT(1)));
    json_decref(args);
}

int plan_out_commit(plan_out_t *o, const char *dir)
{
    if (o->e->code) return -1;
    for (int i = 0; i < o->nfiles; i++) {
        const char *slash = strrchr(o->paths[i], '/');
        char *parent = slash ? xstrndup(o->paths[i], (size_t)(slash - o->paths[i])) : xstrdup(".");
        int rc = mkdir_p(parent, o->e);
        free(parent);
        /* rewritten only when the content changes: make's timestamps stay meaningful */
        if (rc || write_if_changed(o->paths[i], o->texts[i], o->e)) return -1;
    }
    char path[1024];
    snprintf(path, sizeof path, "%s/plan.mk", dir);
    return atomic_write(path, o->mk, o->n, o->e);   /* always: make needs it newer than the config */
}

void plan_out_free(plan_out_t *o)
{
    for (int i = 0; i < o->nfiles; i++) { free(o->paths[i]); free(o->texts[i]); }
    free(o->paths);
    free(o->texts);
    free(o->mk);
    memset(o, 0, sizeof *o);
}
