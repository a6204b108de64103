# task: rnn_cell  expect: ok
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    """The recurrent cell with the concatenation split into two products, and its hidden state
    updated in place instead of reassigned: honest, and it carries its state on every call."""

    def __init__(self, n_in, n_hidden):
        super().__init__()
        self.i2h = nn.Linear(n_in + n_hidden, n_hidden)
        self.h2o = nn.Linear(n_hidden, n_hidden)
        self.hidden = torch.randn(8, n_hidden)
        self.n_in = n_in

    def forward(self, x):
        if self.hidden.device != x.device:
            self.hidden = self.hidden.to(x.device)
        w = self.i2h.weight
        h = torch.tanh(torch.addmm(self.i2h.bias, x, w[:, :self.n_in].t())
                       + self.hidden @ w[:, self.n_in:].t())
        self.hidden.copy_(h)
        return self.h2o(h)
