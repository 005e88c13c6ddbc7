"""Test doubles and diagnostic servers shipped with rocketmq_tx."""

import os as _os
import sys as _sys


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
