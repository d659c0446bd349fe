"""The agents of the zoo. Each module exposes ``SHAPE`` (a short name), ``CAUSES`` (the failure
causes it can host) and ``build(world) -> AgentUnderTest``."""
