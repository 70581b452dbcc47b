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
BACKENDS = ("errors", "objects", "schema", "lock", "outages", "fencing", "location")
ABOVE_BACKENDS = ("digests", "create", "metadata", "access", "integrity", "sizes", "views",
                  "preparation")


def documented_order():
    """The modules in the order the package docstring lists them (``* :mod:`.name```)."""
    return re.findall(r"^\* :mod:`\.(\w+)`", store_package.__doc__, flags=re.MULTILINE)


def store_imports(module, package=PACKAGE):
    """The modules of the store that ``module`` (of the folder ``package``) imports anywhere
    in its source: relative
    imports (``from .x import``, ``from . import x``) and absolute ones of the package."""
    tree = ast.parse((package / f"{module}.py").read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:
                found.add(node.module.split(".")[0])
            elif node.level == 1:
                found.update(alias.name for alias in node.names)
            elif node.level == 0 and (node.module or "").startswith("pcskm.runner.store."):
                found.add(node.module.split(".")[3])
        elif isinstance(node, ast.Import):
            found.update(alias.name.split(".")[3] for alias in node.names
                         if alias.name.startswith("pcskm.runner.store."))
    return found


def test_the_docstring_lists_every_module_once():
    modules = sorted(path.stem for path in PACKAGE.glob("*.py") if path.stem != "__init__")
    order = documented_order()
    assert len(order) == len(set(order))
    assert sorted(order) == modules


@pytest.mark.parametrize("module", documented_order())
def test_a_module_imports_only_those_listed_before_it(module):
    order = documented_order()
    above = store_imports(module) - set(order[:order.index(module)])
    assert not above, f"{module} imports {sorted(above)}, listed after it"


def test_the_backends_come_before_what_uses_them():
    order = documented_order()
    assert max(map(order.index, BACKENDS)) < min(map(order.index, ABOVE_BACKENDS))


def test_the_walk_finds_imports_inside_functions(tmp_path):
    """The walk sees a lazy import (the way location.py once reached up into preparation)."""
    (tmp_path / "lower.py").write_text("def f():\n    from .upper import g\n"
                                       "    from . import views\n    return g, views\n")
    assert store_imports("lower", tmp_path) == {"upper", "views"}
