raise ImportError("No module named 'mujoco' (a test stand-in for a missing package)")
