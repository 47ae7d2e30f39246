"""Random augmentation layers: RandomFlip, RandomCrop, RandomTranslation,
RandomRotation, RandomZoom, RandomContrast. They act in fit only (identity in
evaluate / predict, RandomCrop a centred crop) and draw from the engine's
counter-based generator: a layer seed gives the same augmentations on every
run of a fresh model. The transforms are Keras 3's (its affine matrices,
sampling and fill modes; its contrast formula); the draws are boundfit's own."""

from .args import _data_format, _listed, _number, _seed, _size, engine_kinds
from .layer import Layer, keras_config

AUGMENT, = engine_kinds("AUGMENT")


_FILL = {"reflect": 0, "constant": 1, "nearest": 2, "wrap": 3}


class _Random(Layer):
    _random = True
    _mode_dependent = True
    _keras_records_training = True   # Keras's files record training=True on every call (saving/keras_graph.py)

    def __init__(self, seed=None, data_format=None, **kwargs):
        super().__init__(**kwargs)
        _data_format(type(self).__name__, data_format)
        self.seed = _seed(type(self).__name__, seed)

    def _spec(self, **kw):
        return dict(kind=AUGMENT, name=self.name, aug_seed=self.seed, **kw)


class RandomFlip(_Random):
    """Keras 3's `RandomFlip(mode='horizontal_and_vertical')`: random flips of images in fit only (channels_last)."""
    _base = "random_flip"
    _MODES = {"horizontal": 1, "vertical": 2, "horizontal_and_vertical": 3}

    def __init__(self, mode="horizontal_and_vertical", seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        if mode not in self._MODES:
            raise ValueError(f"RandomFlip: mode must be one of {sorted(self._MODES)}, got {mode!r}")
        self.mode = mode

    def spec(self):
        return self._spec(aug_flip=self._MODES[self.mode])


class RandomCrop(_Random):
    """Keras 3's `RandomCrop(height, width)`: a random window in fit, the centred window outside training."""
    _base = "random_crop"

    def __init__(self, height, width, seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.height, self.width = _size("RandomCrop", "height", height), _size("RandomCrop", "width", width)

    def spec(self):
        return self._spec(aug_crop=1, kh=self.height, kw=self.width)


class RandomTranslation(_Random):
    """Keras 3's `RandomTranslation(height_factor, width_factor, ...)`: random shifts of images in fit only
    (channels_last)."""
    _base = "random_translation"

    def __init__(self, height_factor, width_factor, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self._h = self._factor(height_factor, "height_factor")
        self._w = self._factor(width_factor, "width_factor")
        if fill_mode not in _FILL:
            raise ValueError(f"RandomTranslation: fill_mode must be one of {sorted(_FILL)}, got {fill_mode!r}")
        if interpolation not in ("nearest", "bilinear"):
            raise ValueError(f"RandomTranslation: interpolation must be 'nearest' or 'bilinear', got {interpolation!r}")
        self.fill_mode, self.interpolation = fill_mode, interpolation
        self.fill_value = _number(fill_value, "fill_value", "RandomTranslation")

    @staticmethod
    def _factor(f, argument):
        if isinstance(f, (tuple, list)):
            if len(f) != 2:
                raise ValueError(f"RandomTranslation: {argument} must be a number or a pair, got {f!r}")
            lo, hi = sorted(_number(v, argument, "RandomTranslation") for v in f)
        else:
            v = abs(_number(f, argument, "RandomTranslation"))
            lo, hi = -v, v
        if lo < -1.0 or hi > 1.0:
            raise ValueError(f"RandomTranslation: {argument} must be within [-1, 1], got {f!r}")
        return lo, hi

    def spec(self):
        return self._spec(aug_translate=1, aug_h_lo=self._h[0], aug_h_hi=self._h[1], aug_w_lo=self._w[0],
                          aug_w_hi=self._w[1], aug_fill=_FILL[self.fill_mode],
                          aug_bilinear=int(self.interpolation == "bilinear"), aug_fill_value=self.fill_value)


def _pair(cls, f, argument, check):
    """Keras's factor forms: a number f -> (-|f|, |f|), a pair -> sorted; `check` validates each bound"""
    if isinstance(f, (tuple, list)):
        if len(f) != 2:
            raise ValueError(f"{cls}: {argument} must be a number or a pair, got {f!r}")
        lo, hi = sorted(_number(v, argument, cls) for v in f)
    else:
        v = abs(_number(f, argument, cls))
        lo, hi = -v, v
    check(lo, hi)
    return lo, hi


class _Warp(_Random):
    """the fill and interpolation arguments of the affine layers"""

    def __init__(self, fill_mode, interpolation, fill_value, seed, data_format, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        cls = type(self).__name__
        if fill_mode not in _FILL:
            raise ValueError(f"{cls}: fill_mode must be one of {sorted(_FILL)}, got {fill_mode!r}")
        if interpolation not in ("nearest", "bilinear"):
            raise ValueError(f"{cls}: interpolation must be 'nearest' or 'bilinear', got {interpolation!r}")
        self.fill_mode, self.interpolation = fill_mode, interpolation
        self.fill_value = _number(fill_value, "fill_value", cls)

    def _warp_spec(self, **kw):
        return self._spec(aug_fill=_FILL[self.fill_mode], aug_bilinear=int(self.interpolation == "bilinear"),
                          aug_fill_value=self.fill_value, **kw)


class RandomRotation(_Warp):
    """Rotates each image by uniform(lower, upper) * 360 degrees about its centre (positive: counter-clockwise)."""
    _base = "random_rotation"

    def __init__(self, factor, fill_mode="reflect", interpolation="bilinear", seed=None, fill_value=0.0,
                 data_format=None, **kwargs):
        super().__init__(fill_mode, interpolation, fill_value, seed, data_format, **kwargs)

        def check(lo, hi):  # Keras's bounds [-1, 1]
            if lo < -1.0 or hi > 1.0:
                raise ValueError(f"RandomRotation: factor must be a number or a pair in [-1, 1], got {factor!r}")
        self.factor = _pair("RandomRotation", factor, "factor", check)

    def spec(self):
        return self._warp_spec(aug_rotate=1, aug_rot_lo=self.factor[0] * 360.0, aug_rot_hi=self.factor[1] * 360.0)


class RandomZoom(_Warp):
    """Zooms each image by 1 + uniform(lower, upper) per axis about its centre (positive: zoom out);
    width_factor None zooms both axes by the height's draw."""
    _base = "random_zoom"

    def __init__(self, height_factor, width_factor=None, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, data_format=None, **kwargs):
        super().__init__(fill_mode, interpolation, fill_value, seed, data_format, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor

        def checker(argument, f):
            def check(lo, hi):  # Keras's _check_factor_range on each bound: (-1, 1]
                if lo <= -1.0 or hi > 1.0:
                    raise ValueError(f"RandomZoom: {argument} must be a number or a pair in (-1, 1], got {f!r}")
            return check
        self._h = _pair("RandomZoom", height_factor, "height_factor", checker("height_factor", height_factor))
        self._w = None if width_factor is None else _pair("RandomZoom", width_factor, "width_factor",
                                                          checker("width_factor", width_factor))

    def spec(self):
        w = self._w or self._h
        return self._warp_spec(aug_zoom=1, aug_zoom_same=int(self._w is None), aug_zh_lo=1.0 + self._h[0],
                               aug_zh_hi=1.0 + self._h[1], aug_zw_lo=1.0 + w[0], aug_zw_hi=1.0 + w[1])


class RandomContrast(_Random):
    """Per image and channel: (x - mean) * f + mean clipped to value_range, f = uniform(1 - lower, 1 + upper);
    Keras's factor forms with its bounds (0, 1): a number f gives (0, f)."""
    _base = "random_contrast"

    def __init__(self, factor, value_range=(0, 255), seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, data_format=data_format, **kwargs)
        if isinstance(factor, (tuple, list)):
            if len(factor) != 2:
                raise ValueError(f"RandomContrast: factor must be a number or a pair, got {factor!r}")
            lo, hi = (_number(v, "factor", "RandomContrast") for v in factor)
            if lo > 1.0 or hi < 0.0:
                raise ValueError(f"RandomContrast: factor must be a number or a pair in [0, 1], got {factor!r}")
            lo, hi = sorted((lo, hi))
        else:
            v = _number(factor, "factor", "RandomContrast")
            if v < 0.0 or v > 1.0:
                raise ValueError(f"RandomContrast: factor must be a number or a pair in [0, 1], got {factor!r}")
            lo, hi = 0.0, v   # Keras: (max(-f, 0), f)
        self.factor = (lo, hi)
        if (not isinstance(value_range, (tuple, list)) or len(value_range) != 2):
            raise ValueError(f"RandomContrast: value_range must be a pair (low, high), got {value_range!r}")
        vlo, vhi = (_number(v, "value_range", "RandomContrast") for v in value_range)
        if vlo > vhi:
            raise ValueError(f"RandomContrast: value_range must have low <= high, got {value_range!r}")
        self.value_range = tuple(value_range)

    def spec(self):
        return self._spec(aug_contrast=1, aug_c_lo=1.0 - self.factor[0], aug_c_hi=1.0 + self.factor[1],
                          aug_v_lo=float(self.value_range[0]), aug_v_hi=float(self.value_range[1]))


# ---- Keras 3 configs (layer.keras_config) ----

@keras_config(RandomFlip)
def _random_flip_config(l):
    return dict(mode=l.mode, seed=l.seed, data_format="channels_last")


@keras_config(RandomCrop)
def _random_crop_config(l):
    return dict(height=l.height, width=l.width, seed=l.seed, data_format="channels_last")


@keras_config(RandomTranslation)
def _random_translation_config(l):
    return dict(height_factor=_listed(l.height_factor), width_factor=_listed(l.width_factor),
                fill_mode=l.fill_mode, interpolation=l.interpolation, seed=l.seed,
                fill_value=l.fill_value, data_format="channels_last")


@keras_config(RandomRotation)
def _random_rotation_config(l):
    return dict(factor=list(l.factor), fill_mode=l.fill_mode, fill_value=l.fill_value,
                interpolation=l.interpolation, seed=l.seed, data_format="channels_last")


@keras_config(RandomZoom)
def _random_zoom_config(l):
    return dict(height_factor=_listed(l.height_factor), width_factor=_listed(l.width_factor),
                fill_mode=l.fill_mode, interpolation=l.interpolation, seed=l.seed,
                fill_value=l.fill_value, data_format="channels_last")


@keras_config(RandomContrast)
def _random_contrast_config(l):
    return dict(factor=list(l.factor), value_range=_listed(l.value_range), seed=l.seed, data_format="channels_last")
