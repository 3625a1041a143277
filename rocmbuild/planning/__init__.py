"""Planning: recipes and their loader, the frozen build plan, environment changes as data, and the
step from recipe + host facts + options to plans (nothing runs here).
"""
