"""The small image algebra the composed augmentation layers (image_aug.py,
color_aug.py) are written in, over symbolic (batch, H, W, C) images as
Keras writes them in keras.ops: elementwise ops with numbers or tensors
(Unary, Binary), where / clip, Keras's value-range map, channel planes
(Slice) and their stack (Concatenate), grayscale, RGB <-> HSV (dm_pix's
formulas, as Keras's JAX backend), a fixed 3x3 depthwise filter with zero
padding (shifted slices summed). layers/ sits below ops.py, so the pieces
are used directly."""

import numbers

from .emath import Binary, Unary
from .merge import Concatenate
from .reshaping import Slice, ZeroPadding2D

GRAY = (0.2989, 0.5870, 0.1140)   # Keras's rgb_to_grayscale (tf.image's)


def _num(v):
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def op(name, a, b):
    """name(a, b) elementwise: a tensor with a number (Unary) or two tensors (Binary, broadcasting)"""
    if _num(b):
        return Unary(name, float(b))(a)
    if _num(a):
        return Unary(name, float(a), left=True)(b)
    return Binary(name)([a, b])


def add(a, b):
    return op("add", a, b)


def sub(a, b):
    return op("subtract", a, b)


def mul(a, b):
    return op("multiply", a, b)


def div(a, b):
    return op("divide", a, b)


def unary(name, x):
    return Unary(name)(x)


def where(c, a, b):
    """jnp.where(c, a, b) for a 0 / 1 condition c: a * c + b * (1 - c), exactly a or b where they are finite"""
    keep = op("subtract", 1.0, c)
    pa = c if _num(a) and a == 1.0 else None if _num(a) and a == 0.0 else mul(a, c)
    pb = keep if _num(b) and b == 1.0 else None if _num(b) and b == 0.0 else mul(b, keep)
    return pa if pb is None else pb if pa is None else add(pa, pb)


def clip(x, lo, hi):
    return op("minimum", op("maximum", x, lo), hi)


def value_range(x, src, dst):
    """Keras's _transform_value_range: (x - src0) / (src1 - src0) * (dst1 - dst0) + dst0 (x where src == dst)"""
    if tuple(src) == tuple(dst):
        return x
    y = div(sub(x, float(src[0])), float(src[1]) - float(src[0]))
    return add(mul(y, float(dst[1]) - float(dst[0])), float(dst[0]))


def plane(x, k):
    """channel k of (H, W, C) images as (H, W, 1)"""
    h, w, _ = x._ps
    return Slice((0, 0, k), (1, 1, 1), (h, w, 1))(x)


def stack(planes):
    """(H, W, 1) planes as the channels of one image"""
    return Concatenate(axis=-1)(list(planes))


def gray(x):
    """Keras's rgb_to_grayscale: 0.2989 R + 0.5870 G + 0.1140 B, one channel"""
    out = None
    for k, wk in enumerate(GRAY):
        term = mul(plane(x, k), wk)
        out = term if out is None else add(out, term)
    return out


def rgb_to_hsv(x):
    """Keras's (JAX backend's) rgb_to_hsv of float images in [0, 1]: the planes (hue, saturation, value)"""
    eps = 1.1920928955078125e-07   # float32's eps: smaller magnitudes read as 0
    x = mul(x, op("greater_equal", unary("abs", x), eps))
    r, g, b = (plane(x, k) for k in range(3))
    value = op("maximum", op("maximum", r, g), b)
    rng = sub(value, op("minimum", op("minimum", r, g), b))
    pos_v, pos_r = op("greater", value, 0.0), op("greater", rng, 0.0)
    saturation = where(pos_v, div(rng, where(pos_v, value, 1.0)), 0.0)
    norm = div(1.0, mul(where(pos_r, rng, 1.0), 6.0))
    hue = where(op("equal", value, g), add(mul(norm, sub(b, r)), 2.0 / 6.0), add(mul(norm, sub(r, g)), 4.0 / 6.0))
    hue = where(op("equal", value, r), mul(norm, sub(g, b)), hue)
    hue = add(where(pos_r, hue, 0.0), op("less", hue, 0.0))
    return hue, saturation, value


def hsv_to_rgb(hue, saturation, value):
    """Keras's (JAX backend's) hsv_to_rgb of the three planes: the image"""
    dh = mul(op("mod", hue, 1.0), 6.0)
    dr = clip(sub(unary("abs", sub(dh, 3.0)), 1.0), 0.0, 1.0)
    dg = clip(op("subtract", 2.0, unary("abs", sub(dh, 2.0))), 0.0, 1.0)
    db = clip(op("subtract", 2.0, unary("abs", sub(dh, 4.0))), 0.0, 1.0)
    one_minus_s = op("subtract", 1.0, saturation)
    return stack([mul(value, add(one_minus_s, mul(saturation, d))) for d in (dr, dg, db)])


def filter3x3(x, kernel):
    """Keras's depthwise_conv of x with one 3x3 kernel for every channel, padding 'same' (zeros), stride 1: the
    nine shifted windows of the padded image weighted and summed in the kernel's row-major order"""
    h, w, c = x._ps
    p = ZeroPadding2D(1)(x)
    out = None
    for i in range(3):
        for j in range(3):
            term = mul(Slice((i, j, 0), (1, 1, 1), (h, w, c))(p), float(kernel[i][j]))
            out = term if out is None else add(out, term)
    return out
