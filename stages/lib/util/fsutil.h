/* fsutil.h — atomic output files, reading whole files, reversible tensor-name
 * file names. Every stage writes through here so an interrupted run never
 * leaves a file that looks complete. */
#ifndef PARITY_FSUTIL_H
#define PARITY_FSUTIL_H

#include <stddef.h>
#include <stdio.h>
#include "util/err.h"

/* An output file being written: data goes to a temporary file in the same
 * folder; atomic_commit() fsyncs and renames it into place, atomic_abort()
 * removes it. */
typedef struct atomic_file {
    FILE *f;
    char *path;
    char *tmp;
} atomic_file_t;

int atomic_open(atomic_file_t *af, const char *path, perr_t *e);
int atomic_commit(atomic_file_t *af, perr_t *e);
/* "PATH: cannot write: <strerror(err)>", exit 2 (a full disk, a read-only
 * or forbidden folder is the environment's, not a bug); err 0 reads EIO. */
int write_error(perr_t *e, const char *path, int err);
void atomic_abort(atomic_file_t *af);
/* Writes a whole buffer atomically. */
int atomic_write(const char *path, const void *data, size_t n, perr_t *e);
/* Writes text atomically unless the file already holds exactly it, so make
 * sees a new timestamp only when the content changed. */
int write_if_changed(const char *path, const char *text, perr_t *e);

/* Reads a whole file; *out is NUL-terminated (not counted in *n). */
int read_file(const char *path, char **out, size_t *n, perr_t *e);
/* A read-only view of a whole file: mapped when it is a non-empty regular
 * file (no copy, pages come in as they are read, on whichever thread reads
 * them), else read_file's copy. Not NUL-terminated when mapped. */
typedef struct file_view {
    const char *data;
    size_t len;
    int mapped;
} file_view_t;
int view_file(const char *path, file_view_t *v, perr_t *e);
void unview_file(file_view_t *v);
int mkdir_p(const char *path, perr_t *e);
int is_dir(const char *path);
int file_exists(const char *path);
char *path_join(const char *a, const char *b);   /* malloc'd */

/* Tensor names contain '/' and ':'; file names keep [A-Za-z0-9._-] and
 * percent-encode every other byte (and a leading '.'), so the mapping is
 * reversible. Both return malloc'd strings; decode returns NULL on a bad escape. */
char *name_encode(const char *name);
char *name_decode(const char *file);

/* Sorted list of directory entries (not . or ..); returns count or -1. */
int list_dir(const char *path, char ***names, perr_t *e);
void free_list(char **names, int n);

/* Folder outputs: fill the folder returned by dir_stage_begin (DIR.tmp.PID),
 * then dir_stage_commit swaps it into place (frees tmp). */
char *dir_stage_begin(const char *final, perr_t *e);
int dir_stage_commit(char *tmp, const char *final, perr_t *e);
/* dir_stage_commit, unless FINAL already holds the same tree (the same
 * names, the same bytes): then tmp is removed and FINAL keeps its times,
 * so make sees no change (write_if_changed's rule, for folders). */
int dir_stage_commit_if_changed(char *tmp, const char *final, perr_t *e);
int remove_tree(const char *path);
/* Removes FINAL.tmp.PID and FINAL.old.PID left by processes that no longer
 * run (a killed `make validate`); atomic_open and dir_stage_begin call it, so
 * the rerun of an interrupted step cleans up after it. */
void staging_sweep(const char *final);
/* This process stages TMP (a file or folder): SIGTERM, SIGINT or SIGHUP
 * removes it before the process ends (the handlers are installed on the
 * first call, where the signal is not ignored); staging_release forgets it
 * once it is committed or removed. atomic_* and dir_stage_* call them. */
void staging_hold(const char *tmp);
void staging_release(const char *tmp);

#endif
