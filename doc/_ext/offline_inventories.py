"""Intersphinx inventories written from the installed packages, for offline builds.

The build links to scikit-learn, NumPy, SciPy and joblib through their
published ``objects.inv``. When those sites cannot be reached (CI runs
offline), ``conf.py`` falls back to the inventories written here: the public
classes and functions of the installed package (its ``__all__``), at the
page addresses those sites use for them. Links then point to the real pages
either way, and ``sphinx-build -W`` does not fail on a missing network.
"""

import importlib
import inspect
import pkgutil
import zlib
from pathlib import Path

# project -> (site, page of a name, modules whose __all__ is listed)
SITES = {
    "sklearn": ("https://scikit-learn.org/stable/",
                "modules/generated/{name}.html#{name}", None),
    "numpy": ("https://numpy.org/doc/stable/",
              "reference/generated/{name}.html#{name}", ["numpy"]),
    "scipy": ("https://docs.scipy.org/doc/scipy/",
              "reference/generated/{name}.html#{name}",
              ["scipy.optimize", "scipy.sparse", "scipy.special", "scipy.stats"]),
    "joblib": ("https://joblib.readthedocs.io/en/stable/",
               "generated/{name}.html#{name}", ["joblib"]),
}


def _public_modules(package):
    """The package and its public submodules (no ``_private`` or ``tests`` parts)."""
    root = importlib.import_module(package)
    names = [package]
    for info in pkgutil.walk_packages(root.__path__, prefix=package + "."):
        parts = info.name.split(".")
        if not any(p.startswith("_") or p in ("tests", "externals") for p in parts):
            names.append(info.name)
    return names


def _entries(modules, page):
    """``name domain:role priority uri dispname`` lines of an inventory."""
    lines = set()
    for module_name in modules:
        try:
            module = importlib.import_module(module_name)
        except Exception:  # an optional dependency is missing: skip the module
            continue
        for attr in getattr(module, "__all__", []):
            obj = getattr(module, attr, None)
            if inspect.isclass(obj):
                role = "py:class"
            elif callable(obj):
                role = "py:function"
            else:
                continue
            name = f"{module_name}.{attr}"
            lines.add(f"{name} {role} 1 {page.format(name=name)} -")
    return sorted(lines)


def write_inventories(directory):
    """Write ``<project>-objects.inv`` for each of SITES into ``directory``.

    Returns ``{project: (site, local inventory path)}``. Existing files are
    kept: delete them to refresh.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    written = {}
    for project, (site, page, modules) in SITES.items():
        path = directory / f"{project}-objects.inv"
        if not path.exists():
            version = importlib.import_module(project).__version__
            body = "\n".join(_entries(modules or _public_modules(project), page))
            header = ("# Sphinx inventory version 2\n"
                      f"# Project: {project}\n# Version: {version}\n"
                      "# The remainder of this file is compressed using zlib.\n")
            path.write_bytes(header.encode() + zlib.compress(body.encode() + b"\n"))
        written[project] = (site, str(path))
    return written
