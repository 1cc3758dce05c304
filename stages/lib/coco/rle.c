/* rle.c — COCO run-length masks (see rle.h): the string codec, polygon
 * rasterisation and IoU follow the rules of pycocotools' maskApi.c
 * (rleFrString, rleFrPoly, rleMerge, rleIou), written down in
 * docs/metrics-coco.md; the code is this project's own.
 *
 * Masks built here (from polygons, or parsed) hold the same pixels as
 * maskApi's; only the pixels matter to area and IoU, except for the
 * zero-length runs a user can write, which maskApi's IoU walk treats in its
 * own way (coco_rle_iou reproduces it).
 */
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "coco/rle.h"
#include "util/fsutil.h"

void coco_mask_free(coco_mask_t *m)
{
    free(m->cnts);
    memset(m, 0, sizeof *m);
}

static int check_size(uint32_t h, uint32_t w, const char *what, perr_t *e)
{
    if (h == 0 || w == 0) return BAD(e, "%s: mask size %ux%u is empty", what, h, w);
    if ((uint64_t)h * w > COCO_RLE_MAX_PIXELS)
        return BAD(e, "%s: mask size %ux%u is over %llu pixels", what, h, w,
                   (unsigned long long)COCO_RLE_MAX_PIXELS);
    return 0;
}

/* Area, foreground columns and the zero-run flag; checks the counts cover
 * exactly h*w pixels. Takes ownership of cnts. */
static int mask_finish(coco_mask_t *m, uint32_t *cnts, uint32_t nc, uint32_t h, uint32_t w,
                       const char *what, perr_t *e)
{
    uint64_t pos = 0, area = 0, first = UINT64_MAX, last = 0;
    int zero = 0;
    for (uint32_t i = 0; i < nc; i++) {
        if (i > 0 && cnts[i] == 0) zero = 1;
        if ((i & 1) && cnts[i]) {
            area += cnts[i];
            if (first == UINT64_MAX) first = pos;
            last = pos + cnts[i] - 1;
        }
        pos += cnts[i];
    }
    if (pos != (uint64_t)h * w) {
        free(cnts);
        return BAD(e, "%s: RLE counts cover %llu pixels, not %ux%u = %llu", what,
                   (unsigned long long)pos, h, w, (unsigned long long)h * w);
    }
    m->h = h;
    m->w = w;
    m->m = nc;
    m->cnts = cnts;
    m->area = area;
    m->zero_runs = zero;
    m->c0 = first == UINT64_MAX ? 1 : (uint32_t)(first / h);
    m->c1 = first == UINT64_MAX ? 0 : (uint32_t)(last / h);
    return 0;
}

int coco_rle_from_counts(coco_mask_t *m, const uint32_t *cnts, uint32_t nc, uint32_t h,
                         uint32_t w, const char *what, perr_t *e)
{
    memset(m, 0, sizeof *m);
    if (check_size(h, w, what, e)) return -1;
    if (nc == 0) return BAD(e, "%s: RLE counts are empty", what);
    uint32_t *c = xmalloc(nc * sizeof *c);
    memcpy(c, cnts, nc * sizeof *c);
    return mask_finish(m, c, nc, h, w, what, e);
}

char *coco_rle_to_string(const coco_mask_t *m)
{
    /* at most 7 characters per count: 32 bits plus sign in 5-bit groups */
    char *s = xmalloc((size_t)m->m * 7 + 1), *p = s;
    for (uint32_t i = 0; i < m->m; i++) {
        int64_t x = m->cnts[i];
        if (i > 2) x -= m->cnts[i - 2];
        for (int more = 1; more;) {
            int c = (int)(x & 0x1f);
            x >>= 5;   /* arithmetic: a negative difference ends at -1 */
            more = (c & 0x10) ? x != -1 : x != 0;
            *p++ = (char)((more ? c | 0x20 : c) + 48);
        }
    }
    *p = 0;
    return s;
}

/* Each count is 5 bits per character ('0' + value, bit 0x20 = more to
 * come, bit 0x10 of the last = negative); from the 3rd count on it is the
 * difference to the count two before. */
int coco_rle_from_string(coco_mask_t *m, const char *s, size_t n, uint32_t h, uint32_t w,
                         const char *what, perr_t *e)
{
    memset(m, 0, sizeof *m);
    if (check_size(h, w, what, e)) return -1;
    if (n == 0) return BAD(e, "%s: RLE counts string is empty", what);
    uint32_t *c = xmalloc(n * sizeof *c), nc = 0;
    size_t p = 0;
    while (p < n) {
        int64_t x = 0;
        int k = 0, more = 1;
        while (more) {
            if (p >= n) {
                free(c);
                return BAD(e, "%s: RLE counts string ends inside a count", what);
            }
            int ch = (unsigned char)s[p];
            if (ch < 48 || ch > 111) {
                free(c);
                return BAD(e, "%s: RLE counts string holds byte 0x%02x at %zu (not one of "
                           "'0'..'o')", what, ch, p);
            }
            if (k == 6) {
                free(c);
                return BAD(e, "%s: RLE count at %zu is longer than 6 characters", what, p);
            }
            int v = ch - 48;
            x |= (int64_t)(v & 0x1f) << (5 * k);
            more = v & 0x20;
            p++;
            k++;
            if (!more && (v & 0x10)) x -= (int64_t)1 << (5 * k);   /* sign-extend */
        }
        if (nc > 2) x += c[nc - 2];
        if (x < 0 || x > (int64_t)h * w) {
            free(c);
            return BAD(e, "%s: RLE count %u decodes to %lld (outside 0..%llu)", what, nc,
                       (long long)x, (unsigned long long)h * w);
        }
        c[nc++] = (uint32_t)x;
    }
    return mask_finish(m, c, nc, h, w, what, e);
}

