"""StringLookup and IntegerLookup: Keras 3's IndexLookup in NumPy, host-side
(host_layer.py). A vocabulary given, read from a file or adapted (counts,
then the token, both descending; the mask and OOV tokens left out), the
mask token at index 0 in "int" mode, num_oov_indices OOV buckets (one; none:
an OOV value raises; several: FarmHash / SipHash of the string, or floormod
/ FarmHash of the integer, as Keras through TensorFlow), invert, and the
outputs "int", "one_hot", "multi_hot", "count" and "tf_idf". Each distinct
value of a batch is looked up once. Saved as Keras saves them: the adapted
vocabulary as the asset vocabulary.txt, tf_idf's weights as idf_weights."""

import collections

import numpy as np

from ..errors import DataError
from . import hash64
from .host_layer import HostLayer, as_values, encode, encoded_shape, output_mode_arg, positive_int, refuse_sparse
from .layer import keras_config

_MODES = ("int", "one_hot", "multi_hot", "count", "tf_idf")


class IndexLookup(HostLayer):
    """What StringLookup and IntegerLookup share (Keras's IndexLookup)."""
    _host_side = True   # shaped here, not by the engine (host_layer.HostLayer)
    _strings = True

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token=None, vocabulary=None,
                 idf_weights=None, invert=False, output_mode="int", pad_to_max_tokens=False, sparse=False,
                 oov_method="floormod", salt=None, name=None, vocabulary_size=None, has_input_vocabulary=None,
                 **kwargs):
        super().__init__(name=name, **kwargs)
        who = type(self).__name__
        if max_tokens is not None:
            max_tokens = positive_int(who, max_tokens, "max_tokens", 2)
        if pad_to_max_tokens and max_tokens is None:
            raise ValueError(f"{who}: pad_to_max_tokens=True needs max_tokens, got max_tokens=None")
        self.num_oov_indices = positive_int(who, num_oov_indices, "num_oov_indices", 0)
        if oov_method not in ("floormod", "farmhash"):
            raise ValueError(f"{who}: oov_method must be 'floormod' or 'farmhash', got oov_method={oov_method!r}")
        if salt is not None:
            if not self._strings and oov_method != "farmhash":
                raise ValueError(f"{who}: salt can only be used when oov_method='farmhash', got "
                                 f"oov_method={oov_method!r}")
            if isinstance(salt, (tuple, list)) and len(salt) == 2 and all(isinstance(v, int) for v in salt):
                salt = [int(v) for v in salt]
            elif isinstance(salt, int) and not isinstance(salt, bool):
                salt = [salt, salt]
            else:
                raise ValueError(f"{who}: salt must be an int or a tuple of 2 ints, got salt={salt!r}")
        mode = output_mode_arg(who, output_mode, _MODES)
        if invert and mode != "int":
            raise ValueError(f"{who}: output_mode must be 'int' when invert=True, got output_mode={mode!r}")
        refuse_sparse(who, sparse)
        if idf_weights is not None and mode != "tf_idf":
            raise ValueError(f"{who}: idf_weights should only be set if output_mode is 'tf_idf', got "
                             f"output_mode={mode!r}")
        self.max_tokens, self.invert, self.output_mode = max_tokens, bool(invert), mode
        self.mask_token = self._token(mask_token, "mask_token") if mask_token is not None else None
        self.oov_token = self._token(oov_token, "oov_token") if oov_token is not None else None
        self.pad_to_max_tokens, self.sparse = bool(pad_to_max_tokens), False
        self.oov_method, self.salt = oov_method, salt
        self._fixed = vocabulary is not None if has_input_vocabulary is None else bool(has_input_vocabulary)
        if mode == "tf_idf" and self._fixed and idf_weights is None:
            raise ValueError(f"{who}: with output_mode='tf_idf' and a vocabulary, idf_weights must be given")
        self._frozen = vocabulary_size if isinstance(vocabulary_size, int) and not isinstance(
            vocabulary_size, bool) else None
        self.input_vocabulary = None if isinstance(vocabulary, str) else vocabulary
        self.input_idf_weights = idf_weights
        self._tokens, self._index, self._idf = [], {}, None
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, idf_weights)

    # ---- tokens ----
    def _token(self, v, what):
        """One vocabulary term as the layer keys it: a str (StringLookup) or an int (IntegerLookup)."""
        if self._strings:
            if isinstance(v, bytes):
                return v.decode("utf-8", "surrogateescape")
            if isinstance(v, str):
                return str(v)
            raise ValueError(f"{type(self).__name__}: {what} must hold strings, got {type(v).__name__} {v!r}")
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise ValueError(f"{type(self).__name__}: {what} must hold integers, got {type(v).__name__} {v!r}")
        return int(v)

    def _keys(self, a):
        """The input's values as the table's keys (an object array of str, or int64)."""
        if not self._strings:
            return a.astype(np.int64)
        flat = [v if isinstance(v, str) else v.decode("utf-8", "surrogateescape") if isinstance(v, bytes)
                else self._token(v, "the input") for v in a.reshape(-1)]
        out = np.empty(len(flat), dtype=object)
        out[:] = flat
        return out.reshape(a.shape)

    def _oov_start(self):
        return 1 if self.mask_token is not None and self.output_mode == "int" else 0

    def _token_start(self):
        return self._oov_start() + self.num_oov_indices

    # ---- vocabulary ----
    def vocabulary_size(self):
        """The vocabulary's size, the mask and OOV entries included (Keras)."""
        return len(self._tokens) + self._token_start()

    def get_vocabulary(self, include_special_tokens=True):
        """The terms by index: the mask token (in "int" mode, when set), the OOV token per OOV index, then the
        vocabulary (Keras's get_vocabulary)."""
        special = [self.mask_token] * self._oov_start() + [self.oov_token] * self.num_oov_indices
        return (special if include_special_tokens else []) + list(self._tokens)

    def set_vocabulary(self, vocabulary, idf_weights=None):
        """Keras's set_vocabulary: a list / tuple / 1-D array of terms (the special tokens first, or left out) or
        a text file's path (one term a line); idf_weights (one per term) for output_mode='tf_idf' only."""
        who = f"{type(self).__name__}.set_vocabulary"
        if self.output_mode == "tf_idf" and idf_weights is None:
            raise ValueError(f"{who}: idf_weights must be set if output_mode is 'tf_idf'")
        if self.output_mode != "tf_idf" and idf_weights is not None:
            raise ValueError(f"{who}: idf_weights should only be set if output_mode is 'tf_idf', got "
                             f"output_mode={self.output_mode!r}")
        if isinstance(vocabulary, str):
            if self.output_mode == "tf_idf":
                raise ValueError(f"{who}: output_mode 'tf_idf' does not support loading a vocabulary from file")
            try:
                with open(vocabulary, encoding="utf-8") as f:
                    lines = f.read().splitlines()
            except OSError as e:
                raise ValueError(f"{who}: vocabulary file {vocabulary} cannot be read: {e}") from None
            while lines and lines[-1] == "":
                lines.pop()
            try:   # as TensorFlow's TextFileInitializer: line k is index k + the first token's
                return self._set([self._token(v if self._strings else int(v), "vocabulary") for v in lines], None)
            except ValueError as e:
                raise ValueError(f"{who}: vocabulary file {vocabulary}: {e}") from None
        if hasattr(vocabulary, "numpy") and not isinstance(vocabulary, np.ndarray):
            vocabulary = vocabulary.numpy()
        vocab = [self._token(v, "vocabulary") for v in np.asarray(vocabulary, dtype=object).reshape(-1)] \
            if not isinstance(vocabulary, (list, tuple)) else [self._token(v, "vocabulary") for v in vocabulary]
        if not vocab:
            raise ValueError(f"{who}: cannot set an empty vocabulary")
        special = [self.mask_token] * self._oov_start() + [self.oov_token] * self.num_oov_indices
        found = vocab[:len(special)] == special
        tokens = vocab[len(special):] if found else vocab
        repeated = [t for t, c in collections.Counter(tokens).items() if c > 1]
        if repeated:
            raise ValueError(f"{who}: the vocabulary has repeated terms {repeated[:10]}; uniquify it")
        for tok, what in ((self.mask_token, "mask_token"), (self.oov_token if self.invert else None, "oov_token")):
            if tok is not None and tok in tokens:
                raise ValueError(f"{who}: the reserved {what} {tok!r} is at vocabulary index "
                                 f"{len(vocab) - 1 - vocab[::-1].index(tok)}; leave the special tokens out or put "
                                 f"them first in this order: {special}")
        size = self._token_start() + len(tokens)
        if self.max_tokens is not None and size > self.max_tokens:
            raise ValueError(f"{who}: a vocabulary of size {size} is larger than max_tokens={self.max_tokens}")
        idf = None
        if idf_weights is not None:
            w = np.asarray(idf_weights.numpy() if hasattr(idf_weights, "numpy") else idf_weights, np.float64)
            if w.ndim != 1 or w.shape[0] != len(vocab):
                raise ValueError(f"{who}: idf_weights must be 1-D with one weight per vocabulary term ({len(vocab)})"
                                 f", got shape {w.shape}")
            front = 0 if found else self._token_start()
            back = self.max_tokens - front - len(w) if self.pad_to_max_tokens and self.max_tokens else 0
            idf = np.pad(w, (front, back), constant_values=(0.0 if found else float(np.average(w)), 0.0))
            idf = idf.astype(np.float32)
        self._set(tokens, idf)

    def _set(self, tokens, idf):
        if self.output_mode != "int" and not self.pad_to_max_tokens and self._frozen is not None \
                and self._model_made and self._token_start() + len(tokens) != self._frozen:
            raise RuntimeError(f"{self.name} ({type(self).__name__}): with output_mode={self.output_mode!r} and "
                               "pad_to_max_tokens=False the vocabulary size cannot change after the layer is called: "
                               f"it was {self._frozen}, the new one is {self._token_start() + len(tokens)}")
        self._tokens = list(tokens)
        start = self._token_start()
        self._index = {t: k + start for k, t in enumerate(self._tokens)}
        if idf is not None or self.output_mode != "tf_idf":
            self._idf = idf
        self._frozen = self.vocabulary_size()

    _model_made = False   # set once the layer is called on a model's Input: its width is then fixed

    def adapt(self, data, steps=None):
        """Keras's adapt: the vocabulary of the most frequent values of data (an array or list, or a tf.data
        Dataset / generator / Sequence of batches), ordered by count then value, both descending; with
        output_mode='tf_idf' also the inverse document frequencies (a document: a row of a batch)."""
        if self._fixed:
            raise ValueError(f"Cannot adapt layer '{self.name}' after setting a static vocabulary via the "
                             "`vocabulary` argument or `set_vocabulary()` method")
        if steps is not None:
            steps = positive_int(type(self).__name__ + ".adapt", steps, "steps")
        counts, docs, ndocs = collections.Counter(), collections.Counter(), 0
        tfidf = self.output_mode == "tf_idf"
        for rows in _batches(self, data, steps):
            keys = self._keys(rows)
            u, c = np.unique(keys.reshape(-1), return_counts=True)
            counts.update(dict(zip(u.tolist(), c.tolist())))
            if tfidf:
                for r in keys:
                    docs.update(set(r.tolist()))
                ndocs += keys.shape[0]
        for t in (self.mask_token, self.oov_token):
            counts.pop(t, None)
        sort_key = (lambda t: (counts[t], t.encode("utf-8", "surrogateescape"))) if self._strings else \
            (lambda t: (counts[t], t))
        order = sorted(counts, key=sort_key, reverse=True)
        if self.max_tokens is not None:
            order = order[:self.max_tokens - self._token_start()]
        idf = None
        if tfidf:
            if not order:
                idf = self._idf
            else:
                d = np.array([docs[t] for t in order], dtype=np.float64)
                w = np.log(1.0 + ndocs / (1.0 + d)).astype(np.float32)
                back = self.max_tokens - self._token_start() - len(w) if self.pad_to_max_tokens and \
                    self.max_tokens else 0
                idf = np.concatenate([np.full(self._token_start(), np.float32(np.mean(w, dtype=np.float64))), w,
                                      np.zeros(back, np.float32)]).astype(np.float32)
        if order or not self._tokens:
            self._set(order, idf)

    # ---- calls ----
    def out_dtype(self):
        """The output's NumPy dtype as Keras 3 on JAX returns it: int32 ids and encodings (TensorFlow's int64,
        converted), float32 tf_idf; invert: StringLookup's terms as an object array of str."""
        if self.invert:
            return object if self._strings else np.int32
        return np.float32 if self.output_mode == "tf_idf" else np.int32

    def _depth(self):
        if self.pad_to_max_tokens:
            return self.max_tokens
        if self._frozen is None:
            raise RuntimeError(f"{self.name} ({type(self).__name__}): with output_mode={self.output_mode!r} and "
                               "pad_to_max_tokens=False the vocabulary must be set before calling the layer: pass "
                               "vocabulary= or call adapt()")
        return self._frozen

    def compute_output_shape(self, input_shape):
        """Keras's: the input's shape for "int"; otherwise the encoding's (depth: max_tokens when padded, else
        the vocabulary's size)."""
        return encoded_shape(self.output_mode, input_shape, None if self.output_mode == "int" else self._depth())

    def _compute(self, a):
        if self.invert:
            return self._inverted(a)
        keys = self._keys(a)
        flat = keys.reshape(-1)
        u, inv = np.unique(flat, return_inverse=True)
        ids = np.array([self._lookup(t) for t in u.tolist()], dtype=np.int64)
        if self.num_oov_indices == 0 and (ids == -1).any():
            raise DataError(f"{self.name} ({type(self).__name__}): when num_oov_indices=0 all inputs should be in "
                            f"the vocabulary, found OOV values {u[ids == -1][:10].tolist()}; consider setting "
                            "num_oov_indices=1")
        ids = ids[inv].reshape(keys.shape)
        if self.output_mode == "int":
            return ids.astype(np.int32)
        depth = self._depth()
        if self.output_mode != "tf_idf":
            return encode(ids, self.output_mode, depth, np.int32)
        if self._idf is None:
            raise ValueError(f"{self.name} ({type(self).__name__}): output_mode='tf_idf' needs idf_weights: pass "
                             "them with the vocabulary or call adapt()")
        return encode(ids, "count", depth, np.float32) * self._idf[:depth]

    def _lookup(self, t):
        if self.mask_token is not None and t == self.mask_token:
            return 0 if self.output_mode == "int" else -2   # Keras: int64's max in the other modes, counted nowhere
        k = self._index.get(t)
        if k is not None:
            return k
        n = self.num_oov_indices
        if n <= 1:
            return -1 if n == 0 else self._oov_start()
        if not self._strings and self.oov_method == "floormod":
            return t % n + self._oov_start()
        b = (str(t) if not self._strings else t).encode("utf-8", "surrogateescape")
        h = hash64.siphash(self.salt, b) if self.salt is not None else hash64.fingerprint64(b)
        return h % n + self._oov_start()

    def _inverted(self, a):
        if a.dtype.kind not in "biuf":
            raise DataError(f"{self.name} ({type(self).__name__}): invert=True takes integer ids, got dtype {a.dtype}")
        ids = a.astype(np.int64)
        start = self._token_start()
        u, inv = np.unique(ids.reshape(-1), return_inverse=True)
        vocab = [self._tokens[k - start] if start <= k < start + len(self._tokens)
                 else self.mask_token if self.mask_token is not None and k == 0 else self.oov_token for k in u.tolist()]
        out = np.empty(len(vocab), dtype=object if self._strings else np.int32)
        out[:] = vocab
        return out[inv].reshape(ids.shape)

    def _symbolic(self, inputs):
        out = super()._symbolic(inputs)
        self._model_made = True
        return out

    def _host_state(self):
        return {"tokens": list(self._tokens), "idf_weights": None if self._idf is None else self._idf.tolist()}

    def _set_host_state(self, state):
        if state.get("tokens") is not None:
            idf = state.get("idf_weights")
            self._set([self._token(t, "tokens") for t in state["tokens"]],
                      None if idf is None else np.asarray(idf, np.float32))

    # ---- Keras files: the vocabulary as an asset (when not in the config), tf_idf's weights as a variable ----
    def _keras_assets(self):
        if self.input_vocabulary is not None or not self._tokens:
            return {}
        return {"vocabulary.txt": "\n".join(str(w) for w in self.get_vocabulary()).encode("utf-8")}

    def _load_keras_assets(self, files):
        data = files.get("vocabulary.txt")
        if self.input_vocabulary is not None or data is None:
            return
        lines = data.decode("utf-8").splitlines()
        while lines and lines[-1] == "":
            lines.pop()
        try:
            values = [self._token(v if self._strings else int(v), "vocabulary.txt") for v in lines]
        except ValueError as e:
            raise ValueError(f"{self.name}: the file's vocabulary.txt: {e}") from None
        idf = self._idf if self.output_mode == "tf_idf" else None
        if self.output_mode == "tf_idf" and idf is None:
            raise ValueError(f"{self.name}: the file has a tf_idf vocabulary without its idf_weights")
        fixed, self._fixed = self._fixed, False
        if idf is not None:
            self.set_vocabulary(values, idf[:len(values)] if len(idf) >= len(values) else idf)
        else:
            self.set_vocabulary(values)
        self._fixed = fixed

    def _keras_h5_vars(self):
        own = {"idf_weights": self._idf} if self.output_mode == "tf_idf" and self._idf is not None else {}
        return {"vars": own}

    def _load_keras_h5_vars(self, groups):
        own = groups.get("vars") or {}
        if self.output_mode == "tf_idf" and "idf_weights" in own:
            self._idf = np.asarray(own["idf_weights"], np.float32)


