"""``torch_cudal1.backend:cudal1_backend`` is the name the ``torch_dynamo_backends`` entry point of
installs made before the ``serve`` package registered; it stays importable for them (and for
scripts that import it). The backend itself is ``serve/backend.py``."""
from .serve.backend import cudal1_backend

__all__ = ["cudal1_backend"]
