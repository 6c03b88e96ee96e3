"""Adapters that turn one producer's objects into the claims engine's subjects and claims."""
