"""ppo_dapg policy: where the demo term acts (actor only, every demo_freq-th minibatch, zero weight guard, decay),
checkpoints, and config errors. The maths itself is tested in tests/rl_utils/test_dapg.py."""
from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from ding_lite.build import build, fill_model_shapes
from ding_lite.config import compile_config
from ding_lite.data.demo import episodes_to_dataset
from ding_lite.data.demo_file import write_demo
from ding_lite.data.keys import ACTION, ADV, LOGP, OBS, RETURN, VALID, VALUE
from ding_lite.errors import ConfigError
from ding_lite.policy.ppo import action_distribution
from ding_lite.worker.learner import as_log_list, mean_log

pytestmark = pytest.mark.unittest

OBS_SPACE = gym.spaces.Box(-np.inf, np.inf, (4,), dtype=np.float32)
ACT_SPACE = gym.spaces.Discrete(2)
N_DEMO = 20


def _demo_file(path, obs_dim=4, continuous=False, n=N_DEMO):
    rng = np.random.default_rng(7)
    action = rng.normal(size=(n, 1)).astype(np.float32) if continuous else rng.integers(0, 2, n)
    episode = {"obs": rng.normal(size=(n, obs_dim)).astype(np.float32), "action": action,
               "reward": np.ones(n, dtype=np.float32)}
    return write_demo(path, episodes_to_dataset([episode], [float(n)], {}))


@pytest.fixture
def demo_path(tmp_path):
    return str(_demo_file(tmp_path / "demo.npz"))


def _policy(policy_type="ppo_dapg", obs_space=OBS_SPACE, act_space=ACT_SPACE, **learn):
    learn = {"batch_size": 8, "epoch_per_collect": 1, "grad_clip_value": None, **learn}
    # PPO through autograd, as PPO-DAPG learns (its NumPy step gives the same gradients up to float32 rounding, and
    # the comparisons here are exact)
    cfg = compile_config(dict(env=dict(type="gymnasium", env_id="CartPole-v1"),
                              policy=dict(type=policy_type, learn=learn, numpy_mlp=False)))
    fill_model_shapes(cfg, obs_space, act_space)
    torch.manual_seed(0)  # same initial weights for every policy built here
    return build(cfg, "policy")


def _batch(policy, adv):
    """A synthetic on-policy batch: logp and value from the policy itself, the given raw advantages."""
    rng = np.random.default_rng(0)
    n = len(adv)
    obs = rng.normal(size=(n, 4)).astype(np.float32)
    action = rng.integers(0, 2, n)
    with torch.no_grad():
        out = policy._model.compute_actor_critic(torch.from_numpy(obs))
        logp = action_distribution(out).log_prob(torch.from_numpy(action))
    value = out["value"].numpy()
    adv = np.asarray(adv, dtype=np.float32)
    return {OBS: obs, ACTION: action, LOGP: logp.numpy(), VALUE: value, ADV: adv, RETURN: value + adv}


def _learn(policy, batch):
    """The update's log merged over its gradient steps."""
    return mean_log(_learn_steps(policy, batch))


def _learn_steps(policy, batch):
    torch.manual_seed(1)  # same minibatch order for every policy
    return as_log_list(policy.learn_mode.forward(batch))


def _params(policy, prefix):
    return {k: v.clone() for k, v in policy._model.state_dict().items() if k.startswith(prefix)}


def _assert_same(a, b):
    assert a.keys() == b.keys()
    for k in a:
        torch.testing.assert_close(a[k], b[k], rtol=0, atol=0, msg=k)


ADV_POSITIVE = np.linspace(-1.0, 3.0, 32)


def test_value_function_trains_on_on_policy_data_only(demo_path):
    with_demo = _policy(demo_path=demo_path, demo_coeff=5.0, demo_freq=1)
    without = _policy(demo_path=None)
    _assert_same(_params(with_demo, ""), _params(without, ""))
    log_demo = _learn(with_demo, _batch(with_demo, ADV_POSITIVE))
    log_plain = _learn(without, _batch(without, ADV_POSITIVE))
    assert log_demo["demo_loss"] < 0 and log_plain["demo_loss"] == 0
    # the value loss and the critic's weights do not see the demos...
    assert log_demo["value_loss"].item() == log_plain["value_loss"].item()
    _assert_same(_params(with_demo, "critic"), _params(without, "critic"))
    # ...while the actor does
    actor_demo, actor_plain = _params(with_demo, "actor"), _params(without, "actor")
    assert any(not torch.equal(actor_demo[k], actor_plain[k]) for k in actor_demo)


