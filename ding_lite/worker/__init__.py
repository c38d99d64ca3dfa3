"""Workers: collectors, evaluator, learner (plain classes, wrapped by Ray in the parallel pipeline)."""
from ding_lite.worker import learner_hooks  # noqa: F401  (registers the hooks a BaseLearner builds)
from ding_lite.worker.collector import EpisodeCollector, SampleCollector
from ding_lite.worker.evaluator import EvalResult, InteractionEvaluator
from ding_lite.worker.learner import BaseLearner

__all__ = ["SampleCollector", "EpisodeCollector", "InteractionEvaluator", "EvalResult", "BaseLearner"]
