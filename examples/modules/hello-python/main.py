"""hello-python: a daemon that serves one tool, greet, with mesh_sdk (docs/modules.md, "Python")."""

import mesh_sdk

from greeting import greet_text

mesh = mesh_sdk.connect()
greeting = {"word": mesh.config.get("greeting")}


def changed(value):
    greeting["word"] = value
    print(f"greeting is now {value!r}", flush=True)


mesh.config.watch("greeting", changed)


@mesh.tool(
    "greet",
    "Greets someone with the configured greeting.",
    {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "Who to greet"}},
        "required": ["name"],
    },
    {
        "type": "object",
        "properties": {"text": {"type": "string"}, "tokenLength": {"type": "integer"}},
    },
)
def greet(input):
    token = mesh.read_secret("api-token")  # read from its file at each call: a new value is seen
    text = greet_text(greeting["word"], input["name"])
    mesh.state("greetings").put("last", {"name": input["name"]})
    return {"text": text, "tokenLength": len(token)}


mesh.serve()
mesh.condition("serving", "info", f"hello-python serves greet on {mesh.node}")
print(f"hello-python serving on {mesh.node} with {greeting['word']!r}", flush=True)
mesh.wait()
