/* timing.c — appending to and summing a validation's timing log (timing.h). */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/timing.h"
#include "util/fsutil.h"
#include "util/jsonfile.h"

#define MAX_STAGES 64   /* distinct stage names a log may hold: the plan writes about a dozen */

int timing_append(const char *path, const timing_rec_t *r, perr_t *e)
{
    json_t *j = json_pack("{s:s, s:s?, s:f, s:f, s:f, s:f, s:i}", "stage", r->stage, "cell", r->cell, "start", r->start,
                          "wall_s", r->wall, "user_s", r->user, "sys_s", r->sys, "rc", r->rc);
    char *text = j ? json_text(j, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15)) : NULL;
    json_decref(j);
    if (!text) return INTERNAL(e, "%s: cannot format a timing record", path);
    size_t n = strlen(text);
    text[n] = '\n';   /* json_text's NUL becomes the line's end: one write, whole */
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    int rc = 0;
    if (fd < 0) rc = BAD(e, "%s: cannot open for appending: %s", path, strerror(errno));
    else {
        ssize_t w = write(fd, text, n + 1);
        if (w != (ssize_t)(n + 1)) rc = write_error(e, path, w < 0 ? errno : EIO);
        if (close(fd) != 0 && !rc) rc = write_error(e, path, errno);
    }
    free(text);
    return rc;
}

/* A record's number: present, finite, not negative ("start" may be any finite time). */
static int rec_num(json_t *o, const char *key, double *v, const char *path, int line, perr_t *e)
{
    json_t *x = json_object_get(o, key);
    if (!json_is_number(x)) return BAD(e, "%s: line %d: \"%s\" is missing or not a number", path, line, key);
    *v = json_number_value(x);
    if (!isfinite(*v) || (*v < 0 && strcmp(key, "start")))
        return BAD(e, "%s: line %d: \"%s\" is %g, not a finite time", path, line, key, *v);
    return 0;
}

static timing_row_t *stage_row(timing_t *t, const char *stage, const char *path, int line, perr_t *e)
{
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->rows[i].stage, stage)) return &t->rows[i];
    if (t->n == MAX_STAGES) {
        BAD(e, "%s: line %d: more than %d stage names", path, line, MAX_STAGES);
        return NULL;
    }
    timing_row_t *r = &t->rows[t->n++];
    memset(r, 0, sizeof *r);
    snprintf(r->stage, sizeof r->stage, "%s", stage);
    return r;
}

/* One line: checked whole before it counts. */
static int add_line(timing_t *t, const char *s, size_t n, double *first, double *last, const char *path, int line, perr_t *e)
{
    json_error_t je;
    json_t *o = json_loadb(s, n, JSON_REJECT_DUPLICATES, &je);
    if (!json_is_object(o)) {
        json_decref(o);
        return BAD(e, "%s: line %d: not a timing record (a JSON object): %s", path, line, o ? "another JSON value" : je.text);
    }
    const char *stage = json_string_value(json_object_get(o, "stage"));
    json_t *rc = json_object_get(o, "rc");
    double start, wall, user, sys;
    int bad = !stage || !*stage || strlen(stage) >= sizeof t->rows[0].stage
                  ? BAD(e, "%s: line %d: \"stage\" is missing, empty, longer than %zu bytes or not a string", path, line,
                        sizeof t->rows[0].stage - 1)
              : !json_is_integer(rc) ? BAD(e, "%s: line %d: \"rc\" is missing or not an integer", path, line)
                                     : 0;
    if (!bad)
        bad = rec_num(o, "start", &start, path, line, e) || rec_num(o, "wall_s", &wall, path, line, e) ||
              rec_num(o, "user_s", &user, path, line, e) || rec_num(o, "sys_s", &sys, path, line, e);
    timing_row_t *r = bad ? NULL : stage_row(t, stage, path, line, e);
    if (r) {
        r->runs++;
        r->failed += json_integer_value(rc) >= 2;   /* exit 1 is a check's verdict (compare), a result */
        r->wall += wall;
        r->cpu += user + sys;
        t->runs++;
        t->wall += wall;
        t->cpu += user + sys;
        if (t->runs == 1 || start < *first) *first = start;
        if (t->runs == 1 || start + wall > *last) *last = start + wall;
    }
    json_decref(o);
    return r ? 0 : -1;
}

static int by_wall(const void *a, const void *b)
{
    const timing_row_t *x = a, *y = b;
    if (x->wall != y->wall) return x->wall < y->wall ? 1 : -1;
    return strcmp(x->stage, y->stage);
}

int timing_read(const char *path, timing_t *t, perr_t *e)
{
    memset(t, 0, sizeof *t);
    t->rows = xcalloc(MAX_STAGES, sizeof *t->rows);
    if (!file_exists(path)) return 0;
    char *text;
    size_t len;
    if (read_file(path, &text, &len, e)) return -1;
    double first = 0, last = 0;
    int line = 0, rc = 0;
    for (size_t at = 0; at < len && !rc;) {
        const char *end = memchr(text + at, '\n', len - at);
        size_t n = end ? (size_t)(end - (text + at)) : len - at;
        line++;
        rc = add_line(t, text + at, n, &first, &last, path, line, e);
        at += n + 1;
    }
    free(text);
    if (rc) { timing_free(t); return -1; }
    t->elapsed = t->runs ? last - first : 0;
    qsort(t->rows, t->n, sizeof *t->rows, by_wall);
    return 0;
}

void timing_free(timing_t *t)
{
    free(t->rows);
    memset(t, 0, sizeof *t);
}

json_t *timing_json(const timing_t *t)
{
    json_t *stages = json_array();
    for (int i = 0; i < t->n; i++) {
        const timing_row_t *r = &t->rows[i];
        json_array_append_new(stages, json_pack("{s:s, s:i, s:i, s:f, s:f, s:f}", "stage", r->stage, "runs", r->runs, "failed",
                                                r->failed, "wall_s", r->wall, "cpu_s", r->cpu, "share",
                                                t->wall > 0 ? r->wall / t->wall : 0.0));
    }
    return json_pack("{s:i, s:f, s:f, s:f, s:o}", "runs", t->runs, "wall_s", t->wall, "cpu_s", t->cpu, "elapsed_s", t->elapsed,
                     "stages", stages);
}
