"""Hand-computed checks of ding_lite.rl_utils.td."""

import numpy as np
import pytest
import torch

from ding_lite.rl_utils import double_q_target, nstep_return, td_error_loss

pytestmark = pytest.mark.unittest


def test_nstep_return_across_episode_ends_and_rollout_end():
    # T = 8, N = 2, nstep = 3, γ = 0.5.
    # env 0: r = [1, 2 | 4, 8, 2, 4 | 8, 2]: episode terminated at t=1, episode truncated at t=5, rollout cut after t=7.
    # env 1: r = 1 everywhere, terminated at the last step t=7.
    reward = np.array([[1, 1], [2, 1], [4, 1], [8, 1], [2, 1], [4, 1], [8, 1], [2, 1]], dtype=np.float32)
    terminated = np.zeros((8, 2), dtype=bool)
    truncated = np.zeros((8, 2), dtype=bool)
    terminated[1, 0] = True
    truncated[5, 0] = True
    terminated[7, 1] = True
    ret, disc, last = nstep_return(reward, terminated, truncated, gamma=0.5, nstep=3)
    assert ret.dtype == np.float32 and disc.dtype == np.float32 and last.dtype == np.int64
    assert ret.shape == disc.shape == last.shape == (8, 2)
    # env 0, by hand:
    #   t=0: 1 + 0.5*2 = 2                 m=2 (stops at the terminal t=1), disc 0.25*(1-1) = 0,   last 1
    #   t=1: 2                             m=1, disc 0,                                           last 1
    #   t=2: 4 + 0.5*8 + 0.25*2 = 8.5      m=3, disc 0.125,                                       last 4
    #   t=3: 8 + 0.5*2 + 0.25*4 = 10       m=3 (ends on the truncated step), disc 0.125,          last 5
    #   t=4: 2 + 0.5*4 = 4                 m=2 (truncated t=5 included, then stop), disc 0.25,    last 5
    #   t=5: 4                             m=1, disc 0.5 (truncation bootstraps),                 last 5
    #   t=6: 8 + 0.5*2 = 9                 m=2 (rollout end), disc 0.25,                          last 7
    #   t=7: 2                             m=1, disc 0.5,                                         last 7
    np.testing.assert_allclose(ret[:, 0], [2, 2, 8.5, 10, 4, 4, 9, 2], rtol=1e-6)
    np.testing.assert_allclose(disc[:, 0], [0, 0, 0.125, 0.125, 0.25, 0.5, 0.25, 0.5], rtol=1e-6)
    np.testing.assert_array_equal(last[:, 0], [1, 1, 4, 5, 5, 5, 7, 7])
    # env 1: 1 + 0.5 + 0.25 = 1.75 with disc 0.125 where 3 steps fit before t=7; any sum reaching t=7 ends on the
    # terminal step, so its discount is 0: t=5 (1.75, last 7), t=6 (1 + 0.5 = 1.5), t=7 (1).
    np.testing.assert_allclose(ret[:, 1], [1.75, 1.75, 1.75, 1.75, 1.75, 1.75, 1.5, 1], rtol=1e-6)
    np.testing.assert_allclose(disc[:, 1], [0.125, 0.125, 0.125, 0.125, 0.125, 0, 0, 0], rtol=1e-6)
    np.testing.assert_array_equal(last[:, 1], [2, 3, 4, 5, 6, 7, 7, 7])


def test_nstep_one_is_one_step_td():
    reward = np.array([[3], [5]], dtype=np.float32)
    terminated = np.array([[False], [True]])
    truncated = np.zeros((2, 1), dtype=bool)
    ret, disc, last = nstep_return(reward, terminated, truncated, gamma=0.9, nstep=1)
    np.testing.assert_allclose(ret[:, 0], [3, 5])
    np.testing.assert_allclose(disc[:, 0], [0.9, 0.0], rtol=1e-6)
    np.testing.assert_array_equal(last[:, 0], [0, 1])


@pytest.mark.parametrize("bad", [0, -1, 2.5])
def test_nstep_rejects_bad_nstep(bad):
    z = np.zeros((2, 1), dtype=np.float32)
    no = np.zeros((2, 1), dtype=bool)
    with pytest.raises(ValueError, match="nstep"):
        nstep_return(z, no, no, gamma=0.9, nstep=bad)


