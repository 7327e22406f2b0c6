"""The protocol engine, sans-IO: no sockets, clocks, threads, files or logging setup.

`OamPort` is the OAM sublayer of one port; its inputs are method calls carrying
``now`` and its outputs are the data classes of `efmoam.core.outputs`.  Names are
exported here and loaded on first use, so reading settings (``efmoam config check``)
does not import the engine or scapy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from efmoam.core.exports import exports

if TYPE_CHECKING:
    from efmoam.core.discovery import DiscoveryState as DiscoveryState, LocalPdu as LocalPdu
    from efmoam.core.errors import LocalProtocolError as LocalProtocolError
    from efmoam.core.outputs import (
        DiscoveryChanged as DiscoveryChanged,
        DropReason as DropReason,
        EventLogged as EventLogged,
        FrameDropped as FrameDropped,
        LinkEventsReceived as LinkEventsReceived,
        LoopbackChanged as LoopbackChanged,
        LoopbackStatus as LoopbackStatus,
        MonitorUnavailable as MonitorUnavailable,
        OperStatus as OperStatus,
        OrgSpecificReceived as OrgSpecificReceived,
        Output as Output,
        PeerChanged as PeerChanged,
        PeerFlagsChanged as PeerFlagsChanged,
        PeerInfo as PeerInfo,
        PeerQuirk as PeerQuirk,
        PolicyEvent as PolicyEvent,
        PortServiceChanged as PortServiceChanged,
        QuirkSeen as QuirkSeen,
        Transmit as Transmit,
        VariablesReceived as VariablesReceived,
    )
    from efmoam.core.port import OamPort as OamPort
    from efmoam.core.settings import OamMode as OamMode, PeerPolicy as PeerPolicy, PortSettings as PortSettings
    from efmoam.core.stats import OamStatistics as OamStatistics

exports(
    __name__,
    globals(),
    {
        ".discovery": ("DiscoveryState", "LocalPdu"),
        ".errors": ("LocalProtocolError",),
        ".outputs": (
            "DiscoveryChanged",
            "DropReason",
            "EventLogged",
            "FrameDropped",
            "LinkEventsReceived",
            "LoopbackChanged",
            "LoopbackStatus",
            "MonitorUnavailable",
            "OperStatus",
            "OrgSpecificReceived",
            "Output",
            "PeerChanged",
            "PeerFlagsChanged",
            "PeerInfo",
            "PeerQuirk",
            "PolicyEvent",
            "PortServiceChanged",
            "QuirkSeen",
            "Transmit",
            "VariablesReceived",
        ),
        ".port": ("OamPort",),
        ".settings": ("OamMode", "PeerPolicy", "PortSettings"),
        ".stats": ("OamStatistics",),
    },
)
