"""Organization Specific OAMPDUs in ``efmoam decode`` (pytest-benchmark): measured, never asserted.

Run them with ``pytest tests/bench/test_oui_bench.py --benchmark-enable``; without it each
body runs once as a smoke test.  Every call renders 1000 distinct OAMPDUs (a peer's
stream of new frames; a repeated frame is served from `CaptureDecoder`'s per-peer
cache): divide the time by 1000 for one frame.

* a DPoE Get Response of four variables, decoded by `pdu.oui` into the JSON line;
* the same OAMPDU from an OUI nobody documents: the name lookup and raw octets only.
"""

from __future__ import annotations

from typing import Any

import pytest

from efmoam.offline.decode import format_text, pdu_to_dict, pdu_to_json
from pdu import Flag, OrgSpecificPdu, decode, encode
from pdu.oui import DPOE

pytestmark = pytest.mark.bench

FRAMES = 1000
STABLE = Flag.LOCAL_STABLE | Flag.REMOTE_STABLE
RESPONSE = "02 d60000 0100 d70002 06{:012x} d70007 04{:08x} d7000d a1 00"


def pdus(oui: int) -> list[Any]:
    return [
        decode(encode(OrgSpecificPdu("02:00:00:00:00:0b", STABLE, oui, bytes.fromhex(RESPONSE.format(n, n + 1)))))
        for n in range(FRAMES)
    ]


@pytest.mark.parametrize("oui", [DPOE, 0x001122], ids=["dpoe", "unknown_oui"])
def test_json_lines_of_1000_org_specific_oampdus(benchmark: Any, oui: int) -> None:
    batch = pdus(oui)
    benchmark.extra_info["frames_per_call"] = FRAMES
    lines = benchmark(lambda: [pdu_to_json(pdu) for pdu in batch])
    assert len(lines) == FRAMES


@pytest.mark.parametrize("oui", [DPOE, 0x001122], ids=["dpoe", "unknown_oui"])
def test_text_lines_of_1000_org_specific_oampdus(benchmark: Any, oui: int) -> None:
    batch = pdus(oui)
    benchmark.extra_info["frames_per_call"] = FRAMES
    lines = benchmark(lambda: [format_text(pdu_to_dict(pdu)) for pdu in batch])
    assert len(lines) == FRAMES
