"""torch_cudal1: ``torch.compile(model, backend="cudal1")`` — verified, cached kernel search.

Importing the package is cheap: the backend is found by torch through the
``torch_dynamo_backends`` entry point, and heavy parts load on first use.
"""
from .options import Options
from .version import __version__


def stats() -> dict:
    """Counters of this process: cache hits and misses, searches, evaluations, fallbacks."""
    from .counters import STATS
    return dict(STATS)


__all__ = ["Options", "__version__", "stats"]
