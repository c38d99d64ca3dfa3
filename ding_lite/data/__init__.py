"""Data: batch keys, columnar batch helpers, replay buffers."""
from ding_lite.data import keys
from ding_lite.data.buffer import UniformBuffer
from ding_lite.data.prioritized import PrioritizedBuffer, SumTree

__all__ = ["keys", "UniformBuffer", "PrioritizedBuffer", "SumTree"]
