"""What one port sends, and when: the Transmit state machine of 57.3.2.2 in effect.

* At most 10 OAMPDUs in any second (`pacing.TxBudget`), with a reserve for keep-alives.
* While ``local_pdu`` lets the port send, an Information OAMPDU at least every transmit
  interval, and another one at once (within the budget) whenever what it carries
  changes.  Only Information OAMPDUs go out outside SEND_ANY (``local_pdu`` INFO or
  LF_INFO); in LF_INFO they carry no TLVs (57.3.1.3).
* Other OAMPDUs wait in a bounded queue (``tx_queue_limit``; a full queue loses the
  OAMPDU, counted in dot3OamFramesLostDueToOAM).  They are encoded once, when queued
  (a PDU too large is refused at the call); their Flags field is set when they leave,
  so it is never stale.  A changed Information goes before them; a
  keep-alive never passes a waiting OAMPDU twice in a row, so neither starves.

The Information frame is encoded once per content (`InformationContent`) and reused
for every keep-alive until the content changes.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import attrs

from efmoam.core.discovery import LocalPdu
from efmoam.core.errors import LocalProtocolError
from efmoam.core.outputs import DropReason, FrameDropped, Transmit
from efmoam.core.pacing import TxBudget
from efmoam.core.settings import PortSettings
from efmoam.core.stats import OamStatistics
from pdu.codec import encode, with_flags
from pdu.enums import Code, Flag, InfoTlvType, MuxAction, ParserAction
from pdu.errors import EncodeError
from pdu.model import Information, InfoTlv, Oampdu, OrgSpecificTlv

# enum members bound once: reading one through its class costs as much as the rest of a check
_RX_INFO, _ANY, _INFORMATION = LocalPdu.RX_INFO, LocalPdu.ANY, int(Code.INFORMATION)


@attrs.frozen
class InformationContent:
    """Everything an Information OAMPDU carries, and the size it must fit."""

    flags: Flag
    link_fault_only: bool  #: ``local_pdu`` LF_INFO: no TLVs
    local: InfoTlv
    peer: InfoTlv | None  #: echoed as the Remote Information TLV
    org_specific: tuple[int, bytes] | None
    limit: int  #: the largest OAMPDU the peer and we accept

    def pdu(self, mac: str) -> Information:
        tlvs: list[Any] = []
        if not self.link_fault_only:
            tlvs.append(self.local)
            if self.peer is not None:
                tlvs.append(attrs.evolve(self.peer, type=InfoTlvType.REMOTE))
            if self.org_specific is not None:
                tlvs.append(OrgSpecificTlv(*self.org_specific))
        return Information(mac, self.flags, tuple(tlvs))


class LocalInformation:
    """Our Local Information TLV (57.5.2.1): its revision grows whenever its content
    changes (the configuration, or the State field during loopback)."""

    def __init__(self, revision: int, settings: PortSettings, actions: tuple[ParserAction, MuxAction]) -> None:
        self._inputs = (settings, actions)
        self.tlv = self._build(revision, settings, actions)

    def current(self, settings: PortSettings, actions: tuple[ParserAction, MuxAction]) -> InfoTlv:
        """The TLV for these settings and parser/multiplexer actions."""
        inputs = (settings, actions)
        if inputs != self._inputs:
            self._inputs = inputs
            candidate = self._build(self.tlv.revision, settings, actions)
            if candidate != self.tlv:
                self.tlv = attrs.evolve(candidate, revision=(self.tlv.revision + 1) & 0xFFFF)
        return self.tlv

    @staticmethod
    def _build(revision: int, settings: PortSettings, actions: tuple[ParserAction, MuxAction]) -> InfoTlv:
        parser, mux = actions
        return InfoTlv(
            type=InfoTlvType.LOCAL,
            revision=revision,
            mux_action=mux,
            parser_action=parser,
            oam_config=settings.oam_config,
            max_pdu_size=settings.max_pdu_size,
            oui=settings.oui,
            vendor_info=settings.vendor_info,
        )


@attrs.frozen
class _Queued:
    """An OAMPDU waiting for the budget, encoded; its flags are filled in when it is sent."""

    pdu: Oampdu
    frame: bytes  #: `pdu` encoded for `limit`
    limit: int  #: the peer's limit it was encoded for (encoded again if that changed)
    duplicate: bool  #: an Event Notification repeating the previous one (a burst)


class Transmitter:
    """The transmit side of one port; counts what it sends in `stats`."""

    def __init__(self, mac: str, stats: OamStatistics, interval: float, now: float) -> None:
        self.mac = mac
        self.stats = stats
        self._budget = TxBudget()
        self._interval = 0.0
        self.set_interval(interval)
        self._queue: deque[_Queued] = deque()
        self._content: InformationContent | None = None
        self._frame: Transmit | None = None
        self._due = now  #: when the next Information OAMPDU is due
        self._urgent = False  #: the Information to send carries a change
        self._last_sent_info = False  #: whether the last OAMPDU sent was an Information
        self._repeats = 0  #: copies of the Information still to send at once (`repeat_information`)
        #: when something may be sent next, as of the last `service` (None: nothing can be)
        self.next_send: float | None = None

    def set_interval(self, interval: float) -> None:
        if interval != self._interval:
            self._interval = interval
            self._budget.reserve_for(interval)

    @property
    def content(self) -> InformationContent | None:
        """What the Information OAMPDUs carry now."""
        return self._content

    def set_information(self, content: InformationContent, now: float) -> None:
        """The Information OAMPDU carries `content` from now on: a change goes out at once."""
        if content == self._content:
            return
        self._content = content
        self._frame = Transmit(encode(content.pdu(self.mac), content.limit), _INFORMATION)
        self._due = now
        self._urgent = True

    def information_due_now(self, now: float) -> None:
        """Send an Information OAMPDU at the next chance (Discovery changed state)."""
        self._due = now

    def repeat_information(self, copies: int, now: float) -> None:
        """Send the current Information OAMPDU `copies` more times, each at the next chance
        the budget gives (a Dying Gasp sent several times, so that one survives)."""
        if copies > 0:
            self._repeats = copies - 1
            self._due = now

    # -- the queue ---------------------------------------------------------------------

    def enqueue(self, pdu: Oampdu, limit: int, queue_limit: int, duplicate: bool = False) -> bool:
        """Queue an OAMPDU for the budget; False (counted as lost) when the queue is full.

        It is encoded once here, so a PDU too large for the peer is refused at the call
        (LocalProtocolError), never later in the event loop.
        """
        if len(self._queue) >= queue_limit:  # before encoding: a flood costs no more than a count
            self.stats.frames_lost_due_to_oam += 1
            return False
        try:
            frame = encode(pdu, limit)
        except EncodeError as exc:
            raise LocalProtocolError(f"cannot send {type(pdu).__name__}: {exc}") from exc
        self._queue.append(_Queued(pdu, frame, limit, duplicate))
        return True

    @property
    def queued(self) -> int:
        """OAMPDUs waiting for the budget."""
        return len(self._queue)

    def drop_duplicates(self) -> None:
        """Forget queued repeats of an earlier Event Notification (a newer one follows)."""
        if any(queued.duplicate for queued in self._queue):  # (an empty queue, mostly)
            self._queue = deque(queued for queued in self._queue if not queued.duplicate)

    def discard(self) -> None:
        """Discovery entered FAULT: what waits can no longer be sent (counted as lost)."""
        self.stats.frames_lost_due_to_oam += len(self._queue)
        self._queue.clear()

    # -- sending -----------------------------------------------------------------------

    def service(self, now: float, mode: LocalPdu, sent: list[Any]) -> None:
        """Send what is due and what the budget allows, Information first, appending the
        frames (and any frame dropped) to `sent`.  Other OAMPDUs carry the Flags field of
        the current Information content.  Sets `next_send` for `mode`."""
        if mode is _RX_INFO:
            self._due = now
            self.next_send = None
            return
        budget = self._budget
        # else nothing is due (the steady state between keep-alives)
        while self._due <= now or (self._queue and mode is _ANY):
            info_due = self._due <= now
            queued = bool(self._queue) and mode is _ANY
            if not budget.available(now):
                break
            waiting = queued and budget.available(now, information=False)
            if info_due and (self._urgent or not (waiting and self._last_sent_info)):
                budget.spend(now)
                assert self._frame is not None, "set_information before sending"
                sent.append(self._frame)
                self.stats.information_tx += 1  # the keep-alive: counted in place (see `OamStatistics`)
                self._due = now + self._interval
                self._last_sent_info = True
                self._urgent = False
                if self._repeats:
                    self._repeats -= 1
                    self._due = now
            elif waiting:
                sent.append(self._send_queued(now))
                self._last_sent_info = False
            else:
                break
        send = budget.next_free(self._due)
        if self._queue and mode is _ANY:
            send = min(send, budget.next_free(0.0, information=False))
        # kept, not asked for: every input ends here, and the caller reads it after each one
        self.next_send = send

    def _send_queued(self, now: float) -> Transmit | FrameDropped:
        queued = self._queue.popleft()
        content = self._content
        assert content is not None
        pdu = queued.pdu
        if content.limit == queued.limit:  # the flags alone can differ: the same octets otherwise
            frame = queued.frame if pdu.flags == content.flags else with_flags(queued.frame, content.flags)
        else:
            try:
                frame = encode(attrs.evolve(pdu, flags=content.flags), content.limit)
            except EncodeError as exc:  # the peer's limit shrank since it was queued
                self.stats.frames_lost_due_to_oam += 1
                return FrameDropped(DropReason.TOO_LARGE_FOR_PEER, str(exc))
        self._budget.spend(now, information=False)
        self.stats.sent(pdu.code, queued.duplicate)
        return Transmit(frame, pdu.code)
