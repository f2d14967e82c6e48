"""The layering of ``skdp/``: no import circle, foundations import nothing above them.

The graph is read from the source with :mod:`ast` (every ``import`` and
``from … import``, at module level or inside functions), so a lazy import
counts as much as a module-level one. Nodes are modules; a package is its
``__init__``. ``from PKG import name`` depends on the submodule ``PKG.name``
when there is one, else on ``PKG``; importing ``a.b.c`` also runs the
``__init__`` of ``a.b`` (the top package ``skdp``, which only re-exports,
is left out of that rule).
"""

import ast
import pathlib

import pytest

import skdp

ROOT = pathlib.Path(skdp.__file__).parent

#: The foundations: everything else builds on them, so they import only each
#: other (and only downwards in this order).
FOUNDATIONS = ("exceptions", "_secure", "_inputs", "accounting", "mechanisms")

#: Deliberate exceptions, each with its reason. Old import paths kept working
#: for one release with a DeprecationWarning run their import only when the
#: old name is looked up.
DEPRECATED_FORWARDS = {("skdp.accounting", "skdp._ledger")}


def _modules():
    modules = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


def _targets(module, node, modules):
    """Modules of ``skdp`` that one import statement in ``module`` runs."""
    if isinstance(node, ast.Import):
        return {a.name for a in node.names if a.name in modules}
    package = module.split(".")
    if modules[module].name != "__init__.py":
        package = package[:-1]
    if node.level:
        base = package[: len(package) - node.level + 1]
        name = ".".join(base + ([node.module] if node.module else []))
    else:
        name = node.module or ""
    if name not in modules:
        return set()
    submodules = {f"{name}.{a.name}" for a in node.names} & set(modules)
    if len(submodules) == len(node.names):
        return submodules  # ``from PKG import submodule``: not PKG's own names
    return submodules | {name}


def import_graph():
    """``{module: set of skdp modules it imports}``, parents' ``__init__`` included."""
    modules = _modules()
    graph = {}
    for module, path in modules.items():
        deps = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                deps |= _targets(module, node, modules)
        for dep in list(deps):
            parts = dep.split(".")
            for i in range(2, len(parts)):
                parent = ".".join(parts[:i])
                if not module.startswith(parent + ".") and module != parent:
                    deps.add(parent)
        graph[module] = {
            d for d in deps if d != module and (module, d) not in DEPRECATED_FORWARDS
        }
    return graph


