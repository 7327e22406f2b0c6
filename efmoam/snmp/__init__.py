"""SNMP: the AgentX protocol (RFC 2741) and RFC 4878 DOT3-OAM-MIB over the engines, sans-IO;
the socket side is efmoam.daemon.snmp."""
