/* run.c — the comparison loop (run.h): tolerances per tensor, sample and
 * tensor matching, one pair in memory at a time. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "compare/run.h"
#include "io/trtexec.h"

/* ---- tolerances ------------------------------------------------------------ */

void cmp_config_init(cmp_config_t *c)
{
    memset(c, 0, sizeof *c);
    c->tol.atol = 1e-5;
    c->tol.rtol = 1e-5;
    c->tol.quantile = 0.99;
    c->tol.rule = CMP_RULE_POLYGRAPHY;
    c->tol.stat = CMP_STAT_ELEMWISE;
}

static int parse_tol(const char *s, double *v)
{
    char *end;
    *v = strtod(s, &end);
    return end != s && !*end && isfinite(*v) && *v >= 0 ? 0 : -1;
}

int cmp_config_add_override(cmp_config_t *c, const char *spec, perr_t *e)
{
    const char *eq = strrchr(spec, '=');
    const char *comma = eq ? strchr(eq, ',') : NULL;
    if (!eq || eq == spec || !comma)
        return BAD(e, "--per-tensor '%s': expected NAME=atol,rtol", spec);
    char *a = xstrndup(eq + 1, (size_t)(comma - eq - 1));
    double atol, rtol;
    int bad = parse_tol(a, &atol) || parse_tol(comma + 1, &rtol);
    free(a);
    if (bad) return BAD(e, "--per-tensor '%s': tolerances must be non-negative numbers", spec);
    c->over = xrealloc(c->over, (size_t)(c->n_over + 1) * sizeof *c->over);
    c->over[c->n_over].pattern = xstrndup(spec, (size_t)(eq - spec));
    c->over[c->n_over].atol = atol;
    c->over[c->n_over].rtol = rtol;
    c->n_over++;
    return 0;
}

cmp_tol_t cmp_config_tol(const cmp_config_t *c, const char *name)
{
    cmp_tol_t t = c->tol;
    for (int i = 0; i < c->n_over; i++)
        if (name_sel_match(c->over[i].pattern, name)) {
            t.atol = c->over[i].atol;
            t.rtol = c->over[i].rtol;
        }
    return t;
}

/* the selection lives in util/namesel.c, shared with infer's choice of what to keep */
void cmp_config_add_glob(cmp_config_t *c, int ignore, const char *glob)
{
    name_sel_add(&c->sel, ignore, glob);
}

int cmp_config_judged(const cmp_config_t *c, const char *name)
{
    return name_sel_judged(&c->sel, name);
}

int cmp_check_judged(const cmp_config_t *c, const cmp_report_t *rep, perr_t *e)
{
    for (int i = 0; i < c->sel.n_judge; i++) {
        int hit = 0;
        for (int k = 0; k < rep->n && !hit; k++) hit = rep->r[k].name && name_sel_match(c->sel.judge[i], rep->r[k].name);
        if (hit) continue;
        char names[512] = "";
        size_t l = 0;
        for (int k = 0; k < rep->n && l < sizeof names; k++)
            if (rep->r[k].name && !strstr(names, rep->r[k].name))
                l += (size_t)snprintf(names + l, sizeof names - l, "%s%s", l ? ", " : "", rep->r[k].name);
        return BAD(e, "--judge '%s' (the outputs the application reads) names no tensor of %s (its tensors: %s)",
                   c->sel.judge[i], rep->b->path, names);
    }
    for (int k = 0; k < rep->n; k++)
        if (!rep->r[k].unjudged) return 0;
    return BAD(e, "every tensor of %s is ignored (--judge/--ignore): nothing would be judged", rep->b->path);
}

void cmp_config_free(cmp_config_t *c)
{
    name_sel_free(&c->sel);
    for (int i = 0; i < c->n_over; i++) free(c->over[i].pattern);
    free(c->over);
    memset(c, 0, sizeof *c);
}

/* ---- results ------------------------------------------------------------------ */

cmp_result_t *report_add(cmp_report_t *rep, const char *sample, const char *name, res_status_t st)
{
    if (rep->n == rep->cap) {
        rep->cap = rep->cap ? 2 * rep->cap : 16;
        rep->r = xrealloc(rep->r, (size_t)rep->cap * sizeof *rep->r);
    }
    cmp_result_t *r = &rep->r[rep->n++];
    memset(r, 0, sizeof *r);
    r->sample = xstrdup(sample);
    r->name = name ? xstrdup(name) : NULL;
    r->status = st;
    return r;
}

