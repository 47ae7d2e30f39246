"""TextVectorization: Keras 3's text layer in pure Python / NumPy, host-side
preprocessing (strings never reach the engine). Standardize (TF's ASCII-only
lowercasing and punctuation class), split (ASCII whitespace, characters or a
callable), n-grams, a vocabulary adapted by streaming token counts (ordered
by count, then by the token's UTF-8 bytes, both descending, as Keras's
StringLookup), and the outputs "int", "multi_hot", "count" and "tf_idf".
In a model it stands on a string Input: the model's data sources vectorize
each batch (engine/host_stage.py) and the engine runs the rest."""

import collections
import re
import sys

import numpy as np

from ..errors import DataError
from .layer import Layer, keras_config
from .node import KerasTensor, Node, _as_tensors

# TF's punctuation class r'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']' (ASCII only)
_PUNCT = str.maketrans("", "", "!\"#$%&()*+,-./:;<=>?@[\\]^_`{|}~'")
_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")   # tf.strings.lower: ASCII only
_TABLES = {"lower": _LOWER, "strip_punctuation": _PUNCT, "lower_and_strip_punctuation": {**_LOWER, **_PUNCT}}
_SPACE = re.compile("[ \t\n\v\f\r]+")   # tf.strings.split(): ASCII whitespace only
_STANDARDIZE = ("lower_and_strip_punctuation", "lower", "strip_punctuation")
_SPLIT = ("whitespace", "character")
_MODES = ("int", "multi_hot", "count", "tf_idf")
MASK, OOV = "", "[UNK]"
_BYTES_PER_CHAR = 160   # a text's standardized copy, its tokens (str objects and list slots) and ids, per character


def _choice(value, allowed, arg):
    if value is None or callable(value) or value in allowed:
        return value
    raise ValueError(f"TextVectorization: {arg} must be None, a callable or one of {list(allowed)}, got {value!r}")


def _ngrams(ngrams):
    if ngrams is None:
        return None
    if isinstance(ngrams, list):
        ngrams = tuple(ngrams)
    if isinstance(ngrams, bool) or not (isinstance(ngrams, int) or (isinstance(ngrams, tuple) and ngrams and all(
            isinstance(n, int) and not isinstance(n, bool) for n in ngrams))):
        raise ValueError(f"TextVectorization: ngrams must be None, an integer, or a tuple of integers, got {ngrams!r}")
    widths = tuple(range(1, ngrams + 1)) if isinstance(ngrams, int) else ngrams
    if not widths or any(n <= 0 for n in widths):
        raise ValueError(f"TextVectorization: ngrams must be positive, got {ngrams!r}")
    return widths


