"""The 17 counters of RFC 4878 dot3OamStatsTable, kept across state changes."""

from __future__ import annotations

import attrs


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

    def as_rfc4878(self) -> dict[str, int]:
        """The counters under their RFC 4878 object names (dot3OamInformationTx, ...)."""
        return {RFC4878_NAMES[name]: value for name, value in attrs.asdict(self).items()}


def _rfc_name(field: str) -> str:
    return "dot3Oam" + "".join(word.capitalize() for word in field.split("_"))


RFC4878_NAMES: dict[str, str] = {a.name: _rfc_name(a.name) for a in attrs.fields(OamStatistics)}
