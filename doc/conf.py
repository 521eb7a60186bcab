"""Sphinx configuration of the skdpval documentation.

Build with ``pip install ".[docs]" && sphinx-build -W doc doc/_build``: the
user guide, the API reference (numpydoc), and the gallery, which runs every
script in ``examples/`` and renders its figures into the pages.
"""

import os
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE / "_ext"))
# Document (and run the gallery on) this checkout's package, even where
# another copy of skdpval is installed.
sys.path.insert(0, str(HERE.parent))

import skdpval  # noqa: E402
from sphinx_gallery.sorting import ExplicitOrder  # noqa: E402
from offline_inventories import write_inventories  # noqa: E402

project = "skdpval"
author = "the skdpval developers"
copyright = "the skdpval developers"
release = skdpval.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    # ".. plot::" figures drawn at build time (choosing_epsilon, speed).
    "matplotlib.sphinxext.plot_directive",
    "auc_limit_table",
    "model_coverage_table",
    # The command line's --help, from its parser (doc/cli.rst).
    "cli_reference",
    # Tables of benchmarks/results/*.jsonl, formatted by benchmarks/tables.py.
    "results_tables",
]
autosummary_generate = True
plot_html_show_source_link = False
plot_html_show_formats = False
plot_formats = [("png", 100)]
# Class pages document every public method with its parameters, and their
# Methods table links to them (doc/_templates/autosummary/class.rst).
templates_path = ["_templates"]
numpydoc_show_class_members = False
exclude_patterns = ["_build", "_inventories", "auto_examples/*.ipynb",
                    "auto_examples/*.py", "auto_examples/*.zip"]
default_role = "literal"
# Inherited scikit-learn methods (score, set_fit_request, ...) refer to labels
# and glossary terms of sklearn's own docs.
suppress_warnings = ["ref.ref", "ref.term"]

html_theme = "pydata_sphinx_theme"
html_title = f"skdpval {release}"
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_show_sourcelink = False

# Links to the docs of the libraries skdpval builds on. Each site's own
# inventory is tried first; offline, one written from the installed package
# (doc/_ext/offline_inventories.py) gives the same addresses.
_local = write_inventories(HERE / "_inventories")
intersphinx_mapping = {
    project_name: (site, (None, local))
    for project_name, (site, local) in _local.items()
}
intersphinx_timeout = 5

sphinx_gallery_conf = {
    "examples_dirs": "../examples",
    "gallery_dirs": "auto_examples",
    "filename_pattern": r"/plot_",
    # Sections by the job a reader comes with (examples/*/README.txt).
    "subsection_order": ExplicitOrder([
        "../examples/find_bad_labels",
        "../examples/value_data",
        "../examples/federated_groups",
        "../examples/reproduce_papers",
    ]),
    "within_subsection_order": "FileNameSortKey",
    "remove_config_comments": True,
    "download_all_examples": False,
    "show_memory": False,
    # Every example must run: an error fails the build (after all ran).
    "only_warn_on_example_error": False,
}
os.environ.setdefault("MPLBACKEND", "Agg")


def _compile_kernels():
    """Compile (or load) the numba kernels before the gallery runs.

    In a fresh environment the first fit compiles them (seconds); done
    here, the gallery's times are each example's own work.
    """
    import numpy as np

    from skdpval import DPDataValuator

    X = np.random.default_rng(0).normal(size=(20, 3))
    y = np.arange(20) % 2
    DPDataValuator(epsilon=1.0, n_permutations=20, random_state=0).fit(
        X, y, X_val=X, y_val=y)


_compile_kernels()
