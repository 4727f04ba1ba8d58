"""An edit over HTTP: the same EditRequest through a real `python -m llama_cpp.server` with the
demo model answers with clean code by the same answer rules as the local engine (no fences, the
region's trailing line break), streamed as it is written; the context is cut to the server's."""

from __future__ import annotations

from specterm.engine import EditRequest, Finished, SamplingSettings, TextDelta
from specterm.engine.remote.engine import RemoteEngine, RemoteSettings

from remote_servers import API_KEY

GREEDY = SamplingSettings(temperature=0.0)


async def run(engine, req: EditRequest) -> tuple[str, Finished]:
    shown, done = "", None
    async for ev in engine.stream(req):
        if isinstance(ev, TextDelta):
            shown += ev.text
        elif isinstance(ev, Finished):
            done = ev
    assert done is not None and done.answered, done
    return shown, done


async def test_a_remote_edit_streams_clean_code(llama_cpp_server):
    remote = RemoteEngine(RemoteSettings(url=llama_cpp_server.url, api_key=API_KEY, sampling=GREEDY, n_ctx=1024))
    big = "".join(f"def function_{i}(value):\n    return value * {i}\n\n" for i in range(400))
    try:
        for req in (
            EditRequest(instruction="Keep the code exactly as it is.", region="print('hello')\n", path="hello.py"),
            # a file far larger than the server's context: the context around the region is cut
            EditRequest(instruction="Rename the function mul to multiply.",
                        region="def mul(a, b):\n    return a * b", before=big, path="calc.py"),
        ):
            shown, done = await run(remote, req)
            assert shown == done.text and done.text.strip(), done
            assert "```" not in done.text
            assert done.text.endswith("\n") == req.region.endswith("\n")
            assert done.stats.tokens > 0
    finally:
        await remote.close()
