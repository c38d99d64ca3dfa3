"""ding_lite/worker/video.py: ``-m eval --video`` on CartPole (frames in the mp4, counted by ffmpeg, against the
evaluator's episode lengths), periodic videos of a training run, envpool's Atari frames, MuJoCo offscreen, and the
envs that cannot render (one line, exit 2, nothing written)."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import DIZOO_CARTPOLE, REPO_ROOT, cli_env

from ding_lite.build import build, load_config
from ding_lite.cli import main
from ding_lite.entry.eval import eval_pipeline
from ding_lite.entry.serial import serial_pipeline
from ding_lite.errors import ConfigError
from ding_lite.worker.video import FrameEnv, PeriodicVideos, record_episodes

imageio_ffmpeg = pytest.importorskip("imageio_ffmpeg")
pytestmark = pytest.mark.unittest
PPO = str(DIZOO_CARTPOLE / "cartpole_ppo_config.py")
MAZE = str(REPO_ROOT / "dizoo" / "grid" / "maze" / "config" / "maze_ppo_config.py")


def _frames(path: Path) -> int:
    return imageio_ffmpeg.count_frames_and_secs(str(path))[0]  # ffmpeg decodes the file and counts


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> Path:
    """A CartPole PPO run of one collect (256 env steps) with a video at every evaluation (the first and the
    last)."""
    exp = tmp_path_factory.mktemp("video") / "ppo"
    serial_pipeline(PPO, 0, max_env_step=256, exp_dir=exp, progress=False,
                    overrides=("policy.eval.evaluator.video_every=1", "policy.eval.final_episodes=0",
                               "env.stop_value=None", "policy.eval.evaluator.eval_freq=1000"))
    return exp


def test_eval_video_frames_match_the_evaluation_episodes(trained: Path, tmp_path: Path) -> None:
    summary = eval_pipeline(trained / "total_config.py", 0, trained / "ckpt" / "ckpt_best.pth.tar", 3,
                            overrides=("env.evaluator_env_num=1",), video=tmp_path / "vids", video_episodes=3)
    videos = summary["videos"]
    assert [Path(v["path"]).name for v in videos] == ["eval_ep0.mp4", "eval_ep1.mp4", "eval_ep2.mp4"]
    # one eval env: the evaluator's three episodes are that env's first three, in order, and so are the videos
    assert [v["return"] for v in videos] == summary["returns"]
    for v in videos:
        assert v["length"] == v["return"]  # CartPole: one point per step
        assert _frames(Path(v["path"])) == v["length"] + 1  # the reset frame, then one per step


def test_eval_videos_are_cut_at_the_evaluators_step_cap(trained: Path, tmp_path: Path) -> None:
    """A video played on past ``policy.eval.evaluator.max_episode_steps``: its episode was not the evaluation's (a
    longer one, with another return), and a policy that never ends an episode in an env without a time limit (one
    that never presses FIRE) recorded frames for ever, where the evaluation stops at the cap."""
    summary = eval_pipeline(trained / "total_config.py", 0, trained / "ckpt" / "ckpt_best.pth.tar", 3,
                            overrides=("env.evaluator_env_num=1", "policy.eval.evaluator.max_episode_steps=5"),
                            video=tmp_path / "vids", video_episodes=3)
    videos = summary["videos"]
    assert summary["returns"] == [5.0, 5.0, 5.0]  # every CartPole episode lasts more than 5 steps: all cut
    assert [(v["return"], v["length"]) for v in videos] == [(5.0, 5)] * 3
    assert [_frames(Path(v["path"])) for v in videos] == [6] * 3
    # the periodic videos of a training run are cut there too
    recorder = PeriodicVideos.from_config(
        load_config(trained / "total_config.py", overrides=("policy.eval.evaluator.max_episode_steps=4",
                                                               "policy.eval.evaluator.video_every=1")),
        tmp_path / "run", _untrained_weights(trained), lambda: _eval_policy(trained), 0)
    try:
        (video,) = recorder.after_eval(0)
    finally:
        recorder.close()
    assert (video.episode_return, video.length) == (4.0, 4)


def _eval_policy(trained: Path):
    return build(load_config(trained / "total_config.py"), "policy", enable_field=("eval",))


def _untrained_weights(trained: Path):
    state = _eval_policy(trained).eval_mode.state_dict()
    return lambda: state


def test_periodic_videos_of_a_training_run(trained: Path) -> None:
    names = sorted(p.name for p in (trained / "videos").iterdir())
    result = json.loads((trained / "result.json").read_text())
    assert names == sorted(["eval_iter0_ep0.mp4", f"eval_iter{result['train_iter']}_ep0.mp4"])
    log = (trained / "log" / "train.log").read_text()
    for name in names:
        (line,) = [x for x in log.splitlines() if x.startswith("[video]") and name in x]
        assert _frames(trained / "videos" / name) == int(line.split(", ")[-1].split()[0]) + 1


def test_periodic_videos_leave_the_training_as_it_is(trained: Path, tmp_path: Path) -> None:
    """The same run without videos evaluates the same returns: building the recorder's policy drew its weights from
    torch's global generator, which shifted every later sample of the run (CartPole PPO: 48.2 instead of 72.4 at
    env step 512)."""
    plain = tmp_path / "plain"
    serial_pipeline(PPO, 0, max_env_step=256, exp_dir=plain, progress=False,
                    overrides=("policy.eval.final_episodes=0", "env.stop_value=None",
                               "policy.eval.evaluator.eval_freq=1000"))

    def evals(exp: Path) -> list[str]:
        return [x for x in (exp / "log" / "train.log").read_text().splitlines() if x.startswith("[eval]")]

    assert len(evals(plain)) == 2 and evals(trained) == evals(plain)


def _one_line_exit_2(argv: list[str], tmp_path: Path, monkeypatch, capsys) -> str:
    monkeypatch.chdir(tmp_path)
    before = set(tmp_path.rglob("*"))
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ding_lite: error: "), err
    assert set(tmp_path.rglob("*")) == before
    return err[0]


def test_an_env_that_cannot_render(tmp_path: Path, monkeypatch, capsys) -> None:
    line = _one_line_exit_2(["-m", "eval", "-c", MAZE, "--video", "vids"], tmp_path, monkeypatch, capsys)
    assert "env type 'maze' cannot render: videos need an env type that passes kwargs to gymnasium.make" in line
    line = _one_line_exit_2(["-m", "serial", "-c", PPO, "--video", "vids"], tmp_path, monkeypatch, capsys)
    assert "--video records evaluation episodes of -m eval, not of -m serial" in line
    pytest.importorskip("envpool")
    with pytest.raises(ConfigError, match=r"env 'CartPole-v1' \(env.type='envpool'\) cannot render: envpool gives "
                                          r"no frames, and its observations .* are no images"):
        FrameEnv({"type": "envpool", "env_id": "CartPole-v1", "kwargs": {}, "evaluator_env_num": 1})


class _RandomPolicy:
    """A stand-in eval mode: seeded random actions."""

    def __init__(self, n: int) -> None:
        self.rng = np.random.default_rng(0)
        self.n = n

    def forward(self, obs: np.ndarray) -> dict:
        return {"action": self.rng.integers(self.n, size=len(obs))}

    def reset(self, env_ids=None) -> None:
        pass

    def rollout_weights(self):
        from contextlib import nullcontext

        return nullcontext()


def test_envpool_atari_frames_come_from_the_observations(tmp_path: Path) -> None:
    pytest.importorskip("envpool")
    frames = FrameEnv({"type": "envpool", "env_id": "Pong-v5", "kwargs": {}, "max_episode_steps": 40})
    try:
        (video,) = record_episodes(frames, _RandomPolicy(frames.env.action_space.n), tmp_path, "pong", 1, seed=3)
    finally:
        frames.close()
    assert video.length == 40 and _frames(video.path) == 41
    reader = imageio_ffmpeg.read_frames(str(video.path))
    meta = next(reader)
    assert meta["size"] == (336, 336)  # 84x84 grey frames scaled by 4
    first = np.frombuffer(next(reader), dtype=np.uint8).reshape(336, 336, 3)
    reader.close()
    assert np.abs(first[..., 0].astype(int) - first[..., 1]).max() <= 8  # grey (up to H.264's colour rounding)


MUJOCO_SCRIPT = """
import sys
from contextlib import nullcontext
from pathlib import Path
import numpy as np
from ding_lite.worker.video import FrameEnv, record_episodes

class RandomBox:
    def __init__(self, space):
        self.space = space
    def forward(self, obs):
        return {"action": np.stack([self.space.sample() for _ in obs])}
    def reset(self, env_ids=None):
        pass
    rollout_weights = staticmethod(nullcontext)

frames = FrameEnv({"type": "mujoco", "env_id": "Hopper-v4", "kwargs": {}, "max_episode_steps": 12})
frames.env.action_space.seed(0)
(video,) = record_episodes(frames, RandomBox(frames.env.action_space), Path(sys.argv[1]), "hopper", 1, seed=0)
print(video.length, video.path)
"""


def test_mujoco_renders_offscreen_without_a_display(tmp_path: Path) -> None:
    """In a fresh process without DISPLAY or MUJOCO_GL: the video module picks EGL before MuJoCo loads."""
    pytest.importorskip("mujoco")
    env = {k: v for k, v in cli_env().items() if k not in ("DISPLAY", "MUJOCO_GL", "PYOPENGL_PLATFORM")}
    proc = subprocess.run([sys.executable, "-c", MUJOCO_SCRIPT, str(tmp_path)], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    length, path = proc.stdout.split()
    assert 1 <= int(length) <= 12 and _frames(Path(path)) == int(length) + 1
