/* shapes_scene.c — one image of the shapes dataset: picks the image size,
 * paints a background, places 3 to 12 shapes (log-uniform sizes, random
 * rotation and colour with enough contrast) so that each occludes earlier
 * ones only partly (every shape keeps at least 60% of its pixels), and derives
 * the COCO box and area of what stays visible (shapes.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "image/shapes.h"

const int shapes_sizes[][2] = {
    {640, 480}, {500, 375}, {333, 500}, {800, 600}, {480, 640}, {375, 500},
    {640, 427}, {427, 640}, {600, 600}, {512, 384}, {640, 360}, {360, 640},
};
const int shapes_nsizes = (int)(sizeof shapes_sizes / sizeof shapes_sizes[0]);

#define MAX_SHAPES 12
#define MIN_VISIBLE 0.6
#define MIN_PIXELS 30

typedef struct placed {
    shape_t s;
    int bx0, by0, bw, bh;   /* clipped window */
    long full, vis;         /* pixels owned when drawn, owned now */
} placed_t;

/* Mean canvas colour over the window: the shape colour must stand out from it. */
static void window_mean(const canvas_t *cv, int bx0, int by0, int bw, int bh, double m[3])
{
    double acc[3] = {0, 0, 0};
    for (int j = 0; j < bh; j++) {
        const float *row = cv->px + ((size_t)(by0 + j) * cv->w + bx0) * 3;
        for (int i = 0; i < bw; i++)
            for (int k = 0; k < 3; k++)
                acc[k] += row[3 * i + k];
    }
    double n = (double)bw * bh;
    for (int k = 0; k < 3; k++)
        m[k] = acc[k] / n;
}

static void pick_colour(shape_t *s, const double mean[3], shapes_rng_t *r)
{
    for (int tries = 0; tries < 24; tries++) {
        double d2 = 0;
        for (int k = 0; k < 3; k++) {
            s->rgb[k] = shapes_rng_range(r, 0, 255);
            d2 += (s->rgb[k] - mean[k]) * (s->rgb[k] - mean[k]);
        }
        if (d2 >= 100.0 * 100.0)
            goto shade;
    }
    for (int k = 0; k < 3; k++)
        s->rgb[k] = mean[k] < 128 ? 230 : 25;
shade:
    for (int k = 0; k < 3; k++)
        s->shade[k] = shapes_rng_range(r, -20, 20);
}

/* Tries one placement; returns 1 and records it when every earlier shape
 * keeps enough of itself visible. */
static int try_place(shapes_scene_t *sc, canvas_t *cv, short *owner, placed_t *pl, int n,
                     int cat, double radius, shapes_rng_t *r, float *cov)
{
    placed_t *p = &pl[n];
    double m = 0.5 * radius;
    double cx = shapes_rng_range(r, m, sc->w - m), cy = shapes_rng_range(r, m, sc->h - m);
    shapes_make(&p->s, cat, cx, cy, radius, shapes_rng_range(r, 0, 2 * M_PI), r);
    double x0, y0, x1, y1;
    shapes_extent(&p->s, &x0, &y0, &x1, &y1);
    p->bx0 = x0 < 0 ? 0 : (int)floor(x0);
    p->by0 = y0 < 0 ? 0 : (int)floor(y0);
    int bx1 = x1 > sc->w ? sc->w : (int)ceil(x1), by1 = y1 > sc->h ? sc->h : (int)ceil(y1);
    if (bx1 <= p->bx0 || by1 <= p->by0)
        return 0;
    p->bw = bx1 - p->bx0;
    p->bh = by1 - p->by0;
    shapes_coverage(&p->s, p->bx0, p->by0, p->bw, p->bh, cov);
    long stolen[MAX_SHAPES] = {0}, full = 0;
    for (int j = 0; j < p->bh; j++)
        for (int i = 0; i < p->bw; i++) {
            if (cov[(size_t)j * p->bw + i] < 0.5f)
                continue;
            full++;
            int o = owner[(size_t)(p->by0 + j) * sc->w + p->bx0 + i];
            if (o >= 0)
                stolen[o]++;
        }
    if (full < MIN_PIXELS)
        return 0;
    for (int k = 0; k < n; k++)
        if ((double)(pl[k].vis - stolen[k]) < MIN_VISIBLE * (double)pl[k].full)
            return 0;
    double mean[3];
    window_mean(cv, p->bx0, p->by0, p->bw, p->bh, mean);
    pick_colour(&p->s, mean, r);
    shapes_paint(cv, &p->s, p->bx0, p->by0, p->bw, p->bh, cov);
    for (int j = 0; j < p->bh; j++)
        for (int i = 0; i < p->bw; i++)
            if (cov[(size_t)j * p->bw + i] >= 0.5f)
                owner[(size_t)(p->by0 + j) * sc->w + p->bx0 + i] = (short)n;
    for (int k = 0; k < n; k++)
        pl[k].vis -= stolen[k];
    p->full = p->vis = full;
    return 1;
}

