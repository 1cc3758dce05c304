/* onnx16.c — the strongly typed mixed-precision model: the original ONNX
 * with every reduced float layer's tensors in FLOAT16 (or BFLOAT16), the
 * weights only they read converted, a Cast wherever a value crosses between
 * an FP32 island and the reduced part, and the graph inputs and outputs kept
 * FLOAT. TensorRT 10.12+/11 (--stronglyTyped), ONNX Runtime and parity
 * (strongly_typed: true) take it as it is; the Casts decide. Types come
 * from parity's own build of the model (shape inference), so nodes that
 * folding removed keep their FP32 form and feed the reduced part through a
 * Cast. The default domain's opset is raised to the first that gives every
 * reduced op its FLOAT16/BFLOAT16 signature (opset.c: BF16 Conv needs 22);
 * a reduced op with no such signature computes in FLOAT between Casts. */
#include <stdlib.h>
#include <string.h>
#include "engine/build.h"
#include "search.h"
#include "tensor/half.h"
#include "util/fsutil.h"

/* Inputs that keep their own type whatever the node computes in. */
static int keeps_type(const char *op, int k)
{
    return (!strcmp(op, "Resize") && (k == 1 || k == 2)) || (!strcmp(op, "Upsample") && k == 1) ||
           ((!strcmp(op, "Shape") || !strcmp(op, "Size")) && k == 0);
}

/* Ops whose output type an attribute sets: they stay as written, except Cast. */
static int attr_typed(const char *op)
{
    static const char *const ops[] = {"ConstantOfShape", "EyeLike", "RandomNormal", "RandomNormalLike",
                                      "RandomUniform", "RandomUniformLike", "Multinomial", NULL};
    for (int i = 0; ops[i]; i++) if (!strcmp(op, ops[i])) return 1;
    return 0;
}

typedef struct typer {
    const fp_ctx_t *c;
    graph_t *g;                 /* parity's FP32 build: the tensors' types */
    Onnx__GraphProto *og;
    int lowt;                   /* DT_FLOAT16 or DT_BFLOAT16 */
    char **lowvals; int n_low;  /* tensors now in the reduced type */
    Onnx__NodeProto **out; int n_out, cap_out;
    int casts;
    int to;                     /* the typed model's opset */
    fp_typed_t *info;
} typer_t;

static int in_list(char **v, int n, const char *s)
{
    for (int i = 0; i < n; i++) if (!strcmp(v[i], s)) return 1;
    return 0;
}

static Onnx__TensorProto *initializer(Onnx__GraphProto *g, const char *name)
{
    for (size_t i = 0; i < g->n_initializer; i++) if (!strcmp(g->initializer[i]->name, name)) return g->initializer[i];
    return NULL;
}

static int type_of(const typer_t *t, const char *name)
{
    if (in_list(t->lowvals, t->n_low, name)) return t->lowt;
    Onnx__TensorProto *init = initializer(t->og, name);
    if (init) return init->data_type;
    int v = graph_find(t->g, name);
    return v < 0 ? DT_UNDEFINED : t->g->vals[v].t.dtype;
}

static int is_low_node(const typer_t *t, const Onnx__NodeProto *n, char **fp32, int nf)
{
    if (!n->name || !*n->name || attr_typed(n->op_type) || in_list(fp32, nf, n->name)) return 0;
    for (int i = 0; i < t->c->n_layers; i++) if (!strcmp(t->c->layers[i].name, n->name)) return 1;
    return 0;
}

static void push_node(typer_t *t, Onnx__NodeProto *n)
{
    if (t->n_out == t->cap_out) t->out = xrealloc(t->out, (t->cap_out = t->cap_out * 2 + 16) * sizeof *t->out);
    t->out[t->n_out++] = n;
}