def test_non_positive_max_advantage_gives_ppo_exactly(demo_path):
    """With every raw advantage ≤ 0 the raw-scale demo weight is 0: the update equals plain PPO's, weight for
    weight."""
    adv = -np.linspace(0.0, 2.0, 32)  # best advantage 0
    dapg = _policy(demo_path=demo_path, demo_coeff=5.0, demo_freq=1, demo_adv_scale="raw")
    ppo = _policy("ppo")
    log = _learn(dapg, _batch(dapg, adv))
    _learn(ppo, _batch(ppo, adv))
    assert log["demo_weight"].item() == 0.0 and log["max_adv"].item() == 0.0
    assert log["demo_likelihood"] > 0  # the demo term was evaluated, with zero weight
    _assert_same(_params(dapg, ""), _params(ppo, ""))


def test_demo_coeff_zero_is_ppo_exactly(demo_path):
    dapg = _policy(demo_path=demo_path, demo_coeff=0.0, demo_freq=1)
    ppo = _policy("ppo")
    _learn(dapg, _batch(dapg, ADV_POSITIVE))
    _learn(ppo, _batch(ppo, ADV_POSITIVE))
    _assert_same(_params(dapg, ""), _params(ppo, ""))


def test_demo_term_on_every_demo_freq_th_minibatch(demo_path):
    # 32 samples / batch_size 8 = 4 minibatches per epoch, 3 epochs = 12 minibatches; demo_freq 4 -> 3 demo batches
    policy = _policy(demo_path=demo_path, demo_freq=4, demo_batch_size=5, epoch_per_collect=3)
    logs = _learn_steps(policy, _batch(policy, ADV_POSITIVE))
    assert len(logs) == 12
    # GSL's order: the demo term on minibatches 0, demo_freq, 2·demo_freq, ...
    assert [i for i, log in enumerate(logs) if float(log["demo_loss"]) != 0.0] == [0, 4, 8]
    state = policy.learn_mode.state_dict()["dapg"]
    assert state["minibatch"] == 12
    assert state["sampler"]["pos"] == 15  # 3 demo minibatches of 5 out of the 20 demo steps
    _learn(policy, _batch(policy, ADV_POSITIVE))  # 3 more demo batches: 30 = one full pass of 20 + 10
    assert policy.learn_mode.state_dict()["dapg"]["sampler"]["pos"] == 10


def test_the_demo_minibatch_count_restarts_every_update(demo_path):
    """GSL's code counts the minibatches of one update (all its epochs) from 0: with 5 minibatches per update and
    demo_freq 4, the demo term is on minibatches 0 and 4 of every update (40%), not on every 4th of the run (25%)."""
    policy = _policy(demo_path=demo_path, demo_freq=4, demo_batch_size=5, epoch_per_collect=1)
    batch = _batch(policy, np.linspace(-1.0, 3.0, 40))  # 40 samples / batch_size 8 = 5 minibatches
    logs = _learn_steps(policy, batch) + _learn_steps(policy, batch)
    assert len(logs) == 10
    assert [i for i, log in enumerate(logs) if float(log["demo_loss"]) != 0.0] == [0, 4, 5, 9]


def test_decay_uses_the_update_iteration(demo_path):
    policy = _policy(demo_path=demo_path, demo_decay=True, demo_lambda0=0.1, demo_lambda1=0.95,
                     demo_adv_scale="raw")
    batch = _batch(policy, ADV_POSITIVE)  # raw advantages fixed: max_adv = 3 in every update
    weights = [_learn(policy, batch)["demo_weight"].item() for _ in range(3)]
    # λ0·λ1^k·max_adv for k = 0, 1, 2: 0.3, 0.285, 0.27075
    assert weights == pytest.approx([0.3, 0.285, 0.27075], rel=1e-6)
    assert policy.learn_mode.state_dict()["dapg"]["update_iter"] == 3


def test_without_decay_the_weight_is_coeff_times_max_adv(demo_path):
    policy = _policy(demo_path=demo_path, demo_coeff=0.5, demo_adv_scale="raw")
    log = _learn(policy, _batch(policy, ADV_POSITIVE))
    assert log["max_adv"].item() == pytest.approx(3.0)
    assert log["demo_weight"].item() == pytest.approx(1.5)


def test_the_default_weight_is_on_the_scale_of_the_ppo_loss(demo_path):
    """GSL's code: max_adv = the max of the advantages its PPO loss is fed (garage's centred and scaled ones); with
    adv_norm, standardised ones. For the 32 evenly spaced advantages of [-1, 3] (spacing h = 4/31): mean 1, unbiased
    variance h²·n(n+1)/12 = (16/961)·88 = 1.4651405, std 1.2104299; max_adv = (3 − 1) / 1.2104299 = 1.6523056,
    w = 0.5·max_adv = 0.8261528. Without adv_norm the PPO loss sees the raw advantages: max_adv = 3."""
    policy = _policy(demo_path=demo_path, demo_coeff=0.5)
    log = _learn(policy, _batch(policy, ADV_POSITIVE))
    assert log["max_adv"].item() == pytest.approx(1.6523056, rel=1e-5)
    assert log["demo_weight"].item() == pytest.approx(0.8261528, rel=1e-5)
    # mirrored, [-3, 1] (mean −1, the same std): a raw max of 1, standardised (1 + 1) / 1.2104299 = 1.6523056 again
    mirrored = _policy(demo_path=demo_path, demo_coeff=0.5)
    assert _learn(mirrored, _batch(mirrored, -ADV_POSITIVE))["max_adv"].item() == pytest.approx(1.6523056, rel=1e-5)
    raw = _policy(demo_path=demo_path, demo_coeff=0.5, adv_norm=False)
    assert _learn(raw, _batch(raw, ADV_POSITIVE))["max_adv"].item() == pytest.approx(3.0)


