"""mesh_sdk: what a Python module's process imports to reach the mesh (decision 0161).

Standard library only. The process runs under the mesh's bridge, which holds the module's bus
credential and serves a Unix socket named by MESH_API_SOCKET (mode 0600, this process's user
only); this module speaks JSON lines over it.

    import mesh_sdk
    mesh = mesh_sdk.connect()
    greeting = mesh.config.get("greeting")
    mesh.config.watch("greeting", lambda value: ...)
    token = mesh.read_secret("api-token")
    mesh.state("greetings").put("last", {"name": "Ada"})
    mesh.condition("ready", "info", "serving")

    @mesh.tool("greet", "Greets someone.", {"type": "object",
              "properties": {"name": {"type": "string"}}, "required": ["name"]})
    def greet(input):
        return {"text": f"{greeting}, {input['name']}!"}

    mesh.serve()          # the tools above, on the bus as the module's NATS service
    mesh.wait()           # until SIGTERM
"""

import json
import os
import signal
import socket
import threading

__all__ = ["connect", "Mesh", "MeshError", "ToolError", "secret_path"]

SOCKET_ENV = "MESH_API_SOCKET"


class MeshError(Exception):
    """A refusal from the mesh, with its permanent code (REFUSED, NOT_FOUND, INVALID_INPUT, …)."""

    def __init__(self, code, message):
        super().__init__(f"{message} [{code}]")
        self.code = code
        self.message = message


class ToolError(MeshError):
    """Raised in a tool to answer the caller with a code and a message they see."""


def secret_path(name):
    """The file of a declared secret (MESH_SECRET_FILES, JSON: name → path); no connection needed."""
    try:
        files = json.loads(os.environ.get("MESH_SECRET_FILES") or "{}")
    except ValueError:
        files = {}
    if isinstance(files, dict) and isinstance(files.get(name), str):
        return files[name]
    folder = os.environ.get("MESH_SECRETS_DIR")
    if folder:
        raise MeshError("NOT_FOUND", f"the secret {name!r} is not declared in own-secrets")
    raise MeshError("NOT_FOUND", "MESH_SECRETS_DIR is not set: this process was not started by a mesh host")


def connect(path=None):
    """Connects to the bridge the mesh runs this process under."""
    path = path or os.environ.get(SOCKET_ENV)
    if not path:
        raise MeshError(
            "CREDENTIAL_INVALID",
            f"{SOCKET_ENV} is not set: the process runs under the mesh's bridge only when its module "
            'declares own-secrets: {broker: {path: broker.json}}',
        )
    return Mesh(path)


class _Config:
    def __init__(self, mesh):
        self._mesh = mesh

    def get(self, key):
        """The value now: the node's, else the mesh-wide one, else the manifest's default."""
        return self._mesh._ask("config.get", key=key)

    def watch(self, key, on_value, on_refused=None):
        """Calls on_value(value) with the value now, then with every change (in a thread of its own)."""
        watch = self._mesh._new_watch(on_value, on_refused)
        self._mesh._ask("config.watch", key=key, watch=watch)


class _State:
    def __init__(self, mesh, name):
        self._mesh = mesh
        self._name = name

    def get(self, key):
        return self._mesh._ask("state.get", state=self._name, key=key)

    def put(self, key, value):
        self._mesh._ask("state.put", state=self._name, key=key, value=value)

    def delete(self, key):
        self._mesh._ask("state.delete", state=self._name, key=key)

    def keys(self, filter=None):
        return self._mesh._ask("state.keys", state=self._name, **({"filter": filter} if filter else {}))


