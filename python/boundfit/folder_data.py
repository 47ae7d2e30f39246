"""Directory data sets, the part image / text / audio share: the file index
as Keras 3 makes it (keras/src/utils/dataset_utils.py: os.walk sorted,
class folders in alphanumeric order, the paths shuffled by NumPy's
RandomState(seed), the validation split from the end), and FolderDataset,
a PyDataset that holds only the file list and reads each batch's files when
asked (by fit's worker threads, engine/workers.py). A file that cannot be
read is a DataError naming it, or, with skip_bad_files=True (boundfit's
own keyword), left out of its batch with a warning."""

import os
import warnings

import numpy as np

from .errors import DataError
from .pydataset import PyDataset

LABEL_MODES = ("int", "categorical", "binary", None)


def check_args(labels, label_mode, class_names, validation_split, subset, shuffle, seed, what):
    """Keras's argument checks, in its order; returns (labels, label_mode) with None for both if either is."""
    if labels not in ("inferred", None):
        if not isinstance(labels, (list, tuple)):
            raise ValueError(f"labels must be 'inferred', None or a list/tuple of integer labels, one per {what} file "
                             f"in alphanumeric order of their paths, got labels={labels!r}")
        if class_names:
            raise ValueError(f"class_names can only be given with labels='inferred', got labels={labels!r} and "
                             f"class_names={class_names!r}")
    if label_mode not in LABEL_MODES:
        raise ValueError(f"label_mode must be 'int', 'categorical', 'binary' or None, got label_mode={label_mode!r}")
    if labels is None or label_mode is None:
        labels = label_mode = None
    if validation_split and not 0 < validation_split < 1:
        raise ValueError(f"validation_split must be between 0 and 1, got validation_split={validation_split!r}")
    if (validation_split or subset) and not (validation_split and subset):
        raise ValueError(f"subset and validation_split go together: got validation_split={validation_split!r}, "
                         f"subset={subset!r}")
    if subset not in ("training", "validation", "both", None):
        raise ValueError(f"subset must be 'training', 'validation' or 'both', got subset={subset!r}")
    if validation_split and shuffle and seed is None:
        raise ValueError("validation_split with shuffle=True needs a seed, so that the training and validation "
                         "subsets do not overlap: pass seed=")
    return labels, label_mode


def _files_under(directory, follow_links, formats):
    """(root, file name) of the files with an allowed extension, as Keras's iter_valid_files walks them."""
    for root, _, files in sorted(os.walk(directory, followlinks=follow_links), key=lambda w: w[0]):
        for fname in sorted(files):
            if fname.lower().endswith(formats):
                yield root, fname


