"""Sphinx configuration: API reference from the numpydoc docstrings.

Build with ``pip install ".[docs]" && sphinx-build -W doc doc/_build``.
"""

project = "skdpval"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.autosummary", "numpydoc"]
autosummary_generate = True
numpydoc_show_class_members = False
exclude_patterns = ["_build"]
html_theme = "alabaster"
# Inherited scikit-learn methods (score, ...) refer to labels of sklearn's own docs.
suppress_warnings = ["ref.ref"]
