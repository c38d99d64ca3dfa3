raise ImportError("No module named 'envpool' (a test stand-in for a missing package)")
