"""The managed server: `cudal1 engine start/status/stop` with tests/fake_llm_server.py standing in
for `vllm serve` (a real process, real HTTP)."""
import json
import shlex
import sys
from pathlib import Path

from engine_helpers import FAST, answer, make_task

from torch_cudal1.cli import main as cli_main
from torch_cudal1.engines import SearchContext, create
from torch_cudal1.engines.llm import server
from torch_cudal1.options import Options

FAKE = Path(__file__).resolve().parent / "fake_llm_server.py"


def test_start_status_use_stop(tmp_path, capsys):
    cache = tmp_path / "cache"
    script = tmp_path / "script.json"
    script.write_text(json.dumps([{"content": answer(FAST)}]))
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(FAKE))}"
    rc = cli_main(["engine", "start", "--model", "fake/coder", "--command", command,
                   "--args", f"--script {shlex.quote(str(script))} --ready-delay 1.0",
                   "--cache-dir", str(cache), "--ready-timeout", "60"])
    out = capsys.readouterr().out
    try:
        assert rc == 0, out
        state = server.read_state(cache)
        assert state and state["url"] in out and server.pid_alive(state["pid"])
        assert state["served"] == ["fake/coder"]
        assert cli_main(["engine", "status", "--cache-dir", str(cache), "--json"]) == 0
        st = json.loads(capsys.readouterr().out)
        assert st["running"] and st["ready"] and st["pid"] == state["pid"]
        # A second start is refused while the first runs.
        assert cli_main(["engine", "start", "--model", "m", "--command", command,
                         "--cache-dir", str(cache)]) == 1
        # engine=openai with no engine_url uses the recorded server (and its model).
        eng = create(Options.resolve({"engine": "openai", "cache_dir": str(cache)}, env={}))
        cands = eng.propose(make_task(), [], SearchContext(round=1, samples=1))
        eng.close()
        assert "torch.relu(x)" in cands[0].source and cands[0].meta["model"] == "fake/coder"
    finally:
        assert cli_main(["engine", "stop", "--cache-dir", str(cache)]) == 0
    assert "stopped" in capsys.readouterr().out
    assert not server.pid_alive(state["pid"])
    assert server.read_state(cache) is None and server.recorded_url(cache) is None
    assert cli_main(["engine", "status", "--cache-dir", str(cache)]) == 1


def test_start_reports_a_server_that_dies(tmp_path, capsys):
    cache = tmp_path / "cache"
    rc = cli_main(["engine", "start", "--model", "m", "--cache-dir", str(cache),
                   "--command", f"{shlex.quote(sys.executable)} -c 'import sys; print(\"boom\"); sys.exit(3)'"])
    err = capsys.readouterr().err
    assert rc == 1 and "exited with code 3" in err and "boom" in err
    assert server.read_state(cache) is None


def test_stale_state_is_not_used(tmp_path):
    cache = tmp_path / "cache"
    server._write_state(cache, {"url": "http://127.0.0.1:9/v1", "pid": 999999999, "argv": ["x"]})
    assert server.recorded_url(cache) is None
    assert server.stop(cache) is False and server.read_state(cache) is None
