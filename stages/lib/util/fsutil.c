/* fsutil.c — atomic writes, whole-file reads, reversible names, folder lists. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util/fsutil.h"

int atomic_open(atomic_file_t *af, const char *path, perr_t *e)
{
    memset(af, 0, sizeof *af);
    af->path = xstrdup(path);
    size_t n = strlen(path) + 32;
    af->tmp = xmalloc(n);
    snprintf(af->tmp, n, "%s.tmp.%ld", path, (long)getpid());
    staging_sweep(path);
    af->f = fopen(af->tmp, "wb");
    if (!af->f) {
        BAD(e, "%s: cannot create: %s", path, strerror(errno));
        free(af->path); free(af->tmp);
        af->path = af->tmp = NULL;
        return -1;
    }
    staging_hold(af->tmp);
    return 0;
}

int write_error(perr_t *e, const char *path, int err)
{
    return BAD(e, "%s: cannot write: %s", path, strerror(err ? err : EIO));
}

int atomic_commit(atomic_file_t *af, perr_t *e)
{
    /* the system's reason: a failed fwrite left it in errno (ENOSPC, EROFS,
     * ...), or the flush or close of what was buffered reports it now */
    int err = ferror(af->f) ? errno : 0;
    if (fflush(af->f) != 0 && !err) err = errno ? errno : EIO;
    if (fclose(af->f) != 0 && !err) err = errno ? errno : EIO;
    af->f = NULL;
    if (!err && rename(af->tmp, af->path) != 0) err = errno;
    staging_release(af->tmp);
    if (err) {
        write_error(e, af->path, err);
        unlink(af->tmp);
        free(af->path); free(af->tmp);
        return -1;
    }
    free(af->path); free(af->tmp);
    af->path = af->tmp = NULL;
    return 0;
}

void atomic_abort(atomic_file_t *af)
{
    if (af->f) fclose(af->f);
    if (af->tmp) { unlink(af->tmp); staging_release(af->tmp); }
    free(af->path); free(af->tmp);
    memset(af, 0, sizeof *af);
}

int atomic_write(const char *path, const void *data, size_t n, perr_t *e)
{
    atomic_file_t af;
    if (atomic_open(&af, path, e)) return -1;
    if (n && fwrite(data, 1, n, af.f) != n) {
        int err = errno;
        atomic_abort(&af);
        return write_error(e, path, err);
    }
    return atomic_commit(&af, e);
}

int write_if_changed(const char *path, const char *text, perr_t *e)
{
    char *old;
    size_t n;
    perr_t ignore = {0};
    if (!read_file(path, &old, &n, &ignore)) {
        int same = n == strlen(text) && !memcmp(old, text, n);
        free(old);
        if (same) return 0;
    }
    return atomic_write(path, text, strlen(text), e);
}

int read_file(const char *path, char **out, size_t *n, perr_t *e)
{
    FILE *f = fopen(path, "rb");
    if (!f) return BAD(e, "%s: cannot open: %s", path, strerror(errno));
    /* a regular file's size is known: one buffer that fits it (and the
     * terminator, and room for the read that sees the end) rather than
     * 64 KiB for every small config, or doubling copies of a 48 MB COCO
     * file; a pipe (or a /proc file, size 0) grows from 64 KiB */
    struct stat st;
    size_t cap = 1 << 16, len = 0;
    if (!fstat(fileno(f), &st) && S_ISREG(st.st_mode) && st.st_size > 0 && (uint64_t)st.st_size < SIZE_MAX / 2)
        cap = (size_t)st.st_size + 2;
    char *buf = xmalloc(cap);
    for (;;) {
        if (len + 1 >= cap) buf = xrealloc(buf, cap *= 2);
        size_t r = fread(buf + len, 1, cap - len - 1, f);
        len += r;
        if (r == 0) break;
    }
    int err = ferror(f);
    fclose(f);
    if (err) {
        free(buf);
        return BAD(e, "%s: read error", path);
    }
    buf[len] = 0;
    *out = buf;
    if (n) *n = len;
    return 0;
}

/* A mapped file that shrinks under the reader (another process truncating
 * or rewriting it in place) turns the next read of a lost page into
 * SIGBUS. That must end as bad input, not a crash: the handler names the
 * file whose view holds the faulting address and exits 2 (write and _exit
 * only: async-signal-safe). Outputs are written atomically, so nothing
 * partial is left. */
enum { VIEW_SLOTS = 8 };
static struct { const char *volatile base; size_t len; char path[480]; } view_slots[VIEW_SLOTS];
static pthread_mutex_t view_lock = PTHREAD_MUTEX_INITIALIZER;

