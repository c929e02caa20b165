package mesh

// The SDK's own tests, without a bus: what it refuses before connecting, the input checks its
// tools run, and how a call's input becomes an answer or a coded refusal. What it does on a bus is
// tested against the TypeScript SDK in packages/sdk/src/language-sdks.test.ts.

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func codeOf(t *testing.T, err error) string {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("want a coded *Error, got %v", err)
	}
	return e.Code
}

func schema(t *testing.T, text string) map[string]any {
	t.Helper()
	var s map[string]any
	if err := json.Unmarshal([]byte(text), &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConnectWithoutACredentialSaysHowToDeclareIt(t *testing.T) {
	t.Setenv("MESH_BROKER_FILE", "")
	_, err := Connect()
	if codeOf(t, err) != "CREDENTIAL_INVALID" || !strings.Contains(err.Error(), "own-secrets") {
		t.Fatalf("got %v", err)
	}
}

func TestConnectRefusesAFileThatIsNotAMeshCredential(t *testing.T) {
	dir := t.TempDir()
	for name, text := range map[string]string{
		"not-json.json":   "servers: [nats://x]",
		"no-module.json":  `{"servers": ["nats://127.0.0.1:1"], "node": "n1"}`,
		"no-servers.json": `{"servers": [], "node": "n1", "module": "m"}`,
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		t.Setenv("MESH_BROKER_FILE", path)
		_, err := Connect()
		if codeOf(t, err) != "CREDENTIAL_INVALID" || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: got %v", name, err)
		}
	}
	t.Setenv("MESH_BROKER_FILE", filepath.Join(dir, "missing.json"))
	if _, err := Connect(); codeOf(t, err) != "CREDENTIAL_INVALID" {
		t.Errorf("a missing file: got %v", err)
	}
}

func TestSecretPathIsTheDeclaredFileAndRefusesAnUndeclaredName(t *testing.T) {
	t.Setenv("MESH_SECRET_FILES", `{"api-token": "/run/mesh/api-token"}`)
	path, err := SecretPath("api-token")
	if err != nil || path != "/run/mesh/api-token" {
		t.Fatalf("got %q, %v", path, err)
	}
	_, err = SecretPath("other")
	if codeOf(t, err) != "NOT_FOUND" || !strings.Contains(err.Error(), `"other"`) {
		t.Fatalf("got %v", err)
	}
}

func TestReadSecretTrimsTheFilesSurroundingSpace(t *testing.T) {
	file := filepath.Join(t.TempDir(), "api-token")
	if err := os.WriteFile(file, []byte("  s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("MESH_SECRET_FILES", `{"api-token": "`+file+`"}`)
	got, err := (&Mesh{}).ReadSecret("api-token")
	if err != nil || got != "s3cret" {
		t.Fatalf("got %q, %v", got, err)
	}
}

func TestAStateIsItsOwnersBucket(t *testing.T) {
	m := &Mesh{Module: "greeter", Node: "n1"}
	if b := m.State("notes").bucket; b != "greeter_notes" {
		t.Errorf("own state: %s", b)
	}
	if b := m.State("counter/counts").bucket; b != "counter_counts" {
		t.Errorf("another module's state: %s", b)
	}
}

func TestCallRefusesAToolNotNamedModuleSlashTool(t *testing.T) {
	m := &Mesh{Module: "greeter", Node: "n1"} // no connection: refused before the bus
	for _, tool := range []string{"greet", "/greet", "hello/", ""} {
		if _, err := m.Call(tool, nil); codeOf(t, err) != "INVALID_INPUT" {
			t.Errorf("%q: got %v", tool, err)
		}
	}
	if got := toolSubject("n2", "hello", "greet"); got != "mesh.tools.n2.hello.greet" {
		t.Errorf("subject %s", got)
	}
}

func TestCheckInput(t *testing.T) {
	s := schema(t, `{"type": "object", "required": ["name"], "properties": {
		"name": {"type": "string"},
		"count": {"type": "integer"},
		"mood": {"enum": ["glad", "sad"]},
		"tags": {"type": "array", "items": {"type": "string"}},
		"note": {"type": ["string", "null"]}}}`)
	cases := []struct {
		input string
		want  []string
	}{
		{`{"name": "Ada"}`, nil},
		{`{"name": "Ada", "count": 3, "mood": "glad", "tags": ["a"], "note": null}`, nil},
		{`{}`, []string{"input.name is required"}},
		{`[]`, []string{"input is an array, where object is expected"}},
		{`{"name": 1}`, []string{"input.name is a number, where string is expected"}},
		{`{"name": "Ada", "count": 1.5}`, []string{"input.count is a number, where integer is expected"}},
		{`{"name": "Ada", "mood": "cross"}`, []string{"input.mood is not one of the values it may take"}},
		{`{"name": "Ada", "tags": ["a", 2]}`, []string{"input.tags[1] is a number, where string is expected"}},
		{`{"name": "Ada", "note": 1}`, []string{"input.note is a number, where string or null is expected"}},
	}
	for _, c := range cases {
		var value any
		if err := json.Unmarshal([]byte(c.input), &value); err != nil {
			t.Fatal(err)
		}
		if got := CheckInput(s, value, "input"); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %q, want %q", c.input, got, c.want)
		}
	}
}

func TestACallsInputBecomesTheHandlersAnswerOrACodedRefusal(t *testing.T) {
	s := &service{m: &Mesh{Module: "greeter", Node: "n1"}}
	greet := &tool{name: "greet", input: schema(t, `{"type": "object", "required": ["name"]}`),
		handler: func(input map[string]any) (any, error) {
			switch input["name"] {
			case "nobody":
				return nil, Refuse("NOT_FOUND", "no one by that name")
			case "panic":
				panic("the handler broke")
			}
			return map[string]any{"text": "Hello, " + input["name"].(string)}, nil
		}}
	out, err := s.run(greet, []byte(`{"name": "Ada"}`))
	if err != nil || !reflect.DeepEqual(out, map[string]any{"text": "Hello, Ada"}) {
		t.Fatalf("got %v, %v", out, err)
	}
	if _, err := s.run(greet, []byte(`not json`)); codeOf(t, err) != "INVALID_INPUT" {
		t.Errorf("not JSON: %v", err)
	}
	if _, err := s.run(greet, []byte(`{}`)); codeOf(t, err) != "INVALID_INPUT" || !strings.Contains(err.Error(), "input.name is required") {
		t.Errorf("schema: %v", err)
	}
	if _, err := s.run(greet, []byte(`{"name": "nobody"}`)); codeOf(t, err) != "NOT_FOUND" {
		t.Errorf("refusal: %v", err)
	}
	_, err = s.run(greet, []byte(`{"name": "panic"}`))
	var coded *Error
	if err == nil || errors.As(err, &coded) || !strings.Contains(err.Error(), "the handler broke") {
		t.Errorf("a panic is an uncoded error (INTERNAL to the caller): %v", err)
	}
}

func TestRefusalsCarryTheirNATSServiceStatus(t *testing.T) {
	for code, status := range map[string]string{
		"INVALID_INPUT": "400", "REFUSED": "403", "NOT_FOUND": "404", "TIMEOUT": "504", "INTERNAL": "500", "OTHER": "500",
	} {
		if got := statusOf(code); got != status {
			t.Errorf("%s: %s, want %s", code, got, status)
		}
	}
	if got := Refuse("REFUSED", "no").Error(); got != "no [REFUSED]" {
		t.Errorf("message %q", got)
	}
}
