"""audio_dataset_from_directory, as Keras 3 defines it: the same files,
labels, subsets, order and class_names (folder_data.index_directory), and
batches of float32 audio (batch, samples, channels), 16-bit PCM .wav files
decoded per batch with the standard `wave` module and NumPy as
tf.audio.decode_wav decodes them (value / 32768), cut or zero-padded to
output_sequence_length, else zero-padded to the batch's longest file (as
Keras's padded_batch); ragged=True gives each batch as a list of arrays."""

import wave

import numpy as np

from . import folder_data
from .errors import DataError

ALLOWED_FORMATS = (".wav",)


class AudioFolderDataset(folder_data.FolderDataset):
    """Batches (audio, labels) of a folder of .wav files, decoded per batch."""

    def __init__(self, paths, labels, *, output_sequence_length, ragged, **kw):
        super().__init__(paths, labels, **kw)
        self.output_sequence_length, self.ragged = output_sequence_length, ragged

    def decode(self, path, index):
        """One file as (samples, channels) float32."""
        try:
            with wave.open(path, "rb") as w:
                if w.getsampwidth() != 2:
                    raise wave.Error(f"{8 * w.getsampwidth()}-bit samples; only 16-bit PCM is read "
                                     "(as tf.audio.decode_wav)")
                ch, n = w.getnchannels(), w.getnframes()
                raw = w.readframes(n)
        except (OSError, EOFError, wave.Error) as e:
            raise self.bad_file(path, index, e) from e
        a = np.frombuffer(raw, dtype="<i2")
        a = a[:len(a) // ch * ch].reshape(-1, ch).astype(np.float32) / np.float32(32768)
        n = self.output_sequence_length
        if n is not None:
            a = a[:n] if len(a) >= n else np.concatenate([a, np.zeros((n - len(a), ch), np.float32)])
        return a

    def read_batch(self, paths, index):
        waves = []
        kept = self.each_file(paths, index, lambda p, j: waves.append(self.decode(p, index)))
        paths = [paths[k] for k in kept]
        if self.ragged:
            return waves, kept
        if len({w.shape[1] for w in waves}) > 1:
            raise DataError(f"batch {index}: files with different channel counts: "
                                        f"{ {p: w.shape[1] for p, w in zip(paths, waves)} }", batch_index=index)
        out = np.zeros((len(waves), max(len(w) for w in waves), waves[0].shape[1]), np.float32)
        for j, w in enumerate(waves):
            out[j, :len(w)] = w
        return out, kept


def audio_dataset_from_directory(directory, labels="inferred", label_mode="int", class_names=None, batch_size=32,
                                 sampling_rate=None, output_sequence_length=None, ragged=False, shuffle=True,
                                 seed=None, validation_split=None, subset=None, follow_links=False, verbose=True,
                                 workers=None, max_queue_size=None, skip_bad_files=False):
    """Keras 3's keras.utils.audio_dataset_from_directory: the .wav files
    under `directory`, labels from its subfolders, a list or none; one data
    set, or (training, validation) for subset='both'; each has class_names
    and file_paths. sampling_rate (resampling, which Keras does with
    tensorflow-io) is refused. skip_bad_files (boundfit's): a file that is
    no 16-bit PCM .wav is left out of its batch with a warning, instead of a
    DataError."""
    labels, label_mode = folder_data.check_args(labels, label_mode, class_names, validation_split, subset, shuffle,
                                                seed, "audio")
    if ragged and output_sequence_length is not None:
        raise ValueError("ragged=True and output_sequence_length cannot both be set")
    if output_sequence_length is not None and (isinstance(output_sequence_length, bool) or
                                               not isinstance(output_sequence_length, (int, np.integer))
                                               or output_sequence_length <= 0):
        raise ValueError(f"output_sequence_length must be a positive int or None, got "
                         f"output_sequence_length={output_sequence_length!r}")
    if sampling_rate is not None:
        raise ValueError(f"sampling_rate={sampling_rate!r}: resampling is not supported (Keras needs tensorflow-io "
                         "for it); resample the files, or leave sampling_rate=None to read them at their own rate")
    batch_size = folder_data.check_batch_size(batch_size)
    skip_bad_files = folder_data.check_skip(skip_bad_files)
    if seed is None:
        seed = np.random.randint(1e6)
    paths, labs, class_names = folder_data.index_directory(directory, labels, ALLOWED_FORMATS, class_names, shuffle,
                                                           seed, follow_links, verbose)
    folder_data.check_binary(label_mode, class_names)
    out = [AudioFolderDataset(p, lab, label_mode=label_mode, num_classes=len(class_names) if class_names else 0,
                              class_names=class_names, batch_size=batch_size, shuffle=shuffle and training, seed=seed,
                              workers=workers, max_queue_size=max_queue_size, skip_bad_files=skip_bad_files,
                              output_sequence_length=output_sequence_length, ragged=ragged)
           for p, lab, training in folder_data.subsets(paths, labs, validation_split, subset, directory, "audio files",
                                                       ALLOWED_FORMATS)]
    return tuple(out) if subset == "both" else out[0]
