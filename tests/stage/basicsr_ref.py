"""basicsr_ref.py — BasicSR's calculate_psnr / calculate_ssim and tensor2img,
re-implemented here from their published rules (BasicSR is not packaged in
Debian): basicsr/metrics/psnr_ssim.py, metric_util.py (to_y_channel),
utils/color_util.py (bgr2ycbcr) and utils/img_util.py (tensor2img). It is an
independent reference for task-eval's C code, written in numpy and cv2 the
way BasicSR computes (cv2.getGaussianKernel + cv2.filter2D, valid region).
Images here are HWC RGB; BasicSR's are BGR, so the Y weights are applied to
the same colours in the same order (B, G, R) as its np.dot does."""
import cv2
import numpy as np


def tensor2img(chw, min_max=(0, 1)):
    """BasicSR tensor2img: clamp to min_max (float32; default [0, 1]), then
    (t - min) / (max - min) in float32, x 255.0 in float32, round half to
    even, uint8; CHW -> HWC (RGB kept)."""
    t = np.clip(chw.astype(np.float32), min_max[0], min_max[1])
    t = (t - np.float32(min_max[0])) / np.float32(min_max[1] - min_max[0])
    t = t * np.float32(255.0)
    img = np.round(t).astype(np.uint8)
    return np.transpose(img, (1, 2, 0))


def to_y_channel(img):
    """img: HWC uint8. BasicSR: float32 / 255, bgr2ycbcr(y_only) for 3 channels
    (np.dot of float32 with a float64 list: float64), back to float32, x 255 in float32."""
    x = img.astype(np.float32) / 255.
    if x.ndim == 3 and x.shape[2] == 3:
        bgr = x[..., ::-1]
        y = np.dot(bgr, [24.966, 128.553, 65.481]) + 16.0   # float64
        y = (y / 255.).astype(np.float32)                  # _convert_output_type_range(float32)
        x = y[..., None]
    return x * 255.


def _prepare(img, crop_border, test_y_channel):
    if img.ndim == 2:
        img = img[..., None]
    if crop_border != 0:
        img = img[crop_border:-crop_border, crop_border:-crop_border, ...]
    if test_y_channel:
        img = to_y_channel(img)
    return img.astype(np.float64)


def calculate_psnr(img, img2, crop_border=0, test_y_channel=False):
    a = _prepare(img, crop_border, test_y_channel)
    b = _prepare(img2, crop_border, test_y_channel)
    mse = np.mean((a - b) ** 2)
    if mse == 0:
        return float('inf')
    return 10. * np.log10(255. * 255. / mse)


def _ssim(img, img2):
    c1 = (0.01 * 255) ** 2
    c2 = (0.03 * 255) ** 2
    kernel = cv2.getGaussianKernel(11, 1.5)
    window = np.outer(kernel, kernel.transpose())
    mu1 = cv2.filter2D(img, -1, window)[5:-5, 5:-5]
    mu2 = cv2.filter2D(img2, -1, window)[5:-5, 5:-5]
    mu1_sq, mu2_sq, mu1_mu2 = mu1 ** 2, mu2 ** 2, mu1 * mu2
    s1 = cv2.filter2D(img ** 2, -1, window)[5:-5, 5:-5] - mu1_sq
    s2 = cv2.filter2D(img2 ** 2, -1, window)[5:-5, 5:-5] - mu2_sq
    s12 = cv2.filter2D(img * img2, -1, window)[5:-5, 5:-5] - mu1_mu2
    m = ((2 * mu1_mu2 + c1) * (2 * s12 + c2)) / ((mu1_sq + mu2_sq + c1) * (s1 + s2 + c2))
    return m.mean()


def calculate_ssim(img, img2, crop_border=0, test_y_channel=False):
    a = _prepare(img, crop_border, test_y_channel)
    b = _prepare(img2, crop_border, test_y_channel)
    return np.array([_ssim(a[..., i], b[..., i]) for i in range(a.shape[2])]).mean()
