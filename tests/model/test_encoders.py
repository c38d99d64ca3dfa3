"""Encoders chosen from the observation shape: the Nature-DQN conv stack for Atari frames, a small conv net for
MiniGrid's view, the MLP for vectors; uint8 frames are scaled inside the model."""
from __future__ import annotations

import pytest
import torch
from torch import nn

from ding_lite.errors import ConfigError
from ding_lite.model.encoders import ConvEncoder, conv_layout, image_shape
from ding_lite.model.ensemble_vac import EnsembleVAC
from ding_lite.model.templates import VAC, QNet

pytestmark = pytest.mark.unittest


def _qnet(obs_shape, **kw) -> QNet:
    cfg = dict(QNet.config, obs_shape=obs_shape, action_shape=6, encoder_hidden_size_list=[512]) | kw
    return QNet(cfg)


def test_image_shape_reads_channels_first_or_last() -> None:
    assert image_shape([4, 84, 84]) == (4, 84, 84)
    assert image_shape([7, 7, 3]) == (3, 7, 7)
    assert image_shape(4) is None and image_shape([11]) is None


def test_atari_frames_get_the_nature_dqn_network() -> None:
    model = _qnet([4, 84, 84], dueling=False, head_layer_num=0)  # Mnih et al. 2015: no hidden layer after the 512
    convs = [m for m in model.encoder.convs if isinstance(m, nn.Conv2d)]
    assert [(c.out_channels, c.kernel_size[0], c.stride[0]) for c in convs] == [(32, 8, 4), (64, 4, 2), (64, 3, 1)]
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(64 * 7 * 7, 512), (512, 6)]
    frames = torch.randint(0, 256, (2, 4, 84, 84), dtype=torch.uint8)
    assert model(frames)["logit"].shape == (2, 6)


def test_uint8_frames_are_scaled_inside_the_model() -> None:
    encoder = ConvEncoder([4, 84, 84], [16])
    frames = torch.randint(0, 256, (3, 4, 84, 84), dtype=torch.uint8)
    # the same as feeding pre-scaled floats to the same weights with scale 1
    scaled = frames.float() / 255.0
    encoder_unit = ConvEncoder([4, 84, 84], [16], scale=1.0)
    encoder_unit.load_state_dict(encoder.state_dict())
    torch.testing.assert_close(encoder(frames), encoder_unit(scaled))


def test_channels_last_grids_get_the_small_conv_net() -> None:
    cfg = dict(VAC.config, obs_shape=[7, 7, 3], action_shape=7, action_space="discrete", share_encoder=True)
    model = VAC(cfg)
    out = model(torch.randint(0, 11, (5, 7, 7, 3), dtype=torch.uint8))
    assert out["logit"].shape == (5, 7) and out["value"].shape == (5,)


def test_vectors_and_small_boards_get_the_mlp_and_mlp_flattens_any_observation() -> None:
    assert not any(isinstance(m, nn.Conv2d) for m in _qnet(11).modules())
    board = _qnet([3, 3, 2])  # tic-tac-toe: too small for three 2x2 convs, flattened into the MLP
    assert not any(isinstance(m, nn.Conv2d) for m in board.modules())
    assert board(torch.ones(5, 3, 3, 2, dtype=torch.int8))["q_value"].shape == (5, 6)  # int8 boards cast to float
    assert any(isinstance(m, nn.Conv2d) for m in _qnet([6, 7, 2]).modules())  # connect four: the small conv net
    frames = _qnet([4, 84, 84], encoder="mlp")
    assert not any(isinstance(m, nn.Conv2d) for m in frames.modules())
    assert frames(torch.zeros(2, 4, 84, 84, dtype=torch.uint8))["q_value"].shape == (2, 6)
    with pytest.raises(ConfigError, match=r"encoder='conv' needs frames .* of at least 4x4, got obs_shape=11"):
        _qnet(11, encoder="conv")
    with pytest.raises(ConfigError, match=r"got obs_shape=\[3, 3, 2\]"):
        _qnet([3, 3, 2], encoder="conv")


def test_a_shared_encoder_runs_once_per_actor_critic_forward() -> None:
    cfg = dict(VAC.config, obs_shape=[4, 84, 84], action_shape=6, action_space="discrete", share_encoder=True,
               encoder_hidden_size_list=[32])
    model = VAC(cfg)
    calls = []
    model.actor_encoder.register_forward_hook(lambda *_: calls.append(1))
    frames = torch.randint(0, 256, (2, 4, 84, 84), dtype=torch.uint8)
    both = model.compute_actor_critic(frames)
    assert len(calls) == 1
    torch.testing.assert_close(both["logit"], model.compute_actor(frames)["logit"])
    torch.testing.assert_close(both["value"], model.compute_critic(frames)["value"])


def test_ortho_init_off_keeps_pytorch_default_init() -> None:
    """rl-zoo's MuJoCo PPO sets were tuned with ``ortho_init=False``: the layers keep nn.Linear's default init
    (uniform within 1/sqrt(fan_in), biases included) instead of orthogonal weights and zero biases."""
    cfg = dict(VAC.config, obs_shape=11, action_shape=3, action_space="continuous", encoder_hidden_size_list=[64],
               init_log_std=-2.0)
    torch.manual_seed(0)
    with torch.no_grad():
        ortho, default = VAC(cfg).requires_grad_(False), VAC(dict(cfg, ortho_init=False)).requires_grad_(False)
    assert float(ortho.actor_head.bias.abs().max()) == 0.0
    gram = ortho.actor_head.weight @ ortho.actor_head.weight.T  # orthogonal rows of norm 0.01
    assert torch.allclose(gram, 1e-4 * torch.eye(3), atol=1e-7)
    for layer in (default.actor_head, default.critic_head, default.actor_encoder[1]):
        bound = layer.in_features ** -0.5
        assert float(layer.bias.abs().max()) > 0.0 and float(layer.weight.abs().max()) <= bound
        assert float(layer.weight.abs().max()) > 0.5 * bound
    assert torch.equal(default.log_std.data, torch.full((3,), -2.0))


