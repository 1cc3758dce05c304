/* npz.c — a zip reader just large enough for .npz (npz.h): the end of
 * central directory record (and its Zip64 form), the central directory with
 * Zip64 extra fields, local headers, stored and deflated data (zlib, raw
 * deflate), each member's CRC-32 checked. Every offset and size is checked
 * against the archive before use: a damaged file is one clear error. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include "io/npz.h"
#include "io/npy.h"

#define SIG_LOCAL 0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_EOCD 0x06054b50u
#define SIG_EOCD64 0x06064b50u
#define SIG_LOC64 0x07064b50u

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t le32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }
static uint64_t le64(const uint8_t *p) { return le32(p) | (uint64_t)le32(p + 4) << 32; }

int npz_sniff(const void *head, size_t n)
{
    const uint8_t *h = head;
    return n >= 4 && (le32(h) == SIG_LOCAL || le32(h) == SIG_EOCD);
}

/* Reads len bytes at off; BAD when they are not all inside the archive. */
static int read_at(const npz_t *z, uint64_t off, void *buf, uint64_t len, perr_t *e)
{
    if (off > z->size || len > z->size - off)
        return BAD(e, "%s: zip structure points outside the file (offset %llu, %llu bytes)", z->what,
                   (unsigned long long)off, (unsigned long long)len);
    if (z->mem) {
        memcpy(buf, z->mem + off, len);
        return 0;
    }
    uint8_t *p = buf;
    while (len) {
        ssize_t r = pread(z->fd, p, len > (1u << 30) ? (1u << 30) : len, (off_t)off);
        if (r <= 0) return BAD(e, "%s: read error: %s", z->what, r < 0 ? strerror(errno) : "short read");
        p += r;
        off += (uint64_t)r;
        len -= (uint64_t)r;
    }
    return 0;
}

/* Locates the central directory: EOCD within the last 64 KiB + 22 bytes,
 * then the Zip64 locator and record when the 32-bit fields overflowed. */
static int find_directory(const npz_t *z, uint64_t *cd_off, uint64_t *cd_size, uint64_t *count, perr_t *e)
{
    uint64_t tail = z->size < 65557 ? z->size : 65557;
    if (z->size < 22) return BAD(e, "%s: not a zip archive (too short)", z->what);
    uint8_t *buf = xmalloc(tail);
    if (read_at(z, z->size - tail, buf, tail, e)) { free(buf); return -1; }
    int64_t at = -1;
    for (int64_t i = (int64_t)tail - 22; i >= 0; i--)
        if (le32(buf + i) == SIG_EOCD) { at = i; break; }
    if (at < 0) { free(buf); return BAD(e, "%s: not a zip archive (no end of central directory)", z->what); }
    const uint8_t *r = buf + at;
    if (le16(r + 4) != 0 || le16(r + 6) != 0) { free(buf); return BAD(e, "%s: multi-part zip archives are not supported", z->what); }
    *count = le16(r + 10);
    *cd_size = le32(r + 12);
    *cd_off = le32(r + 16);
    uint64_t eocd_pos = z->size - tail + (uint64_t)at;
    free(buf);
    if (*count == 0xffff || *cd_size == 0xffffffffu || *cd_off == 0xffffffffu) {
        uint8_t loc[20], rec[56];
        if (eocd_pos < 20) return BAD(e, "%s: zip64 end of central directory locator missing", z->what);
        if (read_at(z, eocd_pos - 20, loc, 20, e)) return -1;
        if (le32(loc) != SIG_LOC64) return BAD(e, "%s: zip64 end of central directory locator missing", z->what);
        if (read_at(z, le64(loc + 8), rec, 56, e)) return -1;
        if (le32(rec) != SIG_EOCD64) return BAD(e, "%s: zip64 end of central directory record missing", z->what);
        *count = le64(rec + 32);
        *cd_size = le64(rec + 40);
        *cd_off = le64(rec + 48);
    }
    if (*cd_off > z->size || *cd_size > z->size - *cd_off)
        return BAD(e, "%s: central directory lies outside the file", z->what);
    if (*count > *cd_size / 46) return BAD(e, "%s: central directory is truncated", z->what);
    return 0;
}

/* Applies a Zip64 extra field (id 1): the 64-bit values for exactly the
 * fields that hold 0xffffffff, in the order usize, csize, offset. */
