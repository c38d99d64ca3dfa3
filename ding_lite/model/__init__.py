"""Networks: building blocks and registered model templates."""
from ding_lite.model.acer import ACERNet
from ding_lite.model.ensemble_vac import EnsembleVAC
from ding_lite.model.qac import QAC
from ding_lite.model.templates import VAC, QNet

__all__ = ["ACERNet", "EnsembleVAC", "QAC", "QNet", "VAC"]
