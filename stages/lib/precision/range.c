/* range.c — the build-time check of weights and other float32 constants
 * against the range of the precision that will hold them: a constant read
 * by an FP16 layer is cast to FP16, and a value beyond 65504 becomes
 * 65504 or inf there (BF16: beyond 3.39e38). Activations are judged at run
 * time by compare; constants are known here, so the layer report names the
 * layer, the input and how far out it lies, and stderr prints a summary. It
 * runs after the folds (a folded BatchNormalization's variance is no longer
 * cast) and before constants are rounded. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "precision/precision.h"

#define FP16_MAX 65504.0
#define BF16_MAX 3.3895313892515355e38

static double range_of(precision_t p)
{
    return p == PREC_FP16 ? FP16_MAX : p == PREC_BF16 ? BF16_MAX : 0;
}

/* ONNX's name for input k of the ops whose constants are not weights by
 * position, so the report says "input_var" rather than "input 4". */
static const char *input_role(const node_t *n, int k)
{
    static const char *const bn[] = {"X", "scale", "B", "input_mean", "input_var"};
    static const char *const conv[] = {"X", "W", "B"};
    static const char *const gemm[] = {"A", "B", "C"};
    if (n->domain[0]) return NULL;
    if (!strcmp(n->op_type, "BatchNormalization") && k < 5) return bn[k];
    if ((!strcmp(n->op_type, "Conv") || !strcmp(n->op_type, "ConvTranspose")) && k < 3) return conv[k];
    if (!strcmp(n->op_type, "Gemm") && k < 3) return gemm[k];
    return NULL;
}

/* Appends one input's finding to the layer's note. */
static void note_input(node_t *n, int k, const value_t *v, int64_t beyond, double max_abs, double lim)
{
    char buf[768];
    const char *role = input_role(n, k);
    snprintf(buf, sizeof buf, "%s%sinput %d%s%s%s '%s': %lld of %lld values beyond %s's %.6g (max |x| %.3g)",
             n->range_note ? n->range_note : "", n->range_note ? "; " : "", k, role ? " (" : "", role ? role : "",
             role ? ")" : "", v->name, (long long)beyond, (long long)tensor_numel(&v->t), precision_name(n->precision),
             lim, max_abs);
    free(n->range_note);
    n->range_note = xstrdup(buf);
}

int precision_check_range(graph_t *g, FILE *warn, int shown)
{
    int found = 0;
    for (int i = 0; i < g->n_nodes; i++) {
        node_t *n = &g->nodes[i];
        double lim = range_of(n->precision);
        free(n->range_note);
        n->range_note = NULL;
        if (lim == 0) continue;
        for (int k = 0; k < n->n_in; k++) {
            const value_t *v = n->in[k] >= 0 ? &g->vals[n->in[k]] : NULL;
            if (!v || v->kind != VAL_CONST || v->t.dtype != DT_FLOAT || !v->t.data) continue;
            const float *x = v->t.data;
            int64_t cnt = tensor_numel(&v->t), beyond = 0;
            double max_abs = 0;
            for (int64_t j = 0; j < cnt; j++) {
                double a = fabs((double)x[j]);
                if (a > lim) beyond++;
                if (a > max_abs) max_abs = a;
            }
            if (beyond) note_input(n, k, v, beyond, max_abs, lim);
        }
        if (!n->range_note) continue;
        if (warn && shown + found < RANGE_SHOWN)
            fprintf(warn, "build-engine: warning: layer '%s' (%s, %s): %s\n", n->name, n->op_type,
                    precision_name(n->precision), n->range_note);
        found++;
    }
    return found;
}
