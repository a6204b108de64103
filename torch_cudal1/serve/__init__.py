"""Serving: from Dynamo's graph to the implementation that runs each call.

* ``backend``: the ``torch.compile`` entry point (``cudal1_backend``): options, AOT, one
  ``GraphRunner`` per ATen graph;
* ``graph_runner``: a graph's first call looks its key up (or searches it through
  ``search.search_and_store``), then a cheap dispatch;
* ``arbiter``: the winner against the user's own graph (eager, inductor) where that is faster;
* ``fallback``: the failure boundary and what runs instead;
* ``worker``: the background search worker of ``mode="async"``.

Loading an entry's winner is ``cache.winner`` (the cache's own checks load winners the same way).
"""
