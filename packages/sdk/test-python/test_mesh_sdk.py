"""mesh_sdk's own tests, without a bus (python3 -m unittest; run by packages/sdk's
language-sdk-units.test.ts).

A fake bridge on a Unix socket speaks the bridge's JSON lines (decision 0161), so the SDK's side of
the wire is checked here: asks and their answers, coded refusals, config watches, and tool calls
with their input checks. What the SDK does on a real bus, through the real bridge, is tested
against the TypeScript SDK in packages/sdk/src/language-sdks.test.ts.
"""

import json
import os
import socket
import sys
import tempfile
import threading
import unittest
import unittest.mock

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "python"))

import mesh_sdk  # noqa: E402


class FakeBridge:
    """Answers each ask with answer(message), records what the program sent, pushes events."""

    def __init__(self, answer):
        self._answer = answer
        self.asked = []
        self.replies = []
        self._got_reply = threading.Condition()
        self._folder = tempfile.TemporaryDirectory()
        self.path = os.path.join(self._folder.name, "api.sock")
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(self.path)
        self._server.listen(1)
        self._connection = None
        self._ready = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        self._connection, _ = self._server.accept()
        self._file = self._connection.makefile("rwb")
        self._ready.set()
        for line in self._file:
            message = json.loads(line)
            if message.get("op") == "reply":
                with self._got_reply:
                    self.replies.append(message)
                    self._got_reply.notify_all()
                continue
            self.asked.append(message)
            answer = self._answer(message)
            if answer is not None:
                self.push({"id": message["id"], **answer})

    def push(self, message):
        self._ready.wait(10)
        self._file.write((json.dumps(message) + "\n").encode("utf-8"))
        self._file.flush()

    def reply_to(self, call):
        with self._got_reply:
            self._got_reply.wait_for(lambda: any(r["call"] == call for r in self.replies), 10)
            return next(r for r in self.replies if r["call"] == call)

    def close(self):
        if self._connection is not None:
            self._connection.close()
        self._server.close()
        self._folder.cleanup()


def answers(table):
    """An answer function from op to value (a MeshError answers with its code)."""

    def answer(message):
        value = table.get(message["op"])
        if callable(value):
            value = value(message)
        if isinstance(value, mesh_sdk.MeshError):
            return {"ok": False, "code": value.code, "message": value.message}
        return {"ok": True, "value": value}

    return answer


HELLO = {"module": "greeter", "node": "n1", "version": "0.1.0"}


class Connected(unittest.TestCase):
    table = {}

    def setUp(self):
        self.bridge = FakeBridge(answers({"hello": HELLO, **self.table}))
        self.mesh = mesh_sdk.connect(self.bridge.path)

    def tearDown(self):
        self.mesh.close()
        self.bridge.close()


