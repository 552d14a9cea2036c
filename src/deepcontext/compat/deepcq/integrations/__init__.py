"""``deepcq.integrations``."""
