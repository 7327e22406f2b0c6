"""Tests of the configuration file: model, loader, default, examples and `efmoam config check`."""
