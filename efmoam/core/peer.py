"""What a port knows of its peer, learnt from the OAMPDUs it accepts (57.3.1, 57.4).

All of it is forgotten when Discovery enters FAULT (a new `PeerKnowledge`).  Choices
where the standard leaves room, for an operator's expectations:

* The first MAC heard in an Information OAMPDU after FAULT is the peer (point to point);
  another MAC is a violation, reported and ignored until the peer is lost.
* The Flags field is in every OAMPDU (57.4.2.1): the critical flags (Link Fault, Dying
  Gasp, Critical Event) of any OAMPDU the bound peer sends are its flags from then on,
  whatever the code.  (One vendor sends its Dying Gasp in an Organization Specific
  OAMPDU and then goes silent.)  The Local Evaluating and Stable bits are taken from
  Information OAMPDUs only, which carry the peer's Discovery state.
* An Event Notification whose sequence number and TLVs equal the last one's is a
  duplicate (a burst).  A new sequence number is a new notification; a point-to-point
  link does not reorder, so a lower one means the peer started counting again.  The
  previous sequence number with other TLVs is a new notification too: some peers derive
  the number they send from the last one they received.  That is reported as a quirk.
* ``local_satisfied`` (57.3.2.1.5) is our policy over the peer's Local Information TLV
  (`satisfied_with`); an Information OAMPDU without one does not change the verdict.
* ``remote_stable`` needs the peer's Local Stable flag and its Remote Information TLV
  equal to our current Local Information TLV, revision and State field excepted.
"""

from __future__ import annotations

import attrs

from efmoam.core.outputs import PeerInfo
from efmoam.core.settings import OamMode, PortSettings
from pdu.enums import CRITICAL_FLAGS, MIN_OAMPDU_SIZE, Flag, OamConfig
from pdu.model import EventNotification, EventTlvs, Information, InfoTlv

_EVALUATING_OR_STABLE = Flag.LOCAL_EVALUATING | Flag.LOCAL_STABLE


@attrs.define
class PeerKnowledge:
    """The peer as last heard; a fresh one means "no peer"."""

    mac: str | None = None  #: bound by its first Information OAMPDU
    flags: Flag = Flag(0)  #: its Flags field, from its last OAMPDU
    local_tlv: InfoTlv | None = None  #: its Local Information TLV
    remote_tlv: InfoTlv | None = None  #: its echo of ours
    last_info: Information | None = None  #: its last Information OAMPDU, in full
    verdict: bool | None = None  #: our policy's verdict on `local_tlv`, once decided
    lost_link_at: float | None = None  #: when the lost-link timer expires
    last_sequence: int | None = None  #: of its last Event Notification
    last_tlvs: tuple[EventTlvs, ...] = ()
    _info: tuple[InfoTlv, PeerInfo] | None = None  # `info`, made once per TLV

    @property
    def active(self) -> bool:
        return self.local_tlv is not None and bool(self.local_tlv.oam_config & OamConfig.ACTIVE)

    def advertises(self, function: OamConfig) -> bool:
        # as ints: IntFlag's & is a Python call (an Event Notification asks this first)
        return self.local_tlv is not None and bool(int(self.local_tlv.oam_config) & int(function))

    def info(self) -> PeerInfo | None:
        """The peer as RFC 4878 dot3OamPeerTable (the same object while nothing changed)."""
        tlv, mac, made = self.local_tlv, self.mac, self._info
        if tlv is None or mac is None:
            return None
        if made is None or made[0] is not tlv or made[1].mac != mac:
            info = PeerInfo(
                mac=mac,
                oui=tlv.oui,
                vendor_info=tlv.vendor_info,
                mode_active=bool(tlv.oam_config & OamConfig.ACTIVE),
                max_pdu_size=tlv.max_pdu_size,
                config_revision=tlv.revision,
                functions=tlv.oam_config,
                oam_version=tlv.oam_version,
            )
            made = self._info = (tlv, info)
        return made[1]

    def satisfied(self, settings: PortSettings) -> bool:
        """``local_satisfied``: our verdict on the peer's TLV; without link monitoring (an
        "unsupportive" node, as the link-monitoring reference calls it) also no failure
        flagged by the peer, so Discovery leaves SEND_ANY while the peer reports one."""
        if not self.verdict:
            return False
        return settings.link_monitoring.enabled or not self.flags & CRITICAL_FLAGS

    def stable_with(self, local: InfoTlv) -> bool:
        """``remote_stable``: the peer says Local Stable and echoes our `local` TLV (its
        revision and State field excepted, as they change during loopback)."""
        return (
            self.flags & _EVALUATING_OR_STABLE == Flag.LOCAL_STABLE
            and self.remote_tlv is not None
            and self.remote_tlv.same_configuration(local)
        )

    def pdu_limit(self, settings: PortSettings) -> int:
        """The largest OAMPDU we may send: the smaller of ours and the peer's."""
        peer = self.local_tlv.max_pdu_size if self.local_tlv is not None else MIN_OAMPDU_SIZE
        return max(MIN_OAMPDU_SIZE, min(settings.max_pdu_size, peer))

    def notification_kind(self, pdu: EventNotification) -> tuple[bool, bool]:
        """(duplicate, sequence reused) for a notification, which it then remembers."""
        same_number = pdu.sequence == self.last_sequence
        duplicate = same_number and pdu.tlvs == self.last_tlvs
        self.last_sequence, self.last_tlvs = pdu.sequence, pdu.tlvs
        return duplicate, same_number and not duplicate


def satisfied_with(tlv: InfoTlv, settings: PortSettings) -> bool:
    """``local_satisfied``: our policy over the peer's Local Information TLV."""
    policy = settings.peer_policy
    peer_active = bool(tlv.oam_config & OamConfig.ACTIVE)
    return (
        tlv.oam_version in policy.versions
        and tlv.oam_config & policy.required_functions == policy.required_functions
        and (policy.required_mode is None or peer_active == (policy.required_mode is OamMode.ACTIVE))
        and (peer_active or settings.mode is OamMode.ACTIVE)  # two passive ports never meet
        and tlv.max_pdu_size >= MIN_OAMPDU_SIZE
    )
