/* task.c — the task part of a model config: `task:` (what the model does),
 * the dataset's ground truth for task-eval (dataset.labels, label_maps,
 * clean, classes), `metric:` (task-eval's options) and the thresholds on
 * task metrics (thresholds.max_metric_drop / min_metric / max_metric, per
 * metric). Detection keeps its own keys (detection:, max_map_drop,
 * min_map). docs/config.md "Tasks" has the schema. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model.h"

typedef struct task_info {
    const char *name;
    const char *gt;                 /* the dataset key it needs */
    const char *metrics[4];         /* task-eval's metric names, the headline first */
    int higher[4];                  /* 1: higher is better */
} task_info_t;

static const task_info_t tasks[] = {
    {"classification", "labels", {"top1", "top5", "top1_flips", NULL}, {1, 1, 0}},
    {"segmentation", "label_maps", {"miou", "aacc", "macc", NULL}, {1, 1, 1}},
    {"matting", "label_maps", {"mae", "mse", "boundary_mae", NULL}, {0, 0, 0}},
    {"restoration", "clean", {"psnr", "ssim", NULL}, {1, 1}},
};
#define N_TASKS (sizeof tasks / sizeof *tasks)

static const char *const gt_keys[4] = {"labels", "label_maps", "clean", "classes"};
static const char *const gt_opts[4] = {"--labels", "--gt-maps", "--clean", "--classes"};

/* metric: keys, the task that takes each, and task-eval's option */
static const struct { const char *key, *task, *opt; int kind; } metric_keys[] = {
    {"ignore_index", "segmentation", "--ignore-index", 'i'},
    {"num_classes", "segmentation", "--num-classes", 'i'},
    {"band_radius", "matting", "--band-radius", 'i'},
    {"convention", "restoration", "--convention", 's'},
    {"crop_border", "restoration", "--crop-border", 'i'},
    {"y_channel", "restoration", "--y-channel", 'b'},
    {"round", "restoration", "--no-round", 'r'},
    {"output_max", "restoration", "--output-max", 'i'},
};

static void add_arg(model_cfg_t *m, const char *a)
{
    if (m->n_task_args < 2 * PLAN_MAX) m->task_args[m->n_task_args++] = xstrdup(a);
}

static int load_gt(model_cfg_t *m, const task_info_t *t, perr_t *e)
{
    for (int i = 0; i < 4; i++) {
        char key[64];
        const char *v = NULL;
        snprintf(key, sizeof key, "dataset.%s", gt_keys[i]);
        if (config_str(m->cfg, key, &v, e) < 0) return -1;
        if (!v) continue;
        if (!safe_path(v))
            return BAD(e, "%s: %s: '%s' is not allowed (paths use only letters, digits and . _ - / +, without '..')", m->path,
                       key, v);
        int for_task = t && (!strcmp(t->gt, gt_keys[i]) ||
                             (i == 3 && (!strcmp(t->name, "classification") || !strcmp(t->name, "segmentation"))));
        if (!for_task) return BAD(e, "%s: %s: not a ground truth of task %s", m->path, key, t ? t->name : "(none)");
        m->task_gt[i] = xstrdup(v);
        add_arg(m, gt_opts[i]);
        add_arg(m, v);
    }
    for (int i = 0; t && i < 3; i++)
        if (!strcmp(t->gt, gt_keys[i]) && !m->task_gt[i])
            return BAD(e, "%s: task %s needs dataset.%s (its ground truth)", m->path, t->name, gt_keys[i]);
    return 0;
}

static int load_metric_opts(model_cfg_t *m, const task_info_t *t, perr_t *e)
{
    const char *out = NULL;
    if (config_str(m->cfg, "metric.output", &out, e) < 0) return -1;
    if (out && !t)
        return BAD(e, "%s: metric.output: needs a task (classification, segmentation, matting or restoration)", m->path);
    if (out) { add_arg(m, "--output"); add_arg(m, out); }
    for (size_t i = 0; i < sizeof metric_keys / sizeof *metric_keys; i++) {
        char key[64], num[32];
        snprintf(key, sizeof key, "metric.%s", metric_keys[i].key);
        if (!config_get(m->cfg, key)) continue;
        if (!t || strcmp(t->name, metric_keys[i].task))
            return BAD(e, "%s: %s: an option of task %s", m->path, key, metric_keys[i].task);
        int64_t iv;
        int bv;
        const char *sv;
        switch (metric_keys[i].kind) {
        case 'i':
            if (config_int(m->cfg, key, &iv, e) < 0) return -1;
            if (iv < 0 || iv > 100000) return BAD(e, "%s: %s: expected a number in [0, 100000]", m->path, key);
            if (!strcmp(metric_keys[i].key, "output_max") && (iv < 1 || iv > 65535))
                return BAD(e, "%s: %s: expected a number in [1, 65535] (1 for [0, 1] outputs, 255 for pixel values)",
                           m->path, key);
            snprintf(num, sizeof num, "%lld", (long long)iv);
            add_arg(m, metric_keys[i].opt);
            add_arg(m, num);
            break;
        case 's':
            if (config_str(m->cfg, key, &sv, e) < 0) return -1;
            if (strcmp(sv, "skimage") && strcmp(sv, "basicsr"))
                return BAD(e, "%s: %s: '%s' is not skimage or basicsr", m->path, key, sv);
            add_arg(m, metric_keys[i].opt);
            add_arg(m, sv);
            break;
        default:   /* 'b': a flag when true; 'r': a flag when false */
            if (config_bool(m->cfg, key, &bv, e) < 0) return -1;
            if (bv == (metric_keys[i].kind == 'b')) add_arg(m, metric_keys[i].opt);
        }
    }
    return 0;
}

