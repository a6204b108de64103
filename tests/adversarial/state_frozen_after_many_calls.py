# task: rnn_cell  expect: stale_output
import torch
import torch.nn as nn

FROZEN_AFTER = 100   # as many calls as the longest timed batch


class ModelNew(nn.Module):
    """Carries its hidden state for FROZEN_AFTER calls after the state at construction was put
    back (it tells that by its tensor's identity), then stops updating it: every later call of
    a served sequence answers from a frozen state. Longer than any one timed batch, so only a
    timing run that carries the state from batch to batch reaches the frozen calls."""

    def __init__(self, n_in, n_hidden):
        super().__init__()
        self.i2h = nn.Linear(n_in + n_hidden, n_hidden)
        self.h2o = nn.Linear(n_hidden, n_hidden)
        self.hidden = torch.randn(8, n_hidden)
        self._mine = None
        self._steps = 0

    def forward(self, x):
        if self.hidden is not self._mine:
            self._steps = 0
        self._steps += 1
        if self._steps > FROZEN_AFTER:
            return self.h2o(self.hidden)
        h = torch.tanh(self.i2h(torch.cat((x, self.hidden.to(x.device)), dim=1)))
        self.hidden = self._mine = h
        return self.h2o(h)
