"""``cudal1 engine start|status|stop|transcript-from-kernelbench``: the managed model server and
replay transcripts."""
from __future__ import annotations

import json
import shlex
import sys

from ._common import UsageError


def register(sub) -> None:
    from ._common import COMMON, add_parser
    p = add_parser(sub, "engine", __doc__,
                   help="manage a local model server (vllm serve) and transcripts")
    esub = p.add_subparsers(dest="engine_command", metavar="ACTION")

    def action(name: str, help: str):
        return esub.add_parser(name, parents=[COMMON], help=help, description=help)

    s = action("start", "launch `vllm serve MODEL` (or --command), wait until ready, record its "
                        "URL for later runs")
    s.add_argument("--model", required=True, help="model to serve")
    s.add_argument("--port", type=int, default=None, help="default: a free port")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    s.add_argument("--command", default="vllm serve",
                   help="server command; MODEL --host H --port P are appended (default: vllm serve)")
    s.add_argument("--args", default="", help="extra server arguments, one shell-quoted string "
                                              "(e.g. \"--gpu-memory-utilization 0.5\")")
    s.add_argument("--ready-timeout", type=float, default=1800.0, metavar="S",
                   help="seconds to wait for the server to answer (default 1800)")
    s.set_defaults(func=_start)

    st = action("status", "show the managed server")
    st.add_argument("--json", action="store_true", help="one JSON object")
    st.set_defaults(func=_status)

    sp = action("stop", "stop the managed server")
    sp.set_defaults(func=_stop)

    t = action("transcript-from-kernelbench",
               "convert KernelBench/CUDA-L1 solution rows into a replay transcript")
    t.add_argument("jsonl", help="KernelBench/CUDA-L1 rows (JSON lines)")
    t.add_argument("out", help="transcript to write")
    t.set_defaults(func=_transcript)

    p.set_defaults(func=lambda args: (p.print_help(), 2)[1])


def _cache_dir(args) -> str:
    from ._common import resolve_options
    return resolve_options(args=args).cache_dir


def _start(args) -> int:
    from ..engines.llm import server
    try:
        state = server.start(args.model, cache_dir=_cache_dir(args), port=args.port, host=args.host,
                             command=args.command, extra_args=shlex.split(args.args),
                             ready_timeout_s=args.ready_timeout,
                             say=lambda m: print(m, file=sys.stderr, flush=True))
    except server.ServerError as e:
        print(f"cudal1: {e}", file=sys.stderr)
        return 1
    print(f"ready: {state['url']} (pid {state['pid']}, serving {', '.join(state['served'] or [])})")
    print("runs with engine=openai and no engine_url now use this server")
    return 0


def _status(args) -> int:
    from ..engines.llm import server
    st = server.status(_cache_dir(args))
    if args.json:
        print(json.dumps(st))
    elif not st.get("pid"):
        print("no managed server")
    else:
        state = "ready" if st["ready"] else ("running, not answering" if st["running"] else "not running")
        print(f"{state}: {st['url']} pid {st['pid']} model {st.get('model')} log {st.get('log')}")
    return 0 if st.get("running") and st.get("ready") else 1


def _stop(args) -> int:
    from ..engines.llm import server
    was = server.stop(_cache_dir(args))
    print("stopped" if was else "no managed server was running")
    return 0


def _transcript(args) -> int:
    from ..engines.base import EngineError
    from ..engines.replay import kernelbench_to_transcript
    try:
        n = kernelbench_to_transcript(args.jsonl, args.out)
    except EngineError as e:
        raise UsageError(str(e)) from None
    print(f"wrote {n} answers to {args.out}")
    return 0
