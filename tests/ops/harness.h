/* harness.h — the op-test harness (in the manner of ggml's test-backend-ops):
 * every operator test is a row of a case table (op, domain, opset,
 * attributes, inputs or a generator of them, and a reference computed here
 * independently of the kernel, in double or exactly). One runner builds each
 * case's node in memory, runs it through node_run (the executor's one path to
 * a kernel) at every ISA level the CPU has, requires the same output bytes at
 * every level, and checks the outputs against the reference within a bound
 * derived from the arithmetic (tests/bounds.h); then again with its float
 * tensors stored as FP16 and BF16 (storage.c). coverage.c fails when a row
 * of op_table() has no case, or runs at no storage precision without a
 * reason. docs/testing.md describes how to add one. */
#ifndef PARITY_TEST_OPS_HARNESS_H
#define PARITY_TEST_OPS_HARNESS_H

#include <math.h>
#include <stdint.h>
#include "bounds.h"
#include "ops/run.h"

#define OC_MAX_ATTRS 8
#define OC_MAX_IO 8
#define OC_MAX_VALS 16

/* An attribute: kind 'i' (int), 'f' (float), 's' (string), 'I' (ints),
 * 'F' (floats). */
typedef struct oc_attr {
    const char *name;
    char kind;
    int n;
    int64_t i[OC_MAX_VALS];
    float f[OC_MAX_VALS];
    const char *s;
} oc_attr_t;

/* How an input's elements are drawn: uniform reals in [lo, hi), integers in
 * [lo, hi], random bytes (any element type: exact-copy ops), the listed
 * values (GEN_INT64S: exact integers, clamped to an int32 input's range),
 * or no input (an omitted optional one). */
enum { GEN_NONE = 0, GEN_UNIFORM, GEN_INTS, GEN_BYTES, GEN_VALUES, GEN_INT64S };

typedef struct oc_input {
    dtype_t dt;
    int nd;
    int64_t dims[TENSOR_MAX_DIMS];
    int gen;
    double lo, hi;
    int nv;
    double v[OC_MAX_VALS * 4];
    int64_t iv[OC_MAX_VALS];
} oc_input_t;

struct oc_inst;

/* What the reference says of one output: its type and shape, and either
 * the exact bytes (ops that move or compute exactly) or a value and a bound
 * per element (bound_ratio <= 1 passes). */
typedef struct oc_want {
    dtype_t dt;
    int nd;
    int64_t dims[TENSOR_MAX_DIMS];
    double *val, *bound;   /* numel each; NULL with bytes */
    void *bytes;
    tensor_t *seq;         /* a sequence (dt DT_SEQUENCE): its items' bytes exactly */
} oc_want_t;

/* Fills want[0..n_out) from the instance's inputs (calloc'ed arrays, freed by
 * the runner); returns 0, or -1 when the instance cannot be checked. */
typedef int (*oc_ref_fn)(const struct oc_inst *t, oc_want_t *want);
/* Turns variant v of a case into a concrete instance (attributes and
 * inputs set from the harness's random stream): it sets input specs, which
 * the runner then draws, or makes an input tensor itself (t->in[i]). */
typedef void (*oc_gen_fn)(struct oc_inst *t, int v);

typedef struct op_case {
    const char *domain, *op;
    int opset;
    const char *what;
    oc_attr_t attr[OC_MAX_ATTRS];
    oc_input_t in[OC_MAX_IO];
    int n_in, n_out;
    oc_ref_fn ref;
    oc_gen_fn gen;
    int variants;          /* instances drawn by gen (1 when 0) */
    int threads;           /* also run on this many threads (same bytes) */
    const char *fail;      /* the node must fail with this in its message */
    /* Elementwise ops (ref = oc_ref_elementwise): the exact result of one
     * output element from its inputs' values (numpy broadcasting; NaN for an
     * omitted input), the float32 steps of the kernel's formula (0: the
     * result is exact, compared bit for bit) and the output type (0: input
     * 0's). */
    double (*elem)(const struct oc_inst *t, const double *x);
    double steps;
    dtype_t out_dt;
    double param[4];       /* free for ref and gen */
    const double *expect;  /* expected values worked out by hand, for refs that list them */
    int out_nd;            /* and the shape they have */
    int64_t out_dims[TENSOR_MAX_DIMS];
} op_case_t;