def test_checkpoint_restores_the_demo_schedule(demo_path):
    policy = _policy(demo_path=demo_path, demo_freq=1, demo_batch_size=3)
    _learn(policy, _batch(policy, ADV_POSITIVE))
    state = policy.learn_mode.state_dict()
    fresh = _policy(demo_path=demo_path, demo_freq=1, demo_batch_size=3)
    fresh.learn_mode.load_state_dict(state)
    assert fresh.learn_mode.state_dict()["dapg"]["update_iter"] == 1
    assert next(fresh._dapg.sampler).tolist() == next(policy._dapg.sampler).tolist()


def test_a_ppo_checkpoint_loads_into_ppo_dapg(demo_path):
    ppo = _policy("ppo")
    _learn(ppo, _batch(ppo, ADV_POSITIVE))
    dapg = _policy(demo_path=demo_path)
    dapg.learn_mode.load_state_dict(ppo.learn_mode.state_dict())
    _assert_same(_params(dapg, ""), _params(ppo, ""))
    assert dapg.learn_mode.state_dict()["dapg"]["update_iter"] == 0


def test_continuous_actions_with_log_likelihood(tmp_path):
    path = str(_demo_file(tmp_path / "pendulum.npz", obs_dim=3, continuous=True))
    obs_space, act_space = gym.spaces.Box(-8, 8, (3,)), gym.spaces.Box(-2, 2, (1,))
    policy = _policy(obs_space=obs_space, act_space=act_space, demo_path=path, demo_log_likelihood=True, demo_freq=1)
    rng = np.random.default_rng(0)
    obs = rng.normal(size=(16, 3)).astype(np.float32)
    with torch.no_grad():
        out = policy._model.compute_actor_critic(torch.from_numpy(obs))
        dist = action_distribution(out)
        action = dist.sample()
    adv = np.linspace(-1, 1, 16).astype(np.float32)
    batch = {OBS: obs, ACTION: action.numpy(), LOGP: dist.log_prob(action).numpy(), VALUE: out["value"].numpy(),
             ADV: adv, RETURN: out["value"].numpy() + adv}
    log = _learn(policy, batch)
    # log-likelihood mode logs mean log π (a Gaussian log-density, here negative) and loss = -w·mean log π
    assert log["demo_likelihood"] < 0
    assert log["demo_loss"].item() == pytest.approx(-(log["demo_weight"] * log["demo_likelihood"]).item(), rel=1e-5)


@pytest.mark.parametrize("learn, message", [
    (dict(demo_path=5), r"policy.learn.demo_path must be a file path or a list of paths, got 5"),
    (dict(demo_freq=0), r"policy.learn.demo_freq must be at least 1, got 0"),
    (dict(demo_coeff=-1.0), r"policy.learn.demo_coeff must be ≥ 0"),
    (dict(demo_lambda1=1.5), r"policy.learn.demo_lambda1 must be in \[0, 1\], got 1.5"),
    (dict(demo_adv_scale="std"), r"policy.learn.demo_adv_scale must be one of 'gsl', 'raw', got 'std'"),
    (dict(demo_path="missing_demo.npz"), r"demo file not found: missing_demo.npz"),
])
def test_bad_settings_are_config_errors(learn, message):
    with pytest.raises(ConfigError, match=message):
        _policy(**learn)


def test_demo_file_of_another_env_is_refused(tmp_path):
    path = _demo_file(tmp_path / "pendulum_obs.npz", obs_dim=3)
    with pytest.raises(ConfigError, match=r"demo file .*pendulum_obs\.npz has observations of shape \(3,\)"):
        _policy(demo_path=[str(path)])


def test_max_advantage_ignores_placeholder_rows_of_interrupted_episodes() -> None:
    """A placeholder row (episode cut by an env worker failure, kept only for recompute_adv's layout) is no
    transition: it neither trains nor sets the per-epoch max advantage that weights the demo term."""
    policy = _policy(demo_adv_scale="raw")
    batch = _batch(policy, [0.5, 1.5, -1.0, 0.2, 99.0, 0.3, 0.1, 0.4])
    batch[VALID] = np.array([True, True, True, True, False, True, True, True])
    log = _learn(policy, batch)
    assert float(log["max_adv"]) == pytest.approx(1.5)
