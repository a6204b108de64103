"""The candidate's process. The judge starts ``python -`` inside the OS sandbox
(``verify/os_sandbox.py``) and writes one line to its standard input that calls ``main`` with
the descriptors of its pipes and shared memory.

It imports the candidate, builds and constructs it, and then runs the batches of calls the judge
sends (``calls.py``), replying with what it saw. Before the import, where the judge asks, it runs
batches of the reference, so that the judge can time this process's harness while nothing of the
candidate is here. It holds no reference, no tolerance, no verdict and no clock the judge relies
on: whatever the candidate does to this process, the judge only learns facts from it and reads
the outputs from shared memory itself.

The candidate sees a process that looks like one serving a cached winner, not like a verifier:
it loads what a serving process loads to run a winner (``SERVING_MODULES``), its own module is
named as a served winner's is (``cudal1_winner_<hex>``), and before its import the harness's, the
verifier's and the timers' packages and the task's module are taken out of ``sys.modules`` and of
their packages (``hide``). Code that answers right only where it finds the verifier (``env_*``
in tests/adversarial) then answers as it would when served, and is judged on that. The command
line names no module (``python -``), and ``sys.argv`` is ``['-']``.
"""
from __future__ import annotations

import importlib
import os
import sys
import time

sys.dont_write_bytecode = True

from . import guards  # noqa: E402 - bound here: see ``hide``

# What a serving process loads to run a winner: the graph runner, and the loader that imported it.
SERVING_MODULES = ("torch_cudal1.serve.graph_runner", "torch_cudal1.cache.winner")
# cudal1's packages that verification loads and a process serving a winner does not: the
# harness, the verifier, the timers (hidden from the candidate, ``hide``).
VERIFIER_PACKAGES = ("torch_cudal1.harness", "torch_cudal1.verify", "torch_cudal1.bench")


def _load(path: str, name: str):
    from ..task import load_source
    with open(path) as f:
        return load_source(f.read(), name, filename=path)


def hide(registry: dict) -> None:
    """Take the modules of ``VERIFIER_PACKAGES`` and the task's module out of ``sys.modules`` and
    out of their packages' namespaces, into ``registry`` (``guards.HIDDEN``). The harness keeps
    running: its functions hold their modules' namespaces, and nothing it runs from here on
    imports one of them again (an import statement would load a second copy)."""
    for name in [n for n in sys.modules
                 if n.startswith(VERIFIER_PACKAGES) or n == guards.TASK_MODULE]:
        registry[name] = sys.modules.pop(name)
    for name, mod in registry.items():
        parent, _, attr = name.rpartition(".")
        pkg = sys.modules.get(parent)
        if pkg is not None and vars(pkg).get(attr) is mod:
            delattr(pkg, attr)


def main(req_fd: int, rep_fd: int, slot_fd: int, device: str) -> None:
    import faulthandler
    faulthandler.enable()   # a crash in a kernel launcher leaves its stack in the log
    # the pipe this program came on is read to its end: standard input is /dev/null from here
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    # What every candidate needs, before the setup arrives (the judge builds its reference
    # meanwhile): torch, the device's context, the modules a serving process has loaded.
    for name in SERVING_MODULES:
        importlib.import_module(name)
    import torch
    from . import audit, calls, guards, protocol, state  # noqa: F401
    if device.startswith("cuda"):
        try:
            torch.cuda.init()
        except Exception:  # noqa: BLE001 - reported where the candidate first needs it
            pass
    try:
        setup = protocol.recv(req_fd)
    except protocol.ProtocolError:   # the judge decided before it needed a worker
        os._exit(0)
    if setup.get("op") == "bye":
        os._exit(0)
    # The harness's loop in a thread of its own, the candidate's code in this one (see
    # candidate_thread.py); ``_thread`` keeps no Thread object whose arguments could be read.
    import _thread
    from .candidate_thread import Jobs
    jobs = Jobs()
    _thread.start_new_thread(_loop, ([setup, req_fd, rep_fd, slot_fd], jobs))
    del setup
    jobs.serve()


def _loop(box: list, jobs) -> None:
    args = box[:]
    box.clear()
    code = 1
    try:
        code = _serve(*args, jobs)
    finally:
        os._exit(code)


