"""Checks: preflight's cheap checks before the first attempt, which of them a plan or ``doctor`` runs,
and the integrity checks of the build interpreter's torch.
"""
