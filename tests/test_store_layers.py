"""The store's modules in one-way layers: each imports only the modules its package docstring
lists before it, whether at the top of the module or inside a function, so that the
backends (where a store lives, its locks and transactions) never reach up into the modules
that create, open, check or prepare a store."""

import ast
import re
from pathlib import Path

import pytest

import pcskm.runner.store as store_package

PACKAGE = Path(store_package.__file__).parent
BACKENDS = ("errors", "objects", "schema", "lock", "outages", "fencing", "notes",
            "backends.common", "backends.folder", "backends.icechunk", "backends")
ABOVE_BACKENDS = ("digests", "create", "metadata", "access", "integrity", "sizes", "views",
                  "preparation")


def documented_order():
    """The modules in the order the package docstring lists them (``* :mod:`.name```; a
    module of a subpackage as ``.package.name``, the subpackage itself as ``.package``)."""
    return re.findall(r"^\* :mod:`\.([\w.]+)`", store_package.__doc__, flags=re.MULTILINE)


def source_file(module, package=PACKAGE):
    """The file of ``module`` (``name``, ``package.name`` or a subpackage ``package``)."""
    path = package.joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def store_modules(package=PACKAGE):
    """Every module of the store, as :func:`documented_order` names them."""
    return sorted(".".join(path.relative_to(package).with_suffix("").parts).removesuffix(
        ".__init__") for path in package.rglob("*.py") if path.parent != package
        or path.stem != "__init__")


def store_imports(module, package=PACKAGE):
    """The modules of the store that ``module`` (of the folder ``package``) imports anywhere
    in its source, named as :func:`documented_order` names them: relative imports
    (``from .x import``, ``from . import x``, ``from ..x import`` in a subpackage) and
    absolute ones of the package."""
    file = source_file(module, package)
    here = list(file.relative_to(package).parent.parts)
    tree = ast.parse(file.read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            base = here[:len(here) - node.level + 1]
            if node.module:
                found.add(".".join([*base, *node.module.split(".")]))
            else:
                found.update(".".join([*base, alias.name]) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if (node.module or "").startswith("pcskm.runner.store."):
                found.add(node.module.removeprefix("pcskm.runner.store."))
        elif isinstance(node, ast.Import):
            found.update(alias.name.removeprefix("pcskm.runner.store.") for alias in node.names
                         if alias.name.startswith("pcskm.runner.store."))
    return {name for name in found if name}


def test_the_docstring_lists_every_module_once():
    order = documented_order()
    assert len(order) == len(set(order))
    assert sorted(order) == store_modules()


@pytest.mark.parametrize("module", documented_order())
def test_a_module_imports_only_those_listed_before_it(module):
    order = documented_order()
    above = store_imports(module) - set(order[:order.index(module)])
    assert not above, f"{module} imports {sorted(above)}, listed after it"


def test_the_backends_come_before_what_uses_them():
    order = documented_order()
    assert max(map(order.index, BACKENDS)) < min(map(order.index, ABOVE_BACKENDS))


def test_the_walk_finds_imports_inside_functions(tmp_path):
    """The walk sees a lazy import (the way location.py, now the backends, once reached up
    into preparation)."""
    (tmp_path / "lower.py").write_text("def f():\n    from .upper import g\n"
                                       "    from . import views\n    return g, views\n")
    assert store_imports("lower", tmp_path) == {"upper", "views"}


def test_the_walk_resolves_a_subpackage_s_imports(tmp_path):
    """``..x`` from a subpackage's module is the store's module ``x``; ``.y`` its sibling."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "__init__.py").write_text("from .low import f\n")
    (tmp_path / "sub" / "low.py").write_text("from ..errors import E\nfrom .common import C\n"
                                             "from .. import views\n")
    (tmp_path / "top.py").write_text("from .sub.low import f\nfrom .sub import g\n")
    assert store_imports("sub.low", tmp_path) == {"errors", "sub.common", "views"}
    assert store_imports("sub", tmp_path) == {"sub.low"}
    assert store_imports("top", tmp_path) == {"sub.low", "sub"}
    assert store_modules(tmp_path) == ["sub", "sub.low", "top"]
