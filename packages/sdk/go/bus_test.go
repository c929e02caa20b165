//go:build meshbus

package mesh

// The SDK's surface on a real bus (go test -tags meshbus). packages/sdk/src/language-sdk-units.test.ts
// starts a nats-server with the harness and runs these with two credentials: MESH_BROKER_FILE,
// greeter's on n1 with the grant the broker derives from greeter's manifest there (so the bus
// refuses what the manifest does not declare), and MESH_TEST_PEER_FILE, the server's admin, which
// plays the rest of the mesh: the node's host answering provision asks in the provisioner client's
// shapes, hello's tools, and whoever reads what greeter wrote and said.

import (
	"encoding/json"
	"os"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
)

// within is a deadline as a test writes it, stretched by MESH_TEST_TIME_FACTOR (4 unless set) as
// the Node harness stretches its own: a deadline catches a hang, never a slow machine.
func within(d time.Duration) time.Duration {
	factor, err := strconv.ParseFloat(os.Getenv("MESH_TEST_TIME_FACTOR"), 64)
	if err != nil || factor <= 0 {
		factor = 4
	}
	return time.Duration(float64(d) * factor)
}

// greeter is the module under test, connected with its own credential.
func greeter(t *testing.T) *Mesh {
	t.Helper()
	m, err := Connect()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(m.Close)
	return m
}

// peer is the admin's connection.
func peer(t *testing.T) *nats.Conn {
	t.Helper()
	text, err := os.ReadFile(os.Getenv("MESH_TEST_PEER_FILE"))
	if err != nil {
		t.Fatal("MESH_TEST_PEER_FILE: ", err)
	}
	var c credential
	if err := json.Unmarshal(text, &c); err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(strings.Join(c.Servers, ","), nats.UserInfo(c.User, c.Password),
		nats.CustomInboxPrefix("_INBOX."+c.Node+"."+c.Module))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// host answers greeter's provision asks on n1 as the host's provisioner client does: a declared
// key's value ({value}), NOT_FOUND for a declared key with none, REFUSED for an undeclared one; the
// bound build. set changes a value and says so on greeter's changed subject.
type host struct {
	t      *testing.T
	nc     *nats.Conn
	mu     sync.Mutex
	config map[string]any // declared keys; nil: declared without a value
	asks   []string       // every ask's body, as sent
}

func startHost(t *testing.T, nc *nats.Conn, config map[string]any) *host {
	t.Helper()
	h := &host{t: t, nc: nc, config: config}
	sub, err := nc.Subscribe("mesh.provision.n1.module.greeter", h.answer)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sub.Unsubscribe() })
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return h
}

func (h *host) answer(msg *nats.Msg) {
	var ask struct{ Kind, Key string }
	_ = json.Unmarshal(msg.Data, &ask)
	h.mu.Lock()
	h.asks = append(h.asks, string(msg.Data))
	value, declared := h.config[ask.Key]
	h.mu.Unlock()
	refuse := func(code, message string) {
		reply := nats.NewMsg(msg.Reply)
		reply.Header.Set("Mesh-Error-Code", code)
		reply.Header.Set("Nats-Service-Error", message)
		_ = h.nc.PublishMsg(reply)
	}
	switch {
	case ask.Kind == "bound" && ask.Key == "build":
		value = "b7"
	case ask.Kind != "config" || !declared:
		refuse("REFUSED", "greeter declares no config key "+strconv.Quote(ask.Key))
		return
	case value == nil:
		refuse("NOT_FOUND", "greeter's config key "+strconv.Quote(ask.Key)+" has no default and no value is set")
		return
	}
	data, _ := json.Marshal(map[string]any{"value": value})
	_ = msg.Respond(data)
}

func (h *host) set(key string, value any) {
	h.mu.Lock()
	h.config[key] = value
	h.mu.Unlock()
	data, _ := json.Marshal(map[string]any{"module": "greeter", "kind": "config", "key": key})
	if err := h.nc.Publish("mesh.provision.n1.changed.greeter", data); err != nil {
		h.t.Fatal(err)
	}
}

func (h *host) asked() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string{}, h.asks...)
}

func next[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(within(10 * time.Second)):
		t.Fatalf("%s did not come", what)
		panic("unreachable")
	}
}