/* One concrete instance: the case, its node (attributes in storage owned
 * here) and its input tensors. */
typedef struct oc_inst {
    const op_case_t *c;
    int variant;
    node_t node;
    int n_attr;
    oc_attr_t attr[OC_MAX_ATTRS];
    Onnx__AttributeProto ap[OC_MAX_ATTRS], *app[OC_MAX_ATTRS];
    int n_in, n_out;
    oc_input_t spec[OC_MAX_IO];
    tensor_t *in[OC_MAX_IO];
    double param[4];
} oc_inst_t;

/* ---- builder macros for case tables ---- */
#define OC_NARGS(T, ...) ((int)(sizeof((T[]){__VA_ARGS__}) / sizeof(T)))
#define AI(nm, v) {.name = (nm), .kind = 'i', .n = 1, .i = {(v)}}
#define AF(nm, v) {.name = (nm), .kind = 'f', .n = 1, .f = {(v)}}
#define AS(nm, v) {.name = (nm), .kind = 's', .s = (v)}
#define AIS(nm, ...) {.name = (nm), .kind = 'I', .n = OC_NARGS(int64_t, __VA_ARGS__), .i = {__VA_ARGS__}}
#define AFS(nm, ...) {.name = (nm), .kind = 'F', .n = OC_NARGS(float, __VA_ARGS__), .f = {__VA_ARGS__}}
#define DIMS(...) .nd = OC_NARGS(int64_t, __VA_ARGS__), .dims = {__VA_ARGS__}
#define SCALAR .nd = 0
#define OUT_DIMS(...) .out_nd = OC_NARGS(int64_t, __VA_ARGS__), .out_dims = {__VA_ARGS__}
/* an input of type T and shape DIMS(...) (last, so that it may come through
 * another macro) with uniform reals / integers / bytes */
#define IN_U(T, lo_, hi_, ...) {.dt = (T), .gen = GEN_UNIFORM, .lo = (lo_), .hi = (hi_), __VA_ARGS__}
#define IN_I(T, lo_, hi_, ...) {.dt = (T), .gen = GEN_INTS, .lo = (lo_), .hi = (hi_), __VA_ARGS__}
#define IN_B(T, ...) {.dt = (T), .gen = GEN_BYTES, __VA_ARGS__}
#define IN_V(T, shape, ...) {.dt = (T), shape, .gen = GEN_VALUES, .nv = OC_NARGS(double, __VA_ARGS__), .v = {__VA_ARGS__}}
#define IN_L(T, shape, ...) {.dt = (T), shape, .gen = GEN_INT64S, .nv = OC_NARGS(int64_t, __VA_ARGS__), .iv = {__VA_ARGS__}}
#define IN_NONE {.gen = GEN_NONE}
/* an input the case's gen makes itself */
#define IN_GEN {.gen = GEN_UNIFORM}

/* ---- for references and generators (harness.c) ---- */

uint64_t oc_rand(void);
double oc_uniform(double lo, double hi);
int64_t oc_range(int64_t lo, int64_t hi);
/* Sets attribute nm of the instance (replacing one of that name). */
void oc_set_int(oc_inst_t *t, const char *nm, int64_t v);
void oc_set_ints(oc_inst_t *t, const char *nm, int n, const int64_t *v);
void oc_set_float(oc_inst_t *t, const char *nm, float v);
void oc_set_str(oc_inst_t *t, const char *nm, const char *s);
/* The attribute nm of the instance, or NULL. */
const oc_attr_t *oc_attr(const oc_inst_t *t, const char *nm);
int64_t oc_int(const oc_inst_t *t, const char *nm, int64_t dflt);
double oc_float(const oc_inst_t *t, const char *nm, double dflt);
/* A new tensor for a generator to fill (exits on failure: a test bug). */
tensor_t *oc_tensor(dtype_t dt, int nd, const int64_t *dims);
/* Input i's specification, to be set by a generator (inputs are drawn after it). */
oc_input_t *oc_input(oc_inst_t *t, int i);
/* A new sequence of deep copies of items[0..n) (DT_SEQUENCE). */
tensor_t *oc_sequence(int n, const tensor_t *const *items);
/* want's shape; allocates val and bound (exact: bytes instead). */
void oc_want_shape(oc_want_t *w, dtype_t dt, int nd, const int64_t *dims, int exact);
/* Unravels a row-major linear index. */
void oc_unravel(int64_t lin, int nd, const int64_t *dims, int64_t *co);
int64_t oc_numel(int nd, const int64_t *dims);

