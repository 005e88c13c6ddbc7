"""Test doubles and diagnostic servers shipped with rocketmq_tx."""

import os as _os
import sys as _sys

__all__ = ["in_ci", "twistd_argv"]

#: Values of ``CI`` that do not mean "under CI" (unset and empty do not either).
_NOT_CI = frozenset({"0", "false", "no", "off"})


def in_ci() -> bool:
    """
    Whether the tests run under CI: ``CI`` is set to anything but empty, ``0``, ``false``,
    ``no`` or ``off`` (any case). CI services set ``CI=true`` (``.ci/run`` is run with it).
    Under CI a test never skips because something it needs is missing (Java, Maven, a Java
    peer, the C accelerator): it fails. This is the one rule; every test that asks uses it.
    """
    return _os.environ.get("CI", "").strip().lower() not in _NOT_CI | {""}


def twistd_argv() -> list[str]:
    """
    The command that runs ``twistd`` with this interpreter: the ``twistd`` script installed
    beside it, or, where there is none (a venv reusing the system's Twisted), the same entry
    point through ``python -c``. Never a ``twistd`` found first on PATH, which may belong to
    another Python without this package.
    """
    script = _os.path.join(_os.path.dirname(_sys.executable), "twistd")
    if _os.path.exists(script):
        return [script]
    return [_sys.executable, "-c", "from twisted.scripts.twistd import run; run()"]