class TextVectorization(Layer):
    """Keras 3's TextVectorization (its arguments and defaults). Calling it on
    strings (a list, or a NumPy array of str / bytes / objects of shape (N,) or
    (N, 1)) returns a NumPy array equal to Keras's; calling it on a string
    Input (dtype="string", shape (1,)) makes the first stage of a model."""
    _base = "text_vectorization"
    _host_side = True

    def __init__(self, max_tokens=None, standardize="lower_and_strip_punctuation", split="whitespace", ngrams=None,
                 output_mode="int", output_sequence_length=None, pad_to_max_tokens=False, vocabulary=None,
                 idf_weights=None, sparse=False, ragged=False, encoding="utf-8", name=None, vocabulary_size=None,
                 **kwargs):
        frozen = vocabulary_size   # Keras's config: the output width until the file's vocabulary loads
        kwargs.pop("has_input_vocabulary", None)
        super().__init__(name=name, **kwargs)
        if sparse:
            raise ValueError("TextVectorization: sparse=True is not supported by boundfit (Keras allows it only on "
                             "the TensorFlow backend); use sparse=False for dense NumPy outputs")
        if ragged:
            raise ValueError("TextVectorization: ragged=True is not supported by boundfit (Keras allows it only on "
                             "the TensorFlow backend); use output_sequence_length= for a fixed length")
        self.standardize = _choice(standardize, _STANDARDIZE, "standardize")
        self.split = _choice(split, _SPLIT, "split")
        mode = {"binary": "multi_hot", "tf-idf": "tf_idf"}.get(output_mode, output_mode)
        if mode == "one_hot":
            raise ValueError("TextVectorization: output_mode='one_hot' is not supported by boundfit; use 'int' and "
                             "an Embedding, or 'multi_hot'")
        if mode not in _MODES:
            raise ValueError(f"TextVectorization: output_mode must be one of {list(_MODES)}, got {output_mode!r}")
        self.output_mode = mode
        self.ngrams = ngrams
        self._widths = _ngrams(ngrams)
        L = output_sequence_length
        if L is not None and mode != "int":
            raise ValueError(f"TextVectorization: output_sequence_length must not be set if output_mode is not "
                             f"'int', got output_sequence_length={L!r} with output_mode={mode!r}")
        if L is not None and (isinstance(L, bool) or not isinstance(L, (int, np.integer)) or L <= 0):
            raise ValueError(f"TextVectorization: output_sequence_length must be a positive int or None, got {L!r}")
        self.output_sequence_length = None if L is None else int(L)
        if max_tokens is not None and (isinstance(max_tokens, bool) or not isinstance(max_tokens, (int, np.integer))
                                       or max_tokens <= 1):
            raise ValueError(f"TextVectorization: max_tokens must be an int greater than 1 or None, got "
                             f"{max_tokens!r}")
        self.max_tokens = None if max_tokens is None else int(max_tokens)
        if pad_to_max_tokens and self.max_tokens is None and mode != "int":
            raise ValueError("TextVectorization: pad_to_max_tokens=True needs max_tokens")
        self.pad_to_max_tokens = bool(pad_to_max_tokens)
        if idf_weights is not None and mode != "tf_idf":
            raise ValueError(f"TextVectorization: idf_weights should only be set if output_mode is 'tf_idf', got "
                             f"output_mode={mode!r}")
        if mode == "tf_idf" and vocabulary is not None and idf_weights is None:
            raise ValueError("TextVectorization: with output_mode='tf_idf' and a vocabulary, idf_weights must be given")
        if not isinstance(encoding, str) or not encoding:
            raise ValueError(f"TextVectorization: encoding must be a codec name, got {encoding!r}")
        "".encode(encoding)   # LookupError for an unknown codec
        self.encoding = encoding
        self.sparse = self.ragged = False
        self._start = 2 if mode == "int" else 1   # the first token's index: after the mask and OOV, or OOV
        self._tokens, self._index, self._idf = None, None, None
        self._fixed = vocabulary is not None   # Keras's has_input_vocabulary: adapt() refuses
        self._frozen = frozen if isinstance(frozen, int) and not isinstance(frozen, bool) else None
        self.input_vocabulary = None if isinstance(vocabulary, str) else vocabulary
        self.input_idf_weights = idf_weights
        if vocabulary is not None:
            self.set_vocabulary(vocabulary, idf_weights)

    # ---- vocabulary ----
    def vocabulary_size(self):
        """The vocabulary's size, the padding and OOV entries included (Keras)."""
        return self._start + (len(self._tokens) if self._tokens is not None else 0)

    def get_vocabulary(self, include_special_tokens=True):
        special = [MASK, OOV] if self.output_mode == "int" else [OOV]
        tokens = list(self._tokens or [])
        return special + tokens if include_special_tokens else tokens

    def set_vocabulary(self, vocabulary, idf_weights=None):
        """Keras's set_vocabulary: a list / tuple / 1-D array of terms (the
        padding and OOV tokens first, or left out) or a text file's path, one
        term a line; idf_weights (one per term) for output_mode='tf_idf' only."""
        if self.output_mode == "tf_idf" and idf_weights is None:
            raise ValueError("TextVectorization.set_vocabulary: idf_weights must be set if output_mode is 'tf_idf'")
        if self.output_mode != "tf_idf" and idf_weights is not None:
            raise ValueError(f"TextVectorization.set_vocabulary: idf_weights should only be set if output_mode is "
                             f"'tf_idf', got output_mode={self.output_mode!r}")
        if isinstance(vocabulary, str):
            if self.output_mode == "tf_idf":
                raise ValueError("TextVectorization.set_vocabulary: output_mode 'tf_idf' does not support loading a "
                                 "vocabulary from file")
            try:
                with open(vocabulary, encoding="utf-8") as f:
                    vocabulary = f.read().splitlines()
            except OSError as e:
                raise ValueError(f"TextVectorization.set_vocabulary: vocabulary file {vocabulary} cannot be read: "
                                 f"{e}") from None
            while vocabulary and vocabulary[-1] == "":
                vocabulary.pop()
        if not isinstance(vocabulary, (list, tuple)):
            vocabulary = np.asarray(vocabulary, dtype=object).reshape(-1)
        vocab = [_text(v, self.encoding, "vocabulary") for v in vocabulary]
        if not vocab:
            raise ValueError("TextVectorization.set_vocabulary: cannot set an empty vocabulary")
        special = [MASK, OOV] if self.output_mode == "int" else [OOV]
        found = vocab[:len(special)] == special
        tokens = vocab[len(special):] if found else vocab
        repeated = [t for t, c in collections.Counter(tokens).items() if c > 1]
        if repeated:
            raise ValueError(f"TextVectorization.set_vocabulary: the vocabulary has repeated terms {repeated[:10]}")
        if MASK in tokens:
            raise ValueError(f"TextVectorization.set_vocabulary: the padding token '' found at index "
                             f"{vocab.index(MASK, len(special) if found else 0)}; leave the special tokens out or "
                             f"put them first in this order: {special}")
        if self.max_tokens is not None and self._start + len(tokens) > self.max_tokens:
            raise ValueError(f"TextVectorization.set_vocabulary: a vocabulary of size {self._start + len(tokens)} "
                             f"is larger than max_tokens={self.max_tokens}")
        idf = None
        if idf_weights is not None:
            w = np.asarray(idf_weights, dtype=np.float64)
            if w.ndim != 1 or w.shape[0] != len(vocab):
                raise ValueError(f"TextVectorization.set_vocabulary: idf_weights must be 1-D with one weight per "
                                 f"vocabulary term ({len(vocab)}), got shape {w.shape}")
            front = 0 if found else self._start
            back = self.max_tokens - front - len(w) if self.pad_to_max_tokens and self.max_tokens else 0
            idf = np.pad(w, (front, back), constant_values=(0.0 if found else float(np.average(w)), 0.0))
            idf = idf.astype(np.float32)
        self._set(tokens, idf)

    def _set(self, tokens, idf):
        self._tokens = list(tokens)
        self._index = {t: k + self._start for k, t in enumerate(self._tokens)}
        self._idf = idf

    def adapt(self, data, batch_size=None, steps=None):
        """Keras's adapt: the vocabulary of the most frequent tokens of data (a
        list or NumPy array of strings, or a generator / Sequence / iterable of
        batches of them); token counts are streamed batch by batch, so memory
        holds one batch and the counts of distinct tokens."""
        if self._fixed:
            raise ValueError(f"Cannot adapt layer '{self.name}' after setting a static vocabulary via the "
                             "`vocabulary` argument")
        if steps is not None and (isinstance(steps, bool) or not isinstance(steps, int) or steps <= 0):
            raise ValueError(f"TextVectorization.adapt: steps must be a positive int or None, got {steps!r}")
        counts, docs, ndocs = collections.Counter(), collections.Counter(), 0
        tfidf = self.output_mode == "tf_idf"
        for rows in _adapt_batches(data, batch_size, steps, self.encoding):
            for toks in self._token_rows(rows):
                counts.update(toks)
                if tfidf:
                    docs.update(set(toks))
                    ndocs += 1
        counts.pop(MASK, None)
        counts.pop(OOV, None)
        if not counts:
            raise DataError(f"{self.name}.adapt: the data holds no tokens to build a vocabulary from")
        # Keras: np.lexsort((tokens, counts))[::-1]: by count, then by the token's bytes, both descending
        order = sorted(counts, key=lambda t: (counts[t], t.encode("utf-8")), reverse=True)
        if self.max_tokens is not None:
            order = order[:self.max_tokens - self._start]
        idf = None
        if tfidf:
            d = np.array([docs[t] for t in order], dtype=np.float64)
            w = np.log(1.0 + ndocs / (1.0 + d)).astype(np.float32)
            back = self.max_tokens - self._start - len(w) if self.pad_to_max_tokens and self.max_tokens else 0
            idf = np.concatenate([np.full(self._start, np.float32(np.mean(w, dtype=np.float64))), w,
                                  np.zeros(back, np.float32)]).astype(np.float32)
        self._set(order, idf)

    # ---- text -> tokens ----
    def _standardized(self, rows):
        """rows: a list of str -> standardized str (a callable gets a NumPy array of str)."""
        s = self.standardize
        if callable(s):
            out = s(np.array(rows, dtype=str) if rows else np.zeros(0, dtype=str))
            out = np.asarray(out).reshape(-1)
            if out.shape[0] != len(rows):
                raise DataError(f"{self.name}: the standardize callable returned {out.shape[0]} strings for "
                                f"{len(rows)} inputs")
            return [_text(v, self.encoding, "the standardize callable's output") for v in out]
        if s is None:
            return rows
        table = _TABLES[s]
        return [r.translate(table) for r in rows]

    def _token_rows(self, rows):
        """One list of tokens (n-grams included) per string, made one string at a
        time (the Python objects of one text are alive at once), or the whole
        batch at once when a callable standardizes or splits (Keras hands it the batch)."""
        if callable(self.standardize) or callable(self.split):
            yield from self._batch_tokens(rows)
            return
        table = _TABLES.get(self.standardize)
        for r in rows:
            yield self._ngrammed(self._split_one(r.translate(table) if table is not None else r))

    def _split_one(self, r):
        sp = self.split
        if sp is None:
            return [r]
        if sp == "whitespace":
            return [t for t in _SPACE.split(r) if t]
        return list(r)

    def _ngrammed(self, t):
        if self._widths is None:
            return t
        return [" ".join(t[i:i + w]) for w in self._widths for i in range(len(t) - w + 1)]

    def _batch_tokens(self, rows):
        rows = self._standardized(rows)
        sp = self.split
        if not callable(sp):
            return [self._ngrammed(self._split_one(r)) for r in rows]
        got = list(sp(np.array(rows, dtype=str) if rows else np.zeros(0, dtype=str)))
        if len(got) != len(rows):
            raise DataError(f"{self.name}: the split callable returned {len(got)} rows for {len(rows)} inputs")
        return [self._ngrammed([_text(t, self.encoding, "the split callable's output")
                                for t in np.asarray(g, dtype=object).reshape(-1)]) for g in got]

    def temporaries_bound(self, rows, longest):
        """Bytes of the Python objects vectorizing one batch of `rows` strings,
        none longer than `longest` characters, holds at once (a bound): the
        batch's strings, and one text's standardized copy, tokens, n-grams and
        ids (the whole batch's when a callable standardizes or splits)."""
        per_text = (_BYTES_PER_CHAR * max(1, len(self._widths or ())) * longest) + 4096
        texts = rows if callable(self.standardize) or callable(self.split) else 1
        return rows * (8 * longest + 64) + texts * per_text

    # ---- calls ----
    def __call__(self, inputs, *args, **kwargs):
        if args or kwargs:
            raise TypeError(f"{self.name} (TextVectorization): unexpected arguments after the inputs")
        if isinstance(inputs, KerasTensor) or (isinstance(inputs, (list, tuple)) and inputs
                                               and isinstance(inputs[0], KerasTensor)):
            return self._symbolic(inputs)
        traced = _tf_graph_call(self, inputs)
        return traced if traced is not None else self.vectorize(inputs)

    def output_width(self):
        """Values per sample of the output, known before any data: the sequence
        length ('int') or the vocabulary's size (the other modes)."""
        if self.output_mode == "int":
            if self.output_sequence_length is None:
                raise ValueError(f"{self.name} (TextVectorization) in a model needs output_sequence_length (a fixed "
                                 "length of ids per sample); Keras pads each batch to its longest text, boundfit "
                                 "plans one shape")
            return self.output_sequence_length
        if self.pad_to_max_tokens:
            return self.max_tokens
        if self._tokens is None and self._frozen is not None:
            return self._frozen
        if self._tokens is None:
            raise ValueError(f"{self.name} (TextVectorization): with output_mode={self.output_mode!r} and "
                             "pad_to_max_tokens=False the vocabulary must be set before calling the layer: call "
                             "adapt() or pass vocabulary=")
        return self.vocabulary_size()

    def _stage_shape(self):
        """The per-sample shape of its output as a model's stage (engine/host_stage.py)."""
        return (self.output_width(),)

    def _symbolic(self, inputs):
        ins, _ = _as_tensors(self.name, inputs)
        if len(ins) != 1:
            raise ValueError(f"{self.name} (TextVectorization) takes one input tensor, got {len(ins)}")
        t = ins[0]
        if t.dtype != "string":
            raise ValueError(f"{self.name} (TextVectorization) takes a string input (keras.Input(shape=(1,), "
                             f"dtype='string')), got dtype {t.dtype!r}")
        if t._input_layer is None:
            raise ValueError(f"{self.name} (TextVectorization) must be called on the model's Input itself: it runs "
                             "on the host before the engine, as the model's first stage")
        if t._ps not in ((1,), ()):   # (shape (): a batch of strings, as Sequential([vectorizer, ...]) gets)
            raise ValueError(f"{self.name} (TextVectorization) takes one string per sample: an Input of shape (1,) "
                             f"or (), got {t.shape}")
        width = self.output_width()
        out = KerasTensor((width,), dtype="float32" if self.output_mode == "tf_idf" else "int32",
                          name=f"{self.name}_output")
        Node(self, ins, [out])
        return out

    def compute_output_shape(self, input_shape):
        """Keras's: (batch, the output's width) for a batch of strings; host-side, so shaped here, not by the
        engine."""
        return (tuple(input_shape)[:1] or (None,)) + (self.output_width(),)

    def vectorize(self, inputs, out=None):
        """Strings -> a NumPy array, as Keras's call; out: an array of the
        output's shape (or more rows) to write into instead of a new one."""
        rows, shape = _string_rows(inputs, self.encoding, self.name)
        if self._tokens is None:
            raise ValueError(f"{self.name} (TextVectorization) has no vocabulary: call adapt(data) or "
                             "set_vocabulary(), or pass vocabulary=, before calling it on data")
        res = self._vectorized(rows, shape, out)
        return res[0] if shape == () else res   # one string in: one row out (Keras)

    def _vectorized(self, rows, shape, out):
        toks = self._token_rows(rows)
        n = len(rows)
        if self.output_mode == "int":
            L = self.output_sequence_length
            if L is None:   # as long as the longest text (an eager call; a model plans a fixed length)
                ids = [[0 if t == MASK else self._index.get(t, 1) for t in r] for r in toks]
                if self.split is None and self._widths is None and len(shape) == 1:
                    return np.array([r[0] for r in ids], dtype=np.int32)   # (N,) in, (N,) out (Keras)
                toks, L = ids, max((len(r) for r in ids), default=0)
            res = out[:n] if out is not None else np.empty((n, L), np.int32)
            res[...] = 0
            get, masked = self._index.get, self.split is None or callable(self.split)   # only these make '' tokens
            for k, r in enumerate(toks):
                if r and isinstance(r[0], int):
                    r = r[:L]
                elif masked:
                    r = [0 if t == MASK else get(t, 1) for t in r[:L]]
                else:
                    r = [get(t, 1) for t in r[:L]]
                res[k, :len(r)] = r
            return res
        depth = self.output_width()
        res = out[:n] if out is not None else np.empty((n, depth), self.batch_dtype())
        res[...] = 0
        for k, r in enumerate(toks):
            ids = [self._index.get(t, 0) for t in r if t != MASK]
            if ids:
                np.add.at(res[k], np.asarray(ids, np.int64), 1)
        if self.output_mode == "multi_hot":
            np.minimum(res, 1, out=res)
        elif self.output_mode == "tf_idf":
            res *= self._idf[:depth]
        return res

    def batch_dtype(self):
        """The output's dtype, as Keras 3 on JAX returns it: int32 ids and counts, float32 tf_idf."""
        return np.float32 if self.output_mode == "tf_idf" else np.int32

    def spec(self):
        raise ValueError(f"{self.name} (TextVectorization) runs on the host, before the engine: call it on a "
                         "model's string Input (its first stage), or on strings before fit")

    # ---- saving: as Keras writes it (TextVectorization and its inner StringLookup, `_lookup_layer`) ----
    _KERAS_DIRS = ("", "_lookup_layer/")

    def _keras_assets(self):
        """{path under the layer's asset folder: bytes}: the vocabulary file
        Keras's save_assets writes (none when the vocabulary is in the config)."""
        if self.input_vocabulary is not None or self._tokens is None:
            return {}
        data = "\n".join(self.get_vocabulary()).encode("utf-8")
        return {d + "vocabulary.txt": data for d in self._KERAS_DIRS}

    def _load_keras_assets(self, files):
        data = files.get("vocabulary.txt", files.get("_lookup_layer/vocabulary.txt"))
        if self.input_vocabulary is not None or data is None:
            return
        lines = data.decode("utf-8").splitlines()
        while lines and lines[-1] == "":
            lines.pop()
        special = self.get_vocabulary()[:self._start]
        tokens = lines[self._start:] if lines[:self._start] == special else lines
        if self.output_mode == "tf_idf":
            if self._idf is None:
                raise ValueError(f"{self.name}: the file has a tf_idf vocabulary without its idf_weights")
            self._set(tokens, self._idf)
        else:
            self.set_vocabulary(tokens)

    def _keras_h5_vars(self):
        """{group under the layer's path: {name: array}}: Keras's save_own_variables (idf_weights in tf_idf mode)."""
        own = {"idf_weights": self._idf} if self.output_mode == "tf_idf" and self._idf is not None else {}
        return {d + "vars": dict(own) for d in self._KERAS_DIRS}

    def _load_keras_h5_vars(self, groups):
        own = groups.get("vars") or groups.get("_lookup_layer/vars") or {}
        if self.output_mode == "tf_idf" and "idf_weights" in own:
            self._idf = np.asarray(own["idf_weights"], np.float32)


    # ---- boundfit's graph file (saving/graph_file.py) ----
    def _host_state(self):
        return {"tokens": self._tokens, "idf_weights": None if self._idf is None else self._idf.tolist()}

    def _set_host_state(self, state):
        if state.get("tokens") is not None:
            idf = state.get("idf_weights")
            self._set(state["tokens"], None if idf is None else np.asarray(idf, np.float32))


