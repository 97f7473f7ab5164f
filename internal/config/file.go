package config

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"

	"github.com/spf13/viper"
	"go.yaml.in/yaml/v3"

	"github.com/qkit-cli/qkit/internal/filestore"
)

// editFile changes the config file under its lock. The file is edited as a YAML node tree, so the
// person's comments, key order and other entries survive `settings set` and `reset`; in a file of
// several YAML documents the first (the one qkit reads) is edited and the others are written back.
// A file that is not UTF-8 text, does not parse, or whose top level is not a mapping is left
// untouched, and so is one whose edited form would not load again, and any when ctx ends before the
// write.
func (c *Config) editFile(ctx context.Context, edit func(root *yaml.Node) (bool, error)) error {
	return filestore.UpdateContext(ctx, c.File, 0o600, 0o700, func(old []byte) ([]byte, error) {
		bom, text, err := configText(old)
		if err != nil {
			return nil, fmt.Errorf("config file %s: %v; it was left unchanged", c.File, err)
		}
		docs, err := decodeDocuments(text)
		if err != nil {
			return nil, fmt.Errorf("config file %s: %v (left unchanged)", c.File, unwrapYAML(err))
		}
		if len(docs) == 0 {
			docs = []*yaml.Node{{Kind: yaml.DocumentNode}}
		}
		doc := docs[0]
		if len(doc.Content) == 0 || isNull(doc.Content[0]) {
			doc.Content = []*yaml.Node{{Kind: yaml.MappingNode, Tag: "!!map"}}
		}
		root := doc.Content[0]
		if root.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("config file %s: line %d: the top level is not a mapping of settings (left unchanged)", c.File, root.Line)
		}
		blockIfEmpty(root)
		changed, err := edit(root)
		if err != nil {
			return nil, fmt.Errorf("config file %s: %w", c.File, err)
		}
		if !changed {
			return nil, filestore.ErrNoChange
		}
		var buf bytes.Buffer
		buf.Write(bom)
		enc := yaml.NewEncoder(&buf)
		enc.SetIndent(2)
		for _, d := range docs {
			if err := enc.Encode(d); err != nil {
				return nil, err
			}
		}
		if err := enc.Close(); err != nil {
			return nil, err
		}
		// The last guard: never write a file that no longer loads or has lost a document.
		if err := checkLoads(buf.Bytes(), len(docs)); err != nil {
			return nil, fmt.Errorf("config file %s: the edit would leave a file that does not load (%v); it was left unchanged, edit it by hand", c.File, err)
		}
		return buf.Bytes(), nil
	})
}

var utf8BOM = []byte("\xef\xbb\xbf")

// configText splits a leading UTF-8 byte-order mark off data and checks that the rest is text a
// person would have written: valid UTF-8 without control characters (tab, line feed and carriage
// return aside) or a second byte-order mark.
func configText(data []byte) (bom, text []byte, err error) {
	text = data
	if bytes.HasPrefix(text, utf8BOM) {
		bom, text = utf8BOM, text[len(utf8BOM):]
	}
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRune(text[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			return nil, nil, fmt.Errorf("not UTF-8 text (byte %d is 0x%02x)", len(bom)+i, text[i])
		case r < 0x20 && r != '\t' && r != '\n' && r != '\r', r == 0x7f, r >= 0x80 && r <= 0x9f && r != 0x85, r == 0xfeff, r == 0xfffe, r == 0xffff:
			return nil, nil, fmt.Errorf("not text (byte %d is the control character %U)", len(bom)+i, r)
		}
		i += size
	}
	return bom, text, nil
}

// decodeDocuments parses every YAML document in text.
func decodeDocuments(text []byte) ([]*yaml.Node, error) {
	var docs []*yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(text))
	for {
		var d yaml.Node
		err := dec.Decode(&d)
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, err
		}
		docs = append(docs, &d)
	}
}

// checkLoads reports whether data loads as Load reads it and still holds want documents.
func checkLoads(data []byte, want int) error {
	v := viper.New()
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(data)); err != nil {
		return errors.New(unwrapYAML(err))
	}
	_, text, err := configText(data)
	if err != nil {
		return err
	}
	docs, err := decodeDocuments(text)
	if err != nil {
		return errors.New(unwrapYAML(err))
	}
	if len(docs) != want {
		return fmt.Errorf("%d YAML documents instead of %d", len(docs), want)
	}
	return nil
}

// blockIfEmpty writes an empty mapping in block style from now on. YAML can only write an empty
// mapping as "{}" (the last reset leaves one), which reads back as flow style; entries added to it
// would be written "{agent: {command: kiro-cli}}". A mapping with entries keeps the style the
// person chose.
func blockIfEmpty(m *yaml.Node) {
	if len(m.Content) == 0 {
		m.Style &^= yaml.FlowStyle
	}
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

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
		if old.Kind == yaml.MappingNode {
			// No setting is a section: what is under it is not qkit's to drop.
			return fmt.Errorf("line %d: %q holds a section of settings, not a value; fix or remove that line (the file was left unchanged)", m.Content[i].Line, m.Content[i].Value)
		}
		val.HeadComment, val.LineComment, val.FootComment = old.HeadComment, old.LineComment, old.FootComment
		m.Content[i+1] = val
		deleteNode(root, parts, val)
		return nil
	}
	m := root
	for _, p := range parts[:len(parts)-1] {
		next, err := section(m, p)
		if err != nil {
			return err
		}
		if next == nil {
			next = &yaml.Node{Kind: yaml.MappingNode, Tag: "!!map"}
			m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: p}, next)
		}
		m = next
	}
	m.Content = append(m.Content, &yaml.Node{Kind: yaml.ScalarNode, Tag: "!!str", Value: parts[len(parts)-1]}, val)
	return nil
}

// section returns the mapping value of key p in m (keys compared as viper does, ignoring case), or
// nil when there is none. A section left empty or null ("agent:" on its own line) becomes an empty
// mapping in place, keeping its comments; one holding anything else (a scalar, a list) is an error,
// since adding the key beside it would write the section twice.
func section(m *yaml.Node, p string) (*yaml.Node, error) {
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if !strings.EqualFold(k.Value, p) {
			continue
		}
		switch {
		case v.Kind == yaml.MappingNode:
			blockIfEmpty(v)
			return v, nil
		case isNull(v):
			// A comment after "agent:" stays on that line: it moves to the key, since a
			// mapping's own line comment would be written after its first entry.
			if k.LineComment == "" {
				k.LineComment = v.LineComment
			}
			v.Kind, v.Tag, v.Value, v.Style, v.LineComment = yaml.MappingNode, "!!map", "", 0, ""
			return v, nil
		default:
			return nil, fmt.Errorf("line %d: %q holds %s, not a section of settings; fix or remove that line (the file was left unchanged)", k.Line, k.Value, describeNode(v))
		}
	}
	return nil, nil
}

// describeNode names what a YAML value is, for messages.
func describeNode(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.ScalarNode:
		return fmt.Sprintf("the value %q", n.Value)
	}
	return "a value"
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
