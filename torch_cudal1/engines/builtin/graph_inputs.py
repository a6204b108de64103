"""Which inputs a captured CUDA graph reads in place, and which it copies in.

Embedded verbatim in the CUDA-graph wrapper's candidate source (candidates are self-contained),
so it imports nothing but the standard library and may be tested on its own.

After AOT autograd a model's weights are plain graph inputs: a replay that copies every input into
its static buffers copies every weight on every call, one copy launch per tensor (ResNet-18: over
a hundred). A serving caller passes the very same weight tensors every time, so a graph may read
those in place: captured on the caller's own tensors, which it keeps alive. Contents may change
between calls (an in-place weight update, or a test refilling its buffers): a replay reads them
as they are then, as eager would. Only a different tensor (another object, or the same object
pointed at other memory) breaks the plan: that input is copied from then on and the graph is
captured again. Inputs that differ from call to call (activations) are copied as before.
"""
import weakref


class InputPlan:
    """Held inputs: (index, tensor, data_ptr); ``copied``: every other index."""

    def __init__(self):
        self.held = ()              # read in place by the captured graph
        self.copied = ()            # copied into the graph's static buffers every call
        self.demoted = set()        # indices once held, then passed as another tensor: never again
        self.settled = False        # the second call has been compared with the first
        self._first = None          # weak references to the first call's tensors

    def plan(self, inputs, is_tensor):
        """Decide before a capture: hold the tensors passed identically on the last two calls."""
        if not self.settled and self._first is None:
            self._first = [weakref.ref(x) if is_tensor(x) else None for x in inputs]
            hold = set()
        elif not self.settled:
            first, self._first = self._first, None
            self.settled = True
            hold = {i for i, (r, x) in enumerate(zip(first, inputs))
                    if r is not None and len(first) == len(inputs) and r() is x}
        else:
            hold = {i for i, _, _ in self.held}
        hold = {i for i in hold - self.demoted if i < len(inputs) and is_tensor(inputs[i])}
        self.held = tuple((i, inputs[i], inputs[i].data_ptr()) for i in sorted(hold))
        self.copied = tuple(i for i in range(len(inputs)) if i not in hold)
        return hold

    def wants_second_look(self) -> bool:
        """True on the second call: it may show which inputs the caller passes every time."""
        return not self.settled and self._first is not None

    def nothing_to_hold(self, inputs) -> bool:
        """At the second look: True (and settled, no capture needed) when no tensor repeats."""
        first = self._first or []
        if len(first) == len(inputs) and any(
                r is not None and r() is x and i not in self.demoted
                for i, (r, x) in enumerate(zip(first, inputs))):
            return False
        self._first, self.settled = None, True
        return True

    def held_match(self, inputs) -> bool:
        for i, t, ptr in self.held:
            x = inputs[i]
            if x is not t or x.data_ptr() != ptr:
                return False
        return True

    def demote_changed(self, inputs) -> None:
        for i, t, ptr in self.held:
            x = inputs[i] if i < len(inputs) else None
            if x is not t or x.data_ptr() != ptr:
                self.demoted.add(i)