def _tf_graph_call(layer, inputs):
    """A TensorFlow tensor in a traced graph (tf.data's map(), as keras.io's
    text examples call the layer): the layer runs in Python on the batch's
    values when the graph runs (tf.numpy_function). TensorFlow is used only
    when the caller already has it: boundfit never imports it. None: not such a tensor."""
    tf = sys.modules.get("tensorflow")
    if tf is None or not type(inputs).__module__.startswith("tensorflow") or not tf.is_tensor(inputs) \
            or tf.executing_eagerly():
        return None
    out = tf.numpy_function(layer.vectorize, [inputs], tf.float32 if layer.output_mode == "tf_idf" else tf.int32,
                            stateful=False)
    if layer.output_mode == "int" and layer.output_sequence_length is None:
        one = layer.split is None and layer._widths is None and inputs.shape.rank == 1   # (N,) in, (N,) out
        out.set_shape([inputs.shape[0]] if one else [inputs.shape[0], None])
    else:
        out.set_shape([inputs.shape[0], layer.output_width()])
    return out


def _text(v, encoding, what):
    if isinstance(v, bytes):
        try:
            return v.decode(encoding)
        except UnicodeDecodeError as e:
            raise DataError(f"TextVectorization: {what} holds bytes that are not {encoding}: {e}") from None
    if isinstance(v, str):
        return v
    raise DataError(f"TextVectorization: {what} must hold strings (str or bytes), got {type(v).__name__} {v!r}")


