/* report.h — what compare tells the user: a readable summary (stdout) and
 * everything in JSON. Both are deterministic: no times, no addresses; the
 * JSON writes non-finite numbers as the strings "nan", "inf", "-inf". */
#ifndef PARITY_COMPARE_REPORT_H
#define PARITY_COMPARE_REPORT_H

#include <stdio.h>
#include <jansson.h>
#include "compare/run.h"

/* Text: one line per passing tensor, details and a histogram per failure. */
void report_text(FILE *f, const cmp_report_t *rep);
/* The whole report as a JSON object (caller decrefs). */
json_t *report_json(const cmp_report_t *rep);
/* One result's statistics as a JSON object (also used by layerwise). */
json_t *result_json(const cmp_result_t *r);
/* The layout of compare's JSON report (util/jsonfile.h's write_json). */
#define CMP_JSON_FLAGS (JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17))

/* Helpers shared with the layerwise report. */
json_t *json_num(double v);
const char *fmt_g(char *buf, size_t n, double v);     /* %.5g, nan/inf spelled out */
void fmt_index(char *buf, size_t n, int64_t flat, int nd, const int64_t *dims);
const char *status_name(res_status_t s);

#endif
