"""A Variable Response as `efmoam variables` shows it: from containers to lines."""

from __future__ import annotations

from efmoam.views.data import variable_view
from efmoam.views.text import render_variables
from pdu import Branch, VariableContainer


def test_every_kind_of_container_is_shown() -> None:
    containers = [
        VariableContainer(Branch.ATTRIBUTE, 251, (bytes.fromhex("0000002a"),)),
        VariableContainer(Branch.ATTRIBUTE, 239, (bytes.fromhex("020000aabb01"),)),
        VariableContainer(Branch.ATTRIBUTE, 999, (), 0x21),
        VariableContainer(Branch.ATTRIBUTE, 998, (), 0x7F),  # an indication the standard does not name
        VariableContainer(Branch.OBJECT, 1, (b"\x01", b"\x02\x03")),  # an object: several values
        VariableContainer(Branch.ATTRIBUTE, 2, (bytes(range(9)),)),  # longer than a number
    ]
    views = [variable_view(container) for container in containers]
    assert views[0] == {
        "branch": Branch.ATTRIBUTE,
        "leaf": 251,
        "name": "aOAMInformationTx",
        "values": ["0000002a"],
        "indication": None,
        "indication_name": None,
    }
    assert views[1]["name"] == "aOAMRemoteMACAddress"
    assert (views[2]["indication"], views[2]["indication_name"]) == (0x21, "attribute_unsupported")
    assert views[3]["indication_name"] is None
    assert views[4]["name"] is None  # leaf 1 of the object branch is no attribute
    assert render_variables("eth0", views).splitlines() == [
        "eth0: Variable Response from the peer",
        "  Leaf  Attribute                         Value",
        "  251   aOAMInformationTx                 42 (0x0000002a)",
        "  239   aOAMRemoteMACAddress              02:00:00:aa:bb:01",
        "  999   -                                 attribute_unsupported (0x21)",
        "  998   -                                 indication (0x7f)",
        "  1     -                                 01 0203",
        "  2     aFramesTransmittedOK              000102030405060708",
    ]
