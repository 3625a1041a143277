"""Processes: helper commands, the PTY attempt engine and its process tree, containment, relay and
display.
"""