def _batches(layer, data, steps):
    """adapt()'s data as 2-D arrays of rows (a document per row), as Keras: an array or list is one batch whose
    1-D form is a column; a batch of a Dataset / generator / Sequence in 1-D form is one row."""
    who = f"{type(layer).__name__}.adapt"
    if isinstance(data, (list, tuple, np.ndarray)) or (hasattr(data, "__array__") and not hasattr(data, "__iter__")) \
            or _is_tensor(data):
        a = layer._values(data)
        yield a.reshape(1, 1) if a.ndim == 0 else a.reshape(-1, 1) if a.ndim == 1 else a.reshape(a.shape[0], -1)
        return
    if hasattr(data, "__getitem__") and hasattr(data, "__len__"):
        it = (data[i] for i in range(len(data)))
    else:
        try:
            it = iter(data)
        except TypeError:
            raise DataError(f"{who}: data must be an array or list, or a Dataset / generator / Sequence of batches, "
                            f"got {type(data).__name__}") from None
    for k, batch in enumerate(it):
        if steps is not None and k >= steps:
            break
        if isinstance(batch, tuple) and len(batch) in (2, 3):
            batch = batch[0]   # (x, y) batches: the values
        try:
            a = layer._values(batch)
        except DataError as e:
            raise DataError(f"{who}: batch {k}: {e}") from None
        yield a.reshape(1, 1) if a.ndim == 0 else a.reshape(1, -1) if a.ndim == 1 else a.reshape(a.shape[0], -1)