def _string_rows(inputs, encoding, name):
    """(list of str, input shape) for strings given as a str, a list, or a
    NumPy array of str / bytes / objects of shape (), (N,) or (N, 1)."""
    if isinstance(inputs, (str, bytes)):
        inputs = np.array(inputs, dtype=object)
    if isinstance(inputs, (list, tuple)):
        a = np.empty(len(inputs), dtype=object)
        a[:] = [x[0] if isinstance(x, (list, tuple)) and len(x) == 1 else x for x in inputs] if inputs else []
        if inputs and isinstance(inputs[0], (list, tuple)):
            a = a.reshape(-1, 1)
    elif isinstance(inputs, np.ndarray):
        a = inputs
    elif hasattr(inputs, "__array__"):   # another library's tensor of strings (tf.data batches)
        try:
            a = np.asarray(inputs)
        except NotImplementedError:   # a symbolic tensor: tf.data's map() traces a graph
            raise TypeError(f"{name} (TextVectorization) runs in Python on the strings themselves, not inside a "
                            f"traced graph ({type(inputs).__name__}, as in tf.data's map()); vectorize the texts "
                            "first (ids = layer(texts)), or call the layer on a string keras.Input so that "
                            "fit / evaluate / predict vectorize each batch") from None
    else:
        raise DataError(f"{name} (TextVectorization) takes strings (a list or a NumPy array of str / bytes), got "
                        f"{type(inputs).__name__}")
    if a.dtype.kind not in "USO":
        raise DataError(f"{name} (TextVectorization) takes strings, got an array of dtype {a.dtype}")
    if a.ndim > 2 or (a.ndim == 2 and a.shape[1] != 1):
        raise DataError(f"{name} (TextVectorization) takes one string per sample: shape (N,) or (N, 1), got "
                        f"{a.shape}")
    flat = a.reshape(-1)
    if a.dtype.kind == "U":
        return flat.tolist(), a.shape
    return [_text(v, encoding, f"the input of {name}") for v in flat], a.shape


