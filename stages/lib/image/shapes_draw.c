/* shapes_draw.c — pixels of the shapes dataset: background textures
 * (gradients, value noise, fine stripes, checkers, thin distractor lines),
 * the six shape outlines, an anti-aliased rasteriser and the final noise and
 * 8-bit quantisation (shapes.h).
 *
 * Fine stripes (periods down to 3 px) and the thin parts of shapes (ring
 * walls, star tips, cross arms) are what makes resize methods differ: a
 * shrink without antialiasing aliases them, a different filter moves edges. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "image/shapes.h"

const char *const shapes_category_names[SHAPE_NCAT] = {
    "circle", "rectangle", "triangle", "star", "ring", "cross",
};

static double clamp255(double v)
{
    return v < 0 ? 0 : v > 255 ? 255 : v;
}

static void random_colour(shapes_rng_t *r, double c[3])
{
    for (int k = 0; k < 3; k++)
        c[k] = shapes_rng_range(r, 0, 255);
}

/* The texture value f in [0, 1] of pixel (x, y) for the chosen pattern. */
typedef struct texture {
    int kind;             /* 0 gradient, 1 value noise, 2 stripes, 3 checker */
    double ca, sa, scale, period;
    int gw, gh;           /* value-noise lattice */
    double cell;
    double *lattice;      /* two octaves, gw * gh each */
} texture_t;

static double smooth(double t)
{
    return t * t * (3 - 2 * t);
}

static double lattice_at(const texture_t *t, const double *lat, double x, double y, double cell)
{
    double gx = x / cell, gy = y / cell;
    int ix = (int)gx, iy = (int)gy;
    double fx = smooth(gx - ix), fy = smooth(gy - iy);
    /* The lattice is sized for the coarse octave; wrap for the fine one. */
    int x0 = ix % t->gw, x1 = (ix + 1) % t->gw, y0 = iy % t->gh, y1 = (iy + 1) % t->gh;
    double a = lat[y0 * t->gw + x0], b = lat[y0 * t->gw + x1];
    double c = lat[y1 * t->gw + x0], d = lat[y1 * t->gw + x1];
    return (a + (b - a) * fx) * (1 - fy) + (c + (d - c) * fx) * fy;
}

static double texture_at(const texture_t *t, double x, double y, double diag)
{
    double u = x * t->ca + y * t->sa;
    switch (t->kind) {
    case 0:
        return 0.5 + u / diag;
    case 1:
        return (2.0 * lattice_at(t, t->lattice, x, y, t->cell) +
                lattice_at(t, t->lattice + t->gw * t->gh, x, y, t->cell * 0.5)) / 3.0;
    case 2:
        return 0.5 + 0.5 * sin(2 * M_PI * u / t->period);
    default: {
        double v = x * t->sa - y * t->ca;
        int cx = (int)floor(u / t->period), cy = (int)floor(v / t->period);
        return (double)((cx + cy) & 1) * 0.8 + 0.1 + 0.1 * u / diag;
    }
    }
}

/* A thin line segment: a rectangle far thinner than any RECTANGLE shape. */
static void draw_line(canvas_t *cv, shapes_rng_t *r)
{
    shape_t s;
    double len = shapes_rng_range(r, 20, 0.5 * (cv->w < cv->h ? cv->w : cv->h));
    double half_w = shapes_rng_range(r, 0.4, 1.4);
    double cx = shapes_rng_range(r, 0, cv->w), cy = shapes_rng_range(r, 0, cv->h);
    double ang = shapes_rng_range(r, 0, M_PI);
    shapes_make(&s, SHAPE_RECTANGLE, cx, cy, len * 0.5, ang, r);
    double vy = half_w;
    s.vy[0] = s.vy[1] = vy;
    s.vy[2] = s.vy[3] = -vy;
    random_colour(r, s.rgb);
    double x0, y0, x1, y1;
    shapes_extent(&s, &x0, &y0, &x1, &y1);
    int bx0 = x0 < 0 ? 0 : (int)floor(x0), by0 = y0 < 0 ? 0 : (int)floor(y0);
    int bx1 = x1 > cv->w ? cv->w : (int)ceil(x1), by1 = y1 > cv->h ? cv->h : (int)ceil(y1);
    if (bx1 <= bx0 || by1 <= by0)
        return;
    int bw = bx1 - bx0, bh = by1 - by0;
    float *cov = malloc(sizeof *cov * (size_t)bw * (size_t)bh);
    if (!cov)
        return;
    shapes_coverage(&s, bx0, by0, bw, bh, cov);
    shapes_paint(cv, &s, bx0, by0, bw, bh, cov);
    free(cov);
}

