"""The build loop: one recipe's attempts (the session), the ladder policy, the remedies and the
effects they return, the run's context, and MAX_JOBS sizing after an OOM.
"""