def _is_tensor(x):
    mod = type(x).__module__
    return (mod.startswith(("tensorflow", "jax", "jaxlib")) and hasattr(x, "shape")
            and not type(x).__name__.endswith("Dataset"))


class StringLookup(IndexLookup):
    """Keras 3's StringLookup (its arguments and defaults): strings to ids or encodings, or ids back to strings
    (invert=True). Calling it on strings returns a NumPy array equal to Keras's; on a string keras.Input it
    makes the first stage of a model."""
    _base = "string_lookup"
    _input_kinds = "USO"

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token="[UNK]", vocabulary=None,
                 idf_weights=None, invert=False, output_mode="int", pad_to_max_tokens=False, sparse=False,
                 encoding="utf-8", name=None, salt=None, vocabulary_size=None, oov_method="floormod", **kwargs):
        if not isinstance(encoding, str) or not encoding:
            raise ValueError(f"StringLookup: encoding must be a codec name, got encoding={encoding!r}")
        "".encode(encoding)   # LookupError for an unknown codec
        self.encoding = encoding
        if invert:
            self._input_kinds = "biuf"
        super().__init__(max_tokens=max_tokens, num_oov_indices=num_oov_indices, mask_token=mask_token,
                         oov_token=oov_token, vocabulary=vocabulary, idf_weights=idf_weights, invert=invert,
                         output_mode=output_mode, pad_to_max_tokens=pad_to_max_tokens, sparse=sparse, name=name,
                         salt=salt, vocabulary_size=vocabulary_size, oov_method=oov_method, **kwargs)


