/* dirswap.c — publishing a folder atomically: a stage fills DIR.tmp.PID and
 * swaps it into place, so a folder that exists is always complete. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/fsutil.h"

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
