/* classify.c — top-k of one sample's class scores, with the tie rule of
 * numpy.argsort(-s, kind="stable"): equal scores rank by the lower class
 * index, so top-1 is numpy.argmax (docs/metrics-classification.md). */
#include <math.h>
#include "metrics/metrics.h"

int64_t cls_rank(const float *s, int64_t n, int64_t label)
{
    if (label < 0 || label >= n) return -1;
    float v = s[label];
    int64_t before = 0;
    for (int64_t j = 0; j < n; j++) {
        if (isnan(s[j])) return -1;
        if (s[j] > v || (s[j] == v && j < label)) before++;
    }
    return before;
}

int64_t cls_top1(const float *s, int64_t n)
{
    int64_t best = 0;
    for (int64_t j = 0; j < n; j++) {
        if (isnan(s[j])) return -1;
        if (s[j] > s[best]) best = j;   /* strictly greater: the first maximum stays */
    }
    return n > 0 ? best : -1;
}
