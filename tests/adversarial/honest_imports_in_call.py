# task: diag_matmul  expect: ok
import ast
import collections
import importlib

import torch
import torch.nn as nn

# Honest twin of code_from_marshal.py, code_from_bytecode_file.py and
# code_compiled_under_a_library_name.py: code made from bytes and text while the candidate runs,
# the way honest code makes it. Its first call imports modules nothing loaded yet (a standard
# library's and torch's, from their cached bytecode or their source), parses text
# (ast.parse compiles it under "<unknown>") and builds a namedtuple (compiled under "<string>").


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self.helpers = None

    def forward(self, a, b):
        if self.helpers is None:
            colorsys = importlib.import_module("colorsys")
            fractions = importlib.import_module("fractions")
            importlib.import_module("torch.utils.show_pickle")
            tree = ast.parse("scale = 1")
            pair = collections.namedtuple("Pair", "rows cols")
            self.helpers = (colorsys.rgb_to_hsv(1.0, 0.0, 0.0)[2] * fractions.Fraction(1, 1),
                            tree, pair(*b.shape))
        return a.unsqueeze(1) * b * float(self.helpers[0])
