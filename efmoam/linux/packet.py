"""One AF_PACKET socket per port for OAMPDUs (linux.md section 5).

The socket is created with protocol 0, so it receives nothing until it is bound to the
port and to EtherType 0x8809 (created with the EtherType, it would first be hooked on
every interface, and bind would then wait for an RCU grace period, synchronize_net, to
unhook it: about 10 ms a socket, against 0.05 ms; tests/bench/test_packet_bench.py).  It joins
01:80:C2:00:00:02, ignores the frames we send, and carries a classic BPF filter that
passes only untagged Slow Protocols frames of subtype 3 to the Slow Protocols address:
LACP, Marker, OSSP and tagged frames never wake the daemon.  The kernel removes a VLAN tag
before a packet socket sees the frame and, when no VLAN device takes it, clears the tag
and marks a frame with a non-zero VLAN id "for another host"; the filter accepts only
frames marked multicast, so tagged OAMPDUs are dropped too (a priority-tagged frame, VLAN
id 0, is indistinguishable from an untagged one at this point).
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import math
import socket
import struct
import termios
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor

ETH_P_SLOW = 0x8809
SOL_PACKET = 263
PACKET_ADD_MEMBERSHIP = 1
PACKET_MR_MULTICAST = 0
PACKET_STATISTICS = 6
PACKET_IGNORE_OUTGOING = 23
SO_ATTACH_FILTER = 26
SO_LOCK_FILTER = 44
SLOW_PROTOCOLS_MULTICAST = bytes.fromhex("0180c2000002")
MAX_FRAME = 2048
SIOCINQ = termios.FIONREAD  #: a packet socket answers with the length of the next frame (0: none)
#: seconds: reads closer together than this are a burst, and ask whether more frames wait
#: (a peer's keep-alives come at least 0.1 s apart)
BURST_GAP = 0.05
_NOTHING_QUEUED = bytes(4)
_GONE = frozenset({errno.ENETDOWN, errno.ENXIO, errno.ENODEV})  # errors of a port that went down or away

# classic BPF opcodes
_LD_W_ABS, _LD_H_ABS, _LD_B_ABS = 0x20, 0x28, 0x30
_JEQ_K, _RET_K = 0x15, 0x06
_SKF_AD_PKTTYPE = -0x1000 + 4  # ancillary load: the packet type the kernel assigned
PACKET_MULTICAST = 2


def _program(code: int | None = None) -> list[tuple[int, int, int, int]]:
    """(code, jump if true, jump if false, k): accept OAMPDUs (of OAMPDU code `code` only,
    when given), drop everything else."""
    checks = [
        (_LD_W_ABS, _SKF_AD_PKTTYPE & 0xFFFFFFFF, PACKET_MULTICAST),  # tagged frames are "other host"
        (_LD_H_ABS, 12, ETH_P_SLOW),
        (_LD_B_ABS, 14, 3),  # OAM subtype
        (_LD_W_ABS, 0, 0x0180C200),
        (_LD_H_ABS, 4, 0x0002),
    ]
    if code is not None:
        checks.append((_LD_B_ABS, 17, code))  # the OAMPDU's Code, after subtype and flags
    program: list[tuple[int, int, int, int]] = []
    for i, (load, offset, value) in enumerate(checks):
        to_drop = 2 * (len(checks) - i) - 1  # instructions left after this compare, up to "drop"
        program.append((load, 0, 0, offset))
        program.append((_JEQ_K, 0, to_drop, value))
    program += [(_RET_K, 0, 0, 0xFFFF), (_RET_K, 0, 0, 0)]
    return program


def _sock_fprog(program: list[tuple[int, int, int, int]]) -> tuple[bytes, bytes]:
    """struct sock_fprog as setsockopt wants it, plus the buffer it points to (kept alive)."""
    code = b"".join(struct.pack("HBBI", *insn) for insn in program)
    buffer = ctypes.create_string_buffer(code)
    fprog = struct.pack("HL", len(program), ctypes.addressof(buffer))
    return fprog, buffer  # type: ignore[return-value]


def attach_oam_filter(sock: socket.socket, code: int | None = None) -> None:
    """Attach the in-kernel filter that passes only untagged OAMPDUs (of OAMPDU code
    `code` only, when given: a capture that wants one kind copies no other) to `sock`."""
    fprog, keep = _sock_fprog(_program(code))
    sock.setsockopt(socket.SOL_SOCKET, SO_ATTACH_FILTER, fprog)
    del keep  # the kernel has copied the program


class OamSocket:
    """The OAMPDU socket of one interface; non-blocking, for a selector."""

    def __init__(self, ifname: str) -> None:
        self.ifname = ifname
        self.send_errors = 0  #: frames the kernel refused (port down, no buffer)
        self.receive_errors = 0  #: reads that found the port down or gone
        #: frames the kernel dropped because the socket's queue was full (PACKET_STATISTICS)
        self.kernel_drops = 0
        sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)  # the protocol comes with bind
        try:
            attach_oam_filter(sock)
            sock.setsockopt(socket.SOL_SOCKET, SO_LOCK_FILTER, 1)
            sock.bind((ifname, ETH_P_SLOW))
            ifindex = socket.if_nametoindex(ifname)
            mreq = struct.pack("iHH8s", ifindex, PACKET_MR_MULTICAST, 6, SLOW_PROTOCOLS_MULTICAST)
            sock.setsockopt(SOL_PACKET, PACKET_ADD_MEMBERSHIP, mreq)
            sock.setsockopt(SOL_PACKET, PACKET_IGNORE_OUTGOING, 1)
            sock.setblocking(False)
        except BaseException:
            sock.close()
            raise
        self._sock = sock
        self._fd = sock.fileno()
        self._queued = bytearray(4)  #: SIOCINQ's answer
        self._last_read = -math.inf  #: the `now` of the last `receive` given one

    def fileno(self) -> int:
        return self._sock.fileno()

    def mac(self) -> str:
        """The interface's MAC address, as the socket sees it."""
        return bytes(self._sock.getsockname()[4]).hex(":")

    def send(self, frame: bytes) -> bool:
        """Send one frame; False (and counted) when the kernel refuses it."""
        try:
            self._sock.send(frame)
        except OSError as exc:
            if exc.errno not in _GONE | {errno.ENOBUFS, errno.EAGAIN}:
                raise
            self.send_errors += 1
            return False
        return True

    def receive(self, limit: int, now: float | None = None) -> list[bytes]:
        """Up to `limit` waiting frames (fewer when the queue is empty), for a socket the
        selector found readable.

        After the first frame the queue is asked whether another waits (SIOCINQ: the
        length of the next frame, 0 for none) instead of reading on until EAGAIN: a failed
        read (an exception) costs three times the question.  Only when more wait are
        frames read until EAGAIN (a flood pays one failed read per batch, not one question
        per frame).  Given `now`, a socket last read more than `BURST_GAP` earlier does not
        even ask: that wake-up is the usual one, a keep-alive, and should more wait, the
        selector (level-triggered) reports the socket again at once and that read asks.
        """
        frames: list[bytes] = []
        recv = self._sock.recv
        if now is not None:
            quiet = now - self._last_read > BURST_GAP
            self._last_read = now
            if quiet:
                limit = 1
        try:
            frames.append(recv(MAX_FRAME))
            if limit > 1 and self._next_frame_waits():
                for _ in range(limit - 1):
                    frames.append(recv(MAX_FRAME))
        except BlockingIOError:
            pass
        except OSError as exc:  # the port went down or away: link events say the rest
            if exc.errno not in _GONE:
                raise
            self.receive_errors += 1
        return frames

    def _next_frame_waits(self) -> bool:
        try:
            fcntl.ioctl(self._fd, SIOCINQ, self._queued)
        except OSError:
            return True  # then read on until EAGAIN, as without the question
        return self._queued != _NOTHING_QUEUED

    def read_kernel_drops(self) -> int:
        """Add what the kernel dropped since the last read to `kernel_drops` (the kernel
        resets its counts at each read); returns the total."""
        try:
            _packets, drops = struct.unpack("II", self._sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, 8))
        except OSError:
            return self.kernel_drops
        self.kernel_drops += drops
        return self.kernel_drops

    def close(self) -> None:
        self._sock.close()


#: threads that close sockets together at shutdown (each close waits out an RCU grace period)
CLOSE_WORKERS = 64


def close_all(sockets: Sequence[OamSocket]) -> None:
    """Close many OAMPDU sockets at once.

    Closing a packet socket unhooks it from the device and waits for an RCU grace period
    (synchronize_net, about 17 ms), whatever it was created with: 1,024 ports closed in
    turn take 17 s, which a SIGTERM must not wait for.  The waits overlap in threads (the
    close releases the GIL): 1,024 sockets in about 0.3 s.
    """
    if len(sockets) <= 1:
        for sock in sockets:
            sock.close()
        return
    with ThreadPoolExecutor(max_workers=min(CLOSE_WORKERS, len(sockets)), thread_name_prefix="close") as pool:
        for _ in pool.map(OamSocket.close, sockets):
            pass
