"""A one-step DQN written from scratch: the custom policy of docs/tutorial_custom_policy.md.

It lives outside ding_lite, registers itself as ``my_dqn`` and is found through a config's ``import_names``.
"""
from __future__ import annotations

import copy
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from ding_lite.data.keys import ACTION, NEXT_OBS, OBS, Q_VALUE, REWARD, TERMINATED
from ding_lite.data.rollout import valid_transitions
from ding_lite.policy import Policy
from ding_lite.registry import POLICY_REGISTRY


@POLICY_REGISTRY.register("my_dqn")
class MyDQNPolicy(Policy):
    """DQN (Mnih et al. 2015): one-step TD targets from a target network copied every ``target_update_freq``
    gradient steps, ε-greedy collection with ε decaying linearly over env steps."""

    # Defaults, merged over Policy.config; a user key missing here is reported as unknown.
    config: dict[str, Any] = dict(
        type="my_dqn",
        on_policy=False,  # samples go through the replay buffer
        discount_factor=0.99,  # γ
        learn=dict(
            update_per_collect=4,  # gradient steps per collect (read by the replay schedule)
            batch_size=64,  # samples per gradient step (read by the replay schedule)
            learning_rate=1e-3,  # Adam step size
            target_update_freq=100,  # copy the online net to the target net every this many gradient steps
        ),
        collect=dict(
            n_sample=8,  # env steps per collect, over all collector envs (read by the serial pipeline)
            eps_start=1.0,  # ε at env step 0
            eps_end=0.05,  # ε from eps_decay env steps on
            eps_decay=2000,  # env steps of the linear decay
        ),
    )

    @classmethod
    def default_model(cls) -> str:
        return "dqn"  # the registered Q-network template: forward(obs) -> {'q_value': Q values (B, A)}

    # ---- learn mode: called by the learner with a batch sampled from the buffer -----------------------------------
    def _init_learn(self) -> None:
        learn = self.cfg["learn"]
        self._optimizer = torch.optim.Adam(self._model.parameters(), lr=learn["learning_rate"])
        self._target_model = copy.deepcopy(self._model).requires_grad_(False)
        # Everything in _learn_state goes into checkpoints ("model" is already there).
        self._learn_state.update(target_model=self._target_model, optimizer=self._optimizer)
        self._grad_steps = 0

    def _forward_learn(self, batch: dict) -> dict:
        data = self.batch_tensors(batch)  # numpy columns -> tensors on the policy's device
        q = self._model(data[OBS])[Q_VALUE]  # (B, A)
        q_taken = q.gather(1, data[ACTION].long().unsqueeze(1)).squeeze(1)  # (B,)
        with torch.no_grad():
            q_next = self._target_model(data[NEXT_OBS])[Q_VALUE].max(dim=1).values
            not_terminal = 1.0 - data[TERMINATED].float()  # truncated steps still bootstrap
            target = data[REWARD] + self.discount_factor * not_terminal * q_next
        loss = F.smooth_l1_loss(q_taken, target)
        self._optimizer.zero_grad(set_to_none=True)
        loss.backward()
        self._optimizer.step()
        self._grad_steps += 1
        if self._grad_steps % self.cfg["learn"]["target_update_freq"] == 0:
            self._target_model.load_state_dict(self._model.state_dict())
        return {"loss": loss.detach(), "q_mean": q_taken.detach().mean()}

    def _monitor_vars_learn(self) -> list[str]:
        return ["loss", "q_mean"]  # keys of _forward_learn's result that are logged

    # ---- collect mode: called by the collector with the batched observation of all envs --------------------------
    def _init_collect(self) -> None:
        collect = self.cfg["collect"]
        self._eps_start, self._eps_end = float(collect["eps_start"]), float(collect["eps_end"])
        self._eps_decay = float(collect["eps_decay"])

    def _epsilon(self, env_step: int) -> float:
        fraction = min(env_step / self._eps_decay, 1.0)
        return self._eps_start + fraction * (self._eps_end - self._eps_start)

    @torch.no_grad()
    def _forward_collect(self, obs: np.ndarray, env_step: int = 0) -> dict:
        q = self._model(self.obs_tensor(obs))[Q_VALUE].cpu()  # (N, A)
        action = q.argmax(dim=1)
        explore = torch.rand(len(action)) < self._epsilon(env_step)  # torch's RNG: seeded by the run's seed
        action[explore] = torch.randint(q.shape[1], (int(explore.sum()),))
        return {ACTION: action.numpy()}

    def _get_train_sample(self, rollout: dict) -> dict:
        # rollout: time-major columns (T, N, ...) whose rows marked valid=False are no transitions (an env worker
        # restarted there). One-step samples need no time structure: the valid rows, flattened to (M, ...).
        return valid_transitions(rollout, (OBS, ACTION, REWARD, NEXT_OBS, TERMINATED))

    # ---- eval mode: greedy actions --------------------------------------------------------------------------------
    def _init_eval(self) -> None:
        pass

    @torch.no_grad()
    def _forward_eval(self, obs: np.ndarray) -> dict:
        return {ACTION: self._model(self.obs_tensor(obs))[Q_VALUE].argmax(dim=1).cpu().numpy()}
