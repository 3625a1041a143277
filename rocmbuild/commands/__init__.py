"""The commands behind the CLI: ``build``/``plan`` (app), ``resume``, ``doctor`` and its fleet view.
"""
