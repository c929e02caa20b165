package mesh

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nuid"
)

// Handler runs one call of a tool: the input (checked against its schema first) to the output.
// A returned *Error answers the caller with its code; any other error is INTERNAL, its detail in
// the module's log.
type Handler func(input map[string]any) (any, error)

type tool struct {
	name, description string
	input, output     map[string]any
	handler           Handler
}

// Tool declares a tool with its JSON Schema input (and output, or nil); Serve puts them on the bus.
func (m *Mesh) Tool(name, description string, input, output map[string]any, handler Handler) {
	if input == nil {
		input = map[string]any{"type": "object"}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.tools = append(m.tools, &tool{name, description, input, output, handler})
}

// Serve serves the declared tools as the module's NATS service: each on
// mesh.tools.<node>.<module>.<tool>, with its description and schemas in the endpoint's metadata,
// answering $SRV PING, INFO and STATS as the runtime's services do.
func (m *Mesh) Serve() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.srv != nil {
		m.srv.stop()
	}
	version := "0.0.0"
	if raw, err := m.request("mesh.provision."+m.Node+".module."+m.Module,
		map[string]string{"kind": "bound", "key": "build"}, 5*time.Second); err == nil {
		var answer struct {
			Value string `json:"value"`
		}
		if json.Unmarshal(raw, &answer) == nil && answer.Value != "" {
			version = "0.0.0+" + answer.Value
		}
	}
	s := &service{m: m, id: nuid.Next(), version: version, started: time.Now().UTC()}
	if err := s.start(m.tools); err != nil {
		s.stop()
		return err
	}
	m.srv = s
	return m.nc.Flush()
}

type service struct {
	m       *Mesh
	id      string
	version string
	started time.Time
	subs    []*nats.Subscription
	mu      sync.Mutex
	stats   map[string]*endpointStats
	tools   []*tool
}

type endpointStats struct {
	Requests, Errors uint64
	LastError        string
	Processing       time.Duration
}

func (s *service) subject(t *tool) string {
	return toolSubject(s.m.Node, s.m.Module, t.name)
}

func (s *service) start(tools []*tool) error {
	s.tools = tools
	s.stats = map[string]*endpointStats{}
	for _, t := range tools {
		t := t
		s.stats[t.name] = &endpointStats{}
		sub, err := s.m.nc.QueueSubscribe(s.subject(t), "q", func(msg *nats.Msg) { s.call(t, msg) })
		if err != nil {
			return err
		}
		s.subs = append(s.subs, sub)
	}
	for _, verb := range []string{"PING", "INFO", "STATS"} {
		verb := verb
		for _, subject := range []string{"$SRV." + verb, "$SRV." + verb + "." + s.m.Module, "$SRV." + verb + "." + s.m.Module + "." + s.id} {
			sub, err := s.m.nc.Subscribe(subject, func(msg *nats.Msg) { s.discover(verb, msg) })
			if err != nil {
				return err
			}
			s.subs = append(s.subs, sub)
		}
	}
	return nil
}

func (s *service) stop() {
	for _, sub := range s.subs {
		_ = sub.Unsubscribe()
	}
	s.subs = nil
}

// call answers one request, only on the tool's own subject with an inbox to reply to: a
// JetStream delivery (a $JS.ACK reply, another subject) never runs the handler.
func (s *service) call(t *tool, msg *nats.Msg) {
	if msg.Subject != s.subject(t) || !strings.HasPrefix(msg.Reply, "_INBOX.") {
		return
	}
	started := time.Now()
	output, err := s.run(t, msg.Data)
	s.mu.Lock()
	st := s.stats[t.name]
	st.Requests++
	st.Processing += time.Since(started)
	if err != nil {
		st.Errors++
		st.LastError = err.Error()
	}
	s.mu.Unlock()
	reply := nats.NewMsg(msg.Reply)
	if err != nil {
		code, message := "INTERNAL", "the handler failed; its detail is in the module's log"
		if e, ok := err.(*Error); ok {
			code, message = e.Code, e.Message
		} else {
			fmt.Printf("mesh: the tool %s failed: %v\n", t.name, err)
		}
		reply.Header.Set("Mesh-Error-Code", code)
		reply.Header.Set("Nats-Service-Error", strings.ReplaceAll(message, "\n", " "))
		reply.Header.Set("Nats-Service-Error-Code", statusOf(code))
		_ = s.m.nc.PublishMsg(reply)
		return
	}
	data, err := json.Marshal(output)
	if err != nil {
		data = []byte("null")
	}
	reply.Data = data
	_ = s.m.nc.PublishMsg(reply)
}

func (s *service) run(t *tool, data []byte) (out any, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	var input any
	if err := json.Unmarshal(data, &input); err != nil {
		return nil, &Error{"INVALID_INPUT", "the request body is not JSON; send a JSON document"}
	}
	if problems := CheckInput(t.input, input, "input"); len(problems) > 0 {
		return nil, &Error{"INVALID_INPUT", strings.Join(problems, "; ")}
	}
	object, _ := input.(map[string]any)
	return t.handler(object)
}

