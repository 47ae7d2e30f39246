"""Keras's data set protocol PyDataset (also named Sequence): what fit /
evaluate / predict read batches from (engine/sources.py)."""


class PyDataset:
    """Keras data set protocol: __len__ (batches per epoch), __getitem__(i) -> (x, y), on_epoch_end()."""

    def __init__(self, workers=1, use_multiprocessing=False, max_queue_size=10):
        self.workers, self.use_multiprocessing, self.max_queue_size = workers, use_multiprocessing, max_queue_size

    def __len__(self):
        raise NotImplementedError

    def __getitem__(self, index):
        raise NotImplementedError

    def on_epoch_end(self):
        pass


Sequence = PyDataset
