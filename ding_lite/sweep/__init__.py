"""``ding_lite -m sweep``'s machinery: the search space, trials over seeds, Ray Tune's search and the results."""
