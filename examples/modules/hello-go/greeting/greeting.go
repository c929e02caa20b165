// Package greeting is the daemon's logic apart from the mesh: a package of its own that imports
// no SDK, so `go test ./greeting` runs offline, without the NATS client the daemon builds with.
package greeting

// Text is what greet answers: the configured word and the name.
func Text(word, name string) string { return word + ", " + name + "!" }
