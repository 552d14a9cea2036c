"""Drop-in interfaces of other memory libraries over the deepcontext engine.

- :mod:`deepcontext.compat.mem0`: mem0's ``Memory`` / ``AsyncMemory``;
- :mod:`deepcontext.compat.deepcq`: deepcq 0.3.0's modules;
- :mod:`deepcontext.compat.memory_graph`: Memory Graph's ``modules`` package;
- :mod:`deepcontext.compat.deepcontext01`: DeepContext 0.1's engine class (its ``get_entity_graph``);
- :mod:`deepcontext.compat.alembic_env`: 0.1's ``alembic upgrade head`` over deepcontext's migrations.
"""
