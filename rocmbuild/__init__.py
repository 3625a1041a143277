"""rocmbuild: unattended, self-healing source builds of the ROCm AI stack."""

__version__ = "0.1.0"
