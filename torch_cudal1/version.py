# 0.2.9: the candidate's process shows no verifier: cudal1's modules as when served, the harness's,
#        the verifier's and the task's hidden, its module named as a served winner's, `python -`
# 0.2.8: code made from text or bytes (compile, marshal, a .pyc without its source, a zip) under a
#        library's file name refused, unless made from that very file; the audit hook run from a
#        private copy of its module; every thread but the loop's judged as the candidate's;
#        in the loop's thread, frames only to code that names what it called, no process
# 0.2.7: the candidate's code in a thread apart from the harness's loop; no frame taken in the
#        loop's thread by code with the candidate's under it, nor another thread's by any
# 0.2.6: inputs negated and, at reduced precision, widened draws judged at the bounds; a stateful
#        task's timed calls carry their state; library callbacks of the candidate's audited
#        calls named; an input's class compared; large outputs held once
# 0.2.5: inputs compared byte for byte, the reference's writes to inputs compared, held outputs
#        by call and the first kept to the end, the result's nesting and Python floats compared
# 0.2.4: outputs kept apart over timed batches (held outputs), lost elements of every float
#        dtype, the request pipe and the harness's draw out of the candidate's reach; entries
#        from other machines: checked on the caller's inputs, unsigned inductor artefacts unread
# 0.2.3: output slots fingerprinted, messages tagged, elements below an output's scale compared,
#        the candidate's processes stopped while the reference is timed, host sockets hidden,
#        ctypes calls judged by the symbol they land on, process-wide switches tracked
# 0.2.2: nothing of a candidate's runs after its call returns (modes, gc callbacks, ATen kernel
#        overrides, result subclasses are timer_tampering); the worker's loop in private copies
# 0.2.1: CUDA-graph wrappers take calls switching between inference_mode and no_grad; the
#        verifier's facts out of the candidate's reach, NaN/inf kinds and integer outputs compared
# 0.2.0: verified by a judge out of the candidate's process, candidates in an OS sandbox, float32 tolerance by the user's precision
# 0.1.2: global settings checked and kept to a winner's calls (TF32 candidates)
# 0.1.1: CUDA-graph wrappers capture with cuBLAS workspaces of their own
__version__ = "0.2.9"
# Bumped whenever the meaning of a cache entry changes; part of every key.
CACHE_FORMAT = 1
