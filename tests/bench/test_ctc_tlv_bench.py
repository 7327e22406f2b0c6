"""Information OAMPDUs with the CTC extended Information TLV in ``efmoam decode``
(pytest-benchmark): measured, never asserted.

Run them with ``pytest tests/bench/test_ctc_tlv_bench.py --benchmark-enable``; without it
each body runs once as a smoke test.  Every call renders 1000 distinct Information
OAMPDUs (Local and Remote TLVs, then an Organization Specific TLV): divide by 1000 for
one frame.  ``ctc`` is the CTC TLV (decoded by `pdu.oui.decode_tlv`: three supported
versions), ``unknown_oui`` the same octets under an OUI nobody documents (raw only).
"""

from __future__ import annotations

from typing import Any

import pytest

from efmoam.offline.decode import format_text, pdu_to_dict, pdu_to_json
from pdu import Flag, Information, InfoTlv, OrgSpecificTlv, decode, encode
from pdu.oui import CTC

pytestmark = pytest.mark.bench

FRAMES = 1000
STABLE = Flag.LOCAL_STABLE | Flag.REMOTE_STABLE
VALUE = bytes.fromhex("01 20 111111 01 111111 20 111111 21")


def pdus(oui: int) -> list[Any]:
    def information(n: int) -> Any:
        local = InfoTlv(type=1, revision=n & 0xFFFF, oam_config=0x01, max_pdu_size=1518, oui=CTC, vendor_info=n)
        remote = InfoTlv(type=2, revision=1, oam_config=0x01, max_pdu_size=1518, oui=CTC, vendor_info=7)
        return decode(encode(Information("02:00:00:00:00:0b", STABLE, (local, remote, OrgSpecificTlv(oui, VALUE)))))

    return [information(n) for n in range(FRAMES)]


@pytest.mark.parametrize("oui", [CTC, 0x001122], ids=["ctc", "unknown_oui"])
def test_json_lines_of_1000_information_oampdus(benchmark: Any, oui: int) -> None:
    batch = pdus(oui)
    benchmark.extra_info["frames_per_call"] = FRAMES
    lines = benchmark(lambda: [pdu_to_json(pdu) for pdu in batch])
    assert len(lines) == FRAMES


@pytest.mark.parametrize("oui", [CTC, 0x001122], ids=["ctc", "unknown_oui"])
def test_text_lines_of_1000_information_oampdus(benchmark: Any, oui: int) -> None:
    batch = pdus(oui)
    benchmark.extra_info["frames_per_call"] = FRAMES
    lines = benchmark(lambda: [format_text(pdu_to_dict(pdu)) for pdu in batch])
    assert len(lines) == FRAMES
