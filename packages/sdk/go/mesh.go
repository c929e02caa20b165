// Package mesh is what a Go module's process imports to reach the mesh (decision 0162): the same
// surface as Python's mesh_sdk, on the official NATS Go client. It connects as the module with the
// credential the host wrote for it (MESH_BROKER_FILE), and serves the module's tools as its NATS
// service with the subjects and $SRV discovery of TypeScript tools.
//
//	m, err := mesh.Connect()
//	greeting, _ := m.Config.Get("greeting")
//	m.Config.Watch("greeting", func(v any) { ... })
//	token, _ := m.ReadSecret("api-token")
//	m.State("greetings").Put("last", map[string]any{"name": "Ada"})
//	m.Tool("greet", "Greets someone.", schema, nil, func(input map[string]any) (any, error) { ... })
//	m.Serve()
//	m.Wait() // until SIGTERM
package mesh

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"regexp"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// Error is a refusal from the mesh with its permanent code (REFUSED, NOT_FOUND, INVALID_INPUT, …).
// A tool returns one to answer its caller with that code.
type Error struct {
	Code    string
	Message string
}

func (e *Error) Error() string { return fmt.Sprintf("%s [%s]", e.Message, e.Code) }

// Refuse makes an Error a tool returns.
func Refuse(code, message string) error { return &Error{Code: code, Message: message} }

type credential struct {
	Servers     []string `json:"servers"`
	User        string   `json:"user"`
	Password    string   `json:"password"`
	JWT         string   `json:"jwt"`
	Seed        string   `json:"seed"`
	Node        string   `json:"node"`
	Module      string   `json:"module"`
	Fingerprint string   `json:"fingerprint"`
}

// Mesh is the module's connection.
type Mesh struct {
	Module string
	Node   string
	Config *Config

	nc      *nats.Conn
	mu      sync.Mutex
	tools   []*tool
	srv     *service
	kept    []KeptState
	denials denials
}

// Connect connects as the module whose credential MESH_BROKER_FILE names, waiting for the bus.
func Connect() (*Mesh, error) {
	file := os.Getenv("MESH_BROKER_FILE")
	if file == "" {
		return nil, &Error{"CREDENTIAL_INVALID", `MESH_BROKER_FILE is not set, so this process has no credential; declare own-secrets: {broker: {path: broker.json}} in the module's manifest`}
	}
	return connectFile(file)
}

func connectFile(file string) (*Mesh, error) {
	text, err := os.ReadFile(file)
	if err != nil {
		return nil, &Error{"CREDENTIAL_INVALID", fmt.Sprintf("the credential %s cannot be read: %v", file, err)}
	}
	var c credential
	if err := json.Unmarshal(text, &c); err != nil || len(c.Servers) == 0 || c.Node == "" || c.Module == "" {
		return nil, &Error{"CREDENTIAL_INVALID", fmt.Sprintf("the credential %s is not a mesh credential", file)}
	}
	m := &Mesh{Module: c.Module, Node: c.Node}
	m.Config = &Config{m: m}
	opts := []nats.Option{
		nats.Name(c.Node + "." + c.Module),
		nats.CustomInboxPrefix("_INBOX." + c.Node + "." + c.Module),
		nats.MaxReconnects(-1),
		nats.RetryOnFailedConnect(true),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if !m.denials.refused(err) {
				fmt.Fprintf(os.Stderr, "mesh: the bus: %v\n", err)
			}
		}),
	}
	if c.JWT != "" && c.Seed != "" {
		kp, err := nkeys.FromSeed([]byte(c.Seed))
		if err != nil {
			return nil, &Error{"CREDENTIAL_INVALID", "the credential's seed is not an nkey seed"}
		}
		opts = append(opts, nats.UserJWT(
			func() (string, error) { return c.JWT, nil },
			func(nonce []byte) ([]byte, error) { return kp.Sign(nonce) },
		))
	} else {
		opts = append(opts, nats.UserInfo(c.User, c.Password))
	}
	if c.Fingerprint != "" {
		want := strings.ToUpper(strings.ReplaceAll(c.Fingerprint, ":", ""))
		opts = append(opts, nats.Secure(&tls.Config{
			// Exactly the pinned certificate is trusted, as the TypeScript client pins it.
			InsecureSkipVerify: true, //nolint:gosec // verified below against the pin
			VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
				if len(raw) == 0 {
					return errors.New("the bus sent no certificate")
				}
				sum := sha256.Sum256(raw[0])
				if fmt.Sprintf("%X", sum[:]) != want {
					return errors.New("the bus's certificate is not the pinned one")
				}
				return nil
			},
		}))
	}
	nc, err := nats.Connect(strings.Join(c.Servers, ","), opts...)
	if err != nil {
		return nil, fmt.Errorf("connecting to the bus: %w", err)
	}
	m.nc = nc
	return m, nil
}

