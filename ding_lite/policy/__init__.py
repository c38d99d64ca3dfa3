"""Policies: the base class and one module per algorithm (each registers itself in POLICY)."""
from ding_lite.policy.acer import ACERPolicy
from ding_lite.policy.base_policy import Policy
from ding_lite.policy.dqn import DQNPolicy
from ding_lite.policy.ensemble_ppo import EnsemblePPOPolicy
from ding_lite.policy.ppo import PPOPolicy
from ding_lite.policy.ppo_dapg import PPODAPGPolicy

__all__ = ["ACERPolicy", "Policy", "DQNPolicy", "EnsemblePPOPolicy", "PPOPolicy", "PPODAPGPolicy"]