/* ---- polygons ---- */

typedef struct u32vec { uint32_t *v; size_t n, cap; } u32vec_t;

static void u32_push(u32vec_t *a, uint32_t x)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 64;
        a->v = xrealloc(a->v, a->cap * sizeof *a->v);
    }
    a->v[a->n++] = x;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x > y ? 1 : x < y ? -1 : 0;
}

/* Dense points along the boundary at 5x resolution are walked in order;
 * each step that changes the x of the fine grid by a whole pixel column
 * (the point's x maps back to an integer column inside the image) records
 * a run boundary at (column, first row at or below the edge). */
typedef struct raster {
    uint32_t h, w;
    int have;
    int pu, pv;                  /* previous point */
    u32vec_t *out;
} raster_t;

static void raster_point(raster_t *r, int u, int v)
{
    if (r->have && u != r->pu) {
        double xd = (double)(u < r->pu ? u : u - 1);
        xd = (xd + .5) / 5 - .5;
        if (floor(xd) == xd && xd >= 0 && xd <= (double)(r->w - 1)) {
            double yd = (double)(v < r->pv ? v : r->pv);
            yd = (yd + .5) / 5 - .5;
            if (yd < 0) yd = 0;
            else if (yd > (double)r->h) yd = (double)r->h;
            yd = ceil(yd);
            u32_push(r->out, (uint32_t)((int64_t)xd * r->h + (int64_t)yd));
        }
    }
    r->have = 1;
    r->pu = u;
    r->pv = v;
}

/* One edge from (xs, ys) to (xe, ye) on the 5x grid: stepped along the
 * longer axis, always from the lower end, the other coordinate rounded
 * half up from the double slope; reversed edges are walked backwards. */
static void raster_edge(raster_t *r, int xs, int ys, int xe, int ye)
{
    int dx = abs(xe - xs), dy = abs(ys - ye);
    int flip = (dx >= dy && xs > xe) || (dx < dy && ys > ye);
    if (flip) {
        int t = xs; xs = xe; xe = t;
        t = ys; ys = ye; ye = t;
    }
    if (dx == 0 && dy == 0) {
        /* a repeated vertex: maskApi's slope is 0/0 and x86 turns the NaN
         * row into INT_MIN; the point never differs in x from its
         * neighbours, so only its x matters */
        raster_point(r, xs, INT_MIN);
        return;
    }
    if (dx >= dy) {
        double s = (double)(ye - ys) / dx;
        for (int d = 0; d <= dx; d++) {
            int t = flip ? dx - d : d;
            raster_point(r, t + xs, (int)(ys + s * t + .5));
        }
    } else {
        double s = (double)(xe - xs) / dy;
        for (int d = 0; d <= dy; d++) {
            int t = flip ? dy - d : d;
            raster_point(r, (int)(xs + s * t + .5), t + ys);
        }
    }
}

/* Run boundaries of one polygon: the positions toggled an odd number of
 * times (maskApi sorts them and folds repeats pairwise). Appends
 * foreground intervals [start, end) to iv. */
static void poly_intervals(const double *xy, uint32_t k, uint32_t h, uint32_t w, u32vec_t *iv)
{
    u32vec_t b = {0};
    raster_t r = { h, w, 0, 0, 0, &b };
    for (uint32_t j = 0; j < k; j++) {
        uint32_t j1 = j + 1 == k ? 0 : j + 1;
        raster_edge(&r, (int)(5 * xy[2 * j] + .5), (int)(5 * xy[2 * j + 1] + .5),
                    (int)(5 * xy[2 * j1] + .5), (int)(5 * xy[2 * j1 + 1] + .5));
    }
    if (b.n > 1) qsort(b.v, b.n, sizeof *b.v, cmp_u32);
    uint64_t hw = (uint64_t)h * w;
    size_t nt = 0;
    for (size_t i = 0; i < b.n;) {
        size_t j = i;
        while (j < b.n && b.v[j] == b.v[i]) j++;
        if (((j - i) & 1) && b.v[i] < hw) b.v[nt++] = b.v[i];
        i = j;
    }
    for (size_t i = 0; i < nt; i += 2) {
        u32_push(iv, b.v[i]);
        u32_push(iv, i + 1 < nt ? b.v[i + 1] : (uint32_t)hw);
    }
    free(b.v);
}

