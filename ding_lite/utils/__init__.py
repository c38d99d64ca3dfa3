"""Utilities: config dict helpers, checkpoint io, logging, seeding."""