static Onnx__NodeProto *cast_node(const char *in, const char *out, int to)
{
    Onnx__NodeProto *n = xmalloc(sizeof *n);
    onnx__node_proto__init(n);
    n->n_input = n->n_output = 1;
    n->input = xmalloc(sizeof *n->input);
    n->output = xmalloc(sizeof *n->output);
    n->input[0] = xstrdup(in);
    n->output[0] = xstrdup(out);
    size_t l = strlen(out) + 8;
    n->name = xmalloc(l);
    snprintf(n->name, l, "%s/Cast", out);
    n->op_type = xstrdup("Cast");
    Onnx__AttributeProto *a = xmalloc(sizeof *a);
    onnx__attribute_proto__init(a);
    a->name = xstrdup("to");
    a->has_type = 1;
    a->type = ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT;
    a->has_i = 1;
    a->i = to;
    n->n_attribute = 1;
    n->attribute = xmalloc(sizeof *n->attribute);
    n->attribute[0] = a;
    return n;
}

/* name -> name/to_fp16 (or /to_fp32), made once per value and type. */
static char *cast_to(typer_t *t, const char *name, int to)
{
    size_t l = strlen(name) + 16;
    char *o = xmalloc(l);
    snprintf(o, l, "%s/to_%s", name, to == DT_FLOAT ? "fp32" : to == DT_FLOAT16 ? "fp16" : "bf16");
    for (int i = 0; i < t->n_out; i++)
        if (t->out[i]->n_output == 1 && !strcmp(t->out[i]->output[0], o)) return o;
    push_node(t, cast_node(name, o, to));
    t->casts++;
    return o;
}

/* Converts a FLOAT initializer read only in the reduced part. */
static int convert_init(Onnx__TensorProto *p, int lowt)
{
    if (p->n_external_data || p->data_type != DT_FLOAT) return 0;
    size_t n = p->has_raw_data ? p->raw_data.len / 4 : p->n_float_data;
    uint16_t *h = xmalloc(2 * n + 2);
    for (size_t i = 0; i < n; i++) {
        float f;
        if (p->has_raw_data) memcpy(&f, p->raw_data.data + 4 * i, 4);
        else f = p->float_data[i];
        h[i] = lowt == DT_FLOAT16 ? f32_to_f16(f) : f32_to_bf16(f);
    }
    if (p->has_raw_data) free(p->raw_data.data);
    free(p->float_data);
    p->float_data = NULL;
    p->n_float_data = 0;
    p->has_raw_data = 1;
    p->raw_data.data = (uint8_t *)h;
    p->raw_data.len = 2 * n;
    p->data_type = lowt;
    return 1;
}

static void rename_uses(Onnx__GraphProto *g, const char *from, const char *to)
{
    for (size_t i = 0; i < g->n_node; i++)
        for (size_t k = 0; k < g->node[i]->n_input; k++)
            if (!strcmp(g->node[i]->input[k], from)) { free(g->node[i]->input[k]); g->node[i]->input[k] = xstrdup(to); }
}

/* Adds an op type to the list of those computed in FP32 between Casts. */
static void note_wrapped(fp_typed_t *info, const char *op)
{
    info->wrapped++;
    size_t l = strlen(op), have = strlen(info->wrapped_ops);
    for (const char *p = info->wrapped_ops; (p = strstr(p, op)); p += l)
        if ((p == info->wrapped_ops || p[-1] == ',') && (p[l] == ',' || !p[l])) return;
    if (have + l + 2 < sizeof info->wrapped_ops)
        snprintf(info->wrapped_ops + have, sizeof info->wrapped_ops - have, "%s%s", have ? "," : "", op);
}

