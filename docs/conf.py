"""Sphinx configuration of the pcskm documentation (built in CI with warnings as errors:
``sphinx-build -W -b html docs docs/_build/html``)."""

from importlib import metadata

project = "pcskm"
author = "pcskm developers"
copyright = "2026, pcskm developers"
release = metadata.version("pcskm")
version = release

extensions = [
    "myst_parser",
    "numpydoc",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
# docs/results holds the reports that `pcskm report` writes: linked to, not built as pages.
exclude_patterns = ["_build", "results/**", "**/__pycache__"]

myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3

autosummary_generate = True
autodoc_default_options = {
    "members": True,
    # scikit-learn's metadata-routing setters, generated on every estimator class
    "exclude-members": "set_fit_request, set_predict_request, set_score_request",
}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False

# No network at build time: intersphinx inventories are not fetched.
intersphinx_mapping = {}

html_theme = "pydata_sphinx_theme"
html_title = f"pcskm {release}"
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
}
html_static_path = []