void shapes_background(canvas_t *cv, shapes_rng_t *r)
{
    texture_t t = {0};
    double c1[3], c2[3];
    random_colour(r, c1);
    /* Limited contrast inside the texture keeps the shapes the salient objects. */
    double contrast = shapes_rng_range(r, 15, 90);
    for (int k = 0; k < 3; k++)
        c2[k] = clamp255(c1[k] + contrast * shapes_rng_range(r, -1, 1));
    t.kind = shapes_rng_int(r, 4);
    double ang = shapes_rng_range(r, 0, 2 * M_PI);
    t.ca = cos(ang);
    t.sa = sin(ang);
    t.period = t.kind == 2 ? shapes_rng_range(r, 3, 40) : shapes_rng_range(r, 6, 48);
    t.cell = shapes_rng_range(r, 24, 128);
    t.gw = (int)(cv->w / t.cell) + 2;
    t.gh = (int)(cv->h / t.cell) + 2;
    if (t.kind == 1) {
        size_t n = (size_t)t.gw * (size_t)t.gh * 2;
        t.lattice = malloc(sizeof *t.lattice * n);
        if (!t.lattice)
            t.kind = 0;
        else
            for (size_t i = 0; i < n; i++)
                t.lattice[i] = shapes_rng_unit(r);
    }
    double diag = 2.0 * sqrt((double)cv->w * cv->w + (double)cv->h * cv->h);
    for (int y = 0; y < cv->h; y++) {
        float *row = cv->px + (size_t)y * cv->w * 3;
        for (int x = 0; x < cv->w; x++) {
            double f = texture_at(&t, x + 0.5, y + 0.5, diag);
            for (int k = 0; k < 3; k++)
                row[3 * x + k] = (float)(c1[k] + (c2[k] - c1[k]) * f);
        }
    }
    free(t.lattice);
    int nlines = shapes_rng_int(r, 6);
    for (int i = 0; i < nlines; i++)
        draw_line(cv, r);
}

static void set_poly(shape_t *s, int n, const double *xy)
{
    s->nv = n;
    for (int i = 0; i < n; i++) {
        s->vx[i] = xy[2 * i];
        s->vy[i] = xy[2 * i + 1];
    }
}

void shapes_make(shape_t *s, int cat, double cx, double cy, double radius, double angle,
                 shapes_rng_t *r)
{
    memset(s, 0, sizeof *s);
    s->cat = cat;
    s->cx = cx;
    s->cy = cy;
    s->r = radius;
    s->ca = cos(angle);
    s->sa = sin(angle);
    double xy[2 * SHAPE_MAX_VERTS];
    switch (cat) {
    case SHAPE_CIRCLE:
        break;
    case SHAPE_RING:
        s->r_in = radius * shapes_rng_range(r, 0.45, 0.75);
        break;
    case SHAPE_RECTANGLE: {
        double a = radius, b = radius * shapes_rng_range(r, 0.3, 1.0);
        double v[8] = {a, b, -a, b, -a, -b, a, -b};
        set_poly(s, 4, v);
        break;
    }
    case SHAPE_TRIANGLE:
        for (int i = 0; i < 3; i++) {
            double t = -M_PI / 2 + i * 2 * M_PI / 3 + shapes_rng_range(r, -0.25, 0.25);
            double rr = radius * shapes_rng_range(r, 0.75, 1.0);
            xy[2 * i] = rr * cos(t);
            xy[2 * i + 1] = rr * sin(t);
        }
        set_poly(s, 3, xy);
        break;
    case SHAPE_STAR: {
        double inner = radius * shapes_rng_range(r, 0.38, 0.5);
        for (int i = 0; i < 10; i++) {
            double t = -M_PI / 2 + i * M_PI / 5, rr = (i & 1) ? inner : radius;
            xy[2 * i] = rr * cos(t);
            xy[2 * i + 1] = rr * sin(t);
        }
        set_poly(s, 10, xy);
        break;
    }
    default: { /* SHAPE_CROSS */
        double w = radius * shapes_rng_range(r, 0.2, 0.33), q = radius;
        double v[24] = {-w, q, w, q, w, w, q, w, q, -w, w, -w,
                        w, -q, -w, -q, -w, -w, -q, -w, -q, w, -w, w};
        set_poly(s, 12, v);
        break;
    }
    }
}

static void to_image(const shape_t *s, double lx, double ly, double *x, double *y)
{
    *x = s->cx + lx * s->ca - ly * s->sa;
    *y = s->cy + lx * s->sa + ly * s->ca;
}

