"""Bytes to lines to events: sources, collector prefixes, clocks, the incremental and batch scanners."""
