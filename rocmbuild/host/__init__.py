"""The host: ROCm installs, GPUs and gfx names, libraries, the HIP compiler and its answers kept for
one command.
"""
