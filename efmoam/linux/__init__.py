"""Everything that touches the operating system: packet sockets, netlink, counters, actions."""
