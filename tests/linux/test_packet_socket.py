"""OAMPDU sockets on a real veth pair: filtering, multicast membership, own frames."""

from __future__ import annotations

import os
import select
import socket
import time

from efmoam.linux.packet import ETH_P_SLOW, OamSocket, attach_oam_filter, close_all
from pdu import Code, EncodeError, EventNotification, Information, InfoTlv, decode, encode
from tests.linux.netns import in_netns, ip, needs_root, veth_pair

pytestmark = needs_root

MAC_A, MAC_B = "02:00:00:00:aa:01", "02:00:00:00:bb:01"
OAMPDU = encode(Information(MAC_A, 0x08, (InfoTlv(oui=0x001122),)))


def frame(dst: str, ethertype: int, payload: bytes, src: str = MAC_A) -> bytes:
    return (bytes.fromhex(dst.replace(":", "")) + bytes.fromhex(src.replace(":", ""))
            + ethertype.to_bytes(2, "big") + payload).ljust(60, b"\0")  # fmt: skip


def wait_frames(sock: OamSocket, seconds: float = 0.5) -> list[bytes]:
    frames: list[bytes] = []
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) > 0:
        if select.select([sock], [], [], left)[0]:
            frames += sock.receive(100)
    return frames


def test_only_untagged_oampdus_to_the_slow_protocols_address_arrive() -> None:
    with veth_pair(MAC_A, MAC_B) as (ns_a, ns_b):
        sender = in_netns(ns_a, lambda: OamSocket("veth0"))
        receiver = in_netns(ns_b, lambda: OamSocket("veth1"))
        try:
            assert sender.mac() == MAC_A
            slow = "01:80:c2:00:00:02"
            unwanted = [
                frame(slow, 0x8809, bytes.fromhex("0101")),  # LACP
                frame(slow, 0x8809, bytes.fromhex("0a")),  # OSSP
                frame("ff:ff:ff:ff:ff:ff", 0x8809, OAMPDU[14:]),  # wrong destination
                frame(slow, 0x8100, bytes.fromhex("0064 8809") + OAMPDU[14:]),  # 802.1Q tagged OAMPDU
                frame(slow, 0x0800, b"\x45" + bytes(19)),  # not a slow frame at all
            ]
            for unwanted_frame in unwanted:
                assert sender.send(unwanted_frame)
            assert sender.send(OAMPDU)
            received = wait_frames(receiver)
            assert received == [OAMPDU]
            assert decode(received[0]).src == MAC_A
            assert wait_frames(sender, 0.2) == []  # our own transmissions are ignored
        finally:
            sender.close()
            receiver.close()


def test_the_socket_hears_only_oampdus_of_its_own_port() -> None:
    # created with protocol 0 (issue 18): the port and EtherType 0x8809 come with bind
    with veth_pair(MAC_A, MAC_B) as (ns_a, ns_b):
        ip("link", "add", "veth2", "type", "veth", "peer", "name", "veth3", netns=ns_b)
        for dev in ("veth2", "veth3"):
            ip("link", "set", dev, "up", netns=ns_b)
        sender = in_netns(ns_a, lambda: OamSocket("veth0"))
        receiver = in_netns(ns_b, lambda: OamSocket("veth1"))
        neighbour = in_netns(ns_b, lambda: OamSocket("veth3"))  # sends to veth2, next to veth1
        witness = in_netns(ns_b, lambda: OamSocket("veth2"))
        try:
            with socket.socket(fileno=os.dup(receiver.fileno())) as view:
                assert view.getsockname()[:2] == ("veth1", ETH_P_SLOW)
            assert neighbour.send(OAMPDU)
            assert sender.send(OAMPDU[:12] + (0x88B5).to_bytes(2, "big") + OAMPDU[14:])  # another EtherType
            assert sender.send(OAMPDU)
            assert wait_frames(receiver) == [OAMPDU]
            assert wait_frames(witness, 0.1) == [OAMPDU]  # the neighbour's frame did reach the namespace
        finally:
            for sock in (sender, receiver, neighbour, witness):
                sock.close()


def test_a_filter_for_one_code_passes_only_oampdus_of_that_code() -> None:
    # the benchmarks' capture of Event Notifications (issue 18): one socket on every
    # interface, copying nothing else
    notification = encode(EventNotification(MAC_A, 0, 7))
    with veth_pair(MAC_A, MAC_B) as (ns_a, ns_b):
        sender = in_netns(ns_a, lambda: OamSocket("veth0"))

        def capture() -> socket.socket:
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_SLOW))
            attach_oam_filter(sock, code=Code.EVENT_NOTIFICATION)
            sock.setblocking(False)
            return sock

        sock = in_netns(ns_b, capture)
        try:
            for sent in (OAMPDU, frame("01:80:c2:00:00:02", 0x8809, bytes.fromhex("0101")), notification, OAMPDU):
                assert sender.send(sent)
            received: list[bytes] = []
            deadline = time.monotonic() + 0.5
            while time.monotonic() < deadline:
                if select.select([sock], [], [], 0.05)[0]:
                    received.append(sock.recv(2048))
            assert received == [notification]
            assert decode(received[0]).sequence == 7
        finally:
            sender.close()
            sock.close()


def test_send_on_a_down_port_is_counted_not_raised() -> None:
    with veth_pair(MAC_A, MAC_B) as (ns_a, _):
        sock = in_netns(ns_a, lambda: OamSocket("veth0"))
        try:
            ip("link", "set", "veth0", "down", netns=ns_a)
            assert sock.send(OAMPDU) is False
            assert sock.send_errors == 1
        finally:
            sock.close()


def test_encode_error_is_not_a_socket_concern() -> None:
    # the daemon never hands the socket an unencodable PDU: encode refuses first
    try:
        encode(Information(MAC_A, 0, ()), 40)
    except EncodeError:
        return
    raise AssertionError("encode accepted a limit below 64")


@needs_root
def test_close_all_closes_every_socket_together() -> None:
    with veth_pair(MAC_A, MAC_B) as (ns_a, _ns_b):
        sockets = [in_netns(ns_a, lambda: OamSocket("veth0")) for _ in range(8)]
        close_all(sockets)
        assert [sock._sock.fileno() for sock in sockets] == [-1] * 8
        close_all(sockets)  # closing again is harmless
        one = in_netns(ns_a, lambda: OamSocket("veth0"))
        close_all([one])
        assert one._sock.fileno() == -1
