"""The compile toolchain around a build: the compiler cache (ccache/sccache), the compile launcher and
its shim, and the global job limit.
"""