void cmp_report_free(cmp_report_t *rep)
{
    for (int i = 0; i < rep->n; i++) {
        free(rep->r[i].sample);
        free(rep->r[i].name);
        free(rep->r[i].name_a);
    }
    free(rep->r);
    memset(rep, 0, sizeof *rep);
}

int64_t cmp_report_elements(const cmp_report_t *rep)
{
    int64_t n = 0;
    for (int i = 0; i < rep->n; i++)
        if (rep->r[i].status == RES_PASS || rep->r[i].status == RES_FAIL) n += rep->r[i].st.n;
    return n;
}

int cmp_report_judged(const cmp_report_t *rep)
{
    int64_t n = 0;
    for (int i = 0; i < rep->n; i++) {
        if (rep->r[i].unjudged) continue;   /* left out by the output selection (--judge, --ignore) */
        if (rep->r[i].status != RES_PASS) return 1;   /* a failure is a judgement */
        n += rep->r[i].st.n;
    }
    return n > 0;
}

int cmp_report_status(const cmp_report_t *rep)
{
    for (int i = 0; i < rep->n; i++)
        if (rep->r[i].status != RES_PASS && !rep->r[i].unjudged) return EXIT_CHECK;
    return cmp_report_judged(rep) ? EXIT_PASS : EXIT_CHECK;   /* only empty tensors: nothing judged */
}

static void set_shape(int *nd, int64_t *dims, const tensor_t *t)
{
    *nd = t->ndim;
    memcpy(dims, t->dims, sizeof t->dims);
}

int cmp_one(const cmp_set_t *sa, int ka, const cmp_set_t *sb, int kb, const cmp_config_t *cfg,
            cmp_work_t *w, cmp_result_t *r, int64_t *bytes, perr_t *e)
{
    tensor_t ta, tb;
    if (set_load(sb, kb, &tb, e)) return -1;
    if (set_load(sa, ka, &ta, e)) { tensor_free_data(&tb); return -1; }
    r->dta = ta.dtype;
    r->dtb = tb.dtype;
    set_shape(&r->nda, r->da, &ta);
    set_shape(&r->ndb, r->db, &tb);
    r->tol = cmp_config_tol(cfg, sb->ent[kb].name);
    if (bytes) *bytes += (int64_t)(tensor_nbytes(&ta) + tensor_nbytes(&tb));
    int rc = 0;
    if (!tensor_same_shape(&ta, &tb)) {
        r->status = RES_SHAPE;
    } else if (cmp_pair(&ta, &tb, &r->tol, w, &r->st, e)) {
        rc = perr_prefix(e, "tensor '%s': ", sb->ent[kb].name);
    } else {
        r->status = cmp_passed(&r->st, &r->tol) ? RES_PASS : RES_FAIL;
    }
    tensor_free_data(&ta);
    tensor_free_data(&tb);
    return rc;
}

/* ---- matching --------------------------------------------------------------------- */

int match_samples(const cmp_side_t *a, const cmp_side_t *b, int **ia, int **ib, perr_t *e)
{
    int cap = a->n + b->n + 1, m = 0;
    *ia = xmalloc((size_t)cap * sizeof **ia);
    *ib = xmalloc((size_t)cap * sizeof **ib);
    if (a->tree && b->tree) {
        /* by id: both lists are sorted (folder listings) */
        int i = 0, j = 0;
        while (i < a->n || j < b->n) {
            int c = i >= a->n ? 1 : j >= b->n ? -1 : strcmp(a->s[i].id, b->s[j].id);
            (*ia)[m] = c <= 0 ? i++ : -1;
            (*ib)[m] = c >= 0 ? j++ : -1;
            m++;
        }
        return m;
    }
    if (a->n != b->n) {
        free(*ia);
        free(*ib);
        return BAD(e, "%s holds %d sample%s, %s %d: cannot pair them", a->path, a->n, a->n == 1 ? "" : "s",
                   b->path, b->n);
    }
    for (int i = 0; i < a->n; i++) (*ia)[m] = (*ib)[m] = i, m++;
    return m;
}

/* Pairs a's and b's tensors: exact names, then names equal once both are
 * passed through trtexec's file-name sanitiser (raw binding files). */
