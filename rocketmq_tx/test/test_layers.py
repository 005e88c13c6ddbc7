"""
The layering rules of docs/architecture.md, checked mechanically.

``remoting``, ``common``, ``blocking``, ``store``, ``spark``, ``acl``, ``filter`` and ``admin`` must not
import Twisted; ``store`` must not reach into the network or server layers; ``filter`` (the
SQL92 filters) imports nothing but the standard library and ``common``. Two checks: a static scan of
every import statement, and a fresh interpreter that imports the packages and looks at
``sys.modules`` (which also catches an import hidden behind another module).
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

from twisted.trial.unittest import SynchronousTestCase

PACKAGE = Path(__file__).resolve().parent.parent
TWISTED_FREE = ("remoting", "common", "blocking", "store", "spark", "acl", "filter", "admin")
#: package -> module prefixes it must not import
FORBIDDEN = {
    **{pkg: ("twisted", "rocketmq_tx.net") for pkg in TWISTED_FREE},
    # The Twisted client builds on the shared request code, never the other way round.
    **{pkg: ("twisted", "rocketmq_tx.net", "rocketmq_tx.client") for pkg in ("remoting", "common", "blocking")},
    # rocketmq-tx-admin is a blocking-client program: no reactor, no server code.
    "admin": ("twisted", "rocketmq_tx.net", "rocketmq_tx.client", "rocketmq_tx.broker", "rocketmq_tx.namesrv"),
    "store": ("twisted", "rocketmq_tx.net", "rocketmq_tx.remoting", "rocketmq_tx.broker", "rocketmq_tx.namesrv",
              "rocketmq_tx.client"),
    "spark": ("twisted", "rocketmq_tx.net", "rocketmq_tx.broker", "rocketmq_tx.namesrv", "rocketmq_tx.client"),
    # ACL 1.0 serves the broker and every client, so it sits on the codec alone.
    "acl": ("twisted", "rocketmq_tx.net", "rocketmq_tx.broker", "rocketmq_tx.namesrv", "rocketmq_tx.client",
            "rocketmq_tx.blocking", "rocketmq_tx.spark", "rocketmq_tx.store"),
    # The SQL92 filters are pure functions of an expression and a message's properties.
    "filter": ("twisted", "rocketmq_tx.net", "rocketmq_tx.remoting", "rocketmq_tx.broker", "rocketmq_tx.namesrv",
               "rocketmq_tx.client", "rocketmq_tx.blocking", "rocketmq_tx.spark", "rocketmq_tx.store",
               "rocketmq_tx.acl"),
    # The servers and the client share only the lower layers.
    "namesrv": ("rocketmq_tx.broker", "rocketmq_tx.client"),
    "broker": ("rocketmq_tx.namesrv", "rocketmq_tx.client"),
}
#: packages that may import only the standard library and these (an allow-list, on top of FORBIDDEN)
ONLY = {
    "filter": ("rocketmq_tx.common", "rocketmq_tx.filter"),
}
#: files allowed to cross one of the lines above, and why
EXCEPTIONS = {
    # rocketmq-standalone runs a name server beside the broker in one process.
    ("broker/standalone.py", "rocketmq_tx.namesrv"),
}


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


class LayerTests(SynchronousTestCase):
    """Imports follow the layer diagram."""

    def test_static_imports(self) -> None:
        """No source file (tests excluded) of a restricted package imports a forbidden module."""
        violations = []
        for pkg, forbidden in FORBIDDEN.items():
            root = PACKAGE / pkg
            for path in root.rglob("*.py") if root.is_dir() else []:
                if "test" in path.relative_to(root).parts[:-1]:
                    continue
                for lineno, module in _imports(path):
                    rel = path.relative_to(PACKAGE).as_posix()
                    if any((module == f or module.startswith(f + ".")) and (rel, f) not in EXCEPTIONS
                           for f in forbidden):
                        violations.append(f"{path.relative_to(PACKAGE.parent)}:{lineno} imports {module}")
        self.assertEqual(violations, [])

    def test_allow_lists(self) -> None:
        """The packages of ONLY import the standard library and their allowed modules, nothing else."""
        violations = []
        for pkg, allowed in ONLY.items():
            root = PACKAGE / pkg
            for path in root.rglob("*.py") if root.is_dir() else []:
                if "test" in path.relative_to(root).parts[:-1]:
                    continue
                for lineno, module in _imports(path):
                    top = module.split(".")[0]
                    if top in sys.stdlib_module_names or top == "__future__":
                        continue
                    if not any(module == a or module.startswith(a + ".") for a in allowed):
                        violations.append(f"{path.relative_to(PACKAGE.parent)}:{lineno} imports {module}")
        self.assertEqual(violations, [])

    def test_fresh_interpreter(self) -> None:
        """Importing the Twisted-free packages loads no Twisted module at all."""
        present = [f"rocketmq_tx.{pkg}" for pkg in TWISTED_FREE if (PACKAGE / pkg / "__init__.py").exists()]
        self.assertIn("rocketmq_tx.remoting", present)
        self.assertIn("rocketmq_tx.blocking", present)
        code = (
            "import importlib, json, sys\n"
            f"for name in {present!r}: importlib.import_module(name)\n"
            "print(json.dumps(sorted(m for m in sys.modules if m == 'twisted' or m.startswith('twisted.'))))\n"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                             cwd=PACKAGE.parent)
        self.assertEqual(json.loads(out.stdout), [])
