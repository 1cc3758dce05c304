/* namesel.h — which tensors a run judges, by name: the `outputs:` globs of
 * a model config (what the application reads) less the `compare.ignore`
 * ones. compare counts only those in its verdict; infer keeps only those for
 * every sample (the others for the sample the report shows). */
#ifndef PARITY_UTIL_NAMESEL_H
#define PARITY_UTIL_NAMESEL_H

typedef struct name_sel {
    char **judge, **ignore;   /* globs (fnmatch) or exact names */
    int n_judge, n_ignore;
} name_sel_t;

/* One name against one pattern: the exact name first (ONNX names may hold
 * glob characters such as '['), else fnmatch. */
int name_sel_match(const char *pattern, const char *name);
void name_sel_add(name_sel_t *s, int ignore, const char *glob);
/* Judged: matches a judge pattern (any name, when none is given) and no ignore pattern. */
int name_sel_judged(const name_sel_t *s, const char *name);
/* Whether the selection leaves some name out (it is not "every tensor"). */
int name_sel_narrows(const name_sel_t *s);
void name_sel_free(name_sel_t *s);

#endif
