"""The run runtime every training pipeline shares (see docs/architecture.md): the experiment folder, the run's start
(resume, seeds, logging) and the train loop over a pipeline's parts."""