static void retype(typer_t *t, char **fp32, int nf)
{
    Onnx__GraphProto *g = t->og;
    int *low = xcalloc(g->n_node + 1, sizeof *low);
    int *wrap = xcalloc(g->n_node + 1, sizeof *wrap);
    for (size_t i = 0; i < g->n_node; i++) {
        low[i] = is_low_node(t, g->node[i], fp32, nf);
        int f = fp_first_signature(g->node[i]->op_type, t->lowt);
        wrap[i] = low[i] && (!f || f > t->to);
        if (wrap[i]) note_wrapped(t->info, g->node[i]->op_type);
    }
    /* weights read only by reduced layers (at positions that follow the node's type) */
    for (size_t w = 0; w < g->n_initializer; w++) {
        Onnx__TensorProto *p = g->initializer[w];
        int readers = 0, lowreaders = 0;
        for (size_t i = 0; i < g->n_node; i++)
            for (size_t k = 0; k < g->node[i]->n_input; k++)
                if (!strcmp(g->node[i]->input[k], p->name)) {
                    readers++;
                    lowreaders += low[i] && !keeps_type(g->node[i]->op_type, k);
                }
        if (readers && readers == lowreaders && convert_init(p, t->lowt)) {
            t->lowvals = xrealloc(t->lowvals, (t->n_low + 1) * sizeof *t->lowvals);
            t->lowvals[t->n_low++] = p->name;
        }
    }
    /* graph outputs produced in the reduced part: a Cast back to FLOAT */
    char **gout = xmalloc((g->n_output + 1) * sizeof *gout);
    int n_gout = 0;
    for (size_t o = 0; o < g->n_output; o++)
        for (size_t i = 0; i < g->n_node; i++)
            for (size_t k = 0; k < g->node[i]->n_output; k++)
                if (low[i] && !strcmp(g->node[i]->output[k], g->output[o]->name) && type_of(t, g->output[o]->name) == DT_FLOAT) {
                    size_t l = strlen(g->output[o]->name) + 8;
                    char *r = xmalloc(l);
                    snprintf(r, l, "%s/lowp", g->output[o]->name);
                    rename_uses(g, g->output[o]->name, r);
                    free(g->node[i]->output[k]);
                    g->node[i]->output[k] = r;
                    gout[n_gout++] = g->output[o]->name;
                }
    for (size_t i = 0; i < g->n_node; i++) {
        Onnx__NodeProto *n = g->node[i];
        for (size_t k = 0; k < n->n_input; k++) {
            if (!*n->input[k]) continue;
            int cur = type_of(t, n->input[k]);
            if (cur != DT_FLOAT && cur != t->lowt) continue;
            if (wrap[i] && !keeps_type(n->op_type, k)) {
                /* computes in FP32 on the rounded value, as the emulation does */
                char *v = cur == t->lowt ? xstrdup(n->input[k]) : cast_to(t, n->input[k], t->lowt);
                free(n->input[k]);
                n->input[k] = cast_to(t, v, DT_FLOAT);
                free(v);
                continue;
            }
            int want = low[i] && !keeps_type(n->op_type, k) ? t->lowt : keeps_type(n->op_type, k) ? cur : DT_FLOAT;
            if (want == cur) continue;
            char *o = cast_to(t, n->input[k], want);
            free(n->input[k]);
            n->input[k] = o;
        }
        if (wrap[i]) {
            /* FP32 output, rounded by a Cast under the original name */
            int np = 0;
            Onnx__NodeProto **post = xmalloc((n->n_output + 1) * sizeof *post);
            for (size_t k = 0; k < n->n_output; k++) {
                if (type_of(t, n->output[k]) != DT_FLOAT && !strstr(n->output[k], "/lowp")) continue;
                size_t l = strlen(n->output[k]) + 8;
                char *r = xmalloc(l);
                snprintf(r, l, "%s/fp32", n->output[k]);
                post[np] = cast_node(r, n->output[k], t->lowt);
                t->lowvals = xrealloc(t->lowvals, (t->n_low + 1) * sizeof *t->lowvals);
                t->lowvals[t->n_low++] = post[np++]->output[0];
                free(n->output[k]);
                n->output[k] = r;
            }
            push_node(t, n);
            for (int k = 0; k < np; k++) push_node(t, post[k]);
            t->casts += np;
            free(post);
            continue;
        }
        if (low[i]) {
            for (size_t k = 0; k < n->n_output; k++)
                if (type_of(t, n->output[k]) == DT_FLOAT || strstr(n->output[k], "/lowp")) {
                    t->lowvals = xrealloc(t->lowvals, (t->n_low + 1) * sizeof *t->lowvals);
                    t->lowvals[t->n_low++] = n->output[k];
                }
            if (!strcmp(n->op_type, "Cast"))
                for (size_t a = 0; a < n->n_attribute; a++)
                    if (!strcmp(n->attribute[a]->name, "to") && n->attribute[a]->i == DT_FLOAT) n->attribute[a]->i = t->lowt;
        }
        push_node(t, n);
    }
    for (int o = 0; o < n_gout; o++) {
        size_t l = strlen(gout[o]) + 8;
        char *r = xmalloc(l);
        snprintf(r, l, "%s/lowp", gout[o]);
        push_node(t, cast_node(r, gout[o], DT_FLOAT));
        t->casts++;
        free(r);
    }
    free(gout);
    free(low);
    free(wrap);
    free(g->node);
    g->node = t->out;
    g->n_node = t->n_out;
    /* shape/type annotations of the FP32 model no longer hold */
    for (size_t i = 0; i < g->n_value_info; i++) onnx__value_info_proto__free_unpacked(g->value_info[i], NULL);
    free(g->value_info);
    g->value_info = NULL;
    g->n_value_info = 0;
}