/* thresholds.max_metric_drop / min_metric / max_metric: {metric: number}. */
static int load_bounds(model_cfg_t *m, const task_info_t *t, const char *key, int want_higher, struct metric_bound *b,
                       int *n, perr_t *e)
{
    const cfg_node_t *mp = config_get(m->cfg, key);
    char where[256];
    if (!mp) return 0;
    if (!t) return BAD(e, "%s: %s: needs a task other than detection (detection: max_map_drop, min_map)", m->path, key);
    if (mp->kind != CFG_MAP || mp->n > PLAN_MAX)
        return BAD(e, "%s: %s: expected {metric: number}", cfg_node_where(mp, where, sizeof where), key);
    for (int64_t i = 0; i < mp->n; i++) {
        int k = -1;
        for (int j = 0; t->metrics[j]; j++)
            if (!strcmp(t->metrics[j], mp->keys[i])) k = j;
        cfg_node_where(mp->items[i], where, sizeof where);
        if (k < 0) return BAD(e, "%s: %s.%s: not a metric of task %s", where, key, mp->keys[i], t->name);
        if (want_higher >= 0 && t->higher[k] != want_higher)
            return BAD(e, "%s: %s.%s: %s is better %s: use thresholds.%s", where, key, mp->keys[i], mp->keys[i],
                       t->higher[k] ? "higher" : "lower", t->higher[k] ? "min_metric" : "max_metric");
        double v;
        if (cfg_node_double(mp->items[i], mp->keys[i], &v, e) < 0) return -1;
        if (!(v >= 0 && v < 1e9)) return BAD(e, "%s: %s.%s: expected a number >= 0", where, key, mp->keys[i]);
        b[*n].metric = xstrdup(mp->keys[i]);
        b[(*n)++].v = v;
    }
    return 0;
}

int model_load_task(model_cfg_t *m, perr_t *e)
{
    const char *task = m->detection ? "detection" : NULL;
    if (config_str(m->cfg, "task", &task, e) < 0) return -1;
    const task_info_t *t = NULL;
    if (task && strcmp(task, "detection")) {
        for (size_t i = 0; i < N_TASKS; i++)
            if (!strcmp(tasks[i].name, task)) t = &tasks[i];
        if (!t)
            return BAD(e, "%s: task: '%s' is not detection, classification, segmentation, matting or restoration", m->path, task);
        if (m->detection) return BAD(e, "%s: detection: is for task detection, not %s", m->path, task);
    } else if (task && !m->detection) {
        return BAD(e, "%s: task: detection needs a detection: section (map-eval's decoding)", m->path);
    }
    m->task = t ? t->name : task ? "detection" : NULL;
    m->task_metric = t ? t->metrics[0] : task ? "ap" : NULL;
    if (t) { add_arg(m, "--task"); add_arg(m, t->name); }
    if (load_gt(m, t, e) || load_metric_opts(m, t, e)) return -1;
    if (load_bounds(m, t, "thresholds.max_metric_drop", -1, m->drops, &m->n_drops, e) ||
        load_bounds(m, t, "thresholds.min_metric", 1, m->mins, &m->n_mins, e) ||
        load_bounds(m, t, "thresholds.max_metric", 0, m->maxs, &m->n_maxs, e))
        return -1;
    return 0;
}

void model_free_task(model_cfg_t *m)
{
    for (int i = 0; i < 4; i++) free(m->task_gt[i]);
    for (int i = 0; i < m->n_task_args; i++) free(m->task_args[i]);
    for (int i = 0; i < m->n_drops; i++) free(m->drops[i].metric);
    for (int i = 0; i < m->n_mins; i++) free(m->mins[i].metric);
    for (int i = 0; i < m->n_maxs; i++) free(m->maxs[i].metric);
}
