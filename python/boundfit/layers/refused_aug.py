"""Keras 3's image preprocessing layers boundfit does not run, refused by
name when made (NotImplementedError saying why and what to use instead);
tools/keras_coverage.py lists them as refused (`_boundfit_refused`)."""

_POLICY = ("it applies layers picked at random per image from a list boundfit does not fully have (shear, "
           "equalization, ...). Compose boundfit's augmentation layers in the model instead (RandomRotation, "
           "RandomTranslation, RandomColorJitter, Solarization, RandomPosterization, ...)")
_HIST = ("it needs per-image histograms (a count per intensity and its cumulative sum), which boundfit's graphs "
         "do not compute yet. AutoContrast stretches each channel to the value range, or equalize in the data "
         "(Equalization on arrays)")
_WARP = ("its warp is not among the engine's augmentation transforms (rotation, zoom, translation, flip, crop). "
         "Use RandomRotation, RandomZoom, RandomTranslation or RandomShear, or warp in the data")

_WHY = {
    "RandAugment": _POLICY,
    "AugMix": _POLICY,
    "ContrastLimitedAdaptiveHistogramEqualization": _HIST,
    "RandomPerspective": _WARP,
    "RandomElasticTransform": _WARP + " (its displacement field is also blurred per image)",
}


def _refused(name, why):
    def init(self, *args, **kwargs):
        raise NotImplementedError(f"keras.layers.{name} is not supported by boundfit: {why}")
    return type(name, (), {"__init__": init, "__doc__": f"Refused: Keras's {name}; {why}.",
                           "_boundfit_refused": True})


RandAugment, AugMix, ContrastLimitedAdaptiveHistogramEqualization, RandomPerspective, RandomElasticTransform = \
    (_refused(n, w) for n, w in _WHY.items())
