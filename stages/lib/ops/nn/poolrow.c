/* poolrow.c — the inside of a 2-D float32 MaxPool / AveragePool row, where
 * every window lies wholly in the input: pool.c hands over the window's
 * input rows and the row's range of such outputs, and keeps the edges.
 * Sixteen outputs at a time at AVX-512 (poolrow_avx512.c), eight at AVX2
 * (poolrow_avx2.c), stride 1 or 2, picked by poolrow_arch; else one at a
 * time here. Either way each output sees its taps in the
 * order of the plain loop (rows, then columns; max keeps the first of
 * equal values and a NaN only where it comes first; sums in double), so
 * the bits are those of pool.c's general loop. */
#include "ops/nn/poolrow.h"
#include "ops/nn/poolrow_impl.h"

static void max_scalar(float *y, const float *const *rows, int nrows, int k, int64_t s, int64_t start, int64_t n)
{
    for (int64_t o = 0; o < n; o++) {
        int64_t c = start + o * s;
        float best = rows[0][c];
        for (int r = 0; r < nrows; r++)
            for (int q = 0; q < k; q++) {
                float v = rows[r][c + q];
                best = v > best ? v : best;
            }
        y[o] = best;
    }
}

static void avg_scalar(float *y, const float *const *rows, int nrows, int k, int64_t s, int64_t start, int64_t n,
                       double count)
{
    for (int64_t o = 0; o < n; o++) {
        int64_t c = start + o * s;
        double acc = 0;
        for (int r = 0; r < nrows; r++)
            for (int q = 0; q < k; q++) acc += rows[r][c + q];
        y[o] = (float)(acc / count);
    }
}

/* The vector sets have no code of their own for other strides or for the
 * generic level: nothing done there, the plain loops take every output. */
static int64_t max_none(float *y, const float *const *rows, int nrows, int k, int64_t s, int64_t start, int64_t n)
{
    return 0;
}

static int64_t avg_none(float *y, const float *const *rows, int nrows, int k, int64_t s, int64_t start, int64_t n,
                        double count)
{
    return 0;
}

const poolrow_arch_t poolrow_arch_generic = {max_none, avg_none};

/* The one selection point of the pooling rows (docs/design.md, "ISA dispatch"). */
static const poolrow_arch_t *poolrow_arch(void)
{
    return isa_pick(&poolrow_arch_generic, ISA_TABLE(&poolrow_arch_avx2), ISA_TABLE(&poolrow_arch_avx512));
}

void poolrow_max(float *y, const float *const *rows, int nrows, int k, int64_t s, int64_t start, int64_t n)
{
    int64_t done = s == 1 || s == 2 ? poolrow_arch()->max(y, rows, nrows, k, s, start, n) : 0;
    max_scalar(y + done, rows, nrows, k, s, start + done * s, n - done);
}

void poolrow_avg(float *y, const float *const *rows, int nrows, int k, int64_t s, int64_t start, int64_t n,
                 double count)
{
    int64_t done = s == 1 || s == 2 ? poolrow_arch()->avg(y, rows, nrows, k, s, start, n, count) : 0;
    avg_scalar(y + done, rows, nrows, k, s, start + done * s, n - done, count);
}