func TestBusConfigGetAskedOfTheHostAsTheModule(t *testing.T) {
	m := greeter(t)
	h := startHost(t, peer(t), map[string]any{"greeting": "Hello", "limits": map[string]any{"max": 3.0}, "color": nil})
	if got, err := m.Config.Get("greeting"); err != nil || got != "Hello" {
		t.Fatalf("greeting: %v, %v", got, err)
	}
	if got, err := m.Config.Get("limits"); err != nil || !reflect.DeepEqual(got, map[string]any{"max": 3.0}) {
		t.Fatalf("a JSON value: %v, %v", got, err)
	}
	if _, err := m.Config.Get("color"); codeOf(t, err) != "NOT_FOUND" || !strings.Contains(err.Error(), "no value is set") {
		t.Fatalf("a declared key without a value: %v", err)
	}
	if _, err := m.Config.Get("shape"); codeOf(t, err) != "REFUSED" {
		t.Fatalf("an undeclared key: %v", err)
	}
	if got, want := h.asked()[0], `{"key":"greeting","kind":"config"}`; got != want {
		t.Fatalf("the ask: %s, want %s", got, want)
	}
}

func TestBusConfigWatchHandsTheValueThenEachChangeThenARefusal(t *testing.T) {
	m := greeter(t)
	h := startHost(t, peer(t), map[string]any{"greeting": "Hello", "color": "red"})
	values, refusals := make(chan any, 10), make(chan error, 10)
	if err := m.Config.Watch("greeting", func(v any) { values <- v }, func(err error) { refusals <- err }); err != nil {
		t.Fatal(err)
	}
	if got := next(t, values, "the value now"); got != "Hello" {
		t.Fatalf("first: %v", got)
	}
	h.set("greeting", "Hi")
	if got := next(t, values, "the change to Hi"); got != "Hi" {
		t.Fatalf("second: %v", got)
	}
	// Another key's change, and a notice that moves nothing, hand nothing: the next value handed
	// is the next change.
	h.set("color", "blue")
	h.set("greeting", "Hi")
	h.set("greeting", "Hej")
	if got := next(t, values, "the change to Hej"); got != "Hej" {
		t.Fatalf("third: %v", got)
	}
	h.set("greeting", nil) // no value any more: NOT_FOUND, handed to onRefused once
	if err := next(t, refusals, "the refusal"); codeOf(t, err) != "NOT_FOUND" {
		t.Fatalf("refusal: %v", err)
	}
	h.set("greeting", nil)
	h.set("greeting", "Hej") // the value before the refusal, handed again: it is back
	if got := next(t, values, "the value back"); got != "Hej" {
		t.Fatalf("after the refusal: %v", got)
	}
	select {
	case err := <-refusals:
		t.Fatalf("the same refusal handed twice: %v", err)
	default:
	}
	for _, ask := range h.asked() {
		if strings.Contains(ask, "color") {
			t.Fatalf("the watch of greeting asked %s", ask)
		}
	}
	select {
	case v := <-values:
		t.Fatalf("an extra value %v", v)
	default:
	}
}

