import re
from pathlib import Path

from setuptools import find_packages, setup

# the package's own version (torch_cudal1/version.py), read without importing torch
VERSION = re.search(r'^__version__ = "([^"]+)"',
                    (Path(__file__).parent / "torch_cudal1" / "version.py").read_text(), re.M)[1]

setup(
    name="torch_cudal1",
    version=VERSION,
    description="A torch.compile backend that searches, verifies and caches faster kernels "
                "(CUDA-L1-style contrastive generation through a local LLM engine).",
    # The native sources live at the top-level csrc/; a wheel carries them as torch_cudal1/csrc/,
    # where bench/native.py looks when there is no source checkout around the package.
    packages=find_packages(include=["torch_cudal1", "torch_cudal1.*"]) + ["torch_cudal1.csrc"],
    package_dir={"torch_cudal1.csrc": "csrc"},
    package_data={"torch_cudal1": ["examples/*.py"], "torch_cudal1.csrc": ["*.cpp", "*.cu"]},
    include_package_data=True,
    python_requires=">=3.10",
    install_requires=[
        "torch>=2.11",
        "filelock>=3.12",
        "safetensors>=0.4",
        "httpx>=0.27",
        "numpy",
    ],
    extras_require={
        "vllm": ["vllm"],
        "triton": ["triton"],
        "ray": ["ray[default]"],
        "redis": ["redis>=5"],
        "dev": ["pytest>=8", "pytest-timeout", "pytest-xdist", "transformers>=4.40", "triton",
                "ninja", "redis>=5", "ray[default]", "tqdm"],
    },
    entry_points={
        "console_scripts": ["cudal1=torch_cudal1.cli:main"],
        # The only registration of the backend name: torch._dynamo discovers it lazily.
        "torch_dynamo_backends": ["cudal1=torch_cudal1.serve.backend:cudal1_backend"],
    },
)
