"""The run runtime every training pipeline shares: the experiment folder, the run's start (resume, seeds, logging)
and the train loop over a pipeline's parts."""