/* ---- the scale/shift folds of parity's build, carried into the model ----
 * build-engine folds a per-channel Mul/Add (and a BatchNormalization) after a Conv into its weights in
 * FP32 and rounds the folded weights once (passes/fuse.c); converting the
 * unfolded weights first would round twice. So the typed model gets the
 * folded weights of the searched configuration, and the Mul/Add go. */

static Onnx__NodeProto *node_named(Onnx__GraphProto *g, const char *name, size_t *at)
{
    for (size_t i = 0; i < g->n_node; i++)
        if (g->node[i]->name && !strcmp(g->node[i]->name, name)) { if (at) *at = i; return g->node[i]; }
    return NULL;
}

void fp_add_initializer(Onnx__GraphProto *g, const char *name, int dtype, const int64_t *dims, int ndim,
                        const void *data, size_t nbytes)
{
    Onnx__TensorProto *p = xmalloc(sizeof *p);
    onnx__tensor_proto__init(p);
    p->name = xstrdup(name);
    p->has_data_type = 1;
    p->data_type = dtype;
    p->n_dims = ndim;
    p->dims = xmalloc((ndim + 1) * sizeof *p->dims);
    for (int d = 0; d < ndim; d++) p->dims[d] = dims[d];
    p->has_raw_data = 1;
    p->raw_data.len = nbytes;
    p->raw_data.data = xmalloc(nbytes + 1);
    memcpy(p->raw_data.data, data, nbytes);
    g->initializer = xrealloc(g->initializer, (g->n_initializer + 1) * sizeof *g->initializer);
    g->initializer[g->n_initializer++] = p;
}

static void add_initializer(Onnx__GraphProto *g, const char *name, const tensor_t *t)
{
    fp_add_initializer(g, name, DT_FLOAT, t->dims, t->ndim, t->data, tensor_nbytes(t));
}

static void set_input(Onnx__NodeProto *n, size_t k, const char *name)
{
    if (k >= n->n_input) {
        n->input = xrealloc(n->input, (k + 1) * sizeof *n->input);
        while (n->n_input <= k) n->input[n->n_input++] = xstrdup("");
    }
    free(n->input[k]);
    n->input[k] = xstrdup(name);
}

/* The Add a Conv took as its residual (passes/fuseres.c): it reads the
 * residual value, which no weight fold does. */
static int residual_add(const Onnx__NodeProto *a, const graph_t *bg, const node_t *n)
{
    if (!n->residual || strcmp(a->op_type, "Add")) return 0;
    const char *r = bg->vals[n->in[n->n_in - 1]].name;
    for (size_t k = 0; k < a->n_input; k++)
        if (!strcmp(a->input[k], r)) return 1;
    return 0;
}