class Asks(Connected):
    table = {
        "config.get": lambda m: {"greeting": "Hej"}.get(m["key"]),
        "state.get": lambda m: {"total": 41}.get(m["key"]),
        "state.put": None,
        "state.delete": None,
        "state.keys": lambda m: ["a.1", "a.2"] if m.get("filter") == "a.*" else ["a.1", "a.2", "b"],
        "call": lambda m: {"text": f"hello, {m['input'].get('name')}"}
        if m["tool"] == "hello/greet" and isinstance(m["input"], dict)
        else {"echo": m["input"]}
        if m["tool"] == "hello/greet"
        else mesh_sdk.MeshError("NOT_FOUND", "nothing serves it"),
        "keeps": None,
        "condition": None,
    }

    def test_hello_names_the_module_and_node(self):
        self.assertEqual((self.mesh.module, self.mesh.node), ("greeter", "n1"))

    def test_each_call_is_the_ask_the_bridge_answers(self):
        notes = self.mesh.state("notes")
        self.assertEqual(self.mesh.config.get("greeting"), "Hej")
        self.assertEqual(notes.get("total"), 41)
        notes.put("total", 42)
        notes.delete("total")
        self.assertEqual(notes.keys(), ["a.1", "a.2", "b"])
        self.assertEqual(notes.keys("a.*"), ["a.1", "a.2"])
        self.assertEqual(self.mesh.call("hello/greet", {"name": "Ada"}), {"text": "hello, Ada"})
        self.mesh.call("hello/greet", {"name": "Ada"}, node="n2", timeout_ms=2000)
        self.mesh.keeps([{"name": "notes", "readable": True}])
        self.mesh.condition("ready", "info", "serving")
        sent = [{k: v for k, v in m.items() if k != "id"} for m in self.bridge.asked[1:]]
        self.assertEqual(
            sent,
            [
                {"op": "config.get", "key": "greeting"},
                {"op": "state.get", "state": "notes", "key": "total"},
                {"op": "state.put", "state": "notes", "key": "total", "value": 42},
                {"op": "state.delete", "state": "notes", "key": "total"},
                {"op": "state.keys", "state": "notes"},
                {"op": "state.keys", "state": "notes", "filter": "a.*"},
                {"op": "call", "tool": "hello/greet", "input": {"name": "Ada"}},
                {"op": "call", "tool": "hello/greet", "input": {"name": "Ada"}, "node": "n2", "timeoutMs": 2000},
                {"op": "keeps", "states": [{"name": "notes", "readable": True}]},
                {"op": "condition", "name": "ready", "level": "info", "message": "serving"},
            ],
        )
        ids = [m["id"] for m in self.bridge.asked]
        self.assertEqual(len(set(ids)), len(ids), "every ask has its own id")

    def test_a_call_sends_the_input_it_is_given_even_when_falsy(self):
        self.mesh.call("hello/greet", [])
        self.mesh.call("hello/greet", 0, timeout_ms=0)
        self.mesh.call("hello/greet")
        sent = [{k: v for k, v in m.items() if k != "id"} for m in self.bridge.asked[-3:]]
        self.assertEqual(
            sent,
            [
                {"op": "call", "tool": "hello/greet", "input": []},
                {"op": "call", "tool": "hello/greet", "input": 0, "timeoutMs": 0},
                {"op": "call", "tool": "hello/greet", "input": {}},
            ],
        )

    def test_read_secret_is_the_declared_files_content_stripped(self):
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, "api-token")
            with open(path, "w", encoding="utf-8") as f:
                f.write("  s3cret\n")
            env = {"MESH_SECRET_FILES": json.dumps({"api-token": path}), "MESH_SECRETS_DIR": folder}
            with unittest.mock.patch.dict(os.environ, env):
                self.assertEqual(self.mesh.read_secret("api-token"), "s3cret")
                self.assertEqual(self.mesh.secret_path("api-token"), path)
                with self.assertRaises(mesh_sdk.MeshError) as refused:
                    self.mesh.read_secret("other")
                self.assertEqual(refused.exception.code, "NOT_FOUND")

    def test_a_refusal_is_a_mesh_error_with_its_code(self):
        with self.assertRaises(mesh_sdk.MeshError) as refused:
            self.mesh.call("hello/missing")
        self.assertEqual(refused.exception.code, "NOT_FOUND")
        self.assertIn("nothing serves it", str(refused.exception))

    def test_asks_from_many_threads_each_get_their_own_answer(self):
        got = {}

        def ask(i):
            got[i] = self.mesh.call("hello/greet", {"name": str(i)})

        threads = [threading.Thread(target=ask, args=(i,)) for i in range(20)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        self.assertEqual(got, {i: {"text": f"hello, {i}"} for i in range(20)})


class Watches(Connected):
    table = {"config.watch": None}

    def test_a_watch_hears_its_values_and_refusals(self):
        seen, refused, done = [], [], threading.Event()

        def on_value(value):
            seen.append(value)
            if len(seen) == 2:
                done.set()

        self.mesh.config.watch("greeting", on_value, refused.append)
        watch = self.bridge.asked[-1]["watch"]
        self.bridge.push({"event": "config", "watch": watch, "value": "Hello"})
        self.bridge.push({"event": "config", "watch": watch + 1000, "value": "not this watch's"})
        self.bridge.push({"event": "config", "watch": watch, "refused": "no config value greeting"})
        self.bridge.push({"event": "config", "watch": watch, "value": "Hej"})
        self.assertTrue(done.wait(10))
        self.assertEqual(seen, ["Hello", "Hej"])
        self.assertEqual(refused, ["no config value greeting"])


class Tools(Connected):
    table = {"serve": lambda m: {"tools": len(m["tools"])}}

    def setUp(self):
        super().setUp()
        schema = {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}

        @self.mesh.tool("greet", "Greets someone.", schema)
        def greet(input):
            if input["name"] == "nobody":
                raise mesh_sdk.ToolError("NOT_FOUND", "no one by that name")
            if input["name"] == "crash":
                raise RuntimeError("secret detail")
            return {"text": f"Hello, {input['name']}!"}

        self.mesh.serve()

    def call(self, number, input, tool="greet"):
        self.bridge.push({"event": "call", "call": number, "tool": tool, "input": input, "timeoutMs": 1000})
        return self.bridge.reply_to(number)

    def test_serve_sends_the_tools_without_their_handlers(self):
        self.assertEqual(
            self.bridge.asked[-1]["tools"],
            [
                {
                    "name": "greet",
                    "description": "Greets someone.",
                    "input": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
                }
            ],
        )

    def test_a_call_is_answered_with_the_handlers_value(self):
        self.assertEqual(self.call(1, {"name": "Ada"}), {"op": "reply", "call": 1, "ok": True, "value": {"text": "Hello, Ada!"}})

    def test_bad_input_is_refused_before_the_handler(self):
        reply = self.call(2, {"name": 7})
        self.assertEqual((reply["ok"], reply["code"]), (False, "INVALID_INPUT"))
        self.assertIn("input.name is int, where string is expected", reply["message"])

    def test_a_tool_error_answers_with_its_code_and_a_crash_hides_its_detail(self):
        refused = self.call(3, {"name": "nobody"})
        self.assertEqual((refused["code"], refused["message"]), ("NOT_FOUND", "no one by that name"))
        crashed = self.call(4, {"name": "crash"})
        self.assertEqual(crashed["code"], "INTERNAL")
        self.assertNotIn("secret detail", crashed["message"])

    def test_an_unknown_tool_is_not_found(self):
        self.assertEqual(self.call(5, {}, tool="other")["code"], "NOT_FOUND")


class WithoutAConnection(unittest.TestCase):
    def test_connect_without_the_socket_says_how_to_get_one(self):
        saved = os.environ.pop(mesh_sdk.SOCKET_ENV, None)
        try:
            with self.assertRaises(mesh_sdk.MeshError) as refused:
                mesh_sdk.connect()
            self.assertEqual(refused.exception.code, "CREDENTIAL_INVALID")
            self.assertIn("own-secrets", refused.exception.message)
        finally:
            if saved is not None:
                os.environ[mesh_sdk.SOCKET_ENV] = saved

    def test_secret_path_is_the_declared_file(self):
        env = {"MESH_SECRET_FILES": json.dumps({"api-token": "/run/mesh/api-token"}), "MESH_SECRETS_DIR": "/run/mesh"}
        with unittest.mock.patch.dict(os.environ, env):
            self.assertEqual(mesh_sdk.secret_path("api-token"), "/run/mesh/api-token")
            with self.assertRaises(mesh_sdk.MeshError) as refused:
                mesh_sdk.secret_path("other")
            self.assertEqual(refused.exception.code, "NOT_FOUND")
            self.assertIn("not declared in own-secrets", refused.exception.message)

    def test_secret_path_outside_a_mesh_host_says_so(self):
        with unittest.mock.patch.dict(os.environ, {"MESH_SECRET_FILES": "", "MESH_SECRETS_DIR": ""}):
            with self.assertRaises(mesh_sdk.MeshError) as refused:
                mesh_sdk.secret_path("api-token")
            self.assertIn("not started by a mesh host", refused.exception.message)


class CheckInput(unittest.TestCase):
    schema = {
        "type": "object",
        "required": ["name"],
        "properties": {
            "name": {"type": "string"},
            "count": {"type": "integer"},
            "ratio": {"type": "number"},
            "mood": {"enum": ["glad", "sad"]},
            "tags": {"type": "array", "items": {"type": "string"}},
            "note": {"type": ["string", "null"]},
        },
    }

    def test_the_cases(self):
        cases = [
            ({"name": "Ada"}, []),
            ({"name": "Ada", "count": 3, "ratio": 0.5, "mood": "glad", "tags": ["a"], "note": None}, []),
            ({}, ["input.name is required"]),
            ([], ["input is list, where object is expected"]),
            ({"name": "Ada", "count": True}, ["input.count is bool, where integer is expected"]),
            ({"name": "Ada", "count": 1.5}, ["input.count is float, where integer is expected"]),
            ({"name": "Ada", "ratio": False}, ["input.ratio is bool, where number is expected"]),
            ({"name": "Ada", "mood": "cross"}, ["input.mood is 'cross', not one of ['glad', 'sad']"]),
            ({"name": "Ada", "tags": ["a", 2]}, ["input.tags[1] is int, where string is expected"]),
            ({"name": "Ada", "note": 1}, ["input.note is int, where string or null is expected"]),
        ]
        for value, want in cases:
            with self.subTest(value=value):
                self.assertEqual(mesh_sdk.check_input(self.schema, value), want)


if __name__ == "__main__":
    unittest.main()