def index_directory(directory, labels, formats, class_names=None, shuffle=True, seed=None, follow_links=False,
                    verbose=True):
    """(file paths, labels or None, class names or None), as Keras's dataset_utils.index_directory."""
    if not isinstance(directory, (str, os.PathLike)) or not os.path.isdir(directory):
        raise ValueError(f"directory must be an existing folder, got directory={directory!r}")
    directory = os.fspath(directory)
    if labels == "inferred":
        subdirs = [d.rstrip("/") for d in sorted(os.listdir(directory))
                   if os.path.isdir(os.path.join(directory, d)) and not d.startswith(".")]
        if class_names is not None:
            if not set(class_names).issubset(subdirs):
                raise ValueError(f"class_names {list(class_names)} do not name subfolders of {directory}: expected "
                                 f"{subdirs} (or a subset of it)")
            subdirs = list(class_names)   # the order given
    else:
        if class_names is not None:
            raise ValueError("class_names cannot be given with labels=None" if labels is None else
                             "class_names cannot be given with a list of labels (the class names are the sorted "
                             "labels)")
        subdirs = [""]
    class_names = subdirs
    filenames, per_class = [], []
    for k, sub in enumerate(subdirs):
        folder = os.path.join(directory, sub)
        dirname = os.path.basename(folder)
        names = [os.path.join(dirname, os.path.relpath(os.path.join(root, f), folder))
                 for root, f in _files_under(folder, follow_links, formats)]
        if labels == "inferred" and not names:
            warnings.warn(f"class folder {folder!r} (class {k}, {sub!r}) has no files of the allowed formats "
                          f"{formats}: the class keeps its index, with no samples", stacklevel=3)
        per_class.append(len(names))
        filenames += names
    if labels == "inferred":
        labels = np.repeat(np.arange(len(subdirs), dtype="int32"), per_class)
    elif labels is None:
        class_names = None
    else:
        if len(labels) != len(filenames):
            raise ValueError(f"labels has {len(labels)} entries but {directory} holds {len(filenames)} files of "
                             f"the allowed formats {formats}")
        class_names = [str(v) for v in sorted(set(labels))]
    if verbose:
        print(f"Found {len(filenames)} files." if labels is None else
              f"Found {len(filenames)} files belonging to {len(class_names)} classes.")
    paths = [os.path.join(directory, f) for f in filenames]
    if shuffle:   # Keras's global shuffle, bit for bit
        if seed is None:
            seed = np.random.randint(1e6)
        np.random.RandomState(seed).shuffle(paths)
        if labels is not None:
            np.random.RandomState(seed).shuffle(labels)
    return paths, labels, class_names


def split(paths, labels, validation_split, subset):
    """The training or validation part, as Keras's get_training_or_validation_split (validation from the end)."""
    if not validation_split:
        return paths, labels
    n_val = int(validation_split * len(paths))
    if subset == "training":
        print(f"Using {len(paths) - n_val} files for training.")
        return paths[:-n_val], (labels[:-n_val] if labels is not None else None)
    print(f"Using {n_val} files for validation.")
    return paths[-n_val:], (labels[-n_val:] if labels is not None else None)


def subsets(paths, labels, validation_split, subset, directory, what, formats):
    """[(paths, labels, is the training part)] for subset 'both' (two) or any other (one); an empty part is
    named as Keras names it."""
    parts = (("training", "validation") if subset == "both" else (subset,))
    out = []
    for part in parts:
        p, lab = split(paths, labels, validation_split, part)
        if not len(p):
            prefix = f"{part} " if subset == "both" else ""
            raise ValueError(f"No {prefix}{what} found in directory {directory}. Allowed formats: {formats}")
        out.append((p, lab, part != "validation"))
    return out


def check_binary(label_mode, class_names):
    if label_mode == "binary" and len(class_names) != 2:
        raise ValueError(f"label_mode='binary' needs exactly 2 classes, got class_names={class_names}")


def check_skip(skip_bad_files):
    if not isinstance(skip_bad_files, (bool, np.bool_)):
        raise ValueError(f"skip_bad_files must be True or False, got skip_bad_files={skip_bad_files!r}")
    return bool(skip_bad_files)


def check_batch_size(batch_size):
    if batch_size is not None and (isinstance(batch_size, bool) or not isinstance(batch_size, (int, np.integer))
                                   or batch_size <= 0):
        raise ValueError(f"batch_size must be a positive int or None, got batch_size={batch_size!r}")
    return None if batch_size is None else int(batch_size)


