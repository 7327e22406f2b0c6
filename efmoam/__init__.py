"""efmoam: IEEE 802.3 Clause 57 Ethernet OAM (802.3ah EFM OAM, Link OAM) for Linux."""
