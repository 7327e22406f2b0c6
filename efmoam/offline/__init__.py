"""The tools that work on captures, without a daemon: `capture` (pcap and pcapng
reader), `decode` (``efmoam decode``: OAMPDUs as text and JSON), `replay` (``efmoam
replay``: observe, play and transmit a recording)."""
