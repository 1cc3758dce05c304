/* args.c — "@FILE" argument files (see args.h). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include "util/args.h"
#include "util/err.h"

/* The expanded vector lives for the whole run (getopt keeps pointers into it),
 * held here from the start so that it is never a leak, even on an error exit. */
static char **expanded;

static void append(char ***v, int *n, int *cap, char *s)
{
    if (*n + 2 > *cap) expanded = *v = xrealloc(*v, (size_t)(*cap = *cap * 2 + 8) * sizeof **v);
    (*v)[(*n)++] = s;
    (*v)[*n] = NULL;
}

static void die_file(const char *prog, json_t *doc, perr_t *e)
{
    json_decref(doc);
    perr_die(prog, e);
}

static void append_file(const char *prog, const char *path, char ***v, int *n, int *cap)
{
    json_error_t je;
    json_t *a = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    perr_t e = {0};
    if (!a) {
        BAD(&e, "%s: argument file: %s", path, je.text);
        perr_die(prog, &e);
    }
    if (!json_is_array(a)) {
        BAD(&e, "%s: argument file: expected a JSON array of strings", path);
        die_file(prog, a, &e);
    }
    for (size_t i = 0; i < json_array_size(a); i++) {
        json_t *s = json_array_get(a, i);
        if (!json_is_string(s) || strlen(json_string_value(s)) != json_string_length(s)) {
            BAD(&e, "%s: argument file: item %zu is not a string without NUL bytes", path, i);
            die_file(prog, a, &e);
        }
        append(v, n, cap, xstrdup(json_string_value(s)));
    }
    json_decref(a);
}

void args_expand(const char *prog, int *argc, char ***argv)
{
    int n = 0, cap = 0, any = 0;
    char **v = NULL;
    for (int i = 0; i < *argc; i++) {
        char *a = (*argv)[i];
        if (i > 0 && a[0] == '@' && a[1]) {
            append_file(prog, a + 1, &v, &n, &cap);
            any = 1;
        } else {
            append(&v, &n, &cap, a);
        }
    }
    if (!any) { free(v); expanded = NULL; return; }
    *argc = n;
    *argv = expanded;
}
