package main

// greetText is the daemon's logic, apart from the mesh, so `go test` needs no mesh.
func greetText(word, name string) string { return word + ", " + name + "!" }