/* One TAP line (the stream's counters live in harness.c); the plan line at the end. */
void oc_ok(int pass, const char *msg);
int oc_done(void);
void oc_diag(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The reference of elementwise cases (ref_elementwise.c). */
int oc_ref_elementwise(const oc_inst_t *t, oc_want_t *want);
/* Each float32 step of a kernel's formula errs by at most this many ulps of
 * the largest magnitude it handles: vmath's documented worst (sigmoid 2.40,
 * tanh 2.56, erf 1.62 ulp; libm's float functions within 1) rounded up. */
#define STEP_ULPS 3

/* ---- for storage.c (harness.c) ---- */

/* A run's outputs (the preset buffers run_once gave them owned here). */
typedef struct oc_outs {
    tensor_t t[OC_MAX_IO];
    void *garbage[OC_MAX_IO];
    int rc;
    perr_t e;
} oc_outs_t;
void oc_outs_free(oc_outs_t *o);
/* Runs instance t at every ISA level (and thread count the case asks for);
 * 1 if every run gave the same bytes (a .fail case: failed as it must),
 * the first run's outputs in first (none for .fail cases); else 0 with a
 * reason. */
int oc_run_levels(const oc_inst_t *t, oc_outs_t *first, int *levels, char *why, size_t len);
/* Same type, shape and bytes (sequences item by item). */
int oc_same_tensor(const tensor_t *a, const tensor_t *b);
/* Output got against the reference want (bytes, or value and bound). */
int oc_check_want(const tensor_t *got, const oc_want_t *w, double *worst, char *why, size_t len);
void oc_want_free(oc_want_t *w, int n);

/* ---- storage precisions (storage.c) ---- */

/* The storage types the sweep runs each case at besides float32. */
enum { OC_FP16, OC_BF16, OC_N_STORAGE };
const char *oc_storage_name(int s);
/* Runs instance t (which passed at float32) with its float32 tensors
 * stored as storage s, as the engine stores them (docs/testing.md):
 * 1 passed, 0 failed (a reason in why), -1 not applicable (no float
 * tensor). worst: the most storage ulps an output is off its correctly
 * rounded reference value. */
int oc_check_storage(const oc_inst_t *t, int s, double *worst, char *why, size_t len);
/* The TAP line of case c at storage s, where any instance ran at it
 * (good of ran passed; worst: oc_check_storage's); 1 if it failed. */
int oc_storage_line(const op_case_t *c, int s, int good, int ran, int levels, double worst);
/* Notes that a case of row ran at storage s; whether one did. */
void oc_storage_mark(const op_def_t *row, int s);
int oc_storage_swept(const op_def_t *row, int s);

/* Runs a table of cases; returns the count of failures. */
int oc_run_table(const op_case_t *cases, int n);

/* The case tables, one per family file (cases_*.c), listed in main.c. */
typedef struct oc_table {
    const char *name;
    const op_case_t *cases;
    const int *n;
} oc_table_t;
#define OC_TABLE(name) extern const op_case_t name[]; extern const int name##_n
OC_TABLE(cases_tensor);
OC_TABLE(cases_unary);
OC_TABLE(cases_binary);
OC_TABLE(cases_cast);
OC_TABLE(cases_nn);
OC_TABLE(cases_spatial);
OC_TABLE(cases_reduce);
OC_TABLE(cases_softmax);
OC_TABLE(cases_rows);

/* Checks that every row of op_table() has a case (coverage.c). */
void oc_check_coverage(const oc_table_t *tables, int n_tables);

#endif
