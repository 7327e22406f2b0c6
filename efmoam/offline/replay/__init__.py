"""Replay of OAM captures: observe (`efmoam replay FILE`), play (``--as MAC``) and
transmit (``--to IFACE``) modes, and the expectations files of ``pcaps/``."""
