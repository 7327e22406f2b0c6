"""Organization Specific OAMPDUs counted per OUI by a real daemon: in ``show port`` (JSON
and text), in the metrics, and from zero in show after ``clear port P statistics``.

The peer's side sends, from the peer's MAC on the real veth, Organization Specific
OAMPDUs of 20 distinct OUIs: side A shows the first 16 by OUI (with the names `pdu.oui`
knows) and the other 4 under "other", all adding up to dot3OamOrgSpecificRx.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterable

import pytest

from pdu import Flag, OrgSpecificPdu, encode
from pdu.oui import CISCO, CTC, DPOE
from tests.daemon.lab import MAC_B, Lab, device_samples
from tests.linux.netns import in_netns

pytestmark = pytest.mark.root

METRICS_PORT = 9717
OUIS = [CISCO, CTC, DPOE, *range(0x020000, 0x020011)]  #: 20 distinct OUIs
FAMILY = "efmoam_org_specific_rx_by_oui_total"


def send(lab: Lab, ouis: Iterable[int]) -> None:
    frames = [encode(OrgSpecificPdu(MAC_B, Flag.LOCAL_STABLE | Flag.REMOTE_STABLE, oui, b"\x01")) for oui in ouis]

    def transmit() -> None:
        with socket.socket(socket.AF_PACKET, socket.SOCK_RAW) as raw:
            raw.bind((lab.b.ifname, 0))
            for frame in frames:  # under the receive rate limit, the peer's keep-alives beside
                raw.send(frame)
                time.sleep(0.1)

    in_netns(lab.ns_b, transmit)


def counted(view: dict[str, object]) -> int:
    by_oui = view["org_specific_rx_by_oui"]
    assert isinstance(by_oui, dict)
    return sum(by_oui.values())


def test_per_oui_counts_in_show_metrics_and_clear(lab: Lab) -> None:
    lab.a.overrides = {"daemon": {"metrics": {"enabled": True, "address": "127.0.0.1", "port": METRICS_PORT}}}
    lab.start()
    sent = [*OUIS, CTC, CTC]
    send(lab, sent)
    view = lab.wait_view(lab.a, lambda v: counted(v) >= len(sent), 10, "A to count the 22 OAMPDUs")
    by_oui = view["org_specific_rx_by_oui"]
    assert len(by_oui) == 16 + 1 and by_oui["other"] == 4
    assert by_oui["11:11:11"] == 3 and by_oui["00:00:0c"] == 1 and by_oui["02:00:0c"] == 1
    assert "02:00:0d" not in by_oui  # the 17th OUI heard: under "other"
    assert view["org_specific_rx_oui_names"] == {"00:00:0c": "Cisco", "00:10:00": "CableLabs DPoE", "11:11:11": "CTC"}
    assert view["statistics"]["dot3OamOrgSpecificRx"] == counted(view) == len(sent)
    assert view["drops"] == {}

    statistics = lab.a.show("veth0", "statistics")
    assert statistics["org_specific_rx_by_oui"] == by_oui
    text = lab.a.cli("show", "port", "veth0", "statistics").stdout
    [line] = [line for line in text.splitlines() if line.startswith("Organization Specific received per OUI: ")]
    assert line.split(": ", 1)[1].startswith("00:00:0c (Cisco) 1, 00:10:00 (CableLabs DPoE) 1, 02:00:00 1,")
    assert line.endswith("11:11:11 (CTC) 3, other 4")

    samples = device_samples(lab, METRICS_PORT)
    per_oui = {name: value for name, value in samples.items() if name.startswith(FAMILY + "{")}
    assert per_oui[FAMILY + "{oui=11:11:11}"] == 3 and per_oui[FAMILY + "{oui=other}"] == 4
    assert len(per_oui) == 17
    assert sum(per_oui.values()) == samples["efmoam_org_specific_rx_total{}"] == len(sent)

    lab.a.query("clear_statistics", port="veth0")
    assert lab.a.fast_port()["org_specific_rx_by_oui"] == {}  # sparse: nothing since the clear
    send(lab, [CTC, 0x030000])  # a known slot, and one more OUI past the 16
    view = lab.wait_view(lab.a, lambda v: counted(v) >= 2, 5, "A to count two more")
    assert view["org_specific_rx_by_oui"] == {"11:11:11": 1, "other": 1}
    assert view["statistics"]["dot3OamOrgSpecificRx"] == 2
    samples = device_samples(lab, METRICS_PORT)  # the exported counters never go back
    assert samples[FAMILY + "{oui=11:11:11}"] == 4 and samples[FAMILY + "{oui=other}"] == 5
