raise ImportError("No module named 'minigrid' (a test stand-in for a missing package)")
