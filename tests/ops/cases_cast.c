/* cases_cast.c — Cast and CastLike: double -> float16 against the
 * compiler's own _Float16 conversion (half_ref.h), including values just off
 * float16 ties (rounding twice, through float32, fails them); int64 ->
 * bfloat16 against rounding to nearest even in integer arithmetic; float ->
 * int8/uint8 (truncation, saturation, NaN -> 0) and -> bool (NaN true, -0
 * false); CastLike taking its second input's type; and a string target
 * refused. */
#include <string.h>
#include "half_ref.h"
#include "harness.h"

static double e_half(const oc_inst_t *t, const double *x)
{
    (void)t;
    return (double)(half_ref_t)x[0];
}

/* Rounds an integer to bfloat16 (8 significant bits) to nearest even, in
 * integer arithmetic; the rounded value as a double (exact). */
static double int_to_bf16(int64_t v)
{
    uint64_t m = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    int bits = 64 - __builtin_clzll(m | 1);
    if (bits > 8) {
        int drop = bits - 8;
        uint64_t q = m >> drop, rem = m & ((1ull << drop) - 1), half = 1ull << (drop - 1);
        if (rem > half || (rem == half && (q & 1))) q++;
        return (v < 0 ? -1.0 : 1.0) * ldexp((double)q, drop);
    }
    return (double)v;
}

/* (reads the int64s themselves: as doubles they would be rounded already) */
static int ref_int_bf16(const oc_inst_t *t, oc_want_t *w)
{
    const tensor_t *x = t->in[0];
    oc_want_shape(w, DT_BFLOAT16, x->ndim, x->dims, 0);
    for (int64_t i = 0; i < tensor_numel(x); i++) w->val[i] = int_to_bf16(tensor_get_i64(x, i));
    return 0;
}

/* truncation toward 0, saturating at the type's range, NaN -> 0 */
static double sat(double v, double lo, double hi) { return isnan(v) ? 0 : v < lo ? lo : v > hi ? hi : trunc(v); }
static double e_to_i8(const oc_inst_t *t, const double *x) { (void)t; return sat(x[0], -128, 127); }
static double e_to_u8(const oc_inst_t *t, const double *x) { (void)t; return sat(x[0], 0, 255); }
static double e_to_bool(const oc_inst_t *t, const double *x) { (void)t; return x[0] != 0; }   /* NaN != 0 */
static double e_same(const oc_inst_t *t, const double *x) { (void)t; return x[0]; }

/* 2048 doubles just above or below a float16 tie, 2048 spread over the range */
static void gen_half_ties(oc_inst_t *t, int v)
{
    (void)v;
    int64_t n = 4096;
    tensor_t *x = oc_tensor(DT_DOUBLE, 1, &n);
    double *xv = x->data;
    for (int i = 0; i < 4096; i++) {
        if (i < 2048) {
            double tie = (1.0 + (2 * (i % 512) + 1) / 2048.0) * ldexp(1.0, i % 7 - 3);   /* half-way between f16 values */
            xv[i] = tie + (i & 1 ? 1 : -1) * ldexp(tie, -40);                            /* just above / below */
        } else {
            xv[i] = oc_uniform(-70000, 70000) * (i % 3 ? 1e-4 : 1);
        }
    }
    t->in[0] = x;
}

/* 4096 int64s of every magnitude, one that rounding twice would take to a
 * tie, and INT64_MIN */
static void gen_int64_spread(oc_inst_t *t, int v)
{
    (void)v;
    int64_t n = 4096;
    tensor_t *x = oc_tensor(DT_INT64, 1, &n);
    int64_t *xv = x->data;
    for (int i = 0; i < 4096; i++) {
        int sh = (int)(oc_rand() % 62);
        int64_t u = (int64_t)(oc_rand() >> (63 - sh)) + (i & 1);
        xv[i] = i % 2 ? u : -u;
    }
    xv[0] = ((int64_t)1 << 62) + ((int64_t)1 << 54) + 1;
    xv[1] = INT64_MIN;
    t->in[0] = x;
}

#define F6 IN_V(DT_FLOAT, DIMS(6), -1.9, 2.9, 1e10, -1e10, NAN, -0.0)
#define TO(T, f, what_) {.op = "Cast", .opset = 13, .what = "float32 -> " what_, .n_in = 1, .in = {F6}, \
        .attr = {AI("to", T)}, .ref = oc_ref_elementwise, .elem = f, .out_dt = T}

const op_case_t cases_cast[] = {
    {.op = "Cast", .opset = 13, .what = "double -> float16 rounds once, like _Float16 (2048 next to ties)", .n_in = 1,
     .in = {IN_GEN}, .gen = gen_half_ties, .attr = {AI("to", DT_FLOAT16)}, .ref = oc_ref_elementwise, .elem = e_half,
     .out_dt = DT_FLOAT16},
    {.op = "Cast", .opset = 13, .what = "int64 -> bfloat16 rounds once to nearest even", .n_in = 1, .in = {IN_GEN},
     .gen = gen_int64_spread, .attr = {AI("to", DT_BFLOAT16)}, .ref = ref_int_bf16},
    TO(DT_INT8, e_to_i8, "int8 truncates and saturates, NaN -> 0"),
    TO(DT_UINT8, e_to_u8, "uint8 truncates and saturates, NaN -> 0"),
    TO(DT_BOOL, e_to_bool, "bool: NaN true, -0 false"),
    {.op = "Cast", .opset = 6, .what = "uint8 -> float32", .n_in = 1, .in = {IN_I(DT_UINT8, 0, 255, DIMS(64))},
     .attr = {AI("to", DT_FLOAT)}, .ref = oc_ref_elementwise, .elem = e_same, .out_dt = DT_FLOAT},
    {.op = "CastLike", .opset = 15, .what = "int32 -> double (the second input's type)", .n_in = 2,
     .in = {IN_V(DT_INT32, DIMS(6), -2, 1000001, 2000004, 3000007, 4000010, 5000013), IN_V(DT_DOUBLE, SCALAR, 0)},
     .ref = oc_ref_elementwise, .elem = e_same, .out_dt = DT_DOUBLE},
    {.op = "CastLike", .opset = 15, .what = "float32 -> int8 (the second input's type): truncates, saturates, NaN -> 0",
     .n_in = 2, .in = {F6, IN_V(DT_INT8, SCALAR, 0)}, .ref = oc_ref_elementwise, .elem = e_to_i8, .out_dt = DT_INT8},
    {.op = "Cast", .opset = 13, .what = "to string", .n_in = 1, .in = {F6}, .attr = {AI("to", DT_STRING)},
     .fail = "string"},
};
const int cases_cast_n = sizeof cases_cast / sizeof cases_cast[0];