static int cmp_iv(const void *a, const void *b)
{
    const uint32_t *x = a, *y = b;
    return x[0] > y[0] ? 1 : x[0] < y[0] ? -1 : 0;
}

/* Points walked per annotation at most: a polygon's cost is its perimeter
 * on the 5x grid, which no input size bounds; legitimate polygons of a
 * 10,000-pixel image stay far below. */
#define RASTER_MAX_STEPS (UINT64_C(1) << 27)
#define POLY_MAX_COORD 1e5

int coco_rle_from_polys(coco_mask_t *m, const double *xy, const uint32_t *npts, uint32_t npoly,
                        uint32_t h, uint32_t w, const char *what, perr_t *e)
{
    memset(m, 0, sizeof *m);
    if (check_size(h, w, what, e)) return -1;
    uint64_t steps = 0;
    size_t off = 0;
    for (uint32_t p = 0; p < npoly; p++) {
        for (uint32_t j = 0; j < 2 * npts[p]; j++) {
            double v = xy[off + j];
            if (!(fabs(v) <= POLY_MAX_COORD))
                return BAD(e, "%s: polygon %u coordinate %u (%.17g) is beyond +-%g", what, p, j, v,
                           POLY_MAX_COORD);
        }
        for (uint32_t j = 0; j < npts[p]; j++) {
            uint32_t j1 = j + 1 == npts[p] ? 0 : j + 1;
            double dx = fabs(xy[off + 2 * j] - xy[off + 2 * j1]);
            double dy = fabs(xy[off + 2 * j + 1] - xy[off + 2 * j1 + 1]);
            steps += (uint64_t)(5 * (dx > dy ? dx : dy)) + 2;
        }
        off += 2 * (size_t)npts[p];
    }
    if (steps > RASTER_MAX_STEPS)
        return BAD(e, "%s: polygons too long to rasterise (perimeter %llu points on the 5x grid)",
                   what, (unsigned long long)steps);
    u32vec_t iv = {0};
    off = 0;
    for (uint32_t p = 0; p < npoly; p++) {
        poly_intervals(xy + off, npts[p], h, w, &iv);
        off += 2 * (size_t)npts[p];
    }
    /* union of the polygons' intervals (maskApi's rleMerge) */
    size_t ni = iv.n / 2;
    if (ni > 1) qsort(iv.v, ni, 2 * sizeof *iv.v, cmp_iv);
    uint32_t *c = xmalloc((2 * ni + 1) * sizeof *c), nc = 0;
    uint64_t pos = 0;
    for (size_t i = 0; i < ni;) {
        uint32_t s = iv.v[2 * i], t = iv.v[2 * i + 1];
        size_t j = i + 1;
        for (; j < ni && iv.v[2 * j] <= t; j++)
            if (iv.v[2 * j + 1] > t) t = iv.v[2 * j + 1];
        c[nc++] = (uint32_t)(s - pos);
        c[nc++] = t - s;
        pos = t;
        i = j;
    }
    if (pos < (uint64_t)h * w || nc == 0) c[nc++] = (uint32_t)((uint64_t)h * w - pos);
    free(iv.v);
    return mask_finish(m, c, nc, h, w, what, e);
}

/* ---- IoU ---- */

double coco_rle_iou(const coco_mask_t *dt, const coco_mask_t *gt, int crowd)
{
    /* maskApi's walk: both masks' runs consumed in step; it ends when the
     * current runs of both are used up, which a pair of zero-length runs
     * can cause early */
    uint32_t ca = dt->cnts[0], cb = gt->cnts[0], ka = dt->m, kb = gt->m, a = 1, b = 1;
    uint64_t i = 0, u = 0, ct = 1;
    int va = 0, vb = 0;
    while (ct > 0) {
        uint32_t c = ca < cb ? ca : cb;
        if (va || vb) {
            u += c;
            if (va && vb) i += c;
        }
        ct = 0;
        ca -= c;
        if (!ca && a < ka) { ca = dt->cnts[a++]; va = !va; }
        ct += ca;
        cb -= c;
        if (!cb && b < kb) { cb = gt->cnts[b++]; vb = !vb; }
        ct += cb;
    }
    if (i == 0) return 0;
    if (crowd) u = dt->area;
    return (double)(uint32_t)i / (double)(uint32_t)u;
}

int coco_rle_may_reach(const coco_mask_t *dt, const coco_mask_t *gt, int crowd, double min_iou)
{
    if (dt->zero_runs || gt->zero_runs) return 1;    /* the walk may stop early: no shortcut */
    if (dt->area == 0 || gt->area == 0) return 0;
    if (dt->c0 > gt->c1 || gt->c0 > dt->c1) return 0;
    if (crowd) return 1;
    /* i <= min(areas) and union >= max(areas) */
    uint64_t lo = dt->area < gt->area ? dt->area : gt->area;
    uint64_t hi = dt->area < gt->area ? gt->area : dt->area;
    return (double)lo >= min_iou * (double)hi * (1 - 1e-12);
}
