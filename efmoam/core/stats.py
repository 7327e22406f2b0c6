"""The 17 counters of RFC 4878 dot3OamStatsTable, kept across state changes, and the
display baseline that `clear ... statistics` takes.

OAMPDU code and direction name a counter (`sent`, `received`); `COUNTER_OF` is the one
table from (code, direction, duplicate) to the counter.  A code the table does not
name is an unsupported code.  The steady state's two counters, the keep-alives sent and
received, are incremented in place where they happen: one method call would be a fifth
of the engine's work per keep-alive (tests/bench/test_core_bench.py).

Organization Specific OAMPDUs received are also counted per OUI (`OuiCounts`), beside
the RFC's one total: at most `OUI_SLOTS` OUIs per port, in the order first heard, and
the rest together under `OTHER_OUI`, so that a peer sending every OUI there is cannot
grow the daemon's memory.  Only the OUI is read, never the content.

Counters never go back: Prometheus takes a counter that falls for a restart, and an SNMP
manager for a wrap.  An operator's clear therefore changes only what show presents: it
takes a `DisplayBaseline` of the counters, and show subtracts it.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from typing import Any

import attrs

from pdu.enums import Code
from pdu.model import format_oui
from pdu.oui import name as oui_name


class Direction(enum.Enum):
    TX = "tx"
    RX = "rx"


@attrs.define
class OamStatistics:
    """dot3OamStatsEntry: OAMPDUs sent and received per code, and frames lost.

    Counters only grow (a clear is a `DisplayBaseline` for show, never a reset).
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


#: distinct OUIs counted by name per port (`OuiCounts`)
OUI_SLOTS = 16
#: the key under which `OuiCounts` counts the OUIs past `OUI_SLOTS`
OTHER_OUI = "other"


class OuiCounts:
    """Organization Specific OAMPDUs received per OUI: `OUI_SLOTS` OUIs, then `OTHER_OUI`."""

    __slots__ = ("by_oui", "other")

    def __init__(self) -> None:
        self.by_oui: dict[int, int] = {}  #: 24-bit OUI -> count, at most `OUI_SLOTS` of them
        self.other = 0  #: OAMPDUs of the OUIs past the slots

    def count(self, oui: int) -> None:
        """Count one Organization Specific OAMPDU of *oui*."""
        by_oui = self.by_oui
        if oui in by_oui:
            by_oui[oui] += 1
        elif len(by_oui) < OUI_SLOTS:
            by_oui[oui] = 1
        else:
            self.other += 1

    def total(self) -> int:
        """Every OAMPDU counted (equal to the RFC's total of those received)."""
        return sum(self.by_oui.values()) + self.other

    def labelled(self) -> list[tuple[str, str | None, int]]:
        """(OUI as "00:11:22", the organization's name or None, count), by OUI, then
        (`OTHER_OUI`, None, count) if any OAMPDU went past the slots."""
        rows = [(format_oui(oui), oui_name(oui), count) for oui, count in sorted(self.by_oui.items())]
        if self.other:
            rows.append((OTHER_OUI, None, self.other))
        return rows


class DisplayBaseline:
    """Counters as show presents them: from zero at the last clear.

    `take` notes the counters of a view (its values under `keys`: a number, or numbers by
    name such as drops by reason); `shown` gives a view with each of them less what was
    noted.  A counter found below its baseline started again (its port or socket was made
    anew) and is shown as it is.  In the mappings named `sparse`, which list only the
    names that counted, a name back at its baseline is left out as it was before.
    """

    def __init__(self) -> None:
        self._taken: dict[str, Any] = {}
        self._sparse: frozenset[str] = frozenset()

    def take(self, view: Mapping[str, Any], keys: Iterable[str], sparse: Iterable[str] = ()) -> None:
        """Clear: from now on show subtracts `view`'s counters under `keys`."""
        self._taken = {key: dict(value) if isinstance(value, Mapping) else value
                       for key in keys if (value := view.get(key)) is not None}  # fmt: skip
        self._sparse = frozenset(sparse)

    def shown(self, view: Mapping[str, Any]) -> dict[str, Any]:
        """A copy of `view` with its counters less the baseline."""
        shown = dict(view)
        for key, taken in self._taken.items():
            value = view.get(key)
            if isinstance(value, Mapping) and isinstance(taken, Mapping):
                since = {name: _since(count, taken.get(name, 0)) for name, count in value.items()}
                shown[key] = {name: n for name, n in since.items() if n} if key in self._sparse else since
            else:
                shown[key] = _since(value, taken)
        return shown


def _since(count: Any, taken: Any) -> Any:
    """A counter less its baseline (anything but two ints: as it is)."""
    if type(count) is not int or type(taken) is not int:
        return count
    return count - taken if count >= taken else count
