"""share_lib.py — helpers of the partial-rerun tests (infer_share.t,
infer_xshare.t): whole output trees compared byte for byte, sample folders
written from arrays, the RT-DETR fixture's inputs."""
import os

import numpy as np

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


def fixture_inputs(fx, rng):
    """The rtdetr-tiny fixture's image and orig_target_sizes, and a second
    image near the first (rng draws its noise)."""
    img = np.load(os.path.join(fx, "input", "images.npy"))
    sizes = np.load(os.path.join(fx, "input", "orig_target_sizes.npy"))
    img2 = (img + rng.uniform(-0.05, 0.05, img.shape)).clip(0, 1).astype(np.float32)
    return img, sizes, img2