def circles(graph):
    """Strongly connected components with more than one module (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle():
    graph = import_graph()
    found = circles(graph)
    detail = [
        f"{c}: " + "; ".join(f"{a} -> {sorted(graph[a] & set(c))}" for a in c)
        for c in found
    ]
    assert not found, "import circles in skdp/:\n" + "\n".join(detail)


@pytest.mark.parametrize("name", FOUNDATIONS)
def test_foundations_import_only_foundations_below_them(name):
    graph = import_graph()
    below = {f"skdp.{f}" for f in FOUNDATIONS[: FOUNDATIONS.index(name)]}
    above = graph[f"skdp.{name}"] - below
    assert not above, f"skdp.{name} imports {sorted(above)}"


def test_the_checker_sees_a_circle_and_lazy_imports():
    # The checker has power: a two-module circle made of one module-level
    # and one function-level import is found.
    graph = {"a": {"b"}, "b": {"a"}, "c": {"a"}}
    assert circles(graph) == [["a", "b"]]
    tree = ast.parse("def f():\n    from . import _dask\n")
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom))
    assert _targets("skdp._base", node, _modules()) == {"skdp._dask"}


def test_old_ledger_import_path_still_works_with_a_deprecation():
    import skdp.accounting

    for name in ("PrivacyLedger", "rowwise"):
        with pytest.warns(DeprecationWarning, match=f"from skdp import {name}"):
            assert getattr(skdp.accounting, name) is getattr(skdp, name)
    with pytest.raises(AttributeError, match="no attribute 'Ledger'"):
        skdp.accounting.Ledger  # noqa: B018


def test_the_ledger_asks_a_transformer_whether_fit_reads_only_the_shape():
    # The ledger imports no estimator module to know this: the class declares it.
    from sklearn.base import BaseEstimator, TransformerMixin

    from skdp._ledger import READS_ONLY_SHAPE, _reads_only_shape
    from skdp.ranking import PairsEncoder

    class Declared(TransformerMixin, BaseEstimator):
        __skdp_reads_only_shape__ = True

        def fit(self, X, y=None):
            return self

    class Overrides(Declared):  # a subclass may read values in its own fit
        def fit(self, X, y=None):
            self.mean_ = X.mean()
            return self

    class Denied(Declared):
        __skdp_reads_only_shape__ = "yes"  # only True counts

    assert READS_ONLY_SHAPE in vars(Declared)
    assert _reads_only_shape(Declared()) and _reads_only_shape(PairsEncoder(3))
    assert not _reads_only_shape(Overrides()) and not _reads_only_shape(Denied())
    graph = import_graph()
    assert not {m for m in graph["skdp._ledger"] if m.startswith("skdp.ranking")}


def test_the_audit_asks_each_estimator_for_its_view_and_canary():
    # skdp.audit imports no estimator's private module: each estimator offers
    # its canary (and GLM view) itself, so a new one plugs in without edits.
    from sklearn.base import BaseEstimator

    from skdp.audit import GLMCanary, default_canary

    estimator_packages = {
        m for m in import_graph() if m.count(".") == 1 and not m.split(".")[1][0] == "_"
    } - {"skdp.audit", "skdp.accounting", "skdp.mechanisms", "skdp.exceptions"}
    for module, deps in import_graph().items():
        if module.startswith("skdp.audit"):
            private = {
                d
                for d in deps
                if any(d.startswith(p + "._") for p in estimator_packages)
            }
            assert not private, f"{module} imports {sorted(private)}"

    class NewEstimator(BaseEstimator):
        def _audit_canary(self):
            return "GLMCanary", {"index": 3}

    canary = default_canary(NewEstimator())
    assert isinstance(canary, GLMCanary) and canary.index == 3


@pytest.mark.parametrize("name", ["_clipping", "_dask", "_datafits"])
def test_the_engine_s_kernels_sit_under_the_engine_and_the_estimators(name):
    # The per-record clipping, the Dask plumbing and the losses import only
    # the foundations and each other: never the engine or the estimator layer.
    allowed = {f"skdp.{m}" for m in (*FOUNDATIONS, "_clipping", "_dask", "_datafits")}
    above = import_graph()[f"skdp.{name}"] - allowed
    assert not above, f"skdp.{name} imports {sorted(above)}"


def test_a_mechanism_failure_leaves_no_frame_of_the_fit(monkeypatch):
    # A MechanismFailedError raised deep in a fit kept every frame on its
    # way out, with their locals: the noise generator (whose state replays
    # the noise drawn) and the fit's intermediates (review). The caller gets
    # the message and no frame below the fit's own entry.
    import numpy as np

    import skdp.linear_model._sparse_glm as module
    from skdp import DPSparseGLM
    from skdp.exceptions import MechanismFailedError

    def fail(theta):
        raise MechanismFailedError("Noisy IHT produced a non-finite model.")

    monkeypatch.setattr(module, "_check_finite", fail)
    X = np.random.default_rng(0).standard_normal((300, 4))
    with pytest.raises(MechanismFailedError, match="non-finite") as info:
        DPSparseGLM(sparsity=2).fit(X, X[:, 0])
    kinds = (np.random.Generator, np.random.BitGenerator, np.random.SeedSequence)
    tb = info.value.__traceback__
    while tb is not None:
        frame = tb.tb_frame
        inner = ("private_schedule_iht", "_fit_private_schedule")
        assert frame.f_code.co_name not in inner
        assert not [k for k, v in frame.f_locals.items() if isinstance(v, kinds)]
        tb = tb.tb_next
    assert info.value.__context__ is None and info.value.__cause__ is None


@pytest.mark.parametrize("name", ["DPLinearRegression", "DPPCA"])
def test_any_error_after_the_noise_leaves_no_locals_in_the_fit_frames(name):
    """A warning the caller's filter turns into an error (pytest -W error)
    left the fit's frames with their locals: DPLinearRegression's exact
    clipped Gram matrix next to the noisy one, DPPCA's covariance, and the
    noise generator (review). The traceback keeps its lines; the finished
    frames keep no locals."""
    import warnings

    import numpy as np

    import skdp

    rng = np.random.default_rng(0)
    X = rng.standard_normal((2000, 3)) * 0.01 + 5.0
    y = X @ np.array([1.0, -2.0, 0.5])
    model = getattr(skdp, name)(epsilon=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        with pytest.raises(UserWarning) as info:
            model.fit(X, y)
    tb, names = info.value.__traceback__, []
    while tb is not None:
        frame = tb.tb_frame
        names.append(frame.f_code.co_name)
        if "/skdp/" in frame.f_code.co_filename and frame.f_code.co_name != "wrapper":
            assert frame.f_locals == {}, frame.f_code.co_name
        tb = tb.tb_next
    assert "fit" in names  # the lines are kept
    assert not hasattr(model, "privacy_spent_")


def test_a_nan_input_error_names_the_private_way_to_impute():
    # scikit-learn's message points to "an imputer": the natural mean
    # imputer releases the data's means, which the ledger then flags
    # (review). The error keeps scikit-learn's text and names the recipe.
    import numpy as np

    import skdp

    X = np.ones((20, 2))
    X[0, 0] = np.nan
    y = np.arange(20) % 2
    for model in (skdp.DPStandardScaler(), skdp.DPLogisticRegression(classes=[0, 1])):
        with pytest.raises(ValueError, match="contains NaN") as info:
            model.fit(X, y)
        assert "strategy='constant'" in str(info.value)
        assert str(info.value).count("keep_empty_features") == 1
