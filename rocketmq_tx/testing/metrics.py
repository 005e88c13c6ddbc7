"""Reading a Prometheus text exposition in tests, with prometheus_client's own parser."""

from __future__ import annotations

from typing import Any

from prometheus_client.parser import text_string_to_metric_families

__all__ = ["families", "sample_total"]


def families(text: str) -> dict[str, Any]:
    """Family name (a counter's without ``_total``) -> family."""
    return {f.name: f for f in text_string_to_metric_families(text)}


def sample_total(table: dict[str, Any], name: str, sample: str | None = None, **labels: str) -> float:
    """The sum of *name*'s samples (only those named *sample*, if given) carrying *labels*; 0 if absent."""
    family = table.get(name)
    if family is None:
        return 0.0
    return sum(s.value for s in family.samples
               if (sample is None or s.name == sample) and all(s.labels.get(k) == v for k, v in labels.items()))
