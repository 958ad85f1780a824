"""The runtime's new pure parts: ctx.kv, edgeone.json, traces.jsonl, bodies, sse, results."""

from __future__ import annotations

import asyncio
import json
import math
import multiprocessing
from pathlib import Path

import pytest

from makers_store.emulator.runtime import sse
from makers_store.emulator.runtime.errors import ServeError
from makers_store.emulator.runtime.platform_choices import FRAMEWORK_WHEN_ABSENT
from makers_store.emulator.runtime.project import edgeone
from makers_store.emulator.runtime.worker import trace_log
from makers_store.emulator.runtime.worker.context import AbortActiveRunResult
from makers_store.emulator.runtime.worker.kv import KVSpaces
from makers_store.emulator.runtime.worker.request_body import parse_body
from makers_store.emulator.runtime.worker.responses import is_graph_interrupt
from makers_store.emulator.runtime.worker.tracing import Tracer
from makers_store.errors import MemoryValidationError


def test_kv_get_set_delete_list() -> None:
    async def scenario() -> None:
        spaces = KVSpaces()
        kv = spaces.for_route("agents/a.py")
        assert spaces.for_route("agents/a.py") is kv
        assert await kv.get("k") is None
        await kv.set("k", '{"n": 1}')
        assert await kv.get("k", type="text") == '{"n": 1}'
        assert await kv.get("k", type="json") == {"n": 1}
        await kv.set("k2", "not json")
        with pytest.raises(MemoryValidationError, match="not JSON"):
            await kv.get("k2", type="json")
        assert await kv.list() == ["k", "k2"]
        assert await kv.list("k2") == ["k2"]
        assert await spaces.for_route("agents/b.py").list() == []
        await kv.delete("k")
        await kv.delete("k")
        assert await kv.list() == ["k2"]
        for bad_value in (1, b"x", {"a": 1}, None):
            with pytest.raises(MemoryValidationError, match="value must be a str"):
                await kv.set("v", bad_value)  # type: ignore[arg-type]
        for bad_key in ("", 3, "a\nb", "x" * 513, "\ud800"):
            with pytest.raises(MemoryValidationError, match=r"kv\.set: key"):
                await kv.set(bad_key, "v")  # type: ignore[arg-type]
        with pytest.raises(MemoryValidationError, match="type must be"):
            await kv.get("k2", type="bytes")
        assert await kv.list() == ["k2"]  # refused calls changed nothing

    asyncio.run(scenario())


def write(tmp_path: Path, text: str) -> Path:
    (tmp_path / "edgeone.json").write_text(text, encoding="utf-8")
    return tmp_path


def test_edgeone_config(tmp_path: Path) -> None:
    assert edgeone.read_agents_config(tmp_path).framework == FRAMEWORK_WHEN_ABSENT
    config = edgeone.read_agents_config(
        write(tmp_path, '{"agents": {"framework": "crewai", "timeout": 300, "runtime": "python",'
                        ' "sandbox": {"timeout": 300}}, "cloudFunctions": {}}')
    )
    assert (config.framework, config.timeout_s, config.warnings) == ("crewai", 300.0, ())
    unknown = edgeone.read_agents_config(write(tmp_path, '{"agents": {"framework": "basic"}}'))
    assert unknown.framework == FRAMEWORK_WHEN_ABSENT
    assert "'basic' is not one the platform knows" in unknown.warnings[0]
    assert edgeone.read_agents_config(write(tmp_path, '{"buildCommand": "x"}')).timeout_s is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{\n "agents": {,}\n}', r"edgeone\.json:2:\d+: not valid JSON"),
        ("[1]", "top level must be a JSON object"),
        ('{"agents": 3}', '"agents" must be an object'),
        ('{"agents": {"framework": 1}}', "agents.framework must be a string"),
        ('{"agents": {"timeout": "30"}}', "agents.timeout must be a positive number"),
        ('{"agents": {"timeout": 0}}', "agents.timeout must be a positive number"),
        ('{"agents": {"timeout": true}}', "agents.timeout must be a positive number"),
    ],
)
def test_edgeone_config_errors(tmp_path: Path, text: str, message: str) -> None:
    with pytest.raises(ServeError, match=message):
        edgeone.read_agents_config(write(tmp_path, text))


