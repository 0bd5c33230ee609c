"""Vocabulary every layer shares: units and text fitting, health semantics. Imports nothing above it."""
