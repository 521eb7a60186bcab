"""The package's shape (issue 42): layers in folders, small modules and estimators.

Read from the source (nothing is run): which layer each module imports, the
size of every module and of every estimator class, what an estimator module
imports and names, and where a model family is branched on.
"""

import ast
import pathlib
import re

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "skdpval"

# Bottom up; a module may import its own layer and the layers before it.
LAYERS = ["exceptions", "privacy", "kernels", "families", "walks", "valuation",
          "cli"]
# Public helper modules at the top, and what each may import.
TOP = {
    "exceptions": set(),
    "datasets": set(),
    "testing": {"privacy"},
    "metrics": {"privacy"},
    "plotting": {"privacy"},
    "__init__": {"privacy", "valuation"},
    "__main__": {"cli"},
}
ESTIMATOR_MODULES = ["valuation/_data_valuator.py", "valuation/_label_quality.py",
                     "valuation/_federated.py", "valuation/_layered.py",
                     "valuation/_filter.py"]
MAX_MODULE_LINES = 700
MAX_ESTIMATOR_CODE_LINES = 400
MAX_ESTIMATOR_IMPORTS = 8


def modules():
    return sorted(p for p in PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)


def layer_of(path):
    parts = path.relative_to(PACKAGE).parts
    return parts[0] if len(parts) > 1 else path.stem


def imported_layers(path):
    """``{layer: [line numbers]}`` of the skdpval modules ``path`` imports."""
    tree = ast.parse(path.read_text())
    here = path.relative_to(PACKAGE).parts[:-1]
    found = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(here[:len(here) - node.level + 1])
                target = base + (node.module.split(".") if node.module else [])
                names = ([target] if node.module else
                         [base + [alias.name] for alias in node.names])
            elif node.module and node.module.split(".")[0] == "skdpval":
                names = [node.module.split(".")[1:]]
            else:
                continue
        elif isinstance(node, ast.Import):
            names = [alias.name.split(".")[1:] for alias in node.names
                     if alias.name.split(".")[0] == "skdpval"]
        else:
            continue
        for target in names:
            if target:
                found.setdefault(target[0].removesuffix(".py"), []).append(node.lineno)
    return found


# The public helpers at the top, which the command line may use too.
HELPERS = {"datasets", "metrics", "plotting", "testing"}


def allowed(layer):
    """Every module may import the exceptions; a layer the ones below it; the
    command line the public helpers too."""
    if layer in TOP:
        return TOP[layer] | {layer, "exceptions"}
    below = set(LAYERS[:LAYERS.index(layer) + 1])
    return below | HELPERS if layer == "cli" else below


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_lower_layer_never_imports_a_higher_one(path):
    layer = layer_of(path)
    bad = {target: lines for target, lines in imported_layers(path).items()
           if target not in allowed(layer)}
    assert not bad, f"{layer} imports {bad} (allowed: {sorted(allowed(layer))})"


def test_the_import_table_knows_every_module():
    for path in modules():
        layer = layer_of(path)
        assert layer in LAYERS or layer in TOP, f"{path}: no layer"


@pytest.mark.parametrize("path", modules(), ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_is_over_700_lines(path):
    assert len(path.read_text().splitlines()) <= MAX_MODULE_LINES


def code_lines(source, node):
    """Lines of ``node`` that are code: no blank line, comment or docstring."""
    docstrings = set()
    for inner in ast.walk(node):
        if (isinstance(inner, (ast.FunctionDef, ast.ClassDef)) and inner.body
                and isinstance(inner.body[0], ast.Expr)
                and isinstance(inner.body[0].value, ast.Constant)
                and isinstance(inner.body[0].value.value, str)):
            docstrings.update(range(inner.body[0].lineno, inner.body[0].end_lineno + 1))
    lines = source.splitlines()
    return sum(1 for number in range(node.lineno, node.end_lineno + 1)
               if number not in docstrings
               and lines[number - 1].strip()
               and not lines[number - 1].strip().startswith("#"))


@pytest.mark.parametrize("name", ESTIMATOR_MODULES)
def test_estimators_are_small(name):
    path = PACKAGE / name
    source = path.read_text()
    tree = ast.parse(source)
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            assert code_lines(source, node) <= MAX_ESTIMATOR_CODE_LINES, node.name
    internal = {target for target in imported_layers(path)}
    modules_imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            modules_imported.update(
                [node.module] if node.module else [a.name for a in node.names])
    assert len(modules_imported) <= MAX_ESTIMATOR_IMPORTS, sorted(modules_imported)
    assert "kernels" not in internal, "an estimator module imports a kernel"


KERNEL_NAMES = re.compile(r"\b_(kernels|subspace|line|mlp|network|orders|reduction|"
                          r"walk|line_walk|fit_sums|coalitions)\.")


@pytest.mark.parametrize("name", ESTIMATOR_MODULES)
def test_no_kernel_is_named_in_an_estimator_module(name):
    source = (PACKAGE / name).read_text()
    assert not KERNEL_NAMES.search(source), KERNEL_NAMES.search(source).group(0)


FAMILY_BRANCHES = re.compile(
    r"\.network\b|\bNetworkSpec\b|MLPClassifier\)|MLPRegressor\)|isinstance\([^)]*"
    r"(Family|NetworkSpace|Subspace|FullSpace)\b")


@pytest.mark.parametrize("path", [p for p in modules()
                                  if layer_of(p) not in ("families", "kernels")],
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_family_branch_outside_the_families(path):
    match = FAMILY_BRANCHES.search(path.read_text())
    assert match is None, f"branches on a family: {match.group(0)!r}"


def test_each_subpackage_says_what_lives_there_and_who_may_import_it():
    for layer in LAYERS[1:]:
        init = PACKAGE / layer / "__init__.py"
        doc = ast.get_docstring(ast.parse(init.read_text()))
        assert doc and "import" in doc.lower(), layer


def test_the_old_module_paths_are_gone():
    old = ["_accounting", "_base", "_cli", "_compression", "_dask", "_data",
           "_federated", "_filter", "_first_use", "_kernels", "_label_quality",
           "_layered", "_line", "_mechanism", "_mlp", "_mlp_space", "_models",
           "_noise", "_orders", "_private_fit", "_reduction", "_secure_noise",
           "_semivalues", "_space", "_subspace", "_threat_model", "_uncertainty",
           "_valuator", "_walk", "_workflow"]
    assert not [name for name in old if (PACKAGE / f"{name}.py").exists()]
    import skdpval
    for name in old:
        with pytest.raises(ModuleNotFoundError):
            __import__(f"skdpval.{name}")
    assert skdpval.__all__


FIGURE = re.compile(r"(?<![\w^.,])\d+(?:,\d{3})*(?:\.\d+)?(?:-\d+(?:\.\d+)?)? ?"
                    r"(?:s|ms|us|ns|MB|MiB|GB|GiB|KB|KiB)\b(?![\^(])")


def test_no_timing_or_size_figure_in_the_package_but_the_one_constant():
    """Figures measured once go stale: they live in benchmarks/results and
    the docs; the first fit's time is the one constant (exceptions.py)."""
    import io
    import tokenize
    found = []
    for path in modules():
        tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
        for token in tokens:
            if token.type in (tokenize.COMMENT, tokenize.STRING):
                for match in FIGURE.finditer(token.string):
                    found.append(f"{path.relative_to(PACKAGE)}:{token.start[0]}: "
                                 f"{match.group(0)!r}")
    assert not found, found
    from skdpval.exceptions import FIRST_FIT_SECONDS
    assert FIRST_FIT_SECONDS > 0
