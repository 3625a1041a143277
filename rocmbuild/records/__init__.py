"""Run records: the run directory, reports and diffs, history, resume, notify, detach, redaction,
provenance.
"""
