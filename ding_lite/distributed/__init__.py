"""Ray plumbing of the parallel pipelines: the session (local or a cluster), the collector and evaluator actors, and
the driver-side stand-ins that answer the train loop as local workers do."""
