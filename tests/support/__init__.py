"""Helpers the tests share (imported as ``support.NAME``; ``tests`` is on the path)."""
