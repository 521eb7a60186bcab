"""The privacy mechanism is the only gate (issue 42, item 3).

Read from the source (``ast``) of every module of skdpval outside the
privacy layer (``skdpval/privacy/``): no attribute access to a key (``key``,
``_key``, ``noise_key``), no name, call or import of the draws, the grid
release or the secret sources (``gaussian_noise``, ``laplace_noise``,
``release_on_grid``, ChaCha20, :mod:`secrets`, ...). Everywhere, the privacy
layer included, no numpy generator seeded from ``noise_seed``: the fit's
ChaCha20 key is the only secret source. And the positive side: what the
other layers import from the privacy layer exists there, and the walks
release through its release step.
"""

import ast
import importlib
import pickle
from pathlib import Path

import numpy as np
import pytest

import skdpval
from skdpval.privacy._mechanism import PrivacyMechanism

PACKAGE = Path(skdpval.__file__).parent
PRIVACY = PACKAGE / "privacy"

# Attributes that hold a key.
KEY_ATTRIBUTES = {"key", "_key", "noise_key"}
# Names that draw noise or coins, release on the grid, or make a secret.
GATED_NAMES = {
    "release_on_grid", "releases_on_grid", "gaussian_noise", "laplace_noise",
    "discrete_laplace", "walk_noise", "_walk_noise", "rounded_gaussian",
    "uniform_coins", "noise_key", "secrets", "secret_seed_sequence", "WordStream",
}
GATED_PREFIXES = ("chacha20",)
# Calls that seed numpy's randomness.
SEEDING_CALLS = {"default_rng", "SeedSequence", "Generator", "RandomState", "PCG64",
                 "PCG64DXSM", "Philox", "SFC64", "MT19937", "seed",
                 "check_random_state"}


def _modules(inside_privacy):
    for path in sorted(PACKAGE.rglob("*.py")):
        if (PRIVACY in path.parents) == inside_privacy:
            yield path


def _gated(name):
    return name in GATED_NAMES or name.startswith(GATED_PREFIXES)


def _called_name(func):
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def _mentions_noise_seed(node):
    return any((isinstance(n, ast.Name) and n.id == "noise_seed")
               or (isinstance(n, ast.Attribute) and n.attr == "noise_seed")
               for n in ast.walk(node))


def _where(path):
    try:
        return path.relative_to(PACKAGE.parent)
    except ValueError:  # a probe outside the package
        return path.name


def gate_violations(path):
    """What the module at ``path`` does that only the privacy layer may do."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []

    def say(node, what):
        found.append(f"{_where(path)}:{node.lineno}: {what}")

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            if node.attr in KEY_ATTRIBUTES:
                say(node, f"reads the attribute .{node.attr}")
            elif _gated(node.attr):
                say(node, f"uses .{node.attr}")
        elif isinstance(node, ast.Name) and _gated(node.id):
            say(node, f"uses {node.id}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if _gated(alias.name.split(".")[0]):
                    say(node, f"imports {alias.name}")
        elif isinstance(node, ast.ImportFrom):
            if node.module and _gated(node.module.split(".")[0]):
                say(node, f"imports from {node.module}")
            for alias in node.names:
                if _gated(alias.name):
                    say(node, f"imports {alias.name}")
    return found + seeded_from_noise_seed(path, tree)


def seeded_from_noise_seed(path, tree=None):
    """Calls seeding numpy's randomness from ``noise_seed``."""
    tree = tree or ast.parse(path.read_text(), filename=str(path))
    return [f"{_where(path)}:{node.lineno}: seeds "
            f"{_called_name(node.func)} from noise_seed"
            for node in ast.walk(tree)
            if isinstance(node, ast.Call) and _called_name(node.func) in SEEDING_CALLS
            and any(_mentions_noise_seed(arg)
                    for arg in [*node.args, *(k.value for k in node.keywords)])]


