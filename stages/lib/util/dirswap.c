/* dirswap.c — publishing a folder atomically: a stage fills DIR.tmp.PID and
 * swaps it into place, so a folder that exists is always complete (or, where
 * the old folder holds the same tree, is removed and the old one kept with
 * its times, so make sees no change); sweeping
 * the staging names (NAME.tmp.PID, NAME.old.PID) that a killed run left
 * behind; and removing this process's own staging names when SIGTERM,
 * SIGINT or SIGHUP stops it (SIGKILL cannot be caught: the sweep of the
 * rerun removes those). */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
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

/* A process that was killed but not yet reaped by its parent (a zombie)
 * holds its PID and writes nothing more. */
static int pid_zombie(long pid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *paren = strrchr(buf, ')');
    return paren && paren[1] == ' ' && paren[2] == 'Z';
}

/* A staging name is stale when its process is gone: kill(pid, 0) says ESRCH,
 * or it is a zombie. A live process (ours, another run's, or one we may not
 * signal) keeps it. */
static int pid_gone(long pid)
{
    if (pid <= 0 || pid == (long)getpid()) return 0;
    if (kill((pid_t)pid, 0) != 0) return errno == ESRCH;
    return pid_zombie(pid);
}

/* ---- this process's staging names, removed when a signal stops it ----
 * Fixed slots filled by whichever thread stages a name; the handler uses
 * only async-signal-safe calls (open, getdents64, unlinkat). A name that
 * finds no free slot is left to the rerun's sweep. */
#define STAGE_SLOTS 64
static struct { volatile int state; char path[PATH_MAX]; } stage_slot[STAGE_SLOTS];   /* state: 0 free, 1 claimed, 2 set */
static volatile int stage_handlers;

struct linux_dirent64 { unsigned long long d_ino; long long d_off; unsigned short d_reclen; unsigned char d_type; char d_name[]; };

/* Empties the folder open as fd (depth-limited), with signal-safe calls only. */
static void empty_dir_fd(int fd, int depth)
{
    char buf[2048];
    for (int pass = 0; pass < 64; pass++) {
        long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (n <= 0) return;
        for (long off = 0; off < n;) {
            struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
            off += d->d_reclen;
            if (!strcmp(d->d_name, ".") || !strcmp(d->d_name, "..")) continue;
            if (unlinkat(fd, d->d_name, 0) == 0 || depth >= 8) continue;
            int sub = openat(fd, d->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
            if (sub < 0) continue;
            empty_dir_fd(sub, depth + 1);
            close(sub);
            unlinkat(fd, d->d_name, AT_REMOVEDIR);
        }
        lseek(fd, 0, SEEK_SET);
    }
}

static void remove_staged(const char *path)
{
    if (unlink(path) == 0) return;
    int fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
    if (fd < 0) return;
    empty_dir_fd(fd, 0);
    close(fd);
    rmdir(path);
}

static void on_stop_signal(int sig)
{
    for (int i = 0; i < STAGE_SLOTS; i++)
        if (stage_slot[i].state == 2) remove_staged(stage_slot[i].path);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_stop_handlers(void)
{
    static const int sigs[] = {SIGTERM, SIGINT, SIGHUP};
    if (__atomic_exchange_n(&stage_handlers, 1, __ATOMIC_ACQ_REL)) return;
    for (int i = 0; i < 3; i++) {
        struct sigaction old, sa = {0};
        if (sigaction(sigs[i], NULL, &old) || old.sa_handler != SIG_DFL) continue;   /* an ignored signal stays so */
        sa.sa_handler = on_stop_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
}

void staging_hold(const char *tmp)
{
    if (strlen(tmp) >= PATH_MAX) return;
    install_stop_handlers();
    for (int i = 0; i < STAGE_SLOTS; i++) {
        int expect = 0;
        if (!__atomic_compare_exchange_n(&stage_slot[i].state, &expect, 1, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) continue;
        memcpy(stage_slot[i].path, tmp, strlen(tmp) + 1);
        __atomic_store_n(&stage_slot[i].state, 2, __ATOMIC_RELEASE);
        return;
    }
}

void staging_release(const char *tmp)
{
    for (int i = 0; i < STAGE_SLOTS; i++)
        if (__atomic_load_n(&stage_slot[i].state, __ATOMIC_ACQUIRE) == 2 && !strcmp(stage_slot[i].path, tmp)) {
            __atomic_store_n(&stage_slot[i].state, 0, __ATOMIC_RELEASE);
            return;
        }
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
    staging_hold(tmp);
    return tmp;
}

int dir_stage_commit(char *tmp, const char *final, perr_t *e)
{
    staging_release(tmp);
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

/* Whether files a and b hold the same bytes. */
static int file_same(const char *a, const char *b)
{
    file_view_t va, vb;
    perr_t e = {0};
    if (view_file(a, &va, &e)) return 0;
    if (view_file(b, &vb, &e)) {
        unview_file(&va);
        return 0;
    }
    int same = va.len == vb.len && !memcmp(va.data, vb.data, va.len);
    unview_file(&va);
    unview_file(&vb);
    return same;
}

/* Whether a and b are the same tree: the same names throughout, folders
 * where folders are, and the same bytes in each file. */
static int tree_same(const char *a, const char *b)
{
    int da = is_dir(a);
    if (da != is_dir(b)) return 0;
    if (!da) return file_same(a, b);
    char **na, **nb;
    perr_t e = {0};
    int n = list_dir(a, &na, &e), m = n < 0 ? -1 : list_dir(b, &nb, &e);
    if (n < 0 || m < 0) {
        if (n >= 0) free_list(na, n);
        return 0;
    }
    int same = n == m;
    for (int i = 0; same && i < n; i++) {
        same = !strcmp(na[i], nb[i]);
        char *pa = path_join(a, na[i]), *pb = path_join(b, nb[i]);
        same = same && tree_same(pa, pb);
        free(pa);
        free(pb);
    }
    free_list(na, n);
    free_list(nb, m);
    return same;
}

int dir_stage_commit_if_changed(char *tmp, const char *final, perr_t *e)
{
    if (!is_dir(final) || !tree_same(tmp, final)) return dir_stage_commit(tmp, final, e);
    remove_tree(tmp);
    staging_release(tmp);
    free(tmp);
    return 0;
}
