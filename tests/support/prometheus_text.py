"""Reading ``GET /metrics`` as Prometheus does: its own client library's parser."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.samples import Sample

__all__ = ["Sample", "scraped", "value"]


def scraped(text: str) -> dict[str, list[Sample]]:
    """The samples of each family, read by Prometheus's own client library."""
    return {family.name: list(family.samples) for family in text_string_to_metric_families(text)}


def value(samples: list[Sample], name: str, **labels: str) -> float:
    """The one sample named ``name`` with these labels (the test fails if there is not exactly one)."""
    found = [s.value for s in samples if s.name == name and all(s.labels.get(k) == v for k, v in labels.items())]
    assert len(found) == 1, (name, labels, samples)
    return found[0]
