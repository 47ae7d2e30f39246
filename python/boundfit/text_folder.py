"""text_dataset_from_directory, as Keras 3 defines it: the same files,
labels, subsets, order and class_names (folder_data.index_directory), and
batches of the files' contents as bytes (a NumPy object array, as Keras's
tf.data strings arrive in NumPy), cut to max_length bytes when given; read
per batch by fit's worker threads."""

import numpy as np

from . import folder_data


class TextFolderDataset(folder_data.FolderDataset):
    """Batches (texts, labels) of a folder of .txt files, read per batch."""

    def __init__(self, paths, labels, *, max_length, **kw):
        super().__init__(paths, labels, **kw)
        self.max_length = max_length

    def read(self, path, index):
        try:
            with open(path, "rb") as f:
                return f.read() if self.max_length is None else f.read(self.max_length)
        except OSError as e:
            raise self.bad_file(path, index, e) from e

    def read_batch(self, paths, index):
        out = np.empty(len(paths), dtype=object)
        kept = self.each_file(paths, index, lambda p, j: out.__setitem__(j, self.read(p, index)))
        return out[:len(kept)], kept


def text_dataset_from_directory(directory, labels="inferred", label_mode="int", class_names=None, batch_size=32,
                                max_length=None, shuffle=True, seed=None, validation_split=None, subset=None,
                                follow_links=False, format="tf", verbose=True, workers=None, max_queue_size=None, skip_bad_files=False):
    """Keras 3's keras.utils.text_dataset_from_directory: the .txt files under
    `directory`, labels from its subfolders, a list or none; one data set, or
    (training, validation) for subset='both'; each has class_names and
    file_paths. workers / max_queue_size: the threads reading the files and
    the batches they keep ahead (in fit's memory plan). skip_bad_files
    (boundfit's): an unreadable file is left out of its batch with a
    warning, instead of a DataError."""
    labels, label_mode = folder_data.check_args(labels, label_mode, class_names, validation_split, subset, shuffle,
                                                seed, "text")
    if format not in ("tf", "grain"):
        raise ValueError(f"format must be 'tf' or 'grain', got format={format!r}")
    if max_length is not None and (isinstance(max_length, bool) or not isinstance(max_length, (int, np.integer))
                                   or max_length < 0):
        raise ValueError(f"max_length must be a non-negative int or None, got max_length={max_length!r}")
    batch_size = folder_data.check_batch_size(batch_size)
    skip_bad_files = folder_data.check_skip(skip_bad_files)
    if seed is None:
        seed = np.random.randint(1e6)
    paths, labs, class_names = folder_data.index_directory(directory, labels, (".txt",), class_names, shuffle, seed,
                                                           follow_links, verbose)
    folder_data.check_binary(label_mode, class_names)
    out = [TextFolderDataset(p, lab, label_mode=label_mode, num_classes=len(class_names) if class_names else 0,
                             class_names=class_names, batch_size=batch_size, shuffle=shuffle and training, seed=seed,
                             workers=workers, max_queue_size=max_queue_size, skip_bad_files=skip_bad_files, max_length=max_length)
           for p, lab, training in folder_data.subsets(paths, labs, validation_split, subset, directory, "text files",
                                                       ".txt")]
    return tuple(out) if subset == "both" else out[0]
