"""share_lib.py — helpers of the partial-rerun tests (infer_share.t,
infer_xshare.t): whole output trees compared byte for byte, sample folders
written from arrays."""
import os

from backend_lib import write_set


def same_tree(a, b):
    """Every file under a and b, byte for byte (names included)."""
    fa, fb = [], []
    for top, out in ((a, fa), (b, fb)):
        for d, _, files in os.walk(top):
            out.extend(os.path.relpath(os.path.join(d, f), top) for f in files)
    if sorted(fa) != sorted(fb) or not fa:
        return False
    return all(open(os.path.join(a, f), "rb").read() == open(os.path.join(b, f), "rb").read() for f in fa)


def sample_sets(base, samples):
    """samples: {name: {tensor: array}} as a folder of sample folders."""
    for name, feed in samples.items():
        write_set(os.path.join(base, name), feed)
    return base
