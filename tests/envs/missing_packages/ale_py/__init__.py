raise ImportError("No module named 'ale_py' (a test stand-in for a missing package)")
