"""names.py — tensor name <-> file name, as name_encode()/name_decode() in
stages/lib/util/fsutil.c: bytes of the UTF-8 name outside [A-Za-z0-9._-],
and a leading '.', become %XX (upper-case hex). Shared by the Python side of
the backends (trtexec_io.py) and their tests."""
import re

PLAIN = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-")


def name_encode(name):
    out = []
    for i, c in enumerate(name.encode("utf-8")):
        out.append(chr(c) if c in PLAIN and not (i == 0 and c == ord(".")) else "%%%02X" % c)
    return "".join(out)


def name_decode(stem):
    """File stem -> tensor name, or None when a %XX escape is malformed."""
    b, i = bytearray(), 0
    while i < len(stem):
        if stem[i] == "%":
            h = stem[i + 1:i + 3]
            if not re.fullmatch(r"[0-9A-Fa-f]{2}", h):
                return None
            b.append(int(h, 16))
            i += 3
        else:
            b += stem[i].encode("utf-8")
            i += 1
    return b.decode("utf-8", "replace")
