"""Organization Specific OAMPDUs received, counted per OUI: bounded whatever the peer sends.

A discovered pair's port "a" receives Organization Specific OAMPDUs of 20 distinct OUIs
from its peer: the first 16 heard are counted by OUI, the other 4 together under
"other", and every count adds up to the RFC's one total (aOAMOrganizationSpecificRx).
"""

from __future__ import annotations

from efmoam.core.stats import OTHER_OUI, OUI_SLOTS, OuiCounts
from pdu import OrgSpecificPdu
from pdu.oui import CISCO, CTC, DPOE
from tests.core.test_support import B_MAC, STABLE, discovered, drops, frame

#: 20 distinct OUIs: three with names, then 17 nobody names
OUIS = [CISCO, CTC, DPOE, *range(0x020000, 0x020011)]


def test_twenty_ouis_give_sixteen_and_other_and_the_totals_still_match() -> None:
    pair = discovered()
    port = pair.a
    before = port.stats.org_specific_rx
    sent = [oui for number, oui in enumerate(OUIS) for _ in range(1 + number % 3)]  # 1, 2 or 3 of each
    sent += [CTC, 0x020010]  # one of the first 16 again, one of the last 4 again
    for number, oui in enumerate(sent):
        pair.inject("a", frame(OrgSpecificPdu(B_MAC, STABLE, oui, b"\x01\x02")), delay=0.02 * number)
    pair.run_for(0.02 * len(sent) + 0.1)
    assert drops(pair, "a") == []
    counts = port.org_specific_rx_by_oui
    first = OUIS[:OUI_SLOTS]
    assert list(counts.by_oui) == first  # in the order first heard
    assert counts.by_oui == {oui: sent.count(oui) for oui in first}
    assert counts.other == sum(sent.count(oui) for oui in OUIS[OUI_SLOTS:]) == 2 + 3 + 1 + 2 + 1
    assert counts.total() == port.stats.org_specific_rx - before == len(sent)
    rows = counts.labelled()
    assert rows[0] == ("00:00:0c", "Cisco", 1)
    assert ("11:11:11", "CTC", 2 + 1) in rows and ("00:10:00", "CableLabs DPoE", 3) in rows
    assert rows[-1] == (OTHER_OUI, None, counts.other)
    assert len(rows) == OUI_SLOTS + 1


def test_memory_stays_bounded_whatever_is_counted() -> None:
    counts = OuiCounts()
    for oui in range(100_000):
        counts.count(oui)
    assert len(counts.by_oui) == OUI_SLOTS
    assert counts.other == 100_000 - OUI_SLOTS and counts.total() == 100_000
    counts.count(OUI_SLOTS - 1)  # one of the slots still counts by name
    assert counts.by_oui[OUI_SLOTS - 1] == 2


def test_nothing_counted_shows_nothing() -> None:
    counts = OuiCounts()
    assert (counts.labelled(), counts.total()) == ([], 0)
    pair = discovered()
    pair.run_for(2)  # keep-alives only
    assert pair.a.org_specific_rx_by_oui.labelled() == []