static void match_tensors(const cmp_set_t *sa, const cmp_set_t *sb, int *a_of_b, int *b_of_a)
{
    for (int i = 0; i < sa->n; i++) b_of_a[i] = -1;
    for (int j = 0; j < sb->n; j++) {
        a_of_b[j] = set_find(sa, sb->ent[j].name);
        if (a_of_b[j] >= 0) b_of_a[a_of_b[j]] = j;
    }
    for (int j = 0; j < sb->n; j++) {
        if (a_of_b[j] >= 0) continue;
        char *sbn = trtexec_safe_name(sb->ent[j].name);
        int found = -1, count = 0;
        for (int i = 0; i < sa->n; i++) {
            if (b_of_a[i] >= 0) continue;
            char *san = trtexec_safe_name(sa->ent[i].name);
            if (!strcmp(san, sbn)) { found = i; count++; }
            free(san);
        }
        free(sbn);
        if (count == 1) {
            a_of_b[j] = found;
            b_of_a[found] = j;
        }
    }
}

/* A tensor on one side only: reported with its type and shape. */
static int add_alone(cmp_report_t *rep, const char *id, const cmp_set_t *set, int k, res_status_t st, perr_t *e)
{
    cmp_result_t *r = report_add(rep, id, set->ent[k].name, st);
    r->unjudged = !cmp_config_judged(rep->cfg, set->ent[k].name);
    tensor_t t;
    if (set_load(set, k, &t, e)) return -1;
    if (st == RES_MISSING) {
        r->dtb = t.dtype;
        set_shape(&r->ndb, r->db, &t);
    } else {
        r->dta = t.dtype;
        set_shape(&r->nda, r->da, &t);
    }
    tensor_free_data(&t);
    return 0;
}

static int run_sample(const cmp_side_t *a, int ia, const cmp_side_t *b, int ib, const cmp_config_t *cfg,
                      cmp_work_t *w, cmp_report_t *rep, perr_t *e)
{
    cmp_set_t sa, sb;
    if (set_open(b, ib, &sb, e)) return -1;
    if (set_open(a, ia, &sa, e)) { set_close(&sb); return -1; }
    const char *id = b->s[ib].id[0] ? b->s[ib].id : a->s[ia].id;
    int *a_of_b = xmalloc((size_t)(sb.n + 1) * sizeof *a_of_b);
    int *b_of_a = xmalloc((size_t)(sa.n + 1) * sizeof *b_of_a);
    match_tensors(&sa, &sb, a_of_b, b_of_a);
    int rc = 0;
    for (int j = 0; j < sb.n && !rc; j++) {
        if (a_of_b[j] < 0) {
            rc = add_alone(rep, id, &sb, j, RES_MISSING, e);
            continue;
        }
        cmp_result_t *r = report_add(rep, id, sb.ent[j].name, RES_PASS);
        r->unjudged = !cmp_config_judged(cfg, sb.ent[j].name);
        if (strcmp(sa.ent[a_of_b[j]].name, sb.ent[j].name)) r->name_a = xstrdup(sa.ent[a_of_b[j]].name);
        rc = cmp_one(&sa, a_of_b[j], &sb, j, cfg, w, r, &rep->bytes, e);
    }
    for (int i = 0; i < sa.n && !rc; i++)
        if (b_of_a[i] < 0) rc = add_alone(rep, id, &sa, i, RES_EXTRA, e);
    free(a_of_b);
    free(b_of_a);
    set_close(&sa);
    set_close(&sb);
    return rc;
}

int cmp_run(const cmp_side_t *a, const cmp_side_t *b, const cmp_config_t *cfg, cmp_report_t *rep, perr_t *e)
{
    memset(rep, 0, sizeof *rep);
    rep->a = a;
    rep->b = b;
    rep->cfg = cfg;
    int *ia, *ib;
    int m = match_samples(a, b, &ia, &ib, e);
    if (m < 0) return -1;
    cmp_work_t *w = cmp_work_new();
    int rc = 0;
    for (int k = 0; k < m && !rc; k++) {
        if (ia[k] < 0) report_add(rep, b->s[ib[k]].id, NULL, RES_SAMPLE_MISSING);
        else if (ib[k] < 0) report_add(rep, a->s[ia[k]].id, NULL, RES_SAMPLE_EXTRA);
        else rc = run_sample(a, ia[k], b, ib[k], cfg, w, rep, e);
    }
    cmp_work_free(w);
    free(ia);
    free(ib);
    if (!rc && rep->n == 0) rc = BAD(e, "%s and %s hold no tensors: nothing to compare", a->path, b->path);
    return rc;
}
