/* dirswap.c — publishing a folder atomically: a stage fills DIR.tmp.PID and
 * swaps it into place, so a folder that exists is always complete; and
 * sweeping the staging names (NAME.tmp.PID, NAME.old.PID) that a killed run
 * left behind. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/fsutil.h"

/* The PID of a staging name "NAME.tmp.PID" / "NAME.old.PID" whose NAME is
 * base, or 0 when the name is not one. */
static long staging_pid(const char *entry, const char *base)
{
    size_t lb = strlen(base);
    if (strncmp(entry, base, lb) || (strncmp(entry + lb, ".tmp.", 5) && strncmp(entry + lb, ".old.", 5)))
        return 0;
    const char *d = entry + lb + 5;
    if (!*d || strlen(d) > 9 || strspn(d, "0123456789") != strlen(d)) return 0;
    return strtol(d, NULL, 10);
}

/* A staging name is stale when its process is gone: kill(pid, 0) says ESRCH.
 * A live process (ours, another run's, or one we may not signal) keeps it. */
static int pid_gone(long pid)
{
    return pid > 0 && pid != (long)getpid() && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

/* Each folder is listed once per process: the staging names of dead
 * processes found there are kept, and each is removed when this process
 * stages the same output name (the rerun of the interrupted step), so a
 * folder of thousands of tensors is not listed for each of them. */
typedef struct swept { char *dir; char **stale; int n; } swept_t;
static pthread_mutex_t sweep_mu = PTHREAD_MUTEX_INITIALIZER;
static swept_t *swept;
static int nswept;

static swept_t *swept_dir(const char *dir)
{
    for (int i = 0; i < nswept; i++)
        if (!strcmp(swept[i].dir, dir)) return &swept[i];
    swept = xrealloc(swept, (size_t)(nswept + 1) * sizeof *swept);
    swept_t *s = &swept[nswept++];
    memset(s, 0, sizeof *s);
    s->dir = xstrdup(dir);
    char **names;
    perr_t ignore = {0};
    int n = list_dir(dir, &names, &ignore);
    for (int i = 0; i < n; i++) {
        const char *dot = strrchr(names[i], '.');
        size_t stem = dot && dot - names[i] > 4 ? (size_t)(dot - names[i]) - 4 : 0;
        char *base = xstrndup(names[i], stem);
        if (stem && pid_gone(staging_pid(names[i], base))) {
            s->stale = xrealloc(s->stale, (size_t)(s->n + 1) * sizeof *s->stale);
            s->stale[s->n++] = xstrdup(names[i]);
        }
        free(base);
    }
    if (n >= 0) free_list(names, n);
    return s;
}

void staging_sweep(const char *final)
{
    const char *slash = strrchr(final, '/');
    char *dir = slash ? xstrndup(final, (size_t)(slash - final) + (slash == final)) : xstrdup(".");
    const char *base = slash ? slash + 1 : final;
    if (!*base) { free(dir); return; }
    pthread_mutex_lock(&sweep_mu);
    swept_t *s = swept_dir(dir);
    for (int i = 0; i < s->n; i++) {
        if (!s->stale[i] || !staging_pid(s->stale[i], base)) continue;
        char *p = path_join(dir, s->stale[i]);
        remove_tree(p);
        free(p);
        free(s->stale[i]);
        s->stale[i] = NULL;
    }
    pthread_mutex_unlock(&sweep_mu);
    free(dir);
}

int remove_tree(const char *path)
{
    if (!is_dir(path)) return unlink(path);
    char **names;
    perr_t e = {0};
    int n = list_dir(path, &names, &e);
    if (n < 0) return -1;
    for (int i = 0; i < n; i++) {
        char *p = path_join(path, names[i]);
        remove_tree(p);
        free(p);
    }
    free_list(names, n);
    return rmdir(path);
}

char *dir_stage_begin(const char *final, perr_t *e)
{
    size_t n = strlen(final) + 32;
    char *tmp = xmalloc(n);
    snprintf(tmp, n, "%s.tmp.%ld", final, (long)getpid());
    staging_sweep(final);
    remove_tree(tmp);
    if (mkdir_p(tmp, e)) {
        free(tmp);
        return NULL;
    }
    return tmp;
}

int dir_stage_commit(char *tmp, const char *final, perr_t *e)
{
    size_t n = strlen(final) + 32;
    char *old = xmalloc(n);
    snprintf(old, n, "%s.old.%ld", final, (long)getpid());
    int had = file_exists(final);
    if (had && rename(final, old) != 0) {
        free(old);
        free(tmp);
        return BAD(e, "%s: cannot replace the existing folder", final);
    }
    if (rename(tmp, final) != 0) {
        if (had) rename(old, final);
        free(old);
        free(tmp);
        return BAD(e, "%s: cannot move the finished output into place", final);
    }
    if (had) remove_tree(old);
    free(old);
    free(tmp);
    return 0;
}
