"""Adapters that connect the framework-agnostic core to LangGraph and model providers."""
