package config

import (
	"bytes"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/qkit-cli/qkit/internal/filestore"
)

// editFile changes the config file under its lock. The file is edited as a YAML node tree, so the
// person's comments, key order and other entries survive `settings set` and `reset`. A file that
// does not parse, or whose top level is not a mapping, is left untouched.
func (c *Config) editFile(edit func(root *yaml.Node) (bool, error)) error {
	return filestore.Update(c.File, 0o600, 0o700, func(old []byte) ([]byte, error) {
		var doc yaml.Node
		if len(bytes.TrimSpace(old)) > 0 {
			if err := yaml.Unmarshal(old, &doc); err != nil {
				return nil, fmt.Errorf("config file %s: %v (left unchanged)", c.File, unwrapYAML(err))
			}
		}
		if doc.Kind == 0 {
			doc = yaml.Node{Kind: yaml.DocumentNode}
		}
		if len(doc.Content) == 0 || doc.Content[0].Kind == yaml.ScalarNode && doc.Content[0].Tag == "!!null" {
			doc.Content = []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}
		}
		root := doc.Content[0]
		if root.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("config file %s: line %d: the top level is not a mapping of settings (left unchanged)", c.File, root.Line)
		}
		changed, err := edit(root)
		if err != nil {
			return nil, err
		}
		if !changed {
			return nil, filestore.ErrNoChange
		}
		var buf bytes.Buffer
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		if err := enc.Encode(&doc); err != nil {
			return nil, err
		}
		return buf.Bytes(), nil
	})
}

// setNode sets the dotted key name to v under the mapping root. An entry viper already reads as
// that key (in any case, or flat as "agent.command: x") gets the new value in place, keeping its
// comments; any other spelling of the key is removed, or viper could go on reading it. Otherwise the
// key is added, inside the mappings already there.
func setNode(root *yaml.Node, name string, v any) error {
	parts := strings.Split(name, ".")
	val := &yaml.Node{}
	if err := val.Encode(v); err != nil {
		return err
	}
	if m, i := findEntry(root, parts); m != nil {
		old := m.Content[i+1]
		val.HeadComment, val.LineComment, val.FootComment = old.HeadComment, old.LineComment, old.FootComment
		m.Content[i+1] = val
		deleteNode(root, parts, val)
		return nil
	}
	m := root
	for _, p := range parts[:len(parts)-1] {
		next := mappingChild(m, p)
		if next == nil {
			next = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: p}, next)
		}
		m = next
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: parts[len(parts)-1]}, val)
	return nil
}

// mappingChild returns the mapping value of key p in m (keys compared as viper does, ignoring case).
func mappingChild(m *yaml.Node, p string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if strings.EqualFold(m.Content[i].Value, p) && m.Content[i+1].Kind == yaml.MappingNode {
			return m.Content[i+1]
		}
	}
	return nil
}

// findEntry returns the mapping and the index of the key of the first entry under m that viper
// reads as parts, or nil.
func findEntry(m *yaml.Node, parts []string) (*yaml.Node, int) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		kp := strings.Split(strings.ToLower(m.Content[i].Value), ".")
		if !hasPrefix(parts, kp) {
			continue
		}
		if len(kp) == len(parts) {
			return m, i
		}
		if m.Content[i+1].Kind == yaml.MappingNode {
			if found, j := findEntry(m.Content[i+1], parts[len(kp):]); found != nil {
				return found, j
			}
		}
	}
	return nil, 0
}

// deleteNode removes every entry under the mapping m that viper reads as parts, nested or flat
// ("a.b"), in any case, except the one whose value is keep. Mappings left empty are removed too. It
// reports whether anything was removed.
func deleteNode(m *yaml.Node, parts []string, keep *yaml.Node) bool {
	changed := false
	kept := m.Content[:0]
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		kp := strings.Split(strings.ToLower(k.Value), ".")
		if hasPrefix(parts, kp) {
			if len(kp) == len(parts) && v != keep {
				changed = true
				continue
			}
			if v.Kind == yaml.MappingNode && len(kp) < len(parts) && deleteNode(v, parts[len(kp):], keep) {
				changed = true
				if len(v.Content) == 0 {
					continue
				}
			}
		}
		kept = append(kept, k, v)
	}
	m.Content = kept
	return changed
}

// hasPrefix reports whether prefix is a leading run of parts.
func hasPrefix(parts, prefix []string) bool {
	if len(prefix) > len(parts) {
		return false
	}
	for i, p := range prefix {
		if parts[i] != p {
			return false
		}
	}
	return true
}
