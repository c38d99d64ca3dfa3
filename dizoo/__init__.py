"""Ready configs and small envs, by domain (DI-engine's module layout)."""
