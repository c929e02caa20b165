package mesh

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// State is one of the module's states ("counts"), or one it reads ("counter/counts"): a
// JetStream key-value bucket `<module>_<state>`, reached with the subjects its grant allows
// (a get by key, writes on $KV.<bucket>.<key>, a watch consumer for the keys).
type State struct {
	m      *Mesh
	bucket string
	own    bool
}

// State opens a state by name.
func (m *Mesh) State(name string) *State {
	owner, state := m.Module, name
	if o, s, ok := strings.Cut(name, "/"); ok {
		owner, state = o, s
	}
	return &State{m: m, bucket: owner + "_" + state, own: owner == m.Module}
}

// Get is the key's JSON value decoded, or nil when the key holds nothing. Its own states are read
// through the stream's leader, as the TypeScript SDK reads them: what it reads is what was
// acknowledged (a direct get may be answered by a copy still catching up after a server died, and
// a daemon that reads its total at start could write an older one back). A state it reads is read
// by a direct get, the key in the subject, which is what its grant allows.
func (s *State) Get(key string) (any, error) {
	var data []byte
	var deleted bool
	var err error
	if s.own {
		data, deleted, err = s.leaderGet(key)
	} else {
		data, deleted, err = s.directGet(key)
	}
	if err != nil || deleted {
		return nil, err
	}
	var value any
	if err := json.Unmarshal(data, &value); err != nil {
		return nil, &Error{"INVALID_VALUE", fmt.Sprintf("%s.%s is not JSON", s.bucket, key)}
	}
	return value, nil
}

func (s *State) directGet(key string) ([]byte, bool, error) {
	msg := nats.NewMsg("$JS.API.DIRECT.GET.KV_" + s.bucket + ".$KV." + s.bucket + "." + key)
	reply, err := s.m.ask(msg, 5*time.Second)
	if err != nil {
		return nil, false, fmt.Errorf("reading %s.%s: %w", s.bucket, key, err)
	}
	if status := reply.Header.Get("Status"); status == "404" {
		return nil, true, nil
	} else if status != "" {
		return nil, false, &Error{"INTERNAL", fmt.Sprintf("reading %s.%s: %s %s", s.bucket, key, status, reply.Header.Get("Description"))}
	}
	op := reply.Header.Get("KV-Operation")
	return reply.Data, op == "DEL" || op == "PURGE", nil
}

func (s *State) leaderGet(key string) ([]byte, bool, error) {
	raw, err := s.m.request("$JS.API.STREAM.MSG.GET.KV_"+s.bucket,
		map[string]string{"last_by_subj": "$KV." + s.bucket + "." + key}, 5*time.Second)
	if err != nil {
		return nil, false, fmt.Errorf("reading %s.%s: %w", s.bucket, key, err)
	}
	var answer struct {
		Message *struct {
			Headers []byte `json:"hdrs"`
			Data    []byte `json:"data"`
		} `json:"message"`
		Error *struct {
			Code        int    `json:"code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		return nil, false, fmt.Errorf("reading %s.%s: the answer is not JetStream's: %w", s.bucket, key, err)
	}
	if answer.Error != nil {
		if answer.Error.Code == 404 {
			return nil, true, nil
		}
		return nil, false, &Error{"INTERNAL", fmt.Sprintf("reading %s.%s: %s", s.bucket, key, answer.Error.Description)}
	}
	if answer.Message == nil {
		return nil, true, nil
	}
	op := headerOf(answer.Message.Headers, "KV-Operation")
	return answer.Message.Data, op == "DEL" || op == "PURGE", nil
}

// headerOf is one header's value in a stored message's header block ("NATS/1.0\r\nName: value…").
func headerOf(block []byte, name string) string {
	for _, line := range strings.Split(string(block), "\r\n")[1:] {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(strings.TrimSpace(k), name) {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// Put writes the key's value as JSON.
func (s *State) Put(key string, value any) error {
	_, err := s.m.jsPublish("$KV."+s.bucket+"."+key, value, nil)
	return err
}

// Delete removes the key.
func (s *State) Delete(key string) error {
	_, err := s.m.jsPublish("$KV."+s.bucket+"."+key, nil, nats.Header{"KV-Operation": []string{"DEL"}})
	return err
}

// Keys lists the keys that hold a value, sorted; filter is a key pattern ("a.*", "a.>") or "".
func (s *State) Keys(filter string) ([]string, error) {
	if filter == "" {
		filter = ">"
	}
	inbox := s.m.nc.NewInbox()
	sub, err := s.m.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe() //nolint:errcheck // done with it
	prefix := "$KV." + s.bucket + "."
	config := map[string]any{
		"stream_name": "KV_" + s.bucket,
		"config": map[string]any{
			"deliver_subject": inbox, "deliver_policy": "last_per_subject", "ack_policy": "none",
			"filter_subject": prefix + filter, "headers_only": true, "inactive_threshold": 30_000_000_000,
			"mem_storage": true, "num_replicas": 1, "flow_control": true, "idle_heartbeat": 5_000_000_000,
		},
	}
	name := "keys" + strconv.FormatInt(time.Now().UnixNano(), 36)
	raw, err := s.m.request("$JS.API.CONSUMER.CREATE.KV_"+s.bucket+"."+name+"."+prefix+filter, config, 5*time.Second)
	if err != nil {
		return nil, err
	}
	var created struct {
		NumPending uint64 `json:"num_pending"`
		Error      *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(raw, &created); err != nil {
		return nil, err
	}
	if created.Error != nil {
		return nil, &Error{"REFUSED", "listing " + s.bucket + ": " + created.Error.Description}
	}
	keys := []string{} // none is an empty list, as in the TypeScript SDK, not null
	for pending := created.NumPending; pending > 0; {
		msg, err := sub.NextMsg(5 * time.Second)
		if err != nil {
			return nil, fmt.Errorf("listing %s: %w", s.bucket, err)
		}
		if msg.Reply != "" && strings.HasPrefix(msg.Reply, "$JS.FC.") {
			_ = msg.Respond(nil)
		}
		if !strings.HasPrefix(msg.Subject, prefix) {
			continue
		}
		pending--
		if op := msg.Header.Get("KV-Operation"); op != "DEL" && op != "PURGE" {
			keys = append(keys, strings.TrimPrefix(msg.Subject, prefix))
		}
	}
	sort.Strings(keys)
	return keys, nil
}
