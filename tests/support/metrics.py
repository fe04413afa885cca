"""The proxy's Prometheus `/metrics`, scraped and summed."""

from __future__ import annotations

import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def scrape(base: str, headers: dict[str, str] | None = None) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    request = urllib.request.Request(f"{base}/metrics", headers=headers or {})
    with urllib.request.urlopen(request, timeout=10) as response:
        assert response.status == 200
        assert response.headers["content-type"].startswith("text/plain")
        text = response.read().decode()
    parsed = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            parsed[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return parsed


def total(parsed, name: str, **labels: str) -> float:
    """Sum of the samples of `name` whose labels include `labels`."""
    return sum(v for (n, ls), v in parsed.items() if n == name and all((k, val) in ls for k, val in labels.items()))