void shapes_extent(const shape_t *s, double *x0, double *y0, double *x1, double *y1)
{
    if (s->nv == 0) {
        *x0 = s->cx - s->r;
        *x1 = s->cx + s->r;
        *y0 = s->cy - s->r;
        *y1 = s->cy + s->r;
        return;
    }
    double x, y;
    to_image(s, s->vx[0], s->vy[0], &x, &y);
    *x0 = *x1 = x;
    *y0 = *y1 = y;
    for (int i = 1; i < s->nv; i++) {
        to_image(s, s->vx[i], s->vy[i], &x, &y);
        *x0 = x < *x0 ? x : *x0;
        *x1 = x > *x1 ? x : *x1;
        *y0 = y < *y0 ? y : *y0;
        *y1 = y > *y1 ? y : *y1;
    }
}

/* Whether the image point (x, y) lies inside the shape (even-odd rule). */
static int inside(const shape_t *s, double x, double y)
{
    double dx = x - s->cx, dy = y - s->cy;
    double lx = dx * s->ca + dy * s->sa, ly = -dx * s->sa + dy * s->ca;
    if (s->nv == 0) {
        double d2 = lx * lx + ly * ly;
        return d2 <= s->r * s->r && d2 >= s->r_in * s->r_in;
    }
    int in = 0;
    for (int i = 0, j = s->nv - 1; i < s->nv; j = i++) {
        double yi = s->vy[i], yj = s->vy[j];
        if ((yi > ly) != (yj > ly)) {
            double xc = s->vx[j] + (ly - yj) * (s->vx[i] - s->vx[j]) / (yi - yj);
            if (lx < xc)
                in = !in;
        }
    }
    return in;
}

void shapes_coverage(const shape_t *s, int bx0, int by0, int bw, int bh, float *cov)
{
    size_t cw = (size_t)bw + 1;
    unsigned char *corner = malloc(cw * ((size_t)bh + 1));
    if (!corner) {
        memset(cov, 0, sizeof *cov * (size_t)bw * (size_t)bh);
        return;
    }
    for (int j = 0; j <= bh; j++)
        for (int i = 0; i <= bw; i++)
            corner[j * cw + i] = (unsigned char)inside(s, bx0 + i, by0 + j);
    for (int j = 0; j < bh; j++) {
        for (int i = 0; i < bw; i++) {
            int a = corner[j * cw + i], b = corner[j * cw + i + 1];
            int c = corner[(j + 1) * cw + i], d = corner[(j + 1) * cw + i + 1];
            float v;
            if (a == b && b == c && c == d) {
                v = (float)a;
            } else {
                int n = 0;
                for (int sy = 0; sy < 4; sy++)
                    for (int sx = 0; sx < 4; sx++)
                        n += inside(s, bx0 + i + (sx + 0.5) / 4, by0 + j + (sy + 0.5) / 4);
                v = (float)n / 16.0f;
            }
            cov[(size_t)j * bw + i] = v;
        }
    }
    free(corner);
}

void shapes_paint(canvas_t *cv, const shape_t *s, int bx0, int by0, int bw, int bh,
                  const float *cov)
{
    for (int j = 0; j < bh; j++) {
        float *row = cv->px + ((size_t)(by0 + j) * cv->w + bx0) * 3;
        for (int i = 0; i < bw; i++) {
            double a = cov[(size_t)j * bw + i];
            if (a <= 0)
                continue;
            double dx = bx0 + i + 0.5 - s->cx, dy = by0 + j + 0.5 - s->cy;
            double t = (dx * s->ca + dy * s->sa) / s->r;
            for (int k = 0; k < 3; k++) {
                double col = clamp255(s->rgb[k] + s->shade[k] * t);
                row[3 * i + k] = (float)(row[3 * i + k] * (1 - a) + col * a);
            }
        }
    }
}

void shapes_quantise(const canvas_t *cv, double sigma, shapes_rng_t *r, uint8_t *rgb)
{
    size_t n = (size_t)cv->w * cv->h * 3;
    /* Irwin-Hall noise (sum of four 16-bit uniforms, variance 1/3 of 1):
     * near Gaussian and far cheaper than Box-Muller per sample. */
    double k = sigma * sqrt(3.0) / 65536.0;
    for (size_t i = 0; i < n; i++) {
        uint64_t u = shapes_rng_u64(r);
        double sum = (double)(u & 0xFFFF) + (double)((u >> 16) & 0xFFFF) +
                     (double)((u >> 32) & 0xFFFF) + (double)(u >> 48) - 2.0 * 65535.0;
        double v = clamp255(cv->px[i] + k * sum);
        rgb[i] = (uint8_t)lround(v);
    }
}
