"""Networks: building blocks and registered model templates."""
from ding_lite.model.acer import ACERNet
from ding_lite.model.ensemble_vac import EnsembleVAC
from ding_lite.model.qac import QAC
from ding_lite.model.templates import VAC, QNet

DQN = QNet  # DI-engine's name of the Q-network (registered as 'dqn'): `DQN(**cfg.policy.model)` builds it

__all__ = ["ACERNet", "DQN", "EnsembleVAC", "QAC", "QNet", "VAC"]
