package config

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"
)

// kindType is the Go type each kind of setting is read as.
var kindType = map[Kind]reflect.Type{
	String: reflect.TypeOf(""), Bool: reflect.TypeOf(false), Int: reflect.TypeOf(int64(0)),
	Duration: reflect.TypeOf(time.Duration(0)), Size: reflect.TypeOf(int64(0)), List: reflect.TypeOf([]string(nil)),
}

// TestSettingHandles: every typed handle names a key of Keys and reads it as that key's kind, and
// every key has exactly one handle.
func TestSettingHandles(t *testing.T) {
	seen := map[string]int{}
	for _, h := range handles {
		seen[h.name()]++
		k, ok := LookupKey(h.name())
		if !ok {
			t.Errorf("handle %q names no setting", h.name())
			continue
		}
		if got := reflect.TypeOf(h.zero()); got != kindType[k.Kind] {
			t.Errorf("handle %q reads a %v, but the setting is a %s (%v)", h.name(), got, k.Kind, kindType[k.Kind])
		}
	}
	for _, k := range Keys {
		if seen[k.Name] != 1 {
			t.Errorf("setting %q has %d handles in settings.go, want 1", k.Name, seen[k.Name])
		}
	}
	c, err := Load(LoadOptions{LookupEnv: envOf(map[string]string{"QKIT_HOME": t.TempDir()})})
	if err != nil {
		t.Fatal(err)
	}
	if AgentTimeout.Get(c) != 180*time.Second || AgentCommand.Get(c) != "q" || !AgentStripANSI.Get(c) {
		t.Errorf("defaults through the handles: %v %q %v", AgentTimeout.Get(c), AgentCommand.Get(c), AgentStripANSI.Get(c))
	}
	if d, err := AgentTimeout.Parse("90"); err != nil || d != 90*time.Second {
		t.Errorf("AgentTimeout.Parse(90) = %v, %v", d, err)
	}
	if _, err := AgentMaxResponseSize.Parse("100GB"); err == nil {
		t.Error("AgentMaxResponseSize.Parse takes a size over the setting's range")
	}
}

// accessorKind is the kind each by-name accessor of Config reads.
var accessorKind = map[string]Kind{"String": String, "Bool": Bool, "Int": Int, "Duration": Duration, "Size": Size, "List": List}

// TestSettingNamesInSource: code that reads a setting by name (c.Config.Duration("agent.timeout"))
// names a setting of Keys and reads it as its kind, so a wrong name or type is a failing test here,
// not a panic at run time.
func TestSettingNamesInSource(t *testing.T) {
	root := filepath.Join("..", "..")
	sections := map[string]bool{}
	for _, k := range Keys {
		sections[k.Name[:strings.IndexByte(k.Name, '.')]] = true
	}
	fset := token.NewFileSet()
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".")) && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) != 1 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			lit, isLit := call.Args[0].(*ast.BasicLit)
			if !ok || !isLit || lit.Kind != token.STRING {
				return true
			}
			method := sel.Sel.Name
			kind, typed := accessorKind[method]
			if !typed && method != "Get" {
				return true
			}
			name, _ := strconv.Unquote(lit.Value)
			dot := strings.IndexByte(name, '.')
			if dot < 0 || !sections[name[:dot]] {
				return true // not a setting name (a map key, a header)
			}
			checked++
			where := fmt.Sprintf("%s: %s(%q)", fset.Position(call.Pos()), method, name)
			k, ok := LookupKey(name)
			switch {
			case !ok:
				t.Errorf("%s: no such setting", where)
			case typed && kindType[k.Kind] != kindType[kind]:
				t.Errorf("%s: the setting is a %s, read as a %s", where, k.Kind, kind)
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no setting read by name was found: the scan is broken")
	}
}
