/* timing.h — the per-run timing log of a validation (build/NAME/timing.jsonl):
 * one JSON object per line, appended by `timed` around each stage run of the
 * matrix, summed per stage by `report` (docs/design.md "Timing").
 *
 * A record: {"stage": "infer", "cell": "bgr__fp16", "start": UNIX seconds,
 * "wall_s", "user_s", "sys_s", "rc"}. The log is emptied at the start of each
 * make run that times anything (plan.mk's timing-reset-NAME), so records of
 * an earlier or interrupted run are never summed with this one's. */
#ifndef PARITY_TIMING_H
#define PARITY_TIMING_H

#include <jansson.h>
#include "util/err.h"

typedef struct timing_rec {
    const char *stage, *cell;   /* cell may be NULL (engines, report) */
    double start;               /* wall clock at the start, seconds since the epoch */
    double wall, user, sys;     /* seconds */
    int rc;                     /* the command's exit status (128 + signal when killed) */
} timing_rec_t;

/* Appends one record as one line with one write(2) on an O_APPEND descriptor:
 * runs of make -j append to the same log, and a line written whole is never
 * interleaved with another on a local file system. */
int timing_append(const char *path, const timing_rec_t *r, perr_t *e);

/* One stage's sum over the run. */
typedef struct timing_row {
    char stage[32];
    int runs, failed;           /* failed: runs that exited 2 or more (an error; 1 is a failed check) */
    double wall, cpu;           /* cpu = user + sys */
} timing_row_t;

typedef struct timing {
    timing_row_t *rows;         /* by wall time, longest first (ties by name) */
    int n, runs;
    double wall, cpu;           /* sums over every record */
    double elapsed;             /* first start to last end: what the run took */
} timing_t;

/* Reads and sums a log. A missing file is an empty summary (nothing was
 * timed); a malformed line is bad input naming the file and the line. */
int timing_read(const char *path, timing_t *t, perr_t *e);
void timing_free(timing_t *t);
/* {"runs", "wall_s", "cpu_s", "elapsed_s", "stages": [{"stage", "runs", "failed", "wall_s", "cpu_s", "share"}]};
 * share: the stage's part of the summed wall time. */
json_t *timing_json(const timing_t *t);

#endif