// Close ends the connection.
func (m *Mesh) Close() {
	if m.srv != nil {
		m.srv.stop()
	}
	m.nc.Drain() //nolint:errcheck // closing anyway
}

// Wait blocks until SIGTERM or SIGINT, then closes the connection.
func (m *Mesh) Wait() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	<-ch
	m.Close()
}

// request asks a subject with a JSON body and returns the reply's JSON, or its coded error.
func (m *Mesh) request(subject string, body any, timeout time.Duration) (json.RawMessage, error) {
	data, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	msg := nats.NewMsg(subject)
	msg.Data = data
	reply, err := m.ask(msg, timeout)
	if err != nil {
		return nil, err
	}
	if code := reply.Header.Get("Mesh-Error-Code"); code != "" {
		return nil, &Error{code, reply.Header.Get("Nats-Service-Error")}
	}
	if msg := reply.Header.Get("Nats-Service-Error"); msg != "" {
		return nil, &Error{"INTERNAL", msg}
	}
	return reply.Data, nil
}

// ask sends a request and waits for its reply: a refusal of the bus to publish it is
// PERMISSION_DENIED at once (nats.go tells only the connection's error handler, and the request
// would wait out its timeout), no answer within the timeout TIMEOUT, none to answer NOT_FOUND.
func (m *Mesh) ask(msg *nats.Msg, timeout time.Duration) (*nats.Msg, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	waiting := m.denials.watch(msg.Subject, cancel)
	defer m.denials.forget(msg.Subject, waiting)
	reply, err := m.nc.RequestMsgWithContext(ctx, msg)
	if waiting.denied() {
		return nil, &Error{"PERMISSION_DENIED", fmt.Sprintf("the bus refused to publish on %q for %s on %s: its credential is not granted it — declare what the module needs in its manifest (states, reads, calls) so the broker grants it", msg.Subject, m.Module, m.Node)}
	}
	switch {
	case err == nil:
		return reply, nil
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		return nil, &Error{"TIMEOUT", fmt.Sprintf("asking %s: no answer within %s", msg.Subject, timeout)}
	case errors.Is(err, nats.ErrNoResponders):
		return nil, &Error{"NOT_FOUND", fmt.Sprintf("asking %s: nothing on the bus answers there", msg.Subject)}
	}
	return nil, fmt.Errorf("asking %s: %w", msg.Subject, err)
}

// denials ends the requests waiting on a subject the bus refused to publish on.
type denials struct {
	mu      sync.Mutex
	waiting map[string][]*denial
}

type denial struct {
	cancel context.CancelFunc
	mu     sync.Mutex
	hit    bool
}

func (d *denial) denied() bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.hit
}

// A mesh name: a module's, a node's, a state's, a condition's.
var meshName = regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`)

// The server's words, as nats.go hands them on: nats: Permissions Violation for Publish to "<subject>".
var publishViolation = regexp.MustCompile(`(?i)permissions violation for publish to "?([^"\s]+)"?`)

func (ds *denials) watch(subject string, cancel context.CancelFunc) *denial {
	d := &denial{cancel: cancel}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	if ds.waiting == nil {
		ds.waiting = map[string][]*denial{}
	}
	ds.waiting[subject] = append(ds.waiting[subject], d)
	return d
}