func statusOf(code string) string {
	switch code {
	case "INVALID_INPUT":
		return "400"
	case "REFUSED":
		return "403"
	case "NOT_FOUND":
		return "404"
	case "TIMEOUT":
		return "504"
	}
	return "500"
}

// discover answers $SRV PING, INFO and STATS in the micro v1 shapes the TypeScript client reads.
func (s *service) discover(verb string, msg *nats.Msg) {
	if msg.Reply == "" {
		return
	}
	base := map[string]any{
		"name": s.m.Module, "id": s.id, "version": s.version,
		"metadata": map[string]string{"node": s.m.Node, "module": s.m.Module},
	}
	switch verb {
	case "PING":
		base["type"] = "io.nats.micro.v1.ping_response"
	case "INFO":
		base["type"] = "io.nats.micro.v1.info_response"
		base["description"] = "the tools of " + s.m.Module + " on " + s.m.Node
		var endpoints []map[string]any
		for _, t := range s.tools {
			input, _ := json.Marshal(t.input)
			meta := map[string]string{"description": t.description, "input": string(input)}
			if t.output != nil {
				output, _ := json.Marshal(t.output)
				meta["output"] = string(output)
			}
			endpoints = append(endpoints, map[string]any{"name": t.name, "subject": s.subject(t), "queue_group": "q", "metadata": meta})
		}
		base["endpoints"] = endpoints
	case "STATS":
		base["type"] = "io.nats.micro.v1.stats_response"
		base["started"] = s.started.Format(time.RFC3339Nano)
		var endpoints []map[string]any
		s.mu.Lock()
		for _, t := range s.tools {
			st := s.stats[t.name]
			average := time.Duration(0)
			if st.Requests > 0 {
				average = st.Processing / time.Duration(st.Requests)
			}
			endpoints = append(endpoints, map[string]any{
				"name": t.name, "subject": s.subject(t), "queue_group": "q",
				"num_requests": st.Requests, "num_errors": st.Errors, "last_error": st.LastError,
				"processing_time": st.Processing.Nanoseconds(), "average_processing_time": average.Nanoseconds(),
			})
		}
		s.mu.Unlock()
		base["endpoints"] = endpoints
	}
	data, _ := json.Marshal(base)
	_ = msg.Respond(data)
}

// CheckInput is every problem of value against a JSON Schema's type, required, properties, items
// and enum (the part of JSON Schema the Python SDK checks too).
func CheckInput(schema map[string]any, value any, path string) []string {
	var problems []string
	if kinds := kindsOf(schema["type"]); len(kinds) > 0 {
		fits := false
		for _, k := range kinds {
			if fitsKind(k, value) {
				fits = true
			}
		}
		if !fits {
			return []string{fmt.Sprintf("%s is %s, where %s is expected", path, kindOfValue(value), strings.Join(kinds, " or "))}
		}
	}
	if values, ok := schema["enum"].([]any); ok {
		found := false
		for _, v := range values {
			a, _ := json.Marshal(v)
			b, _ := json.Marshal(value)
			if string(a) == string(b) {
				found = true
			}
		}
		if !found {
			problems = append(problems, fmt.Sprintf("%s is not one of the values it may take", path))
		}
	}
	if object, ok := value.(map[string]any); ok {
		if required, ok := schema["required"].([]any); ok {
			for _, r := range required {
				if name, ok := r.(string); ok {
					if _, has := object[name]; !has {
						problems = append(problems, path+"."+name+" is required")
					}
				}
			}
		}
		if properties, ok := schema["properties"].(map[string]any); ok {
			for name, sub := range properties {
				if v, has := object[name]; has {
					if subSchema, ok := sub.(map[string]any); ok {
						problems = append(problems, CheckInput(subSchema, v, path+"."+name)...)
					}
				}
			}
		}
	}
	if list, ok := value.([]any); ok {
		if items, ok := schema["items"].(map[string]any); ok {
			for i, item := range list {
				problems = append(problems, CheckInput(items, item, fmt.Sprintf("%s[%d]", path, i))...)
			}
		}
	}
	return problems
}

func kindsOf(t any) []string {
	switch v := t.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, k := range v {
			if s, ok := k.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
}

func fitsKind(kind string, value any) bool {
	switch kind {
	case "string":
		_, ok := value.(string)
		return ok
	case "number":
		_, ok := value.(float64)
		return ok
	case "integer":
		f, ok := value.(float64)
		return ok && f == float64(int64(f))
	case "boolean":
		_, ok := value.(bool)
		return ok
	case "object":
		_, ok := value.(map[string]any)
		return ok
	case "array":
		_, ok := value.([]any)
		return ok
	case "null":
		return value == nil
	}
	return true
}

func kindOfValue(value any) string {
	switch value.(type) {
	case string:
		return "a string"
	case float64:
		return "a number"
	case bool:
		return "a boolean"
	case map[string]any:
		return "an object"
	case []any:
		return "an array"
	case nil:
		return "null"
	}
	return "a value"
}
