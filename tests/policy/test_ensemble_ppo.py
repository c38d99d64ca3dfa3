"""EnsemblePPOPolicy (ding_lite/policy/ensemble_ppo.py) and its model template ensemble_vac."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from ding_lite.build import build, build_env_managers
from ding_lite.config import compile_config
from ding_lite.data.keys import ACTION, ADV, LOGP, MEMBER_LOGP, OBS
from ding_lite.errors import CheckpointError, ConfigError
from ding_lite.policy.ppo import action_distribution, deferred_ratio_stats
from ding_lite.rl_utils.eppo import mixture_log_prob

pytestmark = pytest.mark.unittest

ENVS = {"discrete": "CartPole-v1", "continuous": "Pendulum-v1"}


def _cfg(policy_type: str, space: str, **policy):
    env = dict(type="gymnasium", env_id=ENVS[space], collector_env_num=2, evaluator_env_num=1)
    return compile_config(dict(env=env, policy=dict(type=policy_type, **policy)), strict=True)


def _policy_and_samples(policy_type: str, space: str, n_sample: int = 64, **policy):
    cfg = _cfg(policy_type, space, **policy)
    collector_env, evaluator_env = build_env_managers(cfg, seed=0)
    try:
        pol = build(cfg, "policy")
        samples, _ = build(cfg, "policy.collect.collector", collector_env, pol.collect_mode).collect(n_sample)
    finally:
        collector_env.close()
        evaluator_env.close()
    return pol, samples


@pytest.mark.parametrize("space", ["discrete", "continuous"])
def test_one_member_no_sub_no_diversity_equals_ppo_loss(space):
    """K = 1, c_sub = 0, c_div = 0: EPPO's loss is PPOPolicy's loss on the same batch and weights (to 1e-6)."""
    torch.manual_seed(0)
    learn = dict(entropy_weight=0.01, value_clip_ratio=0.2)
    ppo, samples = _policy_and_samples("ppo", space, learn=learn)
    eppo, _ = _policy_and_samples("ensemble_ppo", space, model=dict(ensemble_size=1),
                                  learn=dict(learn, sub_policy_coef=0.0, diverse_coef=0.0, center_policy_coef=1.0))
    vac_state = ppo._model.state_dict()
    eppo._model.load_member_from_vac(0, vac_state)
    eppo._model.load_critic_from_vac(vac_state)
    mb = ppo.batch_tensors(samples)
    ppo_loss, ppo_info = ppo._compute_loss(mb, {})
    ppo_info = deferred_ratio_stats([ppo_info], ppo.cfg["learn"]["clip_ratio"])[0]  # PPO's _end_update does this
    eppo_loss, eppo_info = eppo._compute_loss(mb, {})
    assert abs(ppo_loss.item()) > 1e-3  # a real loss, not two zeros
    torch.testing.assert_close(eppo_loss, ppo_loss, atol=1e-6, rtol=0)
    for name in ("policy_loss", "value_loss", "entropy", "approx_kl", "clipfrac"):
        torch.testing.assert_close(eppo_info[name], ppo_info[name], atol=1e-6, rtol=0)


@pytest.mark.parametrize("space", ["discrete", "continuous"])
def test_gradients_reach_every_member_and_the_critic(space):
    torch.manual_seed(0)
    pol, samples = _policy_and_samples("ensemble_ppo", space)
    loss, _ = pol._compute_loss(pol.batch_tensors(samples), {})
    loss.backward()
    for k, member in enumerate(pol._model.members):
        for name, p in member.named_parameters():
            assert p.grad is not None and p.grad.abs().sum() > 0, f"member {k} {name} got no gradient"
    assert all(p.grad.abs().sum() > 0 for p in pol._model.critic.parameters())


@pytest.mark.parametrize("space", ["discrete", "continuous"])
def test_collect_stores_the_mixture_log_prob_of_the_executed_action(space):
    torch.manual_seed(0)
    pol, samples = _policy_and_samples("ensemble_ppo", space)
    with torch.no_grad():
        out = pol._model.compute_actor(torch.as_tensor(samples[OBS]))
        member_logp = action_distribution(out).log_prob(torch.as_tensor(samples[ACTION]))
    torch.testing.assert_close(torch.as_tensor(samples[LOGP]), mixture_log_prob(member_logp))


def _constant_members(pol, logits: list[list[float]]) -> None:
    """Make member k output ``logits[k]`` whatever the observation."""
    with torch.no_grad():
        for member, row in zip(pol._model.members, logits, strict=True):
            member.actor_head.weight.zero_()
            member.actor_head.bias.copy_(torch.tensor(row))


def test_discrete_collect_samples_the_mixture_and_eval_takes_its_argmax():
    torch.manual_seed(0)
    pol = build(_cfg("ensemble_ppo", "discrete", model=dict(obs_shape=4, action_shape=2,
                                                            action_space="discrete")), "policy")
    # members p = (0.999, 0.001) and three times (0.2, 0.8): p̄ = ((0.999 + 0.6)/4, ...) = (0.39975, 0.60025), so
    # argmax p̄ = 1, whereas averaging logits, (ln 999 + 3 ln 0.25)/4 = 0.69 > 0, would pick action 0.
    _constant_members(pol, [[math.log(999.0), 0.0]] + [[math.log(0.25), 0.0]] * 3)
    obs = np.zeros((20000, 4), dtype=np.float32)
    assert (pol.eval_mode.forward(obs[:5])[ACTION] == 1).all()
    actions = pol.collect_mode.forward(obs)[ACTION]
    assert abs((actions == 0).mean() - 0.39975) < 0.015


def test_continuous_collect_samples_the_gaussian_mixture_and_eval_takes_a_mode():
    torch.manual_seed(0)
    pol = build(_cfg("ensemble_ppo", "continuous", model=dict(obs_shape=3, action_shape=1,
                                                              action_space="continuous")), "policy")
    with torch.no_grad():  # members N(-2, 0.1²), N(-2, 0.1²), N(-2, 0.1²), N(3, 0.1²)
        for member, mean in zip(pol._model.members, [-2.0, -2.0, -2.0, 3.0], strict=True):
            member.actor_head.weight.zero_()
            member.actor_head.bias.fill_(mean)
            member.log_std.fill_(math.log(0.1))
    obs = np.zeros((20000, 3), dtype=np.float32)
    actions = pol.collect_mode.forward(obs)[ACTION][:, 0]
    assert abs((actions > 0.5).mean() - 0.25) < 0.015  # a quarter of the samples come from the member at 3
    assert abs(actions.mean() - (-2.0 * 0.75 + 3.0 * 0.25)) < 0.05
    # mode: the member mean of highest mixture density, -2 (three members there); the mean of means would be -0.75
    np.testing.assert_allclose(pol.eval_mode.forward(obs[:3])[ACTION], -2.0)
    mean_pol = build(_cfg("ensemble_ppo", "continuous", eval=dict(continuous_action="mean"),
                          model=dict(obs_shape=3, action_shape=1, action_space="continuous")), "policy")
    mean_pol._model.load_state_dict(pol._model.state_dict())
    np.testing.assert_allclose(mean_pol.eval_mode.forward(obs[:3])[ACTION], -0.75, rtol=1e-6)


@pytest.mark.parametrize("space", ["discrete", "continuous"])
def test_value_weighted_recomputes_member_log_probs_before_the_update(space):
    torch.manual_seed(0)
    pol, samples = _policy_and_samples("ensemble_ppo", space, collect=dict(ensemble_action="value_weighted"),
                                       learn=dict(epoch_per_collect=1))
    before = [[p.detach().clone() for p in member.parameters()] for member in pol._model.members]
    member_logp = pol._prepare_off_policy(pol.batch_tensors(samples))  # (B, K), under the pre-update weights
    with torch.no_grad():
        out = pol._model.compute_actor(torch.as_tensor(samples[OBS]))
        expected = action_distribution(out).log_prob(torch.as_tensor(samples[ACTION])).T
    torch.testing.assert_close(torch.as_tensor(member_logp), expected)
    # every ratio starts at 1 against the recomputed old probabilities: no sample is clipped before the first step
    mb = {**pol.batch_tensors(samples), MEMBER_LOGP: member_logp}
    loss, info = pol._compute_loss(mb, {})
    assert info["clipfrac"].item() == 0.0 and abs(info["approx_kl"].item()) < 1e-6
    # the member values moved (they decide the next collect's weights) and every member learns
    assert pol._model.member_value.abs().sum() > 0
    pol.learn_mode.forward(samples)
    for k, member in enumerate(pol._model.members):
        unchanged = [torch.equal(p, b) for p, b in zip(member.parameters(), before[k], strict=True)]
        assert not all(unchanged), f"member {k} is unchanged"


def test_value_weighted_collect_logp_is_the_weighted_mixture():
    torch.manual_seed(0)
    pol = build(_cfg("ensemble_ppo", "discrete", collect=dict(ensemble_action="value_weighted"),
                     model=dict(obs_shape=4, action_shape=2, action_space="discrete")), "policy")
    _constant_members(pol, [[0.0, 0.0], [math.log(3.0), 0.0], [0.0, 0.0], [0.0, 0.0]])  # p_2 = (0.75, 0.25)
    with torch.no_grad():
        pol._model.member_value.copy_(torch.tensor([0.0, 0.1 * math.log(3.0), 0.0, 0.0]))
    # τ = 0.1: w = softmax((0, ln 3, 0, 0)) = (1/6, 1/2, 1/6, 1/6); q(0) = 0.5·0.5 + 0.5·0.75 = 0.625
    out = pol.collect_mode.forward(np.zeros((4000, 4), dtype=np.float32))
    chosen = out[ACTION] == 0
    np.testing.assert_allclose(out[LOGP][chosen], math.log(0.625), rtol=1e-5)
    np.testing.assert_allclose(out[LOGP][~chosen], math.log(0.375), rtol=1e-5)
    assert abs(chosen.mean() - 0.625) < 0.03


def test_value_weighted_member_values_are_a_moving_average_of_importance_weighted_advantages():
    pol = build(_cfg("ensemble_ppo", "discrete", collect=dict(ensemble_action="value_weighted"),
                     model=dict(obs_shape=4, action_shape=2, action_space="discrete")), "policy")
    _constant_members(pol, [[0.0, 0.0], [math.log(3.0), 0.0], [0.0, 0.0], [0.0, 0.0]])  # p_2 = (0.75, 0.25)
    with torch.no_grad():
        pol._model.member_value.copy_(torch.tensor([1.0, 0.0, 0.0, 0.0]))
    # actions (0, 1) taken with q = (0.5, 0.25); advantages (3, 1) normalised: (1, -1)/sqrt(2) = (0.7071, -0.7071).
    # score_k = mean_b p_k(a_b)/q(a_b)·A_b: members 1, 3, 4: (1·0.7071 − 2·0.7071)/2 = −0.3535534;
    # member 2: (1.5·0.7071 − 1·0.7071)/2 = 0.1767767. V ← 0.9 V + 0.1 score (momentum 0.9):
    # (0.9 − 0.0353553, 0.0176777, −0.0353553, −0.0353553)
    data = {OBS: torch.zeros(2, 4), ACTION: torch.tensor([0, 1]), ADV: torch.tensor([3.0, 1.0]),
            LOGP: torch.log(torch.tensor([0.5, 0.25]))}
    pol._prepare_off_policy(data)
    torch.testing.assert_close(pol._model.member_value,
                               torch.tensor([0.8646447, 0.0176777, -0.0353553, -0.0353553]))


def test_bad_options_are_config_errors():
    with pytest.raises(ConfigError, match="ensemble_action.*'mix'"):
        build(_cfg("ensemble_ppo", "discrete", collect=dict(ensemble_action="mix"),
                   model=dict(obs_shape=4, action_shape=2, action_space="discrete")), "policy")
    with pytest.raises(ConfigError, match="ensemble_size"):
        build(_cfg("ensemble_ppo", "discrete", model=dict(obs_shape=4, action_shape=2,
                                                          action_space="discrete", ensemble_size=0)), "policy")
    with pytest.raises(ConfigError, match="init_member_ckpts lists 2 checkpoints but model.ensemble_size is 4"):
        build(_cfg("ensemble_ppo", "discrete", init_member_ckpts=["a.pth.tar", "b.pth.tar"],
                   model=dict(obs_shape=4, action_shape=2, action_space="discrete")), "policy")


def test_a_bool_ensemble_size_is_a_config_error_naming_the_key():
    # the model built from Python (DI-engine's Model(**cfg)) with ensemble_size=True: torch.zeros' TypeError before
    from ding_lite.model.ensemble_vac import EnsembleVAC
    with pytest.raises(ConfigError, match=r"model\.ensemble_size must be an int >= 1, got True"):
        EnsembleVAC(dict(obs_shape=4, action_shape=2, action_space="discrete", ensemble_size=True))

def test_missing_member_checkpoint_names_the_key(tmp_path):
    cfg = _cfg("ensemble_ppo", "discrete", init_member_ckpts=[str(tmp_path / "none.pth.tar")],
               model=dict(obs_shape=4, action_shape=2, action_space="discrete", ensemble_size=1))
    with pytest.raises(CheckpointError, match=r"init_member_ckpts\[0\].*not found"):
        build(cfg, "policy")
    build(cfg, "policy", enable_field=("eval",))  # only a learning policy starts from the PPO checkpoints
