"""A DQN written as a DI-engine user writes one (its hooks, ``self._cfg`` reads and state, monitor and reset hooks),
ported with the package renamed and the changes docs/coming_from_di_engine.md lists; used by
tests/entry/test_di_engine_port.py. Each DI-engine helper it used is replaced by what the one-line import error names
(ding_lite/di_engine_names.py): ``Adam`` -> ``torch.optim.Adam``, ``model_wrap`` -> ``self._model`` and a deepcopy,
``get_nstep_return_data`` / ``q_nstep_td_error`` -> ``nstep_return`` / ``td_error_loss``, ``get_epsilon_greedy_fn``
-> ``epsilon_schedule``, ``default_collate`` / ``to_device`` -> ``obs_tensor`` / ``batch_tensors``.
"""
import copy
from typing import Any

import torch

from ding_lite.policy import Policy
from ding_lite.rl_utils import nstep_return, td_error_loss
from ding_lite.rl_utils.exploration import epsilon_schedule
from ding_lite.utils import POLICY_REGISTRY


@POLICY_REGISTRY.register('di_style_dqn')
class DIStyleDQNPolicy(Policy):
    config = dict(
        type='di_style_dqn',
        cuda=False,
        on_policy=False,
        priority=False,
        priority_IS_weight=False,
        discount_factor=0.97,
        nstep=1,
        learn=dict(update_per_collect=3, batch_size=64, learning_rate=0.001, target_update_freq=100,
                   ignore_done=False),
        collect=dict(n_sample=8, unroll_len=1),
        eval=dict(),
        other=dict(eps=dict(type='exp', start=0.95, end=0.1, decay=10000),
                   replay_buffer=dict(replay_buffer_size=10000)),
    )

    def default_model(self):
        return 'dqn', ['ding_lite.model.template.q_learning']

    def _init_learn(self) -> None:
        self._priority = self._cfg.priority
        self._optimizer = torch.optim.Adam(self._model.parameters(), lr=self._cfg.learn.learning_rate)
        self._gamma = self._cfg.discount_factor
        self._nstep = self._cfg.nstep
        assert 'target_update_freq' in self._cfg.learn
        self._target_model = copy.deepcopy(self._model)  # DI-engine: model_wrap(..., wrapper_name='target')
        self._learn_model = self._model
        self._train_iter = 0

    def _forward_learn(self, data: dict[str, Any]) -> dict[str, Any]:
        data = self.batch_tensors(data)
        self._learn_model.train()
        q_value = self._learn_model.forward(data['obs'])['logit']
        q_taken = q_value.gather(1, data['action'].long().unsqueeze(1)).squeeze(1)
        with torch.no_grad():
            target_q = self._target_model.forward(data['next_n_obs'])['logit'].max(-1).values
            target = data['return_n'] + data['discount_n'] * target_q
        loss, td_error = td_error_loss(q_taken, target, data.get('weight'), 'mse')
        self._optimizer.zero_grad()
        loss.backward()
        self._optimizer.step()
        self._train_iter += 1
        if self._train_iter % self._cfg.learn.target_update_freq == 0:
            self._target_model.load_state_dict(self._learn_model.state_dict())
        return {'cur_lr': self._optimizer.defaults['lr'], 'total_loss': loss.item(),
                'q_value': q_value.mean().item(), 'priority': td_error.numpy().tolist()}

    def _monitor_vars_learn(self) -> list[str]:
        return ['cur_lr', 'total_loss', 'q_value']

    def _state_dict_learn(self) -> dict[str, Any]:
        return {'model': self._learn_model.state_dict(), 'target_model': self._target_model.state_dict(),
                'optimizer': self._optimizer.state_dict()}

    def _load_state_dict_learn(self, state_dict: dict[str, Any]) -> None:
        self._learn_model.load_state_dict(state_dict['model'])
        self._target_model.load_state_dict(state_dict['target_model'])
        self._optimizer.load_state_dict(state_dict['optimizer'])

    def _init_collect(self) -> None:
        self._unroll_len = self._cfg.collect.unroll_len
        self._gamma = self._cfg.discount_factor
        self._nstep = self._cfg.nstep
        self._eps_fn = epsilon_schedule(self._cfg.other.eps)  # DI-engine: get_epsilon_greedy_fn, in the pipeline
        self._collect_model = self._model

    def _forward_collect(self, data, env_step=0):
        self._collect_model.eval()
        with torch.no_grad():
            logit = self._collect_model.forward(self.obs_tensor(data))['logit']
        action = logit.argmax(-1)
        explore = torch.rand(len(action)) < self._eps_fn(env_step)
        action[explore] = torch.randint(logit.shape[-1], (int(explore.sum()),))
        return {'action': action.numpy()}

    def _process_transition(self, policy_output):
        return {'action': policy_output['action']}

    def _get_train_sample(self, data):  # the (T, N) rollout; DI-engine: get_nstep_return_data + get_train_sample
        ret, disc, last = nstep_return(data['reward'], data['terminated'], data['truncated'], self._gamma, self._nstep)
        next_n_obs = data['next_obs'][last, torch.arange(last.shape[1]).numpy()[None, :]]
        return {'obs': data['obs'].reshape(-1, *data['obs'].shape[2:]), 'action': data['action'].reshape(-1),
                'next_n_obs': next_n_obs.reshape(-1, *next_n_obs.shape[2:]), 'return_n': ret.reshape(-1),
                'discount_n': disc.reshape(-1)}

    def _reset_collect(self, data_id=None) -> None:
        pass

    def _init_eval(self) -> None:
        self._eval_model = self._model

    def _forward_eval(self, data):
        self._eval_model.eval()
        with torch.no_grad():
            return {'action': self._eval_model.forward(self.obs_tensor(data))['logit'].argmax(-1).numpy()}

    def _reset_eval(self, data_id=None) -> None:
        pass
