"""Variable Request / Response (57.6): attributes, indications, size limit, permissions."""

from __future__ import annotations

import contextlib

import pytest

from efmoam.core import LocalProtocolError, OamMode, PortSettings, Transmit, VariablesReceived
from pdu import (
    Branch,
    Code,
    VariableContainer,
    VariableDescriptor,
    VariableIndication,
    VariableRequest,
    VariableResponse,
)
from tests.core.test_support import (
    A_MAC,
    B_MAC,
    STABLE,
    Pair,
    S,
    discovered,
    drops,
    frame,
    lone,
    outputs,
    sent_kind,
)

INFORMATION_TX = VariableDescriptor(Branch.ATTRIBUTE, 251)  # aOAMInformationTx
REMOTE_MAC = VariableDescriptor(Branch.ATTRIBUTE, 239)  # aOAMRemoteMACAddress
LOCAL_REVISION = VariableDescriptor(Branch.ATTRIBUTE, 336)  # aOAMLocalRevision
UNKNOWN_ATTRIBUTE = VariableDescriptor(Branch.ATTRIBUTE, 9999)
MAC_OBJECT = VariableDescriptor(Branch.OBJECT, 1)
MAC_PACKAGE = VariableDescriptor(Branch.PACKAGE, 1)


def ask(pair: Pair, *descriptors: VariableDescriptor, wait: float = 0.1) -> tuple[VariableContainer, ...]:
    """a asks b; returns the containers of the one answer."""
    before = len(outputs(pair, "a", VariablesReceived))
    pair.call("a", "request_variables", descriptors)
    pair.run_for(wait)
    answers = outputs(pair, "a", VariablesReceived)[before:]
    assert len(answers) == 1
    return answers[0].containers


def watch_answers(pair: Pair, name: str) -> list[int]:
    """Record `name`'s information_tx at the moment each of its Variable Responses goes out."""
    seen: list[int] = []

    def hook(port: str, output: object) -> None:
        if port == name and isinstance(output, Transmit) and output.code == Code.VARIABLE_RESPONSE:
            seen.append(pair.ports[name].stats.information_tx)

    pair.on_output = hook
    return seen


# -- attributes -----------------------------------------------------------------------


def test_information_tx_is_the_peers_counter_at_the_time() -> None:
    pair = discovered()
    seen = watch_answers(pair, "b")
    pair.run_for(3.2)  # a few keep-alives later
    (container,) = ask(pair, INFORMATION_TX)
    assert (container.branch, container.leaf, container.indication) == (Branch.ATTRIBUTE, 251, None)
    (value,) = container.values
    assert len(value) == 4
    assert int.from_bytes(value, "big") == seen[0]
    assert seen[0] >= 6  # 3 for Discovery and one per second since


def test_remote_mac_is_the_requesters_mac() -> None:
    pair = discovered()
    (container,) = ask(pair, REMOTE_MAC)
    assert container.values == (bytes.fromhex(A_MAC.replace(":", "")),)


def test_several_attributes_in_one_request_answer_in_order() -> None:
    pair = discovered()
    pair.call("b", "reconfigure", PortSettings(vendor_info=7))  # b's revision becomes 1
    pair.run_for(1)
    containers = ask(pair, REMOTE_MAC, LOCAL_REVISION, INFORMATION_TX)
    assert [c.leaf for c in containers] == [239, 336, 251]
    assert containers[1].values == (b"\x00\x01",)
    assert pair.a.stats.variable_request_tx == pair.b.stats.variable_request_rx == 1
    assert pair.b.stats.variable_response_tx == pair.a.stats.variable_response_rx == 1


def test_mac_statistics_supplied_by_the_caller_are_answered() -> None:
    pair = discovered()
    pair.b.update_mac_attributes({2: 123456789})  # aFramesTransmittedOK
    (container,) = ask(pair, VariableDescriptor(Branch.ATTRIBUTE, 2))
    assert container.values == ((123456789).to_bytes(8, "big"),)


@pytest.mark.parametrize(
    ("descriptor", "indication"),
    [
        (UNKNOWN_ATTRIBUTE, 0x21),
        (VariableDescriptor(Branch.ATTRIBUTE, 2), 0x21),  # a MAC statistic nobody supplied
        (MAC_OBJECT, 0x42),
        (MAC_PACKAGE, 0x62),
    ],
    ids=["unknown-attribute", "unsupplied-mac-attribute", "object", "package"],
)
def test_unsupported_leaves_are_answered_with_an_indication(descriptor: VariableDescriptor, indication: int) -> None:
    pair = discovered()
    (container,) = ask(pair, descriptor)
    assert (container.branch, container.leaf) == (descriptor.branch, descriptor.leaf)
    assert container.values == ()
    assert container.indication == indication


