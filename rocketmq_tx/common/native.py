"""
The optional C accelerator, :mod:`rocketmq_tx._speedups`, or ``None``.

It is built from ``rocketmq_tx/_speedups.c`` when the package is installed with a C compiler
and zlib's headers (``pip install -e .`` builds it in place). Each of its functions has a
pure-Python twin, which stays the reference: the tests hold the two to each other, and
``ROCKETMQ_TX_PURE=1`` in the environment selects the twins (for a comparison, or to rule
the C code out). Modules pick their implementation once, at import::

    from rocketmq_tx.common.native import speedups
    java_string_hash = speedups.java_string_hash if speedups else _java_string_hash

Under ``CI`` the tests fail when the module is missing (``common/test/test_native.py``), so a
broken build cannot pass unnoticed as a slow one.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Optional

__all__ = ["speedups", "ACCELERATED"]

speedups: Optional[ModuleType] = None

if not os.environ.get("ROCKETMQ_TX_PURE"):
    try:
        from rocketmq_tx import _speedups as speedups
    except ImportError:
        speedups = None
    else:
        from rocketmq_tx.common.errors import MessageFormatError

        speedups._setup("MessageFormatError", MessageFormatError)

#: Whether the C accelerator is in use.
ACCELERATED: bool = speedups is not None