static int apply_zip64(const npz_t *z, const uint8_t *x, uint32_t xlen, npz_member_t *m,
                       int need_u, int need_c, int need_o, perr_t *e)
{
    uint32_t p = 0;
    while (p + 4 <= xlen) {
        uint16_t id = le16(x + p), len = le16(x + p + 2);
        if (p + 4 + len > xlen) break;
        if (id == 1) {
            const uint8_t *f = x + p + 4;
            uint32_t k = 0;
            if (need_u) { if (k + 8 > len) goto bad; m->usize = le64(f + k); k += 8; }
            if (need_c) { if (k + 8 > len) goto bad; m->csize = le64(f + k); k += 8; }
            if (need_o) { if (k + 8 > len) goto bad; m->local_off = le64(f + k); }
            return 0;
        }
        p += 4 + len;
    }
    if (!need_u && !need_c && !need_o) return 0;
bad:
    return BAD(e, "%s: member '%s': zip64 sizes missing", z->what, m->name);
}

static int read_directory(npz_t *z, perr_t *e)
{
    uint64_t cd_off = 0, cd_size = 0, count = 0;
    if (find_directory(z, &cd_off, &cd_size, &count, e)) return -1;
    uint8_t *cd = xmalloc(cd_size ? cd_size : 1);
    if (read_at(z, cd_off, cd, cd_size, e)) { free(cd); return -1; }
    z->m = xcalloc(count ? count : 1, sizeof *z->m);
    uint64_t p = 0;
    int rc = 0;
    for (uint64_t i = 0; i < count && !rc; i++) {
        if (p + 46 > cd_size || le32(cd + p) != SIG_CENTRAL) { rc = BAD(e, "%s: central directory entry %llu is damaged", z->what, (unsigned long long)i); break; }
        const uint8_t *h = cd + p;
        uint16_t flags = le16(h + 8), method = le16(h + 10);
        uint32_t nlen = le16(h + 28), xlen = le16(h + 30), clen = le16(h + 32);
        if (p + 46 + nlen + xlen + clen > cd_size) { rc = BAD(e, "%s: central directory entry %llu is truncated", z->what, (unsigned long long)i); break; }
        char *name = xstrndup((const char *)h + 46, nlen);
        p += 46 + nlen + xlen + clen;
        if (nlen && name[nlen - 1] == '/') { free(name); continue; }   /* a folder entry */
        npz_member_t *m = &z->m[z->n];
        m->name = name;
        m->method = method;
        m->crc = le32(h + 16);
        m->csize = le32(h + 20);
        m->usize = le32(h + 24);
        m->local_off = le32(h + 42);
        z->n++;
        if (flags & 1) rc = BAD(e, "%s: member '%s' is encrypted", z->what, name);
        else if (method != 0 && method != 8)
            rc = BAD(e, "%s: member '%s' uses zip compression method %u (only stored and deflate are supported)", z->what, name, method);
        else rc = apply_zip64(z, h + 46 + nlen, xlen, m, m->usize == 0xffffffffu, m->csize == 0xffffffffu,
                              m->local_off == 0xffffffffu, e);
        if (!rc && m->usize > (uint64_t)TENSOR_MAX_BYTES + 65536)
            rc = BAD(e, "%s: member '%s' is too large (%llu bytes)", z->what, name, (unsigned long long)m->usize);
        size_t l = strlen(name);
        if (l > 4 && !strcmp(name + l - 4, ".npy")) name[l - 4] = 0;
    }
    free(cd);
    return rc;
}

static void init(npz_t *z, const char *what)
{
    memset(z, 0, sizeof *z);
    z->fd = -1;
    z->what = xstrdup(what);
}

int npz_open(const char *path, npz_t *z, perr_t *e)
{
    init(z, path);
    z->fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (z->fd < 0 || fstat(z->fd, &st) != 0) {
        BAD(e, "%s: cannot open: %s", path, strerror(errno));
        npz_close(z);
        return -1;
    }
    z->size = (uint64_t)st.st_size;
    if (read_directory(z, e)) { npz_close(z); return -1; }
    return 0;
}

