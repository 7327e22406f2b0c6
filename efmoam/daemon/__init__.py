"""The daemon: one process, one event loop, every configured port."""
