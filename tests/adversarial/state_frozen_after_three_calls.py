# task: rnn_cell  expect: stale_output
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """Carries its hidden state for the first 3 calls after the state at construction was put
    back, then stops updating it (every later call answers from a frozen state). The checks in
    sequence are `trials` calls long, and the judge puts the state back before others, which
    this candidate recognises by the identity of its tensor; timed batches carry the state
    through all their calls and check each against the reference at the same point."""

    def __init__(self, n_in, n_hidden):
        super().__init__()
        self.i2h = nn.Linear(n_in + n_hidden, n_hidden)
        self.h2o = nn.Linear(n_hidden, n_hidden)
        self.hidden = torch.randn(8, n_hidden)
        self._mine = None     # the last hidden tensor this module wrote itself
        self._steps = 0

    def forward(self, x):
        if self.hidden is not self._mine:   # put back from outside: a new sequence
            self._steps = 0
        self._steps += 1
        h = torch.tanh(self.i2h(torch.cat((x, self.hidden.to(x.device)), dim=1)))
        if self._steps <= 3:
            self.hidden = h
            self._mine = h
        return self.h2o(h)
