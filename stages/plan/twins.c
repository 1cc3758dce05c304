/* twins.c — which preprocessing variants share their inference.
 *
 * Two variants whose preprocess configs are the same but for `name:` and
 * `extra:` make the same image tensors and differ only in the extra inputs
 * (RT-DETR's letterbox and letterbox-naive: orig_target_sizes, which the
 * graph reads in its last layers). Their cells of one precision run in one
 * infer process (emit.c), which reruns only the layers the differing
 * inputs reach (stages/infer/run.c). This is a hint, never a premise:
 * infer compares the tensors byte for byte and runs whole wherever they
 * differ, so a wrong guess costs time, not results. */
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

/* Variant v's preprocess config, or NULL where it does not read (preprocess
 * will say why when it runs). */
static config_t *load_variant(const variant_t *v)
{
    perr_t e = {0};
    if (v->text) return config_parse(v->text, strlen(v->text), v->name, &e);
    return v->config ? config_load(v->config, &e) : NULL;
}

void plan_twins(const model_cfg_t *m, int *base)
{
    static const char *const skip[] = {"name", "extra", NULL};
    config_t **c = xcalloc((size_t)m->n_variants + 1, sizeof *c);
    for (int v = 0; v < m->n_variants; v++) {
        base[v] = -1;
        if (m->inputs || !(c[v] = load_variant(&m->variants[v]))) continue;
        for (int u = 0; u < v && base[v] < 0; u++)
            if (c[u] && base[u] < 0 && covers(c[u]->root, c[v]->root, skip) && covers(c[v]->root, c[u]->root, skip))
                base[v] = u;
    }
    for (int v = 0; v < m->n_variants; v++) config_free(c[v]);
    free(c);
}
