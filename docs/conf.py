"""Sphinx configuration for the skdp documentation.

Build with ``python -m sphinx -b html docs docs/_build/html`` (or ``make html``
inside ``docs/``) after ``pip install -e ".[docs]"``.
"""

import importlib.util
import os
import re
from pathlib import Path

import skdp

# -- Project information ---------------------------------------------------

project = "skdp"
author = "skdp developers"
copyright = "skdp developers"
release = skdp.__version__
version = ".".join(release.split(".")[:2])

# -- General configuration -------------------------------------------------

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

# myst-parser is optional (it is not in the ``docs`` extra). With it the
# benchmark tables in benchmarks.md are rendered; without it they are shown
# as Markdown source. See ``_benchmarks_page`` below.
HAVE_MYST = importlib.util.find_spec("myst_parser") is not None
if HAVE_MYST:
    extensions.append("myst_parser")

source_suffix = {".rst": "restructuredtext"}
templates_path = ["_templates"]
# benchmarks.md is pulled into benchmarks.rst, never built as a page of its own.
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store", "benchmarks.md"]
root_doc = "index"
default_role = "literal"

# -- autodoc / autosummary / numpydoc ---------------------------------------

autosummary_generate = True
autodoc_default_options = {"members": True}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

# -- intersphinx ------------------------------------------------------------

INTERSPHINX_PROJECTS = {
    "python": "https://docs.python.org/3/",
    "numpy": "https://numpy.org/doc/stable/",
    "scipy": "https://docs.scipy.org/doc/scipy/",
    "sklearn": "https://scikit-learn.org/stable/",
    "joblib": "https://joblib.readthedocs.io/en/stable/",
}


def _reachable_inventories(projects, timeout=5.0):
    """``intersphinx_mapping`` for the projects whose inventory downloads.

    Each inventory is fetched once here into a cache under ``_build/`` and
    handed to Sphinx as a local file. Offline (or with a site down) that
    project is left out: its links render as plain text and the build stays
    free of warnings, so ``-W`` works with or without network.
    ``SKDP_DOCS_OFFLINE=1`` skips the downloads.
    """
    import urllib.request

    if os.environ.get("SKDP_DOCS_OFFLINE"):
        return {}
    cache = Path(__file__).parent / "_build" / "intersphinx"
    cache.mkdir(parents=True, exist_ok=True)
    mapping = {}
    for name, url in projects.items():
        target = cache / f"{name}.inv"
        try:
            with urllib.request.urlopen(url + "objects.inv", timeout=timeout) as r:
                target.write_bytes(r.read())
        except OSError:
            if not target.is_file():
                continue
        mapping[name] = (url, str(target))
    return mapping


intersphinx_mapping = _reachable_inventories(INTERSPHINX_PROJECTS)

# -- sphinx-gallery ---------------------------------------------------------

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "doc_module": "skdp",
    "backreferences_dir": "generated",
    "reference_url": {"skdp": None},
    "within_subsection_order": "FileNameSortKey",
    "filename_pattern": r"/plot_",
    "remove_config_comments": True,
    "show_memory": False,
    # Keep generated files out of the source tree (docs/sg_execution_times.rst
    # is not gitignored; auto_examples/ and generated/ are).
    "write_computation_times": False,
}
# Force a non-interactive matplotlib backend while the gallery runs.
os.environ.setdefault("MPLBACKEND", "Agg")

# -- HTML output ------------------------------------------------------------

html_theme = "pydata_sphinx_theme"
html_title = f"skdp {release}"
html_theme_options = {
    "show_toc_level": 2,
    "navigation_with_keys": False,
}
html_show_sourcelink = False


# -- The benchmarks page ------------------------------------------------------


def _benchmarks_page(app, docname, source):
    """Fill the placeholder in benchmarks.rst with benchmarks.md, if it exists.

    Rendered as Markdown when myst-parser is installed, shown as its source
    otherwise, and replaced by a note when the file has not been written yet.
    """
    if docname != "benchmarks":
        return
    placeholder = ".. benchmarks-md-goes-here"
    title = "Benchmarks\n==========\n\n"
    if not (Path(app.srcdir) / "benchmarks.md").is_file():
        body = title + (
            ".. note::\n\n   The benchmark tables (``docs/benchmarks.md``) have not\n"
            "   been generated in this checkout yet.\n"
        )
    elif HAVE_MYST:
        # The Markdown file brings its own title.
        body = ".. include:: benchmarks.md\n   :parser: myst_parser.sphinx_\n"
    else:
        body = title + (
            "The tables below are the Markdown source of ``docs/benchmarks.md``\n"
            "(install ``myst-parser`` to have them rendered).\n\n"
            ".. literalinclude:: benchmarks.md\n   :language: markdown\n"
        )
    source[0] = source[0].replace(placeholder, body)


_REF_ROLE = re.compile(r":ref:`([^`<]*?)\s*(?:<([^`>]+)>)?`")


def _inherited_refs_as_text(app, what, name, obj, options, lines):
    """Unlink ``:ref:`` roles in docstrings inherited from scikit-learn.

    ``score``, ``set_output`` and ``get_metadata_routing`` come from
    scikit-learn's mixins, whose docstrings point at labels of scikit-learn's
    own documentation (``metadata_routing``, ``r2_score``, ...). With its
    inventory loaded they link there (``sklearn:`` prefix); without it they
    render as plain text instead of as broken references.
    """
    module = getattr(obj, "__module__", None) or ""
    if not module.startswith("sklearn"):
        return
    online = "sklearn" in app.config.intersphinx_mapping

    def replace(match):
        text, label = match.group(1), match.group(2)
        label = label or text
        if online:
            return f":ref:`{text or label} <sklearn:{label}>`"
        return f"*{text}*" if text else f"``{label}``"

    lines[:] = [_REF_ROLE.sub(replace, line) for line in lines]


def _public_alias(app, env, node, contnode):
    """Resolve ``skdp.<module>.Name`` and bare ``Name`` to ``skdp.Name``.

    The estimators are documented once, under the top-level names users
    import (``skdp.DPBradleyTerry``); docstrings may also name them by their
    defining module or, inside that module, bare. Anything else stays a
    missing reference, which ``-n -W`` turns into an error.
    """
    if node.get("refdomain") != "py":
        return None
    target = node["reftarget"]
    name = target.rsplit(".", 1)[-1]
    if name not in skdp.__all__ or target == f"skdp.{name}":
        return None
    if "." in target and not target.startswith("skdp."):
        return None
    return env.domains["py"].resolve_xref(
        env,
        node["refdoc"],
        app.builder,
        node["reftype"],
        f"skdp.{name}",
        node,
        contnode,
    )


# Offline, references into another project's API cannot resolve; nitpicky
# mode (-n) ignores them then. scikit-learn's private utilities, named by
# the docstrings skdp's estimators inherit, are never in its inventory.
nitpick_ignore_regex = [("py:.*", r"sklearn\.utils\..*")]
for _project, _modules in {
    "sklearn": r"sklearn",
    "numpy": r"numpy|np",
    "scipy": r"scipy",
    "joblib": r"joblib",
    "python": r"math|random|secrets|os",
}.items():
    if _project not in intersphinx_mapping:
        nitpick_ignore_regex.append(("py:.*", rf"({_modules})(\..*)?"))


def setup(app):
    # include/literalinclude record benchmarks.md as a dependency of the page,
    # so editing it triggers a rebuild of benchmarks.html.
    app.connect("source-read", _benchmarks_page)
    app.connect("autodoc-process-docstring", _inherited_refs_as_text)
    app.connect("missing-reference", _public_alias)
