/* nn_testutil.h — helpers of the unit tests that drive kernels in ways the
 * op harness (tests/ops/) does not: conv_kernels.c (the convolution paths'
 * internals), ops_simd.c (vector against scalar paths, isa_force_generic) and
 * reduce_walk.c (pooled rows against the serial walk):
 * nodes built in memory and run through node_run, reproducible random
 * tensors, and an error measure against references. Operator tests belong
 * in tests/ops/'s case tables. */
#ifndef PARITY_NN_TESTUTIL_H
#define PARITY_NN_TESTUTIL_H

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "ops/run.h"

/* ---- nodes built in memory ---- */

typedef struct tnode {
    node_t n;
    Onnx__AttributeProto attrs[10], *ap[10];
    int64_t ints[10][10];
} tnode_t;

static scratch_pool_t pool;

static inline void node_init(tnode_t *t, const char *op, int opset, int n_in, int n_out)
{
    memset(t, 0, sizeof *t);
    t->n.name = "t";
    t->n.op_type = (char *)op;
    t->n.domain = "";
    t->n.opset = opset;
    t->n.n_in = n_in;
    t->n.n_out = n_out;
    t->n.attr = t->ap;
    t->n.op = op_lookup("", op, opset, NULL);
}

static inline Onnx__AttributeProto *add_attr(tnode_t *t, const char *name)
{
    int k = t->n.n_attr++;
    onnx__attribute_proto__init(&t->attrs[k]);
    t->attrs[k].name = (char *)name;
    t->ap[k] = &t->attrs[k];
    return &t->attrs[k];
}

static inline void set_int(tnode_t *t, const char *name, int64_t v)
{
    Onnx__AttributeProto *a = add_attr(t, name);
    a->has_i = 1;
    a->i = v;
}

static inline void set_ints(tnode_t *t, const char *name, int n, const int64_t *v)
{
    int k = t->n.n_attr;
    Onnx__AttributeProto *a = add_attr(t, name);
    memcpy(t->ints[k], v, (size_t)n * sizeof *v);
    a->n_ints = (size_t)n;
    a->ints = t->ints[k];
}

static inline void set_str(tnode_t *t, const char *name, const char *s)
{
    Onnx__AttributeProto *a = add_attr(t, name);
    a->has_s = 1;
    a->s.data = (uint8_t *)s;
    a->s.len = strlen(s);
}

static inline int run_node(tnode_t *t, const tensor_t *const *in, tensor_t **out, perr_t *e)
{
    memset(e, 0, sizeof *e);
    if (!t->n.op) return BAD(e, "no row for %s at opset %d", t->n.op_type, t->n.opset);
    return node_run(&t->n, in, out, 1, &pool, NULL, e);
}

/* ---- data ---- */

static uint64_t seed = 0x9E3779B97F4A7C15ull;
static inline double uniform(void)
{
    seed ^= seed << 13; seed ^= seed >> 7; seed ^= seed << 17;
    return (double)(seed >> 11) / 9007199254740992.0;
}

static inline tensor_t *random_tensor(dtype_t dt, int nd, const int64_t *dims, double lo, double hi)
{
    perr_t e = {0};
    tensor_t *t = tensor_new(dt, nd, dims, &e);
    for (int64_t i = 0; i < tensor_numel(t); i++) {
        double v = lo + (hi - lo) * uniform();
        tensor_set_f64(t, i, dtype_is_float(dt) ? v : floor(v));
    }
    return t;
}

/* Largest |got - want| / (1 + |want|) over the output, or INFINITY on a shape mismatch. */
static inline double max_err(const tensor_t *got, const double *want, int nd, const int64_t *dims)
{
    if (got->ndim != nd) return INFINITY;
    for (int d = 0; d < nd; d++)
        if (got->dims[d] != dims[d]) return INFINITY;
    double worst = 0;
    for (int64_t i = 0; i < tensor_numel(got); i++) {
        double d = fabs(tensor_get_f64(got, i) - want[i]) / (1 + fabs(want[i]));
        if (!(d <= worst)) worst = d;
    }
    return worst;
}

static inline void set_float(tnode_t *t, const char *name, float v)
{
    Onnx__AttributeProto *a = add_attr(t, name);
    a->has_f = 1;
    a->f = v;
}

#endif