func (ds *denials) forget(subject string, d *denial) {
	ds.mu.Lock()
	defer ds.mu.Unlock()
	list := ds.waiting[subject]
	for i, w := range list {
		if w == d {
			list = append(list[:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(ds.waiting, subject)
	} else {
		ds.waiting[subject] = list
	}
}

// refused ends the requests on the subject a publish violation names; whether it was one.
func (ds *denials) refused(err error) bool {
	found := publishViolation.FindStringSubmatch(err.Error())
	if found == nil {
		return false
	}
	ds.mu.Lock()
	defer ds.mu.Unlock()
	for _, d := range ds.waiting[found[1]] {
		d.mu.Lock()
		d.hit = true
		d.mu.Unlock()
		d.cancel()
	}
	return true
}

// SecretPath is the file of a declared secret (MESH_SECRET_FILES).
func SecretPath(name string) (string, error) {
	files := map[string]string{}
	_ = json.Unmarshal([]byte(os.Getenv("MESH_SECRET_FILES")), &files)
	if path, ok := files[name]; ok {
		return path, nil
	}
	return "", &Error{"NOT_FOUND", fmt.Sprintf("the secret %q is not declared in own-secrets", name)}
}

// ReadSecret is a declared secret's content, read from its file, surrounding space trimmed.
func (m *Mesh) ReadSecret(name string) (string, error) {
	path, err := SecretPath(name)
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(data)), nil
}

// CallOptions narrow a call: another node's tool (this node's by default), a deadline other than
// DefaultCallTimeout.
type CallOptions struct {
	Node    string
	Timeout time.Duration
}

// DefaultCallTimeout is how long a call waits for its answer unless told otherwise, as in the
// TypeScript SDK.
const DefaultCallTimeout = 5 * time.Second

// Call calls a tool the manifest declares in calls ("hello/greet"), on this node unless the options
// name another. A refusal is an *Error with the tool's code (NOT_FOUND when nothing serves it).
func (m *Mesh) Call(tool string, input any, options ...CallOptions) (json.RawMessage, error) {
	owner, name, ok := strings.Cut(tool, "/")
	if !ok || owner == "" || name == "" {
		return nil, &Error{"INVALID_INPUT", fmt.Sprintf("the tool %q is not named <module>/<tool> (e.g. hello/greet)", tool)}
	}
	node, timeout := m.Node, DefaultCallTimeout
	for _, o := range options {
		if o.Node != "" {
			node = o.Node
		}
		if o.Timeout > 0 {
			timeout = o.Timeout
		}
	}
	if input == nil {
		input = map[string]any{}
	}
	return m.request(toolSubject(node, owner, name), input, timeout)
}

// toolSubject is where a tool answers: mesh.tools.<node>.<module>.<tool>.
func toolSubject(node, module, tool string) string {
	return "mesh.tools." + node + "." + module + "." + tool
}

// Condition says a condition an operator sees (level: info, warning or error); the last one
// said per name is kept. A malformed one (a name that is not a mesh name, another level, an empty
// or overlong message) is refused with INVALID_VALUE before it is said, as the TypeScript SDK
// refuses it: readers would drop it.
func (m *Mesh) Condition(name, level, message string) error {
	var problems []string
	if !meshName.MatchString(name) {
		problems = append(problems, fmt.Sprintf("name %q is not a-z, 0-9 and -, starting with a letter, at most 63 long", name))
	}
	if level != "info" && level != "warning" && level != "error" {
		problems = append(problems, fmt.Sprintf("level %q is not info, warning or error", level))
	}
	if n := utf8.RuneCountInString(message); n == 0 || n > 4000 {
		problems = append(problems, fmt.Sprintf("message is %d characters long, where 1 to 4000 are allowed", n))
	}
	if len(problems) > 0 {
		return &Error{"INVALID_VALUE", fmt.Sprintf("the condition %q of %s is not well-formed: %s", name, m.Module, strings.Join(problems, "; "))}
	}
	body := map[string]any{
		"module": m.Module, "name": name, "level": level, "message": message, "node": m.Node,
		"at": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"),
	}
	_, err := m.jsPublish("mesh.conditions."+m.Module+"."+name, body, nil)
	return err
}

// KeptState is a state a process says it keeps.
type KeptState struct {
	Name     string `json:"name"`
	Readable bool   `json:"readable"`
}

// Keeps says which states this process keeps and which others may read, now and again after every
// reconnect (the stream may have been lost with a server), as the TypeScript SDK does. The error is
// the first saying's; a later one after a reconnect is not reported: not being heard is no reason
// to stop working.
func (m *Mesh) Keeps(states []KeptState) error {
	kept := append([]KeptState{}, states...)
	sort.Slice(kept, func(i, j int) bool { return kept[i].Name < kept[j].Name })
	m.mu.Lock()
	m.kept = kept
	m.mu.Unlock()
	m.nc.SetReconnectHandler(func(*nats.Conn) {
		m.mu.Lock()
		again := m.kept
		m.mu.Unlock()
		go m.sayKeeps(again) //nolint:errcheck // said again at the next reconnect
	})
	return m.sayKeeps(kept)
}

func (m *Mesh) sayKeeps(states []KeptState) error {
	body := map[string]any{
		"node": m.Node, "module": m.Module, "states": states,
		"at": time.Now().UTC().Format("2006-01-02T15:04:05.000Z"),
	}
	_, err := m.jsPublish("mesh.keeps."+m.Node+"."+m.Module, body, nil)
	return err
}

// jsPublish publishes to a stream's subject and waits for its acknowledgement.
func (m *Mesh) jsPublish(subject string, body any, header nats.Header) (map[string]any, error) {
	msg := nats.NewMsg(subject)
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		msg.Data = data
	}
	for k, v := range header {
		msg.Header[k] = v
	}
	reply, err := m.ask(msg, 5*time.Second)
	if err != nil {
		return nil, err
	}
	ack := map[string]any{}
	if err := json.Unmarshal(reply.Data, &ack); err != nil {
		return nil, fmt.Errorf("publishing to %s: the answer is not an acknowledgement", subject)
	}
	if e, ok := ack["error"]; ok {
		return nil, &Error{"REFUSED", fmt.Sprintf("publishing to %s: %v", subject, e)}
	}
	return ack, nil
}
