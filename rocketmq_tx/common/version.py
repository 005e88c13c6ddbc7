"""
Java's ``MQVersion.Version``: a client's version number is the ordinal of its name, which
mqadmin prints and the 5.x metrics use as a label (``version="v5_5_0"``).
"""

from __future__ import annotations

__all__ = ["mq_version_desc"]


def _mq_versions() -> list[str]:
    # Java MQVersion.Version (4.9.8 and 5.x have the same 613 names): 63 early 3.0/3.1
    # names, then a SNAPSHOT and a release per version from 3.1.8 to 5.9.9 (3.3.0 ... 3.9.0
    # were never listed), then HIGHER_VERSION. A client's version number is its ordinal.
    early = (["V3_0_0_SNAPSHOT", "V3_0_0_ALPHA1"] + [f"V3_0_0_BETA{i}" for i in range(1, 6)]
             + [v for i in range(6, 10) for v in (f"V3_0_0_BETA{i}_SNAPSHOT", f"V3_0_0_BETA{i}")]
             + ["V3_0_0_FINAL"] + [v for i in range(1, 16) for v in (f"V3_0_{i}_SNAPSHOT", f"V3_0_{i}")]
             + [v for i in range(0, 8) for v in (f"V3_1_{i}_SNAPSHOT", f"V3_1_{i}")] + ["V3_1_8_SNAPSHOT"])
    later = [v for x in range(3, 6) for y in range(10) for z in range(10)
             if (x, y) > (3, 1) or (x, y, z) >= (3, 1, 8)
             if not (x == 3 and y >= 3 and z == 0)
             for v in (f"V{x}_{y}_{z}_SNAPSHOT", f"V{x}_{y}_{z}")]
    return early + later[1:] + ["HIGHER_VERSION"]


_VERSIONS = _mq_versions()


def mq_version_desc(version: int) -> str:
    """Java ``MQVersion.getVersionDesc``: the version's name (past the table: HIGHER_VERSION)."""
    return _VERSIONS[version] if 0 <= version < len(_VERSIONS) else _VERSIONS[-1]
