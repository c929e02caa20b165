"""The daemon's logic, apart from the mesh, so it is tested with plain python3 -m unittest."""


def greet_text(word, name):
    return f"{word}, {name}!"