class IntegerLookup(IndexLookup):
    """Keras 3's IntegerLookup (its arguments and defaults): integers to ids or encodings, or ids back to
    integers (invert=True); num_oov_indices > 1 buckets OOV values by floormod or, with
    oov_method='farmhash', FarmHash / SipHash (salt) of their decimal strings, as Keras."""
    _base = "integer_lookup"
    _strings = False
    _input_kinds = "biuf"

    def __init__(self, max_tokens=None, num_oov_indices=1, mask_token=None, oov_token=-1, vocabulary=None,
                 vocabulary_dtype="int64", idf_weights=None, invert=False, output_mode="int", sparse=False,
                 pad_to_max_tokens=False, oov_method="floormod", salt=None, name=None, vocabulary_size=None,
                 **kwargs):
        if vocabulary_dtype != "int64":
            raise ValueError(f"IntegerLookup: only vocabulary_dtype='int64' is supported, got "
                             f"vocabulary_dtype={vocabulary_dtype!r}")
        self.vocabulary_dtype = "int64"
        super().__init__(max_tokens=max_tokens, num_oov_indices=num_oov_indices, mask_token=mask_token,
                         oov_token=oov_token, vocabulary=vocabulary, idf_weights=idf_weights, invert=invert,
                         output_mode=output_mode, pad_to_max_tokens=pad_to_max_tokens, sparse=sparse,
                         oov_method=oov_method, salt=salt, name=name, vocabulary_size=vocabulary_size, **kwargs)


