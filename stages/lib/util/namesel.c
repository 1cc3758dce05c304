/* namesel.c — judged tensor names (namesel.h), shared by compare's verdict
 * and infer's choice of what to keep, so the two never disagree. */
#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>
#include "util/namesel.h"
#include "util/err.h"

int name_sel_match(const char *pattern, const char *name)
{
    return !strcmp(pattern, name) || fnmatch(pattern, name, 0) == 0;
}

void name_sel_add(name_sel_t *s, int ignore, const char *glob)
{
    char ***v = ignore ? &s->ignore : &s->judge;
    int *n = ignore ? &s->n_ignore : &s->n_judge;
    *v = xrealloc(*v, (size_t)(*n + 1) * sizeof **v);
    (*v)[(*n)++] = xstrdup(glob);
}

int name_sel_judged(const name_sel_t *s, const char *name)
{
    int judged = s->n_judge == 0;
    for (int i = 0; i < s->n_judge && !judged; i++) judged = name_sel_match(s->judge[i], name);
    for (int i = 0; i < s->n_ignore && judged; i++) judged = !name_sel_match(s->ignore[i], name);
    return judged;
}

int name_sel_narrows(const name_sel_t *s)
{
    return s->n_judge > 0 || s->n_ignore > 0;
}

void name_sel_free(name_sel_t *s)
{
    for (int i = 0; i < s->n_judge; i++) free(s->judge[i]);
    for (int i = 0; i < s->n_ignore; i++) free(s->ignore[i]);
    free(s->judge);
    free(s->ignore);
    memset(s, 0, sizeof *s);
}
