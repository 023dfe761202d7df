"""Talking to the Portal: which endpoint, the stored credentials, fetching instances, following a run."""
