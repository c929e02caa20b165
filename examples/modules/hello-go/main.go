// Command hello-go is a daemon that serves one tool, greet, with the Go SDK (docs/modules.md, "Go").
package main

import (
	"fmt"
	"os"
	"sync"

	"hello-go/greeting"
	mesh "mesh.local/sdk"
)

func main() {
	m, err := mesh.Connect()
	if err != nil {
		fmt.Fprintln(os.Stderr, "hello-go:", err)
		os.Exit(1)
	}
	var mu sync.Mutex
	word := "Hello"
	err = m.Config.Watch("greeting", func(value any) {
		mu.Lock()
		defer mu.Unlock()
		if s, ok := value.(string); ok {
			word = s
		}
		fmt.Printf("greeting is now %q\n", word)
	}, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hello-go: the greeting cannot be read:", err)
		os.Exit(1)
	}
	m.Tool("greet", "Greets someone with the configured greeting.",
		map[string]any{
			"type":       "object",
			"properties": map[string]any{"name": map[string]any{"type": "string", "description": "Who to greet"}},
			"required":   []any{"name"},
		},
		map[string]any{
			"type": "object",
			"properties": map[string]any{
				"text": map[string]any{"type": "string"}, "tokenLength": map[string]any{"type": "integer"},
			},
		},
		func(input map[string]any) (any, error) {
			token, err := m.ReadSecret("api-token") // read from its file at each call
			if err != nil {
				return nil, err
			}
			name, _ := input["name"].(string)
			if err := m.State("greetings").Put("last", map[string]any{"name": name}); err != nil {
				return nil, err
			}
			mu.Lock()
			defer mu.Unlock()
			return map[string]any{"text": greeting.Text(word, name), "tokenLength": len(token)}, nil
		})
	if err := m.Serve(); err != nil {
		fmt.Fprintln(os.Stderr, "hello-go: the tools cannot be served:", err)
		os.Exit(1)
	}
	_ = m.Condition("serving", "info", "hello-go serves greet on "+m.Node)
	fmt.Printf("hello-go serving on %s\n", m.Node)
	m.Wait()
}
