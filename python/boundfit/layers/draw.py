"""RandomDraw: keras.random's normal, uniform, truncated_normal (and
dropout's keep mask) on a symbolic shape inside a custom layer's call()
(random.py), the engine's RANDOM (csrc/core/layers/random.c): per sample
(a shape whose batch axis is None, ops.shape(x)[0]) or one draw for the
whole batch (batch axis 1). Its input, a tensor of that call, gives only
the batch size and gets no gradient. New draws every step from its seed (a
SeedGenerator's or the run's); an int seed (fixed) draws the same every
step, as Keras. Not a Keras layer: Keras's graphs hold no random operation,
so a .keras file cannot hold one (saving/keras_graph.py says which layer)."""

from .args import engine_kinds
from .layer import Layer

(RANDOM,) = engine_kinds("RANDOM")

DISTS = ("normal", "uniform", "truncated_normal", "dropout")


class RandomDraw(Layer):
    _base = "random_draw"

    def __init__(self, shape, dist, a, b, seed=0, fixed=False, shared=False, **kwargs):
        super().__init__(**kwargs)
        self.shape = tuple(int(d) for d in shape)
        if not 1 <= len(self.shape) <= 3 or min(self.shape) < 1:
            raise ValueError(f"{self.name}: a draw of 1 to 3 axes per sample, each >= 1, got {self.shape}")
        if dist not in DISTS:
            raise ValueError(f"{self.name}: dist must be one of {DISTS}, got {dist!r}")
        self.dist, self.a, self.b = dist, float(a), float(b)
        self.seed, self.fixed, self.shared = int(seed), bool(fixed), bool(shared)

    def _check_call_shape(self, shape):
        pass   # any tensor of the call will do

    def spec(self):
        return dict(kind=RANDOM, name=self.name, target_shape=self.shape, rnd_dist=DISTS.index(self.dist),
                    rnd_a=self.a, rnd_b=self.b, rnd_shared=int(self.shared), rnd_fixed=int(self.fixed),
                    aug_seed=self.seed)
