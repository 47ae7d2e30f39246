"""keras.wrappers: scikit-learn estimators around a compiled model (SKLearnClassifier, SKLearnRegressor,
SKLearnTransformer), as Keras 3 has them: `model` is a compiled Model (cloned, compile included, for each fit) or a
function `model(X=..., y=..., **model_kwargs)` returning one; classifiers one-hot encode the labels and predict
classes. scikit-learn is an optional dependency (this module is imported on first use of `boundfit.wrappers`)."""

import copy

import numpy as np

from .models import Model
from .models.cloning import clone_model

try:   # optional dependency, as in Keras: the classes exist, and refuse to be made without it
    import sklearn
    import sklearn.pipeline
    import sklearn.preprocessing
    from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, TransformerMixin
    from sklearn.utils.multiclass import type_of_target
    from sklearn.utils.validation import check_is_fitted
except ImportError:
    sklearn = None

    class BaseEstimator:
        pass

    class ClassifierMixin:
        pass

    class RegressorMixin:
        pass

    class TransformerMixin:
        pass


def _validate(estimator, *args, **kwargs):
    """scikit-learn's input checks (validate_data from 1.6, the estimator's method before)"""
    try:
        from sklearn.utils.validation import validate_data   # optional dependency
    except ImportError:
        return estimator._validate_data(*args, **kwargs)
    return validate_data(estimator, *args, **kwargs)


class _TargetReshaper(TransformerMixin, BaseEstimator):
    """1-D targets as a column (for the encoders) and back"""

    def fit(self, y):
        self.ndim_ = y.ndim
        return self

    def transform(self, y):
        return y.reshape(-1, 1) if y.ndim == 1 else y

    def inverse_transform(self, y):
        check_is_fitted(self)
        return np.squeeze(y, axis=1) if self.ndim_ == 1 and y.ndim == 2 else y


class _SKLBase(BaseEstimator):
    def __init__(self, model, warm_start=False, model_kwargs=None, fit_kwargs=None):
        if sklearn is None:
            raise ImportError(f"{type(self).__name__} requires `scikit-learn` to be installed. Run "
                              "`pip install scikit-learn` to install it.")
        self.model = model
        self.warm_start = warm_start
        self.model_kwargs = model_kwargs
        self.fit_kwargs = fit_kwargs

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.non_deterministic = True
        return tags

    def __sklearn_clone__(self):
        model = self.model if callable(self.model) and not isinstance(self.model, Model) else \
            copy.deepcopy(self.model)
        return type(self)(model=model, warm_start=self.warm_start, model_kwargs=self.model_kwargs)

    @property
    def epoch_(self):
        """The number of epochs of the last fit."""
        history = getattr(self, "history_", None)
        return len(history.epoch) if history is not None else 0

    def _get_model(self, X, y):
        if isinstance(self.model, Model):
            return clone_model(self.model)
        if not callable(self.model):
            raise TypeError(f"{type(self).__name__}: model must be a compiled Model or a function returning one, "
                            f"got {type(self.model).__name__}")
        return self.model(X=X, y=y, **(self.model_kwargs or {}))

    def fit(self, X, y, **kwargs):
        """Fit a new model (a clone, or the function's) on X, y; kwargs (over fit_kwargs) go to model.fit."""
        X, y = _validate(self, X, y)
        y = self._process_target(y, reset=True)
        model = self._get_model(X, y)
        if not isinstance(model, Model) or model.optimizer is None or model.loss is None:
            raise RuntimeError("Given model needs to be compiled, and have a loss and an optimizer.")
        fit_kwargs = dict(self.fit_kwargs or {})
        fit_kwargs.update(kwargs)
        self.history_ = model.fit(X, y, **fit_kwargs)
        self.model_ = model
        return self

    def predict(self, X):
        """The fitted model's predictions (a classifier's: the classes)."""
        check_is_fitted(self)
        X = _validate(self, X, reset=False)
        return self._reverse_process_target(self.model_.predict(X, verbose=0))

    def _process_target(self, y, reset=False):
        type_of_target(y, raise_unknown=True)
        if reset:
            self._target_encoder = _TargetReshaper().fit(y)
        return self._target_encoder.transform(y)

    def _reverse_process_target(self, y):
        return self._target_encoder.inverse_transform(y)


class SKLearnClassifier(ClassifierMixin, _SKLBase):
    """scikit-learn classifier: labels one-hot encoded for the model (binary and multiclass targets), predict()
    gives the label of the largest output, decision_function() the model's outputs, classes_ the labels."""

    def decision_function(self, X):
        check_is_fitted(self)
        X = _validate(self, X, reset=False)
        return self.model_.predict(X, verbose=0)

    def _process_target(self, y, reset=False):
        kind = type_of_target(y, raise_unknown=True)
        if kind not in ("binary", "multiclass"):
            raise ValueError(f"Only binary and multiclass target types are supported. Target type: {kind}")
        if reset:
            self._target_encoder = sklearn.pipeline.make_pipeline(
                _TargetReshaper(), sklearn.preprocessing.OneHotEncoder(sparse_output=False)).fit(y)
            self.classes_ = np.unique(y)
            if len(self.classes_) == 1:
                raise ValueError("Classifier can't train when only one class is present.")
        return self._target_encoder.transform(y)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True
        return tags


class SKLearnRegressor(RegressorMixin, _SKLBase):
    """scikit-learn regressor: the targets as they are (a 1-D target back as 1-D)."""

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        return tags


class SKLearnTransformer(TransformerMixin, _SKLBase):
    """scikit-learn transformer: transform(X) is the fitted model's output (an encoder's features, say)."""

    def transform(self, X):
        check_is_fitted(self)
        X = _validate(self, X, reset=False)
        return self.model_.predict(X, verbose=0)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.transformer_tags.preserves_dtype = []
        return tags