int npz_open_mem(const void *buf, size_t n, const char *what, npz_t *z, perr_t *e)
{
    init(z, what);
    z->mem = buf;
    z->size = n;
    if (read_directory(z, e)) { npz_close(z); return -1; }
    return 0;
}

static int inflate_member(const npz_t *z, const npz_member_t *m, const uint8_t *src, uint8_t *dst, perr_t *e)
{
    z_stream s;
    memset(&s, 0, sizeof s);
    if (inflateInit2(&s, -15) != Z_OK) return INTERNAL(e, "zlib: inflateInit2 failed");
    uint64_t in_left = m->csize, out_left = m->usize;
    s.next_in = (Bytef *)src;
    s.next_out = dst;
    int zr;
    do {
        /* zlib counts in uInt: feed at most 1 GiB at a time; no progress
         * possible ends the loop with Z_BUF_ERROR */
        if (!s.avail_in && in_left) { s.avail_in = (uInt)(in_left > (1u << 30) ? (1u << 30) : in_left); in_left -= s.avail_in; }
        if (!s.avail_out && out_left) { s.avail_out = (uInt)(out_left > (1u << 30) ? (1u << 30) : out_left); out_left -= s.avail_out; }
        zr = inflate(&s, Z_NO_FLUSH);
    } while (zr == Z_OK);
    uint64_t produced = (uint64_t)s.total_out;
    inflateEnd(&s);
    if (zr != Z_STREAM_END || produced != m->usize)
        return BAD(e, "%s: member '%s': deflate data is damaged", z->what, m->name);
    return 0;
}

int npz_load(const npz_t *z, int i, tensor_t *t, perr_t *e)
{
    const npz_member_t *m = &z->m[i];
    uint8_t lh[30];
    if (read_at(z, m->local_off, lh, 30, e)) return -1;
    if (le32(lh) != SIG_LOCAL) return BAD(e, "%s: member '%s': local header missing", z->what, m->name);
    uint64_t data = m->local_off + 30 + le16(lh + 26) + le16(lh + 28);
    /* sizes are believed only as far as the archive backs them, before
     * anything is allocated: the compressed bytes must lie in the file, and
     * deflate expands at most 1032-fold (RFC 1951: 258 bytes per 2 bits) */
    if (data > z->size || m->csize > z->size - data)
        return BAD(e, "%s: member '%s': data lies outside the file", z->what, m->name);
    if (m->method == 8 ? m->usize > m->csize * 1032 + 64 : m->usize != m->csize)
        return BAD(e, "%s: member '%s': %llu bytes cannot hold %llu %s", z->what, m->name,
                   (unsigned long long)m->csize, (unsigned long long)m->usize,
                   m->method == 8 ? "deflated bytes" : "stored bytes (sizes disagree)");
    uint8_t *c = xmalloc(m->csize ? m->csize : 1);
    if (read_at(z, data, c, m->csize, e)) { free(c); return -1; }
    uint8_t *u = c;
    int rc = 0;
    if (m->method == 8) {
        u = xmalloc(m->usize ? m->usize : 1);
        rc = inflate_member(z, m, c, u, e);
    } else if (m->csize != m->usize) {
        rc = BAD(e, "%s: member '%s': stored sizes disagree", z->what, m->name);
    }
    if (!rc) {
        uLong crc = crc32(0L, Z_NULL, 0);
        for (uint64_t off = 0; off < m->usize; off += 1u << 30) {
            uint64_t len = m->usize - off > (1u << 30) ? (1u << 30) : m->usize - off;
            crc = crc32(crc, u + off, (uInt)len);
        }
        if ((uint32_t)crc != m->crc) rc = BAD(e, "%s: member '%s': CRC mismatch (damaged archive)", z->what, m->name);
    }
    if (!rc) {
        char *what = xmalloc(strlen(z->what) + strlen(m->name) + 8);
        sprintf(what, "%s[%s]", z->what, m->name);
        rc = npy_parse(u, m->usize, what, t, e);
        free(what);
    }
    if (u != c) free(u);
    free(c);
    return rc;
}

void npz_close(npz_t *z)
{
    for (int i = 0; i < z->n; i++) free(z->m[i].name);
    free(z->m);
    free(z->what);
    if (z->fd >= 0) close(z->fd);
    memset(z, 0, sizeof *z);
    z->fd = -1;
}
