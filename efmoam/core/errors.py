"""Errors that say who broke the rules."""

from __future__ import annotations


class LocalProtocolError(Exception):
    """Our own caller asked for something the protocol does not allow now.

    For example: starting remote loopback in Passive mode, or before Discovery has
    completed, or towards a peer that does not advertise loopback.  Bad input from the
    peer never raises; it is counted and reported as `FrameDropped`.
    """
