"""Recipe: torchvision's resnet18 (random weights) at batch sizes 1, 8 and 32. Yields nothing
when torchvision is not installed.

    cudal1 warm cache/recipes/resnet18.py --device cuda
"""
import torch

DYNAMIC = None
BATCHES = (1, 8, 32)


def _resnet18():
    import torchvision
    torch.manual_seed(0)
    return torchvision.models.resnet18(weights=None).eval()


def models():
    try:
        import torchvision  # noqa: F401
    except ImportError:
        return
    yield "resnet18", _resnet18, [(lambda b=b: (torch.randn(b, 3, 224, 224),)) for b in BATCHES]
