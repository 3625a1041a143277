"""Fleet provisioning: build fingerprints (``up_to_date``), ``--wheel-dir`` publishing and
``--requires-from``.
"""
