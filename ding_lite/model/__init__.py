"""Networks: building blocks and registered model templates."""
from ding_lite.model.acer import ACERNet
from ding_lite.model.templates import VAC, QNet

__all__ = ["ACERNet", "QNet", "VAC"]
