"""compare_util.py — helpers shared by the compare stage tests: parity's
tensor-set folders written with numpy, and JSON numbers read back."""
import os

import numpy as np


def encode(name):
    """parity's reversible tensor file names: [A-Za-z0-9._-] kept (a leading
    '.' excepted), every other byte %XX."""
    out = []
    for i, c in enumerate(name.encode()):
        ch = chr(c)
        plain = ch.isascii() and (ch.isalnum() or ch in "._-") and not (i == 0 and ch == ".")
        out.append(ch if plain else "%%%02X" % c)
    return "".join(out)


def save_set(d, tensors):
    """A tensor set: one .npy per tensor."""
    os.makedirs(d, exist_ok=True)
    for name, arr in tensors.items():
        np.save(os.path.join(d, encode(name) + ".npy"), arr)


def num(v):
    """compare's JSON writes non-finite numbers as "nan", "inf", "-inf"."""
    return float(v) if not isinstance(v, str) else {"nan": np.nan, "inf": np.inf, "-inf": -np.inf}[v]
