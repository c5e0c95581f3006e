"""Tools: the interface the turn loop uses and the hosts that implement it."""