def test_double_q_target_uses_target_value_at_online_argmax():
    # online argmax: row 0 -> action 1, row 1 -> action 0; the target's own max (30, 9) must NOT be used.
    q_online = torch.tensor([[1.0, 3.0, 2.0], [5.0, 0.0, 1.0]])
    q_target = torch.tensor([[10.0, 20.0, 30.0], [7.0, 8.0, 9.0]], requires_grad=True)
    return_n = torch.tensor([1.0, 2.0])
    discount_n = torch.tensor([0.5, 0.0])
    # row 0: 1 + 0.5*20 = 11 ; row 1: 2 + 0*7 = 2
    target = double_q_target(return_n, discount_n, q_online, q_target)
    torch.testing.assert_close(target, torch.tensor([11.0, 2.0]))
    assert not target.requires_grad


def test_td_error_loss_huber_and_mse_with_weights():
    q_taken = torch.zeros(3, requires_grad=True)
    target = torch.tensor([0.5, -2.0, 3.0])
    weight = torch.tensor([1.0, 2.0, 0.5])
    # |error| = [0.5, 2, 3]
    # huber (δ=1): [0.5*0.25, 2 - 0.5, 3 - 0.5] = [0.125, 1.5, 2.5]
    #   weighted: [0.125, 3.0, 1.25] -> mean 4.375 / 3 = 1.4583333
    #   unweighted: 4.125 / 3 = 1.375
    # mse (e², DI-engine's nn.MSELoss): [0.25, 4, 9]; weighted [0.25, 8, 4.5] -> mean 12.75 / 3 = 4.25
    loss, td_abs = td_error_loss(q_taken, target, weight, loss_type="huber")
    torch.testing.assert_close(loss, torch.tensor(1.4583333))
    torch.testing.assert_close(td_abs, torch.tensor([0.5, 2.0, 3.0]))
    assert not td_abs.requires_grad
    loss.backward()
    # d/dq of mean(w·huber): -w·clip(e, -1, 1)/3 with e = target - q = [0.5, -2, 3] -> [-0.5/3, 2/3, -0.5/3]
    torch.testing.assert_close(q_taken.grad, torch.tensor([-0.1666667, 0.6666667, -0.1666667]))

    loss_plain, _ = td_error_loss(q_taken, target, loss_type="huber")
    torch.testing.assert_close(loss_plain, torch.tensor(1.375))
    loss_mse, _ = td_error_loss(q_taken, target, weight, loss_type="mse")
    torch.testing.assert_close(loss_mse, torch.tensor(4.25))


@pytest.mark.parametrize("loss_type", ["huber", "mse"])
def test_td_error_loss_sends_no_gradient_into_the_target(loss_type):
    # the target is a constant of the loss (semi-gradient TD, Mnih et al. 2015): even a target that carries a graph
    # (a caller's own target net, not under no_grad) gets no gradient, and q's gradient is that of a constant target
    q_taken = torch.zeros(2, requires_grad=True)
    target_source = torch.tensor([0.5, -2.0], requires_grad=True)
    loss, _ = td_error_loss(q_taken, target_source * 1.0, loss_type=loss_type)
    loss.backward()
    assert target_source.grad is None
    # huber: -clip(e, -1, 1)/2 = [-0.25, 0.5]; mse: -2e/2 = [-0.5, 2]
    expected = [-0.25, 0.5] if loss_type == "huber" else [-0.5, 2.0]
    torch.testing.assert_close(q_taken.grad, torch.tensor(expected))


def test_td_error_loss_rejects_unknown_type():
    with pytest.raises(ValueError, match="loss_type"):
        td_error_loss(torch.zeros(2), torch.zeros(2), loss_type="l1")


def test_nstep_beyond_the_rollout_sums_what_it_holds_without_looping_over_n(monkeypatch):
    # nstep 10⁹ on a 3-step rollout is the whole rollout: γ = 0.5, r = 1, 2, 4 -> 1 + 1 + 1 = 3, 2 + 2 = 4, 4.
    calls = []
    take_along_axis = np.take_along_axis

    def counted(*args, **kwargs):
        calls.append(1)
        assert len(calls) < 100, "nstep_return loops over nstep, not over the rollout's steps"
        return take_along_axis(*args, **kwargs)

    monkeypatch.setattr(np, "take_along_axis", counted)
    reward = np.array([[1], [2], [4]], dtype=np.float32)
    no = np.zeros((3, 1), dtype=bool)
    ret, disc, last = nstep_return(reward, no, no, gamma=0.5, nstep=10**9)
    np.testing.assert_allclose(ret[:, 0], [3, 4, 4])
    np.testing.assert_allclose(disc[:, 0], [0.125, 0.25, 0.5])
    np.testing.assert_array_equal(last[:, 0], [2, 2, 2])
