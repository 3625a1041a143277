"""Diagnosis: the failure catalogue (signatures.toml), the classifier that reads build output with
it, and the advice that follows.
"""
