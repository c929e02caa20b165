package mesh

import (
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go"
)

// Config is the module's config, asked of the node's host as the module: the node's value, else
// the mesh-wide one, else the manifest's default — the values its tools see.
type Config struct{ m *Mesh }

// Get is the value now.
func (c *Config) Get(key string) (any, error) {
	raw, err := c.m.request("mesh.provision."+c.m.Node+".module."+c.m.Module,
		map[string]string{"kind": "config", "key": key}, 10*time.Second)
	if err != nil {
		return nil, err
	}
	var answer struct {
		Value any `json:"value"`
	}
	if err := json.Unmarshal(raw, &answer); err != nil {
		return nil, err
	}
	return answer.Value, nil
}

// Watch calls onValue with the value now, then with each change, until the connection closes.
// A value that can no longer be had (the key is gone, the host does not answer) is handed to
// onRefused, when given, once until the value is back; the value that comes back is handed even
// when it is the one before, as the TypeScript SDK's watch hands them.
func (c *Config) Watch(key string, onValue func(any), onRefused func(error)) error {
	changes := make(chan struct{}, 1)
	_, err := c.m.nc.Subscribe("mesh.provision."+c.m.Node+".changed."+c.m.Module, func(msg *nats.Msg) {
		var changed struct {
			Kind string `json:"kind"`
			Key  string `json:"key"`
		}
		if json.Unmarshal(msg.Data, &changed) != nil || changed.Kind != "config" {
			return
		}
		if changed.Key != "" && changed.Key != key {
			return
		}
		select {
		case changes <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return err
	}
	if err := c.m.nc.Flush(); err != nil {
		return err
	}
	first, err := c.Get(key)
	if err != nil {
		return err
	}
	onValue(first)
	text, _ := json.Marshal(first)
	last := string(text)
	go func() {
		for range changes {
			value, err := c.Get(key)
			if err != nil {
				if c.m.nc.IsClosed() {
					return
				}
				refused := "\x00" + err.Error()
				if refused != last && onRefused != nil {
					onRefused(err)
				}
				last = refused
				continue
			}
			now, _ := json.Marshal(value)
			if string(now) != last {
				last = string(now)
				onValue(value)
			}
		}
	}()
	return nil
}