def test_ensemble_members_and_critic_get_conv_encoders_for_grids() -> None:
    """EPPO on MiniGrid: each member and the critic encode the 7x7x3 view with their own small conv net."""
    cfg = dict(EnsembleVAC.config, obs_shape=[7, 7, 3], action_shape=7, action_space="discrete", ensemble_size=3,
               encoder_hidden_size_list=[64], image_scale=0.1)
    model = EnsembleVAC(cfg)
    encoders = [m.actor_encoder for m in model.members] + [model.critic.critic_encoder]
    assert all(isinstance(e, ConvEncoder) for e in encoders) and len({id(e) for e in encoders}) == 4
    out = model.compute_actor_critic(torch.randint(0, 11, (5, 7, 7, 3), dtype=torch.uint8))
    assert out["logit"].shape == (3, 5, 7) and out["value"].shape == (5,)


def test_nature_stack_runs_nhwc_with_the_same_outputs_as_plain_nchw() -> None:
    """The Nature stack's weights and inputs are in NHWC memory (a speed choice): its features equal those of the same
    weights applied to NCHW floats, for NCHW frames, NHWC-strided frames (``conv_layout``) and float frames; the
    small-grid stack stays NCHW."""
    torch.manual_seed(0)
    encoder = ConvEncoder([4, 84, 84], [32])
    assert encoder.nhwc and all(c.weight.is_contiguous(memory_format=torch.channels_last)
                                for c in encoder.convs if isinstance(c, nn.Conv2d))
    frames = torch.randint(0, 256, (5, 4, 84, 84), dtype=torch.uint8)
    x = frames.float() / 255.0
    for layer in encoder.convs:  # NCHW reference: contiguous weights and activations
        x = nn.functional.conv2d(x, layer.weight.contiguous(), layer.bias, layer.stride) \
            if isinstance(layer, nn.Conv2d) else layer(x)
    expected = encoder.head(x)
    torch.testing.assert_close(encoder(frames), expected, rtol=1e-5, atol=1e-5)
    model = VAC(dict(VAC.config, obs_shape=[4, 84, 84], action_shape=6, action_space="discrete", share_encoder=True))
    nhwc = conv_layout(model, frames)
    assert nhwc.is_contiguous(memory_format=torch.channels_last) and torch.equal(nhwc, frames)
    torch.testing.assert_close(encoder(nhwc), expected, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(encoder(frames.double()), expected, rtol=1e-5, atol=1e-5)
    assert not ConvEncoder([7, 7, 3], [16]).nhwc
    grid = VAC(dict(VAC.config, obs_shape=[7, 7, 3], action_shape=7, action_space="discrete"))
    views = torch.zeros(2, 7, 7, 3, dtype=torch.uint8)
    assert conv_layout(grid, views) is views and conv_layout(model, torch.zeros(3, 11)).dim() == 2


def test_conv_layers_name_the_conv_stack_and_bad_ones_are_config_errors() -> None:
    """``model.conv_layers`` replaces the stack chosen from the frame size: connect four's (6, 7, 3) board with a 4x4
    kernel (3x4 cells left) and a padded 3x3 one (3x4 kept) gives 64 * 3 * 4 features."""
    model = _qnet([6, 7, 3], conv_layers=[[64, 4, 1], [32, 3, 1, 1]], encoder_hidden_size_list=[16])
    convs = [m for m in model.encoder.convs if isinstance(m, nn.Conv2d)]
    assert [(c.out_channels, c.kernel_size[0], c.stride[0], c.padding[0]) for c in convs] == [(64, 4, 1, 0),
                                                                                                (32, 3, 1, 1)]
    assert next(m for m in model.encoder.head.modules() if isinstance(m, nn.Linear)).in_features == 32 * 3 * 4
    assert model(torch.ones(5, 6, 7, 3, dtype=torch.int8))["q_value"].shape == (5, 6)
    with pytest.raises(ConfigError, match=r"conv_layers\[1\] = \[8, 4, 1\] leaves no cell of the 6x7 frames"):
        _qnet([6, 7, 3], conv_layers=[[8, 4, 1], [8, 4, 1]])
    for bad in ([[8, 0, 1]], [[8, 2]], [[8, 2, 1, -1]], [[8, 2.5, 1]], "8,2,1"):
        with pytest.raises(ConfigError, match=r"policy\.model\.conv_layers"):
            _qnet([6, 7, 3], conv_layers=bad)
    # an MLP encoder ignores the key (nothing to convolve), as a vector observation does
    assert not any(isinstance(m, nn.Conv2d) for m in _qnet(11, conv_layers=[[8, 2, 1]]).modules())


@pytest.mark.parametrize("bad", [-1, True, "x", [None], [], {}, [[8, 0, 1]]])
@pytest.mark.parametrize("obs_shape,encoder", [(11, "auto"), ([6, 7, 3], "mlp")])
def test_a_bad_conv_layers_is_refused_whatever_the_encoder(bad, obs_shape, encoder: str) -> None:
    # an MLP encoder (a vector observation, or encoder='mlp') took any value without a word, e.g. conv_layers=-1 on
    # CartPole (found by the config fuzzer)
    with pytest.raises(ConfigError, match=r"policy\.model\.conv_layers"):
        _qnet(obs_shape, conv_layers=bad, encoder=encoder)
