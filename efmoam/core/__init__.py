"""The protocol engine, sans-IO: no sockets, clocks, threads, files or logging setup.

`OamPort` is the OAM sublayer of one port; its inputs are method calls carrying
``now`` and its outputs are the data classes of `efmoam.core.outputs`.
"""

from __future__ import annotations

from efmoam.core.discovery import DiscoveryState, LocalPdu
from efmoam.core.errors import LocalProtocolError
from efmoam.core.outputs import (
    DiscoveryChanged,
    FrameDropped,
    LinkEventsReceived,
    LoopbackChanged,
    LoopbackStatus,
    OperStatus,
    OrgSpecificReceived,
    Output,
    PeerChanged,
    PeerFlagsChanged,
    PeerInfo,
    Transmit,
    VariablesReceived,
)
from efmoam.core.port import OamPort
from efmoam.core.settings import OamMode, PeerPolicy, PortSettings
from efmoam.core.stats import OamStatistics

__all__ = [
    "DiscoveryChanged",
    "DiscoveryState",
    "FrameDropped",
    "LinkEventsReceived",
    "LocalPdu",
    "LocalProtocolError",
    "LoopbackChanged",
    "LoopbackStatus",
    "OamMode",
    "OamPort",
    "OamStatistics",
    "OperStatus",
    "OrgSpecificReceived",
    "Output",
    "PeerChanged",
    "PeerFlagsChanged",
    "PeerInfo",
    "PeerPolicy",
    "PortSettings",
    "Transmit",
    "VariablesReceived",
]
