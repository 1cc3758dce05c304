/* bcast.c — checks the broadcasting walk (ops/bcast.h) that the
 * elementwise kernels share: how shapes collapse into rows, and, over 400
 * random broadcasts, every row's offsets against the offsets computed by
 * unravelling each output index. (The kernels themselves are checked by the
 * op harness, tests/ops/.) */
#include <stdlib.h>
#include <string.h>
#include "tap.h"
#include "ops/bcast.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next64(void)
{
    rng ^= rng << 13; rng ^= rng >> 7; rng ^= rng << 17;
    return rng;
}

/* Offset into a tensor of shape (nd, d) of output coordinate idx (rank r),
 * by numpy's rule: align right, size-1 axes read index 0. */
static int64_t bcast_offset(int nd, const int64_t *d, int r, const int64_t *idx)
{
    int64_t off = 0;
    for (int k = 0; k < nd; k++) {
        int64_t i = d[k] == 1 ? 0 : idx[r - nd + k];
        off = off * d[k] + i;
    }
    return off;
}

static void unravel(int64_t lin, int r, const int64_t *dims, int64_t *idx)
{
    for (int k = r - 1; k >= 0; k--) {
        idx[k] = dims[k] ? lin % dims[k] : 0;
        lin = dims[k] ? lin / dims[k] : 0;
    }
}

static void test_plan_shapes(void)
{
    bcast_t b;
    const int64_t a4[4] = {2, 3, 4, 5}, c4[4] = {1, 3, 1, 1};
    const int64_t *dd[2] = {a4, c4};
    int nd[2] = {4, 4};
    ok(bcast_plan(&b, 2, nd, dd, 4, a4) == 0 && b.rank == 3 && b.dims[0] == 2 && b.dims[1] == 3 &&
       b.dims[2] == 20 && b.inner == 20 && b.rows == 6 && b.is[0] == 1 && b.is[1] == 0,
       "NCHW + 1C11 collapses to 2x3x20 rows of 20, channel operand stride 0");
    dd[1] = a4;
    ok(bcast_plan(&b, 2, nd, dd, 4, a4) == 0 && b.rank == 1 && b.inner == 120 && b.rows == 1,
       "same shapes collapse to one row");
    nd[1] = 0;
    ok(bcast_plan(&b, 2, nd, dd, 4, a4) == 0 && b.rank == 1 && b.inner == 120 && b.is[1] == 0,
       "scalar operand: one row, stride 0");
    const int64_t row[1] = {5};
    dd[1] = row;
    nd[1] = 1;
    ok(bcast_plan(&b, 2, nd, dd, 4, a4) == 0 && b.rank == 2 && b.inner == 5 && b.rows == 24 && b.is[1] == 1,
       "row broadcast: 24 rows of 5");
    const int64_t bad[1] = {4};
    dd[1] = bad;
    ok(bcast_plan(&b, 2, nd, dd, 4, a4) == -1, "non-broadcastable shape refused");
    const int64_t e3[3] = {2, 0, 3};
    const int64_t *de[1] = {e3};
    int ne[1] = {3};
    ok(bcast_plan(&b, 1, ne, de, 3, e3) == 0 && b.rows == 0, "empty output: no rows");
}

/* Random shapes: every row's offsets against unravelled indices. */
static void test_plan_random(void)
{
    int bad = 0, cases = 0;
    for (int it = 0; it < 400; it++) {
        int r = (int)(next64() % 6);
        int64_t od[8];
        for (int k = 0; k < r; k++) od[k] = 1 + (int64_t)(next64() % 4);
        int n = 2 + (int)(next64() % 2);
        int64_t id[3][8];
        int nd[3];
        const int64_t *dd[3];
        for (int i = 0; i < n; i++) {
            nd[i] = r - (int)(next64() % (r + 1));
            for (int k = 0; k < nd[i]; k++) id[i][k] = next64() % 3 == 0 ? 1 : od[r - nd[i] + k];
            dd[i] = id[i];
        }
        bcast_t b;
        if (bcast_plan(&b, n, nd, dd, r, od)) { bad++; continue; }
        cases++;
        int64_t idx[8], total = 0;
        BCAST_FOR_ROWS(&b, itr) {
            for (int64_t j = 0; j < b.inner; j++) {
                int64_t lin = itr.row * b.inner + j;
                unravel(lin, r, od, idx);
                for (int i = 0; i < n; i++)
                    if (itr.off[i] + j * b.is[i] != bcast_offset(nd[i], id[i], r, idx)) bad++;
                total++;
            }
        }
        int64_t want = 1;
        for (int k = 0; k < r; k++) want *= od[k];
        if (total != want) bad++;
    }
    ok(bad == 0 && cases == 400, "400 random broadcasts: every offset matches the unravelled index (%d bad)", bad);
}

int main(void)
{
    test_plan_shapes();
    test_plan_random();
    return done_testing();
}
