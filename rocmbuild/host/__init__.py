"""The host: ROCm installs, GPUs and gfx names, libraries, the HIP compiler, and `doctor`'s view of
them.
"""
