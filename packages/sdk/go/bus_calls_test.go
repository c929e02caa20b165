//go:build meshbus

package mesh

// Calls and tools on a real bus (go test -tags meshbus; see bus_test.go for who is on it).

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// helloTools serves hello's tools on a node as the admin: greet answers with where it ran, refuses
// refuses with a code, slow never answers.
func helloTools(t *testing.T, nc *nats.Conn, node string) {
	t.Helper()
	handlers := map[string]nats.MsgHandler{
		"greet": func(msg *nats.Msg) {
			var input map[string]any
			_ = json.Unmarshal(msg.Data, &input)
			data, _ := json.Marshal(map[string]any{"text": "hello, " + toString(input["name"]), "node": node, "input": string(msg.Data)})
			_ = msg.Respond(data)
		},
		"refuses": func(msg *nats.Msg) {
			reply := nats.NewMsg(msg.Reply)
			reply.Header.Set("Mesh-Error-Code", "INVALID_INPUT")
			reply.Header.Set("Nats-Service-Error", "refuses everything")
			_ = nc.PublishMsg(reply)
		},
		"slow": func(*nats.Msg) {},
	}
	for name, handler := range handlers {
		sub, err := nc.Subscribe(toolSubject(node, "hello", name), handler)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = sub.Unsubscribe() })
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

func toString(v any) string {
	s, _ := v.(string)
	return s
}

func TestBusCallReachesTheToolOnItsNodeOrAnother(t *testing.T) {
	m := greeter(t)
	admin := peer(t)
	helloTools(t, admin, "n1")
	helloTools(t, admin, "n2")
	answer := func(raw json.RawMessage, err error) map[string]any {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out map[string]any
		if err := json.Unmarshal(raw, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	got := answer(m.Call("hello/greet", map[string]any{"name": "Ada"}))
	if got["text"] != "hello, Ada" || got["node"] != "n1" || got["input"] != `{"name":"Ada"}` {
		t.Errorf("on n1: %v", got)
	}
	if got := answer(m.Call("hello/greet", map[string]any{"name": "Ada"}, CallOptions{Node: "n2"})); got["node"] != "n2" {
		t.Errorf("on n2: %v", got)
	}
	if got := answer(m.Call("hello/greet", nil)); got["input"] != "{}" {
		t.Errorf("no input is {}: %v", got)
	}
	_, err := m.Call("hello/refuses", nil)
	if codeOf(t, err) != "INVALID_INPUT" || !strings.Contains(err.Error(), "refuses everything") {
		t.Errorf("refused: %v", err)
	}
	if _, err := m.Call("hello/missing", nil); codeOf(t, err) != "NOT_FOUND" {
		t.Errorf("nothing serves it: %v", err)
	}
	started := time.Now()
	if _, err := m.Call("hello/slow", nil, CallOptions{Timeout: 300 * time.Millisecond}); codeOf(t, err) != "TIMEOUT" {
		t.Errorf("slow: %v", err)
	}
	if took := time.Since(started); took >= DefaultCallTimeout {
		t.Errorf("the call's own deadline was not kept: %s", took)
	}
	if _, err := m.Call("hello/undeclared", nil); codeOf(t, err) != "PERMISSION_DENIED" {
		t.Errorf("a tool the manifest does not call: %v", err)
	}
}

func TestBusToolsAreServedWithTheirSchemasAndFoundBySRV(t *testing.T) {
	m := greeter(t)
	admin := peer(t)
	startHost(t, admin, map[string]any{})
	input := schema(t, `{"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}`)
	output := schema(t, `{"type": "object", "properties": {"text": {"type": "string"}}}`)
	m.Tool("greet", "Greets someone.", input, output, func(in map[string]any) (any, error) {
		switch in["name"] {
		case "nobody":
			return nil, Refuse("NOT_FOUND", "no one by that name")
		case "crash":
			return nil, errors.New("secret detail")
		}
		return map[string]any{"text": "Hello, " + toString(in["name"]) + "!"}, nil
	})
	if err := m.Serve(); err != nil {
		t.Fatal(err)
	}
	call := func(body string) *nats.Msg {
		t.Helper()
		reply, err := admin.Request("mesh.tools.n1.greeter.greet", []byte(body), within(5*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		return reply
	}
	if reply := call(`{"name": "Ada"}`); string(reply.Data) != `{"text":"Hello, Ada!"}` || reply.Header.Get("Mesh-Error-Code") != "" {
		t.Errorf("answer: %s %v", reply.Data, reply.Header)
	}
	for body, want := range map[string][3]string{
		`{}`:                 {"INVALID_INPUT", "400", "input.name is required"},
		`not json`:           {"INVALID_INPUT", "400", "not JSON"},
		`{"name": "nobody"}`: {"NOT_FOUND", "404", "no one by that name"},
		`{"name": "crash"}`:  {"INTERNAL", "500", "its detail is in the module's log"},
	} {
		h := call(body).Header
		if h.Get("Mesh-Error-Code") != want[0] || h.Get("Nats-Service-Error-Code") != want[1] || !strings.Contains(h.Get("Nats-Service-Error"), want[2]) || strings.Contains(h.Get("Nats-Service-Error"), "secret detail") {
			t.Errorf("%s: %v", body, h)
		}
	}
	// A message whose reply is not an inbox (a JetStream delivery's $JS.ACK…) never runs the tool.
	elsewhere, err := admin.SubscribeSync("elsewhere.reply")
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.PublishRequest("mesh.tools.n1.greeter.greet", "elsewhere.reply", []byte(`{"name": "Eve"}`)); err != nil {
		t.Fatal(err)
	}
	call(`{"name": "Ada"}`) // answered after the one before, on the same subscription
	if msg, err := elsewhere.NextMsg(10 * time.Millisecond); err == nil {
		t.Errorf("answered a non-inbox reply: %s", msg.Data)
	}

	discover := func(verb string) map[string]any {
		t.Helper()
		reply, err := admin.Request("$SRV."+verb+".greeter", nil, within(5*time.Second))
		if err != nil {
			t.Fatal(verb, err)
		}
		var out map[string]any
		if err := json.Unmarshal(reply.Data, &out); err != nil {
			t.Fatal(err)
		}
		return out
	}
	ping := discover("PING")
	if ping["type"] != "io.nats.micro.v1.ping_response" || ping["name"] != "greeter" || ping["version"] != "0.0.0+b7" {
		t.Errorf("PING: %v", ping)
	}
	info := discover("INFO")
	endpoints, _ := info["endpoints"].([]any)
	if info["type"] != "io.nats.micro.v1.info_response" || len(endpoints) != 1 {
		t.Fatalf("INFO: %v", info)
	}
	endpoint := endpoints[0].(map[string]any)
	meta := endpoint["metadata"].(map[string]any)
	if endpoint["subject"] != "mesh.tools.n1.greeter.greet" || meta["description"] != "Greets someone." {
		t.Errorf("INFO endpoint: %v", endpoint)
	}
	if !reflect.DeepEqual(schema(t, toString(meta["input"])), input) || !reflect.DeepEqual(schema(t, toString(meta["output"])), output) {
		t.Errorf("INFO schemas: %v", meta)
	}
	stats := discover("STATS")["endpoints"].([]any)[0].(map[string]any)
	if stats["num_requests"] != 6.0 || stats["num_errors"] != 4.0 {
		t.Errorf("STATS: %v", stats)
	}
}
