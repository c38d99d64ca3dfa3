"""Pipelines: each mode is a Python function the CLI only calls."""
from ding_lite.entry.collect_demo import collect_demo_pipeline
from ding_lite.entry.parallel import parallel_pipeline
from ding_lite.entry.serial import serial_pipeline, serial_pipeline_onpolicy

__all__ = ["collect_demo_pipeline", "parallel_pipeline", "serial_pipeline", "serial_pipeline_onpolicy"]
