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
from importlib import import_module
from types import ModuleType

__all__ = ["speedups", "ACCELERATED", "body_crc"]

speedups: ModuleType | None = None

if not os.environ.get("ROCKETMQ_TX_PURE"):
    try:
        # By name: a compiled module has no source or stub for type checkers to read.
        speedups = import_module("rocketmq_tx._speedups")
    except ImportError:
        speedups = None
    else:
        from rocketmq_tx.common.errors import MessageFormatError

        speedups._setup("MessageFormatError", MessageFormatError)

#: Whether the C accelerator is in use.
ACCELERATED: bool = speedups is not None

# CRC-32 of message bodies (the CommitLog's BODYCRC): ISA-L's folding implementation is about
# 4x zlib's on 1 KiB bodies, a tenth of a put's cost. Same polynomial, same values.
try:
    from isal.isal_zlib import crc32 as body_crc
except ImportError:  # pragma: no cover - isal is a dependency; zlib gives the same values
    from zlib import crc32 as body_crc