def test_parse_body() -> None:
    assert parse_body(b"") == {}
    assert parse_body(b"  \n") == {}
    assert parse_body('{"a": "é"}'.encode()) == {"a": "é"}
    assert parse_body(b'{"a": "\\ud83d\\ude00"}') == {"a": "😀"}  # a proper pair is fine
    for raw in (b"{", b"\xff", b'{"a": "\\ud800"}', b'{"\\udc00": 1}', b"[" * 50_000,
                b"[" * 50_000 + b"]" * 50_000):
        with pytest.raises(ValueError, match="not valid JSON"):
            parse_body(raw)
    # for a Node route, as JSON.parse reads it: no NaN, lone surrogates allowed
    assert parse_body(b'{"a": "\\ud800"}', javascript=True) == {"a": "\ud800"}
    assert math.isnan(parse_body(b"[NaN]")[0])  # Python's json takes it
    for raw, constant in ((b"[NaN]", "NaN"), (b'{"a": -Infinity}', "-Infinity")):
        with pytest.raises(ValueError, match=f"not valid JSON: {constant} is not JSON"):
            parse_body(raw, javascript=True)


def test_sse_falls_back_to_str_once_per_type(caplog: pytest.LogCaptureFixture) -> None:
    class Thing:
        def __str__(self) -> str:
            return "a thing"

    assert sse.sse("[DONE]", event="end") == b"event: end\ndata: [DONE]\n\n"
    with caplog.at_level("WARNING", logger="makers_store.serve"):
        assert sse.sse(Thing()) == b"data: a thing\n\n"
        assert sse.sse(Thing()) == b"data: a thing\n\n"
    assert [r.getMessage() for r in caplog.records].count(
        "sse(): Thing data is not JSON-encodable; sent as str(data), as the platform does "
        "(a Python repr on the wire; convert it to a dict yourself)"
    ) == 1
    response = sse.StreamResponse.sse(iter([1]), headers={"x": "y"})
    assert isinstance(response, sse.StreamResponse) and response.headers == {"x": "y"}


def test_abort_result_is_a_truthy_json_encodable_dataclass() -> None:
    idle = AbortActiveRunResult(False, "c", None)
    assert bool(idle) is True
    assert json.loads(sse.dumps({"r": idle})) == {
        "r": {"aborted": False, "conversation_id": "c", "run_id": None}
    }


def test_tracer_api() -> None:
    tracer = Tracer("run_x")
    assert not hasattr(tracer, "record_exception")
    tracer.set_attributes({"a": 1})
    tracer.set_attribute("b", 2)
    with pytest.raises(TypeError, match="must be a dict"):
        tracer.set_attributes([("a", 1)])  # type: ignore[arg-type]
    span = tracer.start_span("one", {"x": 1})
    span.end()
    tracer.start_span("two", attributes={"y": 2})  # never ended
    record = trace_log.build_record(
        tracer, status="ok", conversation_id="", route="/r", file="agents/r.py", instance=1
    )
    assert record["attributes"] == {"a": 1, "b": 2}
    assert [(s["name"], s["duration_ms"] is None) for s in record["spans"]] == [
        ("one", False), ("two", True)
    ]
    assert "spans=[one " in tracer.summary("ok") and "two open" in tracer.summary("ok")


def test_graph_interrupt_is_recognised_by_class() -> None:
    from langgraph.errors import GraphInterrupt

    class Subclass(GraphInterrupt):
        pass

    assert is_graph_interrupt(GraphInterrupt(()))
    assert is_graph_interrupt(Subclass(()))
    assert not is_graph_interrupt(ValueError("GraphInterrupt"))


def _append_many(path: str, worker: int) -> None:
    for n in range(200):
        record = {"run_id": f"run_{worker}_{n}", "pad": "x" * 500}
        trace_log.append_record(Path(path), record)


def test_trace_file_is_safe_with_many_writers_and_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / ".makers-store" / "traces.jsonl"
    context = multiprocessing.get_context("fork")
    processes = [context.Process(target=_append_many, args=(str(path), w)) for w in range(4)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(60)
        assert process.exitcode == 0
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 800
    assert all(json.loads(line)["pad"] == "x" * 500 for line in lines)  # no torn lines

    monkeypatch.setattr(trace_log, "MAX_FILE_BYTES", 10_000)
    for n in range(100):
        trace_log.append_record(path, {"run_id": f"run_r{n}", "pad": "y" * 500})
    assert path.stat().st_size < 11_000
    rotated = path.with_name("traces.jsonl.1")
    assert rotated.stat().st_size < 11_000
    newest = trace_log.recent_records(path, 5)
    assert [r["run_id"] for r in newest] == [f"run_r{n}" for n in range(99, 94, -1)]
    both = trace_log.recent_records(path, 20)  # more than the current file holds
    assert [r["run_id"] for r in both] == [f"run_r{n}" for n in range(99, 79, -1)]


def test_oversized_trace_records_are_trimmed() -> None:
    record = {"run_id": "run_big", "attributes": {"x": "z" * 400_000}, "spans": []}
    data = trace_log.encode_record(record)
    assert len(data) < trace_log.MAX_RECORD_BYTES
    assert json.loads(data)["truncated"] is True
