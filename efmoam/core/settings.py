"""What one port's OAM sublayer is configured with (the core's view of the config).

Defaults are the standard's and RFC 4878's: Active mode, a 1 s transmit interval, lost
link after 5 intervals, loopback commands ignored (dot3OamLoopbackIgnoreRx = ignore),
variable retrieval answered, one Event Notification per event.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

import attrs

from efmoam.core.linkmon.settings import LinkMonitoringSettings
from efmoam.core.policy.settings import PolicySettings
from pdu import OamConfig
from pdu.enums import MAX_OAMPDU_SIZE, MIN_OAMPDU_SIZE


class OamMode(enum.Enum):
    ACTIVE = "active"
    PASSIVE = "passive"


def _between(low: float, high: float) -> Callable[[Any, Any, float], None]:
    def check(_inst: Any, attribute: Any, value: float) -> None:
        if not low <= value <= high:
            raise ValueError(f"{attribute.name} must be between {low} and {high}, not {value}")

    return check


@attrs.frozen
class PeerPolicy:
    """What makes us satisfied with a peer (``local_satisfied``, 57.3.2.1.5)."""

    #: capabilities the peer must advertise (for example LINK_EVENTS)
    required_functions: OamConfig = OamConfig(0)
    #: the mode the peer must be in; None accepts either (two passive ports never meet)
    required_mode: OamMode | None = None
    #: the OAM versions we speak
    versions: frozenset[int] = frozenset({1})


@attrs.frozen
class PortSettings:
    """Configuration of the OAM sublayer of one port."""

    mode: OamMode = OamMode.ACTIVE
    enabled: bool = True
    transmit_interval: float = attrs.field(default=1.0, validator=_between(0.1, 10.0))
    multiplier: int = attrs.field(default=5, validator=_between(2, 10))
    max_pdu_size: int = attrs.field(default=MAX_OAMPDU_SIZE, validator=_between(MIN_OAMPDU_SIZE, MAX_OAMPDU_SIZE))
    oui: int = 0
    vendor_info: int = 0
    unidirectional: bool = False
    #: process Loopback Control OAMPDUs from the peer (and advertise the capability)
    loopback_process: bool = False
    #: seconds an initiated loopback change may wait for the peer's confirmation
    loopback_timeout: float = 3.0
    variable_retrieval: bool = True
    #: advertise the Link Events capability even without link monitoring
    link_events: bool = False
    link_monitoring: LinkMonitoringSettings = LinkMonitoringSettings()
    #: an Organization Specific Information TLV to send, as (OUI, value)
    org_specific_tlv: tuple[int, bytes] | None = None
    peer_policy: PeerPolicy = PeerPolicy()
    #: OAMPDUs that may wait for the transmit budget; more are dropped and counted
    tx_queue_limit: int = 64
    #: what events do to the port (``event_actions``, ``track``, ``recovery``, ...)
    policy: PolicySettings = PolicySettings()
    #: Information OAMPDUs with Dying Gasp sent when the daemon stops (some peers lose one)
    dying_gasp_count: int = attrs.field(default=1, validator=_between(1, 5))
    #: seconds without an OAMPDU from the peer before Discovery restarts (made with the
    #: settings, which never change: every frame from the peer reads it)
    lost_link_time: float = attrs.field(init=False)

    @lost_link_time.default
    def _lost_link_time(self) -> float:
        return self.transmit_interval * self.multiplier

    @property
    def oam_config(self) -> OamConfig:
        """The OAM Configuration field we advertise."""
        config = OamConfig(0)
        for on, bit in (
            (self.mode is OamMode.ACTIVE, OamConfig.ACTIVE),
            (self.unidirectional, OamConfig.UNIDIRECTIONAL),
            (self.loopback_process, OamConfig.REMOTE_LOOPBACK),
            (self.link_events or self.link_monitoring.enabled, OamConfig.LINK_EVENTS),
            (self.variable_retrieval, OamConfig.VARIABLE_RETRIEVAL),
        ):
            if on:
                config |= bit
        return config
