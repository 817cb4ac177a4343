#!/usr/bin/env python3
"""A scripted model on 127.0.0.1 for driving the real agent CLIs through multi-turn scenarios.

Speaks OpenAI Responses (Codex), OpenAI Chat Completions (Qwen Code, OpenCode, Aider) and
Gemini (`:generateContent`, `:streamGenerateContent`). Stdlib only; not needed by the tests.

Script, per request: take the conversation's LAST user prompt. Usage: 120 input tokens (Codex,
Gemini: 20 of them cached; Claude Code: 100 + 20 cache-read) and 7 output a call; 5000 input for
a prompt that names "compaction" (Chat Completions, Responses), to push a CLI past its context
limit. If a tool result follows it, or
no shell-like tool is offered, answer with text naming the prompt. A prompt saying "subagent"
calls the subagent tool (OpenCode `task`, Qwen `agent`) with the prompt "Run echo hi in the
shell". Otherwise call the shell tool once: `ls /nonexistent-archive-mcp-dir` (fails) when the prompt says "fail", else
`echo hi`. Requests asking for a JSON schema (Gemini's router) get a schema-shaped object.

    python3 scriptllm.py --port 8712 --log requests.jsonl
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

SHELL_TOOLS = (
    "exec_command",
    "shell",
    "shell_command",
    "run_shell_command",
    "bash",
    "Bash",
    "Shell",
    "Execute",  # Factory Droid
    "run_commands",  # Cline 3 (`commands`: an array of command lines)
)
LOCK = threading.Lock()
LOG = "requests.jsonl"


CWD = ""  # the work dir of the CLI under test (--cwd): absolute paths for file tools
EDIT_TOOLS = (
    "Write",
    "write_file",
    "write",
    "WriteFile",
    "apply_patch",
    "create",
    "Create",
    "editor",
)  # creates hello.txt (Copilot `create`, Droid `Create`, Cline `editor`)
SHELL_EXTRA = {  # required fields some shell tools add (Factory Droid's Execute)
    "summary": "Run a shell command",
    "riskLevelReason": "It only runs one command in the project.",
    "riskLevel": "low",
}
PATCH = "*** Begin Patch\n*** Add File: hello.txt\n+hi\n*** End Patch\n"  # Codex apply_patch
SUMMARY = (
    "<analysis>The user ran shell commands.</analysis>\n<summary>1. The user ran echo hi and a "
    "failing ls. SCRIPTED-SUMMARY</summary>"
)


SUMMARY_ASKS = (
    "summary of the conversation",  # Claude Code
    "summarize the conversation",
    "context checkpoint compaction",  # Codex
    "<state_snapshot>",  # Gemini CLI, Qwen Code
    "here is the conversation so far",  # OpenCode
    "conversation to summarize",  # Pi
)


def is_summary_request(prompt: str) -> bool:
    low = prompt.lower()
    return any(ask in low for ask in SUMMARY_ASKS)


def command_for(prompt: str) -> str:
    if "sleep" in prompt.lower():  # long enough to be interrupted
        return "sleep 60"
    if "wait a minute" in prompt.lower():  # Qwen Code refuses `sleep` in the shell
        return "python3 -c 'import time; time.sleep(60)'"
    if "hello.txt" in prompt:  # a CLI with no file tool offered (Codex): the edit by the shell
        return "printf 'hi\\n' > hello.txt"
    return "ls /nonexistent-archive-mcp-dir" if "fail" in prompt.lower() else "echo hi"


def answer_for(prompt: str) -> str:
    return f"Done with: {prompt[:60]} SCRIPTED-ANSWER"


# Aider (no tools): a prompt naming hello.txt gets a SEARCH/REPLACE block creating it
AIDER_EDIT = (
    "I will create hello.txt.\n\nhello.txt\n```\n<<<<<<< SEARCH\n=======\nhi\n"
    ">>>>>>> REPLACE\n```\n"
)


def shell_args(name: str, schema: dict[str, Any] | None, cmd: str) -> dict[str, Any]:
    props = (schema or {}).get("properties") or {}
    if (props.get("commands") or {}).get("type") == "array":  # Cline's run_commands
        return {"commands": [cmd]}
    for key in ("command", "cmd"):
        if key in props:
            kind = (props[key] or {}).get("type")
            args: dict[str, Any] = {key: ["bash", "-lc", cmd] if kind == "array" else cmd}
            break
    else:
        args = {"command": cmd}
    if "description" in props:
        args["description"] = "Run a shell command"
    for key in (schema or {}).get("required") or []:
        if key not in args and key in props:
            args[key] = SHELL_EXTRA.get(key, example(props[key]))
    return args


SUBAGENT_TOOLS = ("task", "agent", "Task", "Agent", "spawn_agent", "invoke_agent")
# OpenCode, Qwen Code, Claude Code; Codex (multi_agent_v1), Gemini CLI


def edit_args(name: str, schema: dict[str, Any] | None) -> dict[str, Any]:
    if name == "apply_patch":
        return {"input": PATCH}
    props = (schema or {}).get("properties") or {}
    path = f"{CWD}/hello.txt" if CWD else "hello.txt"
    key = next(
        (k for k in ("file_path", "absolute_path", "filePath", "filepath", "path") if k in props),
        "path",
    )
    body = next((k for k in ("content", "file_text", "new_text") if k in props), "content")
    return {key: path, body: "hi\n"}


def pick(tools: list[tuple[str, Any]], prompt: str, answered: bool) -> tuple[str, dict] | None:
    if answered:
        return None
    by = dict(tools)
    if is_summary_request(prompt):
        return None
    if "hello.txt" in prompt:
        for name in EDIT_TOOLS:
            if name in by:
                return name, edit_args(name, by[name])
    if "subagent" in prompt.lower():
        for name in SUBAGENT_TOOLS:
            if name == "spawn_agent" and "task" in ((by.get(name) or {}).get("properties") or {}):
                return name, {
                    "systemPrompt": "You run shell commands.",
                    "task": "Run echo hi in the shell",
                }  # Cline
            if name == "spawn_agent" and name in by:
                return name, {"message": "Run echo hi in the shell"}
            if name == "invoke_agent" and name in by:
                return name, {"agent_name": "generalist", "prompt": "Run echo hi in the shell"}
            if name in by:
                props = (by[name] or {}).get("properties") or {}
                key = "agent_type" if "agent_type" in props else "subagent_type"  # Copilot's
                kinds = (props.get(key) or {}).get("enum") or [
                    "general-purpose" if name[0].isupper() else "general"
                ]
                kind = "general-purpose" if "general-purpose" in kinds else kinds[0]
                if "catalog" in str((props.get(key) or {}).get("description")):
                    kind = "worker"  # Factory Droid's catalog (no enum)
                args = {"description": "Print hi", "prompt": "Run echo hi in the shell", key: kind}
                if "name" in props:
                    args["name"] = "printer"
                return name, args
    for name in SHELL_TOOLS:
        if name in by:
            return name, shell_args(name, by[name], command_for(prompt))
    return None


def wait_for_agent(items: list[dict[str, Any]]) -> tuple[str, dict] | None:
    """Codex: after a spawn_agent result and no wait_agent call yet, wait for that agent."""
    spawned = {i.get("call_id") for i in items if i.get("name") == "spawn_agent"}
    if not spawned or any(i.get("name") == "wait_agent" for i in items):
        return None
    for i in items:
        if i.get("type") == "function_call_output" and i.get("call_id") in spawned:
            out = i.get("output")
            found = re.search(
                r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", str(out)
            )
            if found:
                return "wait_agent", {"targets": [found.group(0)], "timeout_ms": 30000}
    return None


def example(s: Any) -> Any:
    if not isinstance(s, dict):
        return "ok"
    if "enum" in s:
        return s["enum"][0]
    t = s.get("type")
    t = (t[0] if isinstance(t, list) else t or "object").lower()
    if t == "object":
        return {k: example(v) for k, v in (s.get("properties") or {}).items()}
    if t == "array":
        return [example(s.get("items") or {})]
    return 1 if t in ("integer", "number") else False if t == "boolean" else "ok"


REMINDER = re.compile(
    r"<system-reminder>.*?</system-reminder>\s*|<current_datetime>.*?</current_datetime>\s*"
    r"|<environment_details>.*?</environment_details>\s*",
    re.S,
)  # what Kimi Code, Copilot and Kilo add to a prompt


def text_of(content: Any) -> str:
    """A message's text, less the <system-reminder> blocks a CLI injects (Kimi Code)."""
    if isinstance(content, str):
        return REMINDER.sub("", content).strip()
    out = []
    for p in content if isinstance(content, list) else []:
        if isinstance(p, dict) and isinstance(p.get("text"), str):
            out.append(p["text"])
    return REMINDER.sub("", "\n".join(out)).strip()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a: Any) -> None:
        pass

    def _body(self) -> dict[str, Any]:
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            raw = b""
            while True:
                size = int(self.rfile.readline().strip().split(b";")[0], 16)
                if size == 0:
                    self.rfile.readline()
                    break
                raw += self.rfile.read(size)
                self.rfile.readline()
        try:
            return json.loads(raw) if raw else {}
        except ValueError:
            return {}

    def _json(self, obj: Any, code: int = 200) -> None:
        b = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(b)))
        self.end_headers()
        self.wfile.write(b)

    def _sse(self, events: list[Any], named: bool) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Connection", "close")
        self.end_headers()
        for ev in events:
            if ev == "[DONE]":
                chunk = "data: [DONE]\n\n"
            elif named:
                chunk = f"event: {ev['type']}\ndata: {json.dumps(ev)}\n\n"
            else:
                chunk = f"data: {json.dumps(ev)}\n\n"
            self.wfile.write(chunk.encode())
            self.wfile.flush()
        self.close_connection = True

    def do_GET(self) -> None:
        if self.path.split("?")[0].endswith("/models"):
            return self._json({"object": "list", "data": [{"id": "fake-model", "object": "model"}]})
        self._json({"error": "not found"}, 404)

    def do_POST(self) -> None:
        body = self._body()
        with LOCK, open(LOG, "a") as fh:
            fh.write(json.dumps({"t": time.time(), "path": self.path, "body": body}) + "\n")
        p = self.path.split("?")[0]
        try:
            if p.endswith("/messages/count_tokens"):
                return self._json({"input_tokens": 100})
            if p.endswith("/v1/messages"):
                return self.anthropic(body)
            if p.endswith("/responses"):
                return self.oai_responses(body)
            if p.endswith("/chat/completions"):
                return self.chat(body)
            if ":countTokens" in p:
                return self._json({"totalTokens": 100})
            if ":generateContent" in p or ":streamGenerateContent" in p:
                return self.gemini(body, ":streamGenerateContent" in p)
        except (BrokenPipeError, ConnectionResetError):
            return
        self._json({"error": {"message": "not found"}}, 404)

    def oai_responses(self, b: dict[str, Any]) -> None:
        items = [i for i in (b.get("input") or []) if isinstance(i, dict)]
        last = max(
            (
                k
                for k, i in enumerate(items)
                if i.get("type", "message") == "message"
                and i.get("role") == "user"
                and not text_of(i.get("content")).startswith("<subagent_notification>")
            ),
            default=-1,
        )
        prompt = text_of(items[last].get("content")) if last >= 0 else ""
        after = items[last + 1 :]
        answered = any(str(i.get("type", "")).endswith("_output") for i in after)
        spaces: dict[str, str] = {}  # a namespaced tool's namespace (Codex multi_agent_v1)
        tools: list[tuple[str, Any]] = []
        for t in b.get("tools") or []:
            for sub in t.get("tools") or []:
                spaces[sub.get("name")] = t.get("name")
                tools.append((sub.get("name"), sub.get("parameters")))
            tools.append((t.get("name"), t.get("parameters")))
        call = pick(tools, prompt, answered) or wait_for_agent(after)
        full = "compaction" in prompt.lower() and not is_summary_request(prompt)
        usage = {
            "input_tokens": 5000 if full else 120,  # a full context: Codex compacts it
            "input_tokens_details": {"cached_tokens": 20},
            "output_tokens": 7,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 5007 if full else 127,
        }
        if call and call[0] == "apply_patch":  # a freeform (custom) tool: raw input
            item = {
                "type": "custom_tool_call",
                "id": "ctc_" + uuid.uuid4().hex[:20],
                "call_id": "call_" + uuid.uuid4().hex[:20],
                "name": call[0],
                "input": call[1]["input"],
                "status": "completed",
            }
        elif call:
            item = {
                "type": "function_call",
                "id": "fc_" + uuid.uuid4().hex[:20],
                "call_id": "call_" + uuid.uuid4().hex[:20],
                "name": call[0],
                "arguments": json.dumps(call[1]),
                "status": "completed",
            }
            if call[0] in spaces:
                item["namespace"] = spaces[call[0]]
        else:
            text = SUMMARY if is_summary_request(prompt) else answer_for(prompt)
            item = {
                "type": "message",
                "id": "msg_" + uuid.uuid4().hex[:20],
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        resp = {
            "id": "resp_" + uuid.uuid4().hex[:24],
            "object": "response",
            "created_at": int(time.time()),
            "model": b.get("model", "fake-model"),
            "status": "completed",
            "output": [item],
            "usage": usage,
        }
        evs = [
            {"type": "response.created", "response": dict(resp, status="in_progress", output=[])},
            {"type": "response.output_item.added", "output_index": 0, "item": item},
        ]
        if not call:
            evs.append(
                {
                    "type": "response.output_text.delta",
                    "item_id": item["id"],
                    "output_index": 0,
                    "content_index": 0,
                    "delta": text,
                }
            )
        evs += [
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": resp},
        ]
        self._sse(evs, named=True)

    def anthropic(self, b: dict[str, Any]) -> None:
        msgs = [m for m in (b.get("messages") or []) if isinstance(m, dict)]

        def blocks(m: dict[str, Any]) -> list[dict[str, Any]]:
            c = m.get("content")
            if isinstance(c, str):
                return [{"type": "text", "text": c}]
            return [x for x in c if isinstance(x, dict)] if isinstance(c, list) else []

        def results(m: dict[str, Any]) -> bool:
            return any(x.get("type") == "tool_result" for x in blocks(m))

        last = max(
            (k for k, m in enumerate(msgs) if m.get("role") == "user" and not results(m)),
            default=-1,
        )
        prompt = "\n".join(
            str(x.get("text") or "")
            for x in (blocks(msgs[last]) if last >= 0 else [])
            if x.get("type") == "text"
            and not str(x.get("text") or "").lstrip().startswith("<system-reminder>")
        )
        answered = any(results(m) for m in msgs[last + 1 :])
        tools = [(t.get("name"), t.get("input_schema")) for t in b.get("tools") or []]
        call = pick([t for t in tools if t[0]], prompt, answered)
        mid, model = "msg_" + uuid.uuid4().hex[:24], b.get("model", "fake-model")
        usage = {
            "input_tokens": 100,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 20,
            "output_tokens": 7,
        }
        if call:
            block: dict[str, Any] = {
                "type": "tool_use",
                "id": "toolu_" + uuid.uuid4().hex[:20],
                "name": call[0],
                "input": call[1],
            }
            stop, start = "tool_use", dict(block, input={})
            delta = {"type": "input_json_delta", "partial_json": json.dumps(call[1])}
        else:
            text = SUMMARY if is_summary_request(prompt) else answer_for(prompt)
            block, stop = {"type": "text", "text": text}, "end_turn"
            start, delta = dict(block, text=""), {"type": "text_delta", "text": text}
        if not b.get("stream"):
            return self._json(
                {
                    "id": mid,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [block],
                    "stop_reason": stop,
                    "stop_sequence": None,
                    "usage": usage,
                }
            )
        head = {
            "id": mid,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": dict(usage, output_tokens=1),
        }
        self._sse(
            [
                {"type": "message_start", "message": head},
                {"type": "content_block_start", "index": 0, "content_block": start},
                {"type": "content_block_delta", "index": 0, "delta": delta},
                {"type": "content_block_stop", "index": 0},
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": stop, "stop_sequence": None},
                    "usage": {"output_tokens": 7},
                },
                {"type": "message_stop"},
            ],
            named=True,
        )

    def chat(self, b: dict[str, Any]) -> None:
        msgs = [m for m in (b.get("messages") or []) if isinstance(m, dict)]
        last = max(  # a reminder-only user message (Kimi Code) is no prompt
            (
                k
                for k, m in enumerate(msgs)
                if m.get("role") == "user" and text_of(m.get("content"))
            ),
            default=-1,
        )
        prompt = text_of(msgs[last].get("content")) if last >= 0 else ""
        answered = any(m.get("role") == "tool" for m in msgs[last + 1 :])
        tools = [
            ((t.get("function") or {}).get("name"), (t.get("function") or {}).get("parameters"))
            for t in b.get("tools") or []
            if isinstance(t, dict)
        ]
        call = pick(tools, prompt, answered)
        cid, now = "chatcmpl-" + uuid.uuid4().hex[:20], int(time.time())
        usage = {"prompt_tokens": 120, "completion_tokens": 7, "total_tokens": 127}
        if "compaction" in prompt.lower() and not is_summary_request(prompt):
            # a context this full makes the CLI compact the session (OpenCode: past its limit)
            usage = {"prompt_tokens": 5000, "completion_tokens": 7, "total_tokens": 5007}
        if call:
            tc = {
                "id": "call_" + uuid.uuid4().hex[:20],
                "type": "function",
                "function": {"name": call[0], "arguments": json.dumps(call[1])},
            }
            msg: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": [tc]}
            delta: dict[str, Any] = {"tool_calls": [dict(tc, index=0)]}
            finish = "tool_calls"
        else:
            text = SUMMARY if is_summary_request(prompt) else answer_for(prompt)
            if not tools and "hello.txt" in prompt and "SEARCH/REPLACE" in json.dumps(msgs[:1]):
                text = AIDER_EDIT
            msg = {"role": "assistant", "content": text}
            delta, finish = {"content": text}, "stop"
        base = {
            "id": cid,
            "object": "chat.completion.chunk",
            "created": now,
            "model": b.get("model", "fake-model"),
        }
        if not b.get("stream"):
            return self._json(
                dict(
                    base,
                    object="chat.completion",
                    usage=usage,
                    choices=[{"index": 0, "message": msg, "finish_reason": finish}],
                )
            )
        evs: list[Any] = [
            dict(base, choices=[{"index": 0, "delta": {"role": "assistant", "content": ""}}]),
            dict(base, choices=[{"index": 0, "delta": delta, "finish_reason": None}]),
            dict(base, choices=[{"index": 0, "delta": {}, "finish_reason": finish}]),
            dict(base, choices=[], usage=usage),
            "[DONE]",
        ]
        self._sse(evs, named=False)

    def gemini(self, b: dict[str, Any], stream: bool) -> None:
        contents = [c for c in (b.get("contents") or []) if isinstance(c, dict)]

        def is_prompt(c: dict[str, Any]) -> bool:
            parts = c.get("parts") or []
            return (
                c.get("role") == "user"
                and any(isinstance(p, dict) and "text" in p for p in parts)
                and not any(isinstance(p, dict) and "functionResponse" in p for p in parts)
            )

        last = max((k for k, c in enumerate(contents) if is_prompt(c)), default=-1)
        texts = [p for p in (contents[last].get("parts") or []) if "text" in p] if last >= 0 else []
        prompt = text_of(texts[-1:])  # the prompt follows the <session_context> part
        answered = any(
            isinstance(p, dict) and "functionResponse" in p
            for c in contents[last + 1 :]
            for p in c.get("parts") or []
        )
        gc = b.get("generationConfig") or {}
        schema = gc.get("responseJsonSchema") or gc.get("responseSchema")
        tools = [
            (fd.get("name"), fd.get("parametersJsonSchema") or fd.get("parameters"))
            for t in b.get("tools") or []
            for fd in t.get("functionDeclarations") or []
        ]
        call = None if schema else pick(tools, prompt, answered)
        finish = dict(tools).get("complete_task")  # a Gemini subagent ends by this call
        if answered and finish and not schema:
            call = ("complete_task", {"result": {"response": answer_for(prompt)}})
        if schema:
            parts: list[dict[str, Any]] = [{"text": json.dumps(example(schema))}]
        elif call:
            parts = [{"functionCall": {"name": call[0], "args": call[1]}}]
        else:
            parts = [{"text": SUMMARY if is_summary_request(prompt) else answer_for(prompt)}]
        resp = {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": 120,
                "candidatesTokenCount": 7,
                "cachedContentTokenCount": 20,
                "totalTokenCount": 127,
            },
            "modelVersion": "fake-model",
        }
        if stream and "alt=sse" in self.path:
            return self._sse([resp], named=False)
        self._json([resp] if stream else resp)


def main() -> None:
    global LOG, CWD
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=8712)
    ap.add_argument("--log", default="requests.jsonl")
    ap.add_argument("--cwd", default="", help="the CLI's work dir (absolute paths for file tools)")
    args = ap.parse_args()
    LOG, CWD = args.log, args.cwd
    print(f"[scriptllm] 127.0.0.1:{args.port}", file=sys.stderr, flush=True)
    ThreadingHTTPServer(("127.0.0.1", args.port), Handler).serve_forever()


if __name__ == "__main__":
    main()