def _adapt_batches(data, batch_size, steps, encoding):
    """adapt()'s data as lists of str, batch by batch: an array or list in
    chunks (of batch_size, or 1024), a Sequence by index, an iterable as it yields."""
    if isinstance(data, (str, bytes)):
        raise DataError("TextVectorization.adapt: data must be a list or array of strings, or batches of them, "
                        "got one string")
    if isinstance(data, (list, tuple, np.ndarray)):
        rows, _ = _string_rows(data if not isinstance(data, tuple) else list(data), encoding, "adapt()")
        step = int(batch_size) if batch_size else 1024
        for s in range(0, len(rows), step):
            yield rows[s:s + step]
        return
    if hasattr(data, "__getitem__") and hasattr(data, "__len__"):
        it = (data[i] for i in range(len(data)))
    else:
        try:
            it = iter(data)
        except TypeError:
            raise DataError(f"TextVectorization.adapt: data must be a list or array of strings, or a generator / "
                            f"Sequence of batches of them, got {type(data).__name__}") from None
    for k, batch in enumerate(it):
        if steps is not None and k >= steps:
            break
        if isinstance(batch, tuple) and len(batch) in (2, 3) and not isinstance(batch[0], (str, bytes)):
            batch = batch[0]   # (x, y) batches: the texts
        try:
            rows, _ = _string_rows(batch, encoding, "adapt()")
        except DataError as e:
            raise DataError(f"TextVectorization.adapt: batch {k}: {e}") from None
        yield rows


# ---- Keras 3 config (layer.keras_config) ----

def _fn_config(l, arg):
    f = getattr(l, arg)
    if f is None or isinstance(f, str):
        return f
    raise ValueError(f"layer {l.name!r} (TextVectorization): {arg} is a callable ({getattr(f, '__name__', f)!r}), "
                     "which boundfit cannot write into a config or file; use one of the named options, or save "
                     "the model's weights (save_weights) and rebuild the layer in code")


@keras_config(TextVectorization)
def _text_vectorization_config(l):
    listed = (lambda v: None if v is None else np.asarray(v).tolist())
    return dict(max_tokens=l.max_tokens, standardize=_fn_config(l, "standardize"),
                split=_fn_config(l, "split"),
                ngrams=tuple(l.ngrams) if isinstance(l.ngrams, (list, tuple)) else l.ngrams, output_mode=l.output_mode,
                output_sequence_length=l.output_sequence_length, pad_to_max_tokens=l.pad_to_max_tokens,
                sparse=False, ragged=False, vocabulary=listed(l.input_vocabulary),
                idf_weights=listed(l.input_idf_weights), encoding=l.encoding, vocabulary_size=l.vocabulary_size())