static void carry_folds(Onnx__GraphProto *og, const graph_t *bg)
{
    for (int i = 0; i < bg->n_nodes; i++) {
        const node_t *n = &bg->nodes[i];
        if (!n->fused_from || (strcmp(n->op_type, "Conv") && strcmp(n->op_type, "ConvTranspose"))) continue;
        Onnx__NodeProto *conv = node_named(og, n->name, NULL);
        if (!conv || n->n_in < 3 || n->in[1] < 0 || n->in[2] < 0) continue;
        /* the folded Mul/Add, in order after the Conv */
        char *list = xstrdup(n->fused_from), *save = NULL, *last_out = NULL;
        int folded = 0;
        for (char *tok = strtok_r(list, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            size_t at;
            Onnx__NodeProto *a = node_named(og, tok, &at);
            if (!a || a == conv || (strcmp(a->op_type, "Mul") && strcmp(a->op_type, "Add") &&
                                    strcmp(a->op_type, "BatchNormalization")))
                continue;
            if (residual_add(a, bg, n)) continue;   /* the residual stays an Add of the model */
            free(last_out);
            last_out = xstrdup(a->output[0]);
            onnx__node_proto__free_unpacked(a, NULL);
            memmove(&og->node[at], &og->node[at + 1], (og->n_node - at - 1) * sizeof *og->node);
            og->n_node--;
            folded++;
        }
        free(list);
        if (!folded) { free(last_out); continue; }
        char nm[1200];
        snprintf(nm, sizeof nm, "%s/folded_weight", n->name);
        add_initializer(og, nm, &bg->vals[n->in[1]].t);
        set_input(conv, 1, nm);
        snprintf(nm, sizeof nm, "%s/folded_bias", n->name);
        add_initializer(og, nm, &bg->vals[n->in[2]].t);
        set_input(conv, 2, nm);
        free(conv->output[0]);
        conv->output[0] = last_out;
    }
}

/* The opset where every reduced node has its reduced signature (within the
 * upgrade table's reach; the others compute in FP32 between Casts). */
static int target_opset(const typer_t *t, const Onnx__ModelProto *m, char **fp32, int nf)
{
    int to = fp_model_opset(m);
    for (size_t i = 0; i < m->graph->n_node; i++)
        if (is_low_node(t, m->graph->node[i], fp32, nf)) to = fp_needed_opset(m->graph->node[i]->op_type, t->lowt, to);
    return to;
}

int fp_write_typed_onnx(const fp_ctx_t *c, char **fp32, int n, const char *config, const char *path, fp_typed_t *info,
                        perr_t *e)
{
    char *buf;
    size_t len;
    memset(info, 0, sizeof *info);
    if (read_file(c->model, &buf, &len, e)) return -1;
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, (const uint8_t *)buf);
    free(buf);
    if (!m || !m->graph) { if (m) onnx__model_proto__free_unpacked(m, NULL); return BAD(e, "%s: not an ONNX model", c->model); }
    graph_t *g = fp_build(c, "fp32", NULL, 1, e), *bg = g ? fp_build(c, NULL, config, 0, e) : NULL;
    if (!bg) { graph_free(g); onnx__model_proto__free_unpacked(m, NULL); return -1; }
    carry_folds(m->graph, bg);
    graph_free(bg);
    typer_t t = {.c = c, .g = g, .og = m->graph, .lowt = !strcmp(c->low, "bf16") ? DT_BFLOAT16 : DT_FLOAT16, .info = info};
    info->opset_from = fp_model_opset(m);
    t.to = info->opset_to = target_opset(&t, m, fp32, n);
    retype(&t, fp32, n);
    info->casts = t.casts;
    perr_t why = {0};
    int rc = 0;
    if (fp_upgrade_opset(m, t.to, &why)) {
        /* the search's answer stands; only this output cannot be made */
        snprintf(info->why, sizeof info->why, "%s: %s", c->model, why.msg);
    } else {
        size_t sz = onnx__model_proto__get_packed_size(m);
        uint8_t *out = xmalloc(sz + 1);
        onnx__model_proto__pack(m, out);
        rc = atomic_write(path, out, sz, e);
        info->written = !rc;
        free(out);
    }
    free(t.lowvals);
    onnx__model_proto__free_unpacked(m, NULL);
    graph_free(g);
    return rc;
}
