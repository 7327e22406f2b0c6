"""The 17 counters of RFC 4878 dot3OamStatsTable, kept across state changes.

OAMPDU code and direction name a counter (`sent`, `received`); `COUNTER_OF` is the one
table from (code, direction, duplicate) to the counter.  A code the table does not
name is an unsupported code.  The steady state's two counters, the keep-alives sent and
received, are incremented in place where they happen: one method call would be a fifth
of the engine's work per keep-alive (tests/bench/test_core_bench.py).
"""

from __future__ import annotations

import enum

import attrs

from pdu.enums import Code


class Direction(enum.Enum):
    TX = "tx"
    RX = "rx"


@attrs.define
class OamStatistics:
    """dot3OamStatsEntry: OAMPDUs sent and received per code, and frames lost.

    Counters only grow (a `clear` starts them again from zero, as an operator asks).
    `frames_lost_due_to_oam` counts OAMPDUs the transmit queue had to drop for lack of
    room (the multiplexer's transmit contention of the RFC's definition).
    """

    information_tx: int = 0
    information_rx: int = 0
    unique_event_notification_tx: int = 0
    unique_event_notification_rx: int = 0
    duplicate_event_notification_tx: int = 0
    duplicate_event_notification_rx: int = 0
    loopback_control_tx: int = 0
    loopback_control_rx: int = 0
    variable_request_tx: int = 0
    variable_request_rx: int = 0
    variable_response_tx: int = 0
    variable_response_rx: int = 0
    org_specific_tx: int = 0
    org_specific_rx: int = 0
    unsupported_codes_tx: int = 0
    unsupported_codes_rx: int = 0
    frames_lost_due_to_oam: int = 0

    def sent(self, code: int, duplicate: bool = False) -> None:
        """Count an OAMPDU sent (`duplicate`: an Event Notification repeating the last one)."""
        name = _TX[duplicate].get(code, "unsupported_codes_tx")
        setattr(self, name, getattr(self, name) + 1)

    def received(self, code: int, duplicate: bool = False) -> None:
        """Count an OAMPDU accepted from the peer."""
        name = _RX[duplicate].get(code, "unsupported_codes_rx")
        setattr(self, name, getattr(self, name) + 1)

    def as_rfc4878(self) -> dict[str, int]:
        """The counters under their RFC 4878 object names (dot3OamInformationTx, ...)."""
        return {RFC4878_NAMES[name]: value for name, value in attrs.asdict(self).items()}


_PER_CODE = {
    Code.INFORMATION: ("information",),
    Code.EVENT_NOTIFICATION: ("unique_event_notification", "duplicate_event_notification"),
    Code.LOOPBACK_CONTROL: ("loopback_control",),
    Code.VARIABLE_REQUEST: ("variable_request",),
    Code.VARIABLE_RESPONSE: ("variable_response",),
    Code.ORGANIZATION_SPECIFIC: ("org_specific",),
}
#: (code, direction, duplicate) -> the counter
COUNTER_OF: dict[tuple[int, Direction, bool], str] = {
    (int(code), direction, duplicate): f"{stem}_{direction.value}"
    for code, stems in _PER_CODE.items()
    for duplicate, stem in zip((False, True), stems, strict=False)
    for direction in Direction
}
assert set(COUNTER_OF.values()) <= {a.name for a in attrs.fields(OamStatistics)}
# the same, split for the per-frame lookups: [duplicate][code] -> counter
_TX, _RX = (
    tuple(
        {code: name for (code, d, dup), name in COUNTER_OF.items() if d is direction and dup is duplicate}
        for duplicate in (False, True)
    )
    for direction in Direction
)


def _rfc_name(field: str) -> str:
    return "dot3Oam" + "".join(word.capitalize() for word in field.split("_"))


RFC4878_NAMES: dict[str, str] = {a.name: _rfc_name(a.name) for a in attrs.fields(OamStatistics)}
