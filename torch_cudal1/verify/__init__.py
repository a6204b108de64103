"""Verification of candidates in child processes (see runner.evaluate)."""
from .runner import evaluate

__all__ = ["evaluate"]
