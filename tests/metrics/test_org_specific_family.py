"""``efmoam_org_specific_rx_by_oui_total``: one series per OUI counted, ``oui="other"`` for
the rest, summing to ``efmoam_org_specific_rx_total``; full detail only (basic caps series)."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from efmoam.config.model import MetricsDetail
from efmoam.daemon.metrics import render
from pdu import Flag, OrgSpecificPdu, encode
from tests.metrics.support import FakeDaemon, discover

FAMILY = "efmoam_org_specific_rx_by_oui_total"


def samples(body: bytes, name: str) -> dict[str, float]:
    """*name*'s samples of device eth0, by their ``oui`` label (or "" without one)."""
    found = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            if sample.name == name and sample.labels["device"] == "eth0":
                found[sample.labels.get("oui", "")] = sample.value
    return found


def test_one_series_per_oui_and_other_at_full_detail_none_at_basic() -> None:
    daemon = FakeDaemon()
    a, b = daemon.add("eth0", 0), daemon.add("eth1", 1)
    discover(daemon, a, b)
    assert samples(render(daemon), FAMILY) == {}  # nothing received: no series
    peer = b.port.mac
    for number, oui in enumerate([0x00000C, 0x111111, 0x111111, *range(0x020000, 0x020010)]):
        a.port.receive(
            encode(OrgSpecificPdu(peer, Flag.LOCAL_STABLE | Flag.REMOTE_STABLE, oui, b"")), now=4 + number / 20
        )
    a.port.take_outputs()
    full = render(daemon)
    per_oui = samples(full, FAMILY)
    assert per_oui["00:00:0c"] == 1 and per_oui["11:11:11"] == 2 and per_oui["other"] == 2
    assert len(per_oui) == 17
    assert sum(per_oui.values()) == samples(full, "efmoam_org_specific_rx_total")[""] == 19
    assert samples(render(daemon, MetricsDetail.BASIC), FAMILY) == {}
