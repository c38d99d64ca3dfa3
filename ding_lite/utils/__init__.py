"""Utilities: config dict helpers, checkpoint io, logging, seeding; and the registries under DI-engine's names
(``from ding_lite.utils import POLICY_REGISTRY``, as ``from ding.utils import POLICY_REGISTRY``)."""
from ding_lite.registry import (
    BUFFER_REGISTRY,
    COLLECTOR_REGISTRY,
    ENV_MANAGER_REGISTRY,
    ENV_REGISTRY,
    EVALUATOR_REGISTRY,
    LEARNER_HOOK_REGISTRY,
    MODEL_REGISTRY,
    OPPONENT_REGISTRY,
    POLICY_REGISTRY,
)

__all__ = ["BUFFER_REGISTRY", "COLLECTOR_REGISTRY", "ENV_MANAGER_REGISTRY", "ENV_REGISTRY", "EVALUATOR_REGISTRY",
           "LEARNER_HOOK_REGISTRY", "MODEL_REGISTRY", "OPPONENT_REGISTRY", "POLICY_REGISTRY"]