def test_the_checks_see_what_they_look_for(tmp_path):
    """The reader finds each kind of breach (a check that could not fail
    would prove nothing)."""
    module = tmp_path / "probe.py"
    module.write_text("""
import secrets
from .privacy._secure_noise import noise_key, chacha20_block
from .privacy import _release
import numpy as np

def leak(mechanism, self, values, m):
    key = mechanism.key
    other = self._key
    _release.releases_on_grid(values, m, 1.0, 2.0, values)
    rng = np.random.default_rng(self.noise_seed)
    return np.random.SeedSequence(seed=noise_seed)
""")
    found = "\n".join(gate_violations(module))
    for what in ("imports secrets", "imports noise_key", "imports chacha20_block",
                 "reads the attribute .key", "reads the attribute ._key",
                 "uses .releases_on_grid", "seeds default_rng from noise_seed",
                 "seeds SeedSequence from noise_seed"):
        assert what in found, (what, found)


@pytest.mark.parametrize("path", list(_modules(inside_privacy=False)),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_outside_the_privacy_layer_reads_the_key_or_releases(path):
    assert gate_violations(path) == []


@pytest.mark.parametrize("path", list(_modules(inside_privacy=True)),
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_the_key_is_the_only_secret_source_of_the_privacy_layer(path):
    assert seeded_from_noise_seed(path) == []


def _privacy_imports(path):
    """``(module, name)`` of every ``from ...privacy... import name`` in ``path``."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts[:-1])
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and "privacy" in (node.module or ""):
            base = package.rsplit(".", node.level - 1)[0] if node.level else ""
            module = f"{base}.{node.module}" if node.level else node.module
            for alias in node.names:
                yield module, alias.name


def test_the_privacy_layer_exports_what_the_others_use():
    from skdpval.privacy import _release

    used = {(module, name) for path in _modules(inside_privacy=False)
            for module, name in _privacy_imports(path)}
    assert ("skdpval.privacy._release", "release_step") in used
    for module, name in sorted(used):
        assert hasattr(importlib.import_module(module), name), (module, name)
    # Every walk kernel releases through the privacy layer's release step.
    for kernel in ("kernels/_linear.py", "kernels/_subspace.py", "kernels/_network.py",
                   "kernels/_network_line.py"):
        names = {n.id for n in ast.walk(ast.parse((PACKAGE / kernel).read_text()))
                 if isinstance(n, ast.Name)}
        assert "release_step" in names, kernel
    # The mechanism's gates, and no public key.
    for method in ("noise_stream", "draw", "release", "release_each",
                   "release_laplace", "uniforms"):
        assert callable(getattr(PrivacyMechanism, method)), method
    assert not hasattr(PrivacyMechanism, "key")
    for name in ("clip_l2", "release_on_grid", "releases_on_grid", "release_step",
                 "release_stream", "walk_stream"):
        assert callable(getattr(_release, name)), name


def test_a_noise_stream_travels_without_showing_its_key():
    """Pickled (to Dask workers) it draws the same noise; its repr and its
    public attributes hold no key."""
    from skdpval.privacy._mechanism import NoiseStream

    mechanism = PrivacyMechanism(epsilon=1.0, delta=1e-5, noise_seed=3)
    mechanism.protect("sample", 10)
    part = mechanism.gaussian("walk", 1, n_releases=4, clip=1.0, dimension=1)
    mechanism.calibrate()
    stream = mechanism.noise_stream(part)
    assert isinstance(stream, NoiseStream) and "key" not in repr(stream)
    assert not any(name.endswith("key") for name in vars(stream)
                   if not name.startswith("_"))
    travelled = pickle.loads(pickle.dumps(stream))
    a, b = np.empty((2, 10, 1)), np.empty((2, 10, 1))
    noise, gamma, bound = stream.draw(0, 2, a)
    travelled.draw(0, 2, b)
    np.testing.assert_array_equal(a, b)
    assert noise.shape == (2, 10, 1) and gamma == part.grid.gamma
    assert bound == part.grid.bound