class FolderDataset(PyDataset):
    """Batches of files read when asked: __getitem__(i) reads batch i's files
    (read_batch, by a subclass). Holds only the paths and labels.
    shuffle=False: Keras's batches, in order. shuffle=True: the first epoch
    in Keras's shuffled file order (file_paths), each later one in a fresh
    permutation from the seed (Keras draws from a tf.data buffer of 8 batches
    instead, with TensorFlow's generator). fit(shuffle=...) leaves the order
    to the data set, as Keras does with its tf.data sets."""
    _keeps_order = True

    def __init__(self, paths, labels, label_mode, num_classes, class_names, batch_size, shuffle, seed, workers=None,
                 max_queue_size=None, skip_bad_files=False):
        workers = workers if workers is not None else min(4, os.cpu_count() or 1)
        queue = max_queue_size if max_queue_size is not None else max(2, 2 * workers)
        super().__init__(workers=workers, use_multiprocessing=False, max_queue_size=queue)
        self.file_paths = list(paths)
        self._labels = None if labels is None else np.asarray(labels, dtype="int64")
        self.label_mode, self.num_classes, self.class_names = label_mode, num_classes, class_names
        self.batch_size, self.shuffle, self.seed = batch_size, shuffle, seed
        self._order, self._epoch = np.arange(len(self.file_paths)), 0
        self.skip_bad_files, self._skipped = bool(skip_bad_files), set()

    def __len__(self):
        n = len(self.file_paths)
        return n if self.batch_size is None else -(-n // self.batch_size)

    def _rows(self, i):
        if isinstance(i, (bool, np.bool_)) or not isinstance(i, (int, np.integer)):
            raise TypeError(f"batch index must be an int, got {type(i).__name__}")
        if not -len(self) <= i < len(self):
            raise IndexError(f"batch index {i} out of range: the data set has {len(self)} batches")
        i = int(i) % len(self)
        if self.batch_size is None:
            return self._order[i:i + 1]
        return self._order[i * self.batch_size:(i + 1) * self.batch_size]

    def _encoded(self, rows):
        lab = self._labels[rows]
        if self.label_mode == "int":
            return lab.astype("int32")
        if self.label_mode == "binary":
            return lab.astype("float32")[:, None]
        out = np.zeros((len(rows), self.num_classes), "float32")
        out[np.arange(len(rows)), lab] = 1
        return out

    def __getitem__(self, i):
        rows = self._rows(i)
        x, kept = self.read_batch([self.file_paths[r] for r in rows], i)
        rows = rows[kept]
        y = None if self.label_mode is None else self._encoded(rows)
        if self.batch_size is None:   # single samples, as Keras's unbatched data sets
            x = x[0]
            y = None if y is None else y[0]
        return x if y is None else (x, y)

    def __iter__(self):
        for i in range(len(self)):
            yield self[i]

    def read_batch(self, paths, index):
        """(x of the files read, their positions in `paths`): a subclass reads them with each_file."""
        raise NotImplementedError

    def each_file(self, paths, index, read):
        """read(path, row) for each of batch `index`'s paths, row counting the files read before it; returns the
        positions in `paths` of the files read. A file whose read raises bad_file's DataError is, with
        skip_bad_files, left out with a warning naming it (once: it is not read again)."""
        kept, bad = [], []
        for k, p in enumerate(paths):
            if p in self._skipped:
                bad.append(p)
                continue
            try:
                read(p, len(kept))
            except DataError as e:
                if not self.skip_bad_files or getattr(e, "bad_path", None) != p:
                    raise
                self._skipped.add(p)
                bad.append(p)
                warnings.warn(f"skip_bad_files: {e}; left out of batch {index}", UserWarning, stacklevel=2)
                continue
            kept.append(k)
        if not kept:
            raise DataError(f"batch {index}: none of its {len(paths)} files can be read ({bad}); skip_bad_files "
                            f"leaves bad files out, but a batch needs one sample: remove them from the folder",
                            batch_index=index)
        return kept

    @property
    def skipped_files(self):
        """The files skip_bad_files has left out so far, sorted."""
        return sorted(self._skipped)

    def on_epoch_end(self):
        if self.shuffle:
            self._epoch += 1
            self._order = np.random.default_rng([int(self.seed), self._epoch]).permutation(len(self.file_paths))

    def bad_file(self, path, index, err):
        """A file that cannot be read: a DataError naming it (and the batch), chained from the reader's error."""
        e = DataError(f"batch {index}: cannot read {path!r}: {type(err).__name__}: {err}", batch_index=index)
        e.bad_path = path
        return e
