"""The model of ``skdpval value``: ``--model`` by class name, ``--model-params``.

``--method shapley`` takes the estimators the valuators map
(:func:`skdpval.families.registered`); ``--method label-quality`` any
classifier or regressor of scikit-learn (:func:`sklearn.utils.all_estimators`)
that can be built from literal parameters, as :class:`~skdpval.DPLabelQuality`
takes. A name is looked up in those lists, never imported.
"""

import ast
import difflib
import inspect
import json

from ._parser import InputError

DEFAULT_MODELS = {"classification": "LogisticRegression", "regression": "Ridge"}


def parse_model_params(items):
    """The ``--model-params`` as a dict: literals only, never evaluated code."""
    if not items:
        return {}
    if len(items) == 1 and items[0].lstrip().startswith("{"):
        try:
            params = json.loads(items[0])
        except ValueError as error:
            raise InputError(f"--model-params is not a JSON object: {error}") from None
        if not isinstance(params, dict):
            raise InputError("--model-params must be a JSON object")
        return params
    params = {}
    for item in items:
        key, sep, text = item.partition("=")
        key = key.strip()
        if not sep or not key.isidentifier():
            raise InputError(f"--model-params {item!r} is not KEY=VALUE")
        params[key] = _literal(text.strip())
    return params


def _literal(text):
    """A JSON or Python literal (numbers, strings, lists, tuples, dicts,
    True/False/None), else the text itself."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def valuation_models():
    """``{name: class}`` of the estimators the valuators map (``--method
    shapley``)."""
    from ..families import Refused, registered

    return {cls.__name__: cls for cls, entry in registered().items()
            if not isinstance(entry, Refused)}


def _needs(cls):
    """The parameters of ``cls`` without a default (another estimator, mostly)."""
    parameters = list(inspect.signature(cls.__init__).parameters.values())[1:]
    return [p.name for p in parameters if p.default is p.empty
            and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]


def sklearn_models():
    """``{name: class}`` of scikit-learn's classifiers and regressors
    (``--method label-quality``), those that need another estimator included
    (refused with a reason by :func:`model_class`)."""
    from sklearn.utils import all_estimators

    return dict(all_estimators(type_filter=["classifier", "regressor"]))


def _unknown(name, names, what):
    close = difflib.get_close_matches(name, names, n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    return f"--model {name!r} is not {what}{hint}"


def model_class(name, method):
    """The class ``--model name`` names for ``method``, or an error that says
    which names the method takes."""
    if method == "shapley":
        models = valuation_models()
        if name in models:
            return models[name]
        if name in sklearn_models():
            raise InputError(
                f"--model {name}: --method shapley values rows with the models "
                f"the valuators map ({', '.join(sorted(models))}); any "
                "scikit-learn classifier or regressor works with --method "
                "label-quality")
        raise InputError(_unknown(name, list(models), "a model the valuators map "
                                  f"(one of {', '.join(sorted(models))})"))
    models = sklearn_models()
    if name not in models:
        raise InputError(_unknown(name, list(models), "a classifier or regressor of "
                                  "scikit-learn (sklearn.utils.all_estimators)"))
    needs = _needs(models[name])
    if needs:
        raise InputError(f"--model {name} needs {', '.join(needs)}: other "
                         "estimators, which the command line cannot give")
    return models[name]


def make_model(name, params, method, task=None):
    """The estimator ``name`` with ``params``, checked by scikit-learn, and
    against the ``task`` when given."""
    from sklearn.base import is_classifier

    cls = model_class(name, method)
    try:
        model = cls(**params)
    except TypeError as error:
        raise InputError(f"--model-params: {name} refuses them: "
                         f"{' '.join(str(error).split())}") from None
    try:
        model._validate_params()  # scikit-learn's own checks, before any work
    except (ValueError, TypeError) as error:
        raise InputError(f"--model-params: {' '.join(str(error).split())}") from None
    if task is not None and is_classifier(model) != (task == "classification"):
        kind = "classifier" if is_classifier(model) else "regressor"
        raise InputError(f"--model {name} is a {kind}, but the task is {task} "
                         "(--task)")
    if (method == "label-quality" and is_classifier(model)
            and not (hasattr(model, "decision_function")
                     or hasattr(model, "predict_proba"))):
        raise InputError(f"--model {name} has neither decision_function nor "
                         "predict_proba (with these --model-params): "
                         "--method label-quality scores labels with one of them")
    return model


def choice_line(valuator):
    """The progress line naming the model chosen on the validation rows
    (``--model auto``), or None when no choice was made."""
    choice = getattr(valuator, "model_choice_", None)
    if choice is None:
        return None
    why = choice.get("why", "the lower cross-validated log loss on the "
                             "validation rows, by more than one standard error")
    return f"model: {choice['chosen']} of {', '.join(choice['candidates'])} ({why})"
