"""What a wheel carries besides the Python modules: the native sources (top-level ``csrc/``), found
by ``bench/native.py`` from a source checkout and from an install alike."""
from pathlib import Path

from torch_cudal1.bench import native

ROOT = Path(__file__).resolve().parents[1]


def test_the_native_sources_are_found_in_the_checkout_and_in_an_install(tmp_path):
    assert native.CSRC == ROOT / "csrc" and (native.CSRC / "cudal1_native.cpp").is_file()
    installed = tmp_path / "site-packages" / "torch_cudal1"
    (installed / "csrc").mkdir(parents=True)
    (installed / "csrc" / "cudal1_native.cpp").write_text("// the wheel's copy\n")
    assert native.sources_dir(installed) == installed / "csrc"


def test_setup_ships_the_native_sources_and_registers_the_backend():
    setup = (ROOT / "setup.py").read_text()
    assert '"torch_cudal1.csrc": "csrc"' in setup and '"*.cpp", "*.cu"' in setup
    assert "cudal1=torch_cudal1.serve.backend:cudal1_backend" in setup
    assert "recursive-include csrc" in (ROOT / "MANIFEST.in").read_text()
    from torch_cudal1.backend import cudal1_backend      # the name of earlier installs' entry point
    from torch_cudal1.serve.backend import cudal1_backend as served
    assert cudal1_backend is served
