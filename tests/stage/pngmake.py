"""pngmake.py — a small independent PNG encoder for the preprocess tests.

cv2 and PIL cannot write every PNG flavour (Adam7 interlacing, 2- and 4-bit
gray, 16-bit gray+alpha, tRNS on RGB), so the tests build files here from the
PNG specification: any colour type and bit depth, PLTE/tRNS, Adam7, and each
of the five row filters (rotating, so the decoder's unfiltering is exercised).
"""
import struct
import zlib

import numpy as np

ADAM7 = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}


def chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def pack_rows(a, depth):
    """a: (h, w, c) integer array -> list of raw row bytes at the bit depth."""
    h, w, c = a.shape
    rows = []
    for y in range(h):
        v = a[y].reshape(-1).astype(np.uint32)
        if depth == 16:
            rows.append(v.astype(">u2").tobytes())
        elif depth == 8:
            rows.append(v.astype(np.uint8).tobytes())
        else:
            per = 8 // depth
            n = (len(v) + per - 1) // per
            out = bytearray(n)
            for i, s in enumerate(v):
                out[i // per] |= int(s) << (8 - depth * (i % per + 1))
            rows.append(bytes(out))
    return rows


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def filter_rows(rows, bpp, start=0):
    out = bytearray()
    prev = bytes(len(rows[0])) if rows else b""
    for i, r in enumerate(rows):
        ft = (i + start) % 5
        f = bytearray(len(r))
        for x in range(len(r)):
            a = r[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            pred = [0, a, b, (a + b) // 2, paeth(a, b, c)][ft]
            f[x] = (r[x] - pred) & 0xFF
        out += bytes([ft]) + f
        prev = r
    return bytes(out)


def encode(a, color_type, depth, palette=None, trns=None, interlace=False):
    """a: (h, w) or (h, w, c) samples (palette indices for type 3)."""
    a = np.asarray(a)
    if a.ndim == 2:
        a = a[:, :, None]
    h, w, c = a.shape
    assert c == CHANNELS[color_type]
    bpp = max(1, c * depth // 8)
    data = b""
    if not interlace:
        data = filter_rows(pack_rows(a, depth), bpp)
    else:
        for k, (x0, y0, dx, dy) in enumerate(ADAM7):
            sub = a[y0::dy, x0::dx]
            if sub.shape[0] and sub.shape[1]:
                data += filter_rows(pack_rows(sub, depth), bpp, k)
    out = b"\x89PNG\r\n\x1a\n"
    out += chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, color_type, 0, 0, 1 if interlace else 0))
    if palette is not None:
        out += chunk(b"PLTE", bytes(np.asarray(palette, np.uint8).reshape(-1)))
    if trns is not None:
        out += chunk(b"tRNS", trns)
    out += chunk(b"IDAT", zlib.compress(data, 6))
    out += chunk(b"IEND", b"")
    return out