def _serve(setup: dict, req_fd: int, rep_fd: int, slot_fd: int, jobs) -> int:
    from . import protocol
    phases: dict[str, float] = {}
    t0 = time.monotonic()
    import torch
    from .. import global_settings
    from ..options import env
    from . import audit, calls, candidate_thread, guards
    from .errors import chain_text
    # the harness's own code as private copies, taken before the candidate's import: a function
    # of calls.py or protocol.py swapped for one call (and put back) changes nothing they run
    private = calls.sealed()
    from . import state as state_module
    ModuleState = guards.private(state_module)["ModuleState"]
    Inputs, Runner, Slots, quiet_cpu = (private[k] for k in ("Inputs", "Runner", "Slots", "quiet_cpu"))
    proto = guards.private(protocol)
    import json.encoder
    proto["_encode"] = guards.private(json.encoder)["JSONEncoder"](default=str).encode
    send_as, recv_as = proto["send"], proto["recv"]
    # Replies are tagged, and requests checked, under the judge's key (protocol.py); the key
    # stays in this frame.
    key = bytes.fromhex(setup.pop("key", ""))
    signer, req_signer = proto["Signer"](key, b"reply"), proto["Signer"](key, b"request")
    del key

    # What these functions use is bound as defaults, not closure cells: a cell's contents can
    # be replaced without an audit event by code that reached a function of this frame
    # (``recv.__closure__``), a tuple of defaults only by setting ``__defaults__``, which the
    # audit hook names.
    def send(fd: int, obj, _send_as=send_as, _signer=signer) -> None:
        _send_as(fd, obj, _signer)

    # The request pipe as the judge made it: a pipe put in its place (os.dup2) would let the
    # candidate read every request, seeds included, before the harness does, and work on the
    # answers while the harness draws its inputs. Tags cannot see a relay that changes nothing.
    fstat = os.fstat
    req_pipe = (fstat(req_fd).st_dev, fstat(req_fd).st_ino)

    def recv(fd: int, _fstat=fstat, _req=(req_fd, req_pipe), _recv_as=recv_as,
             _req_signer=req_signer, _send=send, _rep_fd=rep_fd, _forged=protocol.Forged):
        try:
            st = _fstat(fd)
            if fd == _req[0] and (st.st_dev, st.st_ino) != _req[1]:
                raise _forged("request pipe replaced")
            return _recv_as(fd, None, _req_signer)
        except (_forged, OSError):   # a ProtocolError ends the loop
            _send(_rep_fd, {"tampered": "the request pipe was replaced or rewritten: requests "
                                        "the judge did not send, or read by another before the "
                                        "harness"})
            raise _forged("request pipe") from None

    def fail(where: str, err: tuple, ok=False, _send=send, _rep_fd=rep_fd,
             _phases=phases) -> int:
        name, text = err   # (type name, text), exact strings (candidate_thread.describe)
        text = text if type(text) is str else "?"
        if ok is None:   # a result the job did not return
            _send(_rep_fd, {"tampered": f"{where}: {text}"})
            return 0
        _send(_rep_fd, {"error": {"where": where, "type": name if type(name) is str else "?",
                                  "text": text}, "phases": _phases})
        return 0

    submit = jobs.submit   # bound now: see candidate_thread.Jobs
    threads = (jobs.native_id,)
    device = setup["device"]
    # the user's numerics, as when served, where the candidate's calls run (autograd's and
    # autocast's switches are per thread)
    submit(global_settings.apply, global_settings.from_json(setup.get("settings") or {}))
    task = _load(setup["task_file"], "cudal1_task")
    real = None
    if setup.get("real_inputs"):
        from . import real_inputs
        real = real_inputs.load(setup["real_inputs"])
    init = task.get_init_inputs()
    # Dynamo rebinds some torch functions when first imported: imported before the snapshot
    # where the candidate compiles, or calls a library's custom operator, one of torch's
    # Python-implemented prims (a dynamic graph's scalars made tensors) or a higher-order op
    # (flex_attention's eager call compiles): their calls import it
    task_text = open(setup["task_file"]).read()
    if any(k in open(setup["candidate"]).read() for k in ("compile", "dynamo", "inductor",
                                                          "torch_cudal1.templates")) or \
            any(k in task_text for k in ("# registers torch.ops.", "torch.ops.prims.",
                                         "torch.ops.higher_order.")):
        import torch._dynamo  # noqa: F401 - rebinds some torch functions when first imported
    ok, read = submit(_settings_now)
    if ok is not True:
        return fail("reading the process settings", read, ok)
    settings, switches = read
    slots = Slots(slot_fd, int(setup["slots"]), setup["specs"], device, keep_fd=False)
    # Mapped now, the file itself is let go (no descriptor of it is left in this process):
    # candidate code could map it again, or write it, and change a call's slot after the
    # harness copied the call's outputs there.
    os.close(slot_fd)
    if setup.get("calibrate"):
        # The judge times this process's harness on the reference before any candidate code
        # is here, so that it knows what the harness costs in this process, not in its own.
        if _calibrate(task, init, setup, slots, Inputs, Runner, quiet_cpu, send, recv,
                      req_fd, rep_fd, jobs) != "import":
            return 0
    snap = guards.snapshot()
    # bound before the candidate's code runs: rebinding them later changes nothing here
    changed = guards.sealed()["changed"]
    # torch's mode stacks and dispatch keys are per thread: the candidate's thread's own, read there
    ok, modes0 = submit(_thread_hooks)

    def rebound(_changed=changed, _snap=snap, _submit=submit, _modes0=modes0) -> list:
        out = _changed(_snap)[:20]
        ok, now = _submit(_thread_hooks)
        if ok is not True or now != _modes0:
            out.append("torch's modes or dispatch keys of the thread its calls run in")
        return out
    drawn = _drawing_copy(task)
    run_batch = Runner.run

    def violation(detail: str, _send_as=send_as, _rep_fd=rep_fd, _exit=os._exit) -> None:
        try:   # untagged: the audit hook holds this function, and a violation only rejects
            _send_as(_rep_fd, {"violation": detail})
        finally:
            _exit(0)

    if setup.get("sandboxed"):
        _not_dumpable()
    if env("CUDAL1_AUDIT") != "0":
        import _thread
        audit.install(setup.get("write_roots", []), violation, shared=not setup.get("isolate"),
                      harness_thread=_thread.get_ident(), trusted_code=audit.code_of(task),
                      harness_code=(candidate_thread._waiting.__code__,))
    phases["start_s"] = round(time.monotonic() - t0, 3)
    t1 = time.monotonic()
    hide(guards.HIDDEN)
    ok, cand = submit(_import_candidate, setup["candidate"])
    if ok is not True:   # SystemExit from candidate code is a verdict too
        return fail("import", cand, ok)
    if cand is None:
        send(rep_fd, {"error": {"where": "import", "type": "no_model_new",
                                "text": "candidate defines no class ModelNew"}})
        return 0
    ok, model = submit(_construct, cand, init, device, int(setup["seed0"]))
    if ok is not True:
        return fail("ModelNew(*init)", model, ok)
    # settings its import or construction changed hold during its calls only, as when served
    ok, scoped = submit(_scoped, model, settings)
    if ok is not True:
        return fail("ModelNew(*init)", scoped, ok)
    model, scoped = scoped
    state = None
    if setup.get("stateful"):
        ok, state = submit(ModuleState, model)
        if ok is not True:
            return fail("reading its state", state, ok)
    phases["build_s"] = round(time.monotonic() - t1, 3)
    runner = Runner(model, Inputs(drawn, device, real), slots, device, state=state,
                    own_file=setup["candidate"], settings=settings, switches=switches,
                    written=setup.get("written") or (), jobs=jobs)
    ok, moved = submit(global_settings.switches_moved, switches)
    send(rep_fd, {"ready": True, "phases": phases, "rebound": rebound(),
                  "switches_moved": moved if ok is True and type(moved) is str else "",
                  "scoped": scoped, "build_dir": os.environ.get("TORCH_EXTENSIONS_DIR")})
    while True:
        try:
            msg = recv(req_fd)
        except protocol.ProtocolError:
            return 0
        if msg.get("op") == "batch":
            host: dict = {}
            try:
                with quiet_cpu(host, threads):
                    reply = run_batch(runner, msg["calls"])
            except BaseException as e:  # noqa: BLE001 - the harness's own work failed (memory)
                reply = {"calls": [], "error": {"index": 0, "type": type(e).__name__,
                                                "text": chain_text(e)[-4000:]}}
            reply["involuntary_switches"] = host.get("involuntary_switches", 0)
            send(rep_fd, reply)
        elif msg.get("op") == "ping":
            send(rep_fd, {"pong": True})
        elif msg.get("op") == "check":   # functions rebound since the candidate was imported
            send(rep_fd, {"rebound": rebound()})
        else:
            return 0


