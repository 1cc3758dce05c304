/* view_file.c — checks util/fsutil.c's file views: a regular file is mapped
 * and reads back its bytes; a file truncated under its mapping (another
 * process rewriting it in place) ends the reader with one line naming the
 * file and exit 2 when the lost page is read, never a crash by SIGBUS. The
 * truncation runs in a forked child so the exit can be observed. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tap.h"
#include "util/fsutil.h"

enum { BIG = 1 << 20 };

/* Writes BIG bytes of 'x' to path. */
static int write_big(const char *path)
{
    char *buf = malloc(BIG);
    memset(buf, 'x', BIG);
    perr_t e = {0};
    int rc = atomic_write(path, buf, BIG, &e);
    free(buf);
    return rc;
}

/* In a child: map path, truncate it to 0, read its last byte. Returns the
 * child's exit status; its stderr goes to errpath. */
static int truncate_under_view(const char *path, const char *errpath)
{
    pid_t pid = fork();
    if (pid == 0) {
        int fd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(fd, 2);
        file_view_t v;
        perr_t e = {0};
        if (view_file(path, &v, &e) || !v.mapped) _exit(10);
        if (truncate(path, 0)) _exit(11);
        volatile char c = v.data[v.len - 1];
        (void)c;
        _exit(0);   /* not reached: the read faults */
    }
    int st = 0;
    waitpid(pid, &st, 0);
    return st;
}

int main(void)
{
    char dir[] = "/tmp/parity-view-XXXXXX";
    if (!mkdtemp(dir)) { diag("mkdtemp: %s", strerror(errno)); return 1; }
    char *path = path_join(dir, "results.json"), *errpath = path_join(dir, "stderr");
    ok(write_big(path) == 0, "a 1 MiB file written");

    file_view_t v;
    perr_t e = {0};
    ok(view_file(path, &v, &e) == 0 && v.mapped && v.len == BIG && v.data[0] == 'x' && v.data[BIG - 1] == 'x',
       "a regular file is mapped whole");
    unview_file(&v);

    int st = truncate_under_view(path, errpath);
    char *err = NULL;
    size_t n;
    read_file(errpath, &err, &n, &e);
    ok(WIFEXITED(st) && WEXITSTATUS(st) == 2, "a file truncated under its view: exit 2 (status %#x)", st);
    ok(err && strstr(err, path) && strstr(err, "changed size") && strchr(err, '\n') == err + n - 1,
       "one line naming the file: %s", err ? err : "(none)");
    free(err);
    unlink(path);
    unlink(errpath);
    rmdir(dir);
    free(path);
    free(errpath);
    return done_testing();
}
