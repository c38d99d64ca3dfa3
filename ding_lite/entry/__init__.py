"""Pipelines: each mode is a Python function the CLI only calls."""
from ding_lite.entry.serial import serial_pipeline

__all__ = ["serial_pipeline"]