# -- jobs: what runs in the candidate's thread (candidate_thread.py) ------------------------------
def _settings_now() -> tuple:
    from .. import global_settings
    return global_settings.snapshot(), global_settings.process_switches()


def _thread_hooks() -> tuple:
    """What of this thread would run code inside its torch calls (``guards.call_hooks``: the
    modes on torch's stacks, the dispatcher's thread-local keys), as exact strings."""
    modes, _, tls = guards.call_hooks()
    return tuple(str.__str__(x) if isinstance(x, str) else "?" for x in (*modes, *tls))


def _import_candidate(path: str):
    """The candidate's module, or None where it defines no class ``ModelNew``; named as a served
    winner's module is (``cache/winner.py``: ``cudal1_winner_<key>``)."""
    cand = _load(path, "cudal1_winner_" + os.urandom(16).hex())
    return cand if isinstance(getattr(cand, "ModelNew", None), type) else None


def _construct(cand, init: list, device: str, seed: int):
    import torch
    torch.manual_seed(seed)
    model = cand.ModelNew(*init)
    if isinstance(model, torch.nn.Module):
        model = model.to(device).eval()
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()
    return model


def _scoped(model, settings: dict) -> tuple:
    """``global_settings.scoped``: the model, and the changes it scoped described (or None)."""
    from .. import global_settings
    model, changes = global_settings.scoped(model, settings)
    return model, (str.__str__(global_settings.describe(changes)) if changes else None)


