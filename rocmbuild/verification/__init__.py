"""Verification of what a build produced: the GPU code objects each artifact carries, ``inspect``,
and the arch-truthfulness warnings.
"""
