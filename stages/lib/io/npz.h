/* npz.h — NumPy .npz archives: zip files whose members are .npy arrays
 * (numpy.savez stores them, numpy.savez_compressed deflates them). The
 * archive's directory is read once; each member is read and inflated only
 * when asked for, so a large archive is never held in memory whole. Zip64
 * (which numpy always writes) is understood; encryption and other
 * compression methods are refused. The archive may also be a buffer in
 * memory (Polygraphy's legacy JSON embeds .npz images). */
#ifndef PARITY_NPZ_H
#define PARITY_NPZ_H

#include <stdint.h>
#include <stddef.h>
#include "tensor/tensor.h"

typedef struct npz_member {
    char *name;               /* member name without ".npy" (numpy's key) */
    uint64_t local_off;       /* offset of the local header */
    uint64_t csize, usize;
    uint32_t crc;
    int method;               /* 0 stored, 8 deflated */
} npz_member_t;

typedef struct npz {
    char *what;               /* path, or a description of the buffer */
    int fd;                   /* -1 for a buffer */
    const uint8_t *mem;
    uint64_t size;
    int n;
    npz_member_t *m;
} npz_t;

int npz_open(const char *path, npz_t *z, perr_t *e);
/* Opens an archive held in memory; buf must outlive z. */
int npz_open_mem(const void *buf, size_t n, const char *what, npz_t *z, perr_t *e);
/* Reads member i into t (its own data). */
int npz_load(const npz_t *z, int i, tensor_t *t, perr_t *e);
void npz_close(npz_t *z);
/* Whether a file starts like a zip archive. */
int npz_sniff(const void *head, size_t n);

#endif