def _not_dumpable() -> None:
    """This process marked not dumpable (``prctl(PR_SET_DUMPABLE, 0)``) before the candidate's
    import: a process the candidate starts (a shell through a library's ``Popen``) shares its
    user inside the sandbox, and could otherwise open ``/proc/<worker>/mem`` and write any of
    this process's objects, the harness's key among them. The judge, outside the sandbox's user
    namespace, keeps reading this process's ``/proc`` files."""
    import ctypes
    try:
        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)   # PR_SET_DUMPABLE = 4
    except (OSError, AttributeError):
        pass


def _drawing_copy(task):
    """The task as the harness draws inputs from it: its functions as private copies
    (``guards.private``) whose modules (``torch``, ...) are this moment's namespaces. What a
    draw calls cannot then be swapped for one call and put back before the guards look (the
    work of a call done in the untimed draw): neither the task's ``get_inputs`` nor the
    ``torch.randn`` it calls."""
    import types

    return types.SimpleNamespace(**guards.private(task))


def _calibrate(task, init, setup, slots, Inputs, Runner, quiet_cpu, send, recv, req_fd,
               rep_fd, jobs) -> str:
    """Serve the judge's batches on the reference until it says ``import``: the op that ended
    the loop ("import", or whatever else, which ends the process). Its calls run in the
    candidate's thread, as the candidate's will: the judge learns what the harness costs."""
    from . import protocol
    from .errors import chain_text
    device = setup["device"]
    ok, ref = jobs.submit(_reference, task, init, device, int(setup["seed0"]))
    runner = None
    if ok is True:
        runner = Runner(ref, Inputs(task, device, None), slots, device, state=None, own_file=None,
                        settings=None, written=setup.get("written") or (), jobs=jobs)
        send(rep_fd, {"calibrating": True})
    else:   # the judge then judges without this figure
        send(rep_fd, {"calibrating": False, "text": ref[1][-2000:]})
        ref = None
    op = None
    try:
        while True:
            try:
                msg = recv(req_fd)
            except protocol.ProtocolError:
                return "bye"
            op = msg.get("op")
            if op == "batch" and runner is not None:
                try:
                    with quiet_cpu({}, (jobs.native_id,)):
                        reply = runner.run(msg["calls"])
                except BaseException as e:  # noqa: BLE001
                    reply = {"calls": [], "error": {"index": 0, "type": type(e).__name__,
                                                    "text": chain_text(e)[-2000:]}}
                send(rep_fd, reply)
            elif op == "ping":
                send(rep_fd, {"pong": True})
            else:
                return op
    finally:
        del ref, runner
        if str(device).startswith("cuda"):
            jobs.submit(_release_cuda)


def _reference(task, init: list, device: str, seed: int):
    import torch
    torch.manual_seed(seed)
    return task.Model(*init).to(device).eval()


def _release_cuda() -> None:
    import torch
    torch.cuda.synchronize()
    torch.cuda.empty_cache()

