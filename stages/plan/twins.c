/* twins.c — which cells share their inference: preprocessing variants
 * that make the same tensors, and precisions whose engines may compute
 * some layers alike.
 *
 * Two variants whose preprocess configs are the same but for `name:` and
 * `extra:` make the same image tensors and differ only in the extra inputs
 * (RT-DETR's letterbox and letterbox-naive: orig_target_sizes, which the
 * graph reads in its last layers). Their cells of one precision run in one
 * infer process (emit.c), which reruns only the layers the differing
 * inputs reach (stages/infer/run.c). This is a hint, never a premise:
 * infer compares the tensors byte for byte and runs whole wherever they
 * differ, so a wrong guess costs time, not results.
 *
 * Two parity precisions whose configs set the same global `precision:`
 * (rtdetr's fp16 and mixed, which pins LayerNorm, Softmax and the
 * reductions to fp32) build engines that may compute many layers alike
 * (the backbone): their cells of a variant and its twins run in the same
 * infer process too, the second engine given by --engine; infer decides
 * from the engines' bytes which layers it takes from the first
 * (engine/match.c) and runs the rest. Also a hint, never a premise. */
#include <stdlib.h>
#include <string.h>
#include "twins.h"

static int same_node(const cfg_node_t *a, const cfg_node_t *b);

/* The keys of a outside skip all in b with the same values. */
static int covers(const cfg_node_t *a, const cfg_node_t *b, const char *const *skip)
{
    for (int64_t i = 0; i < a->n; i++) {
        int skipped = 0;
        for (int k = 0; skip && skip[k]; k++) skipped |= !strcmp(a->keys[i], skip[k]);
        if (skipped) continue;
        const cfg_node_t *o = cfg_map_get(b, a->keys[i]);
        if (!o || !same_node(a->items[i], o)) return 0;
    }
    return 1;
}

static int same_node(const cfg_node_t *a, const cfg_node_t *b)
{
    if (a->kind != b->kind) return 0;
    if (a->kind == CFG_SCALAR) return a->quoted == b->quoted && !strcmp(a->text, b->text);
    if (a->n != b->n) return 0;
    if (a->kind == CFG_MAP) return covers(a, b, NULL);
    for (int64_t i = 0; i < a->n; i++)
        if (!same_node(a->items[i], b->items[i])) return 0;
    return 1;
}

/* A variant's or precision's config (inline text, else its file), or NULL
 * where it does not read (the stage that reads it will say why). */
static config_t *load_entry(const char *text, const char *name, const char *path)
{
    perr_t e = {0};
    if (text) return config_parse(text, strlen(text), name, &e);
    return path ? config_load(path, &e) : NULL;
}

void plan_twins(const model_cfg_t *m, int *base)
{
    static const char *const skip[] = {"name", "extra", NULL};
    config_t **c = xcalloc((size_t)m->n_variants + 1, sizeof *c);
    for (int v = 0; v < m->n_variants; v++) {
        base[v] = -1;
        if (m->inputs || !(c[v] = load_entry(m->variants[v].text, m->variants[v].name, m->variants[v].config))) continue;
        for (int u = 0; u < v && base[v] < 0; u++)
            if (c[u] && base[u] < 0 && covers(c[u]->root, c[v]->root, skip) && covers(c[v]->root, c[u]->root, skip))
                base[v] = u;
    }
    for (int v = 0; v < m->n_variants; v++) config_free(c[v]);
    free(c);
}

/* The global precision a parity precision's config sets, or NULL. */
static const char *global_precision(const config_t *c)
{
    const cfg_node_t *n = c ? cfg_map_get(c->root, "precision") : NULL;
    return n && n->kind == CFG_SCALAR ? n->text : NULL;
}

void plan_precision_twins(const model_cfg_t *m, int *base)
{
    config_t **c = xcalloc((size_t)m->n_precisions + 1, sizeof *c);
    for (int p = 0; p < m->n_precisions; p++) {
        const precision_cfg_t *pc = &m->precisions[p];
        base[p] = -1;
        if (pc->backend || !(c[p] = load_entry(pc->text, pc->name, pc->config)) || !global_precision(c[p])) continue;
        for (int q = 0; q < p && base[p] < 0; q++)
            if (base[q] < 0 && global_precision(c[q]) && !strcmp(global_precision(c[q]), global_precision(c[p])))
                base[p] = q;
    }
    for (int p = 0; p < m->n_precisions; p++) config_free(c[p]);
    free(c);
}
