"""``ding_lite -m plot``'s machinery: reading runs, drawing learning curves, aggregating over tasks, GSL figures."""