func TestBusStateGetPutDeleteAndKeys(t *testing.T) {
	m := greeter(t)
	admin := peer(t)
	notes := m.State("notes")
	if err := notes.Put("a.1", map[string]any{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if got, err := notes.Get("a.1"); err != nil || !reflect.DeepEqual(got, map[string]any{"n": 1.0}) {
		t.Fatalf("get: %v, %v", got, err)
	}
	// What was put is the JSON a TypeScript reader reads.
	js, err := admin.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue("greeter_notes")
	if err != nil {
		t.Fatal(err)
	}
	entry, err := kv.Get("a.1")
	if err != nil || string(entry.Value()) != `{"n":1}` {
		t.Fatalf("stored: %v, %v", entry, err)
	}
	if got, err := notes.Get("nothing"); err != nil || got != nil {
		t.Fatalf("a key never written: %v, %v", got, err)
	}
	for _, key := range []string{"b.1", "a.2", "c"} {
		if err := notes.Put(key, key); err != nil {
			t.Fatal(err)
		}
	}
	if err := notes.Delete("c"); err != nil {
		t.Fatal(err)
	}
	if got, err := notes.Get("c"); err != nil || got != nil {
		t.Fatalf("a deleted key: %v, %v", got, err)
	}
	if got, err := notes.Keys(""); err != nil || !reflect.DeepEqual(got, []string{"a.1", "a.2", "b.1"}) {
		t.Fatalf("keys: %v, %v", got, err)
	}
	if got, err := notes.Keys("a.*"); err != nil || !reflect.DeepEqual(got, []string{"a.1", "a.2"}) {
		t.Fatalf("keys a.*: %v, %v", got, err)
	}
	if got, err := m.State("drafts").Keys(""); err != nil || got == nil || len(got) != 0 {
		t.Fatalf("no keys: %#v, %v", got, err)
	}
	// A state it reads: read, never written.
	counts, err := js.KeyValue("counter_counts")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := counts.Put("total", []byte("41")); err != nil {
		t.Fatal(err)
	}
	if got, err := m.State("counter/counts").Get("total"); err != nil || got != 41.0 {
		t.Fatalf("counter/counts: %v, %v", got, err)
	}
	if got, err := m.State("counter/counts").Keys(""); err != nil || !reflect.DeepEqual(got, []string{"total"}) {
		t.Fatalf("counter/counts keys: %v, %v", got, err)
	}
}

func TestBusAStateTheManifestDoesNotGrantIsRefusedAtOnce(t *testing.T) {
	m := greeter(t)
	started := time.Now()
	for what, err := range map[string]error{
		"write a state it reads": m.State("counter/counts").Put("total", 0),
		"read another's state":   func() error { _, err := m.State("other/secrets").Get("x"); return err }(),
		"list another's state":   func() error { _, err := m.State("other/secrets").Keys(""); return err }(),
	} {
		if codeOf(t, err) != "PERMISSION_DENIED" || !strings.Contains(err.Error(), "declare what the module needs") {
			t.Errorf("%s: %v", what, err)
		}
	}
	// Said by the bus, not a request waiting out its 5 s timeout three times.
	if took := time.Since(started); took > within(3*time.Second) {
		t.Errorf("the refusals took %s", took)
	}
}

func TestBusAConditionIsStoredInTheConditionsStream(t *testing.T) {
	m := greeter(t)
	js, err := peer(t).JetStream()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Condition("ready", "warning", "serving on n1"); err != nil {
		t.Fatal(err)
	}
	stored, err := js.GetLastMsg("mesh-conditions", "mesh.conditions.greeter.ready")
	if err != nil {
		t.Fatal(err)
	}
	var said map[string]any
	if err := json.Unmarshal(stored.Data, &said); err != nil {
		t.Fatal(err)
	}
	at, _ := said["at"].(string)
	if _, err := time.Parse(time.RFC3339Nano, at); err != nil || !strings.HasSuffix(at, "Z") {
		t.Errorf("at %q", at)
	}
	delete(said, "at")
	want := map[string]any{"module": "greeter", "name": "ready", "level": "warning", "message": "serving on n1", "node": "n1"}
	if !reflect.DeepEqual(said, want) {
		t.Errorf("said %v, want %v", said, want)
	}
	for _, bad := range [][3]string{{"Ready", "info", "x"}, {"ready", "fatal", "x"}, {"ready", "info", ""}} {
		if err := m.Condition(bad[0], bad[1], bad[2]); codeOf(t, err) != "INVALID_VALUE" {
			t.Errorf("%q: %v", bad, err)
		}
	}
}

func TestBusKeepsSaysTheStatesSorted(t *testing.T) {
	m := greeter(t)
	admin := peer(t)
	sub, err := admin.SubscribeSync("mesh.keeps.n1.greeter")
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := m.Keeps([]KeptState{{Name: "notes", Readable: true}, {Name: "drafts"}}); err != nil {
		t.Fatal(err)
	}
	msg, err := sub.NextMsg(within(5 * time.Second))
	if err != nil {
		t.Fatal(err)
	}
	var said struct {
		Node, Module string
		States       []KeptState
	}
	if err := json.Unmarshal(msg.Data, &said); err != nil {
		t.Fatal(err)
	}
	want := []KeptState{{Name: "drafts"}, {Name: "notes", Readable: true}}
	if said.Node != "n1" || said.Module != "greeter" || !reflect.DeepEqual(said.States, want) {
		t.Errorf("said %+v", said)
	}
}
