"""A policy written as a DI-engine user writes one, ported with only the changes that docs/coming_from_di_engine.md
lists (used by tests/entry/test_di_engine_port.py): REINFORCE on whole episodes from the 'episode' collector.

It keeps DI-engine's habits: ``default_model`` as an instance method returning ``(name, import_names)``, no
``collect.n_sample`` in its defaults (an episode collector needs none), and optimiser, state and monitor hooks of
its own.
"""
import numpy as np
import torch

from ding_lite.policy import Policy
from ding_lite.utils import POLICY_REGISTRY


@POLICY_REGISTRY.register("di_style_pg")
class DIStylePGPolicy(Policy):
    config = dict(
        type="di_style_pg",
        on_policy=True,
        learn=dict(batch_size=64, learning_rate=0.01),
        collect=dict(discount_factor=0.99, collector=dict(type="episode")),
    )

    def default_model(self):
        return "vac", ["ding_lite.model.template.vac"]  # registered: the module is not imported

    def _init_learn(self):
        self._optimizer = torch.optim.Adam(self._model.parameters(), lr=self.cfg.learn.learning_rate)

    def _forward_learn(self, data):
        data = self.batch_tensors(data)
        infos = []
        for idx in torch.randperm(len(data["obs"])).split(self.cfg.learn.batch_size):
            logit = self._model.compute_actor(data["obs"][idx])["logit"]
            log_prob = torch.distributions.Categorical(logits=logit).log_prob(data["action"][idx])
            loss = -(log_prob * data["return"][idx]).mean()
            self._optimizer.zero_grad()
            loss.backward()
            self._optimizer.step()
            infos.append({"policy_loss": loss.item()})
        return infos

    def _state_dict_learn(self):
        return {"model": self._model.state_dict(), "optimizer": self._optimizer.state_dict()}

    def _load_state_dict_learn(self, state_dict):
        self._model.load_state_dict(state_dict["model"])
        self._optimizer.load_state_dict(state_dict["optimizer"])

    def _monitor_vars_learn(self):
        return ["policy_loss"]

    def _init_collect(self):
        self._gamma = self.cfg.collect.discount_factor

    def _forward_collect(self, obs, env_step=0):
        with torch.no_grad():
            logit = self._model.compute_actor(self.obs_tensor(obs))["logit"]
        return {"action": torch.distributions.Categorical(logits=logit).sample().numpy()}

    def _get_train_sample(self, episode):  # one whole episode, (T, 1) columns
        ret, running = np.zeros(len(episode["reward"]), dtype=np.float32), 0.0
        for t in reversed(range(len(ret))):
            running = episode["reward"][t, 0] + self._gamma * running
            ret[t] = running
        return {"obs": episode["obs"][:, 0], "action": episode["action"][:, 0], "return": ret}

    def _init_eval(self):
        pass

    def _forward_eval(self, obs):
        with torch.no_grad():
            return {"action": self._model.compute_actor(self.obs_tensor(obs))["logit"].argmax(-1).numpy()}