/* The box of what is visible: the exact extent clipped to the image, tightened
 * to the owned pixels when an occluder took part of the shape. */
static void annotate(const shapes_scene_t *sc, const short *owner, const placed_t *p, int k,
                     shapes_ann_t *a)
{
    double x0, y0, x1, y1;
    shapes_extent(&p->s, &x0, &y0, &x1, &y1);
    x0 = x0 < 0 ? 0 : x0;
    y0 = y0 < 0 ? 0 : y0;
    x1 = x1 > sc->w ? sc->w : x1;
    y1 = y1 > sc->h ? sc->h : y1;
    if (p->vis < p->full) {
        int mx0 = sc->w, my0 = sc->h, mx1 = -1, my1 = -1;
        for (int j = 0; j < p->bh; j++)
            for (int i = 0; i < p->bw; i++)
                if (owner[(size_t)(p->by0 + j) * sc->w + p->bx0 + i] == k) {
                    int x = p->bx0 + i, y = p->by0 + j;
                    mx0 = x < mx0 ? x : mx0;
                    my0 = y < my0 ? y : my0;
                    mx1 = x > mx1 ? x : mx1;
                    my1 = y > my1 ? y : my1;
                }
        x0 = mx0 > x0 ? mx0 : x0;
        y0 = my0 > y0 ? my0 : y0;
        x1 = mx1 + 1 < x1 ? mx1 + 1 : x1;
        y1 = my1 + 1 < y1 ? my1 + 1 : y1;
    }
    a->cat = p->s.cat;
    a->bbox[0] = x0;
    a->bbox[1] = y0;
    a->bbox[2] = x1 - x0;
    a->bbox[3] = y1 - y0;
    a->area = (double)p->vis;
    a->visible = (double)p->vis / (double)p->full;
}

void shapes_scene_make(shapes_scene_t *sc, uint64_t image_seed)
{
    shapes_rng_t r;
    shapes_rng_seed(&r, image_seed);
    memset(sc, 0, sizeof *sc);
    const int *wh = shapes_sizes[shapes_rng_int(&r, shapes_nsizes)];
    sc->w = wh[0];
    sc->h = wh[1];
    size_t npx = (size_t)sc->w * sc->h;
    canvas_t cv = {sc->w, sc->h, xmalloc(sizeof(float) * npx * 3)};
    short *owner = xmalloc(sizeof *owner * npx);
    float *cov = xmalloc(sizeof *cov * npx);
    for (size_t i = 0; i < npx; i++)
        owner[i] = -1;
    shapes_background(&cv, &r);

    placed_t pl[MAX_SHAPES];
    int target = 3 + shapes_rng_int(&r, MAX_SHAPES - 2), n = 0;
    double side = sc->w < sc->h ? sc->w : sc->h;
    /* Radii log-uniform from max(9 px, 2% of the short side) to 28% of it:
     * the smallest shapes are about 8 px across at a 320x320 input. */
    double lo = log(side * 0.02 > 9.0 ? side * 0.02 : 9.0), hi = log(0.28 * side);
    for (int t = 0; t < target; t++) {
        int cat = shapes_rng_int(&r, SHAPE_NCAT);
        double radius = exp(shapes_rng_range(&r, lo, hi));
        for (int tries = 0; tries < 12; tries++)
            if (try_place(sc, &cv, owner, pl, n, cat, radius, &r, cov)) {
                n++;
                break;
            }
    }
    sc->rgb = xmalloc(npx * 3);
    shapes_quantise(&cv, shapes_rng_range(&r, 0, 12), &r, sc->rgb);
    for (int k = 0; k < n; k++)
        annotate(sc, owner, &pl[k], k, &sc->ann[k]);
    sc->nann = n;
    free(cov);
    free(owner);
    free(cv.px);
}

void shapes_scene_free(shapes_scene_t *sc)
{
    free(sc->rgb);
    sc->rgb = NULL;
}
