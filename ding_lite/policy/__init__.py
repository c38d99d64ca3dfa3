"""Policies: the base class and one module per algorithm (each registers itself in POLICY)."""
from ding_lite.policy.acer import ACERPolicy
from ding_lite.policy.base_policy import Policy
from ding_lite.policy.dqn import DQNPolicy
from ding_lite.policy.ensemble_ppo import EnsemblePPOPolicy
from ding_lite.policy.off_policy import OffPolicyPolicy
from ding_lite.policy.on_policy import OnPolicyPolicy
from ding_lite.policy.ppo import PPOPolicy
from ding_lite.policy.ppo_dapg import PPODAPGPolicy
from ding_lite.policy.sac import SACPolicy
from ding_lite.policy.td3 import TD3Policy

__all__ = ["ACERPolicy", "DQNPolicy", "EnsemblePPOPolicy", "OffPolicyPolicy", "OnPolicyPolicy", "PPODAPGPolicy",
           "PPOPolicy", "Policy", "SACPolicy", "TD3Policy"]
