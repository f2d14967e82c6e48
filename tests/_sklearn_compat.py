"""What the tests need from scikit-learn, on every supported version (1.6-1.10).

Test files import ``parametrize_with_checks`` from here instead of from
``sklearn.utils.estimator_checks``. It runs the checks strictly everywhere: an
expected failure that starts passing is an error, so the lists of expected
failures stay honest.

* scikit-learn >= 1.8 takes ``xfail_strict``; it is passed as ``True``.
* scikit-learn 1.6 and 1.7 do not know the keyword; their ``xfail`` marks are
  rebuilt with ``strict=True`` (they would otherwise follow the ``xfail_strict``
  option of pytest's configuration).
* scikit-learn 1.6 hands pytest a generator of parameter sets, which pytest
  >= 9 deprecates (an error under this suite's warning filters); the sets are
  always handed on as a list.
"""

import inspect

import pytest
from sklearn.utils import estimator_checks

__all__ = ["HAS_XFAIL_STRICT", "parametrize_with_checks"]

_SIGNATURE = inspect.signature(estimator_checks.parametrize_with_checks)
HAS_XFAIL_STRICT = "xfail_strict" in _SIGNATURE.parameters


def parametrize_with_checks(estimators, *, expected_failed_checks=None):
    """``sklearn.utils.estimator_checks.parametrize_with_checks``, strict xfail."""
    kwargs = {"expected_failed_checks": expected_failed_checks}
    if HAS_XFAIL_STRICT:
        kwargs["xfail_strict"] = True
    decorator = estimator_checks.parametrize_with_checks(estimators, **kwargs)
    argnames, argvalues = decorator.mark.args
    if not HAS_XFAIL_STRICT:
        argvalues = [_strict(param) for param in argvalues]
    return pytest.mark.parametrize(argnames, list(argvalues), **decorator.mark.kwargs)


def _strict(param):
    """The parameter set, with every ``xfail`` mark made strict."""
    marks = getattr(param, "marks", None)
    if not marks:
        return param
    marks = [
        pytest.mark.xfail(*mark.args, **{**mark.kwargs, "strict": True})
        if mark.name == "xfail"
        else mark
        for mark in marks
    ]
    return pytest.param(*param.values, marks=marks, id=param.id)
