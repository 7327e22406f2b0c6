"""Frames and captures for the replay tests: OAMPDUs as the standard and as eoam send them."""

from __future__ import annotations

import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from efmoam.offline.replay.findings import Limits
from efmoam.offline.replay.observe import Observer
from efmoam.offline.replay.report import run_observe
from pdu import (
    EventNotification,
    EventTlvType,
    Flag,
    Information,
    InfoTlv,
    InfoTlvType,
    LinkEventTlv,
    LoopbackControl,
    OamConfig,
    Oampdu,
    encode,
)
from tests.cli.conftest import BASE_TIME, pcap_bytes

A = "02:00:00:00:00:0a"
B = "02:00:00:00:00:0b"
STABLE = Flag.LOCAL_STABLE | Flag.REMOTE_STABLE
EVALUATING = Flag.LOCAL_EVALUATING
CONFIG = OamConfig.ACTIVE | OamConfig.LINK_EVENTS | OamConfig.REMOTE_LOOPBACK | OamConfig.VARIABLE_RETRIEVAL


def local(revision: int = 1, oui: int = 0x001122, config: int = CONFIG, **fields: Any) -> InfoTlv:
    return InfoTlv(InfoTlvType.LOCAL, revision=revision, oam_config=config, max_pdu_size=1500, oui=oui, **fields)


def remote(of: InfoTlv) -> InfoTlv:
    """The Remote TLV that echoes `of`."""
    return InfoTlv(
        InfoTlvType.REMOTE,
        *(
            getattr(of, name)
            for name in (
                "oam_version",
                "revision",
                "state_reserved",
                "mux_action",
                "parser_action",
                "oam_config",
                "oampdu_config_reserved",
                "max_pdu_size",
                "oui",
                "vendor_info",
            )
        ),
    )


A_LOCAL = local(1, 0x001122)
B_LOCAL = local(7, 0x111111)


def info(src: str, flags: int = STABLE, *tlvs: Any) -> bytes:
    """An Information OAMPDU, padded as the standard wants."""
    return encode(Information(src, flags, tuple(tlvs)))


def steady(src: str) -> bytes:
    """The SEND_ANY Information OAMPDU of A or B, echoing the other."""
    own, other = (A_LOCAL, B_LOCAL) if src == A else (B_LOCAL, A_LOCAL)
    return info(src, STABLE, own, remote(other))


def unpadded(pdu: Oampdu, data_length: int) -> bytes:
    """`pdu` cut after `data_length` octets of data: not padded, no End marker (as eoam sends)."""
    return encode(pdu)[: 18 + data_length]


def event(src: str, sequence: int, *tlvs: LinkEventTlv, flags: int = STABLE) -> bytes:
    return encode(EventNotification(src, flags, sequence, tlvs))


def frame_event(window: int = 10, errors: int = 5, total: int = 5, events: int = 1) -> LinkEventTlv:
    """A plausible Errored Frame event (window in 100 ms units)."""
    return LinkEventTlv(EventTlvType.ERRORED_FRAME, 100, window, 1, errors, total, events)


def loopback(src: str, command: int) -> bytes:
    return encode(LoopbackControl(src, STABLE, command))


def conversation(seconds: int, start: float = 0.0, skip: Sequence[str] = ()) -> list[tuple[float, bytes]]:
    """Both speakers in SEND_ANY, one Information OAMPDU each per second."""
    frames = []
    for second in range(seconds):
        for offset, src in ((0.0, A), (0.5, B)):
            if src not in skip:
                frames.append((BASE_TIME + start + second + offset, steady(src)))
    return frames


def observe(frames: Sequence[tuple[float, bytes]], limits: Limits | None = None) -> dict[str, Any]:
    """The summary of `frames` (pcap order), each frame numbered from 1."""
    from efmoam.offline.capture import CaptureRecord

    observer = Observer(limits)
    observer.run(CaptureRecord(n, t, data, len(data), 0, 1) for n, (t, data) in enumerate(frames, 1))
    return observer.summary()


def findings(summary: dict[str, Any], speaker: str) -> dict[str, int]:
    counts: dict[str, int] = summary["speakers"][speaker]["finding_counts"]
    return counts


def details(summary: dict[str, Any], speaker: str, kind: str) -> list[dict[str, Any]]:
    return [f for f in summary["speakers"][speaker]["findings"] if f["kind"] == kind]


def write(tmp_path: Path, frames: Sequence[tuple[float, bytes]], name: str = "capture.pcap") -> Path:
    path = tmp_path / name
    path.write_bytes(pcap_bytes(list(frames)))
    return path


def run_text(path: Path | str, **kwargs: Any) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    status = run_observe(path, out, err, **kwargs)
    return status, out.getvalue(), err.getvalue()