static void write_str(const char *s)
{
    ssize_t r = write(2, s, strlen(s));
    (void)r;
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
    (void)sig, (void)uc;
    const char *a = si->si_addr, *path = "a mapped input file";
    for (int i = 0; i < VIEW_SLOTS; i++)
        if (view_slots[i].base && a >= view_slots[i].base && a < view_slots[i].base + view_slots[i].len)
            path = view_slots[i].path;
    write_str(path);
    write_str(": the file changed size while it was being read (truncated or rewritten by another process)\n");
    _exit(EXIT_BADINPUT);
}

static void track_view(const file_view_t *v, const char *path)
{
    static int installed;
    pthread_mutex_lock(&view_lock);
    if (!installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sigbus;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGBUS, &sa, NULL);
        installed = 1;
    }
    for (int i = 0; i < VIEW_SLOTS; i++)
        if (!view_slots[i].base) {
            snprintf(view_slots[i].path, sizeof view_slots[i].path, "%s", path);
            view_slots[i].len = v->len;
            view_slots[i].base = v->data;
            break;
        }
    pthread_mutex_unlock(&view_lock);
}

static void untrack_view(const file_view_t *v)
{
    pthread_mutex_lock(&view_lock);
    for (int i = 0; i < VIEW_SLOTS; i++)
        if (view_slots[i].base == v->data) view_slots[i].base = NULL;
    pthread_mutex_unlock(&view_lock);
}

int view_file(const char *path, file_view_t *v, perr_t *e)
{
    memset(v, 0, sizeof *v);
    int fd = open(path, O_RDONLY);
    struct stat st;
    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
        void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            close(fd);
            v->data = p;
            v->len = (size_t)st.st_size;
            v->mapped = 1;
            track_view(v, path);
            return 0;
        }
    }
    if (fd >= 0) close(fd);
    /* not mappable (a pipe, an empty file, an error): read_file decides */
    char *buf;
    if (read_file(path, &buf, &v->len, e)) return -1;
    v->data = buf;
    return 0;
}

void unview_file(file_view_t *v)
{
    if (v->mapped) {
        untrack_view(v);
        munmap((void *)v->data, v->len);
    }
    else free((void *)v->data);
    memset(v, 0, sizeof *v);
}

int mkdir_p(const char *path, perr_t *e)
{
    char *p = xstrdup(path);
    for (char *s = p + 1; ; s++) {
        if (*s == '/' || *s == 0) {
            char c = *s;
            *s = 0;
            if (mkdir(p, 0777) != 0 && errno != EEXIST) {
                int er = errno;
                free(p);
                return BAD(e, "%s: cannot create folder: %s", path, strerror(er));
            }
            *s = c;
            if (!c) break;
        }
    }
    free(p);
    if (!is_dir(path)) return BAD(e, "%s: not a folder", path);
    return 0;
}

int is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int file_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

char *path_join(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    char *p = xmalloc(la + lb + 2);
    memcpy(p, a, la);
    size_t k = la;
    if (la && a[la - 1] != '/') p[k++] = '/';
    memcpy(p + k, b, lb + 1);
    return p;
}

static int is_plain(char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == '-';
}

char *name_encode(const char *name)
{
    size_t n = strlen(name);
    char *out = xmalloc(3 * n + 1), *o = out;
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (is_plain((char)c) && !(i == 0 && c == '.')) {
            *o++ = (char)c;
        } else {
            *o++ = '%';
            *o++ = hex[c >> 4];
            *o++ = hex[c & 15];
        }
    }
    *o = 0;
    return out;
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

char *name_decode(const char *file)
{
    size_t n = strlen(file);
    char *out = xmalloc(n + 1), *o = out;
    for (size_t i = 0; i < n; i++) {
        if (file[i] == '%') {
            if (i + 2 >= n) { free(out); return NULL; }
            int h = hexval(file[i + 1]);
            int l = h < 0 ? -1 : hexval(file[i + 2]);
            if (h < 0 || l < 0) { free(out); return NULL; }
            *o++ = (char)(h * 16 + l);
            i += 2;
        } else {
            *o++ = file[i];
        }
    }
    *o = 0;
    return out;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int list_dir(const char *path, char ***names, perr_t *e)
{
    DIR *d = opendir(path);
    if (!d) return BAD(e, "%s: cannot open folder: %s", path, strerror(errno));
    int n = 0, cap = 16;
    char **v = xmalloc(cap * sizeof *v);
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        if (n == cap) v = xrealloc(v, (cap *= 2) * sizeof *v);
        v[n++] = xstrdup(de->d_name);
    }
    closedir(d);
    qsort(v, n, sizeof *v, cmp_str);
    *names = v;
    return n;
}

void free_list(char **names, int n)
{
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
}