class Mesh:
    def __init__(self, path):
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._socket.connect(path)
        self._file = self._socket.makefile("rwb")
        self._write = threading.Lock()
        self._next = 1
        self._waiting = {}
        self._watches = {}
        self._tools = {}
        self._closed = threading.Event()
        threading.Thread(target=self._read, name="mesh-sdk-reader", daemon=True).start()
        hello = self._ask("hello")
        self.module = hello["module"]
        self.node = hello["node"]
        self.config = _Config(self)

    # -- what a module uses -------------------------------------------------------------------

    def state(self, name):
        """One of the module's states ("counts"), or one it reads ("counter/counts")."""
        return _State(self, name)

    def condition(self, name, level, message):
        """Says a condition an operator sees (level: info, warning or error)."""
        self._ask("condition", name=name, level=level, message=message)

    def keeps(self, states):
        """Says which states this process keeps: [{"name": "counts", "readable": True}]."""
        self._ask("keeps", states=states)

    def call(self, tool, input=None, node=None, timeout_ms=None):
        """Calls a tool the manifest declares in calls ("hello/greet")."""
        extra = {}
        if node:
            extra["node"] = node
        if timeout_ms is not None:
            extra["timeoutMs"] = timeout_ms
        return self._ask("call", tool=tool, input={} if input is None else input, **extra)

    def secret_path(self, name):
        return secret_path(name)

    def read_secret(self, name):
        """A declared secret's content, read from its file (stripped of surrounding whitespace)."""
        with open(secret_path(name), encoding="utf-8") as f:
            return f.read().strip()

    def tool(self, name, description, input_schema=None, output_schema=None):
        """Declares a tool (a decorator); mesh.serve() puts every declared tool on the bus."""

        def declare(handler):
            self._tools[name] = {
                "name": name,
                "description": description,
                "input": input_schema or {"type": "object"},
                **({"output": output_schema} if output_schema else {}),
                "handler": handler,
            }
            return handler

        return declare

    def serve(self):
        """Serves the declared tools as the module's NATS service, as TypeScript tools are served."""
        tools = [{k: v for k, v in t.items() if k != "handler"} for t in self._tools.values()]
        self._ask("serve", tools=tools)

    def wait(self):
        """Blocks until SIGTERM or SIGINT, then closes the connection."""
        stop = threading.Event()
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        while not stop.wait(0.5) and not self._closed.is_set():
            pass
        self.close()

    def close(self):
        self._closed.set()
        try:
            self._socket.close()
        except OSError:
            pass

    # -- the wire -----------------------------------------------------------------------------

    def _send(self, message):
        data = (json.dumps(message) + "\n").encode("utf-8")
        with self._write:
            self._file.write(data)
            self._file.flush()

    def _ask(self, op, **fields):
        with self._write:
            ask_id = self._next
            self._next += 1
        done = threading.Event()
        slot = {"done": done}
        self._waiting[ask_id] = slot
        self._send({"id": ask_id, "op": op, **fields})
        if not done.wait(120):
            self._waiting.pop(ask_id, None)
            raise MeshError("TIMEOUT", f"the bridge did not answer {op} within 120 s")
        answer = slot["answer"]
        if answer.get("ok"):
            return answer.get("value")
        raise MeshError(answer.get("code", "INTERNAL"), answer.get("message", f"{op} failed"))

    def _new_watch(self, on_value, on_refused):
        with self._write:
            watch = self._next
            self._next += 1
        self._watches[watch] = (on_value, on_refused)
        return watch

    def _read(self):
        try:
            for line in self._file:
                message = json.loads(line)
                if "id" in message:
                    slot = self._waiting.pop(message["id"], None)
                    if slot is not None:
                        slot["answer"] = message
                        slot["done"].set()
                elif message.get("event") == "config":
                    on_value, on_refused = self._watches.get(message.get("watch"), (None, None))
                    if "value" in message and on_value:
                        on_value(message["value"])
                    elif "refused" in message and on_refused:
                        on_refused(message["refused"])
                elif message.get("event") == "call":
                    threading.Thread(target=self._run_tool, args=(message,), daemon=True).start()
        except (OSError, ValueError):
            pass
        self._closed.set()

    def _run_tool(self, message):
        tool = self._tools.get(message.get("tool"))
        reply = {"op": "reply", "call": message["call"]}
        try:
            if tool is None:
                raise ToolError("NOT_FOUND", f"no tool {message.get('tool')!r}")
            problems = check_input(tool["input"], message.get("input"))
            if problems:
                raise ToolError("INVALID_INPUT", "; ".join(problems))
            reply.update(ok=True, value=tool["handler"](message.get("input")))
        except MeshError as error:
            reply.update(ok=False, code=error.code, message=error.message)
        except Exception as error:  # the detail stays in the module's log, as for TypeScript tools
            print(f"mesh_sdk: the tool {message.get('tool')} failed: {error!r}", flush=True)
            reply.update(ok=False, code="INTERNAL", message="the tool failed; its detail is in mesh logs")
        self._send(reply)


_TYPES = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict,),
    "array": (list,),
    "null": (type(None),),
}


def check_input(schema, value, path="input"):
    """Every problem of value against a JSON Schema's type, required, properties and items."""
    problems = []
    kinds = schema.get("type")
    if kinds is not None:
        kinds = kinds if isinstance(kinds, list) else [kinds]
        fits = any(
            isinstance(value, _TYPES.get(k, (object,)))
            and not (k in ("integer", "number") and isinstance(value, bool))
            for k in kinds
        )
        if not fits:
            return [f"{path} is {type(value).__name__}, where {' or '.join(kinds)} is expected"]
    if "enum" in schema and value not in schema["enum"]:
        problems.append(f"{path} is {value!r}, not one of {schema['enum']!r}")
    if isinstance(value, dict):
        for name in schema.get("required", []):
            if name not in value:
                problems.append(f"{path}.{name} is required")
        for name, sub in schema.get("properties", {}).items():
            if name in value:
                problems.extend(check_input(sub, value[name], f"{path}.{name}"))
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            problems.extend(check_input(schema["items"], item, f"{path}[{i}]"))
    return problems
