"""Data records: what agents, sessions, resources, memory and uploads *are*, with their validation.

Modules here import nothing but pydantic, the standard library, ``errors``/``ids`` and each other (and
``usage``, whose ``Budget`` a session carries): no service, no store, no provider, no Jupyter. Everything
above them — the store, the engine, the services, the kernel — shares these shapes.
"""
