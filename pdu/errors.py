"""The two ways a codec call can fail: bad input from a peer, or a bad call from us."""

from __future__ import annotations

import enum


class DecodeReason(enum.StrEnum):
    """Why a frame was not decoded.  The daemon counts drops per reason."""

    # not an OAMPDU at all: counted and skipped, not reported as malformed
    WRONG_ETHERTYPE = "wrong_ethertype"
    VLAN_TAGGED = "vlan_tagged"
    WRONG_SUBTYPE = "wrong_subtype"
    WRONG_DESTINATION = "wrong_destination"
    # a malformed OAMPDU
    SHORTER_THAN_HEADER = "shorter_than_header"
    TOO_LONG = "too_long"
    TLV_TOO_SHORT = "tlv_too_short"  #: TLV length 0 or 1 (or below its fixed header)
    TLV_OVERRUN = "tlv_overrun"  #: TLV runs past the end of the frame
    INFO_TLV_LENGTH = "info_tlv_length"  #: Local/Remote Information TLV length != 16
    EVENT_TLV_LENGTH = "event_tlv_length"  #: link event TLV length != its fixed length
    TRUNCATED = "truncated"  #: a fixed field is cut by the end of the frame

    @property
    def not_oampdu(self) -> bool:
        """True when the frame is some other frame, not a broken OAMPDU."""
        return self in _NOT_OAMPDU


_NOT_OAMPDU = frozenset(
    {
        DecodeReason.WRONG_ETHERTYPE,
        DecodeReason.VLAN_TAGGED,
        DecodeReason.WRONG_SUBTYPE,
        DecodeReason.WRONG_DESTINATION,
    }
)


class DecodeError(Exception):
    """A frame from the wire is not a well-formed OAMPDU.  The only exception decode raises."""

    def __init__(self, reason: DecodeReason, offset: int, detail: str = "") -> None:
        self.reason = reason
        self.offset = offset
        self.detail = detail
        super().__init__(f"{reason.value} at octet {offset}" + (f": {detail}" if detail else ""))


class EncodeError(ValueError):
    """Our own code asked for an OAMPDU that cannot be encoded (a bug or a size limit)."""