def _listed(v):
    if v is None:
        return None
    if hasattr(v, "numpy") and not isinstance(v, np.ndarray):
        v = v.numpy()
    return np.asarray(v).tolist() if isinstance(v, np.ndarray) else list(v)


def _lookup_config(l):
    return dict(invert=l.invert, max_tokens=l.max_tokens, num_oov_indices=l.num_oov_indices, oov_token=l.oov_token,
                mask_token=l.mask_token, output_mode=l.output_mode, sparse=False,
                pad_to_max_tokens=l.pad_to_max_tokens, idf_weights=_listed(l.input_idf_weights),
                vocabulary=_listed(l.input_vocabulary), vocabulary_size=l._frozen, oov_method=l.oov_method,
                salt=l.salt)


@keras_config(StringLookup)
def _string_lookup_config(l):
    return dict(_lookup_config(l), encoding=l.encoding)


@keras_config(IntegerLookup)
def _integer_lookup_config(l):
    cfg = _lookup_config(l)
    if cfg["vocabulary"] is not None:
        cfg["vocabulary"] = [int(v) for v in cfg["vocabulary"]]
    keys = list(cfg)
    keys.insert(keys.index("idf_weights"), "vocabulary_dtype")
    cfg["vocabulary_dtype"] = "int64"
    return {k: cfg[k] for k in keys}