# -- size limit -----------------------------------------------------------------------


def _assert_truncated(response: VariableResponse, length: int, asked: int) -> None:
    assert length <= 60  # the peer's 64-octet OAMPDU without the FCS
    assert 0 < len(response.containers) < asked
    assert response.containers[-1].indication == VariableIndication.CONTAINER_TOO_LARGE
    assert all(c.indication is None for c in response.containers[:-1])


def test_answer_is_cut_to_the_requesters_max_pdu_size() -> None:
    pair = discovered(PortSettings(max_pdu_size=64), PortSettings())
    # the largest request that fits 60 octets: 14 descriptors
    descriptors = (INFORMATION_TX,) * 14
    pair.call("a", "request_variables", descriptors)
    pair.run_for(0.1)
    (response_frame,) = [r.output.frame for r in pair.outputs("b", Transmit) if r.output.code == Code.VARIABLE_RESPONSE]
    ((_, response),) = sent_kind(pair, "b", VariableResponse)
    _assert_truncated(response, len(response_frame), len(descriptors))


def test_injected_long_request_gets_an_answer_that_fits() -> None:
    pair = discovered(PortSettings(), PortSettings(max_pdu_size=64))
    descriptors = tuple(VariableDescriptor(Branch.ATTRIBUTE, 251) for _ in range(20))
    pair.inject("b", frame(VariableRequest(A_MAC, STABLE, descriptors)))
    pair.run_for(0.1)
    (response_frame,) = [r.output.frame for r in pair.outputs("b", Transmit) if r.output.code == Code.VARIABLE_RESPONSE]
    ((_, response),) = sent_kind(pair, "b", VariableResponse)
    _assert_truncated(response, len(response_frame), len(descriptors))


def test_request_too_long_for_the_peer_is_refused_up_front() -> None:
    pair = discovered(PortSettings(), PortSettings(max_pdu_size=64))
    descriptors = tuple(VariableDescriptor(Branch.ATTRIBUTE, 251) for _ in range(20))
    with pytest.raises(LocalProtocolError):
        pair.call("a", "request_variables", descriptors)


def test_request_too_long_for_the_peer_never_breaks_the_timer() -> None:
    pair = discovered(PortSettings(link_events=True), PortSettings(max_pdu_size=64, link_events=True))
    for _ in range(10):  # spend the budget
        pair.call("a", "send_org_specific", 0x001122, b"x")
    descriptors = tuple(VariableDescriptor(Branch.ATTRIBUTE, 251) for _ in range(20))
    with contextlib.suppress(LocalProtocolError):  # refusing it is fine
        pair.call("a", "request_variables", descriptors)
    pair.run_for(3)  # must not raise
    assert pair.both_in(S.SEND_ANY)


# -- permissions ----------------------------------------------------------------------


def test_request_from_a_passive_peer_is_refused() -> None:
    pair = discovered(PortSettings(), PortSettings(mode=OamMode.PASSIVE))
    pair.inject("a", frame(VariableRequest(B_MAC, STABLE, (INFORMATION_TX,))))
    pair.run_for(0.1)
    assert drops(pair, "a") == ["not_permitted"]
    assert sent_kind(pair, "a", VariableResponse) == []


def test_passive_port_cannot_request() -> None:
    pair = discovered(PortSettings(), PortSettings(mode=OamMode.PASSIVE))
    with pytest.raises(LocalProtocolError):
        pair.call("b", "request_variables", (INFORMATION_TX,))
    assert sent_kind(pair, "b", VariableRequest) == []


def test_passive_port_answers_an_active_one() -> None:
    pair = discovered(PortSettings(), PortSettings(mode=OamMode.PASSIVE))
    (container,) = ask(pair, REMOTE_MAC)
    assert container.values == (bytes.fromhex(A_MAC.replace(":", "")),)


def test_no_request_before_send_any() -> None:
    pair = lone()
    with pytest.raises(LocalProtocolError):
        pair.call("a", "request_variables", (INFORMATION_TX,))


def test_no_request_to_a_peer_without_variable_retrieval() -> None:
    pair = discovered(PortSettings(), PortSettings(variable_retrieval=False))
    with pytest.raises(LocalProtocolError):
        pair.call("a", "request_variables", (INFORMATION_TX,))


def test_port_without_variable_retrieval_does_not_answer() -> None:
    pair = discovered(PortSettings(), PortSettings(variable_retrieval=False))
    pair.inject("b", frame(VariableRequest(A_MAC, STABLE, (INFORMATION_TX,))))
    pair.run_for(0.5)
    assert sent_kind(pair, "b", VariableResponse) == []
